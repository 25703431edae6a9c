//! The machine an experiment ran on, written beside its results: numbers mean little without
//! the CPU, the kernel, the build and the time they came from.

use std::process::Command;

use serde::Serialize;

#[derive(Debug, Serialize)]
pub struct Machine {
    pub hostname: String,
    pub date_utc: String,
    pub os: String,
    pub kernel: String,
    pub cpu: String,
    pub cores: usize,
    pub memory_gib: f64,
    pub netem: bool,
    pub convoy_version: String,
    pub git_commit: String,
    pub build_profile: String,
    pub command: String,
}

fn read(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

fn first_value(text: &str, key: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_once([':', '=']))
        .map(|(_, v)| v.trim().trim_matches('"').to_string())
}

fn output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

impl Machine {
    pub fn now() -> Machine {
        let meminfo = read("/proc/meminfo");
        let mem_kib: f64 = first_value(&meminfo, "MemTotal")
            .and_then(|v| v.trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0.0);
        Machine {
            hostname: read("/proc/sys/kernel/hostname").trim().to_string(),
            date_utc: output("date", &["-u", "+%Y-%m-%d %H:%M:%S UTC"]).unwrap_or_default(),
            os: first_value(&read("/etc/os-release"), "PRETTY_NAME").unwrap_or_default(),
            kernel: read("/proc/sys/kernel/osrelease").trim().to_string(),
            cpu: first_value(&read("/proc/cpuinfo"), "model name").unwrap_or_default(),
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            memory_gib: (mem_kib / 1024.0 / 1024.0 * 10.0).round() / 10.0,
            netem: crate::launch_cmd::kernel_has_netem(),
            convoy_version: env!("CARGO_PKG_VERSION").to_string(),
            git_commit: output("git", &["rev-parse", "--short", "HEAD"])
                .map(|c| {
                    let dirty = output("git", &["status", "--porcelain", "--untracked-files=no"])
                        .is_some_and(|s| !s.is_empty());
                    if dirty {
                        format!("{c} (with uncommitted changes)")
                    } else {
                        c
                    }
                })
                .unwrap_or_else(|| "unknown (not a git checkout)".into()),
            build_profile: if cfg!(debug_assertions) {
                "dev".into()
            } else {
                "release".into()
            },
            command: std::env::args().collect::<Vec<_>>().join(" "),
        }
    }

    /// (name, value) pairs for tables.
    pub fn facts(&self) -> Vec<(&'static str, String)> {
        vec![
            ("host", self.hostname.clone()),
            ("date", self.date_utc.clone()),
            ("OS", self.os.clone()),
            ("kernel", self.kernel.clone()),
            ("CPU", self.cpu.clone()),
            ("cores", self.cores.to_string()),
            ("memory", format!("{} GiB", self.memory_gib)),
            (
                "kernel netem",
                if self.netem { "yes" } else { "no" }.to_string(),
            ),
            ("convoy", self.convoy_version.clone()),
            ("commit", self.git_commit.clone()),
            ("build", self.build_profile.clone()),
            ("command", self.command.clone()),
        ]
    }
}

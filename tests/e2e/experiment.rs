//! `convoy experiment FILE.toml` as a user runs it: a real sweep of real benches (child
//! processes, DDS traffic), its results folder read back with Python's csv module, a cell that
//! fails recorded with its reason while the sweep goes on, bad files refused with file:line
//! before anything runs, and Ctrl-C leaving finished results and no process behind.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use convoy_tests::files::{fresh_dir, one_sided_qos, read_csv, write_file};
use convoy_tests::{
    convoy, convoy_on, domain, processes_on_domain, repo_root, run_fails, run_ok, watchdog,
    ChildGuard,
};

const RESULTS_CSV: &str = "cell,repeat,bench,implementation,qos,link,rate_hz,size_bytes,agents,\
                           exchange,status,reason,p50_us,p90_us,p99_us,max_us,per_s,lost,\
                           barrier_p50_us,barrier_p99_us,datagrams_per_frame,agents_per_process";
const LIMIT: Duration = Duration::from_secs(240);

fn qos(file: &str) -> String {
    repo_root().join("qos").join(file).display().to_string()
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x89PNG\r\n\x1a\n") && bytes.len() > 2000,
        "{} is not a drawn PNG ({} bytes)",
        path.display(),
        bytes.len()
    );
}

/// A latency sweep: two QoS files, one of them unusable for the bench (its writers and
/// readers never match), two repeats. The good cells measure, the bad ones fail with the
/// node's own error, and the folder holds the CSV, the report with its plots, the PNGs, the
/// experiment file and the machine's facts.
#[test]
fn a_latency_sweep_writes_its_results_folder_and_records_failed_cells() {
    watchdog("experiment latency", LIMIT);
    let dir = fresh_dir("test-experiment", "latency");
    let (bad_qos, _) = one_sided_qos(&dir, "bench_one_sided.xml", "bench");
    let file = write_file(
        &dir,
        "sweep.toml",
        &format!(
            "[experiment]\nname = \"sweep\"\nbench = \"latency\"\nrepeats = 2\n\
             cell_timeout_s = 60\n\n[matrix]\nqos = [\"{}\", \"{}\"]\nsizes = [64]\n\n\
             [latency]\nduration_s = 0.3\n",
            qos("convoy.xml::convoy"),
            bad_qos.display()
        ),
    );
    let out_dir = dir.join("results");
    let out = run_ok(
        convoy_on(domain::EXPERIMENT_LATENCY)
            .arg("experiment")
            .arg(&file)
            .arg("--out")
            .arg(&out_dir),
        LIMIT,
    );
    assert!(out.contains("4 rows, 2 failed"), "{out}");
    let (text, rows) = read_csv(&out_dir.join("results.csv"), RESULTS_CSV);
    assert_eq!(rows.len(), 4, "{text}");
    for row in &rows {
        let (qos, status, reason) = (&row[4], &row[10], &row[11]);
        if qos == "convoy.xml::convoy" {
            assert_eq!(status, "ok", "{text}");
            let p50: f64 = row[12].parse().expect("p50");
            let per_s: f64 = row[16].parse().expect("round trips/s");
            assert!(p50 > 0.0 && per_s > 0.0, "{text}");
            assert_eq!(row[7], "64", "{text}");
        } else {
            assert_eq!(qos, "bench_one_sided.xml", "{text}");
            assert_eq!(status, "failed", "{text}");
            // The bench's own error (here: its pong side refused the one-sided profile).
            assert!(
                reason.starts_with("exit status"),
                "the bench's reason: {text}"
            );
        }
    }
    let report = std::fs::read_to_string(out_dir.join("report.html")).expect("report.html");
    assert!(report.matches("<svg").count() >= 2, "plots inlined");
    assert!(report.contains("Failed cells") && report.contains("bench_one_sided.xml"));
    for png in ["latency_percentiles.png", "latency_cdf_64B.png"] {
        assert_png(&out_dir.join(png));
    }
    let copied = std::fs::read_to_string(out_dir.join("experiment.toml")).expect("copy");
    assert_eq!(copied, std::fs::read_to_string(&file).expect("file"));
    let machine: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(out_dir.join("machine.json")).expect("machine.json"),
    )
    .expect("machine.json is JSON");
    assert!(machine["cores"].as_u64().unwrap_or(0) >= 1, "{machine}");
}

/// A lockstep sweep: frames per second for each exchange, one agent a process and both in one,
/// and its plot.
#[test]
fn a_lockstep_sweep_measures_each_exchange() {
    watchdog("experiment lockstep", LIMIT);
    let dir = fresh_dir("test-experiment", "lockstep");
    let file = write_file(
        &dir,
        "lockstep.toml",
        "[experiment]\nname = \"ls\"\nbench = \"lockstep\"\n\n[matrix]\nagents = [2]\n\
         exchange = [\"peer\", \"relay\"]\nagents_per_process = [1, 2]\n\n\
         [lockstep]\nframes = 200\n",
    );
    let out_dir = dir.join("results");
    run_ok(
        convoy_on(domain::EXPERIMENT_LOCKSTEP)
            .arg("experiment")
            .arg(&file)
            .arg("--out")
            .arg(&out_dir),
        LIMIT,
    );
    let (text, rows) = read_csv(&out_dir.join("results.csv"), RESULTS_CSV);
    let exchanges: Vec<&str> = rows.iter().map(|r| r[9].as_str()).collect();
    assert_eq!(exchanges, ["peer", "relay", "peer", "relay"], "{text}");
    let grouping: Vec<&str> = rows.iter().map(|r| r[21].as_str()).collect();
    assert_eq!(grouping, ["1", "1", "2", "2"], "{text}");
    for row in &rows {
        assert_eq!(row[10], "ok", "{text}");
        assert_eq!(row[8], "2", "{text}");
        let fps: f64 = row[16].parse().expect("frames/s");
        assert!(fps > 0.0, "{text}");
    }
    assert_png(&out_dir.join("lockstep_frames_per_s.png"));
}

/// Unknown keys, a missing QoS file and impossible links fail with file:line before any
/// cell runs (no results folder appears).
#[test]
fn bad_experiment_files_are_refused_with_file_and_line() {
    let dir = fresh_dir("test-experiment", "bad");
    let head = "[experiment]\nname = \"bad\"\nbench = \"latency\"\n";
    let cases = [
        (
            "unknown_key.toml",
            format!("{head}[matrix]\nsizes = [64]\nsize = 3\n"),
            ":6:",
            "unknown field `size`",
        ),
        (
            "missing_qos.toml",
            format!("{head}[matrix]\nsizes = [64]\nqos = [\"nowhere.xml\"]\n"),
            ":6:",
            "nowhere.xml",
        ),
        (
            "impossible_link.toml",
            format!(
                "{head}hosts = \"{}\"\n[matrix]\nsizes = [64]\nlinks = [\"x\"]\n\n\
                 [links.x]\nall = {{ loss_pct = 150 }}\n",
                repo_root().join("launch/experiments/loss_0.toml").display()
            ),
            ":9:",
            "loss_pct = 150 is above 100",
        ),
        (
            "wrong_axis.toml",
            format!("{head}[matrix]\nsizes = [64]\nagents = [4]\n"),
            ":6:",
            "does not apply to bench = \"latency\"",
        ),
        (
            "no_agents_a_process.toml",
            "[experiment]\nname = \"bad\"\nbench = \"lockstep\"\n[matrix]\nagents = [4]\n\
             exchange = [\"relay\"]\nagents_per_process = [0]\n"
                .to_string(),
            ":7:",
            "agents_per_process 0 is out of range 1..=64",
        ),
    ];
    for (name, text, line, message) in cases {
        let file = write_file(&dir, name, &text);
        let out_dir = dir.join(format!("{name}.results"));
        let err = run_fails(
            convoy()
                .arg("experiment")
                .arg(&file)
                .arg("--out")
                .arg(&out_dir),
            Duration::from_secs(30),
        );
        assert!(
            err.contains(&format!("{name}{line}")) && err.contains(message),
            "{name}: {err}"
        );
        assert!(!out_dir.exists(), "{name}: ran something");
    }
}

/// Ctrl-C in the middle of a sweep over a link between two namespace hosts: the running
/// bench and its pong are ended, the link's namespaces are taken down, the finished cells are
/// in results.csv, and the command says it was interrupted.
#[test]
fn ctrl_c_leaves_finished_cells_and_no_process_or_namespace() {
    watchdog("experiment ctrl-c", LIMIT);
    let dir = fresh_dir("test-experiment", "interrupt");
    let hosts = write_file(
        &dir,
        "hosts.toml",
        &format!(
            "[run]\ndomain = {}\nscenario = \"{}\"\n\n[hosts.x]\naddress = \"netns:cvx_expint\"\n\n\
             [hosts.y]\naddress = \"netns:cvy_expint\"\n\n[[nodes]]\nkind = \"coordinator\"\n\
             host = \"x\"\n\n[[nodes]]\nkind = \"agent\"\nhost = \"y\"\n",
            domain::EXPERIMENT_INTERRUPT,
            repo_root().join("launch/scenarios/two_cars.toml").display()
        ),
    );
    let file = write_file(
        &dir,
        "long.toml",
        &format!(
            "[experiment]\nname = \"long\"\nbench = \"latency\"\nrepeats = 20\nhosts = \"{}\"\n\n\
             [matrix]\nsizes = [64]\nlinks = [\"lossy\"]\n\n[latency]\nduration_s = 2\n\n\
             [links.lossy]\nall = {{ loss_pct = 1 }}\n",
            hosts.display()
        ),
    );
    let out_dir = dir.join("results");
    let mut sweep = ChildGuard::spawn(
        "convoy experiment",
        convoy_on(domain::EXPERIMENT_INTERRUPT)
            .arg("experiment")
            .arg(&file)
            .arg("--out")
            .arg(&out_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let lines = sweep.all_lines();
    // The first cell finished and the second is running.
    let until = std::time::Instant::now() + Duration::from_secs(120);
    let mut seen = String::new();
    while !seen.contains("[1/20]") {
        let left = until.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => seen += &(line + "\n"),
            Err(_) => panic!("no cell finished:\n{seen}"),
        }
    }
    let status = sweep
        .interrupt(Duration::from_secs(20))
        .expect("the sweep ends after Ctrl-C");
    assert!(!status.success(), "an interrupted sweep exits non-zero");
    let (text, rows) = read_csv(&out_dir.join("results.csv"), RESULTS_CSV);
    assert!(!rows.is_empty() && rows.len() < 20, "{text}");
    assert!(rows.iter().all(|r| r[10] == "ok"), "{text}");
    assert!(out_dir.join("report.html").exists());
    convoy_tests::wait_until(
        "the bench processes are gone",
        Duration::from_secs(10),
        || processes_on_domain(domain::EXPERIMENT_INTERRUPT).is_empty(),
    );
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    assert!(
        !namespaces.contains("cvx_expint") && !namespaces.contains("cvy_expint"),
        "namespaces left behind:\n{namespaces}"
    );
}

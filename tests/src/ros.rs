//! Stock ROS 2 nodes of tests/interop/ (rclpy from PyPI, in the venv scripts/ros-venv.sh
//! makes) as a test starts them, and the JSON lines they print: `ros2_probe.py` subscribes to
//! the topics it is given and prints each message it decodes; the suites assert on those lines.

use std::ffi::OsStr;
use std::process::{Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::{repo_root, ros_python, wait_for_line, ChildGuard};

/// A Python ROS node of tests/interop/ on ROS domain `ros_domain`.
pub fn python_node(script: &str, ros_domain: u32, args: &[impl AsRef<OsStr>]) -> Command {
    let mut cmd = Command::new(ros_python());
    cmd.arg(repo_root().join("tests/interop").join(script))
        .args(args)
        .env("ROS_DOMAIN_ID", ros_domain.to_string())
        .env_remove("ROS_AUTOMATIC_DISCOVERY_RANGE")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    cmd
}

/// ros2_probe.py's arguments: a `--topic` of each of `topics` ("NAME:KIND"), then `options`
/// as on its command line.
pub fn probe_args(topics: &[&str], options: &str) -> Vec<String> {
    let topics = topics.iter().flat_map(|t| ["--topic", t]);
    topics
        .chain(options.split_whitespace())
        .map(String::from)
        .collect()
}

/// ros2_probe.py on ROS domain `ros_domain`, started and ready, with its line stream.
pub fn probe(name: &str, ros_domain: u32, args: &[String]) -> (ChildGuard, Receiver<String>) {
    start_python(name, &mut python_node("ros2_probe.py", ros_domain, args))
}

/// Starts `cmd`, waits for its {"ready": ...} line, and returns it with its line stream.
pub fn start_python(name: &str, cmd: &mut Command) -> (ChildGuard, Receiver<String>) {
    let mut child = ChildGuard::spawn(name, cmd);
    let lines = child.stdout_lines();
    wait_for_line(&lines, Duration::from_secs(60), "ready line", |l| {
        l.contains("\"ready\"")
    });
    (child, lines)
}

/// The JSON lines of a Python node until its {"done": ...} line (bounded).
pub fn collect_until_done(lines: &Receiver<String>, timeout: Duration) -> Vec<Value> {
    let until = Instant::now() + timeout;
    let mut out = Vec::new();
    loop {
        let left = until.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no done line within {timeout:?}; got {out:?}"));
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let done = value.get("done").is_some();
        out.push(value);
        if done {
            return out;
        }
    }
}

pub fn messages<'a>(out: &'a [Value], topic: &str) -> Vec<&'a Value> {
    out.iter()
        .filter(|v| v.get("msg").and_then(Value::as_str) == Some(topic))
        .collect()
}

pub fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number '{key}' in {v}"))
}

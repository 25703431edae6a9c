//! The files convoy's end-to-end tests write and read: scratch directories of their own under
//! target/<profile>, scenario and launch files made to measure, the CSV tables of the benches,
//! the `--state-log` of a run, and a small disk that fills up ([`Tmpfs`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::{profile_dir, repo_root, ros_python};

/// A directory of the test's own under target/<profile>/test-launch.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = profile_dir().join("test-launch").join(name);
    std::fs::create_dir_all(&dir).expect("mkdir");
    dir
}

/// An empty directory of the test's own, target/<profile>/<group>/<name>: what an earlier run
/// left there is gone.
pub fn fresh_dir(group: &str, name: &str) -> PathBuf {
    let dir = profile_dir().join(group).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A path of the test's own, target/<profile>/<group>/<name>, with no file there yet: what the
/// command under test writes there is this run's.
pub fn fresh_file(group: &str, name: &str) -> PathBuf {
    let dir = profile_dir().join(group);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let path = dir.join(name);
    let _ = std::fs::remove_file(&path);
    path
}

/// Writes `text` as `dir/name`; returns its path.
pub fn write_file(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    path
}

/// The permission bits of `path` (0o700 for a private folder).
pub fn file_mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

/// A scenario shipped in launch/scenarios (e.g. "two_cars.toml"), by its absolute path.
pub fn shipped_scenario(name: &str) -> PathBuf {
    repo_root().join("launch/scenarios").join(name)
}

/// launch/scenarios/town.toml (sixteen `lane_follow` cars on CARLA's Town01) without its
/// sensors, for tests about driving and drawing the town, with its map paths made absolute,
/// written to `dir/town.toml`.
pub fn town_without_sensors(dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(shipped_scenario("town.toml")).expect("town.toml");
    let maps = repo_root().join("launch/maps");
    let (mut out, mut skipping) = (String::new(), false);
    for line in text.lines() {
        if line.starts_with("[[agents.sensors]]") {
            skipping = true;
            continue;
        }
        if line.starts_with('[') {
            skipping = false;
        }
        if !skipping {
            out.push_str(&line.replace("\"../maps/", &format!("\"{}/", maps.display())));
            out.push('\n');
        }
    }
    write_file(dir, "town.toml", &out)
}

/// Scenario `[[agents]]` side by side on parallel lanes 10 m apart (the first at y = 0), each
/// driving 400 m down its own lane at 5 m/s.
pub fn lane_agents(ids: &[&str]) -> String {
    let mut toml = String::new();
    for (lane, id) in ids.iter().enumerate() {
        let y = 10.0 * lane as f64;
        let path = format!("[[0.0, {y:.1}], [400.0, {y:.1}]]");
        let _ = write!(
            toml,
            "\n[[agents]]\nid = \"{id}\"\nstart = {{ x = 0.0, y = {y:.1} }}\n\
             controller = {{ kind = \"waypoints\", speed = 5.0, path = {path} }}\n"
        );
    }
    toml
}

/// A launch file, built up a host and a node at a time.
pub struct LaunchFile(String);

impl LaunchFile {
    /// The `[run]` section: the run's domain and scenario file.
    pub fn new(domain: u32, scenario: &Path) -> LaunchFile {
        let scenario = scenario.display();
        LaunchFile(format!(
            "[run]\ndomain = {domain}\nscenario = \"{scenario}\"\n"
        ))
    }

    /// A further line of the `[run]` section (e.g. `exchange = "relay"`), given before any host
    /// or node.
    pub fn run_setting(mut self, line: &str) -> LaunchFile {
        let _ = writeln!(self.0, "{line}");
        self
    }

    /// A `[hosts.NAME]` at `address` ("netns:NS", "ssh://..."), with further settings lines
    /// (a lossy `link`, an `ip`) in `settings`.
    pub fn host(mut self, name: &str, address: &str, settings: &[&str]) -> LaunchFile {
        let _ = write!(self.0, "\n[hosts.{name}]\naddress = \"{address}\"\n");
        for line in settings {
            let _ = writeln!(self.0, "{line}");
        }
        self
    }

    /// A `[[nodes]]` of `kind` on `host`; an agent node runs `agents` (none named: the rest).
    pub fn node(mut self, kind: &str, host: &str, agents: &[&str]) -> LaunchFile {
        let _ = write!(
            self.0,
            "\n[[nodes]]\nkind = \"{kind}\"\nhost = \"{host}\"\n"
        );
        if !agents.is_empty() {
            let quoted: Vec<String> = agents.iter().map(|a| format!("\"{a}\"")).collect();
            let _ = writeln!(self.0, "agents = [{}]", quoted.join(", "));
        }
        self
    }

    /// launch/scenarios/two_cars.toml on two network-namespace hosts: the coordinator on host
    /// p, the agents on host q, each given as (namespace, further settings).
    pub fn two_netns_hosts(domain: u32, p: (&str, &[&str]), q: (&str, &[&str])) -> LaunchFile {
        LaunchFile::new(domain, &shipped_scenario("two_cars.toml"))
            .host("p", &format!("netns:{}", p.0), p.1)
            .host("q", &format!("netns:{}", q.0), q.1)
            .node("coordinator", "p", &[])
            .node("agent", "q", &[])
    }

    /// Writes the file as `dir/name`; returns its path.
    pub fn write(self, dir: &Path, name: &str) -> PathBuf {
        write_file(dir, name, &self.0)
    }
}

/// A run's `--state-log`: (frame, agent) -> the line's JSON.
pub type StateLog = BTreeMap<(u64, String), serde_json::Value>;

/// Parses a `--state-log` file, checking every line.
pub fn read_state_log(path: &Path) -> StateLog {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut states = StateLog::new();
    for line in text.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("bad state log line {line}: {e}"));
        let frame = v["frame"].as_u64().expect("frame");
        let agent = v["agent"].as_str().expect("agent").to_string();
        states.insert((frame, agent), v);
    }
    states
}

/// Fails the test, naming `what` and the first state that differs, unless `got` holds exactly
/// the states of `expected`.
pub fn assert_same_states(expected: &StateLog, got: &StateLog, what: &str) {
    assert_eq!(
        expected.len(),
        got.len(),
        "{what}: different number of states"
    );
    for (key, state) in expected {
        assert_eq!(
            Some(state),
            got.get(key),
            "{what}: differs at frame {} agent {}",
            key.0,
            key.1
        );
    }
}

/// Every agent's frames in the run's state log, one entry per line (repeats kept).
pub fn logged_frames(log: &Path) -> BTreeMap<String, Vec<u64>> {
    let text = std::fs::read_to_string(log)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", log.display()));
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("state log line");
        let agent = v["agent"].as_str().expect("agent").to_string();
        out.entry(agent)
            .or_default()
            .push(v["frame"].as_u64().expect("frame"));
    }
    for frames in out.values_mut() {
        frames.sort_unstable();
    }
    out
}

/// A small file system of the test's own (a disk that fills up), mounted for its run and
/// unmounted at its end, pass or fail.
pub struct Tmpfs(pub PathBuf);

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. "256k") at `dir`, made when missing.
    pub fn mount(dir: PathBuf, size: &str) -> Tmpfs {
        std::fs::create_dir_all(&dir).expect("mount point");
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir)
            .status()
            .expect("run mount");
        assert!(
            mounted.success(),
            "cannot mount a tmpfs (the suite runs as root)"
        );
        Tmpfs(dir)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

/// The header of `convoy bench latency --out`'s CSV.
pub const LATENCY_CSV: &str =
    "size_bytes,qos_profile,round_trips,p50_us,p90_us,p99_us,max_us,msgs_per_s,lost";

/// A CSV table a command under test wrote, read by Python's csv module (an RFC 4180 reader
/// that is not convoy's, from the venv scripts/ros-venv.sh makes): its text (for failure
/// messages) and its records after the header. The first record must be `header`'s column
/// names, and every record must have as many fields: a field with an unquoted comma inside
/// would shift the columns after it.
pub fn read_csv(path: &Path, header: &str) -> (String, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{} not written: {e}", path.display()));
    let script = "import csv, json, sys\n\
                  with open(sys.argv[1], newline='') as f:\n    \
                  json.dump(list(csv.reader(f, strict=True)), sys.stdout)";
    let out = std::process::Command::new(ros_python())
        .args(["-c", script])
        .arg(path)
        .output()
        .expect("run Python's csv reader");
    assert!(
        out.status.success(),
        "Python's csv module cannot read {}: {}\n{text}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut records: Vec<Vec<String>> =
        serde_json::from_slice(&out.stdout).expect("the csv reader's JSON");
    assert!(!records.is_empty(), "{}: empty", path.display());
    let names: Vec<&str> = header.split(',').collect();
    let rows = records.split_off(1);
    assert_eq!(records[0], names, "{}:\n{text}", path.display());
    for row in &rows {
        assert_eq!(
            row.len(),
            names.len(),
            "{}: a record of {} fields under a header of {}: {row:?}\n{text}",
            path.display(),
            row.len(),
            names.len()
        );
    }
    (text, rows)
}

/// qos/convoy.xml with `profile`'s writers BEST_EFFORT and its readers RELIABLE, which never
/// match, as `dir/name`: its path and the line of that profile.
pub fn one_sided_qos(dir: &Path, name: &str, profile: &str) -> (PathBuf, usize) {
    let builtin = std::fs::read_to_string(repo_root().join("qos/convoy.xml")).expect("convoy.xml");
    let sides = "<datawriter_qos><reliability><kind>BEST_EFFORT_RELIABILITY_QOS</kind>\
                 </reliability></datawriter_qos>\
                 <datareader_qos><reliability><kind>RELIABLE_RELIABILITY_QOS</kind>\
                 </reliability></datareader_qos>";
    let open = format!("<qos_profile name=\"{profile}\" base_name=\"reliable_stream\"");
    let (before, after) = builtin
        .split_once(&open)
        .expect("the profile in convoy.xml");
    // `<qos_profile ... />` or `<qos_profile ...>`: the two sides go first inside it.
    let rest = match after.strip_prefix("/>") {
        Some(rest) => format!(">{sides}</qos_profile>{rest}"),
        None => after.replacen('>', &format!(">{sides}"), 1),
    };
    let line = before.matches('\n').count() + 1;
    let path = write_file(dir, name, &format!("{before}{open}{rest}"));
    (path, line)
}

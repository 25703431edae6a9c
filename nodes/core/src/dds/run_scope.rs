//! Run isolation: every run has a run id (`CONVOY_RUN_ID`, set by `convoy run` and `convoy
//! launch` for every node they start), and convoy's endpoints live in that run's DDS partition
//! (`convoy.run.<id>`), so two runs on one host and domain never see each other's samples.
//! A process with no run id (a tool: `convoy topic echo`, `record`, `replay`, a bench) joins
//! the default partition and, through the pattern `convoy.run.*`, every run's.

use std::fmt;

/// The environment variable that carries a run id to every node of the run.
pub const RUN_ID_ENV: &str = "CONVOY_RUN_ID";
/// Partition names of runs: this prefix and the run id.
const PARTITION_PREFIX: &str = "convoy.run.";

/// A run id: 1-64 letters, digits, '-' or '_' (it becomes part of a partition name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunId(String);

impl RunId {
    pub fn parse(s: &str) -> Result<RunId, String> {
        let ok = (1..=64).contains(&s.len())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if ok {
            Ok(RunId(s.to_string()))
        } else {
            Err(format!(
                "run id {s:?}: use 1 to 64 letters, digits, '-' or '_'"
            ))
        }
    }

    /// A fresh id: 12 hex digits from the kernel's random source (the time and the process
    /// id where that cannot be read).
    pub fn generate() -> RunId {
        let mut bytes = [0u8; 6];
        let random = std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
        if random.is_err() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            let mixed = nanos ^ (u64::from(std::process::id()) << 32);
            bytes.copy_from_slice(&mixed.to_le_bytes()[..6]);
        }
        RunId(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// This process's run id, from `CONVOY_RUN_ID`; None when unset or empty.
    pub fn from_env() -> Result<Option<RunId>, String> {
        match std::env::var(RUN_ID_ENV) {
            Ok(s) if !s.is_empty() => RunId::parse(&s)
                .map(Some)
                .map_err(|e| format!("{RUN_ID_ENV}: {e}")),
            _ => Ok(None),
        }
    }

    /// The id of the run this process starts: `CONVOY_RUN_ID` when the user gave one, else a
    /// fresh one; either way set in this process's environment, so every node it starts
    /// inherits it.
    pub fn for_new_run() -> Result<RunId, String> {
        let id = match RunId::from_env()? {
            Some(id) => id,
            None => RunId::generate(),
        };
        // Set before any thread that reads the environment exists (the commands that start
        // runs call this first).
        std::env::set_var(RUN_ID_ENV, &id.0);
        Ok(id)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The partitions of this process's convoy endpoints: its run's, or (no run id) the default
/// partition and every run's.
pub fn partitions(run: Option<&RunId>) -> Vec<String> {
    match run {
        Some(id) => vec![format!("{PARTITION_PREFIX}{id}")],
        None => vec![String::new(), format!("{PARTITION_PREFIX}*")],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_checked_and_generated_fresh() {
        assert!(RunId::parse("demo-1_a").is_ok());
        assert!(RunId::parse("").is_err());
        assert!(RunId::parse("a b").is_err());
        assert!(RunId::parse("x*").is_err());
        assert!(RunId::parse(&"a".repeat(65)).is_err());
        let (a, b) = (RunId::generate(), RunId::generate());
        assert_ne!(a, b);
        assert_eq!(a.as_str().len(), 12);
        assert_eq!(partitions(Some(&a)), [format!("convoy.run.{a}")]);
        assert_eq!(partitions(None), ["", "convoy.run.*"]);
    }
}

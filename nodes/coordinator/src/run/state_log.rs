//! `--state-log`: one JSON line per agent per frame, however many copies of a state arrive.
//!
//! Agents write some states more than once, on purpose (DESIGN.md, "Time, clock and
//! determinism"): the frame-0 state on every Tick 0 of the handshake (in peer exchange until the
//! agent holds every peer's, which takes a few ticks), and a state asked for again when a frame
//! stalled (peer: state N-1 after state N; relay: state N again). Every copy is the same state,
//! and the agents' own readers keep states by frame, so a copy changes nothing there; the log
//! must treat them alike, or it repeats the frame-0 line of every agent in peer exchange.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use convoy_core::messages::AgentState;

/// How far behind an agent's newest logged frame a copy of one of its states can still arrive.
/// An agent writes a state again only for the last frame it stepped or the one before (it keeps
/// no older ones), and one writer's samples arrive in the order written, so a copy is never more
/// than one frame behind; the margin costs a few numbers per agent.
const REPEAT_WINDOW: u64 = 8;

/// The open log and which states it holds.
pub struct StateLog {
    out: BufWriter<File>,
    /// Per agent, the frames logged within [`REPEAT_WINDOW`] of its newest: what a copy could
    /// still repeat (older frames are forgotten, so a long run keeps a few numbers per agent).
    recent: BTreeMap<String, BTreeSet<u64>>,
}

impl StateLog {
    pub fn create(path: &Path) -> Result<StateLog> {
        let file = File::create(path)
            .with_context(|| format!("cannot create state log {}", path.display()))?;
        Ok(StateLog {
            out: BufWriter::new(file),
            recent: BTreeMap::new(),
        })
    }

    /// Writes `state`'s line, unless the log has its agent's state of that frame already (a
    /// copy, see the module docs) or the frame is further behind the agent's newest than a copy
    /// can be (then it was logged and forgotten).
    pub fn write(&mut self, state: &AgentState) -> Result<()> {
        let frames = self.recent.entry(state.agent_id.clone()).or_default();
        let behind = frames
            .last()
            .is_some_and(|&newest| state.frame.saturating_add(REPEAT_WINDOW) < newest);
        if behind || !frames.insert(state.frame) {
            return Ok(());
        }
        if let Some(&newest) = frames.last() {
            frames.retain(|&f| f.saturating_add(REPEAT_WINDOW) >= newest);
        }
        writeln!(self.out, "{}", state_log_line(state)).context("cannot write the state log")
    }

    pub fn flush(&mut self) -> Result<()> {
        self.out.flush().context("cannot write the state log")
    }
}

/// One line of `--state-log`: what a user plots or compares between runs.
pub fn state_log_line(s: &AgentState) -> String {
    let v = |v: &convoy_core::messages::Vec3| [v.x, v.y, v.z];
    let q = s.pose.orientation;
    serde_json::json!({
        "frame": s.frame,
        "sim_time_ns": s.stamp_ns,
        "agent": s.agent_id,
        "position": v(&s.pose.position),
        "orientation": [q.x, q.y, q.z, q.w],
        "linear_velocity": v(&s.twist.linear),
        "angular_velocity": v(&s.twist.angular),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(agent: &str, frame: u64) -> AgentState {
        AgentState {
            agent_id: agent.to_string(),
            frame,
            stamp_ns: frame as i64 * 10_000_000,
            ..AgentState::default()
        }
    }

    /// (agent, frame) of every line in the log at `path`.
    fn logged(path: &Path) -> Vec<(String, u64)> {
        let text = std::fs::read_to_string(path).expect("the log");
        text.lines()
            .map(|line| {
                let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
                let agent = v["agent"].as_str().expect("agent").to_string();
                (agent, v["frame"].as_u64().expect("frame"))
            })
            .collect()
    }

    #[test]
    fn copies_of_a_state_are_logged_once() {
        let path = std::env::temp_dir().join(format!("convoy-state-log-{}", std::process::id()));
        let mut log = StateLog::create(&path).expect("created");
        // Handshake: frame 0 on three Tick 0s, the two agents interleaved.
        for _ in 0..3 {
            log.write(&state("a", 0)).expect("written");
            log.write(&state("b", 0)).expect("written");
        }
        // Frame 2 stalled: b's state 1 again after its state 2 (peer), a's 2 again (relay).
        for (agent, frame) in [("a", 1), ("b", 1), ("a", 2), ("b", 2), ("b", 1), ("a", 2)] {
            log.write(&state(agent, frame)).expect("written");
        }
        // A state lost for good and written again once the next was: logged when it comes.
        log.write(&state("a", 4)).expect("written");
        log.write(&state("a", 3)).expect("written");
        // Far behind the newest: a copy of a state logged long ago.
        for frame in 5..=20 {
            log.write(&state("a", frame)).expect("written");
        }
        log.write(&state("a", 0)).expect("written");
        log.flush().expect("flushed");
        let lines = logged(&path);
        let _ = std::fs::remove_file(&path);
        let mut expected: Vec<(&str, u64)> = vec![
            ("a", 0),
            ("b", 0),
            ("a", 1),
            ("b", 1),
            ("a", 2),
            ("b", 2),
            ("a", 4),
            ("a", 3),
        ];
        expected.extend((5..=20).map(|f| ("a", f)));
        let expected: Vec<(String, u64)> = expected
            .into_iter()
            .map(|(a, f)| (a.to_string(), f))
            .collect();
        assert_eq!(lines, expected);
    }
}

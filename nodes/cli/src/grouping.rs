//! Which agents share an agent process (`--agents-per-process`, a launch file's
//! `agents_per_process`; DESIGN.md, "Agents a process"): a number, or `auto`, and the grouping
//! of a scenario's agents by host into processes.

use std::fmt;
use std::str::FromStr;

use convoy_core::node::NodeId;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::launch::HostAddress;

/// The most agents one process may be asked to run.
pub const MAX_AGENTS_PER_PROCESS: u64 = 1024;

/// How many agents share an agent process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentsPerProcess {
    /// The agents of a host spread evenly over as many processes as this machine has cores
    /// (measured best on 2 cores: 16 and 64 agents ran fastest in two processes).
    Auto,
    /// At most this many agents in each process (1: a process per agent).
    Count(u64),
}

impl AgentsPerProcess {
    /// How many of a host's `agents` go in each process; `cores` is this machine's.
    pub fn for_host(self, agents: usize, cores: usize) -> usize {
        match self {
            AgentsPerProcess::Count(k) => usize::try_from(k).unwrap_or(usize::MAX).max(1),
            AgentsPerProcess::Auto => agents.div_ceil(cores.max(1)).max(1),
        }
    }
}

impl Default for AgentsPerProcess {
    fn default() -> Self {
        AgentsPerProcess::Count(1)
    }
}

impl FromStr for AgentsPerProcess {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s == "auto" {
            return Ok(AgentsPerProcess::Auto);
        }
        match s.parse::<u64>() {
            Ok(k) if (1..=MAX_AGENTS_PER_PROCESS).contains(&k) => Ok(AgentsPerProcess::Count(k)),
            _ => Err(format!(
                "'{s}': give a number of agents from 1 to {MAX_AGENTS_PER_PROCESS}, or auto"
            )),
        }
    }
}

impl fmt::Display for AgentsPerProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `pad`: tables align it like a number.
        match self {
            AgentsPerProcess::Auto => f.pad("auto"),
            AgentsPerProcess::Count(k) => f.pad(&k.to_string()),
        }
    }
}

/// In a launch file: `agents_per_process = 8` or `agents_per_process = "auto"`.
impl<'de> Deserialize<'de> for AgentsPerProcess {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Count(i64),
            Word(String),
        }
        let text = match Written::deserialize(deserializer)? {
            Written::Count(k) => k.to_string(),
            Written::Word(w) => w,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Written back as it was read: a number, or "auto".
impl Serialize for AgentsPerProcess {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            AgentsPerProcess::Auto => serializer.serialize_str("auto"),
            AgentsPerProcess::Count(k) => serializer.serialize_u64(*k),
        }
    }
}

/// The agents of `ids` (in id order) grouped by the host each is placed on, hosts in the order
/// of their first agent.
pub fn agents_by_host(
    ids: &[String],
    host_of: &dyn Fn(&str) -> HostAddress,
) -> Vec<(HostAddress, Vec<String>)> {
    let mut hosts: Vec<(HostAddress, Vec<String>)> = Vec::new();
    for id in ids {
        let host = host_of(&NodeId::agent(id).to_string());
        match hosts.iter_mut().find(|(h, _)| *h == host) {
            Some((_, on_host)) => on_host.push(id.clone()),
            None => hosts.push((host, vec![id.clone()])),
        }
    }
    hosts
}

/// What the launcher calls the process of `ids` in its log lines and reports: the agent's node
/// id for one agent, `agents/FIRST..LAST` for several.
pub fn agent_process_id(ids: &[String]) -> String {
    match ids {
        [one] => NodeId::agent(one).to_string(),
        [first, .., last] => format!("agents/{first}..{last}"),
        [] => "agents/none".into(),
    }
}

/// The first agent of a process named by [`agent_process_id`] for several agents (`None` for
/// any other node id, a single agent's included: that one is the agent's node id).
pub fn first_agent_of_process(process_id: &str) -> Option<&str> {
    let (first, _) = process_id.strip_prefix("agents/")?.split_once("..")?;
    Some(first)
}

/// This machine's cores, for `auto`.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_group_by_host_in_id_order() {
        let ids: Vec<String> = ["a1", "a2", "b1", "a3"].map(String::from).to_vec();
        let host_of = |node: &str| {
            if node.starts_with("agent/b") {
                HostAddress::Netns("b".into())
            } else {
                HostAddress::Local
            }
        };
        let grouped = agents_by_host(&ids, &host_of);
        assert_eq!(
            grouped,
            vec![
                (
                    HostAddress::Local,
                    vec!["a1".into(), "a2".into(), "a3".into()]
                ),
                (HostAddress::Netns("b".into()), vec!["b1".into()]),
            ]
        );
        assert_eq!(agent_process_id(&grouped[0].1[..2]), "agents/a1..a2");
        assert_eq!(agent_process_id(&grouped[1].1), "agent/b1");
        let process = agent_process_id(&grouped[0].1);
        assert_eq!(first_agent_of_process(&process), Some("a1"));
        assert_eq!(first_agent_of_process("agent/b1"), None);
    }

    #[test]
    fn auto_spreads_a_hosts_agents_over_the_cores() {
        assert_eq!(AgentsPerProcess::Auto.for_host(16, 2), 8);
        assert_eq!(AgentsPerProcess::Auto.for_host(17, 2), 9);
        assert_eq!(AgentsPerProcess::Auto.for_host(3, 8), 1);
        assert_eq!(AgentsPerProcess::Auto.for_host(5, 0), 5);
        assert_eq!(AgentsPerProcess::Count(4).for_host(16, 2), 4);
        assert_eq!("auto".parse(), Ok(AgentsPerProcess::Auto));
        assert_eq!("8".parse(), Ok(AgentsPerProcess::Count(8)));
        for bad in ["0", "-1", "1025", "eight", ""] {
            let err = bad.parse::<AgentsPerProcess>().expect_err(bad);
            assert!(err.contains("or auto"), "{err}");
        }
        #[derive(Deserialize)]
        struct Run {
            agents_per_process: AgentsPerProcess,
        }
        let run: Run = toml::from_str("agents_per_process = \"auto\"").expect("auto");
        assert_eq!(run.agents_per_process, AgentsPerProcess::Auto);
        let run: Run = toml::from_str("agents_per_process = 2").expect("2");
        assert_eq!(run.agents_per_process, AgentsPerProcess::Count(2));
        assert!(toml::from_str::<Run>("agents_per_process = 0").is_err());
    }
}

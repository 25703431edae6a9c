//! `convoy launch FILE` (the whole graph from one file, on every host it names) and
//! `convoy netns up|down FILE` (the network namespaces a launch file's `netns:` hosts live in,
//! joined by a bridge with a multicast route, with per-host link conditions).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::launch::{HostAddress, LaunchFile, LinkSpec};
use anyhow::{bail, Context, Result};
use convoy_core::node::NodeId;
use convoy_core::qos::QosSpec;

use crate::args::{LaunchArgs, RunArgs};
use crate::graph::run_until_done;
use crate::grouping::first_agent_of_process;
use crate::node_process::NodeProcess;
use crate::process::{run, stop_flag};
use crate::run_cmd::{scenario_nodes, ExtraNodes};

/// The node processes of a launch file, each wrapped for its host.
pub fn plan(launch: &LaunchFile, args: &LaunchArgs) -> Result<(u32, Vec<NodeProcess>)> {
    let qos: Option<QosSpec> = args.qos.clone().or_else(|| launch.qos.clone());
    let run = &launch.spec.run;
    let run_args = RunArgs {
        scenario: launch.scenario_path.clone(),
        frames: args.frames.or(run.frames),
        duration: args.duration.or(run.duration),
        mode: run.mode.map(|m| format!("{m:?}").to_lowercase()),
        exchange: run.exchange.map(|e| format!("{e:?}").to_lowercase()),
        state_log: args.state_log.clone(),
        agents_per_process: run.agents_per_process,
        ..RunArgs::default()
    };
    let host_of = |node_id: &str| -> HostAddress {
        let host = host_name_of(launch, node_id);
        launch
            .hosts
            .get(&host)
            .cloned()
            .unwrap_or(HostAddress::Local)
    };
    let nodes = scenario_nodes(
        run.domain,
        qos.as_ref(),
        &run_args,
        &ExtraNodes {
            sensors: launch.sensor_nodes.clone(),
            bridges: launch.bridge_nodes.clone(),
            recorders: launch.record_nodes.clone(),
            views: launch.view_nodes.clone(),
        },
        &host_of,
    )?;
    Ok((run.domain, nodes))
}

/// The host name a node id runs on, as the launch file places it (for the process of several
/// agents, `agents/FIRST..LAST`, where its first agent runs).
fn host_name_of(launch: &LaunchFile, node_id: &str) -> String {
    if let Some(first) = first_agent_of_process(node_id) {
        return host_name_of(launch, &NodeId::agent(first).to_string());
    }
    let placed = match NodeId::parse_node(node_id) {
        Ok(NodeId::Agent(agent)) => {
            return launch
                .agent_hosts
                .get(&agent)
                .cloned()
                .unwrap_or_else(|| "local".into())
        }
        Ok(NodeId::Sensor(name)) => launch
            .sensor_nodes
            .iter()
            .find(|s| s.name == name)
            .map(|s| &s.host),
        Ok(NodeId::Bridge(name)) => launch
            .bridge_nodes
            .iter()
            .find(|b| b.name == name)
            .map(|b| &b.host)
            .or_else(|| {
                let recorders = launch.record_nodes.iter().map(|r| (&r.name, &r.host));
                let views = launch.view_nodes.iter().map(|v| (&v.name, &v.host));
                let mut others = recorders.chain(views);
                others.find(|(n, _)| **n == name).map(|(_, host)| host)
            }),
        _ => None,
    };
    placed.map_or_else(|| launch.coordinator_host().to_string(), String::clone)
}

pub fn launch(args: &LaunchArgs) -> Result<()> {
    let launch = LaunchFile::load(&args.file)?;
    let (domain, mut nodes) = plan(&launch, args)?;
    let secure = args.secure || launch.spec.run.secure;
    // Every node of this run, on every host, gets it (ssh: on its command line).
    let run_id = convoy_core::dds::run_scope::RunId::for_new_run().map_err(anyhow::Error::msg)?;
    let qos_label = args
        .qos
        .as_ref()
        .or(launch.qos.as_ref())
        .map_or("built-in qos/convoy.xml::convoy".to_string(), |q| {
            q.to_string()
        });
    println!(
        "launch {}: domain {domain}, scenario {}, QoS {qos_label}, run id {run_id}{}",
        args.file.display(),
        launch.scenario_path.display(),
        if secure { ", secured" } else { "" }
    );
    for node in &nodes {
        let host = host_name_of(&launch, &node.id);
        let address = launch.hosts.get(&host).map_or("local".into(), describe);
        println!("  {:<16} on {host} ({address})", node.id);
    }
    if args.check {
        println!("check: ok ({} nodes); nothing started", nodes.len());
        return Ok(());
    }
    for (name, address) in &launch.hosts {
        if let HostAddress::Netns(ns) = address {
            if !netns_exists(ns) {
                bail!(
                    "host '{name}' is netns:{ns}, which does not exist: run `convoy netns up {}` first",
                    args.file.display()
                );
            }
        }
    }
    for (name, ns, _, _, link) in &network(&launch).hosts {
        if link.is_some_and(|l| l.delay_ms > 0.0 || l.jitter_ms > 0.0) {
            println!(
                "host {name}: {}",
                link_delay_line(emulated_link(ns).is_some())
            );
        }
    }
    let secured = match secure {
        true => Some(crate::run_cmd::secure_nodes(
            &run_id,
            domain,
            &launch.encrypt,
            &mut nodes,
        )?),
        false => None,
    };
    let stop = stop_flag()?;
    let result = run_until_done(&nodes, "coordinator", &stop, true, |_| {});
    crate::run_cmd::sweep_run_rings(&run_id);
    drop(secured);
    result
}

fn describe(address: &HostAddress) -> String {
    match address {
        HostAddress::Local => "local".into(),
        HostAddress::Netns(n) => format!("netns:{n}"),
        HostAddress::Ssh { user, host } => match user {
            Some(u) => format!("ssh://{u}@{host}"),
            None => format!("ssh://{host}"),
        },
    }
}

/// The bridge and subnet of one launch file's namespaces: derived from the namespace names so
/// that two launch files (two tests) never share a bridge or addresses.
pub struct Network {
    pub bridge: String,
    pub subnet: u8,
    /// (host name, namespace, host-side veth, address, link)
    pub hosts: Vec<(String, String, String, String, Option<LinkSpec>)>,
}

pub fn network(launch: &LaunchFile) -> Network {
    let namespaces = launch.netns_hosts();
    let key: String = namespaces
        .iter()
        .map(|(_, ns)| ns.as_str())
        .collect::<Vec<_>>()
        .join(",");
    let hash = key.bytes().fold(2166136261u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(16777619)
    });
    let subnet = (hash % 200) as u8 + 20;
    let bridge = format!("cvbr{:06x}", hash & 0xff_ffff);
    let hosts = namespaces
        .into_iter()
        .enumerate()
        .map(|(i, (name, ns))| {
            let spec = &launch.spec.hosts[&name];
            let ip = spec
                .ip
                .clone()
                .unwrap_or_else(|| format!("10.77.{subnet}.{}/24", i + 1));
            let veth = format!("cv{:06x}{}", hash & 0xff_ffff, i);
            (name, ns, veth, ip, spec.link)
        })
        .collect();
    Network {
        bridge,
        subnet,
        hosts,
    }
}

/// Whether the network namespace `ns` exists (`ip netns add` made it).
pub fn netns_exists(ns: &str) -> bool {
    Path::new("/run/netns").join(ns).exists()
}

/// Whether this (the root) namespace has a network link named `name`.
fn link_exists(name: &str) -> bool {
    Path::new("/sys/class/net").join(name).exists()
}

/// Runs one command line, split into words at spaces: the names here (generated, or checked
/// netns names) have none, and an address with one is no address for `ip` either way.
fn sh(line: &str) -> Result<()> {
    let mut words = line.split_whitespace();
    let program = words.next().context("an empty command line")?;
    run(Command::new(program).args(words), &format!("`{line}`"))
}

/// Creates the namespaces, the bridge and the links; applies link conditions. Safe to repeat.
pub fn netns_up(file: &Path) -> Result<()> {
    let launch = LaunchFile::load(file)?;
    let net = network(&launch);
    if net.hosts.is_empty() {
        println!("{}: no netns hosts", file.display());
        return Ok(());
    }
    let bridge = &net.bridge;
    if !link_exists(bridge) {
        sh(&format!("ip link add {bridge} type bridge"))?;
    }
    sh(&format!("ip link set {bridge} up"))?;
    for (name, ns, veth, ip, link) in &net.hosts {
        if !netns_exists(ns) {
            sh(&format!("ip netns add {ns}"))?;
        }
        if !link_exists(veth) {
            sh(&format!(
                "ip link add {veth} type veth peer name eth0 netns {ns}"
            ))?;
        }
        sh(&format!("ip link set {veth} master {bridge} up"))?;
        sh(&format!("ip -n {ns} link set lo up"))?;
        sh(&format!("ip -n {ns} addr replace {ip} dev eth0"))?;
        sh(&format!("ip -n {ns} link set eth0 up multicast on"))?;
        // DDS discovery is multicast: route it onto the bridge.
        sh(&format!("ip -n {ns} route replace 224.0.0.0/4 dev eth0"))?;
        match link {
            Some(l) => {
                let address = ip.split('/').next().unwrap_or(ip);
                let emulated = apply_link(ns, address, l)
                    .with_context(|| format!("host {name}: link conditions"))?;
                println!("host {name}: netns {ns}, {ip}, link {l:?}");
                if l.delay_ms > 0.0 || l.jitter_ms > 0.0 {
                    println!("host {name}: {}", link_delay_line(emulated));
                }
            }
            None => {
                forget_emulated_link(ns)?;
                println!("host {name}: netns {ns}, {ip}");
            }
        }
    }
    println!("bridge {} up (10.77.{}.0/24)", net.bridge, net.subnet);
    Ok(())
}

/// Removes what `netns_up` made. Safe to repeat.
pub fn netns_down(file: &Path) -> Result<()> {
    let launch = LaunchFile::load(file)?;
    let net = network(&launch);
    for (_, ns, veth, _, _) in &net.hosts {
        if netns_exists(ns) {
            sh(&format!("ip netns del {ns}"))?;
        }
        forget_emulated_link(ns)?;
        // Deleting the namespace usually takes the veth pair with it.
        if link_exists(veth) {
            let _ = Command::new("ip")
                .args(["link", "del", veth])
                .stderr(Stdio::null())
                .status();
        }
    }
    if link_exists(&net.bridge) {
        sh(&format!("ip link del {}", net.bridge))?;
    }
    println!(
        "removed {} namespaces and bridge {}",
        net.hosts.len(),
        net.bridge
    );
    Ok(())
}

/// Where `convoy netns up` leaves the link emulation of a namespace's nodes (the
/// `CONVOY_LINK` value, one file per namespace) when the kernel has no netem to delay with.
const EMULATED_LINKS: &str = "/run/convoy/netns";

fn emulated_link_file(ns: &str) -> PathBuf {
    Path::new(EMULATED_LINKS).join(format!("{ns}.link"))
}

/// The `CONVOY_LINK` value every convoy process started in namespace `ns` gets
/// ([`crate::run_cmd::on_host`]): set by `convoy netns up` where the namespace's link has a
/// delay or jitter and the kernel no netem.
pub fn emulated_link(ns: &str) -> Option<String> {
    let text = std::fs::read_to_string(emulated_link_file(ns)).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

fn forget_emulated_link(ns: &str) -> Result<()> {
    match std::fs::remove_file(emulated_link_file(ns)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("cannot remove {}", emulated_link_file(ns).display()))
        }
        _ => Ok(()),
    }
}

/// The line `convoy netns up` and `convoy launch` print for a host whose link has a delay.
fn link_delay_line(emulated: bool) -> &'static str {
    if emulated {
        "link delay: emulated in convoy's transport (no netem in this kernel)"
    } else {
        "link delay: netem"
    }
}

/// The `CONVOY_LINK` value that gives a namespace's nodes its link's delay and jitter: to every
/// destination but the namespace itself (its address `own`, and loopback), which netem on its
/// eth0 would not delay either.
fn link_emulation_value(own: &str, l: &LinkSpec) -> String {
    format!(
        "127.0.0.1:off;{own}:off;*:delay_ms={},jitter_ms={}",
        l.delay_ms, l.jitter_ms
    )
}

/// Link conditions on a namespace's egress: `tc netem` on its eth0 where the kernel has it.
/// Otherwise loss through nftables (random drop of UDP) and rate through `tbf`, and delay and
/// jitter emulated in convoy's transport: the namespace's `CONVOY_LINK` ([`emulated_link`]),
/// which every convoy process started there gets. Returns whether delay is emulated so.
fn apply_link(ns: &str, own: &str, l: &LinkSpec) -> Result<bool> {
    let qdisc = format!("tc -n {ns} qdisc replace dev eth0 root");
    if kernel_has_netem() {
        forget_emulated_link(ns)?;
        let mut netem = format!(
            "{qdisc} netem delay {}ms {}ms loss {}%",
            l.delay_ms, l.jitter_ms, l.loss_pct
        );
        if l.rate_mbit > 0.0 {
            netem += &format!(" rate {}mbit", l.rate_mbit);
        }
        sh(&netem)?;
        return Ok(false);
    }
    let emulated = l.delay_ms > 0.0 || l.jitter_ms > 0.0;
    if emulated {
        let file = emulated_link_file(ns);
        std::fs::create_dir_all(EMULATED_LINKS)
            .with_context(|| format!("cannot create {EMULATED_LINKS}"))?;
        std::fs::write(&file, link_emulation_value(own, l) + "\n")
            .with_context(|| format!("cannot write {}", file.display()))?;
    } else {
        forget_emulated_link(ns)?;
    }
    if l.rate_mbit > 0.0 {
        let rate = l.rate_mbit;
        sh(&format!(
            "{qdisc} tbf rate {rate}mbit burst 32kbit latency 400ms"
        ))?;
    }
    if l.loss_pct > 0.0 {
        let per_10000 = (l.loss_pct * 100.0).round() as u32;
        let rules = format!(
            "table inet convoy_link {{\n  chain egress {{\n    type filter hook output priority 0;\n    \
             meta l4proto udp numgen random mod 10000 < {per_10000} drop\n  }}\n}}\n"
        );
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "-f", "-"])
            .stdin(Stdio::piped())
            .spawn()
            .context("cannot run nft (Debian package nftables)")?;
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            stdin
                .write_all(rules.as_bytes())
                .context("cannot pass rules to nft")?;
        }
        let status = child.wait().context("nft did not finish")?;
        if !status.success() {
            bail!("nft could not install the loss rule in {ns} ({status})");
        }
    }
    Ok(emulated)
}

/// Whether this kernel has the netem qdisc (loaded, or `tc` can add it).
pub(crate) fn kernel_has_netem() -> bool {
    Path::new("/sys/module/sch_netem").exists() || netem_available()
}

/// Whether `tc` knows netem on this kernel (tried on a throwaway dummy qdisc check).
fn netem_available() -> bool {
    std::fs::read_to_string("/proc/net/psched").is_ok()
        && Command::new("tc")
            .args(["qdisc", "add", "dev", "lo", "root", "netem", "delay", "0ms"])
            .output()
            .map(|o| {
                let ok = o.status.success();
                if ok {
                    let _ = Command::new("tc")
                        .args(["qdisc", "del", "dev", "lo", "root"])
                        .status();
                }
                ok
            })
            .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use convoy_core::dds::transport::{TransportSettings, LINK_ENV};

    use super::*;

    #[test]
    fn an_emulated_namespace_link_delays_all_but_the_namespace_itself() {
        let link = LinkSpec {
            delay_ms: 20.0,
            jitter_ms: 2.5,
            ..LinkSpec::default()
        };
        let value = link_emulation_value("10.77.5.1", &link);
        let settings =
            TransportSettings::from_lookup(|var| (var == LINK_ENV).then(|| value.clone()))
                .expect("the value a namespace's nodes get parses");
        let emulation = settings.link.expect("an emulation");
        let others = emulation.default.expect("every other host");
        assert_eq!(others.delay, Duration::from_millis(20));
        assert_eq!(others.jitter, Duration::from_micros(2500));
        assert_eq!((others.loss_ppm, others.rate_bps), (0, 0));
        for own in ["127.0.0.1", "10.77.5.1"] {
            let ip = own.parse().expect("ip");
            assert_eq!(emulation.conditions_for(ip), None, "{own} is delayed");
        }
    }
}

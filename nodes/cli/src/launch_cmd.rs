//! `convoy launch FILE` (the whole graph from one file, on every host it names) and
//! `convoy netns up|down FILE` (the network namespaces a launch file's `netns:` hosts live in,
//! joined by a bridge with a multicast route, with per-host link conditions).

use std::path::Path;
use std::process::Command;

use crate::launch::{HostAddress, LaunchFile, LinkSpec};
use anyhow::{bail, Context, Result};
use convoy_core::node::NodeId;
use convoy_core::qos::QosSpec;

use crate::args::{LaunchArgs, RunArgs};
use crate::graph::{run_until_done, NodeProcess};
use crate::process::stop_flag;
use crate::run_cmd::scenario_nodes;

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
        bridge: false,
        bridge_config: None,
        coordinator_args: Vec::new(),
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
        &launch.sensor_nodes,
        &launch.bridge_nodes,
        &host_of,
    )?;
    Ok((run.domain, nodes))
}

/// The host name a node id runs on, as the launch file places it.
fn host_name_of(launch: &LaunchFile, node_id: &str) -> String {
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
            .map(|b| &b.host),
        _ => None,
    };
    placed.map_or_else(|| launch.coordinator_host().to_string(), String::clone)
}

pub fn launch(args: &LaunchArgs) -> Result<()> {
    let launch = LaunchFile::load(&args.file)?;
    let (domain, nodes) = plan(&launch, args)?;
    let qos_label = args
        .qos
        .as_ref()
        .or(launch.qos.as_ref())
        .map_or("built-in qos/convoy.xml::convoy".to_string(), |q| {
            q.to_string()
        });
    println!(
        "launch {}: domain {domain}, scenario {}, QoS {qos_label}",
        args.file.display(),
        launch.scenario_path.display()
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
            if !Path::new("/run/netns").join(ns).exists() {
                bail!(
                    "host '{name}' is netns:{ns}, which does not exist: run `convoy netns up {}` first",
                    args.file.display()
                );
            }
        }
    }
    let stop = stop_flag()?;
    run_until_done(&nodes, "coordinator", &stop, true, |_| {})
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

fn sh(args: &[&str]) -> Result<()> {
    let status = Command::new(args[0])
        .args(&args[1..])
        .status()
        .with_context(|| format!("cannot run {}", args[0]))?;
    if !status.success() {
        bail!("`{}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Creates the namespaces, the bridge and the links; applies link conditions. Safe to repeat.
pub fn netns_up(file: &Path) -> Result<()> {
    let launch = LaunchFile::load(file)?;
    let net = network(&launch);
    if net.hosts.is_empty() {
        println!("{}: no netns hosts", file.display());
        return Ok(());
    }
    if !Path::new("/sys/class/net").join(&net.bridge).exists() {
        sh(&["ip", "link", "add", &net.bridge, "type", "bridge"])?;
    }
    sh(&["ip", "link", "set", &net.bridge, "up"])?;
    for (name, ns, veth, ip, link) in &net.hosts {
        if !Path::new("/run/netns").join(ns).exists() {
            sh(&["ip", "netns", "add", ns])?;
        }
        if !Path::new("/sys/class/net").join(veth).exists() {
            sh(&[
                "ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns,
            ])?;
        }
        sh(&["ip", "link", "set", veth, "master", &net.bridge, "up"])?;
        sh(&["ip", "-n", ns, "link", "set", "lo", "up"])?;
        sh(&["ip", "-n", ns, "addr", "replace", ip, "dev", "eth0"])?;
        sh(&[
            "ip",
            "-n",
            ns,
            "link",
            "set",
            "eth0",
            "up",
            "multicast",
            "on",
        ])?;
        // DDS discovery is multicast: route it onto the bridge.
        sh(&[
            "ip",
            "-n",
            ns,
            "route",
            "replace",
            "224.0.0.0/4",
            "dev",
            "eth0",
        ])?;
        match link {
            Some(l) => {
                apply_link(ns, l).with_context(|| format!("host {name}: link conditions"))?;
                println!("host {name}: netns {ns}, {ip}, link {l:?}");
            }
            None => println!("host {name}: netns {ns}, {ip}"),
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
        if Path::new("/run/netns").join(ns).exists() {
            sh(&["ip", "netns", "del", ns])?;
        }
        // Deleting the namespace usually takes the veth pair with it.
        if Path::new("/sys/class/net").join(veth).exists() {
            let _ = Command::new("ip")
                .args(["link", "del", veth])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
    if Path::new("/sys/class/net").join(&net.bridge).exists() {
        sh(&["ip", "link", "del", &net.bridge])?;
    }
    println!(
        "removed {} namespaces and bridge {}",
        net.hosts.len(),
        net.bridge
    );
    Ok(())
}

/// Link conditions on a namespace's eth0 (egress): `tc netem` where the kernel has it;
/// otherwise loss through nftables (random drop of UDP) and rate through `tbf`, and a clear
/// error for delay, which needs netem.
fn apply_link(ns: &str, l: &LinkSpec) -> Result<()> {
    if Path::new("/sys/module/sch_netem").exists() || netem_available() {
        let mut cmd: Vec<String> = [
            "tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", "netem",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        cmd.extend([
            "delay".into(),
            format!("{}ms", l.delay_ms),
            format!("{}ms", l.jitter_ms),
            "loss".into(),
            format!("{}%", l.loss_pct),
        ]);
        if l.rate_mbit > 0.0 {
            cmd.extend(["rate".into(), format!("{}mbit", l.rate_mbit)]);
        }
        let words: Vec<&str> = cmd.iter().map(String::as_str).collect();
        return sh(&words);
    }
    if l.delay_ms > 0.0 || l.jitter_ms > 0.0 {
        bail!(
            "delay and jitter need the kernel's netem qdisc (CONFIG_NET_SCH_NETEM), which this \
             kernel lacks; loss_pct and rate_mbit work without it"
        );
    }
    if l.rate_mbit > 0.0 {
        let rate = format!("{}mbit", l.rate_mbit);
        sh(&[
            "tc", "-n", ns, "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", &rate,
            "burst", "32kbit", "latency", "400ms",
        ])?;
    }
    if l.loss_pct > 0.0 {
        let per_10000 = (l.loss_pct * 100.0).round() as u32;
        let rules = format!(
            "table inet convoy_link {{\n  chain egress {{\n    type filter hook output priority 0;\n    \
             meta l4proto udp numgen random mod 10000 < {per_10000} drop\n  }}\n}}\n"
        );
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "nft", "-f", "-"])
            .stdin(std::process::Stdio::piped())
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
    Ok(())
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

//! `convoy run SCENARIO`: the coordinator, one process per agent (or per
//! `--agents-per-process` agents) and (when the scenario has
//! sensors) a main sensor node on this host, with progress, until the frame/duration limit or
//! Ctrl-C; none is left behind. It is the one-host case of `convoy launch`: both build their
//! node processes with [`scenario_nodes`].

use std::path::Path;

use crate::launch::{
    BridgeNodeLaunch, HostAddress, RecordNodeLaunch, SensorNodeLaunch, ViewNodeLaunch,
};
use anyhow::{bail, Result};
use convoy_core::dds::run_scope::RunId;
use convoy_core::node::{AdapterChoice, NodeId, SensorNodeRole};
use convoy_core::qos::QosSpec;
use convoy_core::scenario::{resolve_path, Scenario};

use crate::args::RunArgs;
use crate::graph::{run_until_done, sibling_binary};
use crate::grouping::{agent_process_id, agents_by_host, cores};
use crate::node_process::NodeProcess;
use crate::process::stop_flag;
use crate::security::run::{SecuredRun, DEFAULT_ENCRYPTED};

/// The nodes of a run beyond the coordinator and the agents (`Default`: none).
#[derive(Debug, Clone, Default)]
pub struct ExtraNodes {
    pub sensors: Vec<SensorNodeLaunch>,
    pub bridges: Vec<BridgeNodeLaunch>,
    /// MCAP recorders (`convoy record`); the coordinator waits for them before frame 0.
    pub recorders: Vec<RecordNodeLaunch>,
    pub views: Vec<ViewNodeLaunch>,
}

/// The node processes of a scenario run: the coordinator, the agents in id order, the sensor
/// nodes, the bridges, the recorders, then the live views, each placed on the host `host_of(node id)` says.
pub fn scenario_nodes(
    domain: u32,
    qos: Option<&QosSpec>,
    args: &RunArgs,
    extra: &ExtraNodes,
    host_of: &dyn Fn(&str) -> HostAddress,
) -> Result<Vec<NodeProcess>> {
    let ExtraNodes {
        sensors,
        bridges,
        recorders,
        views,
    } = extra;
    let path = resolve_path(&args.scenario);
    let scenario = Scenario::load(&path)?;
    check_world(&scenario)?;
    // Absolute paths: a node may run on another host or in another working directory.
    let absolute = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = absolute(&path);
    let path_arg = path.display().to_string();
    let mut common = vec!["--domain".to_string(), domain.to_string()];
    if let Some(q) = qos {
        let mut q = q.clone();
        q.path = absolute(&q.path);
        common.extend(["--qos".into(), q.to_string()]);
    }
    // What `convoy record` and `convoy view` take of them: they are commands, not node
    // binaries (no scenario overrides: they read the scenario only for its topics and map).
    let globals = common.clone();
    // Every node takes the same overrides (NodeArgs), so all of them see the same scenario.
    if let Some(mode) = &args.mode {
        common.extend(["--mode".into(), mode.clone()]);
    }
    if let Some(exchange) = &args.exchange {
        common.extend(["--exchange".into(), exchange.clone()]);
    }
    let mut coordinator_args = vec![path_arg.clone()];
    coordinator_args.extend(common.iter().cloned());
    if let Some(frames) = args.frames {
        coordinator_args.extend(["--frames".into(), frames.to_string()]);
    }
    if let Some(duration) = args.duration {
        coordinator_args.extend(["--duration".into(), duration.to_string()]);
    }
    if let Some(log) = &args.state_log {
        coordinator_args.extend(["--state-log".into(), log.display().to_string()]);
    }
    // The coordinator waits for exactly the sensor nodes started here (none: it runs without).
    coordinator_args.extend(["--sensor-nodes".into(), sensors.len().to_string()]);
    // ... and for the recorders, so that they hear the run from its first tick.
    for r in recorders {
        coordinator_args.extend(["--wait-for".into(), NodeId::bridge(&r.name).to_string()]);
    }
    coordinator_args.extend(args.coordinator_args.iter().cloned());
    // Each node on its host; all but the coordinator take the scenario, then theirs, then common.
    let place = |id: NodeId, program: &Path, args: Vec<String>| {
        let id = id.to_string();
        NodeProcess::on(&host_of(&id), &id, program, args)
    };
    let mut nodes = vec![place(
        NodeId::Coordinator,
        &sibling_binary("convoy-coordinator")?,
        coordinator_args,
    )];
    let node_args = |own: Vec<String>| {
        let mut all = vec![path_arg.clone()];
        all.extend(own.into_iter().chain(common.iter().cloned()));
        all
    };
    let agent_bin = sibling_binary("convoy-agent")?;
    let grouping = args.agents_per_process.unwrap_or_default();
    for (host, ids) in agents_by_host(&scenario.agent_ids(), host_of) {
        for ids in ids.chunks(grouping.for_host(ids.len(), cores())) {
            let own = ids
                .iter()
                .flat_map(|id| ["--id".into(), id.clone()])
                .collect();
            let id = agent_process_id(ids);
            let agents = ids.iter().map(NodeId::agent).collect();
            nodes.push(NodeProcess::on(&host, &id, &agent_bin, node_args(own)).running(agents));
        }
    }
    if !sensors.is_empty() {
        let sensor_bin = sibling_binary("convoy-sensor")?;
        for s in sensors {
            let mut own = vec![
                "--name".into(),
                s.name.clone(),
                "--role".into(),
                s.role.to_string(),
                "--capacity".into(),
                s.capacity.to_string(),
            ];
            if s.adapter != AdapterChoice::Auto {
                own.extend(["--adapter".into(), s.adapter.as_str().into()]);
            }
            nodes.push(place(NodeId::sensor(&s.name), &sensor_bin, node_args(own)));
        }
    }
    if !bridges.is_empty() {
        let bridge_bin = sibling_binary("convoy-bridge")?;
        for b in bridges {
            // Checked before anything starts, as the bridge will (the file and key in errors).
            convoy_bridge::node::BridgeNodeConfig {
                node: convoy_core::node::NodeArgs::new(path.clone(), domain),
                name: b.name.clone(),
                settings: b.config.clone(),
                ros_domain: None,
                node_name: None,
                hold_for_stack: None,
            }
            .settings(&scenario)?;
            let mut own = vec!["--name".into(), b.name.clone()];
            if let Some(config) = &b.config {
                own.extend(["--config".into(), absolute(config).display().to_string()]);
            }
            nodes.push(place(NodeId::bridge(&b.name), &bridge_bin, node_args(own)));
        }
    }
    if !recorders.is_empty() {
        // The recorder is `convoy record` itself: the running convoy binary.
        let convoy = sibling_binary("convoy")?;
        for r in recorders {
            let mut own = globals.clone();
            own.extend(["record".into(), "--scenario".into(), path_arg.clone()]);
            own.extend(["--name".into(), r.name.clone(), "--quiet".into()]);
            if let Some(out) = &r.out {
                // Absolute, as the recorder may run in another directory.
                let out = match std::path::absolute(out) {
                    Ok(out) => out,
                    Err(_) => out.clone(),
                };
                own.extend(["--out".into(), out.display().to_string()]);
            }
            if !r.topics.is_empty() {
                own.push("--topics".into());
                own.extend(r.topics.iter().cloned());
            }
            nodes.push(place(NodeId::bridge(&r.name), &convoy, own));
        }
    }
    if !views.is_empty() {
        let convoy = sibling_binary("convoy")?;
        for v in views {
            let mut own = vec![
                "view".into(),
                path_arg.clone(),
                "--name".into(),
                v.name.clone(),
                "--bind".into(),
                v.bind.clone(),
            ];
            own.extend(globals.iter().cloned());
            nodes.push(place(NodeId::bridge(&v.name), &convoy, own));
        }
    }
    Ok(nodes)
}

/// The sensor nodes `convoy run` starts: one main when the scenario has sensors, rendering
/// its cameras on `adapter`.
pub fn default_sensor_nodes(scenario: &Scenario, adapter: AdapterChoice) -> Vec<SensorNodeLaunch> {
    if scenario.agents.iter().all(|a| a.sensors.is_empty()) {
        return Vec::new();
    }
    let mut main = SensorNodeLaunch::local("main".into(), SensorNodeRole::Main);
    main.adapter = adapter;
    vec![main]
}

pub fn run(domain: u32, qos: Option<&QosSpec>, args: &RunArgs) -> Result<()> {
    // Every node of this run inherits it: another run on this domain stays apart.
    let run_id = RunId::for_new_run().map_err(anyhow::Error::msg)?;
    eprintln!("run id {run_id} (DDS partition convoy.run.{run_id})");
    if args.frames.is_none() && args.duration.is_none() {
        eprintln!("no --frames or --duration: running until Ctrl-C");
    }
    if let Some(d) = args.duration {
        if !(d > 0.0 && d.is_finite()) {
            bail!("--duration {d} must be a positive number of simulated seconds");
        }
    }
    let scenario = Scenario::load(&resolve_path(&args.scenario))?;
    let sensors = default_sensor_nodes(&scenario, args.adapter);
    let bridges = if args.bridge || args.bridge_config.is_some() {
        vec![BridgeNodeLaunch {
            name: "ros2".into(),
            host: "local".into(),
            config: args.bridge_config.clone(),
        }]
    } else {
        Vec::new()
    };
    // `--record FILE`: one recorder, DDS node bridge/record.
    let recorders = args.record.iter().map(|out| RecordNodeLaunch {
        name: "record".into(),
        host: "local".into(),
        out: Some(out.clone()),
        topics: Vec::new(),
    });
    let extra = ExtraNodes {
        sensors,
        bridges,
        recorders: recorders.collect(),
        views: Vec::new(),
    };
    let mut nodes = scenario_nodes(domain, qos, args, &extra, &|_| HostAddress::Local)?;
    let secured = match args.secure {
        true => Some(secure_nodes(
            &run_id,
            domain,
            &DEFAULT_ENCRYPTED.into(),
            &mut nodes,
        )?),
        false => None,
    };
    println!(
        "starting {} nodes on domain {domain}: {}",
        nodes.len(),
        nodes
            .iter()
            .map(|n| n.id.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let stop = stop_flag()?;
    let result = run_until_done(&nodes, "coordinator", &stop, true, |_| {});
    sweep_run_rings(&run_id);
    drop(secured);
    result
}

/// Makes a secured run's files for `nodes` and points each at its own (`--secure`), saying
/// where they are and how a user's tools reach the run.
pub fn secure_nodes(
    run_id: &RunId,
    domain: u32,
    encrypt: &std::collections::BTreeSet<convoy_core::topics::TopicClass>,
    nodes: &mut [NodeProcess],
) -> Result<SecuredRun> {
    let secured = SecuredRun::prepare(run_id, domain, encrypt, nodes)?;
    let classes: Vec<&str> = encrypt.iter().map(|c| c.profile_name()).collect();
    println!(
        "secured: DDS Security on every node, {} identities in {} (removed at the end); payloads of {} encrypted; tools reach the run with {}={}",
        nodes.len() + 1,
        secured.dir().display(),
        if classes.is_empty() { "no class".to_string() } else { classes.join(", ") },
        convoy_core::dds::security::SECURITY_ENV,
        secured.tool_enclave().display()
    );
    Ok(secured)
}

/// Removes what is left of the run's shared-memory rings on this host (a node that was killed
/// cannot remove its own): after a run, none remains (docs/TRANSPORT.md, "Same-host shared
/// memory for large samples"). Other hosts' nodes sweep rings of dead processes when they
/// start.
pub fn sweep_run_rings(run_id: &RunId) {
    use convoy_core::dds::shm;
    let removed = shm::sweep(
        std::path::Path::new(shm::SHM_DIR),
        Some(run_id.as_str()),
        true,
    );
    if !removed.is_empty() {
        eprintln!(
            "removed {} shared-memory ring(s) the run's nodes left behind",
            removed.len()
        );
    }
}

/// Loads the scenario's world once before any node starts, so a bad map file or a start on a
/// lane that does not exist fails here, naming the file, instead of in every node.
pub fn check_world(scenario: &Scenario) -> Result<()> {
    if !scenario.has_map_files() {
        return Ok(());
    }
    let world = convoy_world::World::load(scenario)?;
    let names: Vec<&str> = world.files.iter().map(|f| f.name.as_str()).collect();
    println!(
        "world: {} ({} triangles, loaded in {:.0} ms)",
        names.join(", "),
        world.triangle_count(),
        world.load_ms
    );
    Ok(())
}

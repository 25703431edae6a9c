//! The `convoy` command line: argument parsing, logging set-up and one module per subcommand.

pub mod args;
pub mod assignments_cmd;
pub mod bench;
pub mod experiment;
pub mod graph;
pub mod grouping;
pub mod host;
pub mod launch;
pub mod launch_cmd;
pub mod launch_nodes;
pub mod map_cmd;
pub mod node_process;
pub mod png_save;
pub mod process;
pub mod qos_cmd;
pub mod record_cmd;
pub mod render;
pub mod run_cmd;
pub mod security;
pub mod stamp;
pub mod topic_cmd;
pub mod world_cmd;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use convoy_bridge::live_view::ViewSettings;
use convoy_core::dds::Node;
use convoy_core::node::NodeArgs;
use convoy_core::qos::{QosSet, QosSpec};
use convoy_core::scenario::resolve_path;

use args::{Cli, Command, NetnsCommand, QosCommand, TopicCommand};
use map_cmd::MapCommand;

/// Parses the command line, runs the command, prints an error chain on failure.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    convoy_core::node::keep_freed_memory();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: bool) {
    convoy_core::node::init_logging(if verbose { "info" } else { "warn" });
}

pub fn run(cli: Cli) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.command {
        Command::Topic(cmd) => {
            let node = tool_node(cli.domain, cli.qos.as_ref(), "tool")?;
            match cmd {
                TopicCommand::List(a) => topic_cmd::list(&node, &a),
                TopicCommand::Echo(a) => topic_cmd::echo(&node, &a, &runtime),
                TopicCommand::Hz(a) => topic_cmd::hz(&node, &a, &runtime),
            }
        }
        Command::Qos(QosCommand::Show(a)) => qos_cmd::show(&a),
        Command::Assignments(a) if a.plan.is_some() => assignments_cmd::plan(&a),
        Command::Assignments(a) => {
            let node = tool_node(cli.domain, cli.qos.as_ref(), "tool")?;
            assignments_cmd::live(&node, &a)
        }
        Command::Run(a) => run_cmd::run(cli.domain, cli.qos.as_ref(), &a),
        Command::Launch(mut a) => {
            // The global --qos is the natural spelling; it overrides the file's QoS.
            a.qos = a.qos.or(cli.qos);
            launch_cmd::launch(&a)
        }
        Command::Netns(NetnsCommand::Up { file }) => launch_cmd::netns_up(&file),
        Command::Netns(NetnsCommand::Down { file }) => launch_cmd::netns_down(&file),
        Command::World(a) => {
            let node = tool_node(cli.domain, cli.qos.as_ref(), "tool")?;
            world_cmd::run(&node, &a.command, a.timeout)
        }
        Command::Bench(cmd) => bench::run(cli.domain, cli.qos.as_ref(), &cmd),
        Command::Experiment(a) => {
            if cli.qos.is_some() {
                anyhow::bail!("--qos does not apply to `convoy experiment`: list the QoS files in the experiment's matrix.qos");
            }
            experiment::run(cli.domain, &a)
        }
        Command::Record(a) => record_cmd::record(cli.domain, cli.qos.as_ref(), &a),
        Command::Replay(a) => record_cmd::replay(cli.domain, cli.qos.as_ref(), &a),
        Command::View(a) => view(cli.domain, cli.qos, &a),
        Command::Map(MapCommand::Info(a)) => map_cmd::info(&a),
        Command::Map(MapCommand::Export(a)) => map_cmd::export(&a),
        Command::Security(security::SecurityCommand::Init(a)) => security::init(&a),
    }
}

/// `convoy view`: the live view, a node of the run like any other (bridge/NAME).
fn view(domain: u32, qos: Option<QosSpec>, args: &args::ViewArgs) -> Result<()> {
    let (host, port) = launch::parse_bind(&args.bind).map_err(|e| anyhow::anyhow!("--{e}"))?;
    let mut node = NodeArgs::new(resolve_path(&args.scenario), domain);
    node.qos = qos;
    let settings = ViewSettings {
        name: args.name.clone(),
        host,
        port,
    };
    convoy_bridge::live_view::run(&node, &settings, process::stop_flag()?)
}

/// Loads `--qos` (or the built-in defaults).
pub fn load_qos(spec: Option<&QosSpec>) -> Result<Arc<QosSet>> {
    Ok(Arc::new(match spec {
        Some(spec) => QosSet::load(spec)?,
        None => QosSet::builtin(),
    }))
}

/// The DDS node of a command-line process, `ROLE/PID`: unique, so several can run at once.
pub fn tool_node(domain: u32, qos: Option<&QosSpec>, role: &str) -> Result<Node> {
    let id = format!("{role}/{}", std::process::id());
    Ok(Node::new(domain, &id, load_qos(qos)?)?)
}

//! The `convoy` command line: argument parsing, logging set-up and one module per subcommand.

pub mod args;
pub mod bench;
pub mod process;
pub mod qos_cmd;
pub mod render;
pub mod topic_cmd;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;
use convoy_core::dds::Node;
use convoy_core::qos::{QosSet, QosSpec};

use args::{Cli, Command, QosCommand, TopicCommand};

/// Parses the command line, runs the command, prints an error chain on failure.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// rustdds is chatty at info level; convoy keeps it at error unless RUST_LOG says otherwise.
fn init_logging(verbose: bool) {
    let default = if verbose {
        "info,rustdds=error"
    } else {
        "warn,rustdds=error"
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

pub fn run(cli: Cli) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.command {
        Command::Topic(cmd) => {
            let node = tool_node(cli.domain, cli.qos.as_ref())?;
            match cmd {
                TopicCommand::List(a) => topic_cmd::list(&node, &a),
                TopicCommand::Echo(a) => topic_cmd::echo(&node, &a, &runtime),
                TopicCommand::Hz(a) => topic_cmd::hz(&node, &a, &runtime),
            }
        }
        Command::Qos(QosCommand::Show(a)) => qos_cmd::show(&a),
        Command::Bench(cmd) => bench::run(cli.domain, cli.qos.as_ref(), &cmd),
    }
}

/// Loads `--qos` (or the built-in defaults).
pub fn load_qos(spec: Option<&QosSpec>) -> Result<Arc<QosSet>> {
    Ok(Arc::new(match spec {
        Some(spec) => QosSet::load(spec)?,
        None => QosSet::builtin(),
    }))
}

/// The DDS node of a command-line tool: a unique id so several tools can run at once.
pub fn tool_node(domain: u32, qos: Option<&QosSpec>) -> Result<Node> {
    let id = format!("tool/{}", std::process::id());
    Ok(Node::new(domain, &id, load_qos(qos)?)?)
}

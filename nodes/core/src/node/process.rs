//! The process around a node: logging, the stop flag, the allocator setting for large samples,
//! and [`node_main`], the body of every node binary's `main`.

/// This machine's name, for NodeStatus.host.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// Log set-up shared by every convoy binary (logs to stderr): RUST_LOG wins; otherwise
/// `default_level` for convoy and `error` for rustdds, which is chatty at info.
pub fn init_logging(default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
        // rustdds and wgpu's driver layer log at warn about conditions convoy handles (lost
        // peers, optional Vulkan extensions a CPU renderer lacks); ros2-client warns that
        // ROS_DISTRO is unset, which does not matter to a bridge built for one distribution.
        tracing_subscriber::EnvFilter::new(format!(
            "{default_level},rustdds=error,wgpu_hal=error,ros2_client=warn,\
             ros2_client::distributions=error"
        ))
    });
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only on a terminal: node output is often piped and prefixed.
        .with_ansi(
            std::io::IsTerminal::is_terminal(&std::io::stderr())
                && std::env::var_os("NO_COLOR").is_none(),
        )
        .try_init();
}

/// A flag that SIGINT, SIGTERM or SIGHUP sets: every node's loop checks it and stops cleanly.
/// SIGHUP is how a node started over ssh learns that `convoy launch` went away (its terminal
/// hangs up).
pub fn stop_flag() -> std::io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, std::sync::Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// Tells the allocator to keep memory that large samples free. Camera images and point clouds
/// are megabytes each, made and dropped many times a second (render read-back, CDR encoding,
/// fragment reassembly, decoding). glibc serves such sizes with fresh pages from the kernel
/// and hands freed ones back, so every 4 MB image paid ~1,000 page faults and the zeroing of
/// its pages, in every process it crossed: a sixth of a two-core machine in a 1440x960 camera
/// run (perf: `clear_page_erms` under `Publisher::write`). Allocations up to 32 MiB (glibc's
/// largest threshold) now come from the heap, and up to 256 MiB freed stays there for reuse.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters; it is called before any thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

/// The body of every node binary's `main`: logging, a stop flag for SIGINT/SIGTERM, then
/// `run`; an error is printed with its causes and turns into a failing exit status.
pub fn node_main<E: std::fmt::Display>(
    run: impl FnOnce(std::sync::Arc<std::sync::atomic::AtomicBool>) -> Result<(), E>,
) -> std::process::ExitCode {
    keep_freed_memory();
    init_logging("info");
    let stop = match stop_flag() {
        Ok(flag) => flag,
        Err(e) => {
            eprintln!("error: cannot install a signal handler: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match run(stop) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

//! Ctrl-C/SIGTERM: before the first measured phase an interrupt exits at once (nothing was
//! sent or written); after it, commands stop gracefully and exit with
//! [`INTERRUPTED_EXIT_CODE`]. Every command waits for a stop signal through this module.

use anyhow::Context;
use servebench_runner::CancellationToken;

/// Exit code of a run stopped by Ctrl-C/SIGTERM (after its results were written).
pub const INTERRUPTED_EXIT_CODE: u8 = 130;

/// Whether a measured phase has started: before it (model detection, tokenizer, workload, the
/// readiness wait) nothing is in flight and nothing written, so Ctrl-C/SIGTERM exits at once.
static MEASURING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Called when the first measured phase starts (from then on Ctrl-C stops the run gracefully).
pub fn measuring_started() {
    MEASURING.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The first Ctrl-C/SIGTERM before the measured phase (e.g. during the readiness wait) ends
/// the process at once with exit 130.
pub fn exit_if_not_measuring() {
    if !MEASURING.load(std::sync::atomic::Ordering::SeqCst) {
        eprintln!("\nInterrupted before the benchmark started: nothing was sent or written");
        std::process::exit(INTERRUPTED_EXIT_CODE.into());
    }
}

/// Resolves on Ctrl-C or (Unix) SIGTERM.
pub async fn wait_for_stop_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("listening for SIGTERM")?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r.context("waiting for Ctrl-C")?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await.context("waiting for Ctrl-C")?;
    Ok(())
}

/// On the current runtime: the first Ctrl-C/SIGTERM exits at once before the measured phase,
/// else prints `message` and cancels `stop`; a second one exits at once (130).
pub fn stop_on_signal(stop: CancellationToken, message: String) {
    tokio::spawn(async move {
        if wait_for_stop_signal().await.is_ok() {
            exit_if_not_measuring();
            eprintln!("\n{message}");
            stop.cancel();
            if wait_for_stop_signal().await.is_ok() {
                std::process::exit(INTERRUPTED_EXIT_CODE.into());
            }
        }
    });
}

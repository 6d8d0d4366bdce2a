//! Ctrl-C/SIGTERM and the client runtime: before the first measured phase an interrupt exits at
//! once (nothing was sent or written); after it, commands stop gracefully and exit with
//! [`INTERRUPTED_EXIT_CODE`].

use anyhow::Context;
use servebench_runner::CLIENT_THREAD_PREFIX;

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

/// The multi-threaded runtime of the client (`sb-client*` threads).
pub fn new_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(CLIENT_THREAD_PREFIX)
        .build()
        .context("starting the async runtime")
}

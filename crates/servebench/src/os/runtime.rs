//! The async runtimes: the client's (`sb-client*` threads) and the simulator's (`sb-sim`), built
//! in one place so that their threads are named and can be told apart (client CPU time).

use anyhow::Context;
use servebench_runner::CLIENT_THREAD_PREFIX;

/// A multi-threaded runtime whose threads are named `thread_name`; `workers` threads, else
/// one per CPU.
pub fn build(thread_name: &str, workers: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut b = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = workers {
        b.worker_threads(n);
    }
    b.enable_all()
        .thread_name(thread_name)
        .build()
        .with_context(|| format!("starting the async runtime ({thread_name} threads)"))
}

/// The multi-threaded runtime of the client (`sb-client*` threads).
pub fn client() -> anyhow::Result<tokio::runtime::Runtime> {
    build(CLIENT_THREAD_PREFIX, None)
}

/// Thread name of the simulator's runtime.
pub const SIM_THREAD_NAME: &str = "sb-sim";

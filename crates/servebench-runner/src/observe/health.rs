//! Client self-measurement: how late the runtime wakes (hiccup probe), how much CPU the client
//! threads used, and peak memory. These say whether the client itself may be the bottleneck.

use std::time::{Duration, Instant};
use tokio::task::JoinHandle;

use tokio_util::sync::CancellationToken;

/// Prefix of the names of the client runtime's worker threads (used to attribute CPU time).
pub const CLIENT_THREAD_PREFIX: &str = "sb-client";

/// A running hiccup probe: a task that sleeps 1 ms in a loop and records how much later than
/// asked it woke. tokio's timer has 1 ms granularity, so up to ~1 ms is the timer itself.
#[derive(Debug)]
pub struct HiccupProbe {
    task: JoinHandle<Vec<u32>>,
}

impl HiccupProbe {
    /// Starts the probe on the current runtime; it ends when `stop` is raised.
    pub fn start(stop: CancellationToken) -> Self {
        let task = tokio::spawn(async move {
            let mut samples = Vec::with_capacity(4096);
            let period = Duration::from_millis(1);
            loop {
                let t0 = Instant::now();
                tokio::select! {
                    _ = tokio::time::sleep(period) => {}
                    _ = stop.cancelled() => break,
                }
                let late = t0.elapsed().saturating_sub(period);
                samples.push(late.as_micros().min(u128::from(u32::MAX)) as u32);
            }
            samples
        });
        HiccupProbe { task }
    }

    /// Stops waiting and returns the overshoot samples (µs). Raise the stop signal first.
    pub async fn finish(self) -> Vec<u32> {
        self.task.await.unwrap_or_default()
    }
}

/// CPU time (ns) consumed so far by this process's threads whose name starts with `prefix`
/// (all threads when `prefix` is empty). Linux only; 0 elsewhere.
pub fn thread_cpu_ns(prefix: &str) -> u64 {
    thread_sched_ns(prefix).0
}

/// `(on a CPU, runnable but waiting for one)`, ns so far, of this process's threads whose name
/// starts with `prefix` (all threads when `prefix` is empty), from `/proc/self/task/*/schedstat`.
/// The wait is the time the client wanted a CPU and other work had it. Linux only; 0 elsewhere.
pub fn thread_sched_ns(prefix: &str) -> (u64, u64) {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return (0, 0) };
    let (mut run, mut wait) = (0u64, 0u64);
    for entry in dir.flatten() {
        let p = entry.path();
        if !prefix.is_empty() {
            let name = std::fs::read_to_string(p.join("comm")).unwrap_or_default();
            if !name.starts_with(prefix) {
                continue;
            }
        }
        // schedstat: "<ns on cpu> <ns waiting> <timeslices>"
        if let Ok(s) = std::fs::read_to_string(p.join("schedstat")) {
            let mut f = s.split_whitespace().map(|v| v.parse::<u64>().unwrap_or(0));
            run += f.next().unwrap_or(0);
            wait += f.next().unwrap_or(0);
        }
    }
    (run, wait)
}

/// Peak resident set size of this process in bytes (VmHWM), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmHWM:")
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn proc_status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// How the binary's allocator is told that a workload is being built: building frees and
/// re-allocates memory all the time (tokenizing a dataset), so freed pages are best kept for
/// reuse then, while the measured phase wants them returned to the OS at once (for its RSS).
#[derive(Debug, Clone, Copy)]
pub struct FreedMemoryHooks {
    /// Called on the building thread before the workload is built: keep freed pages a while.
    pub keep: fn(),
    /// Called on the building thread after: return the pages freed while building (on this
    /// thread and on the threads that helped) and, from then on, every freed page at once.
    pub release: fn(),
}

static FREED_MEMORY_HOOKS: std::sync::OnceLock<FreedMemoryHooks> = std::sync::OnceLock::new();

/// Registers the hooks [`building_workload`] calls. Only the first registration counts.
pub fn set_freed_memory_hooks(hooks: FreedMemoryHooks) {
    let _ = FREED_MEMORY_HOOKS.set(hooks);
}

/// Runs `build` (a workload build, on the calling thread) between the registered hooks.
pub fn building_workload<T>(build: impl FnOnce() -> T) -> T {
    let hooks = FREED_MEMORY_HOOKS.get();
    if let Some(h) = hooks {
        (h.keep)();
    }
    let built = build();
    if let Some(h) = hooks {
        (h.release)();
    }
    built
}

/// Resets the peak-RSS mark to the current RSS (Linux `clear_refs` 5), so that a later
/// [`peak_rss_bytes`] covers only what happened after this call. Returns whether it worked.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

/// Current resident set size of this process in bytes (VmRSS), if known.
pub fn current_rss_bytes() -> Option<u64> {
    proc_status_bytes("VmRSS:")
}

/// Number of CPUs available to this process.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio_util::sync::CancellationToken;

    #[tokio::test]
    async fn probe_collects_samples_until_stopped() {
        let s = CancellationToken::new();
        let h = s.clone();
        let probe = HiccupProbe::start(s);
        tokio::time::sleep(Duration::from_millis(30)).await;
        h.cancel();
        let samples = probe.finish().await;
        assert!(!samples.is_empty());
    }

    #[test]
    fn cpu_and_rss_are_readable_on_linux() {
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        if cfg!(target_os = "linux") {
            assert!(thread_cpu_ns("") > 0);
            assert!(peak_rss_bytes().unwrap_or(0) > 0);
        }
        assert!(available_cpus() >= 1);
    }

    static CALLS: std::sync::Mutex<Vec<&'static str>> = std::sync::Mutex::new(Vec::new());

    #[test]
    fn building_a_workload_runs_between_the_hooks() {
        set_freed_memory_hooks(FreedMemoryHooks {
            keep: || CALLS.lock().unwrap().push("keep"),
            release: || CALLS.lock().unwrap().push("release"),
        });
        let built = building_workload(|| {
            CALLS.lock().unwrap().push("build");
            7
        });
        assert_eq!(built, 7);
        assert_eq!(*CALLS.lock().unwrap(), ["keep", "build", "release"]);
    }
}

/// The client's own health during the measured phase.
#[derive(Debug, Clone, Default)]
pub struct HealthSamples {
    /// released − intended per request, µs.
    pub dispatch_lateness_us: Vec<u64>,
    /// Overshoot of 1 ms runtime sleeps, µs.
    pub hiccup_us: Vec<u32>,
    /// CPU seconds used by the client's runtime threads during the measured phase.
    pub client_cpu_seconds: f64,
    /// Seconds the client's runtime threads were runnable but waiting for a CPU (other work
    /// had it) during the measured phase; `None` where not measured (not Linux).
    pub client_cpu_wait_seconds: Option<f64>,
    /// Wall seconds of the measured phase.
    pub wall_seconds: f64,
    /// CPUs available to the process.
    pub cpus: usize,
    /// Peak RSS of the process (includes an embedded simulator), bytes.
    pub peak_rss_bytes: Option<u64>,
    /// Whether `peak_rss_bytes` covers only the measured phase (the mark was reset at its
    /// start); otherwise it covers the whole process life (tokenizer loading included).
    pub peak_rss_covers_run_only: bool,
    /// RSS when the measured phase started, bytes.
    pub rss_at_start_bytes: Option<u64>,
    /// Connections opened / found stale during the whole run.
    pub connections_opened: u64,
    pub stale_connections: u64,
    /// Measured requests sent a second time because a reused connection closed before one
    /// byte of their response arrived (`RequestRecord::resent`).
    pub resent_requests: u64,
    /// The client stopped pooling: the server closes connections after each response.
    pub pooling_disabled: bool,
    /// Receive-time source and read lag over the measured phase (`None`: not measured).
    pub receive_timestamps: Option<servebench_client::transport::kstamp::ReceiveTimestamps>,
    /// The scheduler time slice the client's threads ran with (`None`: not known).
    pub time_slice: Option<crate::config::TimeSlice>,
}

//! `--probe-request-rate`: single-token probe requests sent alongside the measured load, as
//! vLLM 0.33 sends them. One probe at a time: the prompt "Hi" (1 token) asking for 1 output
//! token, with the run's backend, model, sampling and extra body, outside the concurrency gate;
//! after each ends the loop waits 1/rate s before the next (so the probe rate is at most the
//! flag's value). Probes start with the measured phase and stop when its last request has
//! ended (a probe in flight then still finishes). Their records stay apart from the run's: they
//! are in no metric of the run, only in the probe summary (docs/metrics.md, "Probe requests").

use servebench_client::request::{execute_until, ExecOptions, RequestTarget};
use servebench_client::transport::HttpClient;
use servebench_core::{Prompt, RequestRecord, RequestSpec, RunClock};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The prompt of every probe (vLLM's).
pub const PROBE_PROMPT: &str = "Hi";

/// A running probe loop.
#[derive(Debug)]
pub struct ProbeLoop {
    stop: CancellationToken,
    task: JoinHandle<Vec<RequestRecord>>,
}

/// What a probe loop needs to send requests.
#[derive(Debug, Clone)]
pub struct ProbeTarget {
    pub client: HttpClient,
    pub target: Arc<RequestTarget>,
    pub opts: Arc<ExecOptions>,
    /// Probe request ids are `<prefix>probe-<n>`.
    pub id_prefix: String,
}

impl ProbeLoop {
    /// Starts probing at `rate` requests per second (> 0) on `clock`. `cancel` (Ctrl-C with
    /// `--on-interrupt cancel`) cancels a probe in flight.
    pub fn start(rate: f64, t: ProbeTarget, clock: RunClock, cancel: CancellationToken) -> ProbeLoop {
        let stopped = CancellationToken::new();
        let stop = stopped.clone();
        let interval = Duration::from_secs_f64(1.0 / rate);
        let task = tokio::spawn(probe_loop(t, clock, interval, stopped, cancel));
        ProbeLoop { stop, task }
    }

    /// Stops the loop once the probe in flight (if any) has ended; the probes' records in send
    /// order.
    pub async fn finish(self) -> Vec<RequestRecord> {
        self.stop.cancel();
        self.task.await.unwrap_or_default()
    }
}

async fn probe_loop(
    t: ProbeTarget,
    clock: RunClock,
    interval: Duration,
    stopped: CancellationToken,
    cancel: CancellationToken,
) -> Vec<RequestRecord> {
    let spec = RequestSpec::new(0, Prompt::Text(Arc::from(PROBE_PROMPT)), 1, 1);
    let mut out = Vec::new();
    while !stopped.is_cancelled() {
        let n = out.len() as u64;
        let record = RequestRecord::scheduled(n, format!("{}probe-{n}", t.id_prefix), clock.now_us(), 1, 1);
        let cancel = cancel.clone();
        let done = execute_until(&t.client, &t.target, &spec, record, &clock, &t.opts, async move {
            cancel.cancelled().await
        })
        .await;
        out.push(done);
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stopped.cancelled() => break,
        }
    }
    out
}

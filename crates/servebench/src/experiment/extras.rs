//! What every run (single or experiment point) adds to its result beyond vLLM's keys: the
//! steady-state window (`steady_state`, vllm-bench's key), the server-side series
//! (`server_metrics`) and what the profiler did (`profile`).

use crate::cli_experiment::ExperimentArgs;
use crate::config::OutputConfig;
use serde_json::{json, Map, Value};
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::metrics::{steady_state, LoadMode, NoSteadyState, SteadyState, SteadyStateConfig};
use servebench_core::RequestRecord;
use servebench_report::info::python_float;
use servebench_runner::observe::profiling::{profile_until, ProfileOptions, ProfileOutcome};
use servebench_runner::observe::scrape::{scrape_until, ServerMetrics};
use servebench_runner::{CancellationToken, RunObserver};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// The steady state of a run: its window, or why it has none.
pub type Steady = Result<SteadyState, NoSteadyState>;

/// The steady-state window of a run, when one applies (see `servebench_core::metrics::steady_state`):
/// closed loop with `--max-concurrency` and an infinite rate, open loop with a finite rate;
/// `None` for an infinite rate without a concurrency cap (one burst) or with `--no-steady-state`.
pub fn steady_state_of(
    records: &[RequestRecord],
    a: &ExperimentArgs,
    output: &OutputConfig,
    request_rate: f64,
    max_concurrency: Option<usize>,
) -> Option<Steady> {
    if a.no_steady_state {
        return None;
    }
    let mode = match (max_concurrency, request_rate.is_finite()) {
        (_, true) => LoadMode::OpenLoop,
        (Some(c), false) => LoadMode::ClosedLoop { target_concurrency: c as u64 },
        (None, false) => return None,
    };
    Some(steady_state(
        records,
        &SteadyStateConfig {
            mode,
            threshold: a.steady_state_threshold,
            min_window_s: a.steady_state_min_window,
            percentiles: output.metric_percentiles.clone(),
            selected: output.percentile_metrics.clone(),
        },
    ))
}

/// A statistic that has data, else `null` (docs/metrics.md, "Metrics without data").
fn stat(count: usize, v: f64) -> Value {
    if count > 0 {
        json!(v)
    } else {
        Value::Null
    }
}

fn pct_key(p: f64) -> String {
    servebench_report::fmt::percentile_word(p)
}

/// The `steady_state` JSON object (vllm-bench's shape; every selected metric and percentile).
pub fn steady_state_json(s: &SteadyState) -> Value {
    let (mode, target) = match s.mode {
        LoadMode::ClosedLoop { target_concurrency } => ("closed_loop", Some(target_concurrency)),
        LoadMode::OpenLoop => ("open_loop", None),
    };
    let mut o = Map::new();
    o.insert(
        "window".into(),
        json!({
            "mode": mode,
            "start_s": s.start_s,
            "end_s": s.end_s,
            "duration_s": s.duration_s,
            "target_concurrency": target,
            "threshold": s.threshold,
            "threshold_abs": s.threshold_abs,
            "reference": s.reference,
            "observed_peak": s.observed_peak,
            "requests_started_in_window": s.requests_started_in_window,
            "requests_completed_in_window": s.requests_completed_in_window,
            "requests_total": s.requests_total,
            "arrival_rate": s.arrival_rate,
            "completion_rate": s.completion_rate,
            "in_flight_mean": s.in_flight_mean,
            "warning": s.warning,
        }),
    );
    o.insert("request_throughput".into(), json!(s.request_throughput));
    o.insert("input_throughput".into(), json!(s.input_throughput));
    o.insert("output_throughput".into(), json!(s.output_throughput));
    o.insert("total_token_throughput".into(), json!(s.total_token_throughput));
    for (m, sum) in &s.metrics {
        let n = m.as_str();
        let c = sum.count;
        o.insert(format!("mean_{n}_ms"), stat(c, sum.mean));
        o.insert(format!("median_{n}_ms"), stat(c, sum.median));
        for &(p, v) in &sum.percentiles {
            o.insert(format!("p{}_{n}_ms", pct_key(p)), stat(c, v));
        }
        o.insert(
            format!("percentiles_{n}_ms"),
            Value::Array(sum.percentiles.iter().map(|&(p, v)| json!([p, stat(c, v)])).collect()),
        );
    }
    Value::Object(o)
}

/// The console block of the steady state: the window and its metrics, or why there is none.
pub fn steady_state_block(steady: &Steady) -> String {
    let mut out = format!("{:=^50}\n", " Steady-State Metrics ");
    let row = |out: &mut String, k: &str, v: String| out.push_str(&format!("{k:<40}{v:<10}\n"));
    let s = match steady {
        Ok(s) => s,
        Err(e) => {
            row(&mut out, "Window:", "n/a".into());
            out.push_str(&format!("note: no steady state: {}\n", e.reason));
            out.push_str(&"=".repeat(50));
            return out;
        }
    };
    let threshold = match s.mode {
        LoadMode::ClosedLoop { .. } => {
            format!("in flight ≥ {:.2} ({} × {:.2})", s.threshold_abs, s.threshold, s.reference)
        }
        LoadMode::OpenLoop => format!(
            "completions ≥ {:.2}/s ({} × {:.2} arrivals/s)",
            s.threshold_abs, s.threshold, s.reference
        ),
    };
    row(&mut out, "Threshold:", threshold);
    row(&mut out, "Window (s):", format!("{:.2} → {:.2} ({:.2})", s.start_s, s.end_s, s.duration_s));
    row(
        &mut out,
        "Arrivals / completions (req/s):",
        format!("{:.2} / {:.2}", s.arrival_rate, s.completion_rate),
    );
    row(&mut out, "Mean in flight:", format!("{:.2}", s.in_flight_mean));
    row(&mut out, "Observed peak concurrency:", s.observed_peak.to_string());
    row(
        &mut out,
        "Requests started in window:",
        format!("{} / {}", s.requests_started_in_window, s.requests_total),
    );
    row(&mut out, "Requests completed in window:", s.requests_completed_in_window.to_string());
    row(&mut out, "Request throughput (req/s):", format!("{:.2}", s.request_throughput));
    row(&mut out, "Output token throughput (tok/s):", format!("{:.2}", s.output_throughput));
    row(&mut out, "Total token throughput (tok/s):", format!("{:.2}", s.total_token_throughput));
    let ms = |count: usize, v: f64| if count > 0 { format!("{v:.2}") } else { "n/a".into() };
    for (m, sum) in &s.metrics {
        let n = m.as_str().to_uppercase();
        row(&mut out, &format!("Mean {n} (ms):"), ms(sum.count, sum.mean));
        row(&mut out, &format!("Median {n} (ms):"), ms(sum.count, sum.median));
        for &(p, v) in &sum.percentiles {
            row(&mut out, &format!("P{} {n} (ms):", pct_key(p)), ms(sum.count, v));
        }
    }
    if let Some(w) = &s.warning {
        out.push_str(&format!("warning: {w}\n"));
    }
    out.push_str(&"=".repeat(50));
    out
}

/// The console block of the server-side view.
pub fn server_metrics_block(m: &ServerMetrics) -> String {
    let d = &m.derived;
    let mut out = format!("{:=^50}\n", " Server Metrics (/metrics) ");
    let row = |out: &mut String, k: &str, v: Option<f64>, digits: usize| {
        let v = v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"));
        out.push_str(&format!("{k:<40}{v:<10}\n"));
    };
    row(&mut out, "Samples:", Some(m.samples.len() as f64), 0);
    row(&mut out, "Mean running requests:", d.mean_running, 2);
    row(&mut out, "Mean queue depth (waiting):", d.mean_queue_depth, 2);
    row(&mut out, "Max queue depth:", d.max_queue_depth, 0);
    row(&mut out, "Mean KV cache usage (%):", d.mean_kv_cache_usage.map(|v| v * 100.0), 2);
    row(&mut out, "Prefix cache hit rate (%):", d.prefix_cache_hit_rate.map(|v| v * 100.0), 2);
    row(&mut out, "Spec decode acceptance rate (%):", d.spec_decode_acceptance_rate, 2);
    row(&mut out, "Spec decode acceptance length:", d.spec_decode_acceptance_length, 2);
    if m.failed_scrapes > 0 {
        out.push_str(&format!(
            "warning: {} /metrics polls failed (last: {})\n",
            m.failed_scrapes,
            m.last_error.as_deref().unwrap_or("?")
        ));
    }
    out.push_str(&"=".repeat(50));
    out
}

/// Prints the steady-state, server-metrics and profiler lines of a run.
pub fn print_blocks(steady: Option<&Steady>, side: &ServerSideOutput) {
    if let Some(s) = steady {
        println!("{}", steady_state_block(s));
    }
    if let Some(s) = &side.server {
        println!("{}", server_metrics_block(s));
    }
    for w in side.profile.iter().flat_map(|p| &p.warnings) {
        println!("warning: {w}");
    }
}

/// Adds `steady_state` (always: null when there is none, as vllm-bench; then
/// `steady_state_reason` says why when a window was looked for), and `server_metrics` /
/// `profile` when they ran, to a result document.
pub fn add_to_result(
    json: &mut Value,
    steady: Option<&Steady>,
    server: Option<&ServerMetrics>,
    profile: Option<&ProfileOutcome>,
) {
    let Some(o) = json.as_object_mut() else { return };
    o.insert(
        "steady_state".into(),
        steady.and_then(|s| s.as_ref().ok()).map_or(Value::Null, steady_state_json),
    );
    if let Some(Err(e)) = steady {
        o.insert("steady_state_reason".into(), json!(e.reason));
    }
    if let Some(s) = server {
        o.insert("server_metrics".into(), serde_json::to_value(s).unwrap_or(Value::Null));
        let d = &s.derived;
        // vllm-bench's top-level spec-decode keys, from the same counters.
        if d.spec_decode_draft_tokens.is_some_and(|t| t > 0.0) {
            o.insert("spec_decode_acceptance_rate".into(), json!(d.spec_decode_acceptance_rate));
            o.insert("spec_decode_acceptance_length".into(), json!(d.spec_decode_acceptance_length));
            o.insert("spec_decode_num_drafts".into(), json!(d.spec_decode_num_drafts));
            o.insert("spec_decode_draft_tokens".into(), json!(d.spec_decode_draft_tokens));
            o.insert("spec_decode_accepted_tokens".into(), json!(d.spec_decode_accepted_tokens));
        }
    }
    if let Some(p) = profile {
        o.insert("profile".into(), serde_json::to_value(p).unwrap_or(Value::Null));
    }
}

/// Background scraping and profiling around one measured phase. Armed before the run; the
/// observer it wraps starts them when the measured phase starts and stops them when it ends.
#[derive(Debug)]
pub struct ServerSide {
    /// Raised (`true`) when the measured phase starts: a start latch, not a stop signal.
    start: Arc<watch::Sender<bool>>,
    end: CancellationToken,
    started: Arc<std::sync::atomic::AtomicBool>,
    scrape: Option<JoinHandle<ServerMetrics>>,
    profile: Option<JoinHandle<ProfileOutcome>>,
}

/// What [`ServerSide::finish`] returns.
#[derive(Debug, Default)]
pub struct ServerSideOutput {
    pub server: Option<ServerMetrics>,
    pub profile: Option<ProfileOutcome>,
}

impl ServerSide {
    /// A control-plane client for `base_url` (its own pool, so polls never wait behind the load).
    pub fn client(run: &servebench_runner::RunConfig) -> servebench_core::Result<HttpClient> {
        HttpClient::new(ClientOptions {
            base_url: run.base_url.clone(),
            insecure: run.insecure,
            tls: run.tls.clone(),
            proxy: run.proxy.clone(),
            max_idle: 4,
            control_timeout: Duration::from_secs(10),
            ..ClientOptions::default()
        })
    }

    /// [`ServerSide::arm`] for a single run: its own control client, the run's headers and key.
    pub fn for_run(
        run: &servebench_runner::RunConfig,
        a: &ExperimentArgs,
    ) -> servebench_core::Result<ServerSide> {
        let client = Self::client(run)?;
        let headers = servebench_client::build_headers(&run.target)?;
        Ok(Self::arm(&client, &headers, a))
    }

    /// Spawns the tasks (on the current runtime), idle until the measured phase starts.
    pub fn arm(client: &HttpClient, headers: &http::HeaderMap, a: &ExperimentArgs) -> ServerSide {
        let (start, start_signal) = watch::channel(false);
        let end = CancellationToken::new();
        let end_signal = end.clone();
        let scrape = a.scrape_metrics.then(|| {
            let (client, headers, start_signal, end_signal) =
                (client.clone(), headers.clone(), start_signal.clone(), end_signal.clone());
            let interval = Duration::from_secs_f64(a.scrape_interval);
            tokio::spawn(async move {
                measured_phase_started(start_signal).await;
                scrape_until(client, headers, interval, end_signal).await
            })
        });
        let profile = a.profile.then(|| {
            let (client, headers, start_signal) = (client.clone(), headers.clone(), start_signal);
            let opts = ProfileOptions {
                batch_threshold: a.profile_batch_threshold,
                duration: Duration::from_secs_f64(a.profile_duration),
            };
            tokio::spawn(async move {
                measured_phase_started(start_signal).await;
                profile_until(client, headers, opts, end_signal).await
            })
        });
        ServerSide { start: Arc::new(start), end, started: Arc::default(), scrape, profile }
    }

    /// Wraps `inner` so that the measured phase's start and end drive the tasks.
    pub fn observer(&self, inner: Arc<dyn RunObserver>) -> Arc<dyn RunObserver> {
        Arc::new(PhaseObserver {
            inner,
            start: self.start.clone(),
            end: self.end.clone(),
            started: self.started.clone(),
        })
    }

    /// Stops the tasks and collects what they produced (nothing if the phase never started).
    pub async fn finish(self) -> ServerSideOutput {
        self.end.cancel();
        if !self.started.load(std::sync::atomic::Ordering::SeqCst) {
            for h in [self.scrape.map(|h| h.abort_handle()), self.profile.map(|h| h.abort_handle())]
                .into_iter()
                .flatten()
            {
                h.abort();
            }
            return ServerSideOutput::default();
        }
        ServerSideOutput {
            server: match self.scrape {
                Some(h) => h.await.ok(),
                None => None,
            },
            profile: match self.profile {
                Some(h) => h.await.ok(),
                None => None,
            },
        }
    }
}

/// Waits until the measured phase starts; never returns if it never does (the task is then
/// dropped with its `ServerSide`).
async fn measured_phase_started(mut started: watch::Receiver<bool>) {
    if started.wait_for(|&s| s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

struct PhaseObserver {
    inner: Arc<dyn RunObserver>,
    start: Arc<watch::Sender<bool>>,
    end: CancellationToken,
    started: Arc<std::sync::atomic::AtomicBool>,
}

impl RunObserver for PhaseObserver {
    fn message(&self, text: &str) {
        self.inner.message(text);
    }
    fn started(&self, total: u64) {
        self.started.store(true, std::sync::atomic::Ordering::SeqCst);
        let _ = self.start.send(true);
        self.inner.started(total);
    }
    fn request_done(&self, record: &RequestRecord) {
        self.inner.request_done(record);
    }
    fn finished(&self) {
        self.end.cancel();
        self.inner.finished();
    }
    fn live_metrics(&self, live: Arc<servebench_runner::LiveMetrics>) {
        self.inner.live_metrics(live);
    }
    fn metrics_listening(&self, addr: std::net::SocketAddr) {
        self.inner.metrics_listening(addr);
    }
}

/// Rate as vLLM prints it in labels (`inf` or a number).
pub fn rate_word(r: f64) -> String {
    if r.is_finite() {
        python_float(r)
    } else {
        "inf".into()
    }
}

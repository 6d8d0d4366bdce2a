//! One benchmark run, end to end: prepare, check readiness, warm up, dispatch on the schedule,
//! collect records (appended to the records file as each request ends), measure client health.

use crate::config::{DatasetSpec, InterruptMode, RunConfig};
use crate::dispatch::{dispatch, stop_signal, DispatchPlan, Release, StopSignal};
use crate::health::{self, HiccupProbe, CLIENT_THREAD_PREFIX};
use crate::prepare::{self, ModelIds, ServerTokenize, Verification};
use crate::server_workload;
use crate::sink::RecordSink;
use servebench_client::request::{execute, execute_until, ExecOptions, RequestTarget};
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::schedule::ArrivalSchedule;
use servebench_core::{
    BenchError, ErrorKind, Outcome, RequestRecord, Result, RunClock, TextTokenizer, Workload,
};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// `--tokenizer server`: use the server's `/tokenize` and `/detokenize`.
pub const SERVER_TOKENIZER: &str = "server";

/// Something that wants to hear about the run's progress (console, progress bar).
pub trait RunObserver: Send + Sync {
    /// A one-line status message (model detected, workload built, warnings...).
    fn message(&self, text: &str);
    /// The measured phase starts with `total` requests.
    fn started(&self, _total: u64) {}
    /// One request ended.
    fn request_done(&self, _record: &RequestRecord) {}
    /// The measured phase ended.
    fn finished(&self) {}
}

/// Statistics of the workload (also the output of `--dry-run`).
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadStats {
    pub requests: usize,
    pub total_prompt_tokens: u64,
    pub total_expected_output_tokens: u64,
    pub min_prompt_tokens: u32,
    pub max_prompt_tokens: u32,
    pub filtered_out: usize,
    pub build_seconds: f64,
}

impl WorkloadStats {
    fn of(w: &Workload, filtered_out: usize, build_seconds: f64) -> Self {
        WorkloadStats {
            requests: w.len(),
            total_prompt_tokens: w.total_prompt_tokens(),
            total_expected_output_tokens: w.total_expected_output_tokens(),
            min_prompt_tokens: w.requests.iter().map(|r| r.prompt_tokens).min().unwrap_or(0),
            max_prompt_tokens: w.requests.iter().map(|r| r.prompt_tokens).max().unwrap_or(0),
            filtered_out,
            build_seconds,
        }
    }
}

/// The client's own health during the measured phase.
#[derive(Debug, Clone, Default)]
pub struct ClientHealth {
    /// released − intended per request, µs.
    pub dispatch_lateness_us: Vec<u64>,
    /// Overshoot of 1 ms runtime sleeps, µs.
    pub hiccup_us: Vec<u32>,
    /// CPU seconds used by the client's runtime threads during the measured phase.
    pub client_cpu_seconds: f64,
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
}

/// Everything a finished run produced.
#[derive(Debug)]
pub struct RunOutput {
    /// One record per request of the workload, in workload order.
    pub records: Vec<RequestRecord>,
    pub model: ModelIds,
    pub tokenizer_id: String,
    pub clock: RunClock,
    pub health: ClientHealth,
    pub workload: WorkloadStats,
    pub verification: Verification,
    pub warnings: Vec<String>,
    /// The run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
}

/// What `run_benchmark` returns.
#[derive(Debug)]
pub enum RunResult {
    DryRun { model: ModelIds, tokenizer_id: String, workload: WorkloadStats },
    Completed(Box<RunOutput>),
}

fn client_headers(cfg: &RunConfig) -> Result<http::HeaderMap> {
    servebench_client::backend::build_headers(&cfg.target)
}

/// Runs one benchmark. `stop` ends the measured phase early (Ctrl-C): requests not yet sent
/// become cancelled records.
pub async fn run_benchmark(
    cfg: RunConfig,
    observer: Arc<dyn RunObserver>,
    stop: StopSignal,
) -> Result<RunResult> {
    let client = HttpClient::new(ClientOptions {
        base_url: cfg.base_url.clone(),
        insecure: cfg.insecure,
        max_idle: cfg.max_concurrency.unwrap_or(2048).max(256),
        ..ClientOptions::default()
    })?;
    let headers = client_headers(&cfg)?;
    let model =
        prepare::resolve_model(&client, &headers, cfg.model.as_deref(), cfg.served_model_name.as_deref())
            .await?;
    if cfg.model.is_none() {
        observer.message(&format!("Model detected from /v1/models: {}", model.model_id));
    }
    let tokenizer_id = cfg.tokenizer.clone().unwrap_or_else(|| model.tokenizer_hint.clone());
    let server =
        ServerTokenize { client: client.clone(), headers: headers.clone(), model: model.served_name.clone() };
    // `--tokenizer server`: no local tokenizer; the server's /tokenize builds exact prompts.
    let tokenizer = if tokenizer_id == SERVER_TOKENIZER {
        observer.message("Using the server's /tokenize and /detokenize as the tokenizer");
        None
    } else {
        observer.message(&format!("Loading tokenizer {tokenizer_id}"));
        Some(prepare::load_tokenizer(tokenizer_id.clone()).await?)
    };

    let started = Instant::now();
    let mut workload = match &tokenizer {
        Some(t) => build_workload(&cfg, t.clone()).await?,
        None => match &cfg.dataset {
            DatasetSpec::Random(r) => server_workload::build_server_workload(&server, r).await?,
        },
    };
    let filtered_out = prepare::filter_max_model_len(&mut workload, cfg.max_model_len);
    if workload.is_empty() {
        return Err(BenchError::Dataset {
            detail: format!(
                "no request left after --max-model-len {} filtering; fix: raise --max-model-len or shorten prompts",
                cfg.max_model_len.unwrap_or(0)
            ),
        });
    }
    let stats = WorkloadStats::of(&workload, filtered_out, started.elapsed().as_secs_f64());
    observer.message(&format!(
        "Generated {} prompts ({} prompt tokens) in {:.2} s",
        stats.requests, stats.total_prompt_tokens, stats.build_seconds
    ));
    if cfg.dry_run {
        return Ok(RunResult::DryRun { model, tokenizer_id, workload: stats });
    }

    let mut target_cfg = cfg.target.clone();
    target_cfg.model = model.served_name.clone();
    let target = Arc::new(RequestTarget::new(&client, &target_cfg)?);
    let exec_opts = Arc::new(ExecOptions {
        keep_text: cfg.keep_text,
        request_timeout: cfg.request_timeout,
        stall_timeout: cfg.stall_timeout,
        ..ExecOptions::default()
    });
    let mut warnings = Vec::new();

    if !cfg.ready_check_timeout.is_zero() {
        observer.message("Waiting for the endpoint to answer a test request...");
        ready_check(&client, &target, &exec_opts, &workload, cfg.ready_check_timeout).await?;
    }

    let verification = match &tokenizer {
        Some(t) => {
            let cache = prepare::verification_cache_path(&cfg.base_url, &model.served_name, t.name());
            prepare::verify_prompt_lengths(&server, &mut workload, cfg.verify_prompts, cache).await?
        }
        // Built on the server's own tokenizer: every prompt was already checked there.
        None => Verification::Skipped,
    };
    match &verification {
        Verification::Unavailable { detail } => {
            let w = BenchError::TokenizeUnavailable { detail: detail.clone() };
            let line = format!("warning[{}]: {w}", w.code());
            observer.message(&line);
            warnings.push(line);
        }
        Verification::Fixed { fixed, unresolved, .. } => {
            let line = format!(
                "Prompt lengths differed from the server's /tokenize: rewrote {fixed} prompts{}",
                if *unresolved > 0 {
                    format!(", {unresolved} could not be made exact")
                } else {
                    String::new()
                }
            );
            observer.message(&line);
            warnings.push(line);
        }
        Verification::Verified { checked } => observer
            .message(&format!("Prompt lengths verified with the server's /tokenize ({checked} prompts)")),
        Verification::Cached | Verification::Skipped => {}
    }

    if cfg.num_warmups > 0 {
        observer.message(&format!("Warming up with {} requests...", cfg.num_warmups));
        warm_up(&client, &target, &exec_opts, &workload, cfg.num_warmups, cfg.max_concurrency).await;
    }
    if cfg.preconnect > 0 {
        let n = client.preconnect(cfg.preconnect).await?;
        observer.message(&format!("Opened {n} connections before the run"));
    }

    // The tokenizer (and what building the workload allocated) is not needed while measuring:
    // free it, and measure peak memory of the measured phase only.
    drop(tokenizer);
    let peak_reset = health::reset_peak_rss();
    let rss_at_start = health::current_rss_bytes();
    let schedule = ArrivalSchedule::generate(workload.len(), &cfg.rate, cfg.seed);
    let plan = DispatchPlan { offsets_us: schedule.offsets_us.into(), max_concurrency: cfg.max_concurrency };
    let workload = Arc::new(workload);
    let mut sink = match &cfg.records_path {
        Some(p) => Some(RecordSink::create(p)?),
        None => None,
    };

    let (probe_stop, probe_signal) = stop_signal();
    let probe = HiccupProbe::start(probe_signal);
    let cpu0 = health::thread_cpu_ns(CLIENT_THREAD_PREFIX);
    let clock = RunClock::start();
    observer.started(workload.len() as u64);

    let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
    let collector = {
        let observer = observer.clone();
        let n = workload.len();
        tokio::spawn(async move {
            let mut records: Vec<RequestRecord> = Vec::with_capacity(n);
            let mut sink_error = None;
            while let Some(r) = rx.recv().await {
                if let Some(s) = sink.as_mut() {
                    if let Err(e) = s.append(&r) {
                        sink_error.get_or_insert(e);
                    }
                }
                observer.request_done(&r);
                records.push(r);
            }
            (records, sink_error)
        })
    };
    let record_for = {
        let workload = workload.clone();
        let prefix = cfg.request_id_prefix.clone();
        move |r: &Release| {
            let spec = &workload.requests[r.index];
            RequestRecord::scheduled(
                spec.index,
                format!("{prefix}{}", spec.index),
                r.intended_us,
                spec.prompt_tokens,
                spec.expected_output_tokens,
            )
        }
    };
    let exec = {
        let (client, target, opts, workload, record_for) =
            (client.clone(), target.clone(), exec_opts.clone(), workload.clone(), record_for.clone());
        let cancel_in_flight = cfg.on_interrupt == InterruptMode::Cancel;
        let retries = cfg.retries;
        let stop = stop.clone();
        move |r: Release| {
            let (client, target, opts, workload) =
                (client.clone(), target.clone(), opts.clone(), workload.clone());
            let record = record_for(&r);
            let stop = stop.clone();
            async move {
                let spec = &workload.requests[r.index];
                let mut attempt = record;
                loop {
                    let fresh = attempt.clone();
                    let done = if cancel_in_flight {
                        // Interrupted: the request ends as `cancelled`, with the timings it had.
                        let stop = stop.clone();
                        execute_until(&client, &target, spec, fresh, &clock, &opts, async move {
                            let mut stop = stop;
                            stop.stopped().await
                        })
                        .await
                    } else {
                        execute(&client, &target, spec, fresh, &clock, &opts).await
                    };
                    // `--retries`: only a connection that could not be made (nothing of the
                    // request was sent) is tried again; the record counts every attempt.
                    let retry = done.error.as_ref().is_some_and(|e| e.kind == ErrorKind::Connect)
                        && done.attempts <= retries
                        && !stop.is_stopped();
                    if !retry {
                        return done;
                    }
                    attempt.attempts = done.attempts;
                    tokio::time::sleep(Duration::from_millis(100 * u64::from(done.attempts))).await;
                }
            }
        }
    };
    let interrupted = stop.clone();
    let cancelled = move |r: Release| record_for(&r);
    let dispatch_stats = dispatch(&plan, clock, exec, cancelled, tx, stop).await;
    let was_interrupted = interrupted.is_stopped();
    let wall = clock.now_us() as f64 / 1e6;
    let cpu1 = health::thread_cpu_ns(CLIENT_THREAD_PREFIX);
    probe_stop.stop();
    let hiccup_us = probe.finish().await;
    observer.finished();
    let (mut records, sink_error) =
        collector.await.map_err(|e| BenchError::Io { path: "records".into(), detail: e.to_string() })?;
    if let Some(e) = sink_error {
        return Err(e);
    }
    records.sort_by_key(|r| r.index);
    let pool = client.stats();
    let health = ClientHealth {
        dispatch_lateness_us: dispatch_stats.lateness_us,
        hiccup_us,
        client_cpu_seconds: cpu1.saturating_sub(cpu0) as f64 / 1e9,
        wall_seconds: wall,
        cpus: health::available_cpus(),
        peak_rss_bytes: health::peak_rss_bytes(),
        peak_rss_covers_run_only: peak_reset,
        rss_at_start_bytes: rss_at_start,
        connections_opened: pool.opened,
        stale_connections: pool.stale,
    };
    let cancelled_count = records.iter().filter(|r| r.outcome == Outcome::Cancelled).count();
    if cancelled_count > 0 {
        warnings.push(format!("{cancelled_count} requests were cancelled before they finished"));
    }
    Ok(RunResult::Completed(Box::new(RunOutput {
        records,
        model,
        tokenizer_id,
        clock,
        health,
        workload: stats,
        verification,
        warnings,
        interrupted: was_interrupted,
    })))
}

async fn build_workload(cfg: &RunConfig, tokenizer: Arc<dyn TextTokenizer>) -> Result<Workload> {
    match &cfg.dataset {
        DatasetSpec::Random(r) => {
            let r = r.clone();
            tokio::task::spawn_blocking(move || {
                servebench_data::random::generate_random(&r, tokenizer.as_ref())
            })
            .await
            .map_err(|e| BenchError::Dataset { detail: format!("workload generation failed: {e}") })?
        }
    }
}

/// Sends the first request until it completes or the timeout passes.
async fn ready_check(
    client: &HttpClient,
    target: &RequestTarget,
    opts: &ExecOptions,
    workload: &Workload,
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let spec = &workload.requests[0];
    let clock = RunClock::start();
    let mut last_error = String::from("no answer");
    let mut pause = Duration::from_millis(200);
    loop {
        let record = RequestRecord::scheduled(0, "servebench-ready-check".into(), 0, spec.prompt_tokens, 1);
        let attempt =
            tokio::time::timeout_at(deadline.into(), execute(client, target, spec, record, &clock, opts))
                .await;
        match attempt {
            Ok(r) if r.outcome == Outcome::Completed => return Ok(()),
            Ok(r) => {
                let permanent =
                    r.http_status.is_some_and(|s| (400..500).contains(&s) && s != 408 && s != 429);
                last_error = r.error.map(|e| e.message).unwrap_or_else(|| "request did not complete".into());
                if permanent {
                    // A 4xx (wrong model name, missing key) will not fix itself by waiting.
                    let secs = timeout.as_secs().min(clock.now_us() / 1_000_000);
                    return Err(BenchError::EndpointNotReady { secs, last_error });
                }
            }
            Err(_) => {}
        }
        if Instant::now() + pause >= deadline {
            return Err(BenchError::EndpointNotReady { secs: timeout.as_secs(), last_error });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// Sends `n` copies of the first request through the concurrency gate; results are discarded.
async fn warm_up(
    client: &HttpClient,
    target: &Arc<RequestTarget>,
    opts: &Arc<ExecOptions>,
    workload: &Workload,
    n: u64,
    max_concurrency: Option<usize>,
) {
    use futures::stream::{self, StreamExt};
    let spec = Arc::new(workload.requests[0].clone());
    let clock = RunClock::start();
    let limit = max_concurrency.unwrap_or(n as usize).max(1);
    stream::iter(0..n)
        .map(|i| {
            let (client, target, opts, spec) = (client.clone(), target.clone(), opts.clone(), spec.clone());
            async move {
                let rec =
                    RequestRecord::scheduled(i, format!("servebench-warmup-{i}"), 0, spec.prompt_tokens, 1);
                execute(&client, &target, &spec, rec, &clock, &opts).await
            }
        })
        .buffer_unordered(limit)
        .for_each(|_| async {})
        .await;
}

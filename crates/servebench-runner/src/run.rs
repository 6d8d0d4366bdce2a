//! One benchmark run, end to end: prepare, check readiness, warm up, dispatch on the schedule,
//! collect records (appended to the records file as each request ends), measure client health.

use crate::collector::RecordStore;
use crate::config::{DatasetSpec, InterruptMode, RunConfig};
use crate::dispatch::{dispatch, dispatch_closed_loop, stop_signal, DispatchPlan, Release, StopSignal};
use crate::health::{self, HiccupProbe, CLIENT_THREAD_PREFIX};
use crate::live::LiveMetrics;
use crate::metrics_server::MetricsServer;
use crate::prepare::{self, ModelIds, ServerTokenize};
use crate::prompt_check::PromptCheck;
use crate::retokenize::{Applied, Retokenizer};
use crate::server_workload;
use crate::shard;
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
    /// The live metrics of the measured phase (called just before `started`), for progress
    /// displays that poll them.
    fn live_metrics(&self, _live: Arc<LiveMetrics>) {}
    /// `--metrics-port`: the live metrics endpoint listens on `addr`.
    fn metrics_listening(&self, _addr: std::net::SocketAddr) {}
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
    /// Prompt and expected-output length distributions (printed by `--dry-run`).
    pub lengths: servebench_data::dataset::DatasetStats,
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
            lengths: servebench_data::dataset::DatasetStats::of(w),
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
    /// Measured requests sent a second time because a reused connection closed before one
    /// byte of their response arrived (`RequestRecord::resent`).
    pub resent_requests: u64,
    /// The client stopped pooling: the server closes connections after each response.
    pub pooling_disabled: bool,
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
    /// The prompt-length check and the server's `/tokenize` dialect.
    pub verification: PromptCheck,
    pub warnings: Vec<String>,
    /// The run was stopped early (Ctrl-C / SIGTERM).
    pub interrupted: bool,
    /// `--probe-request-rate`: the probes' records in send order (in no metric of the run).
    pub probe_records: Vec<RequestRecord>,
}

/// What `run_benchmark` returns.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per run; the dry-run variant is short-lived
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
    match prepare_run(&cfg, &observer).await? {
        Prepared::DryRun { model, tokenizer_id, workload } => {
            Ok(RunResult::DryRun { model, tokenizer_id, workload })
        }
        Prepared::Ready(p) => {
            let n = p.workload.len();
            Ok(RunResult::Completed(Box::new(run_prepared(&p, &cfg, n, observer, stop).await?)))
        }
    }
}

/// What [`prepare_run`] produced: the statistics only (`--dry-run`) or everything a measured
/// phase needs.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // built once per run; the dry-run variant is short-lived
pub enum Prepared {
    DryRun { model: ModelIds, tokenizer_id: String, workload: WorkloadStats },
    Ready(Box<PreparedRun>),
}

/// The part of a run done once and reused by every point of an experiment (sweep, search,
/// multi-run): connection pool, model, tokenizer-built workload (verified), request target.
#[derive(Debug, Clone)]
pub struct PreparedRun {
    pub client: HttpClient,
    /// The user's headers and API key (for control-plane calls: profiling, cache reset).
    pub headers: http::HeaderMap,
    pub model: ModelIds,
    pub tokenizer_id: String,
    pub workload: Arc<Workload>,
    pub stats: WorkloadStats,
    /// The prompt-length check and the server's `/tokenize` dialect.
    pub verification: PromptCheck,
    pub target: Arc<RequestTarget>,
    pub exec_opts: Arc<ExecOptions>,
    pub warnings: Vec<String>,
    /// Trace arrivals, conversations, LoRA targets (crate::load).
    pub load: crate::load::LoadPlan,
    /// Counts generated text with the client tokenizer (`None` with `--tokenizer server`).
    pub retokenizer: Option<Arc<Retokenizer>>,
    /// The client tokenizer, kept only for experiments whose points build prompts of their
    /// own ([`prepare_experiment`], [`rebuild_workload`]).
    pub tokenizer: Option<Arc<dyn TextTokenizer>>,
}

/// [`prepare_run`] for an experiment: the tokenizer is kept so that each point can build
/// prompts of its own ([`rebuild_workload`]).
pub async fn prepare_experiment(cfg: &RunConfig, observer: &Arc<dyn RunObserver>) -> Result<Prepared> {
    prepare_inner(cfg, observer, true).await
}

/// The workload of an experiment point with prompts of its own: the same dataset and lengths,
/// built with `seed` (the run's seed and the point, docs/experiments.md), checked against
/// `--max-model-len` and the server's `/tokenize` like the first. `None` when the workload
/// cannot be rebuilt (no client tokenizer, trace replay, multi-turn): then points share it.
pub async fn rebuild_workload(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    seed: u64,
) -> Result<Option<Arc<Workload>>> {
    let Some(tokenizer) = prepared.tokenizer.clone() else { return Ok(None) };
    if prepared.load.conversations.is_some() || cfg.load.multi_turn.is_some() {
        return Ok(None);
    }
    let mut cfg = cfg.clone();
    cfg.seed = seed;
    match &mut cfg.dataset {
        DatasetSpec::Random(r) => r.seed = seed,
        DatasetSpec::Dataset(d) => d.sampling.seed = seed,
        DatasetSpec::TimedTrace(_) => return Ok(None),
    }
    let mut workload = build_workload(&cfg, tokenizer.clone()).await?;
    prepare::filter_max_model_len(&mut workload, cfg.max_model_len);
    if workload.is_empty() {
        return Ok(None);
    }
    crate::batch::batch_workload(&mut workload, cfg.target.batch_size);
    let server = ServerTokenize::new(
        prepared.client.clone(),
        prepared.headers.clone(),
        prepared.model.served_name.clone(),
    );
    let cache =
        prepare::verification_cache_path(&cfg.base_url, &prepared.model.served_name, tokenizer.name());
    prepare::verify_prompt_lengths(&server, &mut workload, cfg.verify_prompts, cache).await?;
    Ok(Some(Arc::new(workload)))
}

/// Prepares a run: model, tokenizer, workload, readiness check, prompt-length verification.
pub async fn prepare_run(cfg: &RunConfig, observer: &Arc<dyn RunObserver>) -> Result<Prepared> {
    prepare_inner(cfg, observer, false).await
}

async fn prepare_inner(
    cfg: &RunConfig,
    observer: &Arc<dyn RunObserver>,
    keep_tokenizer: bool,
) -> Result<Prepared> {
    let client = HttpClient::new(ClientOptions {
        base_url: cfg.base_url.clone(),
        insecure: cfg.insecure,
        max_idle: cfg.max_concurrency.unwrap_or(2048).max(256),
        tls: cfg.tls.clone(),
        proxy: cfg.proxy.clone(),
        ..ClientOptions::default()
    })?;
    for line in network_header(&client) {
        observer.message(&line);
    }
    let headers = client_headers(cfg)?;
    // A server that cannot be reached fails here with SB315, before any other call: at once
    // without a readiness check (vLLM's default), after --ready-check-timeout-sec with one.
    let ready_started = Instant::now();
    let ready_deadline = ready_started + cfg.ready_check_timeout;
    if !cfg.dry_run {
        if !cfg.ready_check_timeout.is_zero() {
            observer.message(&format!(
                "Waiting for the server at {} (up to {} s)...",
                client.host_port(),
                cfg.ready_check_timeout.as_secs()
            ));
        }
        crate::ready::wait_reachable(&client, ready_started, ready_deadline).await?;
    }
    let model =
        prepare::resolve_model(&client, &headers, cfg.model.as_deref(), cfg.served_model_name.as_deref())
            .await?;
    if cfg.model.is_none() {
        observer.message(&format!("Model detected from /v1/models: {}", model.model_id));
    }
    let tokenizer_id = cfg.tokenizer.clone().unwrap_or_else(|| model.tokenizer_hint.clone());
    let server = ServerTokenize::new(client.clone(), headers.clone(), model.served_name.clone());
    // `--tokenizer server`: no local tokenizer; the server's /tokenize builds exact prompts.
    let tokenizer = if tokenizer_id == SERVER_TOKENIZER {
        observer.message("Using the server's /tokenize and /detokenize as the tokenizer");
        None
    } else {
        observer.message(&format!("Loading tokenizer {tokenizer_id}"));
        Some(prepare::load_tokenizer(tokenizer_id.clone()).await?)
    };

    let started = Instant::now();
    // Trace replay and multi-turn build their own workload (crate::load).
    let special = crate::load::build_special(cfg, tokenizer.clone()).await?;
    let mut workload = match &tokenizer {
        _ if special.is_some() => Workload::default(),
        Some(t) => build_workload(cfg, t.clone()).await?,
        None => match &cfg.dataset {
            DatasetSpec::Random(r) => server_workload::build_server_workload(&server, r).await?,
            DatasetSpec::TimedTrace(_) => {
                return Err(BenchError::config(
                    "--tokenizer server",
                    "trace replay needs a local tokenizer",
                    "pass --tokenizer with a tokenizer.json path, a model id or a built-in encoding",
                ))
            }
            DatasetSpec::Dataset(d) => {
                return Err(BenchError::config(
                    "--tokenizer server",
                    format!("the {} dataset needs a local tokenizer to count prompt tokens", d.kind.name()),
                    "pass --tokenizer with a tokenizer.json path, a model id or a built-in encoding",
                ))
            }
        },
    };
    let mut load_plan = crate::load::LoadPlan::default();
    if let Some((w, p)) = special {
        workload = w;
        load_plan = p;
    }
    let filtered_out = prepare::filter_max_model_len(&mut workload, cfg.max_model_len);
    if workload.is_empty() {
        return Err(BenchError::Dataset {
            detail: format!(
                "no request left after --max-model-len {} filtering; fix: raise --max-model-len or shorten prompts",
                cfg.max_model_len.unwrap_or(0)
            ),
        });
    }
    crate::batch::batch_workload(&mut workload, cfg.target.batch_size);
    let stats = WorkloadStats::of(&workload, filtered_out, started.elapsed().as_secs_f64());
    observer.message(&format!(
        "Generated {} prompts ({} prompt tokens) in {:.2} s",
        stats.requests, stats.total_prompt_tokens, stats.build_seconds
    ));
    if cfg.dry_run {
        return Ok(Prepared::DryRun { model, tokenizer_id, workload: stats });
    }

    let mut target_cfg = cfg.target.clone();
    target_cfg.model = model.served_name.clone();
    let target = Arc::new(RequestTarget::new(&client, &target_cfg)?);
    load_plan.lora_targets = crate::load::lora_targets(&client, &target_cfg, &cfg.load)?;
    let mut exec_opts = ExecOptions {
        keep_text: cfg.keep_text || (cfg.retokenize_output && tokenizer.is_some()),
        request_timeout: cfg.request_timeout,
        stall_timeout: cfg.stall_timeout,
        runaway_factor: cfg.runaway_factor,
        ..ExecOptions::default()
    };
    let mut warnings = Vec::new();

    // Whether the server reports `usage` (known from the readiness check's response).
    let mut server_reports_usage = None;
    if !cfg.ready_check_timeout.is_zero() {
        observer.message("Waiting for the endpoint to answer a test request...");
        let answer =
            crate::ready::ready_check(&client, &target, &exec_opts, &workload, ready_started, ready_deadline)
                .await?;
        server_reports_usage = Some(answer.completion_tokens.is_some());
    }
    for line in crate::network_notes::client_notices(&client) {
        observer.message(&line);
        warnings.push(line);
    }
    // The tokenizer stays loaded during the measured phase (its tables cost tens of MB of
    // RSS) only when it is needed there: with --retokenize-output, or when the server may
    // answer without `usage` (then text without usage is kept and retokenized).
    let retokenize_missing_usage = tokenizer.is_some() && server_reports_usage != Some(true);
    exec_opts.keep_text_without_usage = retokenize_missing_usage;
    let exec_opts = Arc::new(exec_opts);

    let verification = crate::prompt_check::check_prompts(
        &server,
        tokenizer.as_ref(),
        cfg,
        &model.served_name,
        &mut workload,
        observer,
        &mut warnings,
    )
    .await?;

    // Retokenizing generated text (crate::retokenize): with --retokenize-output the tokenizer
    // stays loaded and counts every response; otherwise responses without usage are counted
    // after the measured phase by the tokenizer loaded again, so it costs no RSS meanwhile.
    let retokenizer = match &tokenizer {
        Some(t) if cfg.retokenize_output => Some(Retokenizer::new(t.clone(), true, cfg.keep_text)),
        Some(_) if retokenize_missing_usage => {
            Some(Retokenizer::after_run(tokenizer_id.clone(), cfg.keep_text))
        }
        _ => None,
    }
    .map(Arc::new);
    if cfg.retokenize_output && retokenizer.is_none() {
        let line =
            "--retokenize-output needs a local tokenizer (not --tokenizer server): output is not retokenized"
                .to_owned();
        observer.message(&line);
        warnings.push(line);
    }
    let tokenizer = if keep_tokenizer { tokenizer } else { None };
    Ok(Prepared::Ready(Box::new(PreparedRun {
        client,
        headers,
        model,
        tokenizer_id,
        workload: Arc::new(workload),
        stats,
        verification,
        target,
        exec_opts,
        warnings,
        load: load_plan,
        retokenizer,
        tokenizer,
    })))
}

/// The measured phase of one run (warmups first) over the first `num_requests` requests of the
/// prepared workload, with `cfg`'s rate, concurrency, seed, records file and interrupt mode.
pub async fn run_prepared(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    num_requests: usize,
    observer: Arc<dyn RunObserver>,
    stop: StopSignal,
) -> Result<RunOutput> {
    let PreparedRun { client, model, tokenizer_id, stats, verification, target, exec_opts, .. } =
        prepared.clone();
    let mut warnings = prepared.warnings.clone();
    let n = num_requests.min(prepared.workload.len());
    // `--metrics-port`: live client metrics of this measured phase.
    let live = Arc::new(LiveMetrics::new());
    let metrics_server = match cfg.metrics_listen {
        Some(addr) => {
            let server = MetricsServer::start(addr, live.clone()).await?;
            observer.metrics_listening(server.addr());
            Some(server)
        }
        None => None,
    };
    let workload: Workload = if n == prepared.workload.len() {
        Workload::clone(&prepared.workload)
    } else {
        Workload { requests: prepared.workload.requests[..n].to_vec() }
    };
    if cfg.num_warmups > 0 {
        observer.message(&format!("Warming up with {} requests...", cfg.num_warmups));
        warm_up(&client, &target, &exec_opts, &workload, cfg.num_warmups, cfg.max_concurrency).await;
    }
    if cfg.preconnect > 0 {
        let n = client.preconnect(cfg.preconnect).await?;
        observer.message(&format!("Opened {n} connections before the run"));
    }

    // Measure peak memory of the measured phase only (the tokenizer was freed after preparing).
    let peak_reset = health::reset_peak_rss();
    let rss_at_start = health::current_rss_bytes();
    // Trace arrivals, stages, duration, LoRA and multi-turn arrivals (crate::load).
    let mut measured = crate::load::measured_plan(cfg, &prepared.load, workload)?;
    let workload = std::mem::take(&mut measured.workload);
    let schedule = ArrivalSchedule { offsets_us: std::mem::take(&mut measured.offsets_us) };
    let measured = Arc::new(measured);
    // A sharded run keeps its share of the whole workload and schedule (docs/scale-out.md).
    let (workload, schedule, mut shard_run) =
        shard::take_share(cfg, &model.model_id, &tokenizer_id, workload, schedule);
    let plan =
        DispatchPlan { offsets_us: schedule.offsets_us.into(), max_concurrency: shard::max_concurrency(cfg) };
    let workload = Arc::new(workload);
    if let Some(s) = &shard_run {
        observer.message(&s.describe());
    }
    let early_clock = shard::start_clock(cfg, observer.as_ref(), &stop).await;
    let mut sink = match &cfg.records_path {
        Some(p) => Some(RecordSink::create(p)?),
        None => None,
    };
    if let (Some(s), Some((c, waited))) = (shard_run.as_mut(), early_clock) {
        s.write_header(sink.as_mut(), &c, waited)?;
    }
    let mut store = RecordStore::new(sink, cfg.max_records_in_memory, workload.len());

    let (probe_stop, probe_signal) = stop_signal();
    let sampler_stop = probe_signal.clone();
    let probe = HiccupProbe::start(probe_signal);
    let cpu0 = health::thread_cpu_ns(CLIENT_THREAD_PREFIX);
    let clock = early_clock.map_or_else(RunClock::start, |(c, _)| c);
    // A closed loop sends as many requests as the stages allow: the total is not known (0).
    let planned = if measured.closed_loop.is_some() { 0 } else { workload.len() as u64 };
    live.begin(planned);
    observer.live_metrics(live.clone());
    observer.started(planned);
    let sampler = {
        let (live, mut stop) = (live.clone(), sampler_stop);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = tick.tick() => live.sample(),
                    _ = stop.stopped() => break,
                }
            }
        })
    };

    let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
    let collector = {
        let observer = observer.clone();
        let live = live.clone();
        let retokenizer = prepared.retokenizer.clone();
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Some(mut r) = rx.recv().await {
                let applied = retokenizer.as_ref().map_or(Applied::Done, |rt| rt.apply(&mut r));
                live.request_ended(&r);
                observer.request_done(&r);
                match applied {
                    Applied::Done => store.push(r),
                    Applied::Held => held.push(r),
                }
            }
            let mut note = None;
            if let Some(rt) = &retokenizer {
                let (counted, why) = rt.count_held(held).await;
                counted.into_iter().for_each(|r| store.push(r));
                note = why;
            }
            (store, note)
        })
    };
    let stops = crate::stages::run_stops(
        stop.clone(),
        cfg.on_interrupt == InterruptMode::Cancel,
        measured.end_us.map(|e| clock.instant_at(e)),
        cfg.load.cancel_at_end,
    );
    let session_run = crate::load::session_run(
        cfg,
        &prepared.load,
        &measured,
        &client,
        &target,
        &exec_opts,
        clock,
        Some(live.clone()),
    );
    let record_for = {
        let workload = workload.clone();
        let prefix = cfg.request_id_prefix.clone();
        let measured = measured.clone();
        move |r: &Release| {
            // A closed loop cycles through the prompts: request i sends prompt i mod W and keeps
            // its own index i (on a schedule r.index < W and the index is the prompt's).
            let pos = r.index % workload.len();
            let spec = &workload.requests[pos];
            let index = spec.index + (r.index - pos) as u64;
            let mut rec = RequestRecord::scheduled(
                index,
                format!("{prefix}{index}"),
                r.intended_us,
                spec.prompt_tokens,
                spec.expected_output_tokens,
            );
            measured.annotate(&mut rec, spec.index as usize);
            if r.stage.is_some() {
                rec.stage = r.stage;
            }
            rec
        }
    };
    let exec = {
        let (client, target, opts, workload, record_for) =
            (client.clone(), target.clone(), exec_opts.clone(), workload.clone(), record_for.clone());
        // In-flight requests stop on `stops.cancel` (Ctrl-C with --on-interrupt cancel, the
        // end of --duration with --on-duration-end cancel); never raised, it changes nothing.
        let retries = cfg.retries;
        let stop = stops.cancel.clone();
        let release = stops.release.clone();
        let live = live.clone();
        let (measured, lora_targets) = (measured.clone(), prepared.load.lora_targets.clone());
        move |r: Release| {
            let (client, opts, workload) = (client.clone(), opts.clone(), workload.clone());
            // LoRA: the adapter's target (its name as `model`); else the base model's.
            let pos = r.index % workload.len();
            let target = measured
                .lora_of(workload.requests[pos].index as usize)
                .and_then(|i| lora_targets.get(i).cloned())
                .unwrap_or_else(|| target.clone());
            let release = release.clone();
            let record = record_for(&r);
            let stop = stop.clone();
            live.request_sent(r.released_us.saturating_sub(r.intended_us));
            let in_flight = SentGuard(live.clone());
            async move {
                let _in_flight = in_flight;
                let spec = &workload.requests[pos];
                let mut attempt = record;
                loop {
                    let fresh = attempt.clone();
                    // Cancelled: the request ends as `cancelled`, with the timings it had.
                    let stop = stop.clone();
                    let done = execute_until(&client, &target, spec, fresh, &clock, &opts, async move {
                        let mut stop = stop;
                        stop.stopped().await
                    })
                    .await;
                    // `--retries`: only a connection that could not be made (nothing of the
                    // request was sent) is tried again; the record counts every attempt.
                    let retry = done.error.as_ref().is_some_and(|e| e.kind == ErrorKind::Connect)
                        && done.attempts <= retries
                        && !release.is_stopped();
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
    let probes = cfg.load.probe_request_rate.map(|rate| {
        let t = crate::probe_requests::ProbeTarget {
            client: client.clone(),
            target: target.clone(),
            opts: exec_opts.clone(),
            id_prefix: cfg.request_id_prefix.clone(),
        };
        crate::probe_requests::ProbeLoop::start(rate, t, clock, stops.cancel.clone())
    });
    let cancelled = move |r: Release| record_for(&r);
    let dispatch_stats = match (&prepared.load.conversations, session_run) {
        (Some(conv), Some(run)) => {
            let arrivals = plan.offsets_us.to_vec();
            let (release, cancel) = (stops.release.clone(), stops.cancel.clone());
            crate::session::run_conversations(run, conv.clone(), arrivals, tx, release, cancel).await
        }
        _ => match &measured.closed_loop {
            Some(stages) => dispatch_closed_loop(stages, clock, exec, tx, stops.release.clone()).await,
            None => dispatch(&plan, clock, exec, cancelled, tx, stops.release.clone()).await,
        },
    };
    let probe_records = match probes {
        Some(p) => p.finish().await,
        None => Vec::new(),
    };
    let was_interrupted = interrupted.is_stopped();
    let wall = clock.now_us() as f64 / 1e6;
    let cpu1 = health::thread_cpu_ns(CLIENT_THREAD_PREFIX);
    // Before the collector finishes: retokenizing held records after the run loads the
    // tokenizer, which is not the measured phase's memory.
    let peak_rss_bytes = health::peak_rss_bytes();
    probe_stop.stop();
    let hiccup_us = probe.finish().await;
    let (store, retokenize_note) = collector.await.map_err(|e| BenchError::io("records", e))?;
    if let Some(note) = retokenize_note {
        observer.message(&note);
        warnings.push(note);
    }
    // After the collector: every record has been seen by the observer (progress is final).
    observer.finished();
    let _ = sampler.await;
    if let Some(server) = metrics_server {
        server.stop().await;
    }
    // Sorted by index; records beyond --max-records-in-memory are read back from disk.
    let records = store.finish()?;
    let pool = client.stats();
    let health = ClientHealth {
        dispatch_lateness_us: dispatch_stats.lateness_us,
        hiccup_us,
        client_cpu_seconds: cpu1.saturating_sub(cpu0) as f64 / 1e9,
        wall_seconds: wall,
        cpus: health::available_cpus(),
        peak_rss_bytes,
        peak_rss_covers_run_only: peak_reset,
        rss_at_start_bytes: rss_at_start,
        connections_opened: pool.opened,
        stale_connections: pool.stale,
        resent_requests: records.iter().filter(|r| r.resent).count() as u64,
        pooling_disabled: client.pooling_disabled(),
    };
    if let Some(s) = &shard_run {
        s.write_summary(cfg.records_path.as_deref(), &health, records.len(), was_interrupted)?;
    }
    let cancelled_count = records.iter().filter(|r| r.outcome == Outcome::Cancelled).count();
    if cancelled_count > 0 {
        warnings.push(format!("{cancelled_count} requests were cancelled before they finished"));
    }
    warnings.extend(crate::failure_codes::warnings(&records, &target.backend.to_string()));
    let streamed = target.body_template().streams();
    for line in crate::network_notes::client_notices(&client)
        .into_iter()
        .chain(crate::network_notes::record_warnings(&records, streamed))
    {
        observer.message(&line);
        warnings.push(line);
    }
    Ok(RunOutput {
        records,
        model,
        tokenizer_id,
        clock,
        health,
        workload: stats,
        verification,
        warnings,
        interrupted: was_interrupted,
        probe_records,
    })
}

/// Counts a sent request as ended when its executor finishes (or is dropped).
struct SentGuard(Arc<LiveMetrics>);

impl Drop for SentGuard {
    fn drop(&mut self) {
        self.0.sent_request_ended();
    }
}

async fn build_workload(cfg: &RunConfig, tokenizer: Arc<dyn TextTokenizer>) -> Result<Workload> {
    match &cfg.dataset {
        DatasetSpec::TimedTrace(t) => {
            let mut t = t.clone();
            t.max_model_len = cfg.max_model_len;
            tokio::task::spawn_blocking(move || {
                health::building_workload(|| {
                    servebench_data::trace::build_trace_workload(&t, tokenizer.as_ref()).map(|b| b.workload)
                })
            })
            .await
            .map_err(|e| BenchError::Dataset { detail: format!("trace loading failed: {e}") })?
        }
        DatasetSpec::Random(r) => {
            let r = r.clone();
            tokio::task::spawn_blocking(move || {
                health::building_workload(|| servebench_data::random::generate_random(&r, tokenizer.as_ref()))
            })
            .await
            .map_err(|e| BenchError::Dataset { detail: format!("workload generation failed: {e}") })?
        }
        DatasetSpec::Dataset(d) => {
            let d = d.clone();
            tokio::task::spawn_blocking(move || {
                let env = servebench_data::HubEnv::from_env();
                health::building_workload(|| {
                    servebench_data::dataset::build_dataset(&d, tokenizer.as_ref(), &env)
                })
            })
            .await
            .map_err(|e| BenchError::Dataset { detail: format!("workload generation failed: {e}") })?
        }
    }
}

/// Run-header lines about the network path: which proxy (credentials redacted) and which TLS
/// roots are used.
fn network_header(client: &HttpClient) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(p) = client.proxy_summary() {
        lines.push(format!("Proxy: {p}"));
    }
    if let Some(t) = client.trust() {
        lines.push(format!("TLS trust: {t}"));
    }
    lines
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

//! The measured phase of one run, step by step: warm-ups and pre-connections; the plan (load
//! shape, this shard's share, the records store); the meters (hiccup probe, CPU, peak RSS, live
//! metrics); dispatch, with the record collector and probe requests beside it; then the
//! client's health samples and the run's warnings.

use std::sync::Arc;
use std::time::Duration;

use servebench_client::request::{execute, execute_controlled, ExecOptions, RequestControls, RequestTarget};
use servebench_client::transport::HttpClient;
use servebench_core::schedule::ArrivalSchedule;
use servebench_core::{
    BenchError, CompactRecords, ErrorKind, Outcome, RequestRecord, Requests, Result, RunClock, SpecRef,
};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{PreparedRun, RunOutput};
use crate::config::{InterruptMode, RunConfig};
use crate::load::dispatch::{dispatch, dispatch_closed_loop, DispatchPlan, DispatchStats, Release};
use crate::load::early_stop::EarlyStop;
use crate::load::shard::{self, ShardRun};
use crate::load::stops::{Interrupts, StopReasons};
use crate::load::{LoadShape, MeasuredPlan};
use crate::observe::endpoint::MetricsServer;
use crate::observe::health::{self, HealthSamples, HiccupProbe, CLIENT_THREAD_PREFIX};
use crate::observe::live::LiveMetrics;
use crate::observe::notice::Notice;
use crate::observe::observer::RunObserver;
use crate::records::collector::RecordStore;
use crate::records::retokenize::{Applied, Retokenizer};
use crate::records::sink::RecordSink;

/// The measured phase of one run (warmups first) over the first `num_requests` requests of the
/// prepared workload, with `cfg`'s rate, concurrency, seed, records file and interrupt mode.
pub async fn run_prepared(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    num_requests: usize,
    observer: Arc<dyn RunObserver>,
    stop: impl Into<Interrupts>,
) -> Result<RunOutput> {
    let interrupts = stop.into();
    let stop = interrupts.stop.clone();
    // Why requests were cancelled, noted by the stop signals, read by the collector.
    let reasons = StopReasons::default();
    // `--metrics-port`: live client metrics of this measured phase.
    let live = Arc::new(LiveMetrics::new());
    let metrics_server = start_metrics_endpoint(cfg, &live, observer.as_ref()).await?;
    let workload = prepared.workload.first(num_requests);
    let warm_up_note = warm_up_and_connect(prepared, cfg, &workload, observer.as_ref()).await?;
    let prefix_cache = super::priming::prime(prepared, observer.as_ref()).await;
    // The plan (a shard's share and its errors) before any wait for --start-at.
    let share = share_measured(prepared, cfg, workload, observer.as_ref())?;
    let first_lead_us = shard::wait_for_baseline(cfg, observer.as_ref(), &stop).await;
    // The server's counters are read once before anything measured is sent: the baseline of
    // their deltas covers exactly the measured requests (warm-up, priming and a --start-at
    // wait excluded).
    if let Some(baseline) = observer.before_start() {
        tokio::select! {
            _ = baseline.cancelled() => {}
            _ = stop.cancelled() => {}
        }
    }
    // Peak memory of the measured phase only (the tokenizer was freed after preparing).
    let peak_reset = health::reset_peak_rss();
    let rss_at_start = health::current_rss_bytes();
    prepared.client.reset_receive_stats();
    let mut plan = plan_measured(share, cfg, observer.as_ref(), (&stop, first_lead_us)).await?;
    if plan.dispatch.max_prefill.is_some() {
        // The live view's "prefill-waiting"; nothing is counted without a prefill cap.
        plan.dispatch.prefill_waiting = Some(live.track_prefill());
    }

    let meters = Meters::start();
    let clock = plan.early_clock.map_or_else(RunClock::start, |(c, _)| c);
    // A closed loop sends as many requests as the stages allow: the total is not known (0).
    let planned = if plan.measured.is_closed_loop() { 0 } else { plan.workload.len() as u64 };
    live.begin(planned);
    if matches!(plan.measured.shape, LoadShape::Scheduled { .. }) {
        // The dashboard's client queue: due by the schedule, not yet sent.
        live.set_schedule(clock, plan.dispatch.offsets_us.clone());
    }
    observer.live_metrics(live.clone());
    observer.started(planned);
    let sampler = spawn_sampler(live.clone(), meters.stop.clone());
    let watch = crate::observe::saturation_watch::spawn(live.clone(), observer.clone(), meters.stop.clone());
    // --detect-saturation / --max-error-rate / --max-errors: nothing of it exists without them.
    let early = early_stop_monitor(cfg, &plan, clock);
    let early_tasks = early.as_ref().map(|e| EarlyStopTasks::start(e, cfg, &observer, &meters.stop));
    let (tx, rx) = mpsc::unbounded_channel::<RequestRecord>();
    let collector = spawn_collector(
        rx,
        plan.store,
        prepared.retokenizer.clone(),
        live.clone(),
        observer.clone(),
        (reasons.clone(), early.clone()),
    );
    let dispatched = dispatch_measured(
        prepared,
        cfg,
        &plan.measured,
        &plan.workload,
        &plan.dispatch,
        clock,
        &live,
        tx,
        (&interrupts, reasons, early.as_ref().map(|e| e.tripped())),
    )
    .await;

    let interrupted = stop.is_cancelled();
    let wall_seconds = clock.now_us() as f64 / 1e6;
    // Before the collector finishes: retokenizing held records after the run loads the
    // tokenizer, which is not the measured phase's memory.
    let Metered { cpu_ns, cpu_wait_ns, peak_rss: peak_rss_bytes, hiccup_us } = meters.finish().await;
    let (store, retokenize_note) = collector.await.map_err(|e| BenchError::io("records", e))?;
    if let Some(t) = early_tasks {
        t.finish().await;
    }
    // After the collector: every record has been seen by the observer (progress is final).
    observer.finished();
    let _ = sampler.await;
    let _ = watch.await;
    if let Some(server) = metrics_server {
        server.stop().await;
    }
    // Walked in index order; records beyond --max-records-in-memory stay on disk, merged back by
    // every walk.
    let records = store.finish()?;
    let cancel_in_flight = cfg.on_interrupt == InterruptMode::Cancel;
    let early_stop = early.and_then(|e| e.report(&records, cancel_in_flight));
    let pool = prepared.client.stats();
    let health = HealthSamples {
        dispatch_lateness_us: dispatched.stats.lateness_us,
        hiccup_us,
        client_cpu_seconds: cpu_ns as f64 / 1e9,
        client_cpu_wait_seconds: (cpu_ns > 0).then_some(cpu_wait_ns as f64 / 1e9),
        wall_seconds,
        cpus: health::available_cpus(),
        peak_rss_bytes,
        peak_rss_covers_run_only: peak_reset,
        rss_at_start_bytes: rss_at_start,
        connections_opened: pool.opened,
        stale_connections: pool.stale,
        resent_requests: records.iter().filter(|r| r.resent).count() as u64,
        pooling_disabled: prepared.client.pooling_disabled(),
        receive_timestamps: Some(prepared.client.receive_timestamps()),
        time_slice: Some(cfg.time_slice.clone()),
    };
    if let Some(s) = &plan.shard_run {
        s.write_summary(
            cfg.records_path.as_deref(),
            &health,
            records.len(),
            (interrupted, early_stop.as_ref()),
        )?;
    }
    let mut warnings = prepared.warnings.clone();
    warnings.extend(warm_up_note);
    warnings.extend(
        retokenize_note.map(Notice::warning).inspect(|n| observer.message(&n.to_string())).map(Notice::said),
    );
    warnings.extend(run_warnings(prepared, &records, observer.as_ref()));
    let window_s = cfg.load.early_stop.saturation.map(|s| s.window_s);
    let short = crate::load::early_stop::window_never_full_note(window_s, early_stop.is_some(), wall_seconds);
    warnings.extend(short.map(Notice::note));
    Ok(RunOutput {
        records,
        model: prepared.model.clone(),
        tokenizer_id: prepared.tokenizer_id.clone(),
        clock,
        health,
        workload: prepared.stats.clone(),
        verification: prepared.verification.clone(),
        warnings,
        interrupted,
        probe_records: dispatched.probe_records,
        early_stop,
        prefix_cache,
    })
}

/// The early-stop monitor of the measured phase, when asked for; saturation is tested on a
/// schedule only (the configuration refuses it elsewhere, SB141).
fn early_stop_monitor(cfg: &RunConfig, plan: &Plan, clock: RunClock) -> Option<Arc<EarlyStop>> {
    let scheduled = matches!(plan.measured.shape, LoadShape::Scheduled { .. });
    let offsets = scheduled.then(|| plan.dispatch.offsets_us.clone());
    EarlyStop::new(cfg.load.early_stop, clock, offsets)
}

/// The early stop's tasks: the saturation ticker, and a watcher that says when the stop came.
struct EarlyStopTasks {
    ticker: Option<JoinHandle<()>>,
    watcher: JoinHandle<()>,
}

impl EarlyStopTasks {
    fn start(
        early: &Arc<EarlyStop>,
        cfg: &RunConfig,
        observer: &Arc<dyn RunObserver>,
        done: &CancellationToken,
    ) -> Self {
        let ticker = early.spawn_ticker(done.clone());
        let (tripped, observer) = (early.tripped(), observer.clone());
        let in_flight = match cfg.on_interrupt {
            InterruptMode::Cancel => "cancelling the requests in flight",
            InterruptMode::Drain => "letting the requests in flight finish",
        };
        let watcher = tokio::spawn(async move {
            tripped.cancelled().await;
            observer.message(&format!(
                "Early stop: sending nothing new; {in_flight} (see the result's early_stop)"
            ));
        });
        EarlyStopTasks { ticker, watcher }
    }

    async fn finish(self) {
        self.watcher.abort();
        if let Some(t) = self.ticker {
            let _ = t.await;
        }
    }
}

async fn start_metrics_endpoint(
    cfg: &RunConfig,
    live: &Arc<LiveMetrics>,
    observer: &dyn RunObserver,
) -> Result<Option<MetricsServer>> {
    let Some(addr) = cfg.metrics_listen else { return Ok(None) };
    let server = MetricsServer::start(addr, live.clone()).await?;
    observer.metrics_listening(server.addr());
    Ok(Some(server))
}

async fn warm_up_and_connect(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    workload: &Requests,
    observer: &dyn RunObserver,
) -> Result<Option<Notice>> {
    let mut note = None;
    if cfg.num_warmups > 0 {
        observer.message(&format!("Warming up with {} requests...", cfg.num_warmups));
        let (client, target, opts) = (&prepared.client, &prepared.target, &prepared.exec_opts);
        let failed = warm_up(client, target, opts, workload, cfg.num_warmups, cfg.max_concurrency).await;
        note = warm_up_failures(cfg.num_warmups, &failed)
            .map(Notice::warning)
            .inspect(|n| observer.message(&n.to_string()))
            .map(Notice::said);
    }
    if cfg.preconnect > 0 {
        let n = prepared.client.preconnect(cfg.preconnect).await?;
        observer.message(&format!("Opened {n} connections before the run"));
    }
    Ok(note)
}

/// The warning for warm-up requests that did not complete (`failed`: each one's error): the
/// server was not warmed as asked, and whatever failed them may fail the run's requests too.
fn warm_up_failures(sent: u64, failed: &[String]) -> Option<String> {
    let first = failed.first()?;
    Some(format!("{} of {sent} warm-up requests did not complete (first: {first})", failed.len()))
}

/// What the measured phase sends and where its records go.
struct Plan {
    measured: Arc<MeasuredPlan>,
    workload: Requests,
    dispatch: DispatchPlan,
    shard_run: Option<ShardRun>,
    /// A clock started at `--start-at` (sharded runs), with how late the start was (µs).
    early_clock: Option<(RunClock, Option<i64>)>,
    store: RecordStore,
}

/// The measured phase's plan before its clock: load shape, workload and schedule (this shard's
/// share of them), and the dispatch limits.
struct Share {
    measured: MeasuredPlan,
    workload: Requests,
    dispatch: DispatchPlan,
    shard_run: Option<ShardRun>,
}

fn share_measured(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    workload: Requests,
    observer: &dyn RunObserver,
) -> Result<Share> {
    // Trace arrivals, stages, duration, LoRA and multi-turn arrivals (crate::load).
    let mut measured = crate::load::measured_plan(cfg, &prepared.load, workload)?;
    let workload = std::mem::take(&mut measured.workload);
    let schedule = ArrivalSchedule { offsets_us: measured.shape.take_offsets() };
    // A sharded run keeps its share of the whole workload and schedule (docs/scale-out.md).
    let (workload, schedule, shard_run) =
        shard::take_share(cfg, &prepared.model.model_id, &prepared.tokenizer_id, workload, schedule)?;
    let dispatch = DispatchPlan {
        offsets_us: schedule.offsets_us.into(),
        max_concurrency: shard::max_concurrency(cfg),
        max_prefill: shard::max_prefill_concurrency(cfg),
        prefill_waiting: None,
    };
    if let Some(s) = &shard_run {
        observer.message(&s.describe());
    }
    Ok(Share { measured, workload, dispatch, shard_run })
}

/// The plan with its clock (a sharded or `--start-at` run's, after the wait) and records store.
async fn plan_measured(
    share: Share,
    cfg: &RunConfig,
    observer: &dyn RunObserver,
    (stop, first_lead_us): (&CancellationToken, Option<i64>),
) -> Result<Plan> {
    let Share { measured, workload, dispatch, mut shard_run } = share;
    let early_clock = shard::start_clock(cfg, observer, stop, first_lead_us).await;
    let mut sink = cfg.records_path.as_deref().map(RecordSink::create).transpose()?;
    if let (Some(s), Some((c, waited))) = (shard_run.as_mut(), early_clock) {
        s.write_header(sink.as_mut(), &c, waited)?;
    }
    let store = RecordStore::new(sink, cfg.max_records_in_memory, workload.len());
    Ok(Plan { measured: Arc::new(measured), workload, dispatch, shard_run, early_clock, store })
}

/// The client's own meters over the measured phase: the hiccup probe, the runtime threads'
/// CPU time and run-queue wait, and (read at the end) peak RSS.
struct Meters {
    probe: HiccupProbe,
    /// `(on a CPU, waiting for one)` ns of the runtime threads at the start.
    sched_at_start_ns: (u64, u64),
    /// Stops the probe and the live-metrics sampler.
    stop: CancellationToken,
}

/// What the meters read over the phase.
struct Metered {
    cpu_ns: u64,
    cpu_wait_ns: u64,
    peak_rss: Option<u64>,
    hiccup_us: Vec<u32>,
}

impl Meters {
    fn start() -> Self {
        let stop = CancellationToken::new();
        let probe = HiccupProbe::start(stop.clone());
        Meters { probe, sched_at_start_ns: health::thread_sched_ns(CLIENT_THREAD_PREFIX), stop }
    }

    /// CPU and run-queue wait ns since the start, peak RSS, and the probe's hiccups.
    async fn finish(self) -> Metered {
        let (run, wait) = health::thread_sched_ns(CLIENT_THREAD_PREFIX);
        let peak_rss = health::peak_rss_bytes();
        self.stop.cancel();
        Metered {
            cpu_ns: run.saturating_sub(self.sched_at_start_ns.0),
            cpu_wait_ns: wait.saturating_sub(self.sched_at_start_ns.1),
            peak_rss,
            hiccup_us: self.probe.finish().await,
        }
    }
}

/// Samples the live metrics once a second until `stop`.
fn spawn_sampler(live: Arc<LiveMetrics>, stop: CancellationToken) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = tick.tick() => live.sample(),
                _ = stop.cancelled() => break,
            }
        }
    })
}

/// Takes every record as its request ends: retokenizes it (or holds it for after the run),
/// updates live metrics and the observer, stores it. Ends when every sender is gone; returns
/// the store and a note if held records could not be retokenized.
fn spawn_collector(
    mut rx: mpsc::UnboundedReceiver<RequestRecord>,
    mut store: RecordStore,
    retokenizer: Option<Arc<Retokenizer>>,
    live: Arc<LiveMetrics>,
    observer: Arc<dyn RunObserver>,
    (reasons, early): (StopReasons, Option<Arc<EarlyStop>>),
) -> JoinHandle<(RecordStore, Option<String>)> {
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Some(mut r) = rx.recv().await {
            // A cancelled record says why (every load shape's records pass here).
            reasons.explain(&mut r);
            if let Some(e) = &early {
                e.record_ended(&r);
            }
            let applied = retokenizer.as_ref().map_or(Applied::Done, |rt| rt.apply(&mut r));
            live.request_ended(&r);
            observer.request_done(&r);
            match applied {
                Applied::Done => store = stored(store, r).await,
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
}

/// `store` with `r` pushed. The push that writes the records held in memory to disk (every
/// --max-records-in-memory records: a sort and a write of several MB) runs on a blocking
/// thread while this task waits: run on a runtime worker, it held the worker up and the
/// responses it was to read piled up (up to 4,000 requests in flight instead of 130 in a
/// 5,000 req/s replay; docs/performance.md, "Records on disk beyond the cap").
async fn stored(mut store: RecordStore, r: RequestRecord) -> RecordStore {
    if !store.next_push_spills() {
        store.push(r);
        return store;
    }
    match tokio::task::spawn_blocking(move || {
        store.push(r);
        store
    })
    .await
    {
        Ok(store) => store,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            // Cancelled: the runtime is shutting down, nothing is left to store into.
            Err(e) => RecordStore::failed(BenchError::io("the run's temporary records file", e.to_string())),
        },
    }
}

/// What dispatch produced besides the records (which went to the collector).
struct Dispatched {
    stats: DispatchStats,
    probe_records: Vec<RequestRecord>,
}

/// Sends the measured load — conversations, a closed loop of stages, or the schedule through
/// the concurrency gate — with probe requests beside it, until done or stopped.
#[allow(clippy::too_many_arguments)]
async fn dispatch_measured(
    prepared: &PreparedRun,
    cfg: &RunConfig,
    measured: &Arc<MeasuredPlan>,
    workload: &Requests,
    plan: &DispatchPlan,
    clock: RunClock,
    live: &Arc<LiveMetrics>,
    tx: mpsc::UnboundedSender<RequestRecord>,
    (interrupts, reasons, early): (&Interrupts, StopReasons, Option<CancellationToken>),
) -> Dispatched {
    let stops = crate::load::stops::run_stops(
        interrupts.clone(),
        cfg.on_interrupt == InterruptMode::Cancel,
        measured.end_us.map(|e| clock.instant_at(e)),
        cfg.load.cancel_at_end,
        reasons,
        early,
    );
    let (client, target, exec_opts) = (&prepared.client, &prepared.target, &prepared.exec_opts);
    let session_run = crate::load::session_run(
        cfg,
        &prepared.load,
        measured,
        client,
        target,
        exec_opts,
        clock,
        Some(live.clone()),
    );
    let tree_run =
        crate::load::tree_run(cfg, &prepared.load, client, target, exec_opts, clock, Some(live.clone()));
    let records = RecordFor {
        workload: workload.clone(),
        prefix: cfg.request_id_prefix.clone(),
        measured: measured.clone(),
    };
    let releases = (!measured.is_closed_loop()).then_some(workload.len());
    let mean_prompt = prepared.stats.total_prompt_tokens as f64 / prepared.stats.requests.max(1) as f64;
    let prompts = crate::load::prefetch::Prompts::new(
        workload,
        releases,
        crate::load::prefetch::window_for(mean_prompt),
    );
    let exec = RequestExecutor {
        client: client.clone(),
        target: target.clone(),
        opts: exec_opts.clone(),
        records: records.clone(),
        prompts,
        retries: cfg.retries,
        cancel: stops.cancel.clone(),
        release: stops.release.clone(),
        live: live.clone(),
        lora_targets: prepared.load.lora_targets.clone(),
        clock,
        cancellation: crate::load::cancellation::plan(cfg),
    };
    let probes = cfg.load.probe_request_rate.map(|rate| {
        let t = crate::load::probe_requests::ProbeTarget {
            client: client.clone(),
            target: target.clone(),
            opts: exec_opts.clone(),
            id_prefix: cfg.request_id_prefix.clone(),
        };
        crate::load::probe_requests::ProbeLoop::start(rate, t, clock, stops.cancel.clone())
    });
    let stats = match (&measured.shape, prepared.load.source.conversations(), session_run) {
        (LoadShape::Conversations { .. }, Some(conv), Some(run)) => {
            let arrivals = plan.offsets_us.to_vec();
            let (release, cancel) = (stops.release.clone(), stops.cancel.clone());
            crate::load::session::run_conversations(run, conv.clone(), arrivals, tx, release, cancel).await
        }
        (LoadShape::Trees, ..) => match tree_run {
            Some((run, work)) => {
                let (release, cancel) = (stops.release.clone(), stops.cancel.clone());
                crate::load::agentic::run_trees(run, work, tx, release, cancel).await
            }
            None => DispatchStats::default(),
        },
        (LoadShape::ClosedLoop { stages }, ..) => {
            let prefill = (plan.max_prefill, plan.prefill_waiting.clone());
            let made = move |r: Release| records.make(&r);
            let run = move |r| exec.run(r);
            dispatch_closed_loop(stages, prefill, clock, run, made, tx, stops.release.clone()).await
        }
        _ => {
            let cancelled = move |r: Release| records.make(&r);
            dispatch(plan, clock, move |r| exec.run(r), cancelled, tx, stops.release.clone()).await
        }
    };
    let probe_records = match probes {
        Some(p) => p.finish().await,
        None => Vec::new(),
    };
    Dispatched { stats, probe_records }
}

/// Builds the record of a released request (before it runs, or as cancelled).
#[derive(Clone)]
struct RecordFor {
    workload: Requests,
    prefix: String,
    measured: Arc<MeasuredPlan>,
}

impl RecordFor {
    /// The position of request `index` in the workload: a closed loop cycles through the
    /// prompts (request i sends prompt i mod W); on a schedule `index` < W.
    fn position(&self, index: usize) -> usize {
        index % self.workload.len().max(1)
    }

    fn make(&self, r: &Release) -> RequestRecord {
        // A closed loop keeps the request's own index i (on a schedule the index is the
        // prompt's). Lengths only: a cancelled request's prompt is never built.
        let pos = self.position(r.index);
        let spec = self.workload.meta(pos).unwrap_or(servebench_core::SpecMeta {
            index: pos as u64,
            prompt_tokens: 0,
            expected_output_tokens: 0,
        });
        let index = spec.index + (r.index - pos) as u64;
        let mut rec = RequestRecord::scheduled(
            index,
            format!("{}{index}", self.prefix),
            r.intended_us,
            spec.prompt_tokens,
            spec.expected_output_tokens,
        );
        self.measured.annotate(&mut rec, spec.index as usize);
        rec.gate_us = r.gate_us;
        rec.prefill_wait_us = r.prefill.as_ref().map(|p| p.wait_us);
        if r.stage.is_some() {
            rec.stage = r.stage;
        }
        rec
    }
}

/// Runs one released request of the measured phase to its record.
struct RequestExecutor {
    client: HttpClient,
    target: Arc<RequestTarget>,
    opts: Arc<ExecOptions>,
    records: RecordFor,
    /// The prompts, built ahead of the dispatcher when lazy (crate::load::prefetch).
    prompts: crate::load::prefetch::Prompts,
    /// `--retries`.
    retries: u32,
    /// In-flight requests stop on it (Ctrl-C with --on-interrupt cancel, the end of --duration
    /// with --on-duration-end cancel); never raised, it changes nothing.
    cancel: CancellationToken,
    /// Raised when no more requests are released.
    release: CancellationToken,
    live: Arc<LiveMetrics>,
    lora_targets: Vec<Arc<RequestTarget>>,
    clock: RunClock,
    /// `--request-cancellation-rate`/`-delay`.
    cancellation: Option<crate::load::cancellation::CancellationPlan>,
}

impl RequestExecutor {
    fn run(&self, mut r: Release) -> impl std::future::Future<Output = RequestRecord> + Send + 'static {
        let pos = self.records.position(r.index);
        // By release: a closed loop's release k sends prompt k mod W.
        let spec = self.prompts.take(r.index);
        let mut record = self.records.make(&r);
        // LoRA: the adapter's target (its name as `model`); else the base model's. `record`
        // and `spec` carry the prompt's index (a closed loop's record adds the cycles).
        let prompt_index = spec.as_ref().map_or(pos as u64, |s| s.index);
        let target = self
            .records
            .measured
            .lora_of(prompt_index as usize)
            .and_then(|i| self.lora_targets.get(i).cloned())
            .unwrap_or_else(|| self.target.clone());
        let cancel_after = self.cancellation.and_then(|c| c.delay_for(record.index));
        record.cancel_after_us = cancel_after.map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX));
        let mut prefill = r.prefill.take().map(|p| p.permit);
        self.live.request_sent(r.released_us.saturating_sub(r.intended_us));
        let in_flight = SentGuard(self.live.clone());
        let (client, opts, clock, retries) =
            (self.client.clone(), self.opts.clone(), self.clock, self.retries);
        let (cancel, release) = (self.cancel.clone(), self.release.clone());
        async move {
            let _in_flight = in_flight;
            let Some(spec) = spec else { return record };
            let spec: &servebench_core::RequestSpec = &spec;
            // `record` is the attempt: kept in place (a second binding would be a second
            // record-sized slot in this future, which lives as long as the request).
            let attempt = &mut record;
            loop {
                // Cancelled: the request ends as `cancelled`, with the timings it had.
                let stop = cancel.clone();
                // A retried attempt waits for a prefill slot again (the last one ended with it).
                let sem = prefill.as_ref().map(|p| p.semaphore().clone());
                let controls = RequestControls { prefill_slot: prefill.take(), cancel_after };
                let done = execute_controlled(
                    &client,
                    &target,
                    spec,
                    None,
                    attempt.clone(),
                    &clock,
                    &opts,
                    controls,
                    async move { stop.cancelled().await },
                )
                .await;
                // `--retries`: only a connection that could not be made (nothing of the
                // request was sent) is tried again; the record counts every attempt.
                let retry = done.error.as_ref().is_some_and(|e| e.kind == ErrorKind::Connect)
                    && done.attempts <= retries
                    && !release.is_cancelled();
                if !retry {
                    return done;
                }
                attempt.attempts = done.attempts;
                tokio::time::sleep(Duration::from_millis(100 * u64::from(done.attempts))).await;
                if let Some(sem) = sem {
                    let from = clock.now_us();
                    prefill = sem.acquire_owned().await.ok();
                    let waited = clock.now_us().saturating_sub(from);
                    attempt.prefill_wait_us = attempt.prefill_wait_us.map(|w| w + waited);
                }
            }
        }
    }
}

/// Warnings about what the records show: cancelled requests, failure patterns by backend, and
/// the network path (each also told to the observer where it is new).
fn run_warnings(prepared: &PreparedRun, records: &CompactRecords, observer: &dyn RunObserver) -> Vec<Notice> {
    let mut warnings = Vec::new();
    if let Some(failure) = prepared.workload.source_failure() {
        warnings.push(Notice::warning(failure));
    }
    if let Some(failure) = records.spill_write_failure() {
        warnings.push(Notice::warning(format!(
            "{failure}: the records beyond --max-records-in-memory stayed in memory (the figures are whole)"
        )));
    }
    let by_design = |r: &RequestRecord| r.cancelled_by == Some(servebench_core::CancelReason::ByDesign);
    let cancelled = records.iter().filter(|r| r.outcome == Outcome::Cancelled && !by_design(r)).count();
    if cancelled > 0 {
        warnings.push(Notice::note(cancelled_note(records, cancelled)));
    }
    let target = &prepared.target;
    warnings.extend(crate::prepare::failure_codes::warnings(records, &target.backend.to_string()));
    let streamed = target.body_template().streams();
    for line in crate::observe::network_notes::client_notices(&prepared.client)
        .into_iter()
        .chain(crate::observe::network_notes::record_warnings(records, streamed))
    {
        observer.message(&line.to_string());
        warnings.push(line.said());
    }
    warnings
}

/// The note on cancelled requests (`cancelled` of them, by-design ones excluded): how many
/// were never sent because a turn they depend on (a session tree's, or an earlier turn of a
/// conversation) failed or was cancelled by design, when any were.
fn cancelled_note(records: &CompactRecords, cancelled: usize) -> String {
    let blocked = records
        .iter()
        .filter(|r| r.cancelled_by == Some(servebench_core::CancelReason::DependencyFailed))
        .count();
    match blocked {
        0 => format!("{cancelled} requests were cancelled before they finished"),
        b => format!(
            "{cancelled} requests were cancelled before they finished ({b} never sent: a turn they depend on failed or was cancelled)"
        ),
    }
}

/// Counts a sent request as ended when its executor finishes (or is dropped).
struct SentGuard(Arc<LiveMetrics>);

impl Drop for SentGuard {
    fn drop(&mut self) {
        self.0.sent_request_ended();
    }
}
/// Sends `n` copies of the first request through the concurrency gate; the errors of those that
/// did not complete (their records are in no metric).
async fn warm_up(
    client: &HttpClient,
    target: &Arc<RequestTarget>,
    opts: &Arc<ExecOptions>,
    workload: &Requests,
    n: u64,
    max_concurrency: Option<usize>,
) -> Vec<String> {
    use futures::stream::{self, StreamExt};
    let Some(spec) = workload.spec(0) else { return Vec::new() };
    let spec = Arc::new(SpecRef::clone(&spec));
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
        .filter_map(|r| async move {
            (r.outcome != Outcome::Completed).then(|| match &r.error {
                Some(e) => format!("{}: {}", e.kind.as_str(), e.message),
                None => format!("{:?}", r.outcome),
            })
        })
        .collect()
        .await
}

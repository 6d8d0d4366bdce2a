//! Preparing a run: the client and its network path, readiness, the model, the tokenizer, the
//! workload (built off the runtime), the prompt-length check and what retokenizes output.

use super::{client_headers, Prepared, PreparedRun, WorkloadStats, SERVER_TOKENIZER};
use crate::config::{DatasetSpec, RunConfig, TimeSlice};
use crate::observe::notice::Notice;
use crate::observe::observer::RunObserver;
use crate::prepare::{self, ServerTokenize};
use crate::records::retokenize::Retokenizer;
use servebench_client::request::{ExecOptions, RequestTarget};
use servebench_client::transport::kstamp::StampSource;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::{BenchError, Requests, Result, TextTokenizer};
use servebench_data::prefix_cache::PrefixCacheLayout;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
) -> Result<Option<Requests>> {
    let Some(tokenizer) = prepared.tokenizer.clone() else { return Ok(None) };
    if prepared.load.source.conversations().is_some()
        || cfg.load.multi_turn.is_some()
        || cfg.load.agentic.is_some()
    {
        return Ok(None);
    }
    let mut cfg = cfg.clone();
    cfg.seed = seed;
    match &mut cfg.dataset {
        DatasetSpec::Random(r) => r.seed = seed,
        DatasetSpec::Dataset(d) => d.sampling.seed = seed,
        DatasetSpec::TimedTrace(_) => return Ok(None),
    }
    let mut workload = crate::load::prompt_workload(&cfg, tokenizer.clone()).await?;
    prepare::filter_max_model_len(&mut workload, cfg.max_model_len);
    if workload.is_empty() {
        return Ok(None);
    }
    batch(&mut workload, cfg.target.batch_size);
    let server = ServerTokenize::new(
        prepared.client.clone(),
        prepared.headers.clone(),
        prepared.model.served_name.clone(),
    );
    let cache =
        prepare::verification_cache_path(&cfg.base_url, &prepared.model.served_name, tokenizer.name());
    prepare::verify_prompt_lengths(&server, &mut workload, cfg.verify_prompts, cache).await?;
    Ok(Some(workload))
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
    let conn = connect(cfg, observer).await?;
    let (client, headers) = (conn.client.clone(), conn.headers.clone());
    let model =
        prepare::resolve_model(&client, &headers, cfg.model.as_deref(), cfg.served_model_name.as_deref())
            .await?;
    if cfg.model.is_none() {
        // Shown as one line of printable text (an id can hold an escape sequence or a newline);
        // requests name the model exactly as the server listed it.
        let shown = servebench_core::text::one_line(&model.model_id, 200);
        observer.message(&format!("Model detected from /v1/models: {shown}"));
    }
    let tokenizer_id = cfg.tokenizer.clone().unwrap_or_else(|| model.tokenizer_hint.clone());
    let tokenizer = client_tokenizer(&tokenizer_id, observer).await?;
    let server = ServerTokenize::new(client.clone(), headers.clone(), model.served_name.clone());
    let (mut workload, source, stats, prefix_cache) =
        measured_workload(cfg, tokenizer.clone(), &server, observer).await?;
    if cfg.dry_run {
        let scheduled = dry_run_schedule(cfg, source, workload)?;
        return Ok(Prepared::DryRun { model, tokenizer_id, workload: WorkloadStats { scheduled, ..stats } });
    }

    let mut target_cfg = cfg.target.clone();
    target_cfg.model = model.served_name.clone();
    let target = Arc::new(RequestTarget::new(&client, &target_cfg)?);
    let load = crate::load::LoadPlan {
        source,
        lora_targets: crate::load::lora_targets(&client, &target_cfg, &cfg.load)?,
        prefix_cache,
    };
    let mut warnings = Vec::new();
    let exec_opts =
        exec_options(cfg, &conn, &target, &workload, tokenizer.is_some(), observer, &mut warnings).await?;
    let verification = crate::prepare::prompt_check::check_prompts(
        &server,
        tokenizer.as_ref(),
        cfg,
        &model.served_name,
        &mut workload,
        observer,
        &mut warnings,
    )
    .await?;
    let retokenizer = retokenizer(cfg, &tokenizer, &tokenizer_id, &exec_opts, observer, &mut warnings);
    let tokenizer = if keep_tokenizer { tokenizer } else { None };
    Ok(Prepared::Ready(Box::new(PreparedRun {
        client,
        headers,
        model,
        tokenizer_id,
        workload,
        stats,
        verification,
        target,
        exec_opts,
        warnings,
        load,
        retokenizer,
        tokenizer,
    })))
}

/// The client and the request headers, once the server was reached.
struct Connection {
    client: HttpClient,
    headers: http::HeaderMap,
}

/// Builds the client and checks that the server can be reached. A server that cannot be
/// reached fails here with SB315, before any other call: at once without a readiness check
/// (vLLM's default), after --ready-check-timeout-sec with one.
async fn connect(cfg: &RunConfig, observer: &Arc<dyn RunObserver>) -> Result<Connection> {
    let client = HttpClient::new(ClientOptions {
        max_idle: cfg.max_concurrency.unwrap_or(2048).max(256),
        ..cfg.client_options()
    })?;
    for line in network_header(&client) {
        observer.message(&line);
    }
    // Said when a short time slice was asked for and not granted (docs/metrics.md).
    if let TimeSlice::Unavailable { .. } = &cfg.time_slice {
        observer.message(&format!("Time slices: {}", cfg.time_slice.describe()));
    }
    let headers = client_headers(cfg)?;
    let ready_started = Instant::now();
    // At most 10^9 s (as the flag): a longer timeout overflowed the deadline.
    let ready_deadline = ready_started + cfg.ready_check_timeout.min(Duration::from_secs(1_000_000_000));
    if !cfg.dry_run {
        if !cfg.ready_check_timeout.is_zero() {
            observer.message(&format!(
                "Waiting for the server at {} (up to {} s)...",
                client.host_port(),
                cfg.ready_check_timeout.as_secs()
            ));
        }
        crate::prepare::ready::wait_reachable(&client, ready_started, ready_deadline).await?;
    }
    Ok(Connection { client, headers })
}

/// The client tokenizer; `None` with `--tokenizer server` (the server's /tokenize builds
/// exact prompts).
async fn client_tokenizer(
    tokenizer_id: &str,
    observer: &Arc<dyn RunObserver>,
) -> Result<Option<Arc<dyn TextTokenizer>>> {
    if tokenizer_id == SERVER_TOKENIZER {
        observer.message("Using the server's /tokenize and /detokenize as the tokenizer");
        return Ok(None);
    }
    observer.message(&format!("Loading tokenizer {tokenizer_id}"));
    Ok(Some(prepare::load_tokenizer(tokenizer_id.to_owned()).await?))
}

/// The measured phase's workload (filtered to `--max-model-len`, batched), where its
/// requests come from, and its statistics.
async fn measured_workload(
    cfg: &RunConfig,
    tokenizer: Option<Arc<dyn TextTokenizer>>,
    server: &ServerTokenize,
    observer: &Arc<dyn RunObserver>,
) -> Result<(Requests, crate::load::LoadSource, WorkloadStats, Option<Arc<PrefixCacheLayout>>)> {
    let started = Instant::now();
    let (mut workload, source) = crate::load::build_load(cfg, tokenizer, server).await?;
    let filtered_out = prepare::filter_max_model_len(&mut workload, cfg.max_model_len);
    if workload.is_empty() {
        return Err(BenchError::Dataset {
            detail: format!(
                "no request left after --max-model-len {} filtering; fix: raise --max-model-len or shorten prompts",
                cfg.max_model_len.unwrap_or(0)
            ),
            source: None,
        });
    }
    let prefix_cache = match &source {
        // Laid over the conversations as they were built (crate::load::session_tokens).
        crate::load::LoadSource::Conversations { prefix_cache, conversations, .. } => {
            if let (Some(pc), Some(layout)) = (cfg.load.prefix_cache, prefix_cache) {
                announce(&pc, layout, layout.constructed_hit_rate(&conversations.workload), observer);
            }
            prefix_cache.clone()
        }
        _ => lay_prefix_cache(cfg, &mut workload, observer)?,
    };
    let resampled = workload.held().map_or(0, |w| w.resampled);
    batch(&mut workload, cfg.target.batch_size);
    let stats = WorkloadStats::of(&workload, filtered_out, started.elapsed().as_secs_f64());
    let built = if workload.is_lazy() { "Prepared" } else { "Generated" };
    // Requests the dataset gave but --max-model-len dropped are said here too, not only in a
    // dry run: the result's num_prompts (vLLM's, the flag) is then larger than what was sent.
    let dropped = match filtered_out {
        0 => String::new(),
        n => format!("; {n} dropped by --max-model-len"),
    };
    observer.message(&format!(
        "{built} {} prompts ({} prompt tokens{dropped}) in {:.2} s",
        stats.requests, stats.total_prompt_tokens, stats.build_seconds
    ));
    if resampled > 0 {
        let usable = stats.requests.saturating_sub(resampled);
        // vLLM oversamples silently too (one log line); repeated prompts can be served from a
        // prefix cache, which flatters TTFT.
        observer.message(&format!(
            "note: the dataset gave {usable} usable prompt{}; {resampled} more {} drawn again at random \
             to reach --num-prompts {} (as vLLM does; a server's prefix cache may serve them: \
             --no-oversample sends each prompt once)",
            if usable == 1 { "" } else { "s" },
            if resampled == 1 { "is a repeat" } else { "are repeats" },
            stats.requests
        ));
    }
    if workload.is_lazy() {
        observer.message("Prompts are built from the seed as they are sent (lazy generation)");
    }
    Ok((workload, source, stats, prefix_cache))
}

/// What a `--dry-run`'s load would send of the workload: the measured plan's schedule (the
/// same function a run uses), when it is not simply every request at once or at the rate —
/// a `--duration` or `--stages` run sends what its schedule places before its end, a trace its
/// rows, conversations their turns; a dry run printed the whole `--num-prompts` workload.
fn dry_run_schedule(
    cfg: &RunConfig,
    source: crate::load::LoadSource,
    workload: Requests,
) -> Result<Option<crate::run::ScheduledLoad>> {
    use crate::load::LoadShape;
    use crate::run::ScheduledLoad;
    let shaped = cfg.load.duration.is_some() || !cfg.load.stages.is_empty();
    let plan = crate::load::LoadPlan { source, lora_targets: Vec::new(), prefix_cache: None };
    let measured = crate::load::measured_plan(cfg, &plan, workload)?;
    let seconds = |us: u64| us as f64 / 1e6;
    let gated = !cfg.rate.request_rate.is_finite() && cfg.load.stages.is_empty();
    Ok(match &measured.shape {
        LoadShape::Scheduled { offsets_us, .. } if shaped && gated => measured
            .end_us
            .map(|end| ScheduledLoad::Gated { requests: offsets_us.len(), end_s: seconds(end) }),
        LoadShape::ClosedLoop { .. } => {
            measured.end_us.map(|end| ScheduledLoad::ClosedLoop { end_s: seconds(end) })
        }
        LoadShape::Scheduled { offsets_us, .. } if shaped => Some(ScheduledLoad::Arrivals {
            requests: offsets_us.len(),
            last_s: seconds(offsets_us.last().copied().unwrap_or(0)),
            conversations: false,
        }),
        LoadShape::Conversations { offsets_us } if shaped => Some(ScheduledLoad::Arrivals {
            requests: offsets_us.len(),
            last_s: seconds(offsets_us.last().copied().unwrap_or(0)),
            conversations: true,
        }),
        _ => None,
    })
}

/// Pooling batches (`--random-batch-size` > 1) group prompts: every prompt is built and held.
fn batch(workload: &mut Requests, batch_size: usize) {
    if batch_size > 1 {
        let mut held = std::mem::take(workload).into_workload();
        crate::prepare::batch::batch_workload(&mut held, batch_size);
        *workload = held.into();
    }
}

/// `--prefix-cache-hit-rate` and its kin: the shared prefixes laid over the prompts
/// (servebench_data::prefix_cache). The layout rewrites prompts: every prompt is built and
/// held.
fn lay_prefix_cache(
    cfg: &RunConfig,
    requests: &mut Requests,
    observer: &Arc<dyn RunObserver>,
) -> Result<Option<Arc<PrefixCacheLayout>>> {
    let Some(pc) = cfg.load.prefix_cache else { return Ok(None) };
    let mut held = std::mem::take(requests).into_workload();
    let layout = servebench_data::prefix_cache::apply(pc, &mut held);
    let rate = layout.as_ref().ok().and_then(|l| l.constructed_hit_rate(&held));
    *requests = held.into();
    let layout = layout?;
    announce(&pc, &layout, rate, observer);
    Ok(Some(Arc::new(layout)))
}

/// Says the target, the rate built in and the priming prompts (and on multi-turn
/// conversations the reachable range).
fn announce(
    pc: &servebench_data::prefix_cache::PrefixCacheConfig,
    layout: &PrefixCacheLayout,
    rate: Option<f64>,
    observer: &Arc<dyn RunObserver>,
) {
    let Some(rate) = rate else { return };
    let range = layout.turns.map_or_else(String::new, |t| {
        format!(
            " (multi-turn: {:.4} from the history alone, at most {:.4})",
            t.history_hit_rate, t.max_hit_rate
        )
    });
    observer.message(&format!(
        "Prefix cache: target hit rate {:.4} ({}), {:.4} built in with {}-token blocks{range}; {} priming prompt(s)",
        layout.target(),
        pc.mode.name(),
        rate,
        pc.block_size,
        layout.warmup.len()
    ));
}

/// How each request is executed, after the readiness check (when one is asked for) has told
/// whether the server reports `usage`.
async fn exec_options(
    cfg: &RunConfig,
    conn: &Connection,
    target: &Arc<RequestTarget>,
    workload: &Requests,
    has_tokenizer: bool,
    observer: &Arc<dyn RunObserver>,
    warnings: &mut Vec<Notice>,
) -> Result<Arc<ExecOptions>> {
    let mut exec_opts = ExecOptions {
        keep_text: cfg.keep_text || (cfg.retokenize_output && has_tokenizer),
        request_timeout: cfg.request_timeout,
        stall_timeout: cfg.stall_timeout,
        runaway_factor: cfg.runaway_factor,
        max_body_bytes: cfg.max_response_bytes,
        ..ExecOptions::default()
    };
    let mut server_reports_usage = None;
    if !cfg.ready_check_timeout.is_zero() {
        observer.message("Waiting for the endpoint to answer a test request...");
        // The test request gets the whole window from its first attempt, as in vLLM: the time
        // spent loading the tokenizer and preparing the workload since the server was first
        // reached does not count against it.
        let check_started = Instant::now();
        let answer = crate::prepare::ready::ready_check(
            &conn.client,
            target,
            &exec_opts,
            workload,
            check_started,
            check_started + cfg.ready_check_timeout,
        )
        .await?;
        server_reports_usage = Some(answer.completion_tokens.is_some());
    }
    for notice in crate::observe::network_notes::client_notices(&conn.client) {
        observer.message(&notice.to_string());
        warnings.push(notice.said());
    }
    // The tokenizer stays loaded during the measured phase (its tables cost tens of MB of
    // RSS) only when it is needed there: with --retokenize-output, or when the server may
    // answer without `usage` (then text without usage is kept and retokenized).
    exec_opts.keep_text_without_usage = has_tokenizer && server_reports_usage != Some(true);
    Ok(Arc::new(exec_opts))
}

/// What counts generated text (crate::records::retokenize): with --retokenize-output the
/// tokenizer stays loaded and counts every response; otherwise responses without usage are
/// counted after the measured phase by the tokenizer loaded again, so it costs no RSS
/// meanwhile.
fn retokenizer(
    cfg: &RunConfig,
    tokenizer: &Option<Arc<dyn TextTokenizer>>,
    tokenizer_id: &str,
    exec_opts: &ExecOptions,
    observer: &Arc<dyn RunObserver>,
    warnings: &mut Vec<Notice>,
) -> Option<Arc<Retokenizer>> {
    let retokenizer = match tokenizer {
        Some(t) if cfg.retokenize_output => Some(Retokenizer::new(t.clone(), true, cfg.keep_text)),
        Some(_) if exec_opts.keep_text_without_usage => {
            Some(Retokenizer::after_run(tokenizer_id.to_owned(), cfg.keep_text))
        }
        _ => None,
    }
    .map(Arc::new);
    if cfg.retokenize_output && retokenizer.is_none() {
        let notice = Notice::note(
            "--retokenize-output needs a local tokenizer (not --tokenizer server): output is not retokenized",
        );
        observer.message(&notice.to_string());
        warnings.push(notice.said());
    }
    retokenizer
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
    // Said once, when the event times are not the kernel's (docs/metrics.md, "Receive timestamps").
    if let StampSource::UserSpace(_) = &client.receive_timestamps().source {
        lines.push(format!("Receive times: {}", client.receive_timestamps().source.describe()));
    }
    lines
}

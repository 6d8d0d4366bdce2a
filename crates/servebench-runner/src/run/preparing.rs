//! Preparing a run: the client and its network path, readiness, the model, the tokenizer, the
//! workload (built off the runtime), the prompt-length check and what retokenizes output.

use super::{client_headers, Prepared, PreparedRun, WorkloadStats, SERVER_TOKENIZER};
use crate::config::{DatasetSpec, RunConfig};
use crate::observer::RunObserver;
use crate::prepare::blocking::build_off_runtime;
use crate::prepare::server_workload;
use crate::prepare::{self, ServerTokenize};
use crate::records::retokenize::Retokenizer;
use servebench_client::request::{ExecOptions, RequestTarget};
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::sync::Arc;
use std::time::Instant;

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
    crate::prepare::batch::batch_workload(&mut workload, cfg.target.batch_size);
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
        crate::prepare::ready::wait_reachable(&client, ready_started, ready_deadline).await?;
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
            source: None,
        });
    }
    crate::prepare::batch::batch_workload(&mut workload, cfg.target.batch_size);
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
        let answer = crate::prepare::ready::ready_check(
            &client,
            &target,
            &exec_opts,
            &workload,
            ready_started,
            ready_deadline,
        )
        .await?;
        server_reports_usage = Some(answer.completion_tokens.is_some());
    }
    for line in crate::observe::network_notes::client_notices(&client) {
        observer.message(&line);
        warnings.push(line);
    }
    // The tokenizer stays loaded during the measured phase (its tables cost tens of MB of
    // RSS) only when it is needed there: with --retokenize-output, or when the server may
    // answer without `usage` (then text without usage is kept and retokenized).
    let retokenize_missing_usage = tokenizer.is_some() && server_reports_usage != Some(true);
    exec_opts.keep_text_without_usage = retokenize_missing_usage;
    let exec_opts = Arc::new(exec_opts);

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

    // Retokenizing generated text (crate::records::retokenize): with --retokenize-output the tokenizer
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

async fn build_workload(cfg: &RunConfig, tokenizer: Arc<dyn TextTokenizer>) -> Result<Workload> {
    match &cfg.dataset {
        DatasetSpec::TimedTrace(t) => {
            let mut t = t.clone();
            t.max_model_len = cfg.max_model_len;
            build_off_runtime("trace loading", move || {
                servebench_data::trace::build_trace_workload(&t, tokenizer.as_ref()).map(|b| b.workload)
            })
            .await
        }
        DatasetSpec::Random(r) => {
            let r = r.clone();
            build_off_runtime("workload generation", move || {
                servebench_data::random::generate_random(&r, tokenizer.as_ref())
            })
            .await
        }
        DatasetSpec::Dataset(d) => {
            let d = d.clone();
            build_off_runtime("workload generation", move || {
                let env = servebench_data::HubEnv::from_env();
                servebench_data::dataset::build_dataset(&d, tokenizer.as_ref(), &env)
            })
            .await
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

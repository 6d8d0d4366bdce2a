//! Turns parsed flags into validated configuration. Every check here happens before any
//! network traffic and fails with a coded error that names the flag and the fix.

mod agentic;
pub mod backend;
mod dataset;
pub(crate) mod early_stop;
pub mod experiment;
mod hf_parsers;
pub mod network;
pub mod otel;
pub mod output_dirs;
pub mod path_collisions;
mod prefix_cache;
pub mod shard;
pub mod unused;
pub(crate) mod vllm_flags;
pub(crate) mod workload;

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use serde_json::{Map, Value};
use servebench_client::backend::{BackendKind, Dialect, TargetConfig};
use servebench_core::flag_values::{parse_percentile_metrics, MAX_FLAG_SECONDS};
use servebench_core::schedule::{RampUp, RateConfig};
use servebench_core::secret::Secret;
use servebench_core::{BenchError, Result};
use servebench_data::dataset::DatasetRequest;
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::config::{DatasetSpec, OutputConfig, RunConfig};
use servebench_runner::ShardConfig;
use shard::ShardSettings;
use std::time::Duration;

/// The whole validated configuration of a `servebench` run.
#[derive(Debug, Clone)]
pub struct Validated {
    pub run: RunConfig,
    pub output: OutputConfig,
}

/// Validates `args`. `api_key` is `OPENAI_API_KEY` (passed in so tests need no environment).
/// Checks run in a fixed order (the first refusal is the one reported): flag combinations of
/// the backend and dataset, the dataset, single-run flags, rate, request target, shards,
/// timeouts and outputs, then the workload flags.
pub fn validate(args: &RunArgs, api_key: Option<Secret>) -> Result<Validated> {
    let backend = args.backend.kind;
    backend::check_backend_flags(args, backend)?;
    dataset::check_chat_media_flags(args, backend)?;
    hf_parsers::check(args)?;
    let probe_request_rate = vllm_flags::probe_rate(args, backend)?;
    let tokenizer = vllm_flags::tokenizer(args)?;
    // timed_trace and multi-turn ShareGPT are built by the load options (cli/workload.rs).
    let other_dataset =
        if args.is_trace() || args.workload.multi_turn || args.dataset_name.kind == DatasetName::Agentic {
            None
        } else {
            dataset::dataset_request(args, backend.takes_multimodal())?
        };
    // prefix_repetition on token ids is the shared-prefix mode of `prefix_cache`.
    let text_dataset = other_dataset.is_some() && args.dataset_name.kind != DatasetName::PrefixRepetition;
    check_prompt_token_ids(args, backend, text_dataset)?;
    check_run_counts(args)?;
    let rate = rate_config(args)?;
    let dataset = dataset_spec(args, other_dataset)?;
    let mut target = target_config(args, backend, api_key)?;
    url_authorization(&base_url(args), &mut target)?;
    // The credentials are in the Authorization header from here on: not kept in the URL (the
    // configuration's Debug, the verification cache key).
    let base_url = servebench_core::secret::url_without_userinfo(&base_url(args));
    let shards = args.shard.settings(std::env::var(shard::JOB_INDEX_ENV).ok().as_deref())?;
    shards.check_experiment(args.experiment.experiment_flag().as_deref())?;
    if let Some(start) = shards.start_at_unix_us {
        servebench_core::shard::check_start_at(start, servebench_core::clock::unix_now_us())?;
    }
    let shard = shard_config(args, &shards)?;
    let mut run = RunConfig {
        base_url,
        target,
        tokenizer,
        dataset,
        rate,
        request_id_prefix: request_id_prefix(args),
        verify_prompts: verify_prompts(args, backend),
        request_timeout: Some(seconds_flag("--request-timeout", args.request_timeout)?),
        stall_timeout: args.stall_timeout.map(|s| seconds_flag("--stall-timeout", s)).transpose()?,
        metrics_listen: args.live.metrics_listen()?,
        shard,
        start_at_unix_us: shards.start_at_unix_us,
        ready_check_timeout: ready_check_timeout(args.ready_check_timeout_sec)?,
        ..plain_run_config(args)
    };
    let output = output_config(args, backend)?;
    if let Some(s) = run.shard.as_mut() {
        // The merged result reports what the shards did, with the run's metadata.
        s.metrics = servebench_core::metrics::MetricsConfig {
            percentiles: output.metric_percentiles.clone(),
            selected: output.percentile_metrics.clone(),
            goodput: output.goodput.clone(),
        };
        s.metadata = output.metadata.clone();
    }
    workload::apply(args, backend, &mut run)?;
    prefix_cache::apply(args, &mut run)?;
    run.load.probe_request_rate = probe_request_rate;
    Ok(Validated { run, output })
}

/// `--prompt-token-ids` needs the random dataset and a backend that takes token ids.
fn check_prompt_token_ids(args: &RunArgs, backend: BackendKind, other_dataset: bool) -> Result<()> {
    if !args.prompt_token_ids {
        return Ok(());
    }
    if other_dataset {
        return Err(BenchError::config(
            "--prompt-token-ids",
            format!("the {} dataset builds text prompts", args.dataset_name),
            "drop --prompt-token-ids (it applies to the random and prefix_repetition datasets)",
        ));
    }
    if backend == BackendKind::Chat {
        return Err(BenchError::config(
            "--prompt-token-ids",
            "token-id prompts need the completions API",
            "use --backend openai (or vllm), or drop --prompt-token-ids",
        ));
    }
    if let BackendKind::Native(d) = backend {
        if !d.accepts_token_ids() {
            return Err(BenchError::config(
                "--prompt-token-ids",
                format!("--backend {} takes text prompts only", d.name()),
                "use --backend llama.cpp or openai for token-id prompts, or drop --prompt-token-ids",
            ));
        }
    }
    Ok(())
}

/// Flags of one run refused in experiments; `--num-prompts` and `--max-concurrency` ≥ 1.
fn check_run_counts(args: &RunArgs) -> Result<()> {
    let per_run = [
        ("--plot-timeline", args.vllm.plot_timeline),
        ("--probe-request-rate", args.vllm.probe_request_rate != 0.0),
        // Files of one run's requests: an experiment writes one document of its points (it
        // wrote none of these, without a word; `servebench report DOC` draws its curves).
        ("--html-report", args.html_report.is_some()),
        ("--csv", args.csv.is_some()),
        ("--records", args.records.is_some()),
    ];
    if let Some((flag, _)) = per_run.iter().find(|f| f.1).filter(|_| args.experiment.is_experiment()) {
        return Err(BenchError::not_applicable(
            *flag,
            "single runs (its file, page or probe summary belongs to one run)",
            "this command line runs several (sweep, search or --num-runs)",
            "drop the flag (`servebench report` draws an experiment's saved document), or run the points one by one",
        ));
    }
    if args.plot_dataset_stats && args.experiment.is_experiment() {
        return Err(BenchError::config(
            "--plot-dataset-stats",
            "it plots the requests of one run, and this command line runs several (sweep, search or --num-runs)",
            "drop --plot-dataset-stats, or run the points one by one",
        ));
    }
    if args.num_prompts == 0 {
        return Err(BenchError::config(
            "--num-prompts",
            "must be at least 1",
            "pass --num-prompts 1 or more",
        ));
    }
    if args.max_concurrency == Some(0) {
        return Err(BenchError::config(
            "--max-concurrency",
            "must be at least 1",
            "omit it for no limit, or pass a positive number",
        ));
    }
    Ok(())
}

/// `--request-rate`, `--burstiness` and the ramp-up.
fn rate_config(args: &RunArgs) -> Result<RateConfig> {
    let request_rate = args.request_rate;
    if args.burstiness.is_nan() || args.burstiness <= 0.0 {
        return Err(BenchError::config(
            "--burstiness",
            format!("must be > 0 (got {})", args.burstiness),
            "pass a positive Gamma shape: 1.0 is Poisson, < 1 burstier, > 1 smoother",
        ));
    }
    let ramp_up = parse_ramp_up(args, request_rate)?;
    let rate = RateConfig { request_rate, burstiness: args.burstiness, ramp_up };
    rate.validate()?;
    Ok(rate)
}

/// The dataset: `other` (a named dataset), else the random one.
fn dataset_spec(args: &RunArgs, other: Option<DatasetRequest>) -> Result<DatasetSpec> {
    let ratio = args.random_range_ratio;
    let input_len = args.input_len.unwrap_or(args.random_input_len);
    let output_len = args.output_len.unwrap_or(args.random_output_len);
    if input_len == 0 {
        return Err(BenchError::config(
            dataset::length_flag(args.input_len.is_some(), "--input-len", "--random-input-len"),
            "must be at least 1",
            "pass a positive length",
        ));
    }
    if output_len == 0 {
        return Err(BenchError::config(
            dataset::length_flag(args.output_len.is_some(), "--output-len", "--random-output-len"),
            "must be at least 1",
            "pass a positive length",
        ));
    }
    Ok(match other {
        Some(d) => DatasetSpec::Dataset(d),
        None => DatasetSpec::Random(RandomDatasetConfig {
            num_prompts: args.num_prompts as usize,
            input_len: input_len as usize,
            output_len: output_len as usize,
            prefix_len: args.random_prefix_len as usize,
            range_ratio_input: ratio.input,
            range_ratio_output: ratio.output,
            prompt_token_ids: args.prompt_token_ids,
            seed: args.seed,
            ..RandomDatasetConfig::default()
        }),
    })
}

/// What every request carries: endpoint, key, headers, sampling and body fields.
fn target_config(args: &RunArgs, backend: BackendKind, api_key: Option<Secret>) -> Result<TargetConfig> {
    let mut extra_body = args.extra_body.clone().unwrap_or_default().0;
    // --use-beam-search and --chat-template-kwargs; an --extra-body key of the same name wins.
    for (k, v) in vllm_flags::body_fields(args, backend)? {
        extra_body.entry(k).or_insert(v);
    }
    Ok(TargetConfig {
        backend,
        endpoint: args.endpoint.clone(),
        model: String::new(),
        api_key: api_key.filter(|k| !k.expose().is_empty()),
        headers: args.header.iter().map(|h| (h.name.clone(), h.value.clone())).collect(),
        logprobs: args.logprobs,
        // vLLM forces ignore_eos for the random dataset so outputs have the requested length.
        // Pooling requests generate nothing: no ignore_eos.
        ignore_eos: (args.ignore_eos || args.dataset_name.kind == DatasetName::Random)
            && !backend.is_pooling(),
        sampling: sampling_map(args, backend),
        extra_body,
        batch_size: backend::batch_size(args, backend),
    })
}

/// Credentials in `--base-url` (`http://user:pw@host`) are sent as `Authorization: Basic`, as
/// vLLM's client (aiohttp) sends them; they were dropped without a word. Beside another
/// `Authorization` (`OPENAI_API_KEY`, `--header`) aiohttp refuses the request: so does this.
fn url_authorization(base_url: &str, target: &mut TargetConfig) -> Result<()> {
    let Some((user, password)) = servebench_core::secret::url_credentials(base_url) else { return Ok(()) };
    let header = target.headers.iter().any(|(n, _)| n.trim().eq_ignore_ascii_case("authorization"));
    // Anthropic's key goes in `x-api-key`, beside which a gateway's Basic credentials can go.
    let bearer = target.api_key.is_some() && target.backend != BackendKind::Native(Dialect::Anthropic);
    if bearer || header {
        let other = if header {
            "an --header Authorization"
        } else {
            "OPENAI_API_KEY (sent as Authorization: Bearer)"
        };
        return Err(BenchError::config(
            "--base-url",
            format!("has credentials (user:password@), and {other} is given too: only one Authorization can be sent"),
            "drop the credentials from --base-url, or the other Authorization",
        ));
    }
    let value = servebench_core::secret::basic_authorization(&user, &password);
    target.headers.push(("Authorization".to_owned(), Secret::new(value)));
    Ok(())
}

/// `--base-url`, else `http://HOST:PORT`.
fn base_url(args: &RunArgs) -> String {
    match &args.base_url {
        Some(u) => u.0.clone(),
        None => format!("http://{}:{}", bracket_ipv6(&args.host), args.port),
    }
}

/// `--request-id-prefix`, else `bench-<8 hex>-` (vLLM's default).
fn request_id_prefix(args: &RunArgs) -> String {
    args.request_id_prefix.clone().unwrap_or_else(|| {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("bench-{}-", &id[..8])
    })
}

/// How many prompts are verified with /tokenize: vLLM's Rust client verifies the synthetic
/// prompts of generation backends only. A dataset's text (sharegpt, sonnet, custom, …) is sent as
/// written, never rewritten toward the client tokenizer's count (docs/backends.md).
fn verify_prompts(args: &RunArgs, backend: BackendKind) -> usize {
    if args.skip_tokenize_verification
        || args.prompt_token_ids
        || !args.dataset_name.kind.has_synthetic_prompts()
        || backend.is_pooling()
        || backend == BackendKind::Audio
    {
        0
    } else {
        args.verify_prompts as usize
    }
}

/// The runner's shard configuration (`--num-shards`), checked against the other flags.
fn shard_config(args: &RunArgs, shards: &ShardSettings) -> Result<Option<ShardConfig>> {
    let shard = shards.runner_config(
        &args.backend.name,
        args.label.clone(),
        args.max_concurrency.map(|c| c as usize),
        args.records.is_some() || args.save_result || args.append_result,
    )?;
    // --num-prompts bounds the requests unless a --duration, stages or session trees set them.
    let w = &args.workload;
    let by_prompts =
        w.duration.is_none() && w.stages.is_none() && args.dataset_name.kind != DatasetName::Agentic;
    shards.check_requests(by_prompts.then_some(args.num_prompts))?;
    // As --max-concurrency: the prefill cap is the total over the shards, each taking its share;
    // below one slot per shard, a shard would get none (it was rounded up to 1 each, so the
    // union could exceed the cap).
    let prefill = args.workload.max_prefill_concurrency;
    if let (Some(s), Some(c)) = (&shard, prefill.filter(|&c| c > 0)) {
        if s.spec.concurrency_share(c).is_none() {
            return Err(BenchError::config(
                "--max-prefill-concurrency",
                format!(
                    "{c} is the total over {} shards: some shard would get no prefill slot",
                    s.spec.count
                ),
                "pass a --max-prefill-concurrency of at least --num-shards",
            ));
        }
    }
    if shard.is_some() && args.workload.multi_turn {
        // Turns of one conversation depend on each other's replies: they cannot be split
        // request by request (docs/scale-out.md).
        return Err(BenchError::config(
            "--num-shards",
            "multi-turn conversations cannot be sharded yet",
            "run --multi-turn in one process, or drop --num-shards",
        ));
    }
    Ok(shard)
}

/// The run's fields that are flags taken as they are (no check); `validate` sets the others.
fn plain_run_config(args: &RunArgs) -> RunConfig {
    RunConfig {
        base_url: String::new(),
        target: TargetConfig::default(),
        insecure: args.insecure,
        tls: args.network.tls_options(),
        proxy: args.network.proxy_options(),
        kernel_timestamps: !args.network.no_kernel_timestamps,
        time_slice: Default::default(),
        model: args.model.clone(),
        served_model_name: args.served_model_name.clone(),
        tokenizer: None,
        dataset: DatasetSpec::Random(RandomDatasetConfig::default()),
        max_model_len: args.max_model_len,
        rate: RateConfig::default(),
        max_concurrency: args.max_concurrency.map(|c| c as usize),
        seed: args.seed,
        num_warmups: args.num_warmups,
        ready_check_timeout: Duration::ZERO,
        request_id_prefix: String::new(),
        dry_run: args.dry_run,
        verify_prompts: 0,
        preconnect: args.preconnect as usize,
        request_timeout: None,
        stall_timeout: None,
        runaway_factor: args.runaway_stream_factor,
        max_response_bytes: args.max_response_bytes,
        keep_text: args.save_detailed,
        retokenize_output: args.tokens.retokenize_output,
        records_path: args.records.clone(),
        show_progress: !args.disable_tqdm,
        retries: args.retries,
        load: Default::default(),
        metrics_listen: None,
        max_records_in_memory: args.live.max_records_in_memory,
        shard: None,
        start_at_unix_us: None,
        on_interrupt: args.on_interrupt,
    }
}

/// SB101 for a `--result-filename` that names no file (`""`, a directory): it was found only
/// when the result was written, after the whole run (or merge).
pub fn check_result_filename(name: Option<&str>) -> Result<()> {
    match name {
        Some(f) if f.trim().is_empty() || f.ends_with('/') => Err(BenchError::config(
            "--result-filename",
            format!("{f:?} names no file"),
            "pass a file name such as run.json (the directory goes in --result-dir)",
        )),
        _ => Ok(()),
    }
}

/// What is reported and written: result files, percentiles, goodput, the failure limit.
fn output_config(args: &RunArgs, backend: BackendKind) -> Result<OutputConfig> {
    let percentile_metrics = match &args.percentile_metrics {
        Some(m) => m.0.clone(),
        None => parse_percentile_metrics(backend::default_percentile_metrics(backend))?,
    };
    let max_failure_rate = match args.max_failure_rate {
        Some(r) if !(0.0..=100.0).contains(&r) => {
            return Err(BenchError::config(
                "--max-failure-rate",
                format!("{r} is not a percentage in [0, 100]"),
                "pass a percentage such as 1 or 5",
            ))
        }
        other => other,
    };
    check_result_filename(args.result_filename.as_deref())?;
    Ok(OutputConfig {
        save_result: args.save_result,
        save_detailed: args.save_detailed,
        append_result: args.append_result,
        result_dir: args.result_dir.clone(),
        result_filename: args.result_filename.clone(),
        label: args.label.clone(),
        metadata: args.metadata.clone(),
        percentile_metrics,
        metric_percentiles: args.metric_percentiles.0.clone(),
        goodput: crate::cli::values::goodput_slos(&args.goodput),
        backend_name: args.backend.name.clone(),
        max_failure_rate,
        timeline_itl_ms: vllm_flags::itl_thresholds_ms(args),
        effective_config: None,
        otlp: otel::otlp_config(&args.otel, |k| std::env::var(k).ok())?,
    })
}

/// A flag of seconds: positive, and at most [`MAX_FLAG_SECONDS`] (about 31.7 years: every such
/// time is added to a clock reading, and `1e19` overflowed it).
pub(crate) fn seconds_flag(flag: &str, secs: f64) -> Result<Duration> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() && secs <= MAX_FLAG_SECONDS => Ok(d),
        _ if secs > 0.0 => Err(too_many_seconds(flag, secs)),
        _ => Err(BenchError::config(
            flag,
            format!("{secs} is not a positive number of seconds"),
            "pass seconds > 0",
        )),
    }
}

/// `--ready-check-timeout-sec`: 0 (no check) up to [`MAX_FLAG_SECONDS`].
fn ready_check_timeout(secs: u64) -> Result<Duration> {
    if secs as f64 > MAX_FLAG_SECONDS {
        return Err(too_many_seconds("--ready-check-timeout-sec", secs));
    }
    Ok(Duration::from_secs(secs))
}

/// SB101 for a time beyond [`MAX_FLAG_SECONDS`].
pub(crate) fn too_many_seconds(flag: &str, secs: impl std::fmt::Display) -> BenchError {
    BenchError::config(
        flag,
        format!("{secs} seconds is more than the longest time servebench waits ({MAX_FLAG_SECONDS:e} s, about 31 years)"),
        format!("pass at most {MAX_FLAG_SECONDS:e} seconds, or leave {flag} out for its default"),
    )
}

fn parse_ramp_up(args: &RunArgs, request_rate: f64) -> Result<Option<RampUp>> {
    let fix =
        "pass --ramp-up-strategy linear|exponential with both --ramp-up-start-rps and --ramp-up-end-rps";
    let Some(strategy) = args.ramp_up_strategy else {
        if args.ramp_up_start_rps.is_some() || args.ramp_up_end_rps.is_some() {
            return Err(BenchError::config(
                "--ramp-up-start-rps/--ramp-up-end-rps",
                "given without --ramp-up-strategy",
                fix,
            ));
        }
        return Ok(None);
    };
    let (Some(start), Some(end)) = (args.ramp_up_start_rps, args.ramp_up_end_rps) else {
        return Err(BenchError::config(
            "--ramp-up-strategy",
            "needs both --ramp-up-start-rps and --ramp-up-end-rps",
            fix,
        ));
    };
    if request_rate.is_finite() {
        return Err(BenchError::config(
            "--request-rate",
            "cannot be combined with a ramp-up (the ramp sets the rate)",
            "drop --request-rate when using --ramp-up-strategy",
        ));
    }
    if start > end {
        return Err(BenchError::config(
            "--ramp-up-start-rps",
            format!("start {start} is greater than end {end}"),
            "pass a start rate <= the end rate",
        ));
    }
    Ok(Some(RampUp { strategy, start_rps: start, end_rps: end }))
}

/// The sampling parameters sent with every request. Without `--temperature`, an OpenAI-style
/// generation backend (completions, chat, Responses, transcriptions) sends `temperature: 0.0`,
/// greedy decoding, as `vllm bench serve` does (an `--extra-body` temperature still wins);
/// native dialects leave it to the server (TGI refuses 0.0).
fn sampling_map(args: &RunArgs, backend: BackendKind) -> Map<String, Value> {
    use servebench_client::backend::ApiFamily;
    let mut m = Map::new();
    let greedy_by_default =
        matches!(backend.family(), ApiFamily::OpenAi | ApiFamily::Responses | ApiFamily::Audio);
    let mut put = |k: &str, v: Option<f64>| {
        if let Some(v) = v.and_then(serde_json::Number::from_f64) {
            m.insert(k.to_string(), Value::Number(v));
        }
    };
    put("temperature", args.temperature.or(greedy_by_default.then_some(0.0)));
    put("top_p", args.top_p);
    put("min_p", args.min_p);
    put("frequency_penalty", args.frequency_penalty);
    put("presence_penalty", args.presence_penalty);
    put("repetition_penalty", args.repetition_penalty);
    if let Some(k) = args.top_k {
        m.insert("top_k".into(), Value::from(k));
    }
    m
}

fn bracket_ipv6(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::Parser;

    #[test]
    fn timeouts_beyond_a_clock_reading_are_refused_not_overflowed() {
        for flag in ["--request-timeout", "--stall-timeout", "--duration"] {
            for secs in [1e19, 1e10] {
                let e = seconds_flag(flag, secs).unwrap_err();
                assert_eq!(e.code().as_str(), "SB101", "{flag} {secs}");
                assert!(e.to_string().contains("at most 1e9 seconds"), "{e}");
            }
            assert_eq!(seconds_flag(flag, 1e9).unwrap(), Duration::from_secs(1_000_000_000));
        }
        assert_eq!(ready_check_timeout(1_000_000_000).unwrap().as_secs(), 1_000_000_000);
        let e = ready_check_timeout(10_000_000_000_000_000_000).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("--ready-check-timeout-sec"), "{e}");
    }

    #[test]
    fn debug_of_the_run_configuration_never_shows_the_api_key_or_header_secrets() {
        let argv = ["servebench", "--header", "Authorization=Bearer sk-header-4242", "--header", "X-Trace=7"];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let v = validate(&cli.run, Some(Secret::new("sk-env-key-1337"))).unwrap();
        assert_eq!(v.run.target.api_key.as_ref().map(Secret::expose), Some("sk-env-key-1337"));
        let shown = format!("{v:?} {:#?} {:?}", v.run, v.run.target);
        for secret in ["sk-env-key-1337", "sk-header-4242"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("<redacted>"));
    }

    /// Pins the default temperature of `vllm bench serve`: without `--temperature` it sends
    /// `temperature: 0.0` (greedy) to OpenAI-style generation backends; servebench sent none, so
    /// the server sampled (vLLM's default 1.0 or the model's generation config) and outputs,
    /// throughput and speculative acceptance differed from vLLM's client on the same command.
    /// Native dialects (TGI refuses 0.0) and pooling backends get none; a given value is sent.
    #[test]
    fn without_temperature_openai_style_backends_send_greedy_as_vllm_does() {
        let temperature = |extra: &[&str]| {
            let argv = [&["servebench"][..], extra].concat();
            let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
            validate(&cli.run, None).unwrap().run.target.sampling.get("temperature").cloned()
        };
        for backend in ["vllm", "openai", "openai-chat", "openai-responses"] {
            assert_eq!(temperature(&["--backend", backend]), Some(serde_json::json!(0.0)), "{backend}");
        }
        assert_eq!(temperature(&["--temperature", "0.7"]), Some(serde_json::json!(0.7)));
        for backend in ["tgi", "openai-embeddings", "vllm-rerank"] {
            assert_eq!(temperature(&["--backend", backend]), None, "{backend}");
        }
    }

    /// Pins credentials in `--base-url`: sent as `Authorization: Basic` (vLLM's client, aiohttp,
    /// sends them; they were dropped and the gateway answered 401), never shown; refused beside
    /// another Authorization, as aiohttp refuses it.
    #[test]
    fn base_url_credentials_are_sent_as_basic_authorization() {
        let argv = ["servebench", "--base-url", "http://alice:s3cr%40t@gw:8000"];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let v = validate(&cli.run, None).unwrap();
        let auth: Vec<&str> = v
            .run
            .target
            .headers
            .iter()
            .filter(|(n, _)| n == "Authorization")
            .map(|(_, s)| s.expose())
            .collect();
        assert_eq!(auth, [servebench_core::secret::basic_authorization("alice", "s3cr@t").as_str()]);
        assert!(!format!("{v:?}").contains("s3cr"), "never shown");
        let e = validate(&cli.run, Some(Secret::new("sk-env-key-1337"))).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("only one Authorization"), "{e}");
        let argv = ["servebench", "--base-url", "http://u:p@gw:8000", "--header", "Authorization=Bearer x"];
        assert!(validate(&crate::cli::Cli::try_parse_from(argv).unwrap().run, None).is_err());
        // The redactor of the run hides the password a server echoes, decoded or not.
        let r = servebench_client::headers::redactor(&v.run.target);
        assert_eq!(r.redact("echo s3cr@t"), "echo <redacted>");
        // Anthropic's key is an x-api-key: Basic credentials can go beside it.
        let argv = ["servebench", "--base-url", "http://u:pw@gw:8000", "--backend", "anthropic"];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        assert!(validate(&cli.run, Some(Secret::new("sk-ant-key-1"))).is_ok());
        // A token as the user name is redacted too.
        let argv = ["servebench", "--base-url", "https://tok3nVALUE@gw"];
        let v = validate(&crate::cli::Cli::try_parse_from(argv).unwrap().run, None).unwrap();
        assert!(!format!("{v:?}").contains("tok3nVALUE"));
        let r = servebench_client::headers::redactor(&v.run.target);
        assert_eq!(r.redact("unknown user tok3nVALUE"), "unknown user <redacted>");
    }
}

//! The workload flags (trace, multi-turn, LoRA, duration, stages) validated into the `RunConfig`
//! (the flags: `crate::cli::workload`).

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};
use servebench_data::trace::{TraceConfig, TraceLabels};
use servebench_runner::config::load_options::LoraConfig;
use servebench_runner::config::load_options::MultiTurnConfig;
use servebench_runner::config::{DatasetSpec, RunConfig};
use servebench_runner::load::stages::is_closed_loop;
use servebench_runner::LoadOptions;
use std::time::Duration;

/// Applies the workload flags to `run` (trace dataset, load options). Called after the base
/// configuration is built.
pub fn apply(args: &RunArgs, backend: BackendKind, run: &mut RunConfig) -> Result<()> {
    super::agentic::refuse_other_loads(args, run)?;
    if args.is_trace() {
        check_self_timed(args)?;
        run.dataset = DatasetSpec::TimedTrace(trace_config(args, backend)?);
        // Token-id prompts: nothing to verify with /tokenize.
        run.verify_prompts = 0;
    } else if args.workload.self_timed || args.workload.no_self_timed {
        return Err(BenchError::config(
            "--self-timed",
            "only applies to --dataset-name timed_trace",
            "drop the flag, or replay a trace with --dataset-name timed_trace",
        ));
    }
    let mut load = LoadOptions::default();
    let w = &args.workload;
    if !w.lora_modules.is_empty() {
        let lora = LoraConfig { modules: w.lora_modules.clone(), assignment: w.lora_assignment };
        lora.validate()?;
        load.lora = Some(lora);
    }
    if w.multi_turn {
        load.multi_turn = Some(multi_turn_config(args, backend, run)?);
        // As vLLM: ignore_eos is forced for the random dataset only outside multi-turn; the
        // history is built from user messages, so /tokenize verification does not apply.
        run.target.ignore_eos = args.ignore_eos;
        run.verify_prompts = 0;
    }
    if let Some(s) = &w.stages {
        check_stages(args)?;
        load.stages = s.0.clone();
        if is_closed_loop(&load.stages) {
            check_concurrency_stages(run)?;
        } else if run.rate.request_rate.is_finite() {
            // The stages' rates were sent, while the result, its file name and the console
            // said --request-rate.
            return Err(BenchError::config(
                "--request-rate",
                "rate stages (--stages RATE:SECONDS,...) set the rate of each stage",
                "drop --request-rate (each stage's rate is in --stages)",
            ));
        }
    }
    if let Some(secs) = w.duration {
        load.duration = Some(duration(args, run, &load, secs)?);
    }
    load.cancel_at_end = w.on_duration_end.0;
    client_controls(args, run, &mut load)?;
    super::agentic::apply(args, backend, run, &mut load)?;
    // After every load option (session trees included): early stop depends on the load's shape.
    load.early_stop = crate::config::early_stop::options(args, &load)?;
    run.load = load;
    // Before anything is built: the schedule of a --duration/--stages run is drawn in memory.
    let flag = if run.load.stages.is_empty() { "--duration" } else { "--stages" };
    servebench_runner::load::stages::check_planned_requests(&run.planned_stages(), flag)
}

/// `--max-prefill-concurrency` (SB122, SB123) and cancellation by design (SB124).
fn client_controls(args: &RunArgs, run: &RunConfig, load: &mut LoadOptions) -> Result<()> {
    let w = &args.workload;
    if let Some(n) = w.max_prefill_concurrency {
        let streams = servebench_client::body::BodyTemplate::new(run.target.backend, &run.target)?.streams();
        if !streams {
            return Err(BenchError::PrefillCapNeedsStream { backend: args.backend.name.clone() });
        }
        if let Some(c) = run.max_concurrency.filter(|&c| n > c) {
            return Err(BenchError::PrefillCapAboveConcurrency { prefill: n, concurrency: c });
        }
        load.max_prefill_concurrency = Some(n);
    }
    load.cancellation = match (w.request_cancellation_rate, w.request_cancellation_delay) {
        (Some(rate), Some(delay)) => Some((rate, delay)),
        (None, None) => None,
        (Some(_), None) => {
            return Err(BenchError::CancellationIncomplete {
                given: "--request-cancellation-rate".into(),
                missing: "--request-cancellation-delay".into(),
            })
        }
        (None, Some(_)) => {
            return Err(BenchError::CancellationIncomplete {
                given: "--request-cancellation-delay".into(),
                missing: "--request-cancellation-rate".into(),
            })
        }
    };
    Ok(())
}

/// `--request-cancellation-rate` below 1: it is a percent (AIPerf's unit), so 0.5 cancels one
/// request in 200 — almost surely none of a short run. A warning naming the likely intent
/// (the neighbouring `--max-error-rate` takes a fraction).
pub fn cancellation_rate_warning(rate: Option<f64>) -> Option<String> {
    let r = rate.filter(|r| *r < 1.0)?;
    Some(format!(
        "warning: --request-cancellation-rate is a percent: {r} means {r} % of the requests (about 1 in {}); \
         did you mean {}?",
        (100.0 / r).round(),
        (r * 100.0 * 1e6).round() / 1e6
    ))
}

/// `--dataset-name timed_trace`: the trace file and its flags.
fn trace_config(args: &RunArgs, backend: BackendKind) -> Result<TraceConfig> {
    let w = &args.workload;
    let path = args.dataset.dataset_path.clone().ok_or_else(|| {
        BenchError::config(
            "--dataset-path",
            "timed_trace needs a trace file",
            "pass --dataset-path trace.jsonl",
        )
    })?;
    if backend != BackendKind::Completions {
        return Err(BenchError::config(
            "--backend",
            "trace replay sends token-id prompts, which need the completions API",
            "use --backend openai (or vllm)",
        ));
    }
    if w.timed_trace_chunk_hash_size == 0 {
        return Err(BenchError::config(
            "--timed-trace-chunk-hash-size",
            "must be at least 1",
            "pass 16, or the trace's block size",
        ));
    }
    let m = w.timed_trace_sec_multiplier;
    if !m.is_finite() || m <= 0.0 {
        return Err(BenchError::config(
            "--timed-trace-sec-multiplier",
            format!("{m} is not > 0"),
            "pass a positive factor, e.g. 0.5",
        ));
    }
    Ok(TraceConfig {
        path,
        labels: TraceLabels {
            timestamp: w.timed_trace_label_timestamp.clone(),
            input_length: w.timed_trace_label_input_length.clone(),
            output_length: w.timed_trace_label_output_length.clone(),
            hash_ids: w.timed_trace_label_hash_ids.clone(),
        },
        chunk_size: w.timed_trace_chunk_hash_size,
        sec_multiplier: m,
        num_prompts: args.num_prompts as usize,
        seed: args.seed,
        max_model_len: args.max_model_len,
        self_timed: !w.no_self_timed,
        // In replay time: rows due after the run's end are not sent (nor bounded).
        replay_end_ms: w.duration.map(|d| d * 1000.0),
    })
}

/// A self-timed trace sends on its timestamps: a rate experiment's rates would be ignored
/// (every point the same replay, labelled by rate, and a search "concluding" on it).
fn check_self_timed(args: &RunArgs) -> Result<()> {
    if args.workload.no_self_timed {
        return Ok(());
    }
    match args.experiment.rate_flag() {
        Some(flag) => Err(BenchError::FlagCombination {
            first: flag.into(),
            second: "--dataset-name timed_trace".into(),
            why: "a self-timed trace sends on its own timestamps, so each point's rate would be ignored"
                .into(),
            fix: format!("add --no-self-timed to send the trace's rows at each point's rate, or drop {flag}"),
        }),
        None => Ok(()),
    }
}

/// `--multi-turn`: conversations over the chat API, synthetic or from a ShareGPT file.
fn multi_turn_config(args: &RunArgs, backend: BackendKind, run: &RunConfig) -> Result<MultiTurnConfig> {
    let w = &args.workload;
    // Token-id conversations (completions API): each turn's prompt is the conversation so far
    // as token ids (servebench_runner::load::session_tokens).
    let token_ids = backend == BackendKind::Completions && args.prompt_token_ids;
    if backend != BackendKind::Chat && !token_ids {
        return Err(BenchError::config(
            "--multi-turn",
            "conversations need the chat API, or token-id prompts on the completions API",
            "use --backend openai-chat, or --backend openai --dataset-name random --prompt-token-ids",
        ));
    }
    if token_ids {
        check_token_id_turns(args)?;
    }
    if args.is_trace() {
        return Err(BenchError::config(
            "--multi-turn",
            "cannot replay a trace",
            "drop --multi-turn or use another dataset",
        ));
    }
    let sharegpt_path = multi_turn_sharegpt_path(args)?;
    let d = w.multi_turn_delay_ms;
    if !d.is_finite() || d < 0.0 {
        return Err(BenchError::config(
            "--multi-turn-delay-ms",
            format!("{d} is not >= 0"),
            "pass milliseconds >= 0",
        ));
    }
    if w.multi_turn_concurrency == Some(0) {
        return Err(BenchError::config(
            "--multi-turn-concurrency",
            "must be at least 1",
            "pass a positive number",
        ));
    }
    let mt = MultiTurnConfig {
        num_turns: w.multi_turn_num_turns,
        min_turns: w.multi_turn_min_turns,
        max_turns: w.multi_turn_max_turns,
        concurrency: w.multi_turn_concurrency.map(|c| c as usize),
        delay: Duration::from_secs_f64(d / 1000.0),
        per_turn_input_len: w.per_turn_input_len,
        prefix_global_ratio: w.multi_turn_prefix_global_ratio,
        prefix_conversation_ratio: w.multi_turn_prefix_conversation_ratio,
        sharegpt_path,
    };
    mt.validate()?;
    if run.shard.is_some() {
        return Err(BenchError::config(
            "--multi-turn",
            "conversations cannot be split across shards yet",
            "run multi-turn benchmarks unsharded",
        ));
    }
    Ok(mt)
}

/// Token-id conversations are synthetic turns of the random dataset, each the whole conversation
/// so far: ShareGPT's text and the text prefix-sharing mode have no token-id form.
fn check_token_id_turns(args: &RunArgs) -> Result<()> {
    let w = &args.workload;
    if args.dataset_name.kind != DatasetName::Random {
        return Err(BenchError::config(
            "--prompt-token-ids",
            format!(
                "multi-turn conversations on token ids are synthetic (--dataset-name random), not {}",
                args.dataset_name
            ),
            "use --dataset-name random, or --backend openai-chat for ShareGPT conversations",
        ));
    }
    for (flag, r) in [
        ("--multi-turn-prefix-global-ratio", w.multi_turn_prefix_global_ratio),
        ("--multi-turn-prefix-conversation-ratio", w.multi_turn_prefix_conversation_ratio),
    ] {
        if r != 0.0 {
            return Err(BenchError::config(
                flag,
                "the prefix-sharing mode sends text turns alone; token-id turns carry their whole conversation",
                "drop it (with --prompt-token-ids, --prefix-cache-hit-rate sets the shared share), or use --backend openai-chat",
            ));
        }
    }
    Ok(())
}

/// The ShareGPT file of multi-turn conversations (None: synthetic turns).
fn multi_turn_sharegpt_path(args: &RunArgs) -> Result<Option<std::path::PathBuf>> {
    match args.dataset_name.kind {
        DatasetName::Random => Ok(None),
        DatasetName::Sharegpt => args.dataset.dataset_path.clone().map(Some).ok_or_else(|| {
            BenchError::config(
                "--dataset-path",
                "multi-turn ShareGPT needs a local file",
                "pass --dataset-path conversations.json",
            )
        }),
        _ => Err(BenchError::config(
            "--multi-turn",
            format!("does not support the {} dataset", args.dataset_name),
            "use --dataset-name random (synthetic turns) or sharegpt",
        )),
    }
}

/// `--stages` sets the arrivals itself: not with multi-turn, a trace or a ramp-up.
fn check_stages(args: &RunArgs) -> Result<()> {
    if args.workload.multi_turn || args.is_trace() {
        return Err(BenchError::config(
            "--stages",
            "sets the arrivals itself",
            "drop --stages with --multi-turn or a trace",
        ));
    }
    if args.ramp_up_strategy.is_some() {
        return Err(BenchError::config(
            "--stages",
            "cannot be combined with a ramp-up",
            "drop --ramp-up-strategy",
        ));
    }
    // A sweep or search sets each point's rate or concurrency; stages would replace it (every
    // point ran the same stages under its own label).
    if let Some(flag) = args.experiment.point_flag() {
        return Err(BenchError::FlagCombination {
            first: "--stages".into(),
            second: flag.into(),
            why: "the stages set the load over time, and each point of the experiment sets its own".into(),
            fix: format!("drop --stages, or {flag} (--num-runs repeats a staged run)"),
        });
    }
    Ok(())
}

/// `--duration SECONDS`: positive, and bounding a load that does not send everything at once.
fn duration(args: &RunArgs, run: &RunConfig, load: &LoadOptions, secs: f64) -> Result<Duration> {
    let d = super::seconds_flag("--duration", secs)?;
    // First: a ramp-up leaves the rate infinite, and the fix below (--max-concurrency) would
    // only lead to this refusal.
    if run.rate.ramp_up.is_some() {
        return Err(BenchError::config(
            "--duration",
            "cannot be combined with a ramp-up",
            "drop --ramp-up-strategy",
        ));
    }
    if load.stages.is_empty()
        && !args.workload.multi_turn
        && !args.is_trace()
        && !run.rate.request_rate.is_finite()
        && run.max_concurrency.is_none()
        && !args.experiment.every_point_is_paced()
    {
        return Err(BenchError::config(
            "--duration",
            "with an infinite --request-rate needs --max-concurrency (else every request is sent at once)",
            "pass --request-rate R, or --max-concurrency C (with enough --num-prompts to last), or --stages",
        ));
    }
    Ok(d)
}

/// Concurrency stages (`--stages c=N:SECONDS`) are a closed loop that sets the concurrency.
fn check_concurrency_stages(run: &RunConfig) -> Result<()> {
    if run.max_concurrency.is_some() {
        return Err(BenchError::config(
            "--max-concurrency",
            "concurrency stages (--stages c=N:SECONDS) set the concurrency of each stage",
            "drop --max-concurrency",
        ));
    }
    if run.rate.request_rate.is_finite() {
        return Err(BenchError::config(
            "--request-rate",
            "concurrency stages (--stages c=N:SECONDS) are a closed loop: a request is sent whenever one ends",
            "drop --request-rate, or use rate stages (--stages RATE:SECONDS,...)",
        ));
    }
    if run.shard.is_some() {
        return Err(BenchError::config(
            "--num-shards",
            "concurrency stages (--stages c=N:SECONDS) cannot be sharded yet",
            "run them in one process, or use rate stages (--stages RATE:SECONDS,...)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::cancellation_rate_warning;
    use crate::cli::Cli;
    use clap::Parser;

    /// Parses and validates `args`; an error is its one-line message (a value refused at
    /// parse time must be a coded one).
    fn validate(args: &[&str]) -> Result<crate::config::Validated, String> {
        use std::error::Error as _;
        let cli = match Cli::try_parse_from(std::iter::once("servebench").chain(args.iter().copied())) {
            Ok(cli) => cli,
            Err(e) => {
                let source = e.source().and_then(|s| s.downcast_ref::<servebench_core::BenchError>());
                return Err(source
                    .map(|b| b.user_line())
                    .unwrap_or_else(|| panic!("not a coded value error: {e}")));
            }
        };
        crate::config::validate(&cli.run, None).map_err(|e| e.user_line())
    }

    #[test]
    fn flags_become_load_options() {
        let v =
            validate(&["--backend", "openai-chat", "--multi-turn", "--multi-turn-delay-ms", "250"]).unwrap();
        let mt = v.run.load.multi_turn.unwrap();
        assert_eq!(mt.delay.as_millis(), 250);
        assert_eq!(mt.num_turns, 3);
        assert!(!v.run.target.ignore_eos, "not forced in multi-turn");
        let v = validate(&["--stages", "5:60,20:60", "--lora-modules", "a", "b"]).unwrap();
        assert_eq!(v.run.load.stages.len(), 2);
        assert_eq!(v.run.load.lora.unwrap().modules, vec!["a", "b"]);
        let v = validate(&["--stages", "c=8:60,c=32:30", "--duration", "70"]).unwrap();
        let info = servebench_runner::results::group_info(&v.run);
        let limits: Vec<_> = info.stages.iter().map(|s| (s.concurrency, s.seconds)).collect();
        assert_eq!(limits, vec![(Some(8), 60.0), (Some(32), 10.0)], "the duration cuts the last stage");
        let v = validate(&["--dataset-name", "timed-trace", "--dataset-path", "t.jsonl", "--no-self-timed"])
            .unwrap();
        match v.run.dataset {
            servebench_runner::DatasetSpec::TimedTrace(t) => assert!(!t.self_timed),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_combinations_are_refused() {
        for bad in [
            &["--multi-turn"][..],
            &["--dataset-name", "timed_trace"],
            &["--dataset-name", "timed_trace", "--dataset-path", "t", "--backend", "openai-chat"],
            &["--self-timed"],
            &["--duration", "5"],
            &["--request-rate", "5", "--duration", "0"],
            &["--stages", "5"],
            &["--stages", "c=0:10"],
            &["--stages", "5:10,c=4:10"],
            &["--stages", "c=4:10", "--max-concurrency", "4"],
            &["--stages", "c=4:10", "--request-rate", "5"],
            // Pins rate stages with --request-rate: the stages' rates were sent while the
            // result said request_rate 5.0 (and the file openai-5.0qps-…).
            &["--stages", "10:1,20:1", "--request-rate", "5"],
            &["--lora-modules", "a", "--lora-assignment", "zigzag"],
            &["--request-rate", "5", "--duration", "5", "--on-duration-end", "later"],
        ] {
            assert!(validate(bad).is_err(), "{bad:?}");
        }
    }

    /// Pins rate experiments over a self-timed trace: the trace's timestamps drove every point,
    /// so both points of a rate sweep were the same replay labelled by two rates. Refused
    /// (SB121) naming `--no-self-timed`, which makes the rates apply.
    #[test]
    fn rate_experiments_over_a_self_timed_trace_are_refused_naming_no_self_timed() {
        let trace = ["--dataset-name", "timed_trace", "--dataset-path", "t.jsonl"];
        for exp in [&["--sweep-request-rate", "1,5"][..], &["--find-max-rate"], &["--slo", "ttft_p99:500"]] {
            let e = validate(&[&trace[..], exp].concat()).unwrap_err();
            assert!(e.starts_with("error[SB121]") && e.contains(exp[0]), "{exp:?}: {e}");
            assert!(e.contains("add --no-self-timed"), "{e}");
            assert!(validate(&[&trace[..], exp, &["--no-self-timed"]].concat()).is_ok(), "{exp:?}");
        }
        // The points of a concurrency sweep or of --num-runs differ by what a trace keeps.
        assert!(validate(&[&trace[..], &["--sweep-max-concurrency", "1,2"]].concat()).is_ok());
        assert!(validate(&[&trace[..], &["--num-runs", "2"]].concat()).is_ok());
    }

    /// Pins the ramp-up refusal coming first: `--duration` with a ramp-up was told to add
    /// `--max-concurrency` (the ramp leaves the rate infinite), which then failed on the ramp.
    #[test]
    fn duration_with_a_ramp_up_names_the_ramp_up_first() {
        let ramp = ["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "5"];
        for extra in [&[][..], &["--max-concurrency", "4"]] {
            let args: Vec<&str> = ramp.iter().chain(extra).chain(&["--duration", "1"]).copied().collect();
            let e = validate(&args).unwrap_err();
            assert!(e.contains("cannot be combined with a ramp-up"), "{args:?}: {e}");
        }
    }

    /// Pins the planned-request bound: a schedule of a billion arrivals (or 1e308 per second,
    /// which overflowed) was drawn in memory and aborted the run; it is SB101 before anything.
    #[test]
    fn a_duration_or_stages_planning_over_1e8_requests_is_refused_up_front() {
        for (args, flag) in [
            (&["--duration", "10", "--request-rate", "1e8"][..], "--duration"),
            (&["--duration", "1e9", "--request-rate", "1000"], "--duration"),
            (&["--duration", "1", "--request-rate", "1e308"], "--duration"),
            (&["--stages", "1e308:1"], "--stages"),
            (&["--stages", "1e7:5,1e7:6"], "--stages"),
        ] {
            let e = validate(args).unwrap_err();
            assert!(e.starts_with(&format!("error[SB101]: invalid {flag}")), "{args:?}: {e}");
            assert!(e.contains("at most 1e8 requests"), "{e}");
        }
        assert!(validate(&["--stages", "1e7:5,1e7:5"]).is_ok());
        // A --duration shorter than the stages plans only what it lets run.
        assert!(validate(&["--stages", "1e7:5,1e7:60", "--duration", "10"]).is_ok());
    }

    #[test]
    fn cancellation_rate_below_one_percent_warns_with_the_percent_meant() {
        let w = cancellation_rate_warning(Some(0.5)).unwrap();
        assert_eq!(
            w,
            "warning: --request-cancellation-rate is a percent: 0.5 means 0.5 % of the requests (about 1 in 200); \
             did you mean 50?"
        );
        assert!(cancellation_rate_warning(Some(0.1)).unwrap().ends_with("did you mean 10?"));
        assert_eq!(cancellation_rate_warning(Some(1.0)), None);
        assert_eq!(cancellation_rate_warning(Some(50.0)), None);
        assert_eq!(cancellation_rate_warning(None), None);
    }
}

//! `--dataset-name agentic` and the session-tree flags validated into the run's
//! `AgenticConfig` (docs/workloads.md §Session trees). Bad values are SB218; session-tree flags
//! without the dataset, or flags shaping another load beside it, are SB219.

use crate::cli::agentic_values::AgenticLoop;
use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};
use servebench_runner::config::load_options::AgenticConfig;
use servebench_runner::config::RunConfig;
use servebench_runner::LoadOptions;

/// The session-tree flags given on the command line (their names).
fn tree_flags_given(args: &RunArgs) -> Vec<&'static str> {
    let w = &args.workload;
    [
        ("--agentic-format", w.agentic_format.is_some()),
        ("--replay-speedup", w.replay_speedup.is_some()),
        ("--inter-turn-delay-cap-seconds", w.inter_turn_delay_cap_seconds.is_some()),
        ("--max-idle-gap-cap-seconds", w.max_idle_gap_cap_seconds.is_some()),
        ("--agentic-sessions", w.agentic_sessions.is_some()),
        ("--agentic-loop", w.agentic_loop.is_some()),
        ("--agentic-concurrency", w.agentic_concurrency.is_some()),
    ]
    .into_iter()
    .filter(|f| f.1)
    .map(|f| f.0)
    .collect()
}

/// Flags that shape another load, given beside `--dataset-name agentic`.
fn other_load_flags(args: &RunArgs, run: &RunConfig) -> Option<&'static str> {
    let w = &args.workload;
    [
        ("--request-rate", run.rate.request_rate.is_finite()),
        ("--ramp-up-strategy", run.rate.ramp_up.is_some()),
        ("--multi-turn", w.multi_turn),
        ("--stages", w.stages.is_some()),
        ("--duration", w.duration.is_some()),
        ("--lora-modules", !w.lora_modules.is_empty()),
        ("--num-shards", run.shard.is_some()),
        ("--max-prefill-concurrency", w.max_prefill_concurrency.is_some()),
        ("--request-cancellation-rate", w.request_cancellation_rate.is_some()),
        ("--request-cancellation-delay", w.request_cancellation_delay.is_some()),
    ]
    .into_iter()
    .find(|f| f.1)
    .map(|f| f.0)
    // Each point's rate was ignored: every point replayed the same sessions, labelled by rate.
    .or(args.experiment.rate_flag())
}

/// Refuses, for `--dataset-name agentic`, the flags that shape another load (SB219); called
/// before the other load flags are validated, so the first refusal names the conflict.
pub fn refuse_other_loads(args: &RunArgs, run: &RunConfig) -> Result<()> {
    if args.dataset_name.kind != DatasetName::Agentic {
        return Ok(());
    }
    match other_load_flags(args, run) {
        Some(flag) => Err(BenchError::AgenticFlagNotApplicable {
            flag: flag.into(),
            why:
                "cannot be combined with --dataset-name agentic (session trees set their own timing and load)"
                    .into(),
        }),
        None => Ok(()),
    }
}

/// Sets `load.agentic` for `--dataset-name agentic`; refuses session-tree flags for other
/// datasets.
pub fn apply(
    args: &RunArgs,
    backend: BackendKind,
    run: &mut RunConfig,
    load: &mut LoadOptions,
) -> Result<()> {
    let given = tree_flags_given(args);
    if args.dataset_name.kind != DatasetName::Agentic {
        return match given.first() {
            Some(flag) => Err(BenchError::AgenticFlagNotApplicable {
                flag: (*flag).into(),
                why: "only applies to --dataset-name agentic".into(),
            }),
            None => Ok(()),
        };
    }
    refuse_other_loads(args, run)?;
    servebench_runner::load::agentic::check_backend(backend)?;
    let path = args.dataset.dataset_path.clone().ok_or_else(|| BenchError::AgenticControlInvalid {
        flag: "--dataset-path".into(),
        problem: "--dataset-name agentic needs a session-tree trace file".into(),
        fix: "pass --dataset-path sessions.jsonl".into(),
    })?;
    let w = &args.workload;
    let closed = w.agentic_loop == Some(AgenticLoop::Closed);
    if w.agentic_concurrency.is_some() && !closed {
        return Err(BenchError::AgenticFlagNotApplicable {
            flag: "--agentic-concurrency".into(),
            why: "only applies to --agentic-loop closed".into(),
        });
    }
    if w.max_idle_gap_cap_seconds.is_some() && closed {
        return Err(BenchError::AgenticFlagNotApplicable {
            flag: "--max-idle-gap-cap-seconds".into(),
            why: "only applies to --agentic-loop open (a closed loop starts a session when one ends)".into(),
        });
    }
    let closed_loop = if closed {
        let n = w.agentic_concurrency.or(run.max_concurrency).ok_or_else(|| {
            BenchError::AgenticControlInvalid {
                flag: "--agentic-loop closed".into(),
                problem: "a closed loop needs the number of sessions running at once".into(),
                fix: "pass --agentic-concurrency N (or --max-concurrency N)".into(),
            }
        })?;
        Some(n)
    } else {
        None
    };
    load.agentic = Some(AgenticConfig {
        path,
        format: w.agentic_format,
        sessions: w.agentic_sessions,
        speedup: w.replay_speedup.unwrap_or(1.0),
        max_idle: w.inter_turn_delay_cap_seconds,
        start_gap_cap: w.max_idle_gap_cap_seconds,
        closed_loop,
        default_output_tokens: args.output_len.unwrap_or(args.random_output_len),
    });
    // Each turn's history is built from the replies received: nothing to verify with
    // /tokenize, and no forced ignore_eos (the dataset is not `random`).
    run.verify_prompts = 0;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use clap::Parser;
    use servebench_core::ErrorCode;

    fn validate(extra: &[&str]) -> Result<crate::config::Validated> {
        let mut argv =
            vec!["servebench", "--backend", "openai-chat", "--model", "m", "--tokenizer", "cl100k_base"];
        argv.extend_from_slice(extra);
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        crate::config::validate(&cli.run, None)
    }

    #[test]
    fn agentic_flags_become_the_session_tree_config() {
        let v = validate(&[
            "--dataset-name",
            "agentic",
            "--dataset-path",
            "t.jsonl",
            "--agentic-format",
            "dag",
            "--replay-speedup",
            "4",
            "--inter-turn-delay-cap-seconds",
            "1.5",
            "--agentic-sessions",
            "3",
            "--agentic-loop",
            "closed",
            "--max-concurrency",
            "5",
        ])
        .unwrap();
        let a = v.run.load.agentic.unwrap();
        assert_eq!(a.format, Some(servebench_data::agentic::AgenticFormat::Dag));
        assert_eq!((a.speedup, a.sessions, a.closed_loop), (4.0, Some(3), Some(5)));
        assert_eq!(a.max_idle, Some(std::time::Duration::from_millis(1500)));
        let v = validate(&[
            "--dataset-name",
            "agentic",
            "--dataset-path",
            "t.jsonl",
            "--max-idle-gap-cap-seconds",
            "2.5",
        ])
        .unwrap();
        assert_eq!(v.run.load.agentic.unwrap().start_gap_cap, Some(std::time::Duration::from_millis(2500)));
        let v = validate(&["--dataset-name", "agentic", "--dataset-path", "t.jsonl"]).unwrap();
        let a = v.run.load.agentic.unwrap();
        assert_eq!((a.format, a.speedup, a.closed_loop, a.max_idle), (None, 1.0, None, None));
    }

    #[test]
    fn bad_agentic_flag_values_are_refused_at_parse_time_with_sb218() {
        use std::error::Error as _;
        for (flag, value) in [
            ("--replay-speedup", "0"),
            ("--replay-speedup", "nan"),
            ("--inter-turn-delay-cap-seconds", "-1"),
            ("--max-idle-gap-cap-seconds", "0"),
            ("--max-idle-gap-cap-seconds", "inf"),
            ("--agentic-sessions", "0"),
            ("--agentic-concurrency", "x"),
            ("--agentic-loop", "half"),
            ("--agentic-format", "csv"),
        ] {
            let e = crate::cli::Cli::try_parse_from(["servebench", flag, value]).unwrap_err();
            let b = e.source().and_then(|s| s.downcast_ref::<BenchError>()).unwrap();
            assert_eq!(b.code(), ErrorCode::AgenticControlInvalid, "{flag} {value}");
        }
    }

    #[test]
    fn misplaced_or_incomplete_agentic_flags_are_coded_errors() {
        let code = |extra: &[&str]| validate(extra).unwrap_err().code();
        fn with(more: &[&'static str]) -> Vec<&'static str> {
            [&["--dataset-name", "agentic", "--dataset-path", "t.jsonl"][..], more].concat()
        }
        assert_eq!(code(&["--replay-speedup", "2"]), ErrorCode::AgenticFlagNotApplicable);
        assert_eq!(code(&with(&["--request-rate", "5"])), ErrorCode::AgenticFlagNotApplicable);
        // Pins rate experiments over session trees: the rate was ignored, every point the same.
        for exp in [&["--sweep-request-rate", "1,5"][..], &["--find-max-rate"], &["--slo", "ttft_p99:500"]] {
            let e = validate(&with(exp)).unwrap_err();
            assert_eq!(e.code(), ErrorCode::AgenticFlagNotApplicable, "{exp:?}");
            assert!(e.user_line().contains(exp[0]), "{}", e.user_line());
        }
        assert!(validate(&with(&["--num-runs", "2"])).is_ok(), "repeating a replay is fine");
        assert_eq!(code(&with(&["--multi-turn"])), ErrorCode::AgenticFlagNotApplicable);
        assert_eq!(code(&with(&["--agentic-concurrency", "2"])), ErrorCode::AgenticFlagNotApplicable);
        assert_eq!(code(&with(&["--agentic-loop", "closed"])), ErrorCode::AgenticControlInvalid);
        let closed_gap =
            with(&["--agentic-loop", "closed", "--max-concurrency", "2", "--max-idle-gap-cap-seconds", "1"]);
        assert_eq!(code(&closed_gap), ErrorCode::AgenticFlagNotApplicable);
        assert_eq!(code(&["--max-idle-gap-cap-seconds", "1"]), ErrorCode::AgenticFlagNotApplicable);
        assert_eq!(code(&["--dataset-name", "agentic"]), ErrorCode::AgenticControlInvalid);
    }

    #[test]
    fn early_stop_on_session_trees_takes_error_limits_and_refuses_saturation_naming_the_trees() {
        let agentic = ["--dataset-name", "agentic", "--dataset-path", "t.jsonl", "--num-prompts", "5"];
        // The error window is not bounded by --num-prompts: the trace decides the turns.
        let v =
            validate(&[&agentic[..], &["--max-error-rate", "0.5", "--max-errors", "3"]].concat()).unwrap();
        let errors = v.run.load.early_stop.errors.unwrap();
        assert_eq!((errors.max_rate, errors.window, errors.max_errors), (Some(0.5), 30, Some(3)));
        assert!(v.run.load.agentic.is_some());
        let e = validate(&[&agentic[..], &["--detect-saturation"]].concat()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::SaturationNeedsSchedule);
        assert!(e.user_line().contains("--dataset-name agentic"), "{}", e.user_line());
    }
}

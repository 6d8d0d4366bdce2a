//! Flags that would be silently ignored. Refused where the run would then be taken for another
//! one: `--sim` with a server address (SB121), a `--sim-*` flag without `--sim` (SB101), a
//! rate or ramp-up beside a self-timed trace (SB121). Warned about (one line naming the flag)
//! where the result still says what ran: options of a dataset other than the one selected, and
//! `--request-rate`/`--max-concurrency` replaced by each point of a sweep or search. Only flags
//! given on the command line count (clap's `ValueSource`), never defaults.

use crate::cli::values::DatasetName as D;
use crate::cli::RunArgs;
use servebench_core::BenchError;
use std::collections::BTreeSet;

/// Ids (field names) of the flags given explicitly on the command line (not defaulted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExplicitFlags {
    given: BTreeSet<String>,
    /// Those given at their default value, as written (a config file of every default).
    at_default: BTreeSet<String>,
}

impl ExplicitFlags {
    /// The flags of `matches` (the run's flags) that came from the command line.
    pub fn of(matches: &clap::ArgMatches) -> Self {
        let given: BTreeSet<String> = matches
            .ids()
            .filter(|id| matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|id| id.as_str().to_owned())
            .collect();
        let run = <crate::cli::RunArgs as clap::Args>::augment_args(clap::Command::new("run"));
        let at_default = run
            .get_arguments()
            .filter(|a| given.contains(a.get_id().as_str()))
            .filter(|a| {
                let defaults = a.get_default_values();
                let raw: Vec<&std::ffi::OsStr> = matches
                    .try_get_raw(a.get_id().as_str())
                    .ok()
                    .flatten()
                    .map(Iterator::collect)
                    .unwrap_or_default();
                !defaults.is_empty()
                    && raw.len() == defaults.len()
                    && raw.iter().zip(defaults).all(|(r, d)| r == d)
            })
            .map(|a| a.get_id().as_str().to_owned())
            .collect();
        ExplicitFlags { given, at_default }
    }

    /// Whether the flag with field name `id` was given on the command line.
    pub fn given(&self, id: &str) -> bool {
        self.given.contains(id)
    }

    /// Whether the flag was given with a value other than its default.
    pub fn changed(&self, id: &str) -> bool {
        self.given(id) && !self.at_default.contains(id)
    }
}

fn flag(id: &str) -> String {
    format!("--{}", id.replace('_', "-"))
}

/// Dataset options and the `--dataset-name` values that read them (as this crate builds
/// them: cli/dataset.rs, config). A flag given with another dataset does nothing.
const DATASET_OPTIONS: &[(&str, &[D])] = &[
    (
        "dataset_path",
        &[
            D::Sharegpt,
            D::Burstgpt,
            D::Sonnet,
            D::Custom,
            D::CustomImage,
            D::CustomAudio,
            D::SpecBench,
            D::SpeedBench,
            D::Hf,
            D::Agentic,
        ],
    ),
    ("random_input_len", &[D::Random, D::RandomMm, D::RandomRerank]),
    // Session trees: the `max_tokens` of a dag turn without one.
    ("random_output_len", &[D::Random, D::RandomMm, D::Agentic]),
    ("random_prefix_len", &[D::Random, D::RandomMm]),
    ("random_range_ratio", &[D::Random, D::RandomMm, D::RandomRerank]),
    ("prompt_token_ids", &[D::Random, D::PrefixRepetition]),
    ("sharegpt_output_len", &[D::Sharegpt]),
    ("sonnet_input_len", &[D::Sonnet]),
    ("sonnet_output_len", &[D::Sonnet]),
    ("sonnet_prefix_len", &[D::Sonnet]),
    ("custom_output_len", &[D::Custom, D::CustomImage, D::CustomAudio]),
    ("prefix_repetition_prefix_len", &[D::PrefixRepetition]),
    ("prefix_repetition_suffix_len", &[D::PrefixRepetition]),
    ("prefix_repetition_num_prefixes", &[D::PrefixRepetition]),
    ("prefix_repetition_output_len", &[D::PrefixRepetition]),
    ("random_mm_base_items_per_request", &[D::RandomMm]),
    ("random_mm_num_mm_items_range_ratio", &[D::RandomMm]),
    ("random_mm_limit_mm_per_prompt", &[D::RandomMm]),
    ("random_mm_bucket_config", &[D::RandomMm]),
    ("random_batch_size", &[D::RandomRerank]),
    ("no_reranker", &[D::RandomRerank]),
    ("speed_bench_dataset_subset", &[D::SpeedBench]),
    ("speed_bench_category", &[D::SpeedBench]),
    ("speed_bench_output_len", &[D::SpeedBench]),
    ("speed_bench_max_input_len", &[D::SpeedBench]),
    ("hf_name", &[D::Hf]),
    ("hf_subset", &[D::Hf]),
    ("hf_split", &[D::Hf]),
    ("hf_output_len", &[D::Hf]),
    ("hf_text_column", &[D::Hf]),
];

/// Server-address flags that `--sim` would ignore.
const SERVER_ADDRESS: &[&str] = &["base_url", "host", "port"];

/// Refuses `--sim` with a server address (SB121), a changed `--sim-*` flag without `--sim`
/// (SB101), a rate or ramp-up beside a self-timed trace (SB121); returns one warning per flag
/// every experiment point replaces and per dataset option given for a dataset that does not
/// read it.
pub fn check(args: &RunArgs, explicit: &ExplicitFlags) -> Result<Vec<String>, BenchError> {
    let given = |id: &str| explicit.given(id);
    if args.sim {
        if let Some(id) = SERVER_ADDRESS.iter().find(|id| given(id)) {
            return Err(BenchError::FlagCombination {
                first: "--sim".into(),
                second: flag(id),
                why: "--sim sends every request to an embedded simulator, so the server address would be ignored"
                    .into(),
                fix: format!("drop --sim to benchmark that server, or drop {}", flag(id)),
            });
        }
    }
    // A simulator flag at its default changes nothing (a config file of every default).
    check_sim_flags(args, &|id: &str| explicit.changed(id))?;
    check_self_timed(args, &given)?;
    let mut warnings = replaced_by_points(args, &given);
    warnings.extend(without_their_feature(args, &|id: &str| explicit.changed(id)));
    // Multi-turn and trace replay read their own flags (cli/workload.rs).
    if args.workload.multi_turn || args.is_trace() {
        return Ok(warnings);
    }
    if args.dataset_name.kind == D::Agentic && given("num_prompts") {
        warnings.push(
            "warning: --num-prompts is ignored with --dataset-name agentic (every turn of the trace is sent; \
             sample sessions with --agentic-sessions N)"
                .to_owned(),
        );
    }
    warnings.extend(
        DATASET_OPTIONS
            .iter()
            .filter(|(id, users)| given(id) && !users.contains(&args.dataset_name.kind))
            .map(|(id, users)| {
                format!(
                    "warning: {} is ignored with --dataset-name {} (it applies to {})",
                    flag(id),
                    args.dataset_name,
                    users.iter().map(|u| u.id()).collect::<Vec<_>>().join(", ")
                )
            }),
    );
    Ok(warnings)
}

/// A `--sim-*` flag without `--sim` configures no simulator: it was ignored against
/// `--base-url` (a `servebench sim` process takes these flags itself).
fn check_sim_flags(args: &RunArgs, given: &impl Fn(&str) -> bool) -> Result<(), BenchError> {
    if args.sim {
        return Ok(());
    }
    let sim = <crate::cli::SimOptions as clap::Args>::augment_args(clap::Command::new("sim"));
    let given_id = sim.get_arguments().map(|a| a.get_id().as_str().to_owned()).find(|id| given(id));
    match given_id.as_deref() {
        Some(id) => Err(BenchError::config(
            flag(id),
            "configures the embedded simulator, and this run has none (no --sim)",
            format!(
                "add --sim to run against the embedded simulator, or drop {0} (a `servebench sim {0} …` process takes it)",
                flag(id)
            ),
        )),
        None => Ok(()),
    }
}

/// A self-timed trace sends on its timestamps: a `--request-rate` or a ramp-up beside it was
/// ignored, while the result (and its file name) said the rate.
fn check_self_timed(args: &RunArgs, given: &impl Fn(&str) -> bool) -> Result<(), BenchError> {
    if !args.is_trace() || args.workload.no_self_timed {
        return Ok(());
    }
    match ["request_rate", "ramp_up_strategy"].into_iter().find(|id| given(id)) {
        Some(id) => Err(BenchError::FlagCombination {
            first: flag(id),
            second: "--dataset-name timed_trace".into(),
            why: "a self-timed trace sends on its own timestamps, so the rate would be ignored".into(),
            fix: format!(
                "add --no-self-timed to send the trace's rows at {}, or drop {}",
                flag(id),
                flag(id)
            ),
        }),
        None => Ok(()),
    }
}

/// Flags of a feature the run does not use, given with a value other than their default (a
/// config file of every default warns of nothing): `--same-seed` without `--num-runs`, the
/// search bounds without a search, `--on-duration-end` without a `--duration` or `--stages`,
/// the multi-turn flags without `--multi-turn`, `--timed-trace-sec-multiplier` without a trace
/// replayed on its timestamps. Each did nothing without a word.
fn without_their_feature(args: &RunArgs, changed: &impl Fn(&str) -> bool) -> Vec<String> {
    let e = &args.experiment;
    let w = &args.workload;
    let search = e.find_max_rate || e.slo.is_some();
    let timed = args.is_trace() && !w.no_self_timed;
    let groups: [(&[&str], bool, &str); 5] = [
        (&["same_seed"], e.num_runs > 1, "--num-runs N (N > 1)"),
        (&["search_tolerance", "search_start_rate", "search_max_rate"], search, "--find-max-rate or --slo"),
        (&["on_duration_end"], w.duration.is_some() || w.stages.is_some(), "--duration or --stages"),
        (
            &[
                "multi_turn_num_turns",
                "multi_turn_min_turns",
                "multi_turn_max_turns",
                "multi_turn_concurrency",
                "multi_turn_delay_ms",
                "per_turn_input_len",
                "multi_turn_prefix_global_ratio",
                "multi_turn_prefix_conversation_ratio",
            ],
            w.multi_turn,
            "--multi-turn",
        ),
        (
            &["timed_trace_sec_multiplier"],
            timed,
            "a trace replayed on its timestamps (--dataset-name timed_trace)",
        ),
    ];
    groups
        .iter()
        .filter(|(_, used, _)| !used)
        .flat_map(|(ids, _, needs)| {
            ids.iter()
                .filter(|id| changed(id))
                .map(move |id| format!("warning: {} does nothing without {needs}; drop it", flag(id)))
        })
        .collect()
}

/// `--request-rate` with a rate sweep or search, `--max-concurrency` with a concurrency sweep:
/// each point runs at its own value (and is labelled by it), so the flag does nothing.
fn replaced_by_points(args: &RunArgs, given: &impl Fn(&str) -> bool) -> Vec<String> {
    let e = &args.experiment;
    let replaced = [
        ("request_rate", e.rate_flag(), "rate"),
        (
            "max_concurrency",
            e.sweep_max_concurrency.as_ref().map(|_| "--sweep-max-concurrency"),
            "concurrency",
        ),
    ];
    replaced
        .into_iter()
        .filter_map(|(id, by, what)| {
            let by = by.filter(|_| given(id))?;
            Some(format!(
                "warning: {} is ignored with {by} (each point runs at its own {what}); drop it",
                flag(id)
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn check_argv(argv: &[&str]) -> Result<Vec<String>, BenchError> {
        let mut full = vec!["servebench"];
        full.extend_from_slice(argv);
        let m = <crate::cli::Cli as clap::CommandFactory>::command().get_matches_from(&full);
        check(&crate::cli::Cli::parse_from(&full).run, &ExplicitFlags::of(&m))
    }

    /// Pins flags of a feature the run does not use being named: `--same-seed` without
    /// `--num-runs`, a search bound without a search, `--on-duration-end` without a duration,
    /// the multi-turn flags without `--multi-turn`, the trace multiplier without a trace — each
    /// did nothing without a word. At their defaults (a config file of every default) they stay
    /// silent, and with their feature they are used.
    #[test]
    fn flags_without_their_feature_are_named() {
        let warns = |argv: &[&str]| check_argv(argv).unwrap().join("\n");
        let w = warns(&[
            "--same-seed",
            "--search-tolerance",
            "0.1",
            "--on-duration-end",
            "cancel",
            "--multi-turn-num-turns",
            "5",
            "--timed-trace-sec-multiplier",
            "2",
        ]);
        for (f, needs) in [
            ("--same-seed", "--num-runs"),
            ("--search-tolerance", "--find-max-rate"),
            ("--on-duration-end", "--duration"),
            ("--multi-turn-num-turns", "--multi-turn"),
            ("--timed-trace-sec-multiplier", "timed_trace"),
        ] {
            assert!(
                w.contains(&format!("warning: {f} does nothing without")) && w.contains(needs),
                "{f}: {w}"
            );
        }
        assert!(warns(&["--multi-turn-num-turns", "3"]).is_empty(), "at its default");
        assert!(warns(&["--same-seed", "--num-runs", "3"]).is_empty());
        assert!(warns(&["--on-duration-end", "cancel", "--duration", "5", "--request-rate", "2"]).is_empty());
        assert!(!warns(&["--multi-turn", "--multi-turn-num-turns", "5", "--backend", "openai-chat"])
            .contains("does nothing"));
    }

    #[test]
    fn sim_with_a_server_address_is_refused_with_sb121() {
        for extra in [["--base-url", "http://10.0.0.1:8000"], ["--port", "9000"], ["--host", "10.0.0.1"]] {
            let mut argv = vec!["--sim"];
            argv.extend_from_slice(&extra);
            let e = check_argv(&argv).unwrap_err();
            assert_eq!(e.code(), servebench_core::ErrorCode::FlagCombination);
            assert!(e.user_line().contains(&format!("--sim cannot be combined with {}", extra[0])));
        }
        assert!(check_argv(&["--sim"]).unwrap().is_empty(), "defaults do not count");
        assert!(check_argv(&["--base-url", "http://10.0.0.1:8000"]).unwrap().is_empty());
    }

    /// Pins `--sim-*` flags without `--sim`: `--sim-ttft-ms 500`, `--sim-fault http_500=0.5` or
    /// `--sim-lora-modules a` against `--base-url` were ignored without a word.
    #[test]
    fn sim_flags_without_sim_are_refused_naming_sim() {
        let url = ["--base-url", "http://10.0.0.1:8000"];
        for extra in [
            &["--sim-ttft-ms", "500"][..],
            &["--sim-fault", "http_500=0.5"],
            &["--sim-lora-modules", "a"],
            &["--sim-tokenizer", "o200k_base"],
            &["--sim-tls"],
        ] {
            let e = check_argv(&[&url[..], extra].concat()).unwrap_err();
            assert_eq!(e.code().as_str(), "SB101", "{extra:?}");
            let line = e.user_line();
            assert!(line.contains(&format!("invalid {}", extra[0])) && line.contains("add --sim"), "{line}");
            assert!(check_argv(&[&["--sim"][..], extra].concat()).is_ok(), "{extra:?}");
        }
        assert!(check_argv(&url).unwrap().is_empty(), "defaults do not count");
        // Nor a flag written at its default (a config file of every default uncommented).
        assert!(check_argv(&[&url[..], &["--sim-ttft-ms", "50", "--sim-mode", "fixed"]].concat()).is_ok());
    }

    /// Pins a rate or a ramp-up beside a self-timed trace: the trace's timestamps drove the
    /// sends, while the result said `request_rate 5.0`. Refused naming `--no-self-timed`.
    #[test]
    fn a_rate_or_ramp_beside_a_self_timed_trace_is_refused_naming_no_self_timed() {
        let trace = ["--dataset-name", "timed_trace", "--dataset-path", "t.jsonl"];
        let ramp = ["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "5"];
        for (extra, first) in [
            (&["--request-rate", "5"][..], "--request-rate"),
            (&["--request-rate", "inf"], "--request-rate"),
            (&ramp, "--ramp-up-strategy"),
        ] {
            let e = check_argv(&[&trace[..], extra].concat()).unwrap_err();
            assert_eq!(e.code().as_str(), "SB121", "{extra:?}");
            let line = e.user_line();
            assert!(
                line.contains(&format!("{first} cannot be combined with --dataset-name timed_trace")),
                "{line}"
            );
            assert!(line.contains("add --no-self-timed"), "{line}");
            assert!(check_argv(&[&trace[..], extra, &["--no-self-timed"]].concat()).is_ok());
        }
        assert!(check_argv(&trace).unwrap().is_empty());
    }

    /// Pins sweeps and searches replacing `--request-rate` or `--max-concurrency` without a
    /// word: each point runs at its own value (and is labelled by it), so the flag is named as
    /// ignored.
    #[test]
    fn a_rate_or_concurrency_replaced_by_every_point_warns_naming_the_sweep() {
        let w = check_argv(&["--request-rate", "5", "--sweep-request-rate", "1,10"]).unwrap();
        assert_eq!(w, ["warning: --request-rate is ignored with --sweep-request-rate (each point runs at its own rate); drop it"]);
        for search in [&["--find-max-rate"][..], &["--slo", "ttft_p99:100"]] {
            let w = check_argv(&[&["--request-rate", "5"][..], search].concat()).unwrap();
            assert!(w.len() == 1 && w[0].contains(&format!("ignored with {}", search[0])), "{w:?}");
        }
        let w = check_argv(&["--max-concurrency", "4", "--sweep-max-concurrency", "1,2"]).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("warning: --max-concurrency is ignored with --sweep-max-concurrency"),
            "{}",
            w[0]
        );
        // Where the flag applies at every point, it is no warning.
        assert!(check_argv(&["--request-rate", "5", "--sweep-max-concurrency", "1,2"]).unwrap().is_empty());
        assert!(check_argv(&["--max-concurrency", "4", "--sweep-request-rate", "1,2"]).unwrap().is_empty());
        assert!(check_argv(&["--max-concurrency", "4", "--num-runs", "2"]).unwrap().is_empty());
    }

    #[test]
    fn options_of_another_dataset_warn_naming_the_flag() {
        let w = check_argv(&["--dataset-name", "random", "--dataset-path", "x.json"]).unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("--dataset-path is ignored with --dataset-name random"), "{}", w[0]);
        let w = check_argv(&[
            "--dataset-name",
            "sharegpt",
            "--sonnet-input-len",
            "10",
            "--random-input-len",
            "5",
        ])
        .unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        // Flags shared by several datasets are not flagged where they apply.
        assert!(check_argv(&["--dataset-name", "random-mm", "--random-input-len", "5"]).unwrap().is_empty());
        assert!(check_argv(&["--dataset-name", "sonnet", "--dataset-path", "s.txt"]).unwrap().is_empty());
        assert!(check_argv(&["--dataset-name", "random-rerank", "--random-range-ratio", "0.5"])
            .unwrap()
            .is_empty());
        // Session trees read --dataset-path and --random-output-len, not --num-prompts.
        let agentic = ["--dataset-name", "agentic", "--dataset-path", "t.jsonl", "--random-output-len", "9"];
        assert!(check_argv(&agentic).unwrap().is_empty());
        let w =
            check_argv(&[&agentic[..], &["--num-prompts", "5", "--random-input-len", "3"]].concat()).unwrap();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].contains("--num-prompts is ignored with --dataset-name agentic"), "{}", w[0]);
        // Defaults never warn.
        assert!(check_argv(&["--dataset-name", "sharegpt"]).unwrap().is_empty());
    }
}

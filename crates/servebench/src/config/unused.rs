//! Flags that would be silently ignored: `--sim` with a server address is refused (SB121);
//! options of a dataset other than the one selected get a one-line warning naming the flag.
//! Only flags given on the command line count (clap's `ValueSource`), never defaults.

use crate::cli::values::DatasetName as D;
use crate::cli::RunArgs;
use servebench_core::BenchError;
use std::collections::BTreeSet;

/// Ids (field names) of the flags given explicitly on the command line (not defaulted).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExplicitFlags(BTreeSet<String>);

impl ExplicitFlags {
    /// The flags of `matches` that came from the command line.
    pub fn of(matches: &clap::ArgMatches) -> Self {
        let ids = matches
            .ids()
            .filter(|id| matches.value_source(id.as_str()) == Some(clap::parser::ValueSource::CommandLine))
            .map(|id| id.as_str().to_owned())
            .collect();
        ExplicitFlags(ids)
    }

    /// Whether the flag with field name `id` was given on the command line.
    pub fn given(&self, id: &str) -> bool {
        self.0.contains(id)
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

/// Refuses `--sim` with a server address (SB121); returns one warning per dataset option given
/// for a dataset that does not read it.
pub fn check(args: &RunArgs, explicit: &ExplicitFlags) -> Result<Vec<String>, BenchError> {
    check_with(args, |id| explicit.given(id))
}

fn check_with(args: &RunArgs, given: impl Fn(&str) -> bool) -> Result<Vec<String>, BenchError> {
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
    // Multi-turn and trace replay read their own flags (cli/workload.rs).
    if args.workload.multi_turn || args.is_trace() {
        return Ok(Vec::new());
    }
    let mut warnings = Vec::new();
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

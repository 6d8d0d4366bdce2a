//! Pins our flags against every flag of Python `vllm bench serve` (vLLM 0.33.0), listed with
//! its default in `tests/data/vllm_serve_flags.tsv`.

use clap::CommandFactory;
use servebench::cli::{find_unsupported, normalize_underscores, Cli, NOT_SUPPORTED_YET};
use std::collections::BTreeMap;

/// Flags whose default intentionally differs from vLLM 0.33.0, with the reason.
const DEFAULT_DIFFERS: &[(&str, &str)] = &[
    // vLLM's default is /v1/completions whatever the backend (and errors for openai-chat
    // unless --endpoint is given); ours defaults to the backend's endpoint, which accepts every
    // command line vLLM accepts.
    ("--endpoint", "backend default"),
    // Random per run in vLLM too (bench-<8 hex>-); the TSV shows one sample.
    ("--request-id-prefix", "random"),
];

fn vllm_flags() -> BTreeMap<String, String> {
    let text = include_str!("data/vllm_serve_flags.tsv");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_once('\t'))
        .map(|(f, d)| (f.to_string(), d.to_string()))
        .collect()
}

fn our_flags() -> BTreeMap<String, Option<String>> {
    Cli::command()
        .get_arguments()
        .filter_map(|a| {
            let long = a.get_long()?;
            let default = a.get_default_values().first().map(|v| v.to_string_lossy().to_string());
            Some((format!("--{long}"), default))
        })
        .collect()
}

#[test]
fn every_vllm_flag_is_supported_or_explicitly_not_yet() {
    let ours = our_flags();
    let mut missing = Vec::new();
    for flag in vllm_flags().keys() {
        if !ours.contains_key(flag) && !NOT_SUPPORTED_YET.contains(&flag.as_str()) {
            missing.push(flag.clone());
        }
    }
    assert!(missing.is_empty(), "vLLM flags neither supported nor on the allowlist: {missing:?}");
}

#[test]
fn not_supported_list_is_not_stale() {
    let ours = our_flags();
    let vllm = vllm_flags();
    for flag in NOT_SUPPORTED_YET {
        assert!(!ours.contains_key(*flag), "{flag} is supported now: remove it from NOT_SUPPORTED_YET");
        assert!(vllm.contains_key(*flag), "{flag} is not a vLLM flag");
    }
}

fn python_default_as_ours(d: &str) -> Option<String> {
    match d {
        "None" | "False" => None,
        _ => Some(d.trim_matches('\'').to_string()),
    }
}

#[test]
fn defaults_match_vllm() {
    let ours = our_flags();
    for (flag, py_default) in vllm_flags() {
        let Some(our_default) = ours.get(&flag) else { continue };
        if let Some((_, why)) = DEFAULT_DIFFERS.iter().find(|(f, _)| *f == flag) {
            assert!(!why.is_empty());
            continue;
        }
        let expected = python_default_as_ours(&py_default);
        let same = match (&expected, our_default) {
            (None, None) => true,
            (Some(a), Some(b)) => match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(x), Ok(y)) => x == y,
                _ => a == b,
            },
            // Boolean flags have clap default "false".
            (None, Some(b)) => b == "false",
            (Some(_), None) => false,
        };
        assert!(same, "{flag}: vLLM default {py_default}, ours {our_default:?}");
    }
}

#[test]
fn underscore_spellings_are_accepted() {
    let argv = normalize_underscores(
        ["servebench", "--result_filename=x.json", "--num_prompts", "5", "--random_input_len", "7"]
            .map(String::from),
    );
    let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("underscore spellings parse");
    assert_eq!(cli.run.result_filename.as_deref(), Some("x.json"));
    assert_eq!(cli.run.num_prompts, 5);
    assert_eq!(cli.run.random_input_len, 7);
}

#[test]
fn unsupported_flags_are_recognised() {
    let argv = normalize_underscores(["servebench", "--plot_timeline"].map(String::from));
    assert_eq!(find_unsupported(&argv[1..]), Some("--plot-timeline"));
    let argv = normalize_underscores(["servebench", "--use-beam-search"].map(String::from));
    assert_eq!(find_unsupported(&argv[1..]), Some("--use-beam-search"));
    // A value that merely looks like a flag name is not a flag.
    assert_eq!(find_unsupported(&["--label".into(), "profile".into()]), None);
}

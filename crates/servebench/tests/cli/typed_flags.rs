//! Flag values typed at parse time (`cli/values.rs`): a bad value is refused by the parser,
//! before any check across flags and before any network, with its coded one-line error
//! (SB101, exit 2) naming the flag and the fix — never clap's uncoded "invalid value".

use crate::support::{bin, text};

/// Runs `args` and checks the one coded line: `error[SB101]`, the flag, a fix, exit code 2.
fn assert_refused(args: &[&str], flag: &str, detail: &str) {
    let out = bin().args(args).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.starts_with("error[SB101]"), "{args:?}: {stderr}");
    assert!(stderr.contains(flag) && stderr.contains(detail), "{args:?} should name {flag}: {stderr}");
    assert!(stderr.contains("fix:"), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn run_flags_with_a_bad_value_are_refused_at_parse_time_with_sb101() {
    let cases: &[(&[&str], &str, &str)] = &[
        (&["--dataset-name", "imagenet"], "--dataset-name", "unknown dataset 'imagenet'"),
        (&["--tokenizer-mode", "fastest"], "--tokenizer-mode", "unknown mode 'fastest'"),
        (&["--chat-template-kwargs", "{nope"], "--chat-template-kwargs", "not valid JSON"),
        (&["--chat-template-kwargs", "[1]"], "--chat-template-kwargs", "is not a JSON object"),
        (&["--timeline-itl-thresholds", "50,25"], "--timeline-itl-thresholds", "'50,25'"),
        (&["--sweep-max-concurrency", "1,x"], "--sweep-max-concurrency", "'x' is not a positive integer"),
        (&["--sweep-request-rate", "0"], "--sweep-request-rate", "'0' is not a positive number"),
        (&["--sweep-summary-percentiles", "inf"], "--sweep-summary-percentiles", "'inf'"),
        (
            &["--sweep-summary-percentiles", "99,1000"],
            "--sweep-summary-percentiles",
            "1000 is not a percentile",
        ),
        (&["--slo", "ttft_p101:5"], "--slo", "'ttft_p101:5' is not an SLO"),
        (&["--random-mm-limit-mm-per-prompt", "3"], "--random-mm-limit-mm-per-prompt", ""),
        (&["--random-mm-bucket-config", "(1,1,1)"], "--random-mm-bucket-config", ""),
        (&["--speed-bench-dataset-subset", "huge"], "--speed-bench-dataset-subset", "unknown subset 'huge'"),
        (&["--start-at", "soon"], "--start-at", "soon"),
        (&["--metrics-host", "localhost"], "--metrics-host", "'localhost' is not an IP address"),
        (&["--endpoint", "v1/completions"], "--endpoint", "'v1/completions' is not a path"),
        (&["--base-url", "ftp://x"], "--base-url", "'ftp://x' is not an http(s) URL"),
        (&["--base-url", "http://127.0.0.1:0"], "--base-url", "has port 0"),
        (&["--base-url", "http://[::1]:0/v1"], "--base-url", "has port 0"),
        (&["--goodput", "ttft:5", "itl:3"], "--goodput", "unknown SLO key 'itl'"),
        (&["--sim-fault", "reset=2"], "--sim-fault", "[0, 1]"),
        (&["--sim-preset", "a100"], "--sim-preset", "unknown preset 'a100'"),
        (&["--sim-reasoning-field", "thoughts"], "--sim-reasoning-field", "unknown field 'thoughts'"),
    ];
    for (args, flag, detail) in cases {
        assert_refused(args, flag, detail);
    }
}

#[test]
fn subcommand_flags_with_a_bad_value_are_refused_at_parse_time_with_sb101() {
    assert_refused(&["sim", "--host", "localhost"], "--host", "'localhost' is not an IP address");
    assert_refused(&["sim", "--sim-fault", "nope=0.1"], "--sim-fault", "nope");
    assert_refused(&["merge", "x.records.jsonl", "--goodput", "ttft"], "--goodput", "'ttft' is not KEY:MS");
    assert_refused(
        &["merge", "x.records.jsonl", "--metric-percentiles", "50,abc"],
        "--metric-percentiles",
        "",
    );
    assert_refused(
        &["merge", "x.records.jsonl", "--percentile-metrics", "ttft,nope"],
        "--percentile-metrics",
        "",
    );
    assert_refused(
        &["report", "x.records.jsonl", "--goodput", "e2el:-1"],
        "--goodput",
        "not a finite number of ms >= 0",
    );
}

#[test]
fn every_dataset_spelling_and_tokenizer_mode_of_vllm_parses() {
    use clap::Parser;
    use servebench::cli::Cli;
    for name in [
        "random",
        "random-mm",
        "random_mm",
        "random-rerank",
        "random_rerank",
        "sharegpt",
        "burstgpt",
        "sonnet",
        "custom",
        "custom_image",
        "custom-image",
        "custom_audio",
        "custom-audio",
        "prefix_repetition",
        "prefix-repetition",
        "spec_bench",
        "spec-bench",
        "speed_bench",
        "speed-bench",
        "hf",
        "timed_trace",
        "timed-trace",
    ] {
        let cli = Cli::try_parse_from(["servebench", "--dataset-name", name]).unwrap();
        assert_eq!(cli.run.dataset_name.name, name, "the user's spelling is kept");
    }
    for mode in ["auto", "hf", "slow", "mistral", "deepseek_v32", "custom"] {
        assert!(Cli::try_parse_from(["servebench", "--tokenizer-mode", mode]).is_ok(), "{mode}");
    }
}

/// Pins SB100 naming what is missing: clap lists the required arguments on the lines after
/// its first, and the message stopped at "not provided:; fix:".
#[test]
fn a_missing_required_argument_is_named() {
    let out = crate::support::bin().arg("merge").output().unwrap();
    let err = crate::support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with(
            "error[SB100]: the following required arguments were not provided: <SHARD_RECORDS>..."
        ),
        "{err}"
    );
    assert!(!err.contains(":;"), "{err}");
}

/// Pins an empty `--result-filename` refused before the run: the whole benchmark ran, a
/// hidden `./.records.jsonl` was written, and it failed at the end with "SB501: : No such file".
#[test]
fn an_empty_result_filename_is_refused_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::bin()
        .current_dir(dir.path())
        .args(["--sim", "--num-prompts", "2", "--save-result", "--result-filename", ""])
        .output()
        .unwrap();
    let err = crate::support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error[SB101]: invalid --result-filename: \"\" names no file"), "{err}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing written");
}

/// Pins `merge --result-filename ""` refused before merging, as a run refuses it.
#[test]
fn merge_refuses_an_empty_result_filename_up_front() {
    let out = crate::support::bin()
        .args(["merge", "no-such.records.jsonl", "--save-result", "--result-filename", ""])
        .output()
        .unwrap();
    let err = crate::support::text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.starts_with("error[SB101]: invalid --result-filename: \"\" names no file"), "{err}");
}

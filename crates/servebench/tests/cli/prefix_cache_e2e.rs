//! A controlled prefix-cache hit rate end to end against the engine simulator: the target is
//! observed on a roomy cache, a too-small cache makes the run warn, bust gives 0, and workloads
//! where the rate cannot be exact are SB210.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support::{bin, save_run_json, text, SimProcess};
use serde_json::Value;

/// Runs against the engine simulator with result saving; returns (stdout, stderr, result).
pub(crate) fn run(args: &[&str]) -> (String, String, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args(["--sim", "--sim-mode", "engine", "--sim-tokenizer", "cl100k_base", "--disable-tqdm"])
        .args(["--backend", "openai", "--prompt-token-ids", "--random-output-len", "4"])
        .args(save_run_json(dir.path()))
        .args(args)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    let json: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
    (stdout, stderr, json)
}

pub(crate) fn rate(pc: &Value, key: &str) -> f64 {
    pc[key].as_f64().unwrap_or_else(|| panic!("{key} in {pc}"))
}

#[test]
fn target_hit_rate_is_observed_on_a_roomy_cache() {
    let (stdout, stderr, json) =
        run(&["--num-prompts", "40", "--random-input-len", "320", "--prefix-cache-hit-rate", "0.7"]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "hit_rate");
    // 0.7 × 320 = 224 = 14 blocks exactly.
    assert_eq!(rate(pc, "constructed_hit_rate"), 0.7);
    assert_eq!(rate(pc, "observed_hit_rate"), 0.7, "{pc}");
    assert_eq!(rate(pc, "server_hit_rate"), 0.7, "{pc}");
    assert_eq!(pc["observed_requests"], 40);
    assert_eq!((pc["warmup_requests"].as_u64(), pc["warmup_completed"].as_u64()), (Some(1), Some(1)));
    // The priming request is in no count of the run.
    assert_eq!(json["completed"], 40);
    assert_eq!(json["cached_input_tokens"], 40 * 224);
    assert!(stdout.contains(" Prefix Cache "), "{stdout}");
    assert!(!stderr.contains("prefix cache: hit rate"), "{stderr}");
}

#[test]
fn server_counters_cover_exactly_the_measured_requests() {
    // All 40 at once: the baseline poll must be answered before the first of them is sent, and
    // after the priming request (224 tokens), or the prompt-token delta would differ.
    let (_, _, json) = run(&[
        "--num-prompts",
        "40",
        "--random-input-len",
        "320",
        "--prefix-cache-hit-rate",
        "0.7",
        "--request-rate",
        "inf",
    ]);
    let derived = &json["server_metrics"]["derived"];
    assert_eq!(derived["prompt_tokens"], 40.0 * 320.0, "{derived}");
    assert_eq!(derived["prefix_cache_hit_rate"], 0.7, "{derived}");
}

#[test]
fn too_small_a_cache_misses_and_warns() {
    // 15 blocks kept: each prompt's own 20 blocks evict the 14 shared ones before the next use.
    let (_, stderr, json) = run(&[
        "--num-prompts",
        "20",
        "--random-input-len",
        "320",
        "--prefix-cache-hit-rate",
        "0.7",
        "--max-concurrency",
        "1",
        "--sim-prefix-cache-blocks",
        "15",
    ]);
    let pc = &json["prefix_cache"];
    assert!(rate(pc, "observed_hit_rate") < 0.68, "{pc}");
    assert!(stderr.contains("prefix cache: hit rate"), "{stderr}");
    assert!(stderr.contains("evicted"), "{stderr}");
}

#[test]
fn bimodal_flags_give_their_product() {
    let (_, _, json) = run(&[
        "--num-prompts",
        "20",
        "--random-input-len",
        "320",
        "--random-cache-hit-fraction",
        "0.5",
        "--random-cache-ratio",
        "0.9",
    ]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "bimodal");
    // Warm prompts: floor(0.9 × 320 / 16) × 16 = 288; 10 of 20 warm → 0.45.
    assert_eq!(rate(pc, "constructed_hit_rate"), 0.45);
    assert_eq!(rate(pc, "observed_hit_rate"), 0.45, "{pc}");
}

#[test]
fn prefix_repetition_on_token_ids_primes_every_group_and_is_observed() {
    let (_, _, json) = run(&[
        "--dataset-name",
        "prefix_repetition",
        "--prefix-repetition-prefix-len",
        "200",
        "--prefix-repetition-suffix-len",
        "120",
        "--prefix-repetition-num-prefixes",
        "4",
        "--prefix-repetition-output-len",
        "4",
        "--num-prompts",
        "42",
    ]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "shared_prefix");
    // Target 200 / 320; built in floor(200 / 16) · 16 = 192 of 320 = 0.6.
    assert_eq!(rate(pc, "target_hit_rate"), 0.625);
    assert_eq!(rate(pc, "constructed_hit_rate"), 0.6);
    assert_eq!(rate(pc, "observed_hit_rate"), 0.6, "{pc}");
    assert_eq!(rate(pc, "server_hit_rate"), 0.6, "{pc}");
    assert_eq!((pc["warmup_requests"].as_u64(), pc["warmup_completed"].as_u64()), (Some(4), Some(4)));
    // 42 prompts in 4 groups: the remainder is dropped, as vLLM does.
    assert_eq!(json["completed"], 40);
}

#[test]
fn cache_bust_hits_nothing() {
    let (_, _, json) = run(&["--num-prompts", "10", "--random-input-len", "64", "--prefix-cache-bust"]);
    let pc = &json["prefix_cache"];
    assert_eq!(pc["mode"], "bust");
    assert_eq!(rate(pc, "observed_hit_rate"), 0.0);
    assert_eq!(pc["warmup_requests"], 0);
}

/// The same command twice (same `--seed`) against one engine simulator that keeps its cache
/// between the runs: the second run observes the rate it built in, not the whole prompts the
/// first run left cached (before the per-run block after the shared prefix, the rerun found
/// every prompt cached but its last token: an observed 0.997 for a target of 0.5).
#[test]
fn a_rerun_on_a_warm_server_observes_the_target_not_the_first_runs_prompts() {
    let sim =
        SimProcess::start(&["--sim-mode", "engine", "--sim-model", "pc", "--sim-tokenizer", "cl100k_base"]);
    let dir = tempfile::tempdir().unwrap();
    let observed = |name: &str| -> f64 {
        let out = bin()
            .args(["--base-url", &sim.url, "--model", "pc", "--tokenizer", "cl100k_base", "--disable-tqdm"])
            .args(["--backend", "openai", "--prompt-token-ids", "--random-output-len", "4"])
            .args(["--num-prompts", "20", "--random-input-len", "320", "--prefix-cache-hit-rate", "0.5"])
            .args(["--save-result", "--result-dir", dir.path().to_str().unwrap(), "--result-filename", name])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let json: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(name)).unwrap()).unwrap();
        let pc = &json["prefix_cache"];
        // 0.5 × 320 = 160 = 10 blocks exactly.
        assert_eq!(rate(pc, "constructed_hit_rate"), 0.5);
        assert_eq!(json["cached_input_tokens"], 20 * 160, "{name}: {pc}");
        rate(pc, "observed_hit_rate")
    };
    assert_eq!(observed("first.json"), 0.5);
    assert_eq!(observed("again.json"), 0.5);
}

pub(crate) fn refusal(args: &[&str]) -> String {
    let out = bin()
        .args(["--sim", "--sim-tokenizer", "cl100k_base", "--disable-tqdm"])
        .args(args)
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn workloads_that_cannot_be_exact_are_sb210() {
    let cases: &[&[&str]] = &[
        &["--prefix-cache-hit-rate", "0.5"],
        &[
            "--backend",
            "openai",
            "--prompt-token-ids",
            "--random-prefix-len",
            "32",
            "--prefix-cache-hit-rate",
            "0.5",
        ],
        &["--dataset-name", "prefix_repetition", "--prefix-cache-hit-rate", "0.5"],
        &[
            "--backend",
            "openai",
            "--dataset-name",
            "prefix_repetition",
            "--prompt-token-ids",
            "--prefix-cache-hit-rate",
            "0.5",
        ],
        &["--backend", "openai-chat", "--multi-turn", "--prefix-cache-bust"],
        &[
            "--backend",
            "openai",
            "--prompt-token-ids",
            "--prefix-cache-hit-rate",
            "0.5",
            "--prefix-cache-bust",
        ],
        &["--backend", "openai", "--prompt-token-ids", "--random-cache-hit-fraction", "0.5"],
        &["--backend", "openai", "--prompt-token-ids", "--prefix-cache-hit-rate", "1.5"],
    ];
    for args in cases {
        let stderr = refusal(args);
        assert!(stderr.contains("SB210"), "{args:?}: {stderr}");
    }
}

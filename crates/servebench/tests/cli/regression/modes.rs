//! Flag combinations of experiments and load modes (a seventh adversarial pass): each was
//! accepted and ran something else than it said, or mislabelled its result; each is now refused
//! before anything is sent, or the result says what ran.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

use crate::support::{bin, text, tokenizer};

/// A run against the embedded simulator: 10 short prompts, plus `extra`.
fn run(dir: &Path, extra: &[&str]) -> Output {
    super::short_sim_run(dir, "10", extra)
}

/// Asserts exit 2 with `code` on a line naming every one of `flags`, and no panic.
fn refused(out: &Output, code: &str, flags: &[&str]) {
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let line = err.lines().find(|l| l.starts_with("error[")).unwrap_or_default();
    assert!(line.starts_with(&format!("error[{code}]")), "{err}");
    for flag in flags {
        assert!(line.contains(flag), "{flag} not in {line}");
    }
    assert!(line.contains("fix: "), "{line}");
}

/// The one experiment document `dir` holds.
fn experiment_doc(dir: &Path) -> Value {
    let path = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "json"))
        .expect("an experiment document");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The experiments of the tester's report, by their flags.
const EXPERIMENTS: &[&[&str]] = &[
    &["--sweep-request-rate", "5,20"],
    &["--sweep-max-concurrency", "1,2"],
    &["--find-max-rate"],
    &["--slo", "ttft_p99:500"],
    &["--num-runs", "2"],
];

/// Pins `--start-at` with an experiment: every point after the first was anchored to the
/// (by then passed) start and sent as one burst, its validity `invalid`, and still picked as
/// the sweep's best. Refused (SB101) naming both flags.
#[test]
fn start_at_with_any_experiment_is_refused_naming_both_flags() {
    let dir = tempfile::tempdir().unwrap();
    let soon = (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 5)
        .to_string();
    for exp in EXPERIMENTS {
        let out = run(dir.path(), &[&["--start-at", soon.as_str()], *exp].concat());
        refused(&out, "SB101", &["--start-at", exp[0]]);
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was saved");
}

/// Pins sharded experiments: each shard ran the sweep or bisected on its own share, and an
/// experiment writes no per-point records for `merge`. Refused (SB101) as sharded multi-turn is.
#[test]
fn sharded_experiments_are_refused_naming_both_flags() {
    let dir = tempfile::tempdir().unwrap();
    for exp in EXPERIMENTS {
        let shard = ["--num-shards", "2", "--shard-index", "1", "--save-result"];
        refused(&run(dir.path(), &[&shard[..], *exp].concat()), "SB101", &["--num-shards", exp[0]]);
    }
}

/// Pins the best point of a sweep against a point invalid by a server-side rule (10 requests
/// for 20 slots: `too_few_requests`): still a candidate, no "Not a best candidate" line. A point
/// the client could not send as asked (the burst of a passed `--start-at`, now refused) is never
/// the best: unit test `only_client_side_rules_take_a_point_out_of_the_best`.
#[test]
fn a_sweep_weighs_a_point_invalid_by_the_server_side_for_its_best() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--sweep-max-concurrency", "1,20", "--save-result"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    // Invalid by a server-side rule (too few requests per slot): still a candidate, its figures
    // describe its load; only client-side rules take a point out (unit test
    // `only_client_side_rules_take_a_point_out_of_the_best`).
    assert!(!stdout.contains("Not a best candidate"), "{stdout}");
    assert!(stdout.contains("Best (request_throughput):"), "{stdout}");
    let doc = experiment_doc(dir.path());
    assert_eq!(doc["points"][1]["result"]["validity"]["verdict"], "invalid");
    assert!(doc["best"]["label"].is_string(), "{doc}");
}

/// Pins a sweep point whose send rate a `--max-prefill-concurrency` cap held down (1 slot,
/// 20,000 req/s asked, a few hundred sent): the cap, not the client, stands between schedule
/// and wire, so the point describes the server and stays a best candidate. It was taken for an
/// uncapped point the client could not send ("Not a best candidate: … send_rate"), as only
/// `--max-concurrency` counted as a cap.
#[test]
fn a_sweep_point_held_down_by_a_prefill_cap_is_a_best_candidate() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--sweep-request-rate", "20000", "--max-prefill-concurrency", "1", "--save-result"],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let doc = experiment_doc(dir.path());
    let rules = doc["points"][0]["result"]["validity"]["rules"].as_array().unwrap().clone();
    let send_rate = rules.iter().find(|r| r["id"] == "send_rate").unwrap_or_else(|| panic!("{rules:?}"));
    assert_eq!(send_rate["level"], "invalid", "{send_rate}");
    assert!(!stdout.contains("Not a best candidate"), "{stdout}");
    assert!(stdout.contains("Best (request_throughput):"), "{stdout}");
}

/// Pins an experiment document's default name with a label holding path separators: `--label
/// a/b` named a directory that did not exist and the sweep's document was lost after every
/// point ran (`../x` wrote outside the result directory). The label is a file-name part, as in
/// a single run's default name.
#[test]
fn an_experiments_default_name_makes_its_label_a_file_name_part() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--sweep-max-concurrency", "1", "--label", "a/../b", "--save-result"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().any(|n| n.starts_with("a_.._b-") && n.ends_with(".json")), "{names:?}");
    assert_eq!(experiment_doc(dir.path())["label"], "a/../b");
}

/// Pins flags accepted with no effect before anything is sent: rate stages with
/// `--request-rate` (the result said `request_rate 5.0`), a `--sim-*` flag without `--sim`
/// against a server (ignored), two sweeps (the rate sweep was dropped). `--request-rate` with a
/// rate sweep is a warning naming the flag: each point is labelled by its own rate.
#[test]
fn flags_without_effect_are_refused_or_named() {
    let dir = tempfile::tempdir().unwrap();
    let stages = run(dir.path(), &["--stages", "10:1,20:1", "--request-rate", "5", "--save-result"]);
    refused(&stages, "SB101", &["--request-rate", "--stages"]);
    let sweeps = run(dir.path(), &["--sweep-max-concurrency", "1,2", "--sweep-request-rate", "1,5"]);
    refused(&sweeps, "SB121", &["--sweep-max-concurrency", "--sweep-request-rate"]);
    let tok = tokenizer();
    let url = format!("http://127.0.0.1:{}", servebench_testkit::net::closed_port());
    for sim_flag in
        [&["--sim-ttft-ms", "500"][..], &["--sim-fault", "http_500=0.5"], &["--sim-lora-modules", "a"]]
    {
        let out = bin()
            .current_dir(dir.path())
            .args(["--base-url", &url, "--tokenizer", tok.to_str().unwrap(), "--num-prompts", "3"])
            .args(sim_flag)
            .output()
            .unwrap();
        refused(&out, "SB101", &[sim_flag[0], "--sim"]);
        assert!(!text(&out.stderr).contains("not ready"), "refused before any request");
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing was saved");
    let out = run(dir.path(), &["--request-rate", "50", "--sweep-request-rate", "100,200"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "warning: --request-rate is ignored with --sweep-request-rate (each point runs at its own rate)"
        ),
        "{stderr}"
    );
}

/// Pins the sweep summary of a `--duration` sweep: the table, its CSV and each point's entry said
/// `num_prompts 10` (the flag) for every point while the points' results said the requests each
/// had (4 and 17). They now agree with the point's result.
#[test]
fn a_duration_sweeps_summary_counts_the_requests_each_point_had() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--sweep-request-rate", "4,17", "--duration", "1", "--no-steady-state", "--save-result"];
    let out = run(dir.path(), &[&args[..], &["--result-filename", "d.json"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc = experiment_doc(dir.path());
    let csv = std::fs::read_to_string(dir.path().join("d.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let col = header.iter().position(|h| *h == "num_prompts").unwrap();
    let mut counts = Vec::new();
    for (i, line) in csv.lines().skip(1).enumerate() {
        let had = doc["points"][i]["result"]["num_prompts"].as_u64().unwrap();
        assert_eq!(doc["summary"][i]["num_prompts"].as_u64(), Some(had), "{doc}");
        assert_eq!(doc["points"][i]["num_prompts"].as_u64(), Some(had));
        assert_eq!(line.split(',').nth(col), Some(had.to_string().as_str()), "{csv}");
        counts.push(had);
    }
    assert!(counts.len() == 2 && counts[0] < counts[1], "{counts:?}");
}

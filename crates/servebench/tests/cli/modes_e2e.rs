//! Every mode says what happened: exit codes CI can trust, readiness as vLLM defines it,
//! interrupted runs, refused flag combinations and output paths (issue 15).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Output, Stdio};

use servebench_testkit::net::closed_port;

use crate::support::{bin, text, tokenizer};

/// A short run against the embedded simulator (fast fixed timing), results in `dir`.
pub(crate) fn sim(dir: &Path, extra: &[&str]) -> Output {
    let tok = tokenizer();
    let mut cmd = bin();
    cmd.current_dir(dir).args([
        "--sim",
        "--sim-ttft-ms",
        "2",
        "--sim-itl-ms",
        "1",
        "--sim-tokenizer",
        tok.to_str().unwrap(),
        "--num-prompts",
        "12",
        "--random-input-len",
        "16",
        "--random-output-len",
        "4",
        "--disable-tqdm",
    ]);
    cmd.args(extra).output().unwrap()
}

fn unreachable_run(extra: &[&str]) -> Output {
    let tok = tokenizer();
    let url = format!("http://127.0.0.1:{}", closed_port());
    let mut cmd = bin();
    cmd.args(["--base-url", &url, "--tokenizer", tok.to_str().unwrap(), "--num-prompts", "3"]);
    cmd.args(extra).output().unwrap()
}

#[test]
fn no_successful_request_exits_1_with_sb602_naming_the_model_and_writes_results() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(
        dir.path(),
        &["--model", "nosuch", "--sim-model", "served", "--save-result", "--result-filename", "r.json"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr:\n{err}");
    assert!(err.contains("error[SB602]: none of 12 requests succeeded"), "{err}");
    assert!(err.contains("`nosuch`") && err.contains("--lora-modules"), "{err}");
    assert!(dir.path().join("r.json").exists(), "the result is written before the error");

    // A LoRA adapter the server does not serve: the same, naming the adapter.
    let out = sim(dir.path(), &["--lora-modules", "zz"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[SB602]") && err.contains("`zz`"), "{err}");
}

#[test]
fn max_failure_rate_keeps_exit_3_when_nothing_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--model", "nosuch", "--sim-model", "served", "--max-failure-rate", "10"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("SB601"));
}

#[test]
fn sweep_point_without_success_stops_the_sweep_with_sb602_after_saving() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(
        dir.path(),
        &[
            "--model",
            "nosuch",
            "--sim-model",
            "served",
            "--sweep-max-concurrency",
            "1,2",
            "--save-result",
            "--result-filename",
            "s.json",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[SB602]: concurrency 1: none of 12 requests succeeded"), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
    assert_eq!(doc["points"].as_array().unwrap().len(), 1, "the sweep stops at the failing point");
}

#[test]
fn unreachable_server_without_readiness_check_is_sb315_from_the_first_call() {
    // The model is detected from /v1/models (the first call) or given (then the reachability
    // probe comes first): SB315 either way, never SB303 and one "fix:" only.
    for extra in [&[][..], &["--model", "m"][..], &["--model", "m", "--skip-tokenize-verification"][..]] {
        let out = unreachable_run(extra);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(err.contains("error[SB315]: cannot connect to 127.0.0.1:"), "{extra:?}: {err}");
        assert!(err.contains("connection refused"), "{err}");
        assert!(!err.contains("kept trying"), "no readiness check, no wait: {err}");
        assert_eq!(err.matches("fix:").count(), 1, "{err}");
    }
}

#[test]
fn readiness_wait_names_the_refusal_and_the_seconds_really_waited() {
    let out = unreachable_run(&["--ready-check-timeout-sec", "1"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[SB315]") && err.contains("connection refused"), "{err}");
    let secs: f64 = err.split("kept trying for ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 1.0, "it waits the whole timeout: {err}");
}

#[test]
fn default_ready_check_timeout_is_vllms_zero_no_check() {
    // Without the flag a server answering 503 is not waited for: the run goes ahead and ends
    // with SB602 (the old default waited 600 s).
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--sim-fault", "http_503=1"]);
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert!(!stdout.contains("Waiting for"), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("error[SB602]"), "{err}");
}

#[cfg(unix)]
#[test]
fn first_ctrl_c_ends_the_readiness_wait_at_once_with_130() {
    let tok = tokenizer();
    let url = format!("http://127.0.0.1:{}", closed_port());
    let mut child = bin()
        .args(["--base-url", &url, "--tokenizer", tok.to_str().unwrap(), "--model", "m"])
        .args(["--ready-check-timeout-sec", "600"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let waiting = lines.find(|l| l.as_ref().is_ok_and(|l| l.contains("Waiting for the server"))).unwrap();
    assert!(waiting.unwrap().contains("up to 600 s"));
    // The signal handler is installed before the wait begins; give its task a moment to run.
    std::thread::sleep(std::time::Duration::from_millis(300));
    servebench_testkit::cli::interrupt(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("Interrupted before the benchmark started"));
}

#[test]
fn sim_with_base_url_is_refused_with_exit_2_and_dataset_options_of_another_dataset_warn() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--base-url", "http://10.0.0.1:8000"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[SB121]: --sim cannot be combined with --base-url"), "{err}");

    let out = sim(dir.path(), &["--dataset-path", "prompts.jsonl", "--sonnet-input-len", "100"]);
    let stderr = text(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Warnings go to stderr, never into the result on stdout.
    assert!(!text(&out.stdout).contains("warning:"), "{}", text(&out.stdout));
    assert!(stderr.contains("warning: --dataset-path is ignored with --dataset-name random"), "{stderr}");
    assert!(stderr.contains("warning: --sonnet-input-len is ignored with --dataset-name random"), "{stderr}");
}

#[test]
fn records_over_the_dataset_file_is_refused_with_sb120_before_anything_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dataset = "{\"prompt\": \"hello there\", \"output_tokens\": 4}\n";
    std::fs::write(d.join("custom.jsonl"), dataset).unwrap();
    let cases: &[&[&str]] = &[
        &["--records", "custom.jsonl"],
        &["--records", "./sub/../custom.jsonl"],
        &["--csv", "out.x", "--html-report", "./out.x"],
        &["--save-result", "--result-filename", "r.json", "--records", "r.json"],
        &["--save-result", "--result-filename", "custom.jsonl"],
        // Pins the pages written beside the result: they replaced the records file or the CSV.
        &["--save-result", "--result-filename", "w.json", "--plot-timeline", "--records", "w.timeline.html"],
        &[
            "--save-result",
            "--result-filename",
            "z.json",
            "--plot-dataset-stats",
            "--csv",
            "z.dataset_stats.html",
        ],
        &[
            "--save-result",
            "--result-filename",
            "y.json",
            "--plot-timeline",
            "--html-report",
            "y.timeline.html",
        ],
    ];
    std::fs::create_dir(d.join("sub")).unwrap();
    for extra in cases {
        let mut argv = vec!["--dataset-name", "custom", "--dataset-path", "custom.jsonl"];
        argv.extend_from_slice(extra);
        let out = sim(d, &argv);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("error[SB120]"), "{extra:?}: {err}");
        assert_eq!(std::fs::read_to_string(d.join("custom.jsonl")).unwrap(), dataset, "{extra:?}");
        for written in ["out.x", "r.json", "w.json", "z.json", "y.json"] {
            assert!(!d.join(written).exists(), "{extra:?}: {written}");
        }
    }
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(d.join("custom.jsonl"), d.join("alias.jsonl")).unwrap();
        let out = sim(
            d,
            &["--dataset-name", "custom", "--dataset-path", "custom.jsonl", "--records", "alias.jsonl"],
        );
        assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
        assert_eq!(std::fs::read_to_string(d.join("custom.jsonl")).unwrap(), dataset);
    }
}

#[cfg(unix)]
#[test]
fn interrupted_run_says_so_and_counts_only_requests_sent() {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    // 4 streams of 200 tokens at 50 ms: the first four take 10 s, the other 16 wait.
    let mut child = bin()
        .current_dir(dir.path())
        .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--disable-tqdm", "--save-result"])
        .args(["--result-filename", "run.json", "--csv", "run.csv", "--html-report", "run.html"])
        .args(["--num-prompts", "20", "--max-concurrency", "4", "--random-input-len", "16"])
        .args(["--random-output-len", "200", "--sim-itl-ms", "50"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    lines
        .find(|l| l.as_ref().is_ok_and(|l| servebench_testkit::cli::is_workload_ready_line(l)))
        .unwrap()
        .unwrap();
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>().join("\n"));
    std::thread::sleep(std::time::Duration::from_millis(1500));
    servebench_testkit::cli::interrupt(&child);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let stdout = rest.join().unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    assert_eq!(json["interrupted"], true);
    let records: Vec<serde_json::Value> = std::fs::read_to_string(dir.path().join("run.json.records.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let unsent =
        records.iter().filter(|r| r["outcome"] == "cancelled" && r.get("dispatched_us").is_none()).count()
            as u64;
    assert!(unsent >= 10, "most of the workload was never sent: {unsent}");
    assert_eq!(json["never_sent"].as_u64(), Some(unsent));
    assert_eq!(json["sent"].as_u64().unwrap() + unsent, 20, "{json}");
    assert!(stdout.contains(&format!("; {unsent} were never sent")), "{stdout}");
    // The CSV and HTML report come from the same records.
    let html = std::fs::read_to_string(dir.path().join("run.html")).unwrap();
    assert!(html.contains(&format!("{unsent} requests of the workload were never sent")), "HTML says so");
    assert!(dir.path().join("run.csv").exists());
}

#[test]
fn append_result_keeps_each_documents_own_records_and_report_pairs_them() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |prefix: &str| {
        let out = sim(d, &["--append-result", "--result-filename", "r.jsonl", "--request-id-prefix", prefix]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    };
    run("first-");
    run("second-");
    let docs: Vec<serde_json::Value> = std::fs::read_to_string(d.join("r.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(docs.len(), 2);
    assert_eq!(docs[0]["records_file"], "r.jsonl.records.jsonl");
    assert_eq!(docs[1]["records_file"], "r.jsonl.2.records.jsonl");
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap();
    let (first, second) = (read("r.jsonl.records.jsonl"), read("r.jsonl.2.records.jsonl"));
    assert_eq!((first.lines().count(), second.lines().count()), (12, 12));
    assert!(first.contains("\"first-0\"") && !first.contains("second-"), "the first run's records are kept");
    assert!(second.contains("\"second-0\"") && !second.contains("first-"));
    // report reads the last document with its own records.
    let out = bin().current_dir(d).args(["report", "r.jsonl", "-o", "r.html"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let html = std::fs::read_to_string(d.join("r.html")).unwrap();
    assert!(html.contains("r.jsonl.2.records.jsonl"), "the report names the second run's records");
    // compare pairs each result with its own per-request data.
    let out = bin().current_dir(d).args(["compare", "r.jsonl", "r.jsonl"]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// Pins a `--label` holding a path separator: the default result name pointed into a directory
/// that does not exist, and the whole run's result was lost at the end (SB501). The label's `/`
/// is a `_` in the file name; the result keeps the label as given.
#[test]
fn a_label_with_a_slash_still_saves_its_result() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--save-result", "--label", "a/b c"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let result = names.iter().find(|n| n.starts_with("a_b c-") && n.ends_with(".json")).expect("the result");
    assert!(names.contains(&format!("{result}.records.jsonl")), "{names:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join(result)).unwrap()).unwrap();
    assert_eq!(json["label"], "a/b c");
}

/// Pins `--append-result` with an explicit `--records` file that exists: the second run wrote
/// its records over the first run's, whose result line still named that file. Refused (SB101)
/// before anything is sent; the first run's records stay as they were.
#[test]
fn append_result_refuses_to_overwrite_an_earlier_runs_named_records() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let args = ["--append-result", "--result-filename", "r.jsonl", "--records", "same.jsonl"];
    let out = sim(d, &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = std::fs::read_to_string(d.join("same.jsonl")).unwrap();
    let out = sim(d, &args);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("SB101") && err.contains("--records") && err.contains("same.jsonl"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("same.jsonl")).unwrap(), before);
}

/// Pins `--append-result --records` refusing runs it had no reason to: a first run whose records
/// file exists from elsewhere, and `--records /dev/null` (nothing to overwrite).
#[test]
fn append_result_lets_through_a_first_run_and_records_to_dev_null() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("old.jsonl"), "{}\n").unwrap();
    let out = sim(d, &["--append-result", "--result-filename", "r.jsonl", "--records", "old.jsonl"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for _ in 0..2 {
        let out = sim(d, &["--append-result", "--result-filename", "n.jsonl", "--records", "/dev/null"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
}

#[test]
fn sweep_points_get_prompts_of_their_own_so_prefix_cache_does_not_flatter_them() {
    let dir = tempfile::tempdir().unwrap();
    let base = ["--sim-mode", "engine", "--sim-prefix-caching", "true", "--sweep-max-concurrency", "1,2"];
    let cached = |extra: &[&str]| {
        let tok = tokenizer();
        let out = bin()
            .current_dir(dir.path())
            .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--disable-tqdm"])
            .args(base)
            .args(["--num-prompts", "8", "--random-input-len", "256", "--random-output-len", "2"])
            .args(["--save-result", "--result-filename", "s.json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join("s.json")).unwrap()).unwrap();
        let points = doc["points"].as_array().unwrap().clone();
        let cached =
            points.iter().map(|p| p["result"]["cached_input_tokens"].as_u64().unwrap()).collect::<Vec<_>>();
        (cached, text(&out.stderr))
    };
    let (own, stderr) = cached(&[]);
    assert_eq!(own[1], 0, "the second point's prompts are new to the server: {own:?}\n{stderr}");
    let (reused, stderr) = cached(&["--reuse-prompts"]);
    assert!(reused[1] > 0, "the same prompts again are served from the cache: {reused:?}");
    assert!(stderr.contains("warning: concurrency 2: the server reports"), "{stderr}");
}

#[test]
fn sweep_summary_csv_over_the_dataset_is_refused_with_sb120() {
    // A sweep writes <result>.csv beside the result: it must not replace an input either.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dataset = "{\"prompt\": \"hello there\", \"output_tokens\": 4}\n";
    std::fs::write(d.join("prompts.csv"), dataset).unwrap();
    let out = sim(
        d,
        &[
            "--dataset-name",
            "custom",
            "--dataset-path",
            "prompts.csv",
            "--sweep-max-concurrency",
            "1,2",
            "--save-result",
            "--result-filename",
            "prompts.json",
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("error[SB120]") && err.contains("sweep summary CSV"), "{err}");
    assert_eq!(std::fs::read_to_string(d.join("prompts.csv")).unwrap(), dataset);
}

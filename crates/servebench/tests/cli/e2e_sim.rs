//! End to end through the binary: a real run against the embedded simulator, and the errors
//! invalid flags must give before any network traffic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Output;

use servebench_testkit::cli::{interrupt, open_files_limit};
use servebench_testkit::net::{accept_once, closed_port};

use crate::support::{bin, data, save_run_json, text, tokenizer};

fn sim_run(dir: &Path, extra: &[&str], key: Option<&str>) -> Output {
    let tok = tokenizer();
    let mut cmd = bin();
    cmd.args([
        "--sim",
        "--sim-ttft-ms",
        "5",
        "--sim-itl-ms",
        "1",
        "--sim-tokenizer",
        tok.to_str().unwrap(),
        "--num-prompts",
        "40",
        "--max-concurrency",
        "8",
        "--random-input-len",
        "64",
        "--random-output-len",
        "16",
        "--disable-tqdm",
        "--save-result",
        "--result-dir",
        dir.to_str().unwrap(),
        "--result-filename",
        "run.json",
    ]);
    cmd.args(extra);
    if let Some(k) = key {
        cmd.env("OPENAI_API_KEY", k);
    }
    cmd.output().unwrap()
}

#[test]
fn sim_run_prints_both_blocks_and_writes_vllm_compatible_json_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim_run(dir.path(), &["--save-detailed", "--metadata", "team=serving"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{}", text(&out.stderr));
    assert!(stdout.contains("Serving Benchmark Result"), "{stdout}");
    assert!(stdout.contains("Successful requests:"), "{stdout}");
    assert!(stdout.to_lowercase().contains("servebench"), "{stdout}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let obj = json.as_object().unwrap();
    let keys = include_str!("../data/vllm_result_keys.tsv");
    for key in keys.lines().filter(|l| !l.starts_with('#')).filter_map(|l| l.split('\t').next()) {
        assert!(obj.contains_key(key), "result lacks vLLM key {key}");
    }
    assert_eq!(obj["completed"], 40);
    assert_eq!(obj["failed"], 0);
    assert_eq!(obj["request_rate"], "inf");
    assert_eq!(obj["team"], "serving");
    assert_eq!(obj["total_output_tokens"], 40 * 16);

    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&json).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");

    let records = std::fs::read_to_string(dir.path().join("run.json.records.jsonl")).unwrap();
    let lines: Vec<&str> = records.lines().collect();
    assert_eq!(lines.len(), 40, "one record line per request");
    let mut by_outcome = std::collections::BTreeMap::new();
    for l in &lines {
        let r: serde_json::Value = serde_json::from_str(l).unwrap();
        *by_outcome.entry(r["outcome"].as_str().unwrap().to_string()).or_insert(0) += 1;
    }
    assert_eq!(by_outcome.get("completed"), Some(&40));
}

#[test]
fn api_key_never_reaches_any_artefact() {
    let dir = tempfile::tempdir().unwrap();
    let key = "sk-planted-secret-4711";
    let headers = ["--header", "X-Api-Key=hdr-secret-0815", "--header", "Cookie: session=cookie-secret-2323"];
    let out = sim_run(dir.path(), &[&["--save-detailed"][..], &headers].concat(), Some(key));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut all = text(&out.stdout) + &text(&out.stderr);
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        all += &std::fs::read_to_string(entry.unwrap().path()).unwrap();
    }
    assert!(!all.contains(key));
    assert!(!all.contains("hdr-secret-0815"));
    assert!(!all.contains("cookie-secret-2323"));
}

fn assert_config_error(args: &[&str], flag: &str) {
    // Port 9 (discard) on loopback: if anything tried the network it would fail differently.
    let out = bin()
        .args(["--base-url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "cl100k_base"])
        .args(args)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains("error[SB101]"), "{args:?}: {stderr}");
    assert!(stderr.contains(flag), "{args:?} should name {flag}: {stderr}");
    assert!(stderr.contains("fix:"), "{args:?}: {stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
}

#[test]
fn invalid_values_fail_before_any_network_with_a_coded_error() {
    assert_config_error(&["--request-rate", "-1"], "--request-rate");
    assert_config_error(&["--request-rate", "0"], "--request-rate");
    // Typed at parse time (cli/values.rs): still one coded line.
    assert_config_error(&["--request-rate", "fast"], "--request-rate");
    assert_config_error(&["--on-interrupt", "panic"], "--on-interrupt");
    assert_config_error(&["--ramp-up-strategy", "cubic"], "--ramp-up-strategy");
    assert_config_error(&["--burstiness", "0"], "--burstiness");
    assert_config_error(&["--random-range-ratio", "1.5"], "--random-range-ratio");
    assert_config_error(&["--random-range-ratio", "{\"input\": 0.1"], "--random-range-ratio");
    assert_config_error(&["--extra-body", "{not json"], "--extra-body");
    assert_config_error(&["--ramp-up-strategy", "linear"], "--ramp-up-strategy");
    assert_config_error(
        &["--ramp-up-strategy", "linear", "--ramp-up-start-rps", "10", "--ramp-up-end-rps", "5"],
        "--ramp-up-start-rps",
    );
    assert_config_error(&["--goodput", "ttft=5"], "--goodput");
    assert_config_error(&["--metadata", "novalue"], "--metadata");
    assert_config_error(&["--backend", "tgi-native"], "--backend");
}

#[test]
fn former_sb102_vllm_flags_reach_their_checks() {
    // vLLM 0.33's flags are all implemented: they reach their own checks, never SB102.
    let out = bin()
        .args(["--timeline-itl-thresholds", "1,2", "--use-beam-search", "--backend", "openai-embeddings"])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("SB113") && stderr.contains("--use-beam-search"), "{stderr}");
    assert!(!stderr.contains("SB102"), "{stderr}");
}

#[test]
fn explain_prints_every_code() {
    let out = bin().args(["explain", "SB301"]).output().unwrap();
    assert!(out.status.success());
    let s = text(&out.stdout);
    assert!(s.contains("SB301") && s.contains("ready-check-timeout-sec"), "{s}");
    let out = bin().args(["explain"]).output().unwrap();
    for c in servebench_core::ErrorCode::ALL {
        assert!(text(&out.stdout).contains(c.as_str()));
    }
    let out = bin().args(["explain", "SB999"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn readiness_timeout_names_the_last_error() {
    // Nothing listens on this port: every readiness attempt is refused.
    let port = closed_port();
    let out = bin()
        .args([
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
            "--model",
            "m",
            "--tokenizer",
            "cl100k_base",
            "--num-prompts",
            "2",
            "--ready-check-timeout-sec",
            "1",
            "--disable-tqdm",
        ])
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    // Refused until the deadline: SB315 naming the refusal and the seconds really waited.
    assert!(stderr.contains("SB315") && stderr.contains("connection refused"), "{stderr}");
    assert!(stderr.contains("kept trying for 1."), "{stderr}");
}

#[test]
fn server_tokenizer_builds_prompts_of_exact_server_length() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim_run(dir.path(), &["--tokenizer", "server", "--random-range-ratio", "0.5"], None);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let records = std::fs::read_to_string(dir.path().join("run.json.records.jsonl")).unwrap();
    let mut n = 0;
    for line in records.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["outcome"], "completed");
        // What the client planned equals what the server counted in `usage.prompt_tokens`.
        assert_eq!(r["prompt_tokens"], r["server_prompt_tokens"], "{line}");
        n += 1;
    }
    assert_eq!(n, 40);
}

/// Starts a `--sim` run in the background; returns the child once the run's workload is built
/// (so the signal handlers are installed).
fn spawn_sim_run(dir: &Path, extra: &[&str]) -> std::process::Child {
    use std::io::{BufRead, BufReader};
    let tok = tokenizer();
    let mut child = bin()
        .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--disable-tqdm", "--save-result"])
        .args(["--result-dir", dir.to_str().unwrap(), "--result-filename", "run.json"])
        .args(["--random-input-len", "32", "--ready-check-timeout-sec", "0"])
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        if servebench_testkit::cli::is_workload_ready_line(&line.unwrap()) {
            break;
        }
    }
    // Keep draining stdout so the child never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    child
}

#[test]
fn interrupt_cancels_in_flight_writes_results_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    // 4 streams of 200 tokens at 50 ms: nothing finishes within the first seconds.
    let mut child = spawn_sim_run(
        dir.path(),
        &[
            "--num-prompts",
            "20",
            "--max-concurrency",
            "4",
            "--random-output-len",
            "200",
            "--sim-itl-ms",
            "50",
        ],
    );
    let records = dir.path().join("run.json.records.jsonl");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    interrupt(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 20, "one record per request, interrupted or not");
    let cancelled: Vec<&serde_json::Value> = lines.iter().filter(|r| r["outcome"] == "cancelled").collect();
    let completed = json["completed"].as_u64().unwrap();
    let failed = json["failed"].as_u64().unwrap();
    assert_eq!(completed + failed + json["cancelled"].as_u64().unwrap(), 20);
    assert_eq!(cancelled.len() as u64, json["cancelled"].as_u64().unwrap());
    // The four in flight were cancelled with their partial timings kept.
    let partial = cancelled.iter().filter(|r| r.get("first_token_us").is_some()).count();
    assert!(partial >= 1, "{cancelled:?}");
}

#[test]
fn kill_9_keeps_every_finished_record_and_report_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = spawn_sim_run(
        dir.path(),
        &[
            "--num-prompts",
            "5000",
            "--max-concurrency",
            "8",
            "--random-output-len",
            "8",
            "--sim-ttft-ms",
            "2",
            "--sim-itl-ms",
            "1",
        ],
    );
    let records = dir.path().join("run.json.records.jsonl");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let n = std::fs::read_to_string(&records).map(|t| t.lines().count()).unwrap_or(0);
        if n >= 50 || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL: no handler runs
    child.wait().unwrap();
    let content = std::fs::read_to_string(&records).unwrap();
    let lines: Vec<&str> = content.lines().collect();
    assert!(lines.len() >= 50, "{} records before the kill", lines.len());
    // Records are flushed whole: every line parses (a line cut mid-write could only be last).
    let parsed = lines.iter().filter(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()).count();
    assert!(parsed + 1 >= lines.len());
    let html = dir.path().join("after-kill.html");
    let out =
        bin().args(["report", records.to_str().unwrap(), "-o", html.to_str().unwrap()]).output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&html).unwrap().contains("<svg"));
}

#[test]
fn retries_apply_only_to_connections_never_made_and_every_attempt_counts() {
    // The server accepts one connection (the client's reachability probe) and goes away:
    // every later connect is refused, nothing is ever sent.
    let (port, gone) = accept_once();
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args([
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
            "--model",
            "m",
            "--tokenizer",
            "cl100k_base",
        ])
        .args(["--num-prompts", "3", "--random-input-len", "8", "--random-output-len", "4"])
        .args(["--ready-check-timeout-sec", "0", "--skip-tokenize-verification", "--retries", "2"])
        .args(["--disable-tqdm", "--save-result", "--result-dir", dir.path().to_str().unwrap()])
        .args(["--result-filename", "r.json"])
        .output()
        .unwrap();
    gone.join().unwrap();
    // Not one request succeeded: exit 1 with SB602, after the records were written.
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("SB602"), "{}", text(&out.stderr));
    let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
    for line in records.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["outcome"], "failed");
        assert_eq!(r["error"]["kind"], "connect");
        assert_eq!(r["attempts"], 3, "{line}");
    }
    assert_eq!(records.lines().count(), 3);
}

#[test]
fn max_concurrency_beyond_the_open_files_limit_is_refused_with_the_fix() {
    // As `ulimit -n 200` would, without a shell outside the environment policy.
    let mut cmd = bin();
    cmd.args(["--base-url", "http://127.0.0.1:9", "--model", "m", "--tokenizer", "cl100k_base"]).args([
        "--max-concurrency",
        "500",
        "--num-prompts",
        "10",
    ]);
    let out = open_files_limit(&mut cmd, 200).output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("SB175") && stderr.contains("--max-concurrency") && stderr.contains("ulimit -n"),
        "{stderr}"
    );
}

/// The simulator counts prompts with cl100k_base, the client with SmolLM2: every prompt's
/// length differs on the server. Runs `dataset` that way and returns the result and records.
fn run_with_disagreeing_tokenizers(dataset: &[&str]) -> (serde_json::Value, Vec<serde_json::Value>) {
    let dir = tempfile::tempdir().unwrap();
    let tok = tokenizer();
    // A cache of its own: a verification remembered from another run on a reused port read as
    // "cached" where this test pins "fixed" (a flake seen once in the shared test cache).
    let out = bin()
        .env("XDG_CACHE_HOME", dir.path())
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--sim-tokenizer", "cl100k_base"])
        .args(["--tokenizer", tok.to_str().unwrap(), "--num-prompts", "3", "--disable-tqdm"])
        .args(save_run_json(dir.path()))
        .args(dataset)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let json = serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    let records = std::fs::read_to_string(dir.path().join("run.json.records.jsonl")).unwrap();
    let records = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (json, records)
}

/// A dataset's text is sent as written, as vLLM sends it: a server that counts its tokens
/// differently gets the prompts unchanged (its `usage.prompt_tokens` differs from the client's
/// count), where synthetic random prompts are still rewritten to the exact server length.
#[test]
fn dataset_text_is_sent_as_written_when_the_server_counts_it_differently() {
    let custom = data("custom_small.jsonl");
    let (json, records) =
        run_with_disagreeing_tokenizers(&["--dataset-name", "custom", "--dataset-path", &custom]);
    assert_eq!(json["server_tokenize"]["verification"], "skipped", "{}", json["server_tokenize"]);
    assert!(
        records.iter().any(|r| r["prompt_tokens"] != r["server_prompt_tokens"]),
        "every prompt was rewritten to the client's count: {records:?}"
    );
    let (json, records) =
        run_with_disagreeing_tokenizers(&["--random-input-len", "40", "--random-output-len", "4"]);
    assert_eq!(json["server_tokenize"]["verification"], "fixed", "{}", json["server_tokenize"]);
    assert!(records.iter().all(|r| r["prompt_tokens"] == r["server_prompt_tokens"]), "{records:?}");
}

/// The simulator's value errors name the flags the user typed (`--sim-…`), not the library's
/// field names (`--max-model-len` is the client's own flag, and `--ttft-ms` is calibrate's).
#[test]
fn simulator_value_errors_name_the_sim_flags() {
    for (args, flag) in [
        (&["--sim-max-model-len", "0"][..], "--sim-max-model-len"),
        (&["--sim-ttft-ms=-5"][..], "--sim-ttft-ms"),
        (&["--sim-model", ""][..], "--sim-model"),
    ] {
        let out = bin().args(["--sim", "--num-prompts", "1", "--disable-tqdm"]).args(args).output().unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(&format!("invalid {flag}:")), "{args:?}: {stderr}");
    }
}

/// Warm-up requests that fail were discarded without a word: the run started on a server that
/// was not warmed as asked. They are now a warning naming how many and the first error.
#[test]
fn failed_warm_ups_are_a_warning_with_the_first_error() {
    let dir = tempfile::tempdir().unwrap();
    let o = sim_run(
        dir.path(),
        &["--sim-fault", "http_500=1", "--num-warmups", "2", "--ready-check-timeout-sec", "0"],
        None,
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "every measured request failed too: {stderr}");
    let line = "2 of 2 warm-up requests did not complete (first: http_status: HTTP 500";
    assert!(stderr.contains(line), "{stderr}");
}

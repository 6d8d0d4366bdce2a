//! Regression tests of the binary: each pins a bug that was fixed and is named after the
//! behaviour it pins; its doc comment says what used to go wrong.

use crate::modes_e2e::sim;
use crate::support::text;

/// Pins the readiness wait: its doubling pause used to stop after 1.4 s of a 2 s
/// `--ready-check-timeout-sec`. Every request answers 503: the check retries until the
/// deadline and says how long it waited.
#[test]
fn ready_check_timeout_is_waited_in_full_not_cut_short_by_the_doubling_pause() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--sim-fault", "http_503=1", "--ready-check-timeout-sec", "2"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let secs: f64 =
        err.split("endpoint not ready after ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert!(secs >= 2.0, "{err}");
}

mod bounds;
mod inputs;
mod messages;
mod modes;
mod server_text;

/// A run in `dir` against the embedded simulator: `prompts` short prompts (16 in, 4 out, 1 ms
/// TTFT and ITL, the SmolLM2 tokenizer), plus `extra`.
fn short_sim_run(dir: &std::path::Path, prompts: &str, extra: &[&str]) -> std::process::Output {
    let tok = crate::support::tokenizer();
    crate::support::bin()
        .current_dir(dir)
        .args(["--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "1", "--random-input-len", "16"])
        .args(["--random-output-len", "4", "--num-prompts", prompts, "--disable-tqdm", "--sim-tokenizer"])
        .arg(&tok)
        .arg("--tokenizer")
        .arg(&tok)
        .args(extra)
        .output()
        .expect("run servebench")
}
/// Pins the console a newcomer reads (issue 23, item 11). A closed loop (rate inf, a cap) used
/// to print "Mean Response TTFT" in seconds right after a TTFT of milliseconds, with nothing
/// saying it was the batch's own client queue, and warnings (steady state, client health)
/// inside the result on stdout. Now stdout is vLLM's block then captioned additions (the
/// schedule-anchored figures only with `--verbose` in a closed loop, captioned as
/// client-queue-inclusive) and every warning is on stderr.
#[test]
fn closed_loop_console_captions_the_client_queue_and_sends_warnings_to_stderr() {
    // A flag the random dataset ignores: a warning every run prints, whatever the timing.
    let warn = ["--sonnet-input-len", "100"];
    let out = crate::support::fast_sim(&warn);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Load mode:                               closed loop, 4 in flight"), "{stdout}");
    assert!(stdout.contains("Mean client queue (ms):"), "{stdout}");
    assert!(!stdout.contains("Response TTFT"), "{stdout}");
    let warning_line = |l: &str| l.to_ascii_lowercase().starts_with("warning") || l.starts_with("note:");
    assert!(!stdout.lines().any(warning_line), "{stdout}");
    assert!(
        stderr.lines().any(|l| l.starts_with("warning: ") && l.contains("--sonnet-input-len is ignored")),
        "{stderr}"
    );

    let verbose = crate::support::fast_sim(&[&warn[..], &["--verbose"]].concat());
    let stdout = text(&verbose.stdout);
    assert!(stdout.contains("client-queue-inclusive"), "{stdout}");
    assert!(stdout.contains("Mean Response TTFT (ms):"), "{stdout}");
    assert!(stdout.contains("Output token source (requests):"), "{stdout}");
    assert!(!stdout.lines().any(warning_line), "{stdout}");
}

/// Pins `--sim --model NAME` (issue 23, item 10): the embedded simulator served only
/// `servebench-sim`, so every request of a run that named its model as against a real server
/// failed with HTTP 404. It now serves `--served-model-name`/`--model` unless `--sim-model`
/// names another.
#[test]
fn embedded_simulator_serves_the_model_the_run_names() {
    let out = crate::support::fast_sim(&["--model", "meta-llama/Llama-3.1-8B-Instruct"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(stdout.contains("serving 'meta-llama/Llama-3.1-8B-Instruct'"), "{stdout}");
    assert!(stdout.contains("Successful requests:                     12"), "{stdout}");
    // --sim-model still wins: the run's model is then unknown to the server (404s).
    let out = crate::support::fast_sim(&["--model", "other", "--sim-model", "served"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("serving 'served'"), "{stdout}");
    assert!(!stdout.contains("Successful requests:                     12"), "{stdout}");
}

/// Pins `compare`'s tests (issue 23.8): `std_*` rows used to be tested with Mann–Whitney, a
/// location test, so two runs with the same spread shifted by 100 ms printed `std_ttft_ms …
/// mann_whitney_u 0.0000 yes`; and the direction sign was glued to the change (`+0.50%-`).
#[test]
fn compare_tests_std_for_spread_and_prints_the_direction_apart() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, shift_us: u64| {
        let mut lines = String::new();
        for i in 0..60u64 {
            let ttft = 50_000 + (i % 10) * 1_000 + shift_us;
            let t0 = i * 100_000;
            let rec = serde_json::json!({
                "index": i, "request_id": format!("r{i}"), "outcome": "completed",
                "intended_us": t0, "dispatched_us": t0, "first_token_us": t0 + ttft,
                "last_token_us": t0 + ttft + 10_000, "done_us": t0 + ttft + 10_000,
                "token_events": {"gaps_us": [10_000]}, "prompt_tokens": 10, "completion_tokens": 2,
                "expected_output_tokens": 2, "token_event_count": 2, "output_chars": 2, "attempts": 1
            });
            lines.push_str(&format!("{rec}\n"));
        }
        let mean = 54.5 + shift_us as f64 / 1000.0;
        let path = dir.path().join(name);
        let doc = serde_json::json!({"mean_ttft_ms": mean, "std_ttft_ms": 2.87, "request_throughput": 10.0});
        std::fs::write(&path, doc.to_string()).unwrap();
        std::fs::write(dir.path().join(format!("{name}.records.jsonl")), lines).unwrap();
        path
    };
    let (a, b) = (write("a.json", 0), write("b.json", 100_000));
    let out =
        crate::support::bin().args(["compare", a.to_str().unwrap(), b.to_str().unwrap()]).output().unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let line = |k: &str| stdout.lines().find(|l| l.starts_with(&format!("{k} "))).unwrap().to_owned();
    let std_line = line("std_ttft_ms");
    assert!(std_line.contains("brown_forsythe") && std_line.trim_end().ends_with(" no"), "{stdout}");
    let mean_line = line("mean_ttft_ms");
    assert!(mean_line.contains(" worse ") && mean_line.contains("mann_whitney_u"), "{stdout}");
    assert!(mean_line.trim_end().ends_with(" yes"), "{stdout}");
    assert!(!stdout.contains("%-") && !stdout.contains("%+"), "{stdout}");
}

/// Pins `report` on vLLM's own result files (issue 23.9): a result without a records file used to
/// be refused with SB501 "records file not found", a fix the user cannot apply. A vLLM 0.33
/// `--save-detailed` file is drawn from its arrays (with time charts from `start_times`); without
/// `start_times` the time charts are left out and the report says why; without any array the
/// summary keys alone, and the report says so.
#[test]
fn report_draws_a_vllm_result_file_from_its_arrays_and_says_what_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = servebench_testkit::fixtures::fixture("results/vllm-0.33-detailed.json");
    let report = |input: &std::path::Path| {
        let out = dir.path().join("r.html");
        let o = crate::support::bin()
            .args(["report", input.to_str().unwrap(), "-o", out.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", text(&o.stderr));
        std::fs::read_to_string(out).unwrap()
    };
    let html = report(&fixture);
    for id in ["ttft-cdf", "itl-hist", "e2el-cdf", "ttft-prompt", "tokens-time", "ttft-time"] {
        assert!(html.contains(&format!("id=\"{id}\"")), "{id}");
    }
    assert!(html.contains("per-request arrays") && html.contains("1 of 40 requests failed"), "notes");
    assert!(
        html.contains("<td>completed</td><td>39</td>") && html.contains("<td>duration (s)</td><td>2.80</td>")
    );
    assert!(!html.contains("<td>queue time p50</td>"), "no scheduled send times, no queue time");
    // Neither an empty response-view heading nor a claim that the numbers come from records.
    assert!(!html.contains("Response view (ms, from intended)"), "empty response view heading");
    assert!(!html.contains("computed from the request records") && html.contains("each run's card says"));
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    let obj = doc.as_object_mut().unwrap();
    obj.remove("start_times");
    let no_starts = dir.path().join("no-starts.json");
    std::fs::write(&no_starts, doc.to_string()).unwrap();
    let html = report(&no_starts);
    assert!(
        html.contains("id=\"ttft-cdf\"")
            && !html.contains("id=\"tokens-time\"")
            && !html.contains("id=\"ttft-time\"")
    );
    assert!(html.contains("Time charts (TTFT and E2EL over time"), "says which charts are absent and why");
    for k in [
        "ttfts",
        "itls",
        "latencies",
        "input_lens",
        "output_lens",
        "errors",
        "queue_times",
        "generated_texts",
    ] {
        doc.as_object_mut().unwrap().remove(k);
    }
    let summary = dir.path().join("summary.json");
    std::fs::write(&summary, doc.to_string()).unwrap();
    let html = report(&summary);
    assert!(html.contains("only the result&#39;s summary keys") && !html.contains("<svg"), "no chart");
    assert!(html.contains("<td>mean_ttft_ms</td>") && html.contains("<td>completed</td><td>39</td>"));
}

/// Pins the output directories: with `--records` given, `--result-dir` used to be created by
/// nobody, so a whole run finished and then failed with SB501 "No such file or directory" and
/// lost its result. Every output directory is now created before the first request.
#[test]
fn result_dir_is_created_before_the_run_also_when_records_go_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let out = sim(dir.path(), &["--records", "rec.jsonl", "--save-result", "--result-dir", "newdir/deeper"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let results: Vec<_> = std::fs::read_dir(dir.path().join("newdir/deeper")).unwrap().flatten().collect();
    assert_eq!(results.len(), 1, "one result file: {results:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(results[0].path()).unwrap()).unwrap();
    assert_eq!(json["completed"], 12);
    assert_eq!(std::fs::read_to_string(dir.path().join("rec.jsonl")).unwrap().lines().count(), 12);
}

/// Pins the writability check: an output that cannot be written (here `--result-dir` under a
/// regular file) used to be found only after the whole run; it is now SB101 (exit 2) naming the
/// flag, before anything is sent or written.
#[test]
fn unwritable_output_is_a_coded_error_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("afile"), "x").unwrap();
    let cases: &[&[&str]] = &[
        &["--records", "rec.jsonl", "--save-result", "--result-dir", "afile/sub"],
        &["--records", "afile/rec.jsonl"],
        &["--html-report", "afile/r.html"],
    ];
    for extra in cases {
        let out = sim(dir.path(), extra);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains("error[SB101]: invalid --"), "{extra:?}: {err}");
        assert!(err.contains("afile"), "{extra:?}: {err}");
        assert!(!text(&out.stdout).contains("Successful requests"), "{extra:?}: nothing was sent");
        assert!(!dir.path().join("rec.jsonl").exists(), "{extra:?}: nothing was written");
    }
}

/// A chat server for the interrupt tests: request `req-0` is answered at once; every other
/// request gets its head, the role chunk and one token, then nothing more (in flight until the
/// client gives up). Anything else is 404.
#[cfg(unix)]
fn first_answered_rest_hang(request: &str) -> Vec<servebench_testkit::script::Step> {
    use servebench_testkit::script::{chunk, finish_usage_done, role, tok, w, Step, END, SSE_HEAD};
    if !request.starts_with("POST /v1/chat/completions ") {
        return vec![
            w("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
            Step::Close,
        ];
    }
    let mut steps = vec![w(SSE_HEAD), w(chunk(&role())), w(chunk(&tok("a")))];
    if request.to_ascii_lowercase().contains("x-request-id: req-0\r\n") {
        steps.extend([w(chunk(&tok("b"))), w(chunk(&finish_usage_done())), w(END), Step::Close]);
    } else {
        steps.push(Step::Sleep(600_000));
    }
    steps
}

/// A chat run of 10 requests, 4 in flight, against `base_url` (`first_answered_rest_hang`),
/// draining on Ctrl-C, its records in `rec.jsonl` and its result in `run.json` in `dir`; stderr
/// piped.
#[cfg(unix)]
fn draining_chat_run(base_url: &str, dir: &std::path::Path) -> std::process::Child {
    use std::process::Stdio;
    let tok = crate::support::tokenizer();
    crate::support::bin()
        .current_dir(dir)
        .args(["--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--model", "m"])
        .args(["--base-url", base_url, "--tokenizer", tok.to_str().unwrap()])
        .args(["--skip-tokenize-verification", "--request-id-prefix", "req-", "--disable-tqdm"])
        .args(["--num-prompts", "10", "--max-concurrency", "4", "--random-input-len", "16"])
        .args(["--random-output-len", "8", "--on-interrupt", "drain", "--records", "rec.jsonl"])
        .args(["--save-result", "--save-detailed", "--result-filename", "run.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Pins the second Ctrl-C: with `--on-interrupt drain`, a second SIGINT used to exit 130 at
/// once with no result JSON, no message, and a records file missing the requests in flight.
/// Now it cancels the requests in flight, says so on stderr, and the run still writes a record
/// for every request (cancelled ones say why) and its result. Synchronised on what the run
/// writes (the first record, the server's requests, the first interrupt's message), no timing.
#[cfg(unix)]
#[test]
fn second_ctrl_c_while_draining_still_records_every_request_and_writes_the_result() {
    let server = servebench_testkit::script::in_background(|| {
        servebench_testkit::script::serve_by_request(first_answered_rest_hang)
    });
    let dir = tempfile::tempdir().unwrap();
    let mut child = draining_chat_run(&server.base_url(), dir.path());
    // Request 0 is recorded and requests 1-3 were written (the server read them): in flight.
    let records = dir.path().join("rec.jsonl");
    let posts = || server.requests().iter().filter(|r| r.starts_with("POST /v1/chat")).count();
    while std::fs::read_to_string(&records).map_or(0, |t| t.lines().count()) < 1 || posts() < 4 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, err) = interrupt_twice(&mut child, "Interrupted: sending nothing new");
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("Interrupted again: cancelling the requests in flight"), "{err}");

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&records)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10, "a record for every request: {err}");
    let abandoned = lines.iter().filter(|r| r["cancelled_by"] == "second_interrupt").count();
    assert!(abandoned >= 3, "requests 1-3 were in flight: {lines:?}");
    assert!(
        err.contains(&format!("Second interrupt: {abandoned} requests in flight were abandoned")),
        "{err}"
    );
    for r in lines.iter().filter(|r| r["outcome"] == "cancelled") {
        let why = if r.get("dispatched_us").is_some() { "second_interrupt" } else { "interrupt" };
        assert_eq!(r["cancelled_by"], why, "{r}");
    }
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("run.json")).unwrap()).unwrap();
    assert_eq!((json["completed"].as_u64(), json["cancelled"].as_u64()), (Some(1), Some(9)));
    // vLLM's arrays: only the completed request has the success marker "" and timings; the
    // cancelled ones (which had a first token) are what vLLM writes for a failed request.
    let errors = json["errors"].as_array().unwrap();
    assert_eq!(errors.iter().filter(|e| e.as_str() == Some("")).count(), 1, "{errors:?}");
    for i in (1..10).filter(|&i| lines.iter().any(|r| r["index"] == i && r.get("dispatched_us").is_some())) {
        assert_eq!(errors[i], "cancelled: abandoned at a second interrupt", "{errors:?}");
        assert_eq!((json["ttfts"][i].as_f64(), json["latencies"][i].as_f64()), (Some(0.0), Some(0.0)));
        assert_eq!(json["itls"][i], serde_json::json!([]));
        assert_eq!(json["output_lens"][i], 0);
    }
    assert!(errors.contains(&serde_json::json!("cancelled: never sent (interrupted)")), "{errors:?}");

    // `report` reads a complete records file quietly, and warns on one that lost records.
    let report = |file: &str| {
        crate::support::bin().current_dir(dir.path()).args(["report", file, "-o", "r.html"]).output().unwrap()
    };
    let out = report("rec.jsonl");
    assert!(out.status.success() && !text(&out.stderr).contains("no record"), "{}", text(&out.stderr));
    let all = std::fs::read_to_string(&records).unwrap();
    let kept: Vec<&str> =
        all.lines().filter(|l| !l.contains("\"index\":2,") && !l.contains("\"index\":3,")).collect();
    std::fs::write(dir.path().join("cut.jsonl"), kept.join("\n") + "\n").unwrap();
    let out = report("cut.jsonl");
    let e = text(&out.stderr);
    assert!(out.status.success(), "{e}");
    assert!(e.contains("warning: cut.jsonl: 2 requests of the run have no record"), "{e}");
}

/// A run of the embedded simulator saving its result in `dir`; the result document.
fn sim_result(dir: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let tok = crate::support::tokenizer();
    let out = crate::support::bin()
        .current_dir(dir)
        .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--disable-tqdm"])
        .args(["--random-input-len", "16", "--save-result", "--result-filename", "r.json"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", text(&out.stdout), text(&out.stderr));
    serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap()
}

/// Pins the closed-loop steady-state window (issue 23.1): it used to open at the first
/// dispatch, when nothing can have completed, so a lock-step loop of 8 slots counted one
/// turnover of dispatches more than of completions ("Arrivals / completions 24.69 / 20.57")
/// and its request throughput fell short of its token throughput by a turnover. The window now
/// counts whole turnovers between instants when every slot is filled.
#[test]
fn closed_loop_steady_window_has_as_many_arrivals_as_completions_and_tokens_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let doc = sim_result(
        dir.path(),
        &[
            "--sim-ttft-ms",
            "5",
            "--sim-itl-ms",
            "2",
            "--random-output-len",
            "20",
            "--num-prompts",
            "64",
            "--max-concurrency",
            "8",
        ],
    );
    let ss = &doc["steady_state"];
    let w = &ss["window"];
    assert_eq!(w["mode"], "closed_loop", "{ss}");
    let dur = w["duration_s"].as_f64().unwrap();
    let arrivals = w["arrival_rate"].as_f64().unwrap() * dur;
    let completions = w["completion_rate"].as_f64().unwrap() * dur;
    assert!((arrivals - completions).abs() <= 1.0 + 1e-6, "{arrivals} arrivals vs {completions} completions");
    // Request × output length vs token throughput: within the tokens in flight at the window's
    // two ends, under one turnover's worth (1/m of m turnovers).
    let completed = w["requests_completed_in_window"].as_f64().unwrap();
    let m = completed / 8.0;
    let req = ss["request_throughput"].as_f64().unwrap();
    let tok = ss["output_throughput"].as_f64().unwrap();
    assert!(
        m >= 1.0 && (req * 20.0 - tok).abs() <= tok / m,
        "{req} req/s × 20 vs {tok} tok/s, {m} turnovers"
    );
}

/// Pins the open-loop agreement test on short runs (issue 23.2): 40 requests at 60 req/s to an
/// engine that serves 40 req/s used to pass as steady (a 0.43-s window, 60.8 arrivals/s vs
/// 39.7 completions/s), because the noise allowance, inflated by the overload's own backlog,
/// swamped 26 arrivals. Such a window is now too short to tell, or an overload: no steady state,
/// with the reason.
#[test]
fn short_open_loop_overload_is_not_reported_as_steady() {
    let dir = tempfile::tempdir().unwrap();
    let doc = sim_result(
        dir.path(),
        &[
            "--sim-mode",
            "engine",
            "--sim-max-num-seqs",
            "4",
            "--sim-decode-step-ms",
            "10",
            "--sim-decode-per-seq-us",
            "0",
            "--sim-prefill-tokens-per-s",
            "100000000",
            "--sim-jitter",
            "0",
            "--random-output-len",
            "10",
            "--num-prompts",
            "40",
            "--request-rate",
            "60",
        ],
    );
    assert!(doc["steady_state"].is_null(), "{}", doc["steady_state"]);
    let reason = doc["steady_state_reason"].as_str().unwrap();
    assert!(["too few requests to tell", "overloaded"].iter().any(|r| reason.contains(r)), "{reason}");
}

/// Pins the steady state of a trace replayed on its own timestamps: its rate is infinite, so
/// with `--max-concurrency 1` it was taken for a closed loop and reported a steady window at the
/// cap's 31 req/s while the 40-req/s trace queued up 200 ms in the client. Its arrivals are
/// scheduled: an open loop, which a cap holding the server below them overloads.
#[test]
fn a_self_timed_trace_behind_a_cap_is_an_open_loop_not_a_steady_closed_loop() {
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (0..30)
        .map(|i| format!("{{\"timestamp\": {}, \"input_length\": 16, \"output_length\": 10}}\n", i * 25))
        .collect();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, rows).unwrap();
    let doc = sim_result(
        dir.path(),
        &[
            "--sim-ttft-ms",
            "10",
            "--sim-itl-ms",
            "5",
            "--dataset-name",
            "timed_trace",
            "--dataset-path",
            trace.to_str().unwrap(),
            "--num-prompts",
            "30",
            "--ignore-eos",
            "--max-concurrency",
            "1",
        ],
    );
    let mode = &doc["steady_state"]["window"]["mode"];
    assert_ne!(mode, "closed_loop", "{}", doc["steady_state"]);
    assert!(doc["steady_state"].is_null(), "an overload, not steady: {}", doc["steady_state"]);
    let reason = doc["steady_state_reason"].as_str().unwrap();
    // The client's one slot, not the server, holds the trace back: the reason says so.
    assert!(
        reason.contains("too few requests to tell")
            || reason.contains("waited in the client for a concurrency slot"),
        "{reason}"
    );
}

/// Pins `--dry-run` saying what a `--duration` or `--stages` load would send: it printed the
/// whole `--num-prompts` workload (1000 requests) for a 5-second run at 10 req/s.
#[test]
fn a_dry_run_says_what_its_duration_or_stages_schedule_would_send() {
    let tok = crate::support::tokenizer();
    let dry = |extra: &[&str]| {
        let out = crate::support::bin()
            .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--dry-run"])
            .args(["--random-input-len", "16", "--random-output-len", "4", "--seed", "1"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout).lines().find(|l| l.starts_with("Scheduled before the end:")).map(str::to_owned)
    };
    let line = dry(&["--duration", "5", "--request-rate", "10"]).expect("a schedule line");
    let n: usize = line.split_whitespace().nth(4).unwrap().parse().unwrap();
    assert!((30..=70).contains(&n) && line.contains(" requests (the last at "), "{line}");
    let line = dry(&["--stages", "c=4:2"]).expect("a closed loop line");
    assert!(line.contains("slots complete by 2.00 s"), "{line}");
    let line = dry(&["--duration", "3", "--max-concurrency", "2", "--num-prompts", "30"]).unwrap();
    assert!(line.contains("up to 30 requests") && line.contains("until 3.00 s"), "{line}");
    assert_eq!(dry(&["--num-prompts", "20"]), None, "every request of the workload: no line");
}

/// Pins a result whose named records file is missing: `report` and `compare` fell back to its
/// arrays without a word (fewer charts, no response view, other tests). They say so now.
#[test]
fn a_missing_records_file_is_named_by_report_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let doc = sim_result(dir.path(), &["--num-prompts", "4", "--random-output-len", "3"]);
    assert_eq!(doc["records_file"], "r.json.records.jsonl");
    std::fs::remove_file(dir.path().join("r.json.records.jsonl")).unwrap();
    for args in [&["report", "r.json", "-o", "r.html"][..], &["compare", "r.json", "r.json"][..]] {
        let out = crate::support::bin().current_dir(dir.path()).args(args).output().unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(
            err.contains("note: r.json: its records file r.json.records.jsonl is missing"),
            "{args:?}: {err}"
        );
    }
}

/// Pins `report r.json r.json.records.jsonl`: both inputs were labelled `r`, so the report's
/// runs (and the CSV's `run` column) could not be told apart. A label an earlier run has gives
/// way to the input's file name.
#[test]
fn report_inputs_with_the_same_label_are_told_apart_by_file_name() {
    let dir = tempfile::tempdir().unwrap();
    sim_result(dir.path(), &["--num-prompts", "2", "--random-output-len", "2"]);
    let out = crate::support::bin()
        .current_dir(dir.path())
        .args(["report", "r.json", "r.json.records.jsonl", "-o", "r.html", "--csv", "runs.csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = std::fs::read_to_string(dir.path().join("runs.csv")).unwrap();
    let runs: std::collections::BTreeSet<&str> =
        csv.lines().skip(1).filter_map(|l| l.split(',').next()).collect();
    assert_eq!(runs.into_iter().collect::<Vec<_>>(), ["r", "r.json.records.jsonl"], "{csv}");
}

/// Pins `report` and `compare` on an `--append-result` file of two runs: each silently used
/// the last run only. They say so now. And `report` on an empty file wrote an empty report of
/// "1 run(s)" and exited 0, where `compare` refused the file: SB208 for both.
#[test]
fn report_and_compare_name_an_appended_files_runs_and_refuse_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let tok = crate::support::tokenizer();
    for _ in 0..2 {
        let out = crate::support::bin()
            .current_dir(dir.path())
            .args(["--sim", "--sim-tokenizer", tok.to_str().unwrap(), "--tokenizer", tok.to_str().unwrap()])
            .args([
                "--disable-tqdm",
                "--num-prompts",
                "3",
                "--random-input-len",
                "8",
                "--random-output-len",
                "2",
            ])
            .args(["--append-result", "--result-filename", "app.json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    std::fs::write(dir.path().join("empty.json"), "").unwrap();
    let run = |args: &[&str]| crate::support::bin().current_dir(dir.path()).args(args).output().unwrap();
    for args in [&["report", "app.json", "-o", "r.html"][..], &["compare", "app.json", "app.json"][..]] {
        let out = run(args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let err = text(&out.stderr);
        assert!(err.contains("note: app.json holds 2 results appended one per line"), "{args:?}: {err}");
    }
    let out = run(&["report", "empty.json", "-o", "e.html"]);
    assert_eq!(out.status.code(), Some(1), "SB208's exit code: {}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("SB208") && text(&out.stderr).contains("empty"),
        "{}",
        text(&out.stderr)
    );
}

/// Pins a secret in the base URL's query (`?api-key=…`), now sent on every call, staying out of
/// everything written: the `/metrics` endpoint label (result and series file), the server
/// tokenizer's paths (result and console) and every console line named the path with the key.
#[test]
fn a_base_url_query_secret_is_never_written() {
    let tok = crate::support::tokenizer();
    let sim =
        crate::support::SimProcess::start(&["--sim-model", "m", "--sim-tokenizer", tok.to_str().unwrap()]);
    let dir = tempfile::tempdir().unwrap();
    let secret = "SECRETKEY123456";
    let out = crate::support::bin()
        .current_dir(dir.path())
        .args(["--base-url", &format!("{}/v1?api-version=2024&api-key={secret}", sim.url)])
        .args(["--model", "m", "--tokenizer", tok.to_str().unwrap(), "--num-prompts", "3"])
        .args(["--random-input-len", "16", "--random-output-len", "3", "--disable-tqdm"])
        .args([
            "--scrape-metrics",
            "--scrape-interval",
            "0.05",
            "--save-result",
            "--result-filename",
            "r.json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut written = text(&out.stdout) + &text(&out.stderr);
    for f in std::fs::read_dir(dir.path()).unwrap() {
        written.push_str(&std::fs::read_to_string(f.unwrap().path()).unwrap());
    }
    assert!(written.contains("api-key=<redacted>"), "the query is shown, its secret redacted");
    assert!(!written.contains(secret), "the secret was written");
}

/// Pins a run whose standard output goes away (`servebench … | head -1`, a dropped ssh session):
/// the first console line after the reader quit panicked ("failed printing to stdout: Broken
/// pipe") and the result file was never written. The console is dropped; the run finishes,
/// writes its files and exits with its own code. `explain` piped into `head -c1` likewise.
#[test]
fn a_closed_stdout_pipe_drops_the_console_not_the_run() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let tok = crate::support::tokenizer();
    let mut child = crate::support::bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--num-prompts", "4", "--disable-tqdm"])
        .arg("--tokenizer")
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--save-result", "--result-dir", dir.path().to_str().unwrap(), "--result-filename", "r.json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader quits before the first line: every write to stdout fails with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(0), "{err}");
    let result: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(result["completed"], 4);

    let mut explain =
        crate::support::bin().arg("explain").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(explain.stdout.take());
    let out = explain.wait_with_output().unwrap();
    assert!(!text(&out.stderr).contains("panicked"), "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
}

/// Pins the second Ctrl-C of an experiment: with `--on-interrupt drain` it exited at once and
/// wrote nothing (saying, untruly, that finished points were in their files). Now, as in a run,
/// it cancels the point's requests in flight and the experiment's document is written with every
/// point. The server answers its first request and holds every later one open; synchronised on
/// the server's requests and the first interrupt's message, no timing.
#[cfg(unix)]
#[test]
fn second_ctrl_c_in_an_experiment_still_writes_its_document() {
    use servebench_testkit::script::{chunk, finish_usage_done, role, tok, w, Step, END, SSE_HEAD};
    use std::process::Stdio;
    use std::sync::atomic::{AtomicUsize, Ordering};
    let posts = std::sync::Arc::new(AtomicUsize::new(0));
    let server = servebench_testkit::script::in_background(move || {
        servebench_testkit::script::serve_by_request(move |request: &str| {
            if !request.starts_with("POST /v1/chat/completions ") {
                return vec![
                    w("HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"),
                    Step::Close,
                ];
            }
            let mut steps = vec![w(SSE_HEAD), w(chunk(&role())), w(chunk(&tok("a")))];
            if posts.fetch_add(1, Ordering::SeqCst) == 0 {
                steps.extend([w(chunk(&tok("b"))), w(chunk(&finish_usage_done())), w(END), Step::Close]);
            } else {
                steps.push(Step::Sleep(600_000));
            }
            steps
        })
    });
    let dir = tempfile::tempdir().unwrap();
    let tok = crate::support::tokenizer();
    let mut child = crate::support::bin()
        .current_dir(dir.path())
        .args(["--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--model", "m"])
        .args(["--base-url", &server.base_url(), "--tokenizer", tok.to_str().unwrap()])
        .args(["--skip-tokenize-verification", "--disable-tqdm", "--num-prompts", "1", "--num-runs", "2"])
        .args(["--random-input-len", "16", "--random-output-len", "8", "--on-interrupt", "drain"])
        .args(["--save-result", "--result-filename", "exp.json"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Run 1 was answered; run 2's request is in flight (the server read it).
    let seen_posts = || server.requests().iter().filter(|r| r.starts_with("POST /v1/chat")).count();
    while seen_posts() < 2 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (code, err) = interrupt_twice(&mut child, "Interrupted: stopping this point");
    assert_eq!(code, Some(130), "{err}");
    assert!(err.contains("Interrupted again: cancelling this point's requests in flight"), "{err}");
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("exp.json")).unwrap()).unwrap();
    assert_eq!(doc["interrupted"], true, "{doc}");
    let runs = doc["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "both runs are in the document: {doc}");
    assert_eq!(runs[0]["result"]["completed"], 1);
}

/// Pins one stop signalled twice at once (`timeout -s INT` signals its child, then its process
/// group, the child included) being one Ctrl-C, not two: the second copy had cancelled the
/// requests in flight (or, in 2 runs of 9 under `timeout`, exited without a result). The run
/// goes on draining; a Ctrl-C pressed later is the second.
#[cfg(unix)]
#[test]
fn a_stop_signalled_twice_at_once_is_one_ctrl_c() {
    use std::io::{BufRead, BufReader};
    let server = servebench_testkit::script::in_background(|| {
        servebench_testkit::script::serve_by_request(first_answered_rest_hang)
    });
    let dir = tempfile::tempdir().unwrap();
    let mut child = draining_chat_run(&server.base_url(), dir.path());
    let seen_posts = || server.requests().iter().filter(|r| r.starts_with("POST /v1/chat")).count();
    while seen_posts() < 4 {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    servebench_testkit::cli::interrupt(&child);
    servebench_testkit::cli::interrupt(&child);
    let mut seen: Vec<String> =
        rx.iter().take_while(|l| !l.starts_with("Interrupted: sending nothing new")).collect();
    // Draining requests the server never answers: still running, nothing cancelled yet.
    std::thread::sleep(std::time::Duration::from_millis(600));
    seen.extend(rx.try_iter());
    assert!(child.try_wait().unwrap().is_none(), "the copy was taken as a second Ctrl-C: {seen:?}");
    assert!(!seen.iter().any(|l| l.contains("Interrupted again")), "{seen:?}");
    servebench_testkit::cli::interrupt(&child);
    let status = child.wait().unwrap();
    seen.extend(rx.iter());
    assert_eq!(status.code(), Some(130), "{seen:?}");
    assert_eq!(seen.iter().filter(|l| l.starts_with("Interrupted again: cancelling")).count(), 1, "{seen:?}");
    assert!(dir.path().join("run.json").exists(), "{seen:?}");
}

/// Interrupts `child` (its stderr piped), waits for the line starting with `first_said` (the
/// first interrupt was taken), interrupts it again and waits for it: its exit code and stderr.
#[cfg(unix)]
fn interrupt_twice(child: &mut std::process::Child, first_said: &str) -> (Option<i32>, String) {
    use std::io::{BufRead, BufReader};
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|l| drop(tx.send(l))));
    servebench_testkit::cli::interrupt(child);
    let mut seen = Vec::new();
    for line in rx.iter() {
        seen.push(line.clone());
        if line.starts_with(first_said) {
            break;
        }
    }
    // A second Ctrl-C as a person presses it: signals within 100 ms of the first are one stop
    // signalled twice (`a_stop_signalled_twice_at_once_is_one_ctrl_c`).
    std::thread::sleep(std::time::Duration::from_millis(250));
    servebench_testkit::cli::interrupt(child);
    let status = child.wait().unwrap();
    seen.extend(rx.iter());
    (status.code(), seen.join("\n"))
}

/// Pins the error of a `--base-url` given with an endpoint path (a common slip): the model
/// lookup `GET …/v1/completions/v1/models` got the server's 404 and the run said only
/// "SB305 … HTTP 404: Not Found". It is now SB101 (exit 2) naming the fix.
#[test]
fn a_base_url_with_an_endpoint_path_is_refused_naming_the_fix() {
    use servebench_testkit::script::{w, Step};
    let server = servebench_testkit::script::in_background(|| {
        servebench_testkit::script::serve_by_request(|_| {
            vec![
                w("HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nNot Found"),
                Step::Close,
            ]
        })
    });
    let tok = crate::support::tokenizer();
    let base = format!("{}/v1/completions", server.base_url());
    let out = crate::support::bin()
        .args(["--base-url", &base, "--tokenizer", tok.to_str().unwrap(), "--num-prompts", "1"])
        .output()
        .unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("error[SB101]: invalid --base-url:")
            && err.contains("/v1/completions/v1/models answered 404"),
        "{err}"
    );
    assert!(err.contains("fix: give --base-url as scheme://host:port"), "{err}");
}

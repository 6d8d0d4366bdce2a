//! HTTP phase timing and the run validity verdict end to end, on the embedded simulator: new vs
//! reused connections with keep-alive and with a server that closes after each answer, TLS
//! handshake time only over HTTPS, the `http_phases` and `validity` blocks of the result, and
//! the verdict as the console's last line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;

use crate::support::{bin, text, tokenizer};

/// A saved run of `n` prompts at concurrency `c` with `extra` flags: stdout, result, records.
fn saved_run(n: &str, c: &str, extra: &[&str]) -> (String, Value, Vec<Value>) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let tok = tokenizer();
    let out = bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--disable-tqdm", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--num-prompts", n, "--max-concurrency", c, "--random-input-len", "16"])
        .args(["--random-output-len", "4", "--save-result", "--result-dir", d, "--result-filename", "r.json"])
        .args(extra)
        .output()
        .unwrap();
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let result: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
    let records = records.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    (stdout, result, records)
}

fn phases(r: &Value) -> &Value {
    let p = &r["phases"];
    assert!(p.is_object(), "every completed record has phases: {r}");
    p
}

/// Keep-alive at concurrency 1: at most one request opens a connection (the run may reuse the
/// one the readiness check opened), every other reuses it; a reused one has no DNS, connect or
/// TLS time, and the result counts the same.
#[test]
fn keep_alive_at_concurrency_one_opens_at_most_one_connection_and_reuses_it() {
    let (_, result, records) = saved_run("10", "1", &[]);
    assert_eq!(records.len(), 10);
    let new: Vec<&Value> = records.iter().map(phases).filter(|p| p["reused"] == false).collect();
    assert!(new.len() <= 1, "{records:?}");
    for r in &records {
        let p = phases(r);
        assert!(p.get("tls_us").is_none(), "no TLS over http: {p}");
        assert!(p.get("dns_us").is_none(), "127.0.0.1 is not resolved: {p}");
        if p["reused"] == true {
            assert!(p.get("connect_us").is_none(), "{p}");
        } else {
            assert!(p["connect_us"].is_u64(), "{p}");
        }
        // The timeline: written ≤ first byte ≤ head ≤ first token ≤ last byte (from dispatched).
        let dispatched = r["dispatched_us"].as_u64().unwrap();
        let head = r["headers_us"].as_u64().unwrap() - dispatched;
        let first_token = r["first_token_us"].as_u64().unwrap() - dispatched;
        let (w, fb, lb) = (
            p["written_us"].as_u64().unwrap(),
            p["first_byte_us"].as_u64().unwrap(),
            p["last_byte_us"].as_u64().unwrap(),
        );
        assert!(w <= fb && fb <= head && head <= first_token && first_token <= lb, "{r}");
    }
    let h = &result["http_phases"];
    assert_eq!(h["requests"], 10);
    assert_eq!(h["new_connections"].as_u64().unwrap(), new.len() as u64);
    assert_eq!(h["reused_connections"].as_u64().unwrap(), 10 - new.len() as u64);
    assert!(h["tls"].is_null() && h["dns"].is_null(), "{h}");
    assert_eq!(h["request_written"]["count"], 10);
    assert_eq!(h["last_byte"]["count"], 10);
}

/// A server that closes the connection after every streamed answer (the llama.cpp
/// personality): every request after the first opens its own connection, and over HTTPS each
/// new connection has its TLS handshake time.
#[test]
fn a_server_closing_after_each_answer_makes_every_request_connect_with_tls_over_https() {
    let (_, result, records) = saved_run("8", "1", &["--sim-personality", "llamacpp", "--sim-tls"]);
    let opened: Vec<&Value> = records.iter().skip(1).map(phases).collect();
    for p in &opened {
        assert_eq!(p["reused"], false, "{p}");
        assert!(p["connect_us"].is_u64() && p["tls_us"].is_u64(), "{p}");
    }
    let h = &result["http_phases"];
    assert!(h["new_connections"].as_u64().unwrap() >= 7, "{h}");
    assert!(h["tls"]["count"].as_u64().unwrap() >= 7, "{h}");
    assert_eq!(h["tls"]["count"], h["new_connections"], "{h}");
    assert_eq!(h["connect"]["count"], h["new_connections"], "{h}");
}

/// A run whose load rules hold: the `validity` block lists each rule with its measured value
/// and threshold, none of the load rules fires, and the console ends with the verdict. (The
/// client-health rules depend on the machine the test runs on; they are pinned by unit tests.)
#[test]
fn a_sound_run_passes_the_load_rules_and_ends_with_its_verdict() {
    let (stdout, result, _) = saved_run("16", "2", &[]);
    let v = &result["validity"];
    let rules = v["rules"].as_array().unwrap();
    for id in ["failures", "too_few_requests", "early_stop", "interrupted"] {
        let r = rules.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("{id}: {v}"));
        assert_eq!(r["level"], "ok", "{r}");
        assert!(r["measured"].is_number() && r["threshold"].is_number(), "{r}");
    }
    let verdict = v["verdict"].as_str().unwrap();
    let line = match verdict {
        "ok" => "Run validity: ok (".to_owned(),
        "warn" => "Run validity: warn: ".to_owned(),
        other => panic!("{other}: {v}"),
    };
    let last = stdout.trim_end().lines().last().unwrap();
    assert!(last.starts_with(&line), "the verdict is the last line: {stdout}");
}

/// Three requests at `--max-concurrency 64`: the concurrency asked was never reached, so the run
/// is invalid; the exit code stays 0 (the verdict informs, it does not fail the run). The HTML
/// report shows the verdict and the phases chart.
#[test]
fn three_requests_at_concurrency_64_are_too_few_and_the_run_is_invalid() {
    let html = tempfile::NamedTempFile::new().unwrap();
    let (stdout, result, _) = saved_run("3", "64", &["--html-report", html.path().to_str().unwrap()]);
    let v = &result["validity"];
    assert_eq!(v["verdict"], "invalid", "{v}");
    let r = v["rules"].as_array().unwrap().iter().find(|r| r["id"] == "too_few_requests").unwrap();
    assert_eq!(r["level"], "invalid");
    assert!((r["measured"].as_f64().unwrap() - 3.0 / 64.0).abs() < 1e-12, "{r}");
    assert_eq!(r["threshold"], 1.0);
    assert!(
        stdout.contains("Run validity: INVALID: ")
            && stdout.contains("too_few_requests (3 completed for --max-concurrency 64: 0.05 per slot < 1)"),
        "{stdout}"
    );
    // The HTML report shows the verdict in the run's card and charts the phases.
    let page = std::fs::read_to_string(html.path()).unwrap();
    assert!(
        page.contains("<details class=\"validity invalid\" id=\"validity\"><summary>Run validity: INVALID: "),
        "validity"
    );
    assert!(page.contains("<li class=\"invalid\">too_few_requests: invalid — 3 completed"), "the rule");
    assert!(page.contains("id=\"http-phases\""), "the phases chart");
}

//! A native backend through the whole binary: `--backend anthropic` against a scripted
//! 127.0.0.1 server that answers `/v1/messages` with the hand-written Anthropic fixture (and
//! 404 to `/tokenize`). Also the flag checks of native backends made before any traffic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_testkit::script::{in_background, serve_by_request, w, Step};

use crate::support::bin;

const FIXTURE: &str = include_str!("../../../servebench-client/tests/fixtures/anthropic_stream.sse");

/// Serves every connection one response (then closes): the fixture for POST /v1/messages,
/// 404 otherwise. Records the requests.
fn respond(request: &str) -> Vec<Step> {
    let resp = if request.starts_with("POST /v1/messages ") {
        format!("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{FIXTURE}")
    } else {
        "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned()
    };
    vec![w(resp), Step::Close]
}

#[test]
fn anthropic_backend_end_to_end_with_server_token_counts() {
    let server = in_background(|| serve_by_request(respond));
    let port = server.port;
    let dir = tempfile::tempdir().unwrap();
    let tok = servebench_testkit::fixtures::smollm2_tokenizer();
    let out = bin()
        .env("ANTHROPIC_API_KEY", "sk-ant-e2e-secret")
        .args(["--backend", "anthropic", "--base-url", &format!("http://127.0.0.1:{port}")])
        .args(["--model", "claude-x", "--tokenizer", tok.to_str().unwrap(), "--num-prompts", "4"])
        .args(["--random-input-len", "16", "--random-output-len", "8", "--disable-tqdm"])
        .args(["--save-result", "--result-dir", dir.path().to_str().unwrap(), "--result-filename", "r.json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("sk-ant") && !stderr.contains("sk-ant"));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(json["backend"], "anthropic");
    assert_eq!(json["completed"], 4);
    // message_delta usage.output_tokens = 7 per request.
    assert_eq!(json["total_output_tokens"], 28);
    let ta = &json["token_accounting"];
    assert_eq!(ta["output_source"], "usage");
    // Server prompt = input 10 + cache read 15 = 25 against the client's 16: +9 each.
    assert_eq!(ta["prompt_server_vs_client"]["requests"], 4);
    assert_eq!(ta["prompt_server_vs_client"]["mean_diff"], 9.0);
    // 7 usage tokens over 3 token events (thinking, "Hi", " there").
    assert_eq!(ta["usage_vs_events"]["mean_diff"], -4.0);
    assert_eq!(json["cached_input_tokens"], 60);
    let records = std::fs::read_to_string(dir.path().join("r.json.records.jsonl")).unwrap();
    assert!(!records.contains("sk-ant"));

    let heads = server.requests();
    let msgs: Vec<&String> = heads.iter().filter(|h| h.starts_with("POST /v1/messages ")).collect();
    assert!(msgs.len() >= 4, "{heads:?}"); // the readiness check may add one
    let h = msgs[0].to_ascii_lowercase();
    assert!(h.contains("x-api-key: sk-ant-e2e-secret") && h.contains("anthropic-version: 2023-06-01"));
    assert!(!h.contains("authorization:"));
}

#[test]
fn native_backends_refuse_token_id_prompts_before_any_traffic() {
    let out = bin()
        .args([
            "--backend",
            "sglang",
            "--prompt-token-ids",
            "--base-url",
            "http://127.0.0.1:9",
            "--model",
            "m",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("SB101") && stderr.contains("text prompts only"), "{stderr}");
}

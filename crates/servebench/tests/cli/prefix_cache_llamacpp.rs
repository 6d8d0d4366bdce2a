//! A controlled prefix-cache hit rate against a scripted llama.cpp `llama-server`: it reports
//! the cached prompt tokens only in its non-standard `timings.cache_n` (usage without
//! `prompt_tokens_details`, riding in the finish chunk of a completions stream), and its cache
//! is one slot that keeps the last prompt (a longest-common-prefix match, token by token).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use servebench_testkit::script::{body_of, chunk, in_background, serve_by_request, w, Step, END};

use crate::support::bin;

/// llama.cpp's head for a streamed answer (it closes the connection after the stream).
const HEAD: &str = "HTTP/1.1 200 OK\r\nKeep-Alive: timeout=5, max=100\r\nContent-Type: text/event-stream\r\nServer: llama.cpp\r\nTransfer-Encoding: chunked\r\nAccess-Control-Allow-Origin: \r\n\r\n";

pub(crate) fn ids(request: &str) -> Vec<u64> {
    let body: serde_json::Value = serde_json::from_str(body_of(request)).unwrap_or_default();
    body["prompt"]
        .as_array()
        .map(|a| a.iter().filter_map(serde_json::Value::as_u64).collect())
        .unwrap_or_default()
}

/// A llama.cpp completions stream of 4 tokens for a prompt of `n` tokens, `cached` from the slot.
pub(crate) fn stream(n: usize, cached: usize) -> String {
    let mut s = String::from(HEAD);
    for t in ["Hi", " the", "re", "!"] {
        let ev = format!(
            "data: {{\"choices\":[{{\"text\":\"{t}\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}}],\"created\":1764900000,\"model\":\"smollm2\",\"system_fingerprint\":\"b7200-1a2b3c4d\",\"object\":\"text_completion\",\"id\":\"chatcmpl-Qx7\"}}\n\n"
        );
        s.push_str(&chunk(&ev));
    }
    let fin = format!(
        "data: {{\"choices\":[{{\"text\":\"\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}}],\"created\":1764900000,\"model\":\"smollm2\",\"system_fingerprint\":\"b7200-1a2b3c4d\",\"object\":\"text_completion\",\"usage\":{{\"completion_tokens\":4,\"prompt_tokens\":{n},\"total_tokens\":{}}},\"id\":\"chatcmpl-Qx7\",\"timings\":{{\"cache_n\":{cached},\"prompt_n\":{},\"prompt_ms\":4.1,\"prompt_per_token_ms\":0.05,\"prompt_per_second\":20000.0,\"predicted_n\":4,\"predicted_ms\":3.2,\"predicted_per_token_ms\":0.8,\"predicted_per_second\":1250.0}}}}\n\n",
        n + 4,
        n - cached
    );
    s.push_str(&chunk(&fin));
    s.push_str(&chunk("data: [DONE]\n\n"));
    s.push_str(END);
    s
}

/// One slot: `cache_n` is the common prefix with the last prompt it processed.
fn respond(slot: &Mutex<Vec<u64>>, request: &str) -> Vec<Step> {
    if request.starts_with("POST /v1/completions ") {
        let prompt = ids(request);
        let mut last = slot.lock().unwrap();
        let cached =
            last.iter().zip(&prompt).take_while(|(a, b)| a == b).count().min(prompt.len().saturating_sub(1));
        *last = prompt.clone();
        return vec![w(stream(prompt.len(), cached)), Step::Close];
    }
    let body = if request.starts_with("GET /v1/models ") {
        r#"{"object":"list","data":[{"id":"smollm2","object":"model","created":1764900000,"owned_by":"llamacpp","meta":{"n_ctx_train":8192}}]}"#
    } else {
        return vec![
            w("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            Step::Close,
        ];
    };
    let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
    vec![w(head + body), Step::Close]
}

#[test]
fn llama_cpp_cache_n_is_the_observed_hit_rate() {
    let slot = Arc::new(Mutex::new(Vec::new()));
    let server = in_background(move || serve_by_request(move |r| respond(&slot, r)));
    let dir = tempfile::tempdir().unwrap();
    let tok = servebench_testkit::fixtures::smollm2_tokenizer();
    let out = bin()
        .args(["--backend", "openai", "--base-url", &server.base_url(), "--model", "smollm2"])
        .args(["--tokenizer", tok.to_str().unwrap(), "--prompt-token-ids", "--max-concurrency", "1"])
        .args(["--num-prompts", "6", "--random-input-len", "320", "--random-output-len", "4"])
        .args(["--prefix-cache-hit-rate", "0.7", "--disable-tqdm"])
        .args(["--save-result", "--result-dir", dir.path().to_str().unwrap(), "--result-filename", "r.json"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    let pc = &json["prefix_cache"];
    // 0.7 × 320 = 224 tokens = 14 blocks: every measured prompt finds them in the slot.
    assert_eq!(pc["constructed_hit_rate"], 0.7, "{pc}");
    assert_eq!(pc["observed_hit_rate"], 0.7, "{pc}");
    assert_eq!(pc["observed_requests"], 6);
    assert_eq!(json["cached_input_tokens"], 6 * 224);
    // No vLLM prefix-cache counters on this server: null, not 0.
    assert!(pc["server_hit_rate"].is_null(), "{pc}");
    assert!(!stderr.contains("prefix cache: hit rate"), "{stderr}");
}

/// The simulator as llama.cpp (usage in the finish chunk, `timings.cache_n`): the cached count
/// is in that finish chunk, so the observed rate is the built-in one.
#[test]
fn simulated_llama_cpp_reports_its_cache_in_the_finish_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let out = bin()
        .args([
            "--sim",
            "--sim-mode",
            "engine",
            "--sim-personality",
            "llamacpp",
            "--sim-tokenizer",
            "cl100k_base",
        ])
        .args(["--backend", "openai", "--prompt-token-ids", "--random-output-len", "4", "--disable-tqdm"])
        .args(["--num-prompts", "10", "--random-input-len", "320", "--prefix-cache-hit-rate", "0.7"])
        .args(["--max-concurrency", "1"])
        .args(["--save-result", "--result-dir", dir.path().to_str().unwrap(), "--result-filename", "r.json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.json")).unwrap()).unwrap();
    assert_eq!(json["prefix_cache"]["observed_hit_rate"], 0.7, "{}", json["prefix_cache"]);
}

//! Personalities on the wire: each test pins the bytes one real server sends (as measured in
//! real-servers.md or documented by the project) and the simulator now reproduces.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::time::Duration;

use crate::common::{config, start, Conn};
use serde_json::{json, Value};
use servebench_sim::Personality;

fn sse(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|s| !s.is_empty())
        .map(|s| s.strip_prefix("data: ").unwrap().to_owned())
        .collect()
}

fn stream_body(max: u32) -> Value {
    json!({"model": crate::common::MODEL, "prompt": "hello there", "max_tokens": max, "ignore_eos": true, "stream": true})
}

#[tokio::test]
async fn llamacpp_completions_usage_rides_in_the_finish_chunk_with_timings() {
    let sim = start(config().with_personality(Personality::LlamaCpp)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/v1/completions", &stream_body(3)).await;
    let data = sse(&r.text());
    assert_eq!(data.last().unwrap(), "[DONE]");
    let events: Vec<Value> =
        data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    assert_eq!(events.len(), 3, "no separate usage chunk: {data:?}");
    let last = &events[2];
    assert_eq!(last["choices"][0]["finish_reason"], "length");
    assert_eq!(last["usage"]["completion_tokens"], 3);
    assert!(last["timings"]["predicted_n"].as_u64() == Some(3), "{last}");
    assert!(last["id"].as_str().unwrap().starts_with("chatcmpl-"), "llama.cpp's completions ids");
    assert!(events[0]["choices"][0].get("stop_reason").is_none());
    assert!(events[0].get("usage").is_none());
    sim.abort();
}

#[tokio::test]
async fn llamacpp_chat_role_chunk_has_null_content_and_a_separate_usage_chunk() {
    let sim = start(config().with_personality(Personality::LlamaCpp)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"model": "any-name", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let r = c.post_json("/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200, "llama.cpp ignores the model name");
    let data = sse(&r.text());
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    assert_eq!(first["choices"][0]["delta"], json!({"role": "assistant", "content": null}));
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage["choices"], json!([]));
    assert_eq!(usage["usage"]["completion_tokens"], 2);
    assert!(usage["timings"].is_object());
    sim.abort();
}

#[tokio::test]
async fn llamacpp_closes_after_every_streamed_answer_without_connection_close() {
    let sim = start(config().with_personality(Personality::LlamaCpp)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    // A non-streamed answer keeps the connection.
    let r = c.get("/v1/models").await;
    assert_eq!(r.header("keep-alive"), Some("timeout=5, max=100"));
    let r = c.post_json("/v1/completions", &stream_body(2)).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("keep-alive"), Some("timeout=5, max=100"));
    assert_eq!(r.header("connection"), None, "no Connection: close, as llama-server");
    // Then EOF: the server closed the connection after the streamed answer.
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(10), c.read_to_end_raw(&mut rest)).await.unwrap();
    assert_eq!(n, 0, "{:?}", String::from_utf8_lossy(&rest));
    sim.abort();
}

#[tokio::test]
async fn llamacpp_closes_idle_connections() {
    let mut cfg = config().with_personality(Personality::LlamaCpp);
    cfg.idle_close = Some(Duration::from_millis(100));
    let sim = start(cfg).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    assert_eq!(c.get("/health").await.status, 200);
    let mut rest = Vec::new();
    let n = tokio::time::timeout(Duration::from_secs(10), c.read_to_end_raw(&mut rest)).await.unwrap();
    assert_eq!(n, 0);
    sim.abort();
}

#[tokio::test]
async fn tokenize_dialects_per_personality() {
    let sim = start(config().with_personality(Personality::LlamaCpp)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/tokenize", &json!({"content": "Hello world"})).await;
    let ids = r.json()["tokens"].as_array().unwrap().clone();
    assert!(!ids.is_empty());
    let r = c.post_json("/tokenize", &json!({"prompt": "Hello world"})).await;
    assert_eq!(r.json(), json!({"tokens": []}), "vLLM's body gets an empty list");
    let r = c.post_json("/detokenize", &json!({"tokens": ids})).await;
    assert_eq!(r.json()["content"], "Hello world");
    sim.abort();

    let sim = start(config().with_personality(Personality::Tgi)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/tokenize", &json!({"inputs": "Hello world"})).await;
    let v = r.json();
    let items = v.as_array().unwrap();
    assert_eq!(items[0]["start"], 0);
    assert_eq!(items.last().unwrap()["stop"], 11);
    let r = c.post_json("/tokenize", &json!({"prompt": "Hello world"})).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["error_type"], "validation");
    assert_eq!(c.post_json("/detokenize", &json!({"tokens": [1]})).await.status, 404);
    sim.abort();

    let sim = start(config().with_personality(Personality::OpenAi)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/tokenize", &json!({"text": "Hello world"})).await;
    assert!(!r.json()["tokens"].as_array().unwrap().is_empty());
    let r = c.post_json("/tokenize", &json!({"prompt": "Hello world"})).await;
    assert_eq!(r.status, 400);
    assert!(r.text().lines().count() >= 3 && r.text().contains("Field required"), "{}", r.text());
    sim.abort();
}

#[tokio::test]
async fn error_shapes_models_and_metrics_per_personality() {
    let cases = [
        (Personality::Sglang, 400, "object", "sglang:prompt_tokens_total", "sglang"),
        (Personality::LlamaCpp, 400, "error", "llamacpp:prompt_tokens_total", "llamacpp"),
        (Personality::Tgi, 422, "error_type", "tgi_request_success", "system"),
    ];
    for (p, status, key, metric, owner) in cases {
        let sim = start(config().with_personality(p)).await;
        let mut c = Conn::connect(sim.local_addr()).await;
        let r = c.post_json("/v1/completions", &json!({"prompt": "x", "max_tokens": 0})).await;
        assert_eq!(r.status, status, "{p:?}: {}", r.text());
        assert!(r.json().get(key).is_some(), "{p:?}: {}", r.text());
        let r = c.post_json("/v1/completions", &json!({"prompt": "x", "max_tokens": 2})).await;
        assert_eq!(r.status, 200);
        let m = c.get("/metrics").await.text();
        assert!(m.contains(metric), "{p:?}: {m}");
        assert!(!m.contains("vllm:"), "{p:?}: {m}");
        let models = c.get("/v1/models").await.json();
        assert_eq!(models["data"][0]["owned_by"], owner, "{p:?}");
        sim.abort();
    }
    let sim = start(config().with_personality(Personality::OpenAi)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.get("/metrics").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["message"], "Invalid URL (GET /metrics)");
    let r = c.post_json("/v1/completions", &json!({"model": "nope", "prompt": "x"})).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["error"]["code"], "model_not_found");
    sim.abort();
}

#[tokio::test]
async fn sglang_ids_have_no_prefix_and_no_stop_reason() {
    let sim = start(config().with_personality(Personality::Sglang)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/v1/completions", &stream_body(2)).await;
    let data = sse(&r.text());
    let first: Value = serde_json::from_str(&data[0]).unwrap();
    let id = first["id"].as_str().unwrap();
    assert!(id.len() == 32 && id.chars().all(|c| c.is_ascii_hexdigit()), "{id}");
    assert!(first["choices"][0].get("stop_reason").is_none());
    sim.abort();
}

fn gunzip(data: &[u8]) -> String {
    let mut out = String::new();
    flate2::read::MultiGzDecoder::new(data).read_to_string(&mut out).unwrap();
    out
}

#[tokio::test]
async fn gateway_prefix_redirects_and_gzip() {
    let sim = start(config().with_personality(Personality::Gateway)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.get("/v1/models").await;
    assert_eq!(r.status, 307);
    assert_eq!(r.header("location"), Some("/gw/v1/models"));
    let r = c.post_json("/v1/completions?x=1", &stream_body(2)).await;
    assert_eq!(r.status, 308);
    assert_eq!(r.header("location"), Some("/gw/v1/completions?x=1"));
    assert_eq!(c.get("/gwx/v1/models").await.status, 404, "prefixes join by path segment");
    // No Accept-Encoding: any coding is acceptable, and the gateway gzips.
    let r = c.get("/gw/v1/models").await;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let v: Value = serde_json::from_str(&gunzip(&r.body)).unwrap();
    assert_eq!(v["data"][0]["id"], crate::common::MODEL);
    let r = c.request("GET", "/gw/v1/models", &[("accept-encoding", "identity")], b"").await;
    assert_eq!(r.header("content-encoding"), None);
    assert_eq!(r.json()["data"][0]["id"], crate::common::MODEL);
    // A stream is gzipped with a flush per event: every chunk decodes on its own.
    let r = c.post_json("/gw/v1/completions", &stream_body(3)).await;
    assert_eq!(r.header("content-encoding"), Some("gzip"));
    let mut dec = flate2::write::GzDecoder::new(Vec::new());
    use std::io::Write;
    for (_, chunk) in &r.chunks[..r.chunks.len() - 1] {
        dec.write_all(chunk).unwrap();
        dec.flush().unwrap();
        let so_far = String::from_utf8(dec.get_ref().clone()).unwrap();
        assert!(so_far.ends_with("\n\n"), "{so_far:?}");
    }
    assert!(gunzip(&r.body).ends_with("data: [DONE]\n\n"));
    sim.abort();
}

//! Models, health, tokenize/detokenize, request ids and error shapes.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn models_and_health() {
    let sim = start(config().with_max_model_len(4096)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.get("/v1/models").await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["object"], "list");
    let card = &v["data"][0];
    assert_eq!(card["id"], MODEL);
    assert_eq!(card["object"], "model");
    assert_eq!(card["owned_by"], "servebench-sim");
    assert_eq!(card["root"], MODEL);
    assert_eq!(card["max_model_len"], 4096);
    assert!(card["created"].as_u64().unwrap() > 1_600_000_000);
    // Same connection (keep-alive).
    let r = c.get("/health").await;
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty());
    let r = c.get("/nope").await;
    assert_eq!(r.status, 404);
    assert_eq!(r.json(), json!({"detail": "Not Found"}));
    let r = c.get("/v1/completions").await;
    assert_eq!(r.status, 405);
    sim.shutdown().await;
}

#[tokio::test]
async fn tokenize_detokenize_round_trip() {
    let sim = start(config().with_max_model_len(2048)).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let text = "Benchmarks should measure what they claim: time to first token, then every gap.";
    let r = c.post_json("/tokenize", &json!({"model": MODEL, "prompt": text})).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    let tokens: Vec<u32> =
        v["tokens"].as_array().unwrap().iter().map(|t| t.as_u64().unwrap() as u32).collect();
    assert_eq!(tokens, tok.encode(text, true).unwrap());
    assert_eq!(v["count"], tokens.len() as u64);
    assert_eq!(v["max_model_len"], 2048);
    let r = c.post_json("/detokenize", &json!({"model": MODEL, "tokens": tokens})).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"prompt": text}));
    // Unknown model and out-of-vocabulary ids.
    let r = c.post_json("/tokenize", &json!({"model": "other", "prompt": text})).await;
    assert_eq!(r.status, 404);
    let r = c.post_json("/detokenize", &json!({"model": MODEL, "tokens": [u32::MAX]})).await;
    assert_eq!(r.status, 400);
    sim.shutdown().await;
}

#[tokio::test]
async fn request_id_is_echoed_and_used() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"model": MODEL, "prompt": "hi", "max_tokens": 2, "stream": true}).to_string();
    let r = c.post("/v1/completions", &[("x-request-id", "bench-42")], body.as_bytes()).await;
    assert_eq!(r.header("x-request-id"), Some("bench-42"));
    assert_eq!(r.sse_json()[0]["id"], "cmpl-bench-42");
    let body = json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2});
    let r = c.post("/v1/chat/completions", &[("X-Request-Id", "abc")], body.to_string().as_bytes()).await;
    assert_eq!(r.header("x-request-id"), Some("abc"));
    assert_eq!(r.json()["id"], "chatcmpl-abc");
    // Without the header the id is generated, and unique.
    let a = c.post_json("/v1/completions", &json!({"prompt": "hi", "max_tokens": 1})).await.json();
    let b = c.post_json("/v1/completions", &json!({"prompt": "hi", "max_tokens": 1})).await.json();
    assert_ne!(a["id"], b["id"]);
    assert_eq!(a["id"].as_str().unwrap().len(), "cmpl-".len() + 32);
    // An error response still echoes the id.
    let r = c.post("/v1/completions", &[("x-request-id", "bad-1")], b"{").await;
    assert_eq!(r.status, 400);
    assert_eq!(r.header("x-request-id"), Some("bad-1"));
    sim.shutdown().await;
}

#[allow(clippy::unwrap_used)]
fn assert_error(r: &Resp, status: u16, kind: &str, needle: &str) {
    assert_eq!(r.status, status, "{}", r.text());
    let v = r.json();
    let e = &v["error"];
    assert_eq!(e["code"], status);
    assert_eq!(e["type"], kind);
    assert!(e["param"].is_null());
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains(needle), "message {msg:?} lacks {needle:?}");
}

#[tokio::test]
async fn bad_json_unknown_models_and_long_prompts_get_vllms_error_bodies() {
    let sim = start(config().with_max_model_len(64)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post("/v1/completions", &[], b"{not json").await;
    assert_error(&r, 400, "BadRequestError", "JSON");
    let r = c.post_json("/v1/completions", &json!({"model": "gpt-unknown", "prompt": "x"})).await;
    assert_error(&r, 404, "NotFoundError", "The model `gpt-unknown` does not exist.");
    let r = c.post_json("/v1/chat/completions", &json!({"model": "nope", "messages": []})).await;
    assert_error(&r, 404, "NotFoundError", "nope");
    let r = c.post_json("/v1/completions", &json!({"model": MODEL})).await;
    assert_error(&r, 400, "BadRequestError", "prompt");
    let r = c.post_json("/v1/chat/completions", &json!({"model": MODEL})).await;
    assert_error(&r, 400, "BadRequestError", "messages");
    let long = "word ".repeat(200);
    let r = c.post_json("/v1/completions", &json!({"model": MODEL, "prompt": long})).await;
    assert_error(&r, 400, "BadRequestError", "maximum context length is 64 tokens");
    let r = c.post_json("/v1/completions", &json!({"model": MODEL, "prompt": "hi", "max_tokens": 64})).await;
    assert_error(&r, 400, "BadRequestError", "too large");
    let r = c.post_json("/v1/completions", &json!({"model": MODEL, "prompt": "hi", "max_tokens": -1})).await;
    assert_error(&r, 400, "BadRequestError", "max_tokens");
    let r =
        c.post_json("/v1/completions", &json!({"model": MODEL, "prompt": "hi", "max_tokens": "ten"})).await;
    assert_error(&r, 400, "BadRequestError", "");
    let r = c
        .post_json(
            "/v1/chat/completions",
            &json!({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "file", "file": {"file_id": "x"}}]}]}),
        )
        .await;
    assert_error(&r, 400, "BadRequestError", "'file'");
    let r = c
        .post_json("/v1/chat/completions", &json!({"model": MODEL, "messages": [{"role": "user"}], "n": 0}))
        .await;
    assert_error(&r, 400, "BadRequestError", "n must be");
    // Unknown fields are ignored; a missing model means the served one (as vLLM).
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"prompt": "hi", "max_tokens": 1, "temperature": 0.5, "whatever": [1]}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["model"], MODEL);
    sim.shutdown().await;
}

#[tokio::test]
async fn oversized_body_is_rejected() {
    let mut cfg = config();
    cfg.max_body_bytes = 64;
    let sim = start(cfg).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/v1/completions", &json!({"model": MODEL, "prompt": "x".repeat(100)})).await;
    assert_eq!(r.status, 413);
    assert_eq!(r.json()["error"]["code"], 413);
    sim.shutdown().await;
}

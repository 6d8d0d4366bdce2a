//! Prompt-length verification against `/tokenize` dialects real servers speak.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::{BenchError, ChatMessages, Prompt, TextTokenizer, Workload};
use servebench_runner::prepare::{ServerTokenize, Verification};
use std::sync::Arc;

use servebench_testkit::axum_server::serve;

async fn verify(app: Router, w: &mut Workload) -> servebench_core::Result<Verification> {
    let base = serve(app).await;
    let client = HttpClient::new(ClientOptions { base_url: base, ..ClientOptions::default() }).unwrap();
    let server = ServerTokenize::new(client, Default::default(), "m");
    crate::common::verify_held(&server, w, 10).await
}

#[tokio::test]
async fn gateway_400_and_404_mean_unavailable_not_failure() {
    let tok = crate::common::cl100k();
    for status in [StatusCode::BAD_REQUEST, StatusCode::NOT_FOUND] {
        let app = Router::new().route("/tokenize", post(move || async move { (status, "no such route") }));
        let mut w = crate::common::three_prompts(tok.as_ref());
        let v = verify(app, &mut w).await.unwrap();
        assert!(matches!(v, Verification::Unavailable { .. }), "{status}: {v:?}");
    }
}

#[tokio::test]
async fn other_dialects_mean_unavailable() {
    let tok = crate::common::cl100k();
    // A server whose /tokenize answers another shape (llama.cpp-like `{"tokens": []}` for a
    // differently named field, or ids under another key).
    let shapes = [json!({"ids": [1, 2, 3]}), json!({"tokens": []}), json!([1, 2, 3])];
    for shape in shapes {
        let body = shape.clone();
        let app = Router::new().route("/tokenize", post(move || async move { Json(body) }));
        let mut w = crate::common::three_prompts(tok.as_ref());
        let v = verify(app, &mut w).await.unwrap();
        assert!(matches!(v, Verification::Unavailable { .. }), "{shape}: {v:?}");
    }
}

#[tokio::test]
async fn persistent_5xx_is_a_coded_failure() {
    let tok = crate::common::cl100k();
    let app =
        Router::new().route("/tokenize", post(|| async { (StatusCode::INTERNAL_SERVER_ERROR, "boom") }));
    let mut w = crate::common::three_prompts(tok.as_ref());
    let err = verify(app, &mut w).await.unwrap_err();
    assert!(matches!(err, BenchError::TokenizeFailed { .. }), "{err:?}");
    assert_eq!(err.code().as_str(), "SB303");
}

const BOS: u32 = 100_257;

/// A vLLM-like server whose tokenizer adds a BOS token the client's does not.
fn bos_server(tok: &Arc<dyn TextTokenizer>) -> Router {
    let t2 = tok.clone();
    Router::new().route("/tokenize", bos_tokenize(tok)).route(
        "/detokenize",
        post(move |Json(b): Json<Value>| {
            let t = t2.clone();
            async move {
                let ids: Vec<u32> = serde_json::from_value(b["tokens"].clone()).unwrap();
                let ids: Vec<u32> = ids.into_iter().filter(|&i| i != BOS).collect();
                Json(json!({"prompt": t.decode(&ids, false).unwrap()}))
            }
        }),
    )
}

/// `/tokenize` of [`bos_server`]: BOS, then the client tokenizer's ids.
fn bos_tokenize(tok: &Arc<dyn TextTokenizer>) -> axum::routing::MethodRouter {
    let t1 = tok.clone();
    post(move |Json(b): Json<Value>| {
        let t = t1.clone();
        async move {
            let mut ids = vec![BOS];
            ids.extend(t.encode(b["prompt"].as_str().unwrap_or(""), false).unwrap());
            Json(json!({"count": ids.len(), "max_model_len": 4096, "tokens": ids}))
        }
    })
}

/// Every prompt is one token longer on the server, so every prompt is rewritten to the exact
/// target.
#[tokio::test]
async fn mismatch_rewrites_every_prompt_to_the_exact_server_length() {
    let tok = crate::common::cl100k();
    let mut w = crate::common::three_prompts(tok.as_ref());
    let targets: Vec<u32> = w.requests.iter().map(|r| r.prompt_tokens).collect();
    let v = verify(bos_server(&tok), &mut w).await.unwrap();
    match v {
        Verification::Fixed { checked, fixed, unresolved } => {
            assert_eq!((checked, fixed, unresolved), (3, 3, 0));
        }
        other => panic!("expected Fixed, got {other:?}"),
    }
    for (r, target) in w.requests.iter().zip(targets) {
        let Prompt::Text(t) = &r.prompt else { unreachable!() };
        // On the server (BOS + text) the prompt is now exactly the target length.
        assert_eq!(1 + tok.count(t).unwrap() as u32, target, "{t:?}");
        assert_eq!(r.prompt_tokens, target);
    }
}

/// `--enable-multimodal-chat`: a rewritten prompt is rewritten inside its pre-built messages
/// too, so the body sends the verified text.
#[tokio::test]
async fn mismatch_rewrites_prebuilt_messages_too() {
    let tok = crate::common::cl100k();
    let mut w = crate::common::three_prompts(tok.as_ref());
    let image: Arc<str> =
        Arc::from(r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}"#);
    for r in &mut w.requests {
        let text = r.prompt.text().unwrap().to_string();
        r.messages = Some(ChatMessages::user_turn(&text, std::slice::from_ref(&image)).unwrap());
    }
    let v = verify(bos_server(&tok), &mut w).await.unwrap();
    assert!(matches!(v, Verification::Fixed { fixed: 3, unresolved: 0, .. }), "{v:?}");
    for r in &w.requests {
        let m: Value = serde_json::from_str(&r.messages.as_ref().unwrap().json).unwrap();
        assert_eq!(m[0]["content"][0]["text"].as_str(), r.prompt.text());
        assert_eq!(m[0]["content"][1]["image_url"]["url"], "data:image/png;base64,AA==");
    }
}

/// Pins a rewrite that misses its target being left unapplied: the prompt is kept as written
/// (docs/backends.md), and counted as not made exact. It was sent rewritten anyway — sharegpt
/// and custom prompts arrived scrambled while the console said "rewrote 0 prompts". This
/// server's /detokenize answers a text of its own whatever the ids, so no rewrite can land.
#[tokio::test]
async fn a_rewrite_that_misses_its_target_is_not_applied() {
    let tok = crate::common::cl100k();
    let mut w = crate::common::three_prompts(tok.as_ref());
    let before: Vec<(Prompt, u32)> = w.requests.iter().map(|r| (r.prompt.clone(), r.prompt_tokens)).collect();
    let scramble = post(|| async { Json(json!({"prompt": "scrambled words"})) });
    let app = Router::new().route("/tokenize", bos_tokenize(&tok)).route("/detokenize", scramble);
    let v = verify(app, &mut w).await.unwrap();
    assert!(matches!(v, Verification::Fixed { fixed: 0, unresolved: 3, .. }), "{v:?}");
    let after: Vec<(Prompt, u32)> = w.requests.iter().map(|r| (r.prompt.clone(), r.prompt_tokens)).collect();
    assert_eq!(after, before, "every prompt as written");
}

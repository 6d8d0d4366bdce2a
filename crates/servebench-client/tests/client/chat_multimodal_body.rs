//! Chat bodies carry a request's multimodal parts after the text part (random-mm); the
//! completions body refuses them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_client::{BackendKind, BodyTemplate, TargetConfig};
use servebench_core::{Prompt, RequestSpec};
use std::sync::Arc;

fn spec_with_images() -> RequestSpec {
    let mut s = RequestSpec::new(0, Prompt::Text(Arc::from("describe \"these\"")), 3, 7);
    s.multimodal = Some(
        vec![
            Arc::from(r#"{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,AAAA"}}"#),
            Arc::from(r#"{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,BBBB"}}"#),
        ]
        .into(),
    );
    s
}

#[test]
fn chat_content_is_text_then_images() {
    let cfg = TargetConfig { backend: BackendKind::Chat, model: "m".into(), ..TargetConfig::default() };
    let t = BodyTemplate::new(BackendKind::Chat, &cfg).unwrap();
    let body: serde_json::Value =
        serde_json::from_slice(&t.build_spec(&spec_with_images()).unwrap()).unwrap();
    let content = &body["messages"][0]["content"];
    assert_eq!(content[0], serde_json::json!({"type": "text", "text": "describe \"these\""}));
    assert_eq!(content[1]["image_url"]["url"], "data:image/jpeg;base64,AAAA");
    assert_eq!(content[2]["image_url"]["url"], "data:image/jpeg;base64,BBBB");
    assert_eq!(content.as_array().unwrap().len(), 3);
    assert_eq!(body["max_completion_tokens"], 7);
}

#[test]
fn completions_refuse_multimodal_parts() {
    let cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    let t = BodyTemplate::new(BackendKind::Completions, &cfg).unwrap();
    assert!(t.build_spec(&spec_with_images()).is_err());
}

/// `--enable-multimodal-chat`: the dataset pre-builds the whole `messages` array; the chat body
/// sends it as it is, byte for byte the body of the same request with parts assembled per
/// request.
#[test]
fn prebuilt_messages_give_the_same_chat_body() {
    let cfg = TargetConfig { backend: BackendKind::Chat, model: "m".into(), ..TargetConfig::default() };
    let t = BodyTemplate::new(BackendKind::Chat, &cfg).unwrap();
    let parts_spec = spec_with_images();
    let mut prebuilt = parts_spec.clone();
    let parts = prebuilt.multimodal.take().unwrap();
    prebuilt.messages = Some(servebench_core::ChatMessages::user_turn("describe \"these\"", &parts).unwrap());
    let raw = t.build_spec(&prebuilt).unwrap();
    assert_eq!(raw, t.build_spec(&parts_spec).unwrap());
    let body: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "model": "m",
            "messages": [{"role": "user", "content": [
                {"type": "text", "text": "describe \"these\""},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,BBBB"}}
            ]}],
            "max_completion_tokens": 7,
            "stream": true,
            "stream_options": {"include_usage": true}
        })
    );
    // Multimodal embeddings take the same messages.
    let e = BodyTemplate::new(BackendKind::EmbeddingsChat, &cfg).unwrap();
    let eb: serde_json::Value = serde_json::from_slice(&e.build_spec(&prebuilt).unwrap()).unwrap();
    assert_eq!(eb["messages"], body["messages"]);
    // Bodies without a messages field refuse them (the CLI refuses these backends earlier).
    for kind in [BackendKind::Completions, BackendKind::Responses, BackendKind::Embeddings] {
        assert!(BodyTemplate::new(kind, &cfg).unwrap().build_spec(&prebuilt).is_err(), "{kind}");
    }
}

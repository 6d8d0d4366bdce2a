//! Chat bodies carry a request's multimodal parts after the text part (random-mm); the
//! completions body refuses them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_client::backend::{BackendKind, BodyTemplate, TargetConfig};
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

//! Multi-turn bodies: `build_messages` writes the history as `messages` in the chat template's
//! field order, and is refused for completions bodies.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use servebench_client::{BackendKind, BodyTemplate, TargetConfig};

#[test]
fn chat_history_is_the_messages_field() {
    let cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    let t = BodyTemplate::new(BackendKind::Chat, &cfg).unwrap();
    let history =
        r#"[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}]"#;
    let raw = t.build_messages(history, 9).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&raw).unwrap();
    assert_eq!(v["model"], "m");
    assert_eq!(v["messages"][1]["content"], "b");
    assert_eq!(v["messages"].as_array().unwrap().len(), 3);
    assert_eq!(v["max_completion_tokens"], 9);
    assert_eq!(v["stream"], true);
    let completions = BodyTemplate::new(BackendKind::Completions, &cfg).unwrap();
    assert!(completions.build_messages(history, 9).is_err());
}

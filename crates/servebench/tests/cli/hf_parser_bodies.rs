//! Request bodies of vLLM's hf parsers, pinned whole: the committed fixtures
//! (fixtures/datasets/hf) turned into workloads and then into the body servebench sends, as
//! `vllm bench serve` sends it for the same rows.

use serde_json::{json, Value};
use servebench_client::{BackendKind, BodyTemplate, TargetConfig};
use servebench_core::Workload;
use servebench_data::dataset::hf::{generate_hf, HfConfig, HfSource};
use servebench_data::dataset::Sampling;
use servebench_data::{load_tokenizer, HubEnv};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    servebench_testkit::fixtures::repo_path("fixtures/datasets/hf").join(rel)
}

fn workload(rel: &str, id: &str, skip_chat_template: bool) -> Workload {
    workload_with(rel, id, skip_chat_template, false, "cl100k_base")
}

/// A workload of the rows, built for a chat backend or not, with the tokenizer `tok`.
fn workload_with(rel: &str, id: &str, skip_chat_template: bool, chat: bool, tok: &str) -> Workload {
    let mut cfg = HfConfig {
        source: HfSource::File(fixture(rel)),
        text_column: None,
        output_len: None,
        dataset_ids: vec![id.to_string()],
        chat: Default::default(),
        bfcl_categories: vec![],
        asr: Default::default(),
    };
    cfg.chat.skip_chat_template = skip_chat_template;
    cfg.chat.chat_messages = chat;
    let tok = load_tokenizer(tok).unwrap();
    let s = Sampling { num_prompts: 4, seed: 0, shuffle: false, oversample: false };
    generate_hf(&cfg, &s, tok.as_ref(), &HubEnv { offline: true, ..HubEnv::default() }).unwrap()
}

fn body(backend: BackendKind, cfg: &TargetConfig, w: &Workload, i: usize) -> Value {
    let t = BodyTemplate::new(backend, cfg).unwrap();
    serde_json::from_slice(&t.build_spec(&w.requests[i]).unwrap()).unwrap()
}

#[test]
fn bfcl_chat_body_carries_the_first_turn_and_the_translated_tools() {
    let w = workload(
        "gorilla-llm/Berkeley-Function-Calling-Leaderboard/BFCL_v3_simple.json",
        "gorilla-llm/Berkeley-Function-Calling-Leaderboard",
        false,
    );
    let mut cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    // Per-request tools win over --extra-body, as vLLM's request_overrides do.
    cfg.extra_body.insert("tools".into(), json!([]));
    cfg.extra_body.insert("temperature".into(), json!(0.0));
    let got = body(BackendKind::Chat, &cfg, &w, 0);
    let want = json!({
        "model": "m",
        "messages": [{"role": "user", "content": "What is the area of a circle with radius 3.5?"}],
        "max_completion_tokens": 512,
        "stream": true,
        "stream_options": {"include_usage": true},
        "temperature": 0.0,
        "tools": [{"type": "function", "function": {
            "name": "geometry.circle_area",
            "description": "Area of a circle.",
            "parameters": {"type": "object", "properties": {
                "radius": {"type": "number", "description": "The radius."}}, "required": ["radius"]}}}],
        "tool_choice": "auto"
    });
    assert_eq!(got, want);
    let raw = BodyTemplate::new(BackendKind::Chat, &cfg).unwrap().build_spec(&w.requests[0]).unwrap();
    assert_eq!(String::from_utf8_lossy(&raw).matches("\"tools\"").count(), 1, "no duplicate key");
}

#[test]
fn gsm8k_and_humaneval_bodies_send_vllms_text() {
    let cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    let w = workload("openai/gsm8k/test.jsonl", "openai/gsm8k", true);
    assert_eq!(
        body(BackendKind::Completions, &cfg, &w, 0),
        json!({"model": "m",
            "prompt": "A baker makes 12 rolls in the morning and 15 in the afternoon. She sells 20. How many rolls are left?",
            "max_tokens": 256, "stream": true, "stream_options": {"include_usage": true}, "logprobs": null})
    );
    let w = workload("openai/openai_humaneval/test.jsonl", "openai/openai_humaneval", true);
    let b = body(BackendKind::Chat, &cfg, &w, 1);
    assert_eq!(
        b["messages"],
        json!([{"role": "user", "content": [{"type": "text",
            "text": "def is_even(n: int) -> bool:\n    \"\"\"Return True when n is even.\n    >>> is_even(4)\n    True\n    \"\"\"\n"}]}])
    );
    assert_eq!(b["max_completion_tokens"], 256);
}

#[test]
fn vision_arena_and_mmstar_chat_bodies_carry_the_text_then_the_image() {
    let cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    let w = workload("lmarena-ai/VisionArena-Chat/train.jsonl", "lmarena-ai/VisionArena-Chat", false);
    let b = body(BackendKind::Chat, &cfg, &w, 1);
    let content = &b["messages"][0]["content"];
    assert_eq!(content[0], json!({"type": "text", "text": "Describe the image in one sentence."}));
    assert_eq!(content[1]["type"], "image_url");
    // Re-encoded as an RGB JPEG, as vLLM's process_image does.
    assert!(content[1]["image_url"]["url"].as_str().unwrap().starts_with("data:image/jpeg;base64,"));
    assert_eq!(content.as_array().unwrap().len(), 2);
    assert_eq!(b["max_completion_tokens"], 128);
    let w = workload("Lin-Chen/MMStar/val.jsonl", "Lin-Chen/MMStar", false);
    let b = body(BackendKind::Chat, &cfg, &w, 0);
    assert_eq!(b["messages"][0]["content"][0]["text"], "Which colour fills most of the image?");
}

#[test]
fn asr_rows_are_uploaded_as_vllm_uploads_them() {
    let w = workload("openslr/librispeech_asr/train.jsonl", "openslr/librispeech_asr", false);
    let cfg =
        TargetConfig { backend: BackendKind::Audio, model: "whisper".into(), ..TargetConfig::default() };
    let t = BodyTemplate::new(BackendKind::Audio, &cfg).unwrap();
    let raw = t.build_spec(&w.requests[1]).unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.contains("name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\nRIFF"));
    for (k, v) in
        [("model", "whisper"), ("max_completion_tokens", "1024"), ("stream", "True"), ("language", "en")]
    {
        assert!(text.contains(&format!("name=\"{k}\"\r\n\r\n{v}\r\n")), "{k}");
    }
    // The uploaded WAV is the row's clip: 1 s at 8 kHz, 16-bit mono.
    assert_eq!(w.requests[1].audio.as_ref().unwrap().wav.len(), 44 + 16_000);
}

#[test]
fn mlperf_bodies_send_the_rendered_template_to_completions_and_the_messages_to_chat() {
    let rows = "mgoin/mlperf-inference-llama3.1-data/train.jsonl";
    let id = "mgoin/mlperf-inference-llama3.1-data";
    let smollm2 = servebench_testkit::fixtures::smollm2_tokenizer_arg();
    let cfg = TargetConfig { model: "m".into(), ..TargetConfig::default() };
    // Completions: the prompt is the chat template rendered client-side, as vLLM sends it.
    let w = workload_with(rows, id, false, false, &smollm2);
    let b = body(BackendKind::Completions, &cfg, &w, 0);
    assert_eq!(
        b["prompt"],
        "<|im_start|>system\nYou are a helpful assistant who answers briefly.<|im_end|>\n\
         <|im_start|>user\nExplain in two sentences why the sky looks blue during the day.<|im_end|>\n\
         <|im_start|>assistant\n"
    );
    assert_eq!(b["max_tokens"], w.requests[0].expected_output_tokens);
    // Chat: the system prompt and the question as messages (the server renders once).
    let w = workload_with(rows, id, false, true, &smollm2);
    let b = body(BackendKind::Chat, &cfg, &w, 0);
    assert_eq!(b["messages"][0]["role"], "system");
    assert_eq!(
        b["messages"][1]["content"],
        "Explain in two sentences why the sky looks blue during the day."
    );
    assert_eq!(b["max_completion_tokens"], w.requests[0].expected_output_tokens);
}

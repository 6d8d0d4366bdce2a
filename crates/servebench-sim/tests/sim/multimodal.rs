//! Multimodal inputs: images (data URLs with a readable size, references counted without a
//! fetch) and audio parts count as prompt tokens by the documented rule, are reported in
//! `usage`, and lengthen prefill in engine mode.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use crate::common::{config, start, Conn};
use base64::Engine;
use serde_json::{json, Value};
use servebench_sim::EngineConfig;

fn png(w: u32, h: u32) -> String {
    let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    b.extend_from_slice(&w.to_be_bytes());
    b.extend_from_slice(&h.to_be_bytes());
    b.extend_from_slice(&[8, 2, 0, 0, 0]);
    format!("data:image/png;base64,{}", base64::engine::general_purpose::STANDARD.encode(b))
}

fn wav_b64(secs: f64) -> String {
    let n = (secs * 16_000.0) as u32 * 2;
    let mut b = b"RIFF".to_vec();
    b.extend_from_slice(&(36 + n).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&[1, 0, 1, 0]);
    b.extend_from_slice(&16_000u32.to_le_bytes());
    b.extend_from_slice(&32_000u32.to_le_bytes());
    b.extend_from_slice(&[2, 0, 16, 0]);
    b.extend_from_slice(b"data");
    b.extend_from_slice(&n.to_le_bytes());
    b.resize(b.len() + n as usize, 0);
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn chat(parts: Value) -> Value {
    json!({"model": crate::common::MODEL, "max_tokens": 2, "messages": [{"role": "user", "content": parts}]})
}

async fn prompt_tokens(c: &mut Conn, path: &str, body: &Value) -> u64 {
    let r = c.post_json(path, body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["usage"]["prompt_tokens"].as_u64().unwrap()
}

#[tokio::test]
async fn images_and_audio_count_as_prompt_tokens() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let text = json!({"type": "text", "text": "What is this?"});
    let base = prompt_tokens(&mut c, "/v1/chat/completions", &chat(json!([text]))).await;
    let cases = [
        // 280 x 56 pixels: 10 x 2 patches of 28.
        (json!({"type": "image_url", "image_url": {"url": png(280, 56)}}), 20),
        // A reference is not fetched: the default (a 448 x 448 image).
        (json!({"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}), 256),
        (json!({"type": "image_url", "image_url": {"url": "file:///data/cat.jpg"}}), 256),
        // 2 s of audio at 25 tokens/s.
        (json!({"type": "input_audio", "input_audio": {"data": wav_b64(2.0), "format": "wav"}}), 50),
        (
            json!({"type": "audio_url", "audio_url": {"url": format!("data:audio/wav;base64,{}", wav_b64(1.0))}}),
            25,
        ),
        (json!({"type": "audio_url", "audio_url": {"url": "https://example.com/a.mp3"}}), 250),
        // A video is never fetched: a fixed clip of 32 frames of 448 x 448, merged in pairs.
        (json!({"type": "video_url", "video_url": {"url": "https://example.com/v.mp4"}}), 4096),
    ];
    for (part, extra) in cases {
        let n = prompt_tokens(&mut c, "/v1/chat/completions", &chat(json!([text, part]))).await;
        assert_eq!(n, base + extra, "{part}");
    }
    // Two images count twice.
    let two = json!([text, {"type": "image_url", "image_url": {"url": png(280, 56)}},
        {"type": "image_url", "image_url": {"url": png(280, 56)}}]);
    assert_eq!(prompt_tokens(&mut c, "/v1/chat/completions", &chat(two)).await, base + 40);
    // Embeddings with chat messages take images as vLLM's do.
    let emb = json!({"model": crate::common::MODEL, "messages": [{"role": "user", "content": [text,
        {"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]});
    let emb_text = json!({"model": crate::common::MODEL, "messages": [{"role": "user", "content": [text]}]});
    let (with, without) = (
        prompt_tokens(&mut c, "/v1/embeddings", &emb).await,
        prompt_tokens(&mut c, "/v1/embeddings", &emb_text).await,
    );
    assert_eq!(with, without + 256);
    // Anthropic image blocks.
    let data = png(56, 56).split_once(',').unwrap().1.to_owned();
    let msg = |blocks: Value| json!({"model": crate::common::MODEL, "max_tokens": 2, "messages": [{"role": "user", "content": blocks}]});
    let plain = c.post_json("/v1/messages", &msg(json!([{"type": "text", "text": "hi"}]))).await.json();
    let img = c
        .post_json(
            "/v1/messages",
            &msg(json!([{"type": "text", "text": "hi"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}])),
        )
        .await
        .json();
    assert_eq!(
        img["usage"]["input_tokens"].as_u64().unwrap(),
        plain["usage"]["input_tokens"].as_u64().unwrap() + 4
    );
    // Responses API `input_image` parts.
    let resp = |parts: Value| json!({"model": crate::common::MODEL, "max_output_tokens": 2, "input": [{"role": "user", "content": parts}]});
    let plain =
        c.post_json("/v1/responses", &resp(json!([{"type": "input_text", "text": "hi"}]))).await.json();
    let img = c
        .post_json(
            "/v1/responses",
            &resp(json!([{"type": "input_text", "text": "hi"},
            {"type": "input_image", "image_url": png(280, 56)}])),
        )
        .await
        .json();
    assert_eq!(
        img["usage"]["input_tokens"].as_u64().unwrap(),
        plain["usage"]["input_tokens"].as_u64().unwrap() + 20
    );
    // Unknown part types are still refused.
    let r =
        c.post_json("/v1/chat/completions", &chat(json!([{"type": "file", "file": {"file_id": "x"}}]))).await;
    assert_eq!(r.status, 400);
    sim.abort();
}

#[tokio::test]
async fn an_image_lengthens_prefill_in_engine_mode() {
    let engine = EngineConfig {
        max_num_seqs: 8,
        kv_capacity_tokens: 1_000_000,
        prefill_tokens_per_s: 20_000.0,
        max_num_batched_tokens: 8192,
        decode_step_base: Duration::from_millis(2),
        decode_per_seq: Duration::ZERO,
        jitter: 0.0,
        prefix_caching: false,
        block_size: 16,
        prefix_cache_blocks: 0,
        spec_k: 0,
        spec_acceptance: 0.7,
    };
    let sim = start(config().with_engine(engine).with_ground_truth(true)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    // 2800 x 2800 pixels: 100 x 100 = 10 000 image tokens, half a second of prefill at 20k tok/s.
    let body = chat(
        json!([{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": png(2800, 2800)}}]),
    );
    let n = prompt_tokens(&mut c, "/v1/chat/completions", &body).await;
    assert!(n >= 10_000, "{n}");
    let truth = sim.ground_truth();
    let t = &truth[0];
    let ttft = t.events[0].at - t.received;
    assert!(ttft >= Duration::from_secs_f64(10_000.0 / 20_000.0), "{ttft:?}");
    sim.abort();
}

//! Native dialect endpoints and transcriptions on the wire: TGI `/generate(_stream)`, SGLang
//! `/generate`, llama.cpp `/completion`, Anthropic `/v1/messages`, `/v1/audio/transcriptions`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common::{config, start, Conn};
use serde_json::{json, Value};
use servebench_sim::Personality;

/// `(event name, data)` of every SSE event.
fn events(text: &str) -> Vec<(Option<String>, String)> {
    text.split("\n\n")
        .filter(|s| !s.is_empty())
        .map(|block| {
            let mut name = None;
            let mut data = String::new();
            for l in block.lines() {
                if let Some(n) = l.strip_prefix("event: ") {
                    name = Some(n.to_owned());
                } else if let Some(d) = l.strip_prefix("data:") {
                    data = d.trim_start().to_owned();
                }
            }
            (name, data)
        })
        .collect()
}

fn json_events(text: &str) -> Vec<Value> {
    events(text)
        .into_iter()
        .filter(|(_, d)| d != "[DONE]")
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect()
}

#[tokio::test]
async fn tgi_generate_stream_one_event_per_token_with_details_last() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"inputs": "Hello world", "parameters": {"max_new_tokens": 4, "details": true,
        "decoder_input_details": false}, "stream": true});
    let r = c.post_json("/generate_stream", &body).await;
    assert_eq!(r.status, 200);
    let text = r.text();
    assert!(text.starts_with("data:{"), "no space after data:, as TGI: {text}");
    assert!(!text.contains("[DONE]"));
    let ev = json_events(&text);
    let n = ev.len();
    assert!((1..=4).contains(&n));
    assert!(ev[..n - 1].iter().all(|e| e["generated_text"].is_null() && e["details"].is_null()));
    let last = &ev[n - 1];
    assert_eq!(last["details"]["generated_tokens"], n);
    assert_eq!(last["details"]["input_length"], 2);
    let joined: String = ev.iter().map(|e| e["token"]["text"].as_str().unwrap()).collect();
    assert_eq!(last["generated_text"], joined);
    // `/generate`: one JSON answer.
    let r = c.post_json("/generate", &body).await;
    assert_eq!(r.json()["generated_text"], joined, "same content, same plan");
    // TGI validation errors are 422.
    let r = c.post_json("/generate_stream", &json!({"inputs": "", "parameters": {}})).await;
    assert_eq!(r.status, 422);
    assert_eq!(r.json()["error_type"], "validation");
    sim.abort();
}

#[tokio::test]
async fn sglang_generate_streams_cumulative_text_then_done() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"text": "Hello world", "sampling_params": {"max_new_tokens": 5, "ignore_eos": true}, "stream": true});
    let r = c.post_json("/generate", &body).await;
    let all = events(&r.text());
    assert_eq!(all.last().unwrap().1, "[DONE]");
    let ev = json_events(&r.text());
    assert_eq!(ev.len(), 5);
    let texts: Vec<&str> = ev.iter().map(|e| e["text"].as_str().unwrap()).collect();
    assert!(texts.windows(2).all(|w| w[1].starts_with(w[0]) && w[1].len() > w[0].len()), "{texts:?}");
    let meta = &ev[4]["meta_info"];
    assert_eq!(meta["finish_reason"]["type"], "length");
    assert_eq!(meta["completion_tokens"], 5);
    assert_eq!(meta["prompt_tokens"], 2);
    let body = json!({"text": "Hello world", "sampling_params": {"max_new_tokens": 5, "ignore_eos": true}});
    let v = c.post_json("/generate", &body).await.json();
    assert_eq!(v["text"], texts[4]);
    assert_eq!(v["meta_info"]["completion_tokens"], 5);
    sim.abort();
}

#[tokio::test]
async fn llamacpp_completion_stream_and_final_event() {
    let sim = start(config().with_personality(Personality::LlamaCpp)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"prompt": "Hello world", "n_predict": 3, "ignore_eos": true, "stream": true});
    let r = c.post_json("/completion", &body).await;
    let ev = json_events(&r.text());
    assert_eq!(ev.len(), 4);
    assert!(ev[..3].iter().all(|e| e["stop"] == false && !e["content"].as_str().unwrap().is_empty()));
    assert_eq!(ev[3]["stop"], true);
    assert_eq!(ev[3]["stop_type"], "limit");
    assert_eq!(ev[3]["tokens_predicted"], 3);
    assert!(ev[3]["timings"]["predicted_n"] == 3);
    // llama.cpp closed the connection after the stream: a new one.
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/generate", &json!({"inputs": "x"})).await;
    assert_eq!(r.status, 404, "llama.cpp has no /generate");
    assert_eq!(r.json()["error"]["type"], "not_found_error");
    sim.abort();
}

#[tokio::test]
async fn anthropic_messages_event_sequence() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"model": crate::common::MODEL, "max_tokens": 3, "stream": true, "ignore_eos": true,
        "system": "be brief", "messages": [{"role": "user", "content": "Hello"}]});
    let r = c.post_json("/v1/messages", &body).await;
    let ev = events(&r.text());
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_deref().unwrap()).collect();
    assert_eq!(
        names,
        [
            "message_start",
            "content_block_start",
            "ping",
            "content_block_delta",
            "content_block_delta",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop"
        ]
    );
    for (name, data) in &ev {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["type"], name.as_deref().unwrap(), "the data's type names the event");
    }
    let delta: Value = serde_json::from_str(&ev[7].1).unwrap();
    assert_eq!(delta["delta"]["stop_reason"], "max_tokens");
    assert_eq!(delta["usage"]["output_tokens"], 3);
    let body = json!({"model": crate::common::MODEL, "max_tokens": 3, "ignore_eos": true,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}]});
    let v = c.post_json("/v1/messages", &body).await.json();
    assert_eq!(v["type"], "message");
    assert_eq!(v["usage"]["output_tokens"], 3);
    let r = c.post_json("/v1/messages", &json!({"model": crate::common::MODEL, "messages": []})).await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["type"], "error");
    sim.abort();
}

/// A PCM WAV of `secs` seconds at 16 kHz mono 16-bit.
fn wav(secs: f64) -> Vec<u8> {
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
    b
}

fn form(fields: &[(&str, &str)], audio: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    for (k, v) in fields {
        body.extend_from_slice(
            format!("--bnd\r\nContent-Disposition: form-data; name=\"{k}\"\r\n\r\n{v}\r\n").as_bytes(),
        );
    }
    body.extend_from_slice(b"--bnd\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n");
    body.extend_from_slice(audio);
    body.extend_from_slice(b"\r\n--bnd--\r\n");
    body
}

#[tokio::test]
async fn transcriptions_stream_like_vllm_with_audio_prompt_tokens() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let ct = [("content-type", "multipart/form-data; boundary=bnd")];
    let fields = [
        ("model", crate::common::MODEL),
        ("language", "en"),
        ("stream", "true"),
        ("max_completion_tokens", "4"),
        ("ignore_eos", "true"),
        ("stream_include_usage", "true"),
        ("stream_continuous_usage_stats", "true"),
    ];
    let r = c.request_raw_ct("POST", "/v1/audio/transcriptions", &ct, &form(&fields, &wav(2.0))).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let all = events(&r.text());
    assert_eq!(all.last().unwrap().1, "[DONE]");
    let ev = json_events(&r.text());
    assert_eq!(ev[0]["object"], "transcription.chunk");
    assert!(ev[0]["choices"][0]["delta"].get("role").is_none(), "no role chunk");
    let last = ev.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"]["prompt_tokens"], 50, "2 s of audio at 25 tokens/s");
    assert_eq!(last["usage"]["completion_tokens"], 4);
    let fields = [("model", crate::common::MODEL), ("max_completion_tokens", "4"), ("ignore_eos", "true")];
    let r = c.request_raw_ct("POST", "/v1/audio/transcriptions", &ct, &form(&fields, &wav(3.2))).await;
    let v = r.json();
    assert_eq!(v["usage"], json!({"type": "duration", "seconds": 4}));
    assert_eq!(v["text"].as_str().unwrap().split_whitespace().count(), 4);
    sim.abort();
}

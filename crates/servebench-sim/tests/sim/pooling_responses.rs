//! `/v1/responses` (streamed and not), reasoning deltas in chat, `/v1/embeddings`, `/pooling`,
//! `/v1/rerank`: shapes, usage from the real tokenizer, timing, 4xx, ground truth and /metrics.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::json;
use std::time::Duration;

/// SSE events as (event name, JSON) pairs.
fn typed_events(r: &Resp) -> Vec<(String, serde_json::Value)> {
    r.text()
        .split("\n\n")
        .filter(|s| !s.trim().is_empty())
        .map(|e| {
            let mut name = String::new();
            let mut data = String::new();
            for line in e.lines() {
                if let Some(v) = line.strip_prefix("event: ") {
                    name = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = v.to_owned();
                }
            }
            (name, serde_json::from_str(&data).unwrap())
        })
        .collect()
}

#[tokio::test]
async fn responses_stream_with_reasoning_and_usage() {
    let sim = start(config().with_reasoning_tokens(2).with_ground_truth(true)).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"model": MODEL, "input": "Tell me a story.", "max_output_tokens": 5,
        "stream": true, "store": false, "ignore_eos": true});
    let r = c.post_json("/v1/responses", &body).await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/event-stream"));
    let ev = typed_events(&r);
    for (name, v) in &ev {
        assert_eq!(v["type"], name.as_str());
    }
    let names: Vec<&str> = ev.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(&names[..2], ["response.created", "response.in_progress"]);
    assert_eq!(names.iter().filter(|n| **n == "response.reasoning_text.delta").count(), 2);
    assert_eq!(names.iter().filter(|n| **n == "response.output_text.delta").count(), 3);
    let first_text = names.iter().position(|n| *n == "response.output_text.delta").unwrap();
    let last_reasoning = names.iter().rposition(|n| *n == "response.reasoning_text.delta").unwrap();
    assert!(last_reasoning < first_text, "reasoning comes before the content");
    assert!(!r.text().contains("[DONE]"));
    // max_output_tokens reached: response.incomplete with usage from the real tokenizer.
    let (last, v) = ev.last().unwrap();
    assert_eq!(last, "response.incomplete");
    let usage = &v["response"]["usage"];
    let rendered = "<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n";
    assert_eq!(usage["input_tokens"], tok.encode(rendered, false).unwrap().len() as u64);
    assert_eq!(usage["output_tokens"], 5);
    assert_eq!(usage["output_tokens_details"]["reasoning_tokens"], 2);
    assert_eq!(usage["input_tokens_details"]["cached_tokens"], 0);
    // Ground truth and /metrics count the reasoning tokens.
    let gt = sim.ground_truth();
    assert_eq!(gt.len(), 1);
    assert_eq!((gt[0].endpoint, gt[0].completion_tokens, gt[0].reasoning_tokens), ("/v1/responses", 5, 2));
    let m = c.get("/metrics").await.text();
    assert!(m.contains("servebench_sim:reasoning_tokens_total{model_name=\"sim-model\"} 2"), "{m}");
    sim.shutdown().await;
}

#[tokio::test]
async fn responses_non_streaming_and_errors() {
    let sim = start(config().with_reasoning_tokens(1)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = json!({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "max_output_tokens": 3, "ignore_eos": true});
    let r = c.post_json("/v1/responses", &body).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "incomplete");
    assert_eq!(v["output"][0]["type"], "reasoning");
    assert_eq!(v["output"][1]["type"], "message");
    assert_eq!(v["usage"]["output_tokens"], 3);
    for bad in [
        json!({"model": MODEL}),
        json!({"model": MODEL, "input": []}),
        json!({"model": MODEL, "input": "x", "max_output_tokens": 0}),
        json!({"model": MODEL, "input": [{"role": "user", "content": [{"type": "input_file", "file_id": "u"}]}]}),
    ] {
        let r = c.post_json("/v1/responses", &bad).await;
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert_eq!(r.json()["error"]["type"], "BadRequestError");
    }
    let r = c.post_json("/v1/responses", &json!({"model": "other", "input": "x"})).await;
    assert_eq!(r.status, 404);
    sim.shutdown().await;
}

/// Current vLLM (the default, `both`): every reasoning delta, and a non-streamed message, carries
/// the text as `reasoning` and again as its deprecated alias `reasoning_content`.
#[tokio::test]
async fn chat_reasoning_under_both_names_as_current_vllm() {
    let sim = start(config().with_reasoning_tokens(2)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body = |stream: bool| {
        json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
            "max_completion_tokens": 4, "ignore_eos": true, "stream": stream})
    };
    let ev = c.post_json("/v1/chat/completions", &body(true)).await.sse_json();
    let deltas: Vec<&serde_json::Value> =
        ev.iter().filter_map(|e| e["choices"].get(0).map(|c| &c["delta"])).collect();
    for d in &deltas[1..3] {
        assert!(d["reasoning"].is_string() && d["reasoning"] == d["reasoning_content"], "{d}");
    }
    assert!(deltas[3].get("reasoning_content").is_none(), "content deltas carry no reasoning");
    let v = c.post_json("/v1/chat/completions", &body(false)).await.json();
    let m = &v["choices"][0]["message"];
    assert!(m["reasoning"].is_string() && m["reasoning"] == m["reasoning_content"], "{m}");
    sim.shutdown().await;
}

#[tokio::test]
async fn chat_reasoning_deltas_in_either_field() {
    for (field, cfg) in [
        ("reasoning", {
            let mut c = config().with_reasoning_tokens(2);
            c.reasoning_field = servebench_sim::ReasoningField::Reasoning;
            c
        }),
        ("reasoning_content", {
            let mut c = config().with_reasoning_tokens(2);
            c.reasoning_field = servebench_sim::ReasoningField::ReasoningContent;
            c
        }),
    ] {
        let sim = start(cfg).await;
        let mut c = Conn::connect(sim.local_addr()).await;
        let body = json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
            "max_completion_tokens": 4, "ignore_eos": true, "stream": true,
            "stream_options": {"include_usage": true}});
        let r = c.post_json("/v1/chat/completions", &body).await;
        let ev = r.sse_json();
        let deltas: Vec<&serde_json::Value> =
            ev.iter().filter_map(|e| e["choices"].get(0).map(|c| &c["delta"])).collect();
        // Role chunk, 2 reasoning deltas, 2 content deltas.
        assert!(deltas[1].get(field).is_some() && deltas[2].get(field).is_some(), "{deltas:?}");
        let other = if field == "reasoning" { "reasoning_content" } else { "reasoning" };
        assert!(deltas[1].get(other).is_none(), "one name only: {deltas:?}");
        assert!(deltas[1].get("content").is_none());
        assert!(deltas[3]["content"].is_string() && deltas[4]["content"].is_string());
        assert_eq!(ev.last().unwrap()["usage"]["completion_tokens"], 4);
        sim.shutdown().await;
    }
}

/// `stream: false`: the message carries the reasoning text in the configured field (the other
/// one is absent), the same words as the streamed deltas, and usage counts the reasoning tokens
/// as completion tokens, as the stream's usage does (vLLM reports no reasoning detail in chat
/// usage).
#[tokio::test]
async fn chat_reasoning_in_non_streamed_messages() {
    for (field, other, cfg) in [
        ("reasoning", "reasoning_content", {
            let mut c = config().with_reasoning_tokens(2);
            c.reasoning_field = servebench_sim::ReasoningField::Reasoning;
            c
        }),
        ("reasoning_content", "reasoning", {
            let mut c = config().with_reasoning_tokens(2);
            c.reasoning_field = servebench_sim::ReasoningField::ReasoningContent;
            c
        }),
    ] {
        let sim = start(cfg.with_ground_truth(true)).await;
        let mut c = Conn::connect(sim.local_addr()).await;
        let body = |stream: bool, max: u32| {
            json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}],
                "max_completion_tokens": max, "ignore_eos": true, "stream": stream,
                "stream_options": if stream { json!({"include_usage": true}) } else { json!(null) }})
        };
        let v = c.post_json("/v1/chat/completions", &body(false, 5)).await.json();
        let m = &v["choices"][0]["message"];
        let (reasoning, content) = (m[field].as_str().unwrap(), m["content"].as_str().unwrap());
        assert!(m.get(other).is_none(), "{m}");
        assert_eq!((reasoning.split_whitespace().count(), content.split_whitespace().count()), (2, 3));
        assert_eq!(v["usage"]["completion_tokens"], 5);
        assert_eq!(v["usage"]["total_tokens"], v["usage"]["prompt_tokens"].as_u64().unwrap() + 5);
        assert!(v["usage"].get("completion_tokens_details").is_none());
        // The same request streamed: the same words, split the same way, the same usage.
        let ev = c.post_json("/v1/chat/completions", &body(true, 5)).await.sse_json();
        let streamed = |key: &str| -> String {
            ev.iter().filter_map(|e| e["choices"].get(0)?["delta"][key].as_str().map(str::to_owned)).collect()
        };
        assert_eq!((streamed(field).as_str(), streamed("content").as_str()), (reasoning, content));
        for key in ["prompt_tokens", "completion_tokens", "total_tokens"] {
            assert_eq!(ev.last().unwrap()["usage"][key], v["usage"][key], "{key}");
        }
        // An output no longer than the reasoning budget has no content (null, as vLLM's
        // reasoning parsers leave it).
        let v = c.post_json("/v1/chat/completions", &body(false, 2)).await.json();
        let m = &v["choices"][0]["message"];
        assert!(m["content"].is_null() && m[field].is_string(), "{m}");
        assert_eq!(v["usage"]["completion_tokens"], 2);
        // Ground truth and /metrics count non-streamed reasoning like streamed reasoning.
        let gt = sim.ground_truth();
        assert_eq!(gt.iter().map(|g| g.reasoning_tokens).collect::<Vec<_>>(), [2, 2, 2]);
        let metrics = c.get("/metrics").await.text();
        assert!(
            metrics.contains("servebench_sim:reasoning_tokens_total{model_name=\"sim-model\"} 6"),
            "{metrics}"
        );
        sim.shutdown().await;
    }
}

#[tokio::test]
async fn embeddings_inputs_usage_and_errors() {
    let sim = start(config().with_max_model_len(64)).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let text = "The quick brown fox";
    let n = tok.encode(text, true).unwrap().len() as u64;
    let r = c.post_json("/v1/embeddings", &json!({"model": MODEL, "input": text})).await;
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["object"], "embedding");
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 256);
    assert_eq!(v["usage"]["prompt_tokens"], n);
    assert_eq!(v["usage"]["completion_tokens"], 0);
    // A batch of texts, token ids, dimensions, chat messages.
    let r = c
        .post_json("/v1/embeddings", &json!({"model": MODEL, "input": [text, text, "a"], "dimensions": 8}))
        .await;
    let v = r.json();
    assert_eq!(v["data"].as_array().unwrap().len(), 3);
    assert_eq!(v["data"][2]["index"], 2);
    assert_eq!(v["data"][0]["embedding"].as_array().unwrap().len(), 8);
    assert_eq!(v["data"][0]["embedding"], v["data"][1]["embedding"], "same input, same vector");
    assert_eq!(v["usage"]["prompt_tokens"], 2 * n + tok.encode("a", true).unwrap().len() as u64);
    let r = c.post_json("/v1/embeddings", &json!({"model": MODEL, "input": [1, 2, 3]})).await;
    assert_eq!(r.json()["usage"]["prompt_tokens"], 3);
    let msgs =
        json!({"model": MODEL, "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}]});
    let r = c.post_json("/v1/embeddings", &msgs).await;
    let rendered = format!("<|im_start|>user\n{text}<|im_end|>\n");
    assert_eq!(r.json()["usage"]["prompt_tokens"], tok.encode(&rendered, false).unwrap().len() as u64);
    // Truncation and 4xx.
    let long = "word ".repeat(200);
    let r = c
        .post_json("/v1/embeddings", &json!({"model": MODEL, "input": long, "truncate_prompt_tokens": -1}))
        .await;
    assert_eq!(r.json()["usage"]["prompt_tokens"], 64);
    for bad in [
        json!({"model": MODEL, "input": long}),
        json!({"model": MODEL}),
        json!({"model": MODEL, "input": []}),
        json!({"model": MODEL, "input": {"x": 1}}),
        json!({"model": MODEL, "input": "a", "encoding_format": "base64"}),
    ] {
        assert_eq!(c.post_json("/v1/embeddings", &bad).await.status, 400, "{bad}");
    }
    assert_eq!(c.post("/v1/embeddings", &[("content-type", "application/json")], b"{oops").await.status, 400);
    assert_eq!(c.post_json("/v1/embeddings", &json!({"model": "x", "input": "a"})).await.status, 404);
    sim.shutdown().await;
}

#[tokio::test]
async fn pooling_and_rerank() {
    let sim = start(config()).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    for path in ["/pooling", "/v1/pooling"] {
        let r =
            c.post_json(path, &json!({"model": MODEL, "input": "abc", "truncate_prompt_tokens": -1})).await;
        assert_eq!(r.status, 200, "{path}");
        let v = r.json();
        assert_eq!(v["data"][0]["object"], "pooling");
        assert!(v["data"][0]["data"].is_array());
    }
    let q = "what is rust";
    let docs = ["a language", "a fungus", "oxidised iron"];
    let pair = |d: &str| (tok.encode(q, true).unwrap().len() + tok.encode(d, false).unwrap().len()) as u64;
    for path in ["/v1/rerank", "/rerank"] {
        let r = c.post_json(path, &json!({"model": MODEL, "query": q, "documents": docs})).await;
        assert_eq!(r.status, 200, "{path}");
        let v = r.json();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        let scores: Vec<f64> = results.iter().map(|x| x["relevance_score"].as_f64().unwrap()).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "sorted by score: {scores:?}");
        assert!(scores.iter().all(|s| (0.0..1.0).contains(s)));
        assert_eq!(v["usage"]["total_tokens"], docs.iter().map(|d| pair(d)).sum::<u64>());
    }
    let r =
        c.post_json("/v1/rerank", &json!({"model": MODEL, "query": q, "documents": docs, "top_n": 1})).await;
    assert_eq!(r.json()["results"].as_array().unwrap().len(), 1);
    for bad in [
        json!({"model": MODEL, "documents": docs}),
        json!({"model": MODEL, "query": q}),
        json!({"model": MODEL, "query": q, "documents": []}),
    ] {
        assert_eq!(c.post_json("/v1/rerank", &bad).await.status, 400, "{bad}");
    }
    let m = c.get("/metrics").await.text();
    assert!(
        m.contains(
            "servebench_sim:pooling_requests_total{model_name=\"sim-model\",endpoint=\"/v1/rerank\"} 3"
        ),
        "{m}"
    );
    sim.shutdown().await;
}

/// Fixed mode: a pooling answer comes after the TTFT (a prefill-like delay), not at once.
#[tokio::test]
async fn pooling_waits_the_prefill_delay() {
    let sim = start(config().with_fixed_timing_ms(150.0, 1.0).unwrap().with_ground_truth(true)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c.post_json("/v1/embeddings", &json!({"model": MODEL, "input": "abc"})).await;
    let waited = r.chunks.last().map_or_else(|| r.sent.elapsed(), |(t, _)| t.duration_since(r.sent));
    assert!(waited >= Duration::from_millis(150), "{waited:?}");
    let gt = sim.ground_truth();
    assert_eq!((gt[0].endpoint, gt[0].stream, gt[0].completion_tokens), ("/v1/embeddings", false, 0));
    assert!(gt[0].done.unwrap().duration_since(gt[0].received) >= Duration::from_millis(150));
    sim.shutdown().await;
}

/// Engine mode: a pooling request is a prefill through the scheduler, so at a set prefill rate a
/// 10× longer input takes clearly longer (ratio, not wall-clock thresholds).
#[tokio::test]
async fn engine_pooling_answer_waits_at_least_the_prefill_of_its_input() {
    let engine = servebench_sim::EngineConfig {
        max_num_seqs: 8,
        kv_capacity_tokens: 1 << 20,
        prefill_tokens_per_s: 4_000.0,
        max_num_batched_tokens: 256,
        decode_step_base: Duration::from_millis(1),
        decode_per_seq: Duration::ZERO,
        jitter: 0.0,
        prefix_caching: false,
        block_size: 16,
        prefix_cache_blocks: 0,
        spec_k: 0,
        spec_acceptance: 0.7,
    };
    let sim = start(config().with_max_model_len(8192).with_engine(engine).with_ground_truth(true)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let short = "word ".repeat(40);
    let long = "word ".repeat(400);
    for input in [&short, &long] {
        let r = c.post_json("/v1/embeddings", &json!({"model": MODEL, "input": input})).await;
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let gt = sim.ground_truth();
    let delay = |i: usize| gt[i].done.unwrap().duration_since(gt[i].received).as_secs_f64();
    assert!(gt[1].prompt_tokens >= 9 * gt[0].prompt_tokens);
    // Each answer waits at least its prefill at 4000 tok/s (≈ 10 ms and ≈ 100 ms, in 256-token
    // chunks). Lower bounds only: a loaded machine makes a sleep longer, never shorter, so no
    // wall-clock ratio is asserted.
    for i in [0, 1] {
        let prefill_s = f64::from(gt[i].prompt_tokens) / 4_000.0;
        assert!(delay(i) >= 0.95 * prefill_s, "input {i}: {:.4} s < prefill {prefill_s:.4} s", delay(i));
    }
    let m = c.get("/metrics").await.text();
    assert!(m.contains(
        "servebench_sim:pooling_requests_total{model_name=\"sim-model\",endpoint=\"/v1/embeddings\"} 2"
    ));
    sim.shutdown().await;
}

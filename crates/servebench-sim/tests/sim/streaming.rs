//! Streamed and non-streamed generation: byte layout, usage, lengths, retokenization.

use crate::common::*;
use serde_json::json;

#[tokio::test]
async fn completions_stream_layout_and_usage() {
    let sim = start(config()).await;
    assert!(sim.output_retokenizes_exactly());
    let tok = fixture_tokenizer();
    let prompt = "The quick brown fox jumps over the lazy dog.";
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": prompt, "max_tokens": 5, "ignore_eos": true,
                    "stream": true, "stream_options": {"include_usage": true}, "logprobs": null}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(r.header("content-type").unwrap().starts_with("text/event-stream"));
    let ev = r.sse_json();
    assert_eq!(ev.len(), 6, "5 token chunks + usage chunk");
    let id = ev[0]["id"].as_str().unwrap();
    assert!(id.starts_with("cmpl-"));
    for e in &ev {
        assert_eq!(e["id"], id);
        assert_eq!(e["object"], "text_completion");
        assert_eq!(e["model"], MODEL);
        assert!(e["created"].as_u64().unwrap() > 1_600_000_000);
    }
    for (i, e) in ev[..5].iter().enumerate() {
        let ch = &e["choices"][0];
        assert_eq!(ch["index"], 0);
        assert!(!ch["text"].as_str().unwrap().is_empty());
        if i < 4 {
            assert!(ch["finish_reason"].is_null());
        } else {
            assert_eq!(ch["finish_reason"], "length");
        }
    }
    let usage = &ev[5];
    assert_eq!(usage["choices"].as_array().unwrap().len(), 0);
    let expected_prompt = tok.encode(prompt, true).unwrap().len() as u64;
    assert_eq!(usage["usage"]["prompt_tokens"], expected_prompt);
    assert_eq!(usage["usage"]["completion_tokens"], 5);
    assert_eq!(usage["usage"]["total_tokens"], expected_prompt + 5);
    // Generated text retokenizes to completion_tokens.
    assert_eq!(tok.count(&stream_text(&ev)).unwrap(), 5);
    // One body frame per token event: the usage chunk and [DONE] ride with the last token.
    assert_eq!(r.chunks.len(), 5);
    sim.shutdown().await;
}

#[tokio::test]
async fn chat_stream_layout_role_first_usage_last() {
    let sim = start(config()).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let messages = json!([{"role": "user", "content": [{"type": "text", "text": "Tell me a story."}]}]);
    let r = c
        .post_json(
            "/v1/chat/completions",
            &json!({"model": MODEL, "messages": messages, "max_completion_tokens": 4, "ignore_eos": true,
                    "stream": true, "stream_options": {"include_usage": true}}),
        )
        .await;
    assert_eq!(r.status, 200);
    let data = r.sse_data();
    assert_eq!(data.last().unwrap(), "[DONE]");
    let ev = r.sse_json();
    assert_eq!(ev.len(), 1 + 4 + 1);
    assert!(ev[0]["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(ev[0]["object"], "chat.completion.chunk");
    assert_eq!(ev[0]["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
    for e in &ev[1..4] {
        assert!(e["choices"][0]["delta"].get("role").is_none());
        assert!(e["choices"][0]["finish_reason"].is_null());
    }
    assert_eq!(ev[4]["choices"][0]["finish_reason"], "length");
    assert_eq!(ev[5]["choices"], json!([]));
    assert_eq!(ev[5]["usage"]["completion_tokens"], 4);
    assert_eq!(tok.count(&stream_text(&ev)).unwrap(), 4);
    // Prompt tokens: the ChatML-rendered prompt, and /tokenize with the same messages agrees.
    let rendered = "<|im_start|>user\nTell me a story.<|im_end|>\n<|im_start|>assistant\n";
    let expected = tok.encode(rendered, false).unwrap().len() as u64;
    assert_eq!(ev[5]["usage"]["prompt_tokens"], expected);
    // SmolLM2: 5 template tokens per message, 4 for the generation prompt ("assistant" is 2).
    assert_eq!(expected, tok.count("Tell me a story.").unwrap() as u64 + 9);
    let t = c.post_json("/tokenize", &json!({"model": MODEL, "messages": messages})).await;
    assert_eq!(t.json()["count"], expected);
    sim.shutdown().await;
}

#[tokio::test]
async fn usage_chunk_only_when_asked() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": "hi there", "max_tokens": 3, "ignore_eos": true, "stream": true}),
        )
        .await;
    let ev = r.sse_json();
    assert_eq!(ev.len(), 3);
    assert!(ev.iter().all(|e| e.get("usage").is_none()));
    // continuous_usage_stats: every chunk carries the running usage.
    let r = c
        .post_json(
            "/v1/chat/completions",
            &json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3,
                    "ignore_eos": true, "stream": true,
                    "stream_options": {"include_usage": true, "continuous_usage_stats": true}}),
        )
        .await;
    let ev = r.sse_json();
    let running: Vec<u64> = ev.iter().map(|e| e["usage"]["completion_tokens"].as_u64().unwrap()).collect();
    assert_eq!(running, vec![0, 1, 2, 3, 3]);
    sim.shutdown().await;
}

#[tokio::test]
async fn non_streaming_bodies() {
    let sim = start(config()).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": "Once upon a time", "max_tokens": 7, "ignore_eos": true}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let v = r.json();
    assert_eq!(v["object"], "text_completion");
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(v["usage"]["completion_tokens"], 7);
    assert!(v["usage"]["prompt_tokens_details"].is_null());
    assert_eq!(tok.count(v["choices"][0]["text"].as_str().unwrap()).unwrap(), 7);
    let r = c
        .post_json(
            "/v1/chat/completions",
            &json!({"model": MODEL, "messages": [{"role": "user", "content": "hello"}], "max_tokens": 6, "ignore_eos": true}),
        )
        .await;
    let v = r.json();
    assert_eq!(v["object"], "chat.completion");
    assert_eq!(v["choices"][0]["message"]["role"], "assistant");
    assert_eq!(tok.count(v["choices"][0]["message"]["content"].as_str().unwrap()).unwrap(), 6);
    assert_eq!(v["usage"]["completion_tokens"], 6);
    assert_eq!(v["usage"]["total_tokens"], v["usage"]["prompt_tokens"].as_u64().unwrap() + 6);
    sim.shutdown().await;
}

#[tokio::test]
async fn seeded_lengths_reproduce_and_respect_limits() {
    let sim = start(config().with_seed(7)).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let mut lengths = Vec::new();
    for i in 0..12 {
        let body = json!({"model": MODEL, "prompt": format!("prompt number {i}"), "max_tokens": 40,
                          "min_tokens": 3, "stream": true, "stream_options": {"include_usage": true}});
        let a = c.post_json("/v1/completions", &body).await.sse_json();
        let b = c.post_json("/v1/completions", &body).await.sse_json();
        assert_eq!(stream_text(&a), stream_text(&b), "same request, same output");
        let n = a.last().unwrap()["usage"]["completion_tokens"].as_u64().unwrap();
        assert!((3..=40).contains(&n));
        let finish = a[a.len() - 2]["choices"][0]["finish_reason"].as_str().unwrap().to_owned();
        assert_eq!(finish, if n == 40 { "length" } else { "stop" });
        lengths.push(n);
    }
    assert!(lengths.iter().any(|&n| n != lengths[0]), "lengths vary with the prompt: {lengths:?}");
    // Another server with the same seed reproduces; another seed differs somewhere.
    let again = start(config().with_seed(7)).await;
    let other = start(config().with_seed(8)).await;
    let body = json!({"model": MODEL, "prompt": "prompt number 0", "max_tokens": 40, "min_tokens": 3});
    let n = |v: serde_json::Value| v["usage"]["completion_tokens"].as_u64().unwrap();
    assert_eq!(
        n(Conn::connect(again.local_addr()).await.post_json("/v1/completions", &body).await.json()),
        lengths[0]
    );
    let mut differs = false;
    for (i, &len) in lengths.iter().enumerate() {
        let body = json!({"model": MODEL, "prompt": format!("prompt number {i}"), "max_tokens": 40, "min_tokens": 3});
        let r = Conn::connect(other.local_addr()).await.post_json("/v1/completions", &body).await;
        differs |= n(r.json()) != len;
    }
    assert!(differs);
    for s in [sim, again, other] {
        s.shutdown().await;
    }
}

#[tokio::test]
async fn token_id_and_batch_prompts() {
    let sim = start(config()).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": [1, 2, 3, 4], "max_tokens": 2, "ignore_eos": true}),
        )
        .await;
    assert_eq!(r.json()["usage"]["prompt_tokens"], 4);
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": ["one two", "three"], "max_tokens": 3, "ignore_eos": true, "stream": true,
                    "stream_options": {"include_usage": true}}),
        )
        .await;
    let ev = r.sse_json();
    let mut indexes: Vec<u64> = ev
        .iter()
        .flat_map(|e| e["choices"].as_array().unwrap().iter().map(|c| c["index"].as_u64().unwrap()))
        .collect();
    indexes.sort_unstable();
    assert_eq!(indexes, vec![0, 0, 0, 1, 1, 1]);
    let tok = fixture_tokenizer();
    let expected = tok.encode("one two", true).unwrap().len() + tok.encode("three", true).unwrap().len();
    assert_eq!(ev.last().unwrap()["usage"]["prompt_tokens"], expected as u64);
    assert_eq!(ev.last().unwrap()["usage"]["completion_tokens"], 6);
    sim.shutdown().await;
}

#[tokio::test]
async fn tokens_per_event_groups_tokens() {
    let sim = start(config().with_tokens_per_event(4)).await;
    let tok = fixture_tokenizer();
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": "x", "max_tokens": 10, "ignore_eos": true, "stream": true,
                    "stream_options": {"include_usage": true}}),
        )
        .await;
    let ev = r.sse_json();
    assert_eq!(ev.len(), 3 + 1);
    let counts: Vec<usize> =
        ev[..3].iter().map(|e| tok.count(e["choices"][0]["text"].as_str().unwrap()).unwrap()).collect();
    assert_eq!(counts, vec![4, 4, 2]);
    assert_eq!(ev[3]["usage"]["completion_tokens"], 10);
    sim.shutdown().await;
}

#[tokio::test]
async fn long_prompts_are_counted_exactly() {
    // Bodies above a few KB are tokenized off the I/O workers; the result must be the same.
    let sim = start(config()).await;
    let tok = fixture_tokenizer();
    let prompt = "The simulator counts every token of a long prompt. ".repeat(300);
    let mut c = Conn::connect(sim.local_addr()).await;
    let r = c
        .post_json(
            "/v1/completions",
            &json!({"model": MODEL, "prompt": prompt, "max_tokens": 3, "ignore_eos": true}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["usage"]["prompt_tokens"], tok.encode(&prompt, true).unwrap().len() as u64);
    let messages = json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": prompt}]);
    let r = c
        .post_json(
            "/v1/chat/completions",
            &json!({"model": MODEL, "messages": messages, "max_tokens": 2, "stream": true,
                                                    "stream_options": {"include_usage": true}}),
        )
        .await;
    let usage = r.sse_json().last().unwrap()["usage"].clone();
    let t = c.post_json("/tokenize", &json!({"model": MODEL, "messages": messages})).await;
    assert_eq!(usage["prompt_tokens"], t.json()["count"]);
    sim.shutdown().await;
}

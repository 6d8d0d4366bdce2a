//! Replays of the hand-written dialect fixtures (`tests/fixtures/*.sse`) through the SSE
//! framer and the stream state, with the frame arrival times the fixtures give (`: frame T`
//! comment lines), so every timing is hand-computed. The same fixtures go over real sockets in
//! `tests/native_dialects.rs`.

use std::sync::Arc;

use servebench_core::{ErrorKind, Outcome, Prompt, RequestRecord, TokenEvents};

use super::*;
use crate::backend::BackendKind;
use crate::backend::{Dialect, TargetConfig};
use crate::body::BodyTemplate;
use crate::headers::build_headers;
use crate::sse::SseFramer;
use crate::stream::{Flow, ResponseReader};

/// Splits a fixture into `(arrival µs, bytes)` frames at its `: frame T` lines (the lines
/// themselves stay in the bytes: they are SSE comments). Bytes before the first marker join
/// the first frame.
pub(crate) fn frames(fixture: &str) -> Vec<(u64, String)> {
    let mut out: Vec<(u64, String)> = Vec::new();
    let mut pending = String::new();
    for line in fixture.split_inclusive('\n') {
        if let Some(t) = line.strip_prefix(": frame ") {
            let t: u64 = t.trim().parse().unwrap();
            out.push((t, std::mem::take(&mut pending)));
        }
        match out.last_mut() {
            Some(f) => f.1.push_str(line),
            None => pending.push_str(line),
        }
    }
    out
}

/// Replays `fixture` as the response of a request dispatched at 0.
fn replay(dialect: Dialect, fixture: &str, keep_text: bool) -> RequestRecord {
    let mut rec = RequestRecord::scheduled(0, "r0".into(), 0, 5, 4);
    rec.dispatched_us = Some(0);
    let mut st = ResponseReader::new(BackendKind::Native(dialect), keep_text);
    let mut framer = SseFramer::new();
    let mut last = 0;
    for (t, bytes) in frames(fixture) {
        last = t;
        framer.push(bytes.as_bytes());
        while let Some(ev) = framer.next_event().unwrap() {
            match st.on_event(&mut rec, ev, t) {
                Flow::Continue => {}
                Flow::Done => return rec,
                Flow::Stop => {
                    st.flush(&mut rec);
                    return rec;
                }
            }
        }
    }
    framer.finish();
    while let Some(ev) = framer.next_event().unwrap() {
        if st.on_event(&mut rec, ev, last) != Flow::Continue {
            return rec;
        }
    }
    st.end_of_body(&mut rec, last + 1);
    rec
}

const TGI: &str = include_str!("../../tests/fixtures/tgi_stream.sse");
const TGI_ERROR: &str = include_str!("../../tests/fixtures/tgi_error.sse");
const SGLANG: &str = include_str!("../../tests/fixtures/sglang_stream.sse");
const SGLANG_ABORT: &str = include_str!("../../tests/fixtures/sglang_abort.sse");
const LLAMACPP: &str = include_str!("../../tests/fixtures/llamacpp_stream.sse");
const LLAMACPP_ERROR: &str = include_str!("../../tests/fixtures/llamacpp_error.sse");
const ANTHROPIC: &str = include_str!("../../tests/fixtures/anthropic_stream.sse");
const ANTHROPIC_ERROR: &str = include_str!("../../tests/fixtures/anthropic_error.sse");

fn kind(r: &RequestRecord) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}

#[test]
fn tgi_stream_one_token_per_event_special_eos_counts_without_text() {
    let r = replay(Dialect::Tgi, TGI, true);
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    // TTFT 120, ITL 30 / 0 (same frame) / 40, E2EL 190 (the final event).
    assert_eq!((r.first_token_us, r.last_token_us, r.done_us), (Some(120), Some(190), Some(190)));
    assert_eq!(r.token_events, TokenEvents { gaps_us: vec![30, 0, 40], tokens: vec![1, 1, 1, 1] });
    assert_eq!((r.token_event_count, r.content_events, r.first_content_us), (4, 3, Some(120)));
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(4), Some(7), None)
    );
    assert_eq!(r.finish_reason.as_deref(), Some("eos_token"));
    assert_eq!(r.generated_text.as_deref(), Some("Deep learning is"));
    assert_eq!(r.output_chars, 16);
}

#[test]
fn tgi_error_mid_stream_fails_with_partial_timings() {
    let r = replay(Dialect::Tgi, TGI_ERROR, false);
    assert_eq!(kind(&r), Some(ErrorKind::ServerError));
    let msg = &r.error.as_ref().unwrap().message;
    assert!(msg.contains("CUDA out of memory") && msg.contains("(generation)"), "{msg}");
    assert_eq!((r.first_token_us, r.done_us, r.token_event_count), (Some(100), Some(140), 1));
}

#[test]
fn sglang_cumulative_text_becomes_deltas_with_tokens_per_event() {
    let r = replay(Dialect::Sglang, SGLANG, true);
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    // Token events at 200, 260, 260, 330 (the event at 300 added no text: its token is
    // carried by the next event). [DONE] arrives in the 330 frame.
    assert_eq!((r.first_token_us, r.last_token_us, r.done_us), (Some(200), Some(330), Some(330)));
    assert_eq!(r.token_events, TokenEvents { gaps_us: vec![60, 0, 70], tokens: vec![1, 1, 1, 2] });
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(5), Some(9), Some(4))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("length"));
    assert_eq!(r.generated_text.as_deref(), Some("The capital of France"));
    assert_eq!(r.output_chars, 21);
    assert_eq!(r.server_request_id.as_deref(), Some("a1b2c3"));
}

#[test]
fn sglang_abort_fails_with_the_servers_message() {
    let r = replay(Dialect::Sglang, SGLANG_ABORT, false);
    assert_eq!(kind(&r), Some(ErrorKind::ServerError));
    assert!(r.error.as_ref().unwrap().message.contains("longer than the model's context length"));
    assert_eq!((r.first_event_us, r.first_token_us, r.done_us), (Some(50), None, Some(50)));
}

#[test]
fn llamacpp_crlf_stream_with_held_back_token_and_timings() {
    assert!(LLAMACPP.contains("\r\n"));
    let r = replay(Dialect::LlamaCpp, LLAMACPP, true);
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    // Token events at 80, 95, 95 (no text: held back), 130; the stop event at 150 ends it.
    assert_eq!((r.first_token_us, r.last_token_us, r.done_us), (Some(80), Some(130), Some(150)));
    assert_eq!(r.token_events, TokenEvents { gaps_us: vec![15, 0, 35], tokens: vec![1, 1, 1, 1] });
    assert_eq!((r.token_event_count, r.content_events), (4, 3));
    // prompt = tokens_evaluated (6), cached = timings.cache_n (4), completion = tokens_predicted.
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(4), Some(6), Some(4))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("limit"));
    assert_eq!(r.generated_text.as_deref(), Some("Hello world\u{e9}"));
    assert_eq!(r.output_chars, 12);
}

#[test]
fn llamacpp_error_object_mid_stream() {
    let r = replay(Dialect::LlamaCpp, LLAMACPP_ERROR, false);
    assert_eq!(kind(&r), Some(ErrorKind::ServerError));
    assert!(r.error.as_ref().unwrap().message.contains("Context size has been exceeded"));
    assert_eq!((r.first_token_us, r.done_us), (Some(60), Some(90)));
}

#[test]
fn anthropic_stream_thinking_then_text_pings_and_usage() {
    let r = replay(Dialect::Anthropic, ANTHROPIC, true);
    assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    // Token events: thinking at 340, "Hi" at 380, " there" at 420; message_stop at 420.
    assert_eq!((r.first_event_us, r.first_token_us, r.first_content_us), (Some(300), Some(340), Some(380)));
    assert_eq!((r.last_token_us, r.done_us), (Some(420), Some(420)));
    assert_eq!(r.token_events, TokenEvents { gaps_us: vec![40, 40], tokens: vec![] });
    assert_eq!((r.token_event_count, r.reasoning_events, r.content_events), (3, 1, 2));
    // prompt = input 10 + cache read 15 + cache creation 0; output from message_delta.
    assert_eq!(
        (r.completion_tokens, r.server_prompt_tokens, r.cached_prompt_tokens),
        (Some(7), Some(25), Some(15))
    );
    assert_eq!(r.finish_reason.as_deref(), Some("end_turn"));
    assert_eq!(r.generated_text.as_deref(), Some("Let me think.Hi there"));
    assert_eq!(r.output_chars, 21);
    assert_eq!(r.server_request_id.as_deref(), Some("msg_01XYZ"));
}

#[test]
fn anthropic_error_event_fails_the_request() {
    let r = replay(Dialect::Anthropic, ANTHROPIC_ERROR, false);
    assert_eq!(kind(&r), Some(ErrorKind::ServerError));
    assert!(r.error.as_ref().unwrap().message.contains("Overloaded"));
    assert_eq!((r.first_token_us, r.done_us, r.token_event_count), (Some(100), Some(180), 1));
    // A data-only error (no `event:` line) is recognised by its `type`.
    let mut st = ResponseParser::for_backend(BackendKind::Native(Dialect::Anthropic));
    let ev =
        SseEvent { event: None, data: r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"# };
    assert!(
        matches!(st.parse_event(ev), Parsed::Fail(ErrorKind::ServerError, m) if m.contains("boom (api_error)"))
    );
}

#[test]
fn openai_chunk_to_a_native_backend_is_a_wrong_dialect() {
    let chunk = r#"{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}"#;
    for d in Dialect::ALL {
        let mut st = ResponseParser::for_backend(BackendKind::Native(d));
        match st.parse_event(SseEvent { event: None, data: chunk }) {
            Parsed::WrongDialect(m) => assert!(m.starts_with(WRONG_DIALECT), "{m}"),
            other => panic!("{d:?}: {other:?}"),
        }
    }
}

#[test]
fn end_of_body_without_terminal_event_is_incomplete() {
    let cut = &TGI[..TGI.find(": frame 190").unwrap()];
    let r = replay(Dialect::Tgi, cut, false);
    assert_eq!(kind(&r), Some(ErrorKind::Incomplete));
    assert_eq!(r.token_event_count, 3);
}

fn body(d: Dialect, cfg: &TargetConfig, prompt: Prompt) -> serde_json::Value {
    let t = BodyTemplate::new(BackendKind::Native(d), cfg).unwrap();
    serde_json::from_slice(&t.build(&prompt, 7).unwrap()).unwrap()
}

fn cfg() -> TargetConfig {
    let mut c = TargetConfig { model: "m".into(), ignore_eos: true, ..TargetConfig::default() };
    c.sampling.insert("temperature".into(), 0.5.into());
    c
}

#[test]
fn native_bodies_place_sampling_and_output_length_where_each_server_reads_them() {
    use serde_json::json;
    let p = || Prompt::Text(Arc::from("hi \"x\""));
    assert_eq!(
        body(Dialect::Tgi, &cfg(), p()),
        json!({"inputs":"hi \"x\"","parameters":{"max_new_tokens":7,"details":true,"decoder_input_details":false,"temperature":0.5},"stream":true})
    );
    assert_eq!(
        body(Dialect::Sglang, &cfg(), p()),
        json!({"text":"hi \"x\"","sampling_params":{"max_new_tokens":7,"ignore_eos":true,"temperature":0.5},"stream":true})
    );
    assert_eq!(
        body(Dialect::LlamaCpp, &cfg(), p()),
        json!({"prompt":"hi \"x\"","n_predict":7,"stream":true,"ignore_eos":true,"temperature":0.5})
    );
    assert_eq!(
        body(Dialect::Anthropic, &cfg(), p()),
        json!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi \"x\""}]}],"max_tokens":7,"stream":true,"temperature":0.5})
    );
    // Token ids: only llama.cpp takes them.
    let ids = || Prompt::TokenIds(Arc::from(vec![1u32, 2]));
    assert_eq!(body(Dialect::LlamaCpp, &cfg(), ids())["prompt"], json!([1, 2]));
    let t = BodyTemplate::new(BackendKind::Native(Dialect::Tgi), &cfg()).unwrap();
    assert!(t.build(&ids(), 7).is_err());
    // --extra-body lands on top; sampling for TGI stays inside `parameters`.
    let mut c = cfg();
    c.extra_body.insert("stream".into(), false.into());
    let b = body(Dialect::Tgi, &c, p());
    assert_eq!(b["stream"], false);
    assert!(b.get("temperature").is_none());
}

#[test]
fn names_endpoints_and_anthropic_headers() {
    for d in Dialect::ALL {
        assert_eq!(d.name().parse::<BackendKind>().unwrap(), BackendKind::Native(d));
        assert_eq!(BackendKind::Native(d).to_string(), d.name());
    }
    assert_eq!("llamacpp".parse::<BackendKind>().unwrap(), BackendKind::Native(Dialect::LlamaCpp));
    assert_eq!(BackendKind::Native(Dialect::Tgi).default_endpoint(), "/generate_stream");
    assert_eq!(Dialect::Sglang.default_endpoint(), "/generate");
    assert_eq!(Dialect::LlamaCpp.default_endpoint(), "/completion");
    assert_eq!(Dialect::Anthropic.default_endpoint(), "/v1/messages");
    let c = TargetConfig {
        backend: BackendKind::Native(Dialect::Anthropic),
        api_key: Some("sk-ant-secret".into()),
        ..TargetConfig::default()
    };
    let h = build_headers(&c).unwrap();
    assert!(h["x-api-key"].is_sensitive());
    assert_eq!(h["anthropic-version"], ANTHROPIC_VERSION);
    assert!(h.get(http::header::AUTHORIZATION).is_none());
    assert!(!format!("{h:?}").contains("sk-ant"));
    assert_eq!(
        server_text_cause("Cannot use chat template functions because tokenizer.chat_template is not set"),
        Some(FailureCause::ChatTemplate)
    );
    assert_eq!(server_text_cause("model not found"), None);
}

#[test]
fn text_is_kept_for_retokenizing_only_without_usage() {
    let opts = crate::request::ExecOptions { keep_text_without_usage: true, ..Default::default() };
    let tok = r#"{"choices":[{"text":"ab","finish_reason":"stop"}]}"#;
    let usage = r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}"#;
    for (events, kept) in [(vec![tok], Some("ab")), (vec![tok, usage], None)] {
        let mut rec = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        let mut st = ResponseReader::for_request(
            BackendKind::Completions,
            opts.keep_text,
            opts.keep_text_without_usage,
        );
        for (i, e) in events.iter().enumerate() {
            st.on_event(&mut rec, SseEvent { event: None, data: e }, i as u64);
        }
        st.on_event(&mut rec, SseEvent { event: None, data: "[DONE]" }, 9);
        assert_eq!(rec.generated_text.as_deref(), kept);
    }
}

//! The pooling APIs (embeddings, embeddings-chat, multimodal embeddings, Infinity, pooling,
//! rerank): their bodies, and their one-JSON-body answers.
//!
//! Timing (docs/metrics.md): the whole body is one event at the time its **last byte** arrived.
//! TTFT and E2EL of such a request are both that time minus the dispatch time. vLLM's
//! `vllm bench serve` stops the clock when the response *headers* arrive; that misses the time
//! the server spends writing the body (for embeddings, the vectors) — we measure to the end.

use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::{ErrorKind, Result};

use super::{model, not_json, EmbedKind, Parsed, Pooled, Slot};
use crate::backend::{BackendKind, TargetConfig};
use crate::chunk::{error_message, Text};
use crate::transport::control::snippet;

#[derive(Debug, Deserialize)]
struct PoolingBody<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    /// Embeddings and pooling: one entry per input.
    #[serde(borrow, default)]
    data: Option<Vec<&'a RawValue>>,
    /// Rerank: one entry per document.
    #[serde(borrow, default)]
    results: Option<Vec<&'a RawValue>>,
    #[serde(default)]
    usage: Option<PoolingUsage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    /// vLLM's error answer: `{"object": "error", "message": …}` (some servers send it with 200).
    #[serde(borrow, default)]
    object: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct PoolingUsage {
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    prompt_tokens: Option<u32>,
    /// Rerank servers report `total_tokens` only.
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    total_tokens: Option<u32>,
}

/// The fields of a pooling body (`--extra-body` is laid on top by the writer; sampling
/// parameters are refused before the run, SB112):
/// - `openai-embeddings` → `{model, input}` (`input`: the text, the token ids, or the texts of a
///   batch, `--random-batch-size`);
/// - `openai-embeddings-chat` → `{model, messages: [{role: user, content: [{type: text, …},
///   <multimodal parts>]}]}`;
/// - `openai-embeddings-clip`, `openai-embeddings-vlm2vec` → `{model, messages,
///   truncate_prompt_tokens: -1}` (`embed.rs`);
/// - `infinity-embeddings`, `infinity-embeddings-clip` → `{model, input}` (`embed.rs`);
/// - `vllm-pooling` → `{model, input, truncate_prompt_tokens: -1}`;
/// - `vllm-rerank` → `{model, query, documents, truncate_prompt_tokens: -1}`.
pub(super) fn body_fields(backend: BackendKind, cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let minus_one = || ("truncate_prompt_tokens".to_owned(), Slot::Fixed("-1".into()));
    let mut f = vec![model(cfg)?];
    match backend {
        BackendKind::EmbeddingsChat => f.push(("messages".into(), Slot::Messages)),
        BackendKind::EmbeddingsClip => {
            f.push(("messages".into(), Slot::EmbedMessages(EmbedKind::Clip)));
            f.push(minus_one());
        }
        BackendKind::EmbeddingsVlm2Vec => {
            f.push(("messages".into(), Slot::EmbedMessages(EmbedKind::Vlm2Vec)));
            f.push(minus_one());
        }
        BackendKind::Infinity => f.push(("input".into(), Slot::InfinityInput(EmbedKind::Infinity))),
        BackendKind::InfinityClip => f.push(("input".into(), Slot::InfinityInput(EmbedKind::InfinityClip))),
        BackendKind::Pooling => {
            f.push(("input".into(), Slot::Prompt));
            f.push(minus_one());
        }
        BackendKind::Rerank => {
            f.push(("query".into(), Slot::Query));
            f.push(("documents".into(), Slot::Documents));
            f.push(minus_one());
        }
        _ => f.push(("input".into(), Slot::Prompt)),
    }
    Ok(f)
}

/// A whole pooling answer.
pub(super) fn parse_body(body: &str) -> Parsed<'_> {
    let b: PoolingBody<'_> = match serde_json::from_str(body) {
        Ok(b) => b,
        Err(e) => return not_json(&e, body),
    };
    if let Some(e) = b.error.filter(|e| e.get() != "null") {
        return Parsed::Fail(
            ErrorKind::ServerError,
            format!("server error in body: {}", error_message(e.get())),
        );
    }
    if b.object.as_ref().is_some_and(|o| o.0 == "error") {
        let message = b.message.map_or_else(|| "no message".to_owned(), |m| error_message(m.get()));
        return Parsed::Fail(ErrorKind::ServerError, format!("server error in body: {message}"));
    }
    let items = match (&b.data, &b.results) {
        (Some(d), _) => d.len(),
        (None, Some(r)) => r.len(),
        (None, None) => {
            let msg =
                format!("pooling response has neither `data` nor `results`: {}", snippet(body.as_bytes()));
            return Parsed::Fail(ErrorKind::Protocol, msg);
        }
    };
    if items == 0 {
        return Parsed::Fail(ErrorKind::NoTokens, "the pooling response carried no results".into());
    }
    let prompt_tokens = b.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens));
    Parsed::Pooled(Pooled { server_id: b.id.map(|i| i.0), prompt_tokens })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::stream::ResponseReader;
    use servebench_core::{Outcome, RequestRecord};

    /// The whole `body` of `backend`'s answer read at `t`.
    fn read_body(backend: BackendKind, rec: &mut RequestRecord, body: &[u8], t: u64, keep_text: bool) {
        ResponseReader::new(backend, keep_text).on_body(rec, body, t);
    }

    fn pooling_body(rec: &mut RequestRecord, body: &[u8], t: u64) {
        read_body(BackendKind::Embeddings, rec, body, t, false);
    }

    fn responses_body(rec: &mut RequestRecord, body: &[u8], t: u64, keep_text: bool) {
        read_body(BackendKind::Responses, rec, body, t, keep_text);
    }

    fn rec() -> RequestRecord {
        RequestRecord::scheduled(0, "r".into(), 0, 5, 0)
    }

    #[test]
    fn embeddings_body_completes_at_the_end_of_the_body() {
        let mut r = rec();
        r.dispatched_us = Some(100);
        r.headers_us = Some(150);
        let body = br#"{"id":"embd-1","object":"list","data":[{"index":0,"object":"embedding","embedding":[0.1,0.2]}],"usage":{"prompt_tokens":7,"total_tokens":7}}"#;
        pooling_body(&mut r, body, 400);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((r.first_token_us, r.done_us), (Some(400), Some(400)));
        assert_eq!((r.server_prompt_tokens, r.completion_tokens), (Some(7), Some(0)));
        assert_eq!(r.server_request_id.as_deref(), Some("embd-1"));
        let t = servebench_core::metrics::RequestTimes::of(&r);
        // TTFT = E2EL = last body byte − dispatch = 300 µs (vLLM would say 50: the headers).
        assert_eq!((t.ttft_us, t.e2el_us, t.tpot_us), (Some(300), Some(300), None));
    }

    #[test]
    fn rerank_and_failures() {
        let mut r = rec();
        pooling_body(
            &mut r,
            br#"{"id":"rerank-1","results":[{"index":0,"relevance_score":0.5}],"usage":{"total_tokens":9}}"#,
            5,
        );
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.server_prompt_tokens, Some(9));
        let mut r = rec();
        pooling_body(&mut r, br#"{"object":"list"}"#, 5);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));
        let mut r = rec();
        pooling_body(&mut r, br#"{"error":{"message":"too long"}}"#, 5);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::ServerError));
        let mut r = rec();
        pooling_body(&mut r, b"not json", 5);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));
        let mut r = rec();
        pooling_body(&mut r, br#"{"data":[]}"#, 5);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));
    }

    /// vLLM's error answer sent with 200 to an embeddings request was a `protocol` failure
    /// ("neither `data` nor `results`"); the chat path calls the same body `server_error`.
    #[test]
    fn a_vllm_error_object_with_200_is_a_server_error_with_its_message() {
        let mut r = rec();
        pooling_body(
            &mut r,
            br#"{"object":"error","message":"bad input","type":"BadRequestError","code":400}"#,
            5,
        );
        let e = r.error.as_ref().unwrap();
        assert_eq!((e.kind, e.message.as_str()), (ErrorKind::ServerError, "server error in body: bad input"));
        let mut r = rec();
        pooling_body(
            &mut r,
            br#"{"error":null,"data":[{"embedding":[0.5]}],"usage":{"prompt_tokens":2}}"#,
            5,
        );
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    }

    #[test]
    fn non_streaming_responses_body() {
        let mut r = rec();
        let body = br#"{"id":"resp_1","object":"response","status":"completed","error":null,"output":[
            {"type":"reasoning","content":[{"type":"reasoning_text","text":"hmm"}]},
            {"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],
            "usage":{"input_tokens":4,"output_tokens":3}}"#;
        responses_body(&mut r, body, 70, true);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((r.first_token_us, r.first_content_us, r.done_us), (Some(70), Some(70), Some(70)));
        assert_eq!((r.reasoning_events, r.content_events, r.output_chars), (1, 1, 5));
        assert_eq!((r.server_prompt_tokens, r.completion_tokens), (Some(4), Some(3)));
        assert_eq!(r.generated_text.as_deref(), Some("hmmok"));
        let mut r = rec();
        responses_body(&mut r, br#"{"status":"completed","output":[]}"#, 70, false);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));
    }

    /// Regression test: a whole-body answer cut by `max_output_tokens` was recorded with finish
    /// reason `incomplete`, while the same answer streamed gave `length`.
    #[test]
    fn non_streaming_incomplete_responses_body_finishes_like_the_stream() {
        let out = r#""output":[{"type":"message","content":[{"type":"output_text","text":"ok"}]}]"#;
        for (details, want) in [
            (r#"{"reason":"max_output_tokens"}"#, "length"),
            ("null", "length"),
            (r#"{"reason":"content_filter"}"#, "content_filter"),
        ] {
            let mut r = rec();
            let body = format!(r#"{{"status":"incomplete","incomplete_details":{details},{out}}}"#);
            responses_body(&mut r, body.as_bytes(), 70, false);
            assert_eq!(r.finish_reason.as_deref(), Some(want), "{details}");
        }
    }
}

//! Non-streaming answers of the pooling backends (embeddings, embeddings-chat, pooling, rerank)
//! and of the Responses API with `stream: false`.
//!
//! Timing (docs/metrics.md): the whole body is one event at the time its **last byte** arrived.
//! TTFT and E2EL of such a request are both that time minus the dispatch time. vLLM's
//! `vllm bench serve` stops the clock when the response *headers* arrive; that misses the time
//! the server spends writing the body (for embeddings, the vectors) — we measure to the end.

use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::{ErrorKind, Outcome, RequestRecord};

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
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct PoolingUsage {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    /// Rerank servers report `total_tokens` only.
    #[serde(default)]
    total_tokens: Option<u32>,
}

/// A whole JSON body, borrowed; the error names what was wrong and shows the start of it.
fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, String> {
    std::str::from_utf8(body).map_err(|e| e.to_string()).and_then(|s| {
        serde_json::from_str(s).map_err(|e| format!("response is not JSON ({e}): {}", snippet(body)))
    })
}

fn finish(rec: &mut RequestRecord, t_us: u64) {
    rec.first_event_us = Some(t_us);
    rec.first_token_us = Some(t_us);
    rec.last_token_us = Some(t_us);
    rec.done_us = Some(t_us);
}

/// Turns a pooling answer whose last byte arrived at `t_us` into the record.
pub(crate) fn pooling_body(rec: &mut RequestRecord, body: &[u8], t_us: u64) {
    rec.done_us = Some(t_us);
    rec.first_event_us = Some(t_us);
    let b = match parse_json::<PoolingBody<'_>>(body) {
        Ok(b) => b,
        Err(e) => {
            rec.fail(ErrorKind::Protocol, e);
            return;
        }
    };
    if let Some(e) = b.error {
        rec.fail(ErrorKind::ServerError, format!("server error in body: {}", error_message(e.get())));
        return;
    }
    let items = match (&b.data, &b.results) {
        (Some(d), _) => d.len(),
        (None, Some(r)) => r.len(),
        (None, None) => {
            rec.fail(
                ErrorKind::Protocol,
                format!("pooling response has neither `data` nor `results`: {}", snippet(body)),
            );
            return;
        }
    };
    if items == 0 {
        rec.fail(ErrorKind::NoTokens, "the pooling response carried no results");
        return;
    }
    if let Some(id) = b.id.as_ref().filter(|i| !i.as_str().is_empty()) {
        rec.server_request_id.get_or_insert_with(|| id.as_str().to_owned());
    }
    rec.server_prompt_tokens = b.usage.and_then(|u| u.prompt_tokens.or(u.total_tokens));
    // Pooling generates nothing: 0 output tokens from the server's point of view.
    rec.completion_tokens = Some(0);
    finish(rec, t_us);
    rec.outcome = Outcome::Completed;
    rec.error = None;
}

#[derive(Debug, Deserialize)]
struct ResponseBody<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(borrow, default)]
    output: Vec<OutputItem<'a>>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    incomplete_details: Option<IncompleteDetails<'a>>,
}

#[derive(Debug, Deserialize)]
struct IncompleteDetails<'a> {
    #[serde(borrow, default)]
    reason: Option<Text<'a>>,
}

#[derive(Debug, Deserialize)]
struct OutputItem<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Vec<ContentPart<'a>>,
}

#[derive(Debug, Deserialize)]
struct ContentPart<'a> {
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
}

/// A non-streaming Responses API answer (`stream: false` via `--extra-body`) whose last byte
/// arrived at `t_us`: one token event at that time.
pub(crate) fn responses_body(rec: &mut RequestRecord, body: &[u8], t_us: u64, keep_text: bool) {
    rec.done_us = Some(t_us);
    rec.first_event_us = Some(t_us);
    let b = match parse_json::<ResponseBody<'_>>(body) {
        Ok(b) => b,
        Err(e) => {
            rec.fail(ErrorKind::Protocol, e);
            return;
        }
    };
    if let Some(e) = b.error.filter(|e| e.get() != "null") {
        rec.fail(ErrorKind::ServerError, format!("server error in body: {}", error_message(e.get())));
        return;
    }
    let (mut reasoning, mut content, mut text) = (0u64, 0u64, String::new());
    for item in &b.output {
        let is_reasoning = item.kind.as_ref().is_some_and(|k| k.as_str() == "reasoning");
        for part in &item.content {
            let t = part.text.as_ref().map_or("", Text::as_str);
            let n = t.chars().count() as u64;
            if is_reasoning {
                reasoning += n;
            } else {
                content += n;
            }
            if keep_text {
                text.push_str(t);
            }
        }
    }
    if let Some(id) = b.id.as_ref().filter(|i| !i.as_str().is_empty()) {
        rec.server_request_id.get_or_insert_with(|| id.as_str().to_owned());
    }
    if let Some(u) = b.usage {
        rec.server_prompt_tokens = u.input_tokens;
        rec.completion_tokens = u.output_tokens;
    }
    let reason = b.incomplete_details.as_ref().and_then(|d| d.reason.as_ref()).map(Text::as_str);
    rec.finish_reason = b.status.map(|s| crate::stream::responses::finish_reason(s.as_str(), reason));
    if keep_text {
        rec.generated_text = Some(text);
    }
    if reasoning + content == 0 {
        rec.fail(ErrorKind::NoTokens, "the response carried no generated tokens");
        return;
    }
    finish(rec, t_us);
    rec.token_event_count = 1;
    rec.output_chars = reasoning + content;
    rec.reasoning_events = u32::from(reasoning > 0);
    rec.content_events = u32::from(content > 0);
    if content > 0 {
        rec.first_content_us = Some(t_us);
    }
    rec.outcome = Outcome::Completed;
    rec.error = None;
}

#[cfg(test)]
mod tests {
    use super::*;

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

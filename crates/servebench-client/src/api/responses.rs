//! The Responses API's event-typed stream (`/v1/responses`, `stream: true`).
//!
//! Each SSE event names its type in `event:` and in the JSON `type` field (the JSON wins when
//! both are present). Rules (docs/backends.md):
//! - `response.output_text.delta` (and `response.refusal.delta`) carry visible output text;
//!   `response.reasoning_text.delta` (older servers: `response.reasoning.delta`,
//!   `response.reasoning_summary_text.delta`) carry reasoning; tool-call text is carried by
//!   `response.function_call_arguments.delta`, `response.custom_tool_call_input.delta`,
//!   `response.mcp_call_arguments.delta` and `response.code_interpreter_call_code.delta` (the
//!   four vLLM 0.34 counts as output). All of them are token events (TTFT, ITL); only visible
//!   text sets TTFO;
//! - `response.created` gives the server's response id;
//! - `response.completed` / `response.incomplete` end the request, with usage from
//!   `response.usage` (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`);
//! - `response.failed` and `error` fail the request (`server_error`); a body that ends without
//!   a terminal event is `incomplete`; a completed stream without token events is `no_tokens`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::{ErrorKind, Result};

use super::{
    ignore_eos, lay_over, malformed, model, not_json, stream_true, ApiEvent, EventUsage, Parsed, Slot,
};
use crate::backend::TargetConfig;
use crate::chunk::{error_message, Text};

#[derive(Debug, Default, Deserialize)]
struct Event<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    delta: Option<Text<'a>>,
    #[serde(borrow, default)]
    response: Option<ResponseObj<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

#[derive(Debug, Default, Deserialize)]
struct ResponseObj<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(default)]
    usage: Option<Usage>,
    #[serde(borrow, default)]
    incomplete_details: Option<IncompleteDetails<'a>>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

#[derive(Debug, Default, Deserialize)]
struct IncompleteDetails<'a> {
    #[serde(borrow, default)]
    reason: Option<Text<'a>>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct Usage {
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    input_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    output_tokens: Option<u32>,
    #[serde(default)]
    input_tokens_details: Option<Details>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct Details {
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    cached_tokens: Option<u32>,
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
    incomplete_details: Option<BodyIncompleteDetails<'a>>,
}

#[derive(Debug, Deserialize)]
struct BodyIncompleteDetails<'a> {
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
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    input_tokens: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    output_tokens: Option<u32>,
}

/// What a delta event carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DeltaKind {
    Content,
    Reasoning,
    Tool,
}

fn delta_kind(kind: &str) -> Option<DeltaKind> {
    match kind {
        "response.output_text.delta" | "response.refusal.delta" => Some(DeltaKind::Content),
        "response.reasoning_text.delta"
        | "response.reasoning.delta"
        | "response.reasoning_summary_text.delta" => Some(DeltaKind::Reasoning),
        "response.function_call_arguments.delta"
        | "response.custom_tool_call_input.delta"
        | "response.mcp_call_arguments.delta"
        | "response.code_interpreter_call_code.delta" => Some(DeltaKind::Tool),
        _ => None,
    }
}

/// The fields of a Responses body: `{model, input, max_output_tokens, stream: true, store:
/// false}` (+ `ignore_eos`), then sampling parameters.
pub(super) fn body_fields(cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let mut f = vec![model(cfg)?];
    f.push(("input".into(), Slot::TextPrompt));
    f.push(("max_output_tokens".into(), Slot::MaxTokens));
    f.push(stream_true());
    f.push(("store".into(), Slot::Fixed("false".into())));
    ignore_eos(&mut f, cfg);
    lay_over(&mut f, &cfg.sampling)?;
    Ok(f)
}

/// One event of a Responses stream (`event:` name and trimmed data).
pub(super) fn parse_event<'a>(event: Option<&'a str>, data: &'a str) -> Parsed<'a> {
    if data.is_empty() {
        return Parsed::Skip;
    }
    if data == "[DONE]" {
        // Not part of the Responses API, but harmless: the stream is over.
        return Parsed::Done;
    }
    let parsed: Event<'_> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => return malformed(&e, data),
    };
    let kind = parsed.kind.as_ref().map(Text::as_str).or(event).unwrap_or("");
    if kind == "error" || kind == "response.failed" || (kind.is_empty() && parsed.error.is_some()) {
        let raw = parsed.response.as_ref().and_then(|r| r.error).or(parsed.error);
        let msg = match (raw, &parsed.message) {
            (Some(r), _) => error_message(r.get()),
            (None, Some(m)) => m.as_str().to_owned(),
            (None, None) => servebench_core::text::one_line(data, 200),
        };
        return Parsed::Fail(ErrorKind::ServerError, format!("server error event ({kind}): {msg}"));
    }
    if let Some(d) = delta_kind(kind) {
        let text = parsed.delta.map_or(Cow::Borrowed(""), |t| t.0);
        if text.is_empty() {
            return Parsed::Skip;
        }
        // Usage arrives only with the terminal event: no per-event token counts.
        let mut e = ApiEvent::default();
        match d {
            DeltaKind::Content => e.content = text,
            DeltaKind::Reasoning => e.reasoning = text,
            DeltaKind::Tool => e.tool_chars = text.chars().count() as u64,
        }
        return Parsed::Event(e);
    }
    let resp = parsed.response.unwrap_or_default();
    let mut e = ApiEvent { server_id: resp.id.map(|i| i.0), ..ApiEvent::default() };
    if let status @ ("response.completed" | "response.incomplete") = kind {
        if let Some(u) = resp.usage {
            let cached = u.input_tokens_details.and_then(|d| d.cached_tokens);
            e.usage = EventUsage { prompt: u.input_tokens, completion: u.output_tokens, cached };
        }
        let reason = resp.incomplete_details.as_ref().and_then(|d| d.reason.as_ref()).map(Text::as_str);
        let status = status.trim_start_matches("response.");
        e.finish_reason = Some(Cow::Owned(finish_reason(status, reason)));
        e.terminal = true;
    }
    Parsed::Event(e)
}

/// A whole Responses answer (`stream: false` via `--extra-body`): one terminal event with the
/// text of every output item (reasoning items as reasoning) and the usage.
pub(super) fn parse_body(body: &str) -> Parsed<'_> {
    let b: ResponseBody<'_> = match serde_json::from_str(body) {
        Ok(b) => b,
        Err(e) => return not_json(&e, body),
    };
    if let Some(e) = b.error.filter(|e| e.get() != "null") {
        return Parsed::Fail(
            ErrorKind::ServerError,
            format!("server error in body: {}", error_message(e.get())),
        );
    }
    let mut e = ApiEvent { server_id: b.id.map(|i| i.0), terminal: true, ..ApiEvent::default() };
    for item in b.output {
        let is_reasoning = item.kind.as_ref().is_some_and(|k| k.as_str() == "reasoning");
        let to = if is_reasoning { &mut e.reasoning } else { &mut e.content };
        for t in item.content.into_iter().filter_map(|p| p.text) {
            to.to_mut().push_str(t.as_str());
        }
    }
    if let Some(u) = b.usage {
        e.usage = EventUsage { prompt: u.input_tokens, completion: u.output_tokens, cached: None };
    }
    let reason = b.incomplete_details.as_ref().and_then(|d| d.reason.as_ref()).map(Text::as_str);
    e.finish_reason = b.status.map(|s| Cow::Owned(finish_reason(s.as_str(), reason)));
    Parsed::Event(e)
}

/// The record's finish reason for a Responses answer of `status` (and, when incomplete, its
/// `incomplete_details.reason`), in chat-completions terms: `completed` → `stop`, incomplete for
/// `max_output_tokens` (or no reason) → `length`, another reason or status as it is. The
/// streamed and the whole-body paths share it.
fn finish_reason(status: &str, incomplete_reason: Option<&str>) -> String {
    match (status, incomplete_reason) {
        ("completed", _) => "stop".to_owned(),
        ("incomplete", Some("max_output_tokens") | None) => "length".to_owned(),
        ("incomplete", Some(other)) => other.to_owned(),
        (other, _) => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BackendKind;
    use crate::sse::SseEvent;
    use crate::stream::{Flow, ResponseReader};
    use servebench_core::Outcome;
    use servebench_core::RequestRecord;

    fn rec() -> RequestRecord {
        RequestRecord::scheduled(0, "r0".into(), 0, 10, 4)
    }

    fn ev<'a>(event: &'a str, data: &'a str) -> SseEvent<'a> {
        SseEvent { event: Some(event), data }
    }

    fn delta(kind: &str, text: &str) -> String {
        format!(
            r#"{{"type":"{kind}","item_id":"msg_1","output_index":0,"content_index":0,"delta":"{text}","sequence_number":3}}"#
        )
    }

    const CREATED: &str = r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","usage":null}}"#;
    const COMPLETED: &str = r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":3},"output_tokens":4,"output_tokens_details":{"reasoning_tokens":2},"total_tokens":14}}}"#;

    /// Hand-computed: dispatched at 0; created at 100; reasoning deltas at 150, 170; text deltas
    /// at 200, 230; completed at 260 → TTFT 150, ITL [20, 30, 30], TTFO 200, E2EL 260.
    #[test]
    fn responses_stream_timings_usage_and_ttfo() {
        let mut r = rec();
        r.dispatched_us = Some(0);
        let mut s = ResponseReader::new(BackendKind::Responses, true);
        assert_eq!(s.on_event(&mut r, ev("response.created", CREATED), 100), Flow::Continue);
        let ip = r#"{"type":"response.in_progress","response":{"id":"resp_1"}}"#;
        assert_eq!(s.on_event(&mut r, ev("response.in_progress", ip), 100), Flow::Continue);
        s.on_event(
            &mut r,
            ev("response.reasoning_text.delta", &delta("response.reasoning_text.delta", "th")),
            150,
        );
        s.on_event(
            &mut r,
            ev("response.reasoning_text.delta", &delta("response.reasoning_text.delta", "ink")),
            170,
        );
        s.on_event(&mut r, ev("response.output_text.delta", &delta("response.output_text.delta", "a")), 200);
        let empty = delta("response.output_text.delta", "");
        s.on_event(&mut r, ev("response.output_text.delta", &empty), 210);
        s.on_event(&mut r, ev("response.output_text.delta", &delta("response.output_text.delta", "b")), 230);
        let done = r#"{"type":"response.output_text.done","text":"ab"}"#;
        s.on_event(&mut r, ev("response.output_text.done", done), 240);
        assert_eq!(s.on_event(&mut r, ev("response.completed", COMPLETED), 260), Flow::Done);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.server_request_id.as_deref(), Some("resp_1"));
        assert_eq!(
            (r.first_event_us, r.first_token_us, r.first_content_us),
            (Some(100), Some(150), Some(200))
        );
        assert_eq!((r.last_token_us, r.done_us), (Some(230), Some(260)));
        assert_eq!(r.token_events.gaps_us, vec![20, 30, 30]);
        assert!(r.token_events.tokens.is_empty());
        assert_eq!((r.token_event_count, r.reasoning_events, r.content_events), (4, 2, 2));
        assert_eq!(
            (r.server_prompt_tokens, r.completion_tokens, r.cached_prompt_tokens),
            (Some(10), Some(4), Some(3))
        );
        assert_eq!(r.finish_reason.as_deref(), Some("stop"));
        assert_eq!(r.output_chars, 7);
        assert_eq!(r.generated_text.as_deref(), Some("thinkab"));
        let t = servebench_core::metrics::RequestTimes::of(&r);
        assert_eq!((t.ttft_us, t.e2el_us), (Some(150), Some(260)));
        assert_eq!(servebench_core::metrics::ttfo_us(&r), Some(200));
    }

    #[test]
    fn type_in_data_without_event_line_and_incomplete() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        let d = delta("response.output_text.delta", "x");
        s.on_event(&mut r, SseEvent { event: None, data: &d }, 5);
        let inc = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":1}}}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: inc }, 9), Flow::Done);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.completion_tokens, Some(1));
    }

    #[test]
    fn responses_failed_error_events_cut_streams_and_malformed_json_fail_with_their_kinds() {
        // response.failed → server_error with the message.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: failed }, 1), Flow::Stop);
        let e = r.error.clone().unwrap();
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert!(e.message.contains("engine died"), "{}", e.message);
        // error event.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        let err = r#"{"type":"error","code":"x","message":"bad things","param":null}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: err }, 1), Flow::Stop);
        assert!(r.error.unwrap().message.contains("bad things"));
        // No terminal event → incomplete; first token kept.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        s.on_event(&mut r, SseEvent { event: None, data: &delta("response.output_text.delta", "x") }, 1);
        s.end_of_body(&mut r, 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Incomplete));
        assert_eq!(r.first_token_us, Some(1));
        // Completed without a delta → no_tokens.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        s.on_event(&mut r, SseEvent { event: None, data: COMPLETED }, 3);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));
        // Malformed JSON → protocol.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: "{oops" }, 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));
    }

    #[test]
    fn tool_call_deltas_time_but_are_not_content() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Responses, false);
        let d = delta("response.function_call_arguments.delta", "{}");
        s.on_event(&mut r, SseEvent { event: None, data: &d }, 4);
        s.on_event(&mut r, SseEvent { event: None, data: COMPLETED }, 6);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((r.first_token_us, r.first_content_us), (Some(4), None));
        assert_eq!((r.reasoning_events, r.content_events, r.token_event_count), (0, 0, 1));
    }
}

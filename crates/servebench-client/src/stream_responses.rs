//! The Responses API's event-typed stream (`/v1/responses`, `stream: true`).
//!
//! Each SSE event names its type in `event:` and in the JSON `type` field (the JSON wins when
//! both are present). Rules (docs/backends.md):
//! - `response.output_text.delta` (and `response.refusal.delta`) carry visible output text;
//!   `response.reasoning_text.delta` (older servers: `response.reasoning.delta`,
//!   `response.reasoning_summary_text.delta`) carry reasoning; `response.function_call_arguments.delta`
//!   carries tool-call text. All of them are token events (TTFT, ITL); only visible text sets
//!   TTFO;
//! - `response.created` gives the server's response id;
//! - `response.completed` / `response.incomplete` end the request, with usage from
//!   `response.usage` (`input_tokens`, `output_tokens`, `input_tokens_details.cached_tokens`);
//! - `response.failed` and `error` fail the request (`server_error`); a body that ends without
//!   a terminal event is `incomplete`; a completed stream without token events is `no_tokens`.

use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::{ErrorKind, RequestRecord};

use super::{gap, Flow, StreamState};
use crate::chunk::{error_message, Text};
use crate::sse::SseEvent;

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
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    input_tokens_details: Option<Details>,
}

#[derive(Debug, Default, Clone, Copy, Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u32>,
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
        "response.function_call_arguments.delta" => Some(DeltaKind::Tool),
        _ => None,
    }
}

impl StreamState {
    /// Handles one event of a Responses stream read at `t_us`.
    pub(crate) fn on_responses_event(
        &mut self,
        rec: &mut RequestRecord,
        ev: SseEvent<'_>,
        t_us: u64,
    ) -> Flow {
        let data = ev.data.trim_ascii();
        if data.is_empty() {
            return Flow::Continue;
        }
        if data == "[DONE]" {
            // Not part of the Responses API, but harmless: the stream is over.
            self.done_seen = true;
            self.complete(rec, t_us);
            return Flow::Done;
        }
        let event: Event<'_> = match serde_json::from_str(data) {
            Ok(e) => e,
            Err(e) => {
                rec.done_us = Some(t_us);
                let data = servebench_core::text::one_line(data, 200);
                rec.fail(ErrorKind::Protocol, format!("malformed JSON event ({e}): {data}"));
                return Flow::Stop;
            }
        };
        let kind = event.kind.as_ref().map(Text::as_str).or(ev.event).unwrap_or("");
        if kind == "error" || kind == "response.failed" || (kind.is_empty() && event.error.is_some()) {
            let raw = event.response.as_ref().and_then(|r| r.error).or(event.error);
            let msg = match (raw, &event.message) {
                (Some(r), _) => error_message(r.get()),
                (None, Some(m)) => m.as_str().to_owned(),
                (None, None) => servebench_core::text::one_line(data, 200),
            };
            rec.done_us = Some(t_us);
            rec.fail(ErrorKind::ServerError, format!("server error event ({kind}): {msg}"));
            return Flow::Stop;
        }
        if let Some(d) = delta_kind(kind) {
            let text = event.delta.as_ref().map_or("", Text::as_str);
            if !text.is_empty() {
                self.responses_token(rec, d, text, t_us);
            }
            return Flow::Continue;
        }
        let resp = event.response.as_ref();
        if rec.server_request_id.is_none() {
            if let Some(id) = resp.and_then(|r| r.id.as_ref()).filter(|i| !i.as_str().is_empty()) {
                rec.server_request_id = Some(id.as_str().to_owned());
            }
        }
        match kind {
            "response.completed" | "response.incomplete" => {
                if let Some(u) = resp.and_then(|r| r.usage) {
                    rec.server_prompt_tokens = u.input_tokens.or(rec.server_prompt_tokens);
                    rec.completion_tokens = u.output_tokens.or(rec.completion_tokens);
                    if let Some(c) = u.input_tokens_details.and_then(|d| d.cached_tokens) {
                        rec.cached_prompt_tokens = Some(c);
                    }
                }
                let reason = resp.and_then(|r| r.incomplete_details.as_ref()).and_then(|d| d.reason.as_ref());
                let status = if kind == "response.completed" { "completed" } else { "incomplete" };
                rec.finish_reason = Some(finish_reason(status, reason.map(Text::as_str)));
                self.finish_seen = true;
                self.done_seen = true;
                self.complete(rec, t_us);
                Flow::Done
            }
            _ => Flow::Continue,
        }
    }

    fn responses_token(&mut self, rec: &mut RequestRecord, kind: DeltaKind, text: &str, t_us: u64) {
        match rec.last_token_us {
            None => rec.first_token_us = Some(t_us),
            Some(last) => rec.token_events.gaps_us.push(gap(last, t_us)),
        }
        rec.last_token_us = Some(t_us);
        rec.token_event_count += 1;
        // Usage arrives only with the terminal event: no per-event token counts.
        self.tokens_known = false;
        Self::note_kinds(rec, kind == DeltaKind::Reasoning, kind == DeltaKind::Content, t_us);
        if kind != DeltaKind::Tool {
            rec.output_chars += text.chars().count() as u64;
            if self.keep_text {
                self.text.push_str(text);
            }
        }
    }
}

/// The record's finish reason for a Responses answer of `status` (and, when incomplete, its
/// `incomplete_details.reason`), in chat-completions terms: `completed` → `stop`, incomplete for
/// `max_output_tokens` (or no reason) → `length`, another reason or status as it is. The
/// streamed and the whole-body paths share it.
pub(crate) fn finish_reason(status: &str, incomplete_reason: Option<&str>) -> String {
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
    use servebench_core::Outcome;

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
        let mut s = StreamState::new(true).for_responses();
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
        let mut s = StreamState::new(false).for_responses();
        let d = delta("response.output_text.delta", "x");
        s.on_event(&mut r, SseEvent { event: None, data: &d }, 5);
        let inc = r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3,"output_tokens":1}}}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: inc }, 9), Flow::Done);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.completion_tokens, Some(1));
    }

    #[test]
    fn failures() {
        // response.failed → server_error with the message.
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        let failed = r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"engine died"}}}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: failed }, 1), Flow::Stop);
        let e = r.error.clone().unwrap();
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert!(e.message.contains("engine died"), "{}", e.message);
        // error event.
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        let err = r#"{"type":"error","code":"x","message":"bad things","param":null}"#;
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: err }, 1), Flow::Stop);
        assert!(r.error.unwrap().message.contains("bad things"));
        // No terminal event → incomplete; first token kept.
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        s.on_event(&mut r, SseEvent { event: None, data: &delta("response.output_text.delta", "x") }, 1);
        s.end_of_body(&mut r, 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Incomplete));
        assert_eq!(r.first_token_us, Some(1));
        // Completed without a delta → no_tokens.
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        s.on_event(&mut r, SseEvent { event: None, data: COMPLETED }, 3);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));
        // Malformed JSON → protocol.
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        assert_eq!(s.on_event(&mut r, SseEvent { event: None, data: "{oops" }, 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));
    }

    #[test]
    fn tool_call_deltas_time_but_are_not_content() {
        let mut r = rec();
        let mut s = StreamState::new(false).for_responses();
        let d = delta("response.function_call_arguments.delta", "{}");
        s.on_event(&mut r, SseEvent { event: None, data: &d }, 4);
        s.on_event(&mut r, SseEvent { event: None, data: COMPLETED }, 6);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((r.first_token_us, r.first_content_us), (Some(4), None));
        assert_eq!((r.reasoning_events, r.content_events, r.token_event_count), (0, 0, 1));
    }
}

//! Turning the events of one response into a [`RequestRecord`]: timing of token events, usage,
//! finish reason, and the outcome. Pure (no I/O, no clock): every call gets the arrival time
//! of the frame that completed the event, so it is tested with hand-written event sequences.
//!
//! Rules (see `docs/metrics.md`):
//! - a *token event* is an event carrying generated content: non-empty text, content,
//!   reasoning or tool-call text. A chat role chunk with empty content is not one (vLLM counts
//!   it as the first token, vllm#15106);
//! - `[DONE]`, or a finish reason followed by a clean end of body, completes the stream; a clean
//!   end without either is `Incomplete`; a complete stream without token events is `NoTokens`
//!   (vLLM reports such chat streams as successes);
//! - per-event token counts are recorded only when every token event carried cumulative
//!   `usage` (vLLM's `continuous_usage_stats`).

use servebench_core::{ErrorKind, Outcome, RequestRecord};

use crate::chunk::{error_message, Chunk};
use crate::sse::SseEvent;

#[path = "stream_responses.rs"]
pub(crate) mod responses;

#[path = "stream_native.rs"]
mod native;

/// What the reader should do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Keep reading.
    Continue,
    /// `[DONE]` arrived: the record is final; read the rest of the body only to reuse the
    /// connection.
    Done,
    /// The request failed (the record says why): stop reading.
    Stop,
}

/// Per-response parsing state.
#[derive(Debug, Default)]
pub(crate) struct StreamState {
    keep_text: bool,
    text: String,
    done_seen: bool,
    finish_seen: bool,
    /// Last cumulative `usage.completion_tokens` seen.
    cum_tokens: Option<u32>,
    /// Every token event so far carried cumulative usage.
    tokens_known: bool,
    tokens: Vec<u32>,
    /// The stream speaks the Responses API's typed events (`stream_responses.rs`).
    responses: bool,
    /// A native dialect's parser (`stream_native.rs`); `None` for OpenAI-style streams.
    native: Option<crate::dialect::DialectState>,
    /// The text is collected only for records without output-token usage (retokenizing).
    text_only_without_usage: bool,
}

fn gap(from: u64, to: u64) -> u32 {
    u32::try_from(to.saturating_sub(from)).unwrap_or(u32::MAX)
}

impl StreamState {
    pub(crate) fn new(keep_text: bool) -> Self {
        StreamState { keep_text, tokens_known: true, ..StreamState::default() }
    }

    /// A state for the Responses API's event-typed stream.
    pub(crate) fn for_responses(mut self) -> Self {
        self.responses = true;
        self
    }

    /// Records one token event at `t_us` of the given kinds (reasoning, visible content): the
    /// reasoning/content event counts and the first visible content time (TTFO).
    fn note_kinds(rec: &mut RequestRecord, reasoning: bool, content: bool, t_us: u64) {
        if reasoning {
            rec.reasoning_events += 1;
        }
        if content {
            rec.content_events += 1;
            if rec.first_content_us.is_none() {
                rec.first_content_us = Some(t_us);
            }
        }
    }

    /// Handles one SSE event that completed in a frame read at `t_us`.
    pub(crate) fn on_event(&mut self, rec: &mut RequestRecord, ev: SseEvent<'_>, t_us: u64) -> Flow {
        if rec.first_event_us.is_none() {
            rec.first_event_us = Some(t_us);
        }
        if matches!(ev.event, Some("error") | Some("response.failed")) {
            rec.done_us = Some(t_us);
            rec.fail(ErrorKind::ServerError, format!("server error event: {}", error_message(ev.data)));
            return Flow::Stop;
        }
        if self.responses {
            return self.on_responses_event(rec, ev, t_us);
        }
        if self.native.is_some() {
            return self.on_native_event(rec, ev, t_us);
        }
        let data = ev.data.trim_ascii();
        if data == "[DONE]" {
            self.done_seen = true;
            self.complete(rec, t_us);
            return Flow::Done;
        }
        if data.is_empty() {
            return Flow::Continue;
        }
        let chunk = match Chunk::parse(data) {
            Ok(c) => c,
            Err(e) => {
                rec.done_us = Some(t_us);
                let data = servebench_core::text::one_line(data, 200);
                rec.fail(ErrorKind::Protocol, format!("malformed JSON event ({e}): {data}"));
                return Flow::Stop;
            }
        };
        self.apply(rec, &chunk, t_us)
    }

    /// Applies one parsed chunk (a stream event or a whole non-streaming body).
    pub(crate) fn apply(&mut self, rec: &mut RequestRecord, chunk: &Chunk<'_>, t_us: u64) -> Flow {
        if let Some(msg) = chunk.error_message() {
            rec.done_us = Some(t_us);
            rec.fail(ErrorKind::ServerError, format!("server error in stream: {msg}"));
            return Flow::Stop;
        }
        if rec.server_request_id.is_none() {
            if let Some(id) = chunk.id.as_ref().filter(|i| !i.as_str().is_empty()) {
                rec.server_request_id = Some(id.as_str().to_owned());
            }
        }
        let usage = chunk.usage;
        if let Some(u) = usage {
            if u.prompt_tokens.is_some() {
                rec.server_prompt_tokens = u.prompt_tokens;
            }
            if let Some(c) = u.prompt_tokens_details.and_then(|d| d.cached_tokens) {
                rec.cached_prompt_tokens = Some(c);
            }
            if u.completion_tokens.is_some() {
                rec.completion_tokens = u.completion_tokens;
            }
        }
        let g = chunk.generated();
        if g.any() {
            match rec.last_token_us {
                None => rec.first_token_us = Some(t_us),
                Some(last) => rec.token_events.gaps_us.push(gap(last, t_us)),
            }
            rec.last_token_us = Some(t_us);
            rec.token_event_count += 1;
            Self::note_kinds(rec, g.reasoning_chars > 0, g.content_chars > 0, t_us);
            match usage.and_then(|u| u.completion_tokens) {
                Some(cum) if self.tokens_known => {
                    self.tokens.push(cum.saturating_sub(self.cum_tokens.unwrap_or(0)));
                }
                _ => self.tokens_known = false,
            }
            rec.output_chars += g.output_chars();
            if self.keep_text {
                for c in &chunk.choices {
                    c.append_text(&mut self.text);
                }
            }
        }
        if let Some(cum) = usage.and_then(|u| u.completion_tokens) {
            self.cum_tokens = Some(cum);
        }
        if let Some(f) = chunk.finish_reason() {
            self.finish_seen = true;
            rec.finish_reason = Some(f.to_owned());
        }
        Flow::Continue
    }

    /// Whether the stream can be considered complete at a clean end of body.
    pub(crate) fn done_seen(&self) -> bool {
        self.done_seen
    }

    /// Marks the record finished at `t_us` (after `[DONE]` or a whole JSON body).
    pub(crate) fn complete(&mut self, rec: &mut RequestRecord, t_us: u64) {
        rec.done_us = Some(t_us);
        if rec.token_event_count == 0 {
            rec.fail(ErrorKind::NoTokens, "the response carried no generated tokens");
        } else {
            rec.outcome = Outcome::Completed;
            rec.error = None;
        }
        self.flush(rec);
    }

    /// The body ended cleanly at `t_us` without `[DONE]`.
    pub(crate) fn end_of_body(&mut self, rec: &mut RequestRecord, t_us: u64) {
        if self.finish_seen {
            self.complete(rec, t_us);
        } else {
            rec.done_us = Some(t_us);
            rec.fail(ErrorKind::Incomplete, "the stream ended without [DONE] or a finish reason");
            self.flush(rec);
        }
    }

    /// Moves per-event token counts and text into the record (also for failed requests).
    pub(crate) fn flush(&mut self, rec: &mut RequestRecord) {
        if self.tokens_known && !self.tokens.is_empty() && self.tokens.len() == rec.token_event_count as usize
        {
            rec.token_events.tokens = std::mem::take(&mut self.tokens);
        }
        if self.keep_text && !(self.text_only_without_usage && rec.completion_tokens.is_some()) {
            rec.generated_text = Some(std::mem::take(&mut self.text));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::TokenEvents;

    fn rec() -> RequestRecord {
        RequestRecord::scheduled(0, "r0".into(), 0, 10, 4)
    }

    fn data(s: &str) -> SseEvent<'_> {
        SseEvent { event: None, data: s }
    }

    const ROLE: &str = r#"{"id":"c1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}"#;

    fn tok(s: &str) -> String {
        format!(r#"{{"id":"c1","choices":[{{"index":0,"delta":{{"content":"{s}"}},"finish_reason":null}}]}}"#)
    }

    #[test]
    fn chat_stream_timings_and_usage() {
        let mut r = rec();
        let mut s = StreamState::new(true);
        assert_eq!(s.on_event(&mut r, data(ROLE), 100), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("a")), 150), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("bc")), 180), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("d")), 180), Flow::Continue);
        let fin = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        s.on_event(&mut r, data(fin), 200);
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#;
        s.on_event(&mut r, data(usage), 210);
        assert_eq!(s.on_event(&mut r, data("[DONE]"), 220), Flow::Done);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.first_event_us, Some(100));
        assert_eq!(r.first_token_us, Some(150));
        assert_eq!(r.last_token_us, Some(180));
        assert_eq!(r.done_us, Some(220));
        assert_eq!(r.token_events, TokenEvents { gaps_us: vec![30, 0], tokens: vec![] });
        assert_eq!(r.token_event_count, 3);
        assert_eq!(
            (r.server_prompt_tokens, r.completion_tokens, r.cached_prompt_tokens),
            (Some(10), Some(4), Some(2))
        );
        assert_eq!(r.finish_reason.as_deref(), Some("length"));
        assert_eq!(r.output_chars, 4);
        assert_eq!(r.generated_text.as_deref(), Some("abcd"));
        assert_eq!(r.server_request_id.as_deref(), Some("c1"));
    }

    #[test]
    fn continuous_usage_gives_tokens_per_event() {
        let mut r = rec();
        let mut s = StreamState::new(false);
        let ev = |c: &str, n: u32| {
            format!(
                r#"{{"choices":[{{"delta":{{"content":"{c}"}}}}],"usage":{{"prompt_tokens":3,"completion_tokens":{n}}}}}"#
            )
        };
        s.on_event(&mut r, data(&ev("", 0)), 1);
        s.on_event(&mut r, data(&ev("a", 1)), 2);
        s.on_event(&mut r, data(&ev("bcd", 4)), 3); // speculative decoding: 3 tokens
        s.on_event(&mut r, data(&ev("e", 5)), 4);
        s.on_event(&mut r, data("[DONE]"), 5);
        assert_eq!(r.token_events.tokens, vec![1, 3, 1]);
        assert_eq!(r.completion_tokens, Some(5));
        assert!(r.generated_text.is_none());
    }

    #[test]
    fn usage_only_on_last_chunk_leaves_tokens_empty() {
        let mut r = rec();
        let mut s = StreamState::new(false);
        s.on_event(&mut r, data(&tok("a")), 1);
        let last = r#"{"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"completion_tokens":2}}"#;
        s.on_event(&mut r, data(last), 2);
        s.end_of_body(&mut r, 3); // no [DONE], but a finish reason: accepted
        assert_eq!(r.outcome, Outcome::Completed);
        assert!(r.token_events.tokens.is_empty());
        assert_eq!(r.done_us, Some(3));
    }

    #[test]
    fn zero_tokens_incomplete_and_errors() {
        let mut r = rec();
        let mut s = StreamState::new(false);
        s.on_event(&mut r, data(ROLE), 1);
        s.on_event(&mut r, data("[DONE]"), 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));

        let mut r = rec();
        let mut s = StreamState::new(false);
        s.on_event(&mut r, data(&tok("a")), 1);
        s.end_of_body(&mut r, 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Incomplete));
        assert_eq!(r.first_token_us, Some(1));

        let mut r = rec();
        let mut s = StreamState::new(false);
        assert_eq!(s.on_event(&mut r, data("{not json"), 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));

        let mut r = rec();
        let mut s = StreamState::new(false);
        let err = r#"{"error":{"message":"out of memory","code":500}}"#;
        assert_eq!(s.on_event(&mut r, data(err), 1), Flow::Stop);
        let e = r.error.clone().unwrap();
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert!(e.message.contains("out of memory"));

        let mut r = rec();
        let mut s = StreamState::new(false);
        let ev = SseEvent { event: Some("error"), data: "boom" };
        assert_eq!(s.on_event(&mut r, ev, 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::ServerError));
    }

    #[test]
    fn completions_text_and_tool_calls_count_as_tokens() {
        let mut r = rec();
        let mut s = StreamState::new(false);
        s.on_event(&mut r, data(r#"{"choices":[{"text":"x"}]}"#), 1);
        let tool = r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}"#;
        s.on_event(&mut r, data(tool), 2);
        s.on_event(&mut r, data(r#"{"choices":[{"text":""}]}"#), 3);
        assert_eq!(r.token_event_count, 2);
        assert_eq!(r.output_chars, 1);
    }
}

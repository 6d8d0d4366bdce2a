//! Turning the events of one response into a [`RequestRecord`]: timing of token events, usage,
//! finish reason, and the outcome. Pure (no I/O, no clock): every call gets the arrival time
//! of the frame that completed the event, so it is tested with hand-written event sequences.
//!
//! `StreamState` applies the dialect-neutral `Parsed` outcomes of every API family the
//! same way; [`ResponseReader`] pairs it with the family's parser (`api`).
//!
//! Rules (see `docs/metrics.md`):
//! - a *token event* is an event carrying generated content: non-empty text, content,
//!   reasoning or tool-call text, or a token the server says it generated without text. A chat
//!   role chunk with empty content is not one (vLLM counts it as the first token, vllm#15106);
//! - `[DONE]`, a family's terminal event, the usage-only chunk after a finish reason, or a
//!   finish reason followed by a clean end of body, completes the stream; a clean end without
//!   either is `Incomplete`; a complete stream without token events is `NoTokens` (vLLM
//!   reports such chat streams as successes);
//! - per-event token counts are recorded only when every token event carried one: its own
//!   count (TGI, llama.cpp), or the growth of a cumulative count since the previous token event
//!   (OpenAI continuous usage stats, SGLang) — tokens of events without text are carried by the
//!   next token event — and only when they add up to the server's output-token count (an EOS
//!   token in a last chunk without text is carried by none).

use servebench_core::{ErrorKind, FailureCause, Outcome, RequestRecord};

use crate::api::{ApiEvent, Parsed, Pooled, ResponseParser};
use crate::backend::BackendKind;
use crate::sse::SseEvent;

/// What the reader should do after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep reading.
    Continue,
    /// The response is complete (`[DONE]`, a terminal event): the record is final; read the
    /// rest of the body only to reuse the connection.
    Done,
    /// The request failed (the record says why): stop reading.
    Stop,
}

/// Per-response state, the same for every API family.
#[derive(Debug, Default)]
struct StreamState {
    keep_text: bool,
    text: String,
    done_seen: bool,
    finish_seen: bool,
    /// Cumulative completion tokens at the last token event.
    cum_tokens: Option<u32>,
    /// Every token event so far carried a token count.
    tokens_known: bool,
    tokens: Vec<u32>,
    /// The text is collected only for records without output-token usage (retokenizing).
    text_only_without_usage: bool,
    /// When the first event with a finish reason but no generated content arrived (an answer
    /// whose one token was the end-of-sequence token comes as such an event alone).
    bare_finish_us: Option<u64>,
    /// When the latest event of the response arrived.
    last_event_us: Option<u64>,
}

fn gap(from: u64, to: u64) -> u32 {
    u32::try_from(to.saturating_sub(from)).unwrap_or(u32::MAX)
}

impl StreamState {
    fn new(keep_text: bool) -> Self {
        StreamState { keep_text, tokens_known: true, ..StreamState::default() }
    }

    /// Applies one parsed event (or whole body) that completed at `t_us`.
    fn apply(&mut self, rec: &mut RequestRecord, parsed: Parsed<'_>, t_us: u64) -> Flow {
        if self.done_seen {
            // The record is final (a `[DONE]` after the usage chunk that ended the stream).
            return Flow::Done;
        }
        match parsed {
            Parsed::Skip => Flow::Continue,
            Parsed::Done => {
                self.done_seen = true;
                self.complete(rec, t_us);
                Flow::Done
            }
            Parsed::Fail(kind, msg) => {
                rec.done_us = Some(t_us);
                // An error event or body may be the server's chat-template complaint (SB403).
                rec.fail_with(kind, crate::api::server_text_cause(&msg), msg);
                Flow::Stop
            }
            Parsed::WrongDialect(msg) => {
                rec.done_us = Some(t_us);
                rec.fail_with(ErrorKind::Protocol, Some(FailureCause::WrongDialect), msg);
                Flow::Stop
            }
            Parsed::Event(e) => {
                self.last_event_us = Some(t_us);
                self.apply_event(rec, &e, t_us)
            }
            Parsed::Pooled(p) => {
                self.apply_pooled(rec, p, t_us);
                Flow::Done
            }
        }
    }

    fn apply_event(&mut self, rec: &mut RequestRecord, e: &ApiEvent<'_>, t_us: u64) -> Flow {
        if rec.server_request_id.is_none() {
            if let Some(id) = e.server_id.as_ref().filter(|i| !i.is_empty()) {
                rec.server_request_id = Some(id.to_string());
            }
        }
        if e.usage.prompt.is_some() {
            rec.server_prompt_tokens = e.usage.prompt;
        }
        if e.usage.cached.is_some() {
            rec.cached_prompt_tokens = e.usage.cached;
        }
        if e.usage.completion.is_some() {
            rec.completion_tokens = e.usage.completion;
        }
        if let Some(t) = e.server_timing {
            rec.server_queue_time_ms = t.queue_time_ms.or(rec.server_queue_time_ms);
            rec.server_ttft_ms = t.ttft_ms.or(rec.server_ttft_ms);
        }
        if e.is_token_event() {
            self.token_event(rec, e, t_us);
        }
        if let Some(f) = &e.finish_reason {
            self.finish_seen = true;
            rec.finish_reason = Some(f.to_string());
            if !e.is_token_event() {
                self.bare_finish_us.get_or_insert(t_us);
            }
        }
        // The usage-only chunk after a finish reason (`stream_options.include_usage`) is an
        // OpenAI stream's last event before `[DONE]`: the stream ends there. A server that then
        // held the body open without `[DONE]` gave an E2EL of the hold (2 s for 74 ms of
        // tokens), with no held-open warning (the reader's wait after a last event now applies).
        let usage_after_finish = self.finish_seen && e.usage_only;
        if e.terminal || usage_after_finish {
            self.done_seen = true;
            self.complete(rec, t_us);
            return Flow::Done;
        }
        Flow::Continue
    }

    fn token_event(&mut self, rec: &mut RequestRecord, e: &ApiEvent<'_>, t_us: u64) {
        match rec.last_token_us {
            None => rec.first_token_us = Some(t_us),
            Some(last) => rec.token_events.gaps_us.push(gap(last, t_us)),
        }
        rec.last_token_us = Some(t_us);
        rec.token_event_count += 1;
        if !e.reasoning.is_empty() {
            rec.reasoning_events += 1;
        }
        if !e.content.is_empty() {
            rec.content_events += 1;
            if rec.first_content_us.is_none() {
                rec.first_content_us = Some(t_us);
            }
        }
        let carried = match (e.tokens, e.cumulative_completion) {
            (Some(n), _) => Some(n),
            (None, Some(cum)) => Some(cum.saturating_sub(self.cum_tokens.unwrap_or(0))),
            (None, None) => None,
        };
        match carried {
            Some(n) if self.tokens_known => self.tokens.push(n),
            _ => self.tokens_known = false,
        }
        if let Some(cum) = e.cumulative_completion {
            self.cum_tokens = Some(cum);
        }
        rec.output_chars += (e.content.chars().count() + e.reasoning.chars().count()) as u64;
        if self.keep_text {
            self.text.push_str(&e.reasoning);
            self.text.push_str(&e.content);
        }
    }

    /// A pooling answer: complete at `t_us`, no tokens generated (0 from the server's view).
    fn apply_pooled(&mut self, rec: &mut RequestRecord, p: Pooled<'_>, t_us: u64) {
        if let Some(id) = p.server_id.filter(|i| !i.is_empty()) {
            rec.server_request_id.get_or_insert_with(|| id.into_owned());
        }
        rec.server_prompt_tokens = p.prompt_tokens;
        rec.completion_tokens = Some(0);
        rec.first_token_us = Some(t_us);
        rec.last_token_us = Some(t_us);
        rec.done_us = Some(t_us);
        rec.outcome = Outcome::Completed;
        rec.error = None;
    }

    /// Whether the stream can be considered complete at a clean end of body.
    fn done_seen(&self) -> bool {
        self.done_seen
    }

    /// Marks the record finished at `t_us` (after `[DONE]`, a terminal event, or a whole body).
    fn complete(&mut self, rec: &mut RequestRecord, t_us: u64) {
        rec.done_us = Some(t_us);
        self.eos_only_answer(rec);
        if rec.token_event_count == 0 {
            rec.fail(ErrorKind::NoTokens, "the response carried no generated tokens");
        } else {
            rec.outcome = Outcome::Completed;
            rec.error = None;
        }
        self.flush(rec);
    }

    /// An answer of one end-of-sequence token: no event carried text, but one carried the
    /// finish reason and the server counts one generated token (`usage.completion_tokens` 1) —
    /// a model that stopped at once (a prompt without `ignore_eos`, a stop string matched at
    /// once). That event is its token event (first and last token): it failed as `no_tokens`,
    /// where vLLM's client counts it a success. Without the server's count it stays
    /// `no_tokens` (nothing says a token was generated).
    fn eos_only_answer(&mut self, rec: &mut RequestRecord) {
        let (Some(at), true) = (self.bare_finish_us, rec.token_event_count == 0) else { return };
        if rec.completion_tokens == Some(1) {
            (rec.first_token_us, rec.last_token_us) = (Some(at), Some(at));
            rec.token_event_count = 1;
            self.tokens_known = false;
        }
    }

    /// The body ended cleanly at `t_us` without `[DONE]`.
    fn end_of_body(&mut self, rec: &mut RequestRecord, t_us: u64) {
        if self.finish_seen {
            // Done at its last event, as after `[DONE]`: a server that held the body open after
            // it (llama.cpp's shape, usage in the finish chunk and no `[DONE]`) stretched E2EL
            // by the hold; the hold shows in the body's last byte (the held-open warning).
            self.complete(rec, self.last_event_us.unwrap_or(t_us).min(t_us));
        } else {
            rec.done_us = Some(t_us);
            if rec.first_event_us.is_none() {
                fail_before_any_event(rec);
            } else {
                rec.fail(ErrorKind::Incomplete, "the stream ended without [DONE] or a finish reason");
            }
            self.flush(rec);
        }
    }

    /// Moves per-event token counts and text into the record (also for failed requests). The
    /// counts are kept only when they account for the server's output-token count: an EOS token
    /// reported in a last chunk without text (continuous usage stats) is carried by no token
    /// event, and a token view over the others would not average to the request's TPOT.
    fn flush(&mut self, rec: &mut RequestRecord) {
        let per_event = self.tokens.iter().map(|&n| u64::from(n)).sum::<u64>();
        let accounted = rec.completion_tokens.is_none_or(|t| u64::from(t) == per_event);
        if self.tokens_known
            && accounted
            && !self.tokens.is_empty()
            && self.tokens.len() == rec.token_event_count as usize
        {
            rec.token_events.tokens = std::mem::take(&mut self.tokens);
        }
        if self.keep_text && !(self.text_only_without_usage && rec.usage_output_tokens().is_some()) {
            rec.generated_text = Some(std::mem::take(&mut self.text));
        }
    }
}

/// Reads one response of a backend into its record: the API family's parser feeding the
/// neutral state. Pure: the caller frames the body ([`crate::sse::SseFramer`]) and gives each
/// event the arrival time of the frame that completed it.
///
/// ```
/// use servebench_client::stream::{Flow, ResponseReader};
/// use servebench_client::{BackendKind, SseEvent};
/// use servebench_core::{Outcome, RequestRecord};
///
/// let mut rec = RequestRecord::scheduled(0, "r0".into(), 0, 3, 8);
/// let mut reader = ResponseReader::new(BackendKind::Chat, false);
/// let ev = |data| SseEvent { event: None, data };
/// reader.on_event(&mut rec, ev(r#"{"choices":[{"delta":{"content":"hi"}}]}"#), 120);
/// assert_eq!(reader.on_event(&mut rec, ev("[DONE]"), 150), Flow::Done);
/// assert_eq!((rec.outcome, rec.first_token_us, rec.done_us), (Outcome::Completed, Some(120), Some(150)));
/// ```
#[derive(Debug)]
pub struct ResponseReader {
    parser: ResponseParser,
    state: StreamState,
}

impl ResponseReader {
    /// A reader of `backend`'s responses that keeps the text when `keep_text`.
    pub fn new(backend: BackendKind, keep_text: bool) -> Self {
        ResponseReader { parser: ResponseParser::for_backend(backend), state: StreamState::new(keep_text) }
    }

    /// A reader for one request with `opts`: the text is collected when it is kept
    /// (`keep_text`) or may be retokenized (`keep_text_without_usage`: kept only when the
    /// response had no output-token usage).
    pub fn for_request(backend: BackendKind, keep_text: bool, keep_text_without_usage: bool) -> Self {
        let mut r = Self::new(backend, keep_text || keep_text_without_usage);
        r.state.text_only_without_usage = !keep_text && keep_text_without_usage;
        r
    }

    /// Handles one SSE event that completed in a frame read at `t_us`.
    pub fn on_event(&mut self, rec: &mut RequestRecord, ev: SseEvent<'_>, t_us: u64) -> Flow {
        if rec.first_event_us.is_none() {
            rec.first_event_us = Some(t_us);
        }
        let parsed = self.parser.parse_event(ev);
        self.state.apply(rec, parsed, t_us)
    }

    /// A non-streaming response: one whole body, one event at `t_us` (when its last byte
    /// arrived).
    pub fn on_body(&mut self, rec: &mut RequestRecord, body: &[u8], t_us: u64) {
        rec.first_event_us = Some(t_us);
        let parsed = self.parser.parse_body(body);
        if self.state.apply(rec, parsed, t_us) == Flow::Continue {
            // A body without a terminal marker is complete when it ends.
            self.state.complete(rec, t_us);
        }
    }

    /// Whether the response is complete (`[DONE]` or a terminal event seen).
    pub fn done_seen(&self) -> bool {
        self.state.done_seen()
    }

    /// The body ended cleanly at `t_us` without a terminal event.
    pub fn end_of_body(&mut self, rec: &mut RequestRecord, t_us: u64) {
        self.state.end_of_body(rec, t_us);
    }

    /// Moves per-event token counts and text into the record (also for failed requests).
    pub fn flush(&mut self, rec: &mut RequestRecord) {
        self.state.flush(rec);
    }
}

/// Fails a request whose body ended before any event: an empty (or blank) body — HTTP 204, a
/// proxy's empty 200 — is not a stream cut short, nor JSON that is not JSON.
pub(crate) fn fail_before_any_event(rec: &mut RequestRecord) {
    let status = rec.http_status.map_or_else(String::new, |s| format!(" (HTTP {s})"));
    rec.fail(ErrorKind::Incomplete, format!("the response body ended before any event{status}"));
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
        let mut s = ResponseReader::new(BackendKind::Completions, true);
        assert_eq!(s.on_event(&mut r, data(ROLE), 100), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("a")), 150), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("bc")), 180), Flow::Continue);
        assert_eq!(s.on_event(&mut r, data(&tok("d")), 180), Flow::Continue);
        let fin = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}"#;
        s.on_event(&mut r, data(fin), 200);
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#;
        // The usage chunk after the finish reason is the stream's last event: done there.
        assert_eq!(s.on_event(&mut r, data(usage), 210), Flow::Done);
        assert_eq!(s.on_event(&mut r, data("[DONE]"), 220), Flow::Done);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.first_event_us, Some(100));
        assert_eq!(r.first_token_us, Some(150));
        assert_eq!(r.last_token_us, Some(180));
        assert_eq!(r.done_us, Some(210));
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
        let mut s = ResponseReader::new(BackendKind::Completions, false);
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
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(&tok("a")), 1);
        let last = r#"{"choices":[{"delta":{"content":"b"},"finish_reason":"stop"}],"usage":{"completion_tokens":2}}"#;
        s.on_event(&mut r, data(last), 2);
        s.end_of_body(&mut r, 3); // no [DONE], but a finish reason: accepted
        assert_eq!(r.outcome, Outcome::Completed);
        assert!(r.token_events.tokens.is_empty());
        // Done at the last event (the finish chunk with usage, llama.cpp's shape), not at the
        // body's end: a body held open after it stretched E2EL by the hold.
        assert_eq!(r.done_us, Some(2));
    }

    /// Pins an answer whose one token was the end-of-sequence token: an empty text with
    /// `finish_reason: "stop"`, then `usage.completion_tokens: 1` (the model stopped at once).
    /// It failed as `no_tokens`; vLLM's client counts it a success. The finish event is its
    /// token event; without the server's count (or with 0, or several tokens none of which
    /// came) it stays `no_tokens`.
    #[test]
    fn an_eos_only_answer_counted_by_the_server_completes_at_its_finish_event() {
        let finish = r#"{"choices":[{"index":0,"text":"","finish_reason":"stop"}]}"#;
        let usage =
            |n: u32| format!(r#"{{"choices":[],"usage":{{"prompt_tokens":3,"completion_tokens":{n}}}}}"#);
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(finish), 30);
        s.on_event(&mut r, data(&usage(1)), 31);
        s.on_event(&mut r, data("[DONE]"), 32);
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert_eq!((r.first_token_us, r.last_token_us, r.token_event_count), (Some(30), Some(30), 1));
        assert_eq!((r.completion_tokens, r.done_us, r.first_content_us), (Some(1), Some(31), None));
        // The same in one chunk (continuous usage), ended by the body's end.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        let one =
            r#"{"choices":[{"index":0,"text":"","finish_reason":"stop"}],"usage":{"completion_tokens":1}}"#;
        s.on_event(&mut r, data(one), 40);
        s.end_of_body(&mut r, 41);
        assert_eq!((r.outcome, r.first_token_us), (Outcome::Completed, Some(40)));
        for n in [None, Some(0), Some(3)] {
            let mut r = rec();
            let mut s = ResponseReader::new(BackendKind::Completions, false);
            s.on_event(&mut r, data(finish), 30);
            if let Some(n) = n {
                s.on_event(&mut r, data(&usage(n)), 31);
            }
            s.on_event(&mut r, data("[DONE]"), 32);
            assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens), "{n:?}");
        }
    }

    /// Pins a stream whose usage-only chunk after the finish reason is not followed by
    /// `[DONE]` while the server holds the body open (2 s): `done` was the body's end, so E2EL
    /// was the hold. The usage chunk is the stream's last event: the stream is done there.
    #[test]
    fn the_usage_chunk_after_a_finish_reason_ends_the_stream() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(&tok("a")), 10);
        let finish = r#"{"choices":[{"index":0,"text":"b","finish_reason":"length"}]}"#;
        assert_eq!(s.on_event(&mut r, data(finish), 20), Flow::Continue);
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#;
        assert_eq!(s.on_event(&mut r, data(usage), 21), Flow::Done);
        assert_eq!((r.outcome, r.done_us, r.last_token_us), (Outcome::Completed, Some(21), Some(20)));
        // Before the finish reason, a usage chunk (continuous usage stats) does not end it.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        assert_eq!(s.on_event(&mut r, data(usage), 5), Flow::Continue);
        // Nor does a chunk of another choice (n > 1) with continuous usage after choice 0's
        // finish: only a chunk without choices is the usage chunk.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(finish), 20);
        let other =
            r#"{"choices":[{"index":1,"text":"","finish_reason":null}],"usage":{"completion_tokens":2}}"#;
        assert_eq!(s.on_event(&mut r, data(other), 22), Flow::Continue);
    }

    /// Pins vLLM 0.34's server timing on the usage chunk (`metrics.queue_time_ms`,
    /// `metrics.time_to_first_token_ms`) kept in the record; a `metrics` that is not an object,
    /// or whose values are not numbers, is no timing (as vLLM's client tolerates it).
    #[test]
    fn the_usage_chunks_server_timing_is_kept_and_bad_values_are_none() {
        let run = |metrics: &str| {
            let mut r = rec();
            let mut s = ResponseReader::new(BackendKind::Chat, false);
            s.on_event(&mut r, data(&tok("x")), 10);
            let usage = format!(
                r#"{{"choices":[],"usage":{{"prompt_tokens":4,"completion_tokens":1}},"metrics":{metrics}}}"#
            );
            s.on_event(&mut r, data(&usage), 11);
            s.on_event(&mut r, data("[DONE]"), 12);
            assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
            (r.server_queue_time_ms, r.server_ttft_ms)
        };
        assert_eq!(
            run(r#"{"queue_time_ms":0.0,"time_to_first_token_ms":1250.0}"#),
            (Some(0.0), Some(1250.0))
        );
        assert_eq!(run(r#"{"queue_time_ms":null,"time_to_first_token_ms":7}"#), (None, Some(7.0)));
        for bad in
            ["null", r#""invalid""#, "{}", r#"{"queue_time_ms":"3"}"#, r#"{"time_to_first_token_ms":-3}"#]
        {
            assert_eq!(run(bad), (None, None), "{bad}");
        }
    }

    #[test]
    fn zero_tokens_incomplete_and_errors() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(ROLE), 1);
        s.on_event(&mut r, data("[DONE]"), 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::NoTokens));

        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(&tok("a")), 1);
        s.end_of_body(&mut r, 2);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Incomplete));
        assert_eq!(r.first_token_us, Some(1));

        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        assert_eq!(s.on_event(&mut r, data("{not json"), 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::Protocol));

        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        let err = r#"{"error":{"message":"out of memory","code":500}}"#;
        assert_eq!(s.on_event(&mut r, data(err), 1), Flow::Stop);
        let e = r.error.clone().unwrap();
        assert_eq!(e.kind, ErrorKind::ServerError);
        assert!(e.message.contains("out of memory"));

        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        let ev = SseEvent { event: Some("error"), data: "boom" };
        assert_eq!(s.on_event(&mut r, ev, 1), Flow::Stop);
        assert_eq!(r.error.as_ref().map(|e| e.kind), Some(ErrorKind::ServerError));
    }

    #[test]
    fn completions_text_and_tool_calls_count_as_tokens() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        s.on_event(&mut r, data(r#"{"choices":[{"text":"x"}]}"#), 1);
        let tool = r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{}"}}]}}]}"#;
        s.on_event(&mut r, data(tool), 2);
        s.on_event(&mut r, data(r#"{"choices":[{"text":""}]}"#), 3);
        assert_eq!(r.token_event_count, 2);
        assert_eq!(r.output_chars, 1);
    }

    #[test]
    fn continuous_usage_of_an_event_without_text_is_carried_to_the_next_token_event() {
        // The server counted a token whose text it held back (empty content, usage 2 → 3): the
        // next token event carries it, so the per-event counts add up to the completion tokens.
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        let ev = |c: &str, n: u32| {
            format!(
                r#"{{"choices":[{{"text":"{c}"}}],"usage":{{"prompt_tokens":3,"completion_tokens":{n}}}}}"#
            )
        };
        for (i, (c, n)) in [("a", 1), ("b", 2), ("", 3), ("cd", 4)].into_iter().enumerate() {
            s.on_event(&mut r, data(&ev(c, n)), i as u64);
        }
        s.on_event(&mut r, data("[DONE]"), 9);
        assert_eq!(r.token_events.tokens, vec![1, 1, 2]);
        assert_eq!(r.token_events.tokens.iter().sum::<u32>(), r.completion_tokens.unwrap());
    }

    /// vLLM's continuous usage stats with a natural stop: seven text chunks counted 1…7, then the
    /// finish chunk (no text) counts 8 — the EOS token. No token event carries it, so per-event
    /// counts [1 × 7] would give a token view of 6 values whose mean is not the TPOT over 8
    /// tokens; they are not recorded (the token view spreads the span over T − 1 = 7).
    #[test]
    fn per_event_counts_that_miss_a_last_token_without_text_are_not_recorded() {
        let mut r = rec();
        let mut s = ResponseReader::new(BackendKind::Completions, false);
        let ev = |c: &str, n: u32, finish: &str| {
            format!(
                r#"{{"choices":[{{"text":"{c}","finish_reason":{finish}}}],"usage":{{"prompt_tokens":3,"completion_tokens":{n}}}}}"#
            )
        };
        for n in 1..=7 {
            s.on_event(&mut r, data(&ev("x", n, "null")), u64::from(n));
        }
        s.on_event(&mut r, data(&ev("", 8, "\"stop\"")), 9);
        s.on_event(&mut r, data("[DONE]"), 10);
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!((r.token_event_count, r.completion_tokens), (7, Some(8)));
        assert!(r.token_events.tokens.is_empty(), "{:?}", r.token_events.tokens);
    }
}

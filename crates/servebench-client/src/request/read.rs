//! The read phase of a request: an error status's body, a whole JSON answer, or an event
//! stream, decoded as it arrives when compressed. Every frame is timed when its bytes arrive
//! (`at`: when the socket read that brought them returned), before any parsing.

use std::time::Instant;

use http::header::{HeaderMap, CONTENT_TYPE};
use http::StatusCode;
use servebench_core::{ErrorKind, FailureCause, RequestRecord, RequestSpec, RunClock};

use super::timer::Timer;
use super::{ExecOptions, RUNAWAY_SLACK_EVENTS};
use crate::body::BodyTemplate;
use crate::sse::{SseError, SseFramer};
use crate::stream::{fail_before_any_event, Flow, ResponseReader};
use crate::transport::coding::{BodyDecoder, CodingError};
use crate::transport::control::{snippet, SNIPPET_BYTES};
use crate::transport::error::ReadBodyError;
use crate::transport::{Conn, HttpClient, Incoming};

/// Whether the answer is an event stream: by its `Content-Type`, else by what the body asked.
pub(super) fn is_event_stream(headers: &HeaderMap, body: &BodyTemplate) -> bool {
    let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    if content_type.contains("event-stream") {
        true
    } else if content_type.contains("json") {
        false
    } else {
        body.streams()
    }
}

/// A failure of reading a whole body, for the record.
#[derive(Debug)]
pub(super) struct Failed {
    kind: ErrorKind,
    cause: Option<FailureCause>,
    message: String,
}

impl Failed {
    fn new(kind: ErrorKind, message: String) -> Self {
        Failed { kind, cause: None, message }
    }
}

impl From<CodingError> for Failed {
    /// An undecodable content coding (SB306): a protocol failure with its code's tag.
    fn from(e: CodingError) -> Self {
        let cause = FailureCause::ContentCoding;
        Failed { kind: ErrorKind::Protocol, cause: Some(cause), message: cause.tagged(&e.to_string()) }
    }
}

/// Fails `record` for an undecodable content coding (SB306).
pub(super) fn coding_failed(record: &mut RequestRecord, e: CodingError) {
    let Failed { kind, cause, message } = e.into();
    record.fail_with(kind, cause, message);
}

/// A whole body read: the bytes kept, whether they are all of it, when the last ones arrived.
type WholeBody = (Vec<u8>, bool, Option<Instant>);

/// The body of one response, and what reading it needs.
pub(super) struct BodyRead<'a> {
    /// The client whose pool gets the connection back when the body ends cleanly.
    pub client: &'a HttpClient,
    pub conn: Conn,
    pub incoming: Incoming,
    pub coding: Option<BodyDecoder>,
    pub timer: Timer,
    pub clock: &'a RunClock,
    /// A prefill slot (`--max-prefill-concurrency`): released at the first event carrying
    /// generated content, else when the read ends (dropped with it).
    pub prefill_slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl BodyRead<'_> {
    /// An error status: the request fails with the status and the start of its body.
    pub(super) async fn error_status(mut self, status: StatusCode, record: &mut RequestRecord) {
        let read = self.whole(SNIPPET_BYTES + 4, None).await;
        record.done_us = Some(self.clock.now_us());
        let text = match read {
            Ok((b, complete, _)) => {
                if complete {
                    self.body_ended(record);
                    self.client.release(self.conn);
                }
                // An mTLS gateway's "no client certificate" page, a proxy's 407 (SB310, SB312).
                if let Some(f) = self.client.gateway_failure(status.as_u16(), &b) {
                    let cause = f.cause();
                    record.fail_with(ErrorKind::HttpStatus, Some(cause), cause.tagged(&f.message()));
                    return;
                }
                snippet(&b)
            }
            Err(e) => format!("(body unreadable: {})", e.message),
        };
        let reason = status.canonical_reason().unwrap_or("");
        let cause = crate::api::server_text_cause(&text);
        record.fail_with(ErrorKind::HttpStatus, cause, format!("HTTP {} {reason}: {text}", status.as_u16()));
    }

    /// A body labelled JSON to a request that asked for a stream: read as the event stream it
    /// is when its first bytes are SSE lines (`data:`, `event:`, `id:`, `retry:`, `:`) — vLLM's
    /// client reads the lines whatever the label, and a gateway may mislabel them — else as the
    /// non-streamed answer it says it is.
    pub(super) async fn sniffed(
        mut self,
        reader: ResponseReader,
        record: &mut RequestRecord,
        spec: &RequestSpec,
        opts: &ExecOptions,
    ) {
        match self.first_frame().await {
            Ok(Some(first)) if looks_like_events(&first.0) => {
                self.stream_from(Some(first), reader, record, spec, opts).await;
            }
            Ok(None) => {
                record.done_us = Some(self.clock.offset_us(self.conn.last_read_at()));
                self.body_ended(record);
                self.client.release(self.conn);
                fail_before_any_event(record);
            }
            Ok(first) => self.answer_from(first, reader, record, opts).await,
            Err(Failed { kind, cause, message }) => {
                record.done_us = Some(self.clock.now_us());
                record.fail_with(kind, cause, message);
            }
        }
    }

    /// The first piece of the body, owned (`None`: the body is empty).
    /// Blank lines before the first byte that tells (a stream's leading newline) are kept with
    /// it, up to [`SNIFF_BYTES`], with the time of the read that completed them.
    async fn first_frame(&mut self) -> Result<Option<(Vec<u8>, Instant)>, Failed> {
        let mut bytes: Vec<u8> = Vec::new();
        let mut last = None;
        loop {
            match self.conn.frame(&mut self.incoming, self.timer.get()).await {
                Err(ReadBodyError::Deadline) if self.timer.rearm() => continue,
                Err(e) => return Err(read_failed(&self.timer, e)),
                // Blanks alone before the end: no event came, as for an empty body.
                Ok(None) if non_blank(&bytes).is_empty() => return Ok(None),
                Ok(None) => return Ok(last.map(|at| (bytes, at))),
                Ok(Some((d, at))) => {
                    self.timer.progress_at(at);
                    bytes.extend_from_slice(d);
                    last = Some(at);
                    if bytes.len() >= SNIFF_BYTES || decided(&bytes) {
                        return Ok(Some((bytes, at)));
                    }
                }
            }
        }
    }

    /// A non-streaming answer: one body, one event at the time its last bytes were read.
    pub(super) async fn answer(self, reader: ResponseReader, record: &mut RequestRecord, opts: &ExecOptions) {
        self.answer_from(None, reader, record, opts).await;
    }

    /// [`Self::answer`] whose body starts with `first`, already read.
    async fn answer_from(
        mut self,
        first: Option<(Vec<u8>, Instant)>,
        mut reader: ResponseReader,
        record: &mut RequestRecord,
        opts: &ExecOptions,
    ) {
        let read = self.whole(opts.max_body_bytes, first).await;
        let mut t = self.clock.now_us();
        match read {
            Ok((b, true, at)) => {
                // The end of a non-streaming response is when its last bytes were read.
                if let Some(at) = at {
                    t = self.clock.offset_us(at);
                }
                self.body_ended(record);
                self.client.release(self.conn);
                reader.on_body(record, &b, t);
            }
            Ok((_, false, _)) => {
                record.done_us = Some(t);
                record.fail(
                    ErrorKind::EventTooLarge,
                    format!("response body larger than {} bytes (--max-response-bytes)", opts.max_body_bytes),
                );
            }
            Err(Failed { kind, cause, message }) => {
                record.done_us = Some(t);
                record.fail_with(kind, cause, message);
            }
        }
    }

    /// An event stream: frames are timed on arrival, framed into events, and read into the
    /// record; after the final event the rest is drained (bounded) so the connection can be
    /// reused.
    pub(super) async fn stream(
        self,
        reader: ResponseReader,
        record: &mut RequestRecord,
        spec: &RequestSpec,
        opts: &ExecOptions,
    ) {
        self.stream_from(None, reader, record, spec, opts).await;
    }

    /// [`Self::stream`] whose body starts with `first`, already read.
    async fn stream_from(
        mut self,
        mut first: Option<(Vec<u8>, Instant)>,
        mut reader: ResponseReader,
        record: &mut RequestRecord,
        spec: &RequestSpec,
        opts: &ExecOptions,
    ) {
        let clock = self.clock;
        let mut held: Vec<u8>;
        let mut framer = SseFramer::with_max_event_bytes(opts.max_event_bytes);
        let event_limit = opts.stream_event_limit(spec.expected_output_tokens);
        let mut finished = false; // the record is final ([DONE] or failure); only draining
        loop {
            let next = match first.take() {
                Some((bytes, at)) => {
                    held = bytes;
                    Ok(Some((held.as_slice(), at)))
                }
                None => self.conn.frame(&mut self.incoming, self.timer.get()).await,
            };
            match next {
                Err(ReadBodyError::Deadline) => {
                    if self.timer.rearm() {
                        continue;
                    }
                    if !finished {
                        record.done_us = Some(clock.now_us());
                        record.fail(self.timer.kind(), self.timer.message());
                        reader.flush(record);
                    }
                    return; // connection dropped
                }
                Err(e) => {
                    if finished {
                        // The stream had ended; the connection broke (a reset, a close without
                        // the chunked terminator) while its body was drained: that is where the
                        // body ended, not a hold (`last_byte_us` absent reads as "held open").
                        self.body_ended(record);
                    } else {
                        record.done_us = Some(clock.now_us());
                        record.fail(ErrorKind::Transport, format!("stream error: {e}"));
                        reader.flush(record);
                    }
                    return;
                }
                Ok(None) => {
                    // The body's end arrived with the connection's latest read.
                    let t = clock.offset_us(self.conn.last_read_at());
                    self.body_ended(record);
                    self.client.release(self.conn);
                    if !finished {
                        end_of_stream(self.coding.as_mut(), &mut framer, &mut reader, record, t);
                    }
                    return;
                }
                Ok(Some((data, at))) => {
                    if finished {
                        continue;
                    }
                    let t = clock.offset_us(at);
                    self.timer.progress_at(at);
                    match self.coding.as_mut() {
                        None => framer.push(data),
                        // Decoded events keep the arrival time of their compressed bytes.
                        Some(d) => match d.push(data) {
                            Ok(decoded) => framer.push(decoded),
                            Err(e) => {
                                record.done_us = Some(t);
                                coding_failed(record, e);
                                reader.flush(record);
                                return;
                            }
                        },
                    }
                    let flow = drain_events(&mut framer, &mut reader, record, t);
                    // One test of a `None` per frame when there is no prefill cap.
                    if self.prefill_slot.is_some() && record.first_token_us.is_some() {
                        self.prefill_slot = None;
                    }
                    match flow {
                        Flow::Continue if framer.events() > event_limit => {
                            record.done_us = Some(t);
                            let cause = FailureCause::RunawayStream;
                            let message = cause.tagged(&runaway_message(opts, spec, event_limit));
                            record.fail_with(ErrorKind::RunawayStream, Some(cause), message);
                            reader.flush(record);
                            return; // connection dropped
                        }
                        Flow::Continue => {}
                        Flow::Done => {
                            finished = true;
                            self.timer.cap(opts.drain_timeout);
                        }
                        Flow::Stop => {
                            reader.flush(record);
                            return;
                        }
                    }
                }
            }
        }
    }

    /// The body ended: its last byte arrived with the connection's latest read, or (a
    /// close-delimited body) with the server's close.
    fn body_ended(&self, record: &mut RequestRecord) {
        let (Some(p), Some(dispatched)) = (record.phases.as_mut(), record.dispatched_us) else { return };
        let last = self.clock.offset_us(self.conn.body_end_at());
        p.last_byte_us = Some(servebench_core::HttpPhases::span_us(dispatched, last));
    }

    /// Reads a non-streamed body — a JSON answer or an error status's body — (at most `max`
    /// bytes kept; `false` when it was larger), with the time its last bytes were read. Every
    /// read is progress for the stall timer, as in a stream, so `--stall-timeout` means "no
    /// byte for that long" here too.
    async fn whole(&mut self, max: usize, first: Option<(Vec<u8>, Instant)>) -> Result<WholeBody, Failed> {
        let (mut buf, mut last) = match first {
            Some((mut bytes, at)) => {
                if bytes.len() > max {
                    bytes.truncate(max);
                    return Ok((bytes, false, Some(at)));
                }
                (bytes, Some(at))
            }
            None => (Vec::new(), None),
        };
        loop {
            match self.conn.frame(&mut self.incoming, self.timer.get()).await {
                Err(ReadBodyError::Deadline) if self.timer.rearm() => continue,
                Err(e) => return Err(read_failed(&self.timer, e)),
                Ok(None) => {
                    if let Some(c) = self.coding.as_mut() {
                        let rest = c.finish()?;
                        let room = max.saturating_sub(buf.len());
                        buf.extend_from_slice(&rest[..rest.len().min(room)]);
                        if rest.len() > room {
                            return Ok((buf, false, last));
                        }
                    }
                    return Ok((buf, true, last));
                }
                Ok(Some((d, at))) => {
                    last = Some(at);
                    self.timer.progress_at(at);
                    let d = match self.coding.as_mut() {
                        None => d,
                        Some(c) => c.push(d)?,
                    };
                    let room = max.saturating_sub(buf.len());
                    buf.extend_from_slice(&d[..d.len().min(room)]);
                    if d.len() > room {
                        return Ok((buf, false, last));
                    }
                }
            }
        }
    }
}

/// A body read whole that could not go on: its deadline passed (and cannot be re-armed), or the
/// transport failed.
fn read_failed(timer: &Timer, e: ReadBodyError) -> Failed {
    match e {
        ReadBodyError::Deadline => {
            Failed::new(timer.kind(), format!("reading the response body: {}", timer.message()))
        }
        e => Failed::new(ErrorKind::Transport, e.to_string()),
    }
}

/// The stream's body ended cleanly at `t`: the decoder's and the framer's last bytes are read,
/// and a stream without a final event is complete only after a finish reason.
fn end_of_stream(
    coding: Option<&mut BodyDecoder>,
    framer: &mut SseFramer,
    reader: &mut ResponseReader,
    record: &mut RequestRecord,
    t: u64,
) {
    if let Some(d) = coding {
        match d.finish() {
            Ok(rest) => framer.push(rest),
            Err(e) => {
                record.done_us = Some(t);
                coding_failed(record, e);
                reader.flush(record);
                return;
            }
        }
    }
    framer.finish();
    match drain_events(framer, reader, record, t) {
        // Bytes arrived, and not one event: the body is not SSE (not an "incomplete" stream).
        Flow::Continue if framer.not_sse() => {
            record.done_us = Some(t);
            record.fail(ErrorKind::Protocol, not_sse_message(framer.head()));
            reader.flush(record);
        }
        Flow::Continue if !reader.done_seen() => reader.end_of_body(record, t),
        Flow::Stop => reader.flush(record),
        _ => {}
    }
}

/// The failure of a `text/event-stream` body without one event: what it began with, escaped.
fn not_sse_message(head: &[u8]) -> String {
    let text: String = String::from_utf8_lossy(head).escape_debug().collect();
    let more = if head.len() >= crate::sse::HEAD_BYTES { "…" } else { "" };
    format!("the text/event-stream body is not server-sent events (no `data:` event in it); it began with \"{text}{more}\"")
}

/// The error message of a stream cut as runaway after `limit` events.
fn runaway_message(opts: &ExecOptions, spec: &RequestSpec, limit: u64) -> String {
    format!(
        "the stream went on past {limit} events ({} x max_tokens {} + {RUNAWAY_SLACK_EVENTS}) \
         without ending; fix: check the server's stop handling, or raise --runaway-stream-factor (0 disables)",
        opts.runaway_factor, spec.expected_output_tokens
    )
}

/// Dispatches every complete event in the framer at time `t`.
fn drain_events(
    framer: &mut SseFramer,
    reader: &mut ResponseReader,
    rec: &mut RequestRecord,
    t: u64,
) -> Flow {
    loop {
        match framer.next_event() {
            Ok(Some(ev)) => match reader.on_event(rec, ev, t) {
                Flow::Continue => {}
                other => return other,
            },
            Ok(None) => return Flow::Continue,
            Err(e) => {
                rec.done_us = Some(t);
                let kind = match e {
                    SseError::EventTooLarge { .. } => ErrorKind::EventTooLarge,
                    SseError::InvalidUtf8 => ErrorKind::Protocol,
                };
                rec.fail(kind, e.to_string());
                return Flow::Stop;
            }
        }
    }
}

/// Most blank bytes read before a JSON-labelled body's kind is decided.
const SNIFF_BYTES: usize = 4096;

/// The SSE line starts a JSON-labelled body is read as a stream for: a field or a comment.
const EVENT_LINE_STARTS: [&[u8]; 5] = [b"data:", b"event:", b"id:", b"retry:", b":"];

/// The body's bytes from the first non-blank one.
fn non_blank(bytes: &[u8]) -> &[u8] {
    let start = bytes.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(bytes.len());
    &bytes[start..]
}

/// Whether enough of the body has come to tell a stream from JSON or text: a line, as many
/// bytes as the longest line start, or a first byte no line start has.
fn decided(bytes: &[u8]) -> bool {
    let head = non_blank(bytes);
    let longest = EVENT_LINE_STARTS.iter().map(|s| s.len()).max().unwrap_or(0);
    head.contains(&b'\n')
        || head.len() >= longest
        || looks_like_events(head)
        || head.first().is_some_and(|b| !EVENT_LINE_STARTS.iter().any(|s| s[0] == *b))
}

/// Whether a body's first bytes are SSE lines rather than JSON or text: its first non-blank
/// bytes are a field name and its colon (`data:`, `event:`, `id:`, `retry:`) or a comment
/// (`:`). A text answer ("internal error: …", "rate limited") is not a stream.
fn looks_like_events(first: &[u8]) -> bool {
    let head = non_blank(first);
    EVENT_LINE_STARTS.iter().any(|start| head.starts_with(start))
}

#[cfg(test)]
mod sniff_tests {
    use super::*;

    /// Text answers starting with a field's first letter ("internal error: upstream failed",
    /// "rate limited", "data loss") were read as streams; only a field name with its colon, or
    /// a comment, is one.
    #[test]
    fn only_a_field_name_and_colon_or_a_comment_is_a_stream() {
        for body in ["data: {}", "\n\nevent: x", "id: 1", "retry: 5", ": ping", "  data:{}"] {
            assert!(looks_like_events(body.as_bytes()), "{body:?}");
        }
        for body in
            ["internal error: upstream failed", "rate limited", "data loss", "{\"id\":1}", "[1]", "   "]
        {
            assert!(!looks_like_events(body.as_bytes()), "{body:?}");
        }
        // A first read of "da" cannot tell yet; "{" or "x" can; a line can.
        assert!(!decided(b"  da"));
        assert!(decided(b"{") && decided(b"x") && decided(b"data:") && decided(b"ev\n"));
    }
}

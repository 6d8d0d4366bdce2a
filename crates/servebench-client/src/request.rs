//! Executing one generation request: send, timestamp, frame, parse, record.
//!
//! The runner calls [`execute`] after the concurrency gate with a record pre-filled by the
//! schedule. Every outcome — success or any failure — comes back as the record; nothing here
//! returns an error or panics on server input.
//!
//! Timing: `dispatched_us` is taken right before the request is handed to the connection,
//! `headers_us` when the response head arrives, and for every body frame `Instant::now()` is
//! read as soon as the frame is returned, before any parsing; each event completed by that
//! frame gets that time.

use std::pin::Pin;
use std::time::{Duration, Instant};

use http::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use http::Method;
use servebench_core::{ErrorKind, FailureCause, Outcome, RequestRecord, RequestSpec, Result, RunClock};
use tokio::time::Sleep;

use crate::backend::{BackendKind, TargetConfig};
use crate::body::BodyTemplate;
use crate::headers::build_headers;
use crate::sse::{SseError, SseFramer, DEFAULT_MAX_EVENT_BYTES};
use crate::stream::{Flow, ResponseReader};
use crate::transport::coding::{BodyDecoder, CodingError};
use crate::transport::control::{snippet, SNIPPET_BYTES};
use crate::transport::error::ReadBodyError;
use crate::transport::{Conn, HttpClient, Incoming, SendFailKind};

const X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Where and how generation requests are sent; built once per run.
#[derive(Debug, Clone)]
pub struct RequestTarget {
    pub backend: BackendKind,
    path: String,
    headers: HeaderMap,
    body: BodyTemplate,
}

impl RequestTarget {
    /// Resolves the endpoint path, header template and body template.
    pub fn new(client: &HttpClient, cfg: &TargetConfig) -> Result<Self> {
        let endpoint = cfg.endpoint.as_deref().unwrap_or(cfg.backend.default_endpoint());
        Ok(RequestTarget {
            backend: cfg.backend,
            path: client.path_for(endpoint)?,
            headers: build_headers(cfg)?,
            body: BodyTemplate::new(cfg.backend, cfg)?,
        })
    }

    /// The request-target path (`/v1/completions`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The body template (to build bodies outside [`execute`], e.g. for inspection).
    pub fn body_template(&self) -> &BodyTemplate {
        &self.body
    }

    /// The header template (secrets are marked sensitive and hidden from `Debug`).
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
}

/// Per-run execution options.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// Keep the generated text in the record (`--save-detailed`, retokenizing).
    pub keep_text: bool,
    /// Bound on the whole request, from the start of [`execute`].
    pub request_timeout: Option<Duration>,
    /// Bound on the time without any received byte (response head or body frame).
    pub stall_timeout: Option<Duration>,
    /// Bound on one SSE event (and on a non-streaming body).
    pub max_event_bytes: usize,
    /// After `[DONE]`, how long to wait for the end of the body before dropping the
    /// connection (it is reused only when the body ends).
    pub drain_timeout: Duration,
    /// Keep the generated text of requests whose response carried no output-token `usage`
    /// (so the runner can retokenize it), even when `keep_text` is off.
    pub keep_text_without_usage: bool,
    /// A stream is failed as runaway (`runaway_stream`, SB405) once it has more than
    /// `runaway_factor × max_tokens + 16` events; 0 disables the bound.
    pub runaway_factor: u32,
}

/// Events a stream may have beyond `runaway_factor × max_tokens` (role, usage, `[DONE]` and
/// keep-alive events of servers that send them as data).
pub const RUNAWAY_SLACK_EVENTS: u64 = 16;

/// Default of [`ExecOptions::runaway_factor`] (`--runaway-stream-factor`).
pub const DEFAULT_RUNAWAY_FACTOR: u32 = 4;

impl ExecOptions {
    /// Most events a stream asking for `max_tokens` may have (`u64::MAX`: no bound).
    pub fn stream_event_limit(&self, max_tokens: u32) -> u64 {
        if self.runaway_factor == 0 || max_tokens == 0 {
            return u64::MAX;
        }
        u64::from(self.runaway_factor) * u64::from(max_tokens) + RUNAWAY_SLACK_EVENTS
    }
}

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            keep_text: false,
            request_timeout: None,
            stall_timeout: None,
            max_event_bytes: DEFAULT_MAX_EVENT_BYTES,
            drain_timeout: Duration::from_secs(1),
            keep_text_without_usage: false,
            runaway_factor: DEFAULT_RUNAWAY_FACTOR,
        }
    }
}

/// One timer for both timeouts. Progress only notes the time; the sleep is moved forward when
/// it fires early ([`Timer::rearm`]), so a streamed event never touches the timer wheel.
struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    request_deadline: Option<tokio::time::Instant>,
    stall: Option<Duration>,
    last_progress: tokio::time::Instant,
    /// A drain cap is in force: the sleep is final.
    capped: bool,
}

impl Timer {
    fn new(opts: &ExecOptions) -> Self {
        let now = tokio::time::Instant::now();
        let request_deadline = opts.request_timeout.map(|d| now + d);
        let mut t = Timer {
            sleep: None,
            request_deadline,
            stall: opts.stall_timeout,
            last_progress: now,
            capped: false,
        };
        if let Some(when) = t.next(now) {
            t.sleep = Some(Box::pin(tokio::time::sleep_until(when)));
        }
        t
    }

    fn next(&self, now: tokio::time::Instant) -> Option<tokio::time::Instant> {
        match (self.request_deadline, self.stall.map(|s| now + s)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Progress was made at `at`: the stall deadline moves (lazily, see [`Timer::rearm`]).
    fn progress_at(&mut self, at: Instant) {
        self.last_progress = tokio::time::Instant::from_std(at);
    }

    /// Progress was made now.
    fn progress(&mut self) {
        self.last_progress = tokio::time::Instant::now();
    }

    /// The sleep fired: if progress since it was armed moved the real deadline later, re-arms
    /// it there and returns true (keep going); false means the deadline really passed.
    fn rearm(&mut self) -> bool {
        if self.capped {
            return false;
        }
        let now = tokio::time::Instant::now();
        match (self.next(self.last_progress), self.sleep.as_mut()) {
            (Some(when), Some(s)) if when > now => {
                s.as_mut().reset(when);
                true
            }
            _ => false,
        }
    }

    /// Limits the remaining wait to `d` (drain after `[DONE]`).
    fn cap(&mut self, d: Duration) {
        self.capped = true;
        let when = tokio::time::Instant::now() + d;
        match self.sleep.as_mut() {
            Some(s) if s.deadline() <= when => {}
            Some(s) => s.as_mut().reset(when),
            None => self.sleep = Some(Box::pin(tokio::time::sleep_until(when))),
        }
    }

    fn get(&mut self) -> Option<&mut Pin<Box<Sleep>>> {
        self.sleep.as_mut()
    }

    fn message(&self) -> String {
        match self.request_deadline {
            Some(d) if tokio::time::Instant::now() >= d => "request timeout".into(),
            _ => format!("stall timeout: no data for {:?}", self.stall.unwrap_or_default()),
        }
    }
}

/// Sends one request and measures it. `record` arrives pre-filled (index, request id,
/// intended time); every measured field is (re)written and `attempts` is incremented.
/// Never fails: failures are outcomes.
pub async fn execute(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    record: RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
) -> RequestRecord {
    execute_until(client, target, spec, record, clock, opts, std::future::pending()).await
}

/// [`execute`], stopped early when `cancel` completes (interrupt, duration bound): the
/// request is abandoned (its connection closed) and the record comes back `Cancelled` with
/// the timings measured so far (`done_us` = when it was cancelled).
pub async fn execute_until(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    record: RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    cancel: impl std::future::Future<Output = ()>,
) -> RequestRecord {
    run_until(client, target, spec, None, record, clock, opts, cancel).await
}

/// A request body built outside the template's per-request slots (multi-turn history), with
/// extra per-request headers (`X-Session-ID`).
#[derive(Debug, Clone)]
pub struct PreparedBody {
    pub body: bytes::Bytes,
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// [`execute_until`] sending `prepared` instead of a body built from `spec` (whose lengths
/// still fill the record).
#[allow(clippy::too_many_arguments)]
pub async fn execute_prepared(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    prepared: &PreparedBody,
    record: RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    cancel: impl std::future::Future<Output = ()>,
) -> RequestRecord {
    run_until(client, target, spec, Some(prepared), record, clock, opts, cancel).await
}

/// Runs one request until it ends or `cancel` completes; a cancelled record keeps the timings
/// measured so far and ends `Cancelled` at the time of cancellation.
#[allow(clippy::too_many_arguments)]
async fn run_until(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    prepared: Option<&PreparedBody>,
    mut record: RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    cancel: impl std::future::Future<Output = ()>,
) -> RequestRecord {
    let cancelled = {
        let run = run(client, target, spec, &mut record, clock, opts, prepared);
        tokio::select! {
            biased;
            _ = run => false,
            _ = cancel => true,
        }
    };
    if cancelled {
        record.outcome = Outcome::Cancelled;
        record.error = None;
        record.done_us = Some(clock.now_us());
    }
    record
}

async fn run(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    record: &mut RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    prepared: Option<&PreparedBody>,
) {
    record.attempts += 1;
    record.audio_seconds = spec.audio.as_ref().map(|a| a.seconds());
    record.outcome = Outcome::Cancelled;
    record.error = None;
    let built = match prepared {
        Some(p) => Ok(p.body.clone()),
        None => target.body.build_spec(spec),
    };
    let body = match built {
        Ok(b) => b,
        Err(e) => {
            record.fail(ErrorKind::Protocol, e.to_string());
            return;
        }
    };
    let mut headers = target.headers.clone();
    match HeaderValue::from_str(&record.request_id) {
        Ok(v) => {
            headers.insert(X_REQUEST_ID, v);
            for (k, v) in prepared.map(|p| p.headers.as_slice()).unwrap_or(&[]) {
                headers.insert(k.clone(), v.clone());
            }
        }
        Err(_) => {
            record.fail(ErrorKind::Protocol, "request id is not a valid header value");
            return;
        }
    }
    let req = match client.request(Method::POST, &target.path, headers, body) {
        Ok(r) => r,
        Err(e) => {
            record.fail(ErrorKind::Protocol, e);
            return;
        }
    };
    let mut timer = Timer::new(opts);
    // Boxed: the send state (pool checkout, connect, request head) is done once the head
    // arrives; inline, its size would stay reserved for the whole stream.
    let followed = match Box::pin(client.send_following(req, true, timer.get())).await {
        Ok(s) => s,
        Err(f) => {
            record.reconnects = f.reconnects;
            if f.resent {
                record.resent = true;
                record.attempts += 1;
            }
            record.dispatched_us = f.dispatched.map(|t| clock.offset_us(t));
            let kind = match (f.kind, f.cause) {
                (SendFailKind::Connect, _) => ErrorKind::Connect,
                // Not HTTP/1.1 at all (SB308): the server's protocol, not the network.
                (SendFailKind::Transport, Some(FailureCause::NotHttp1)) => ErrorKind::Protocol,
                // A redirect not followed (SB307): the answer was a 3xx status.
                (SendFailKind::Transport, Some(FailureCause::Redirect)) => ErrorKind::HttpStatus,
                (SendFailKind::Transport, _) => ErrorKind::Transport,
                (SendFailKind::Timeout, _) => ErrorKind::Timeout,
            };
            let msg = if f.kind == SendFailKind::Timeout { timer.message() } else { f.record_message() };
            record.done_us = Some(clock.now_us());
            record.fail_with(kind, f.cause, msg);
            return;
        }
    };
    timer.progress();
    // A redirect to another origin: that client's pool owns the connection.
    let client = followed.other.as_ref().unwrap_or(client);
    let sent = followed.sent;
    record.reconnects = sent.reconnects;
    if sent.resent {
        // Written twice; the first write was never processed (see `HttpClient::send`).
        record.resent = true;
        record.attempts += 1;
    }
    // The first request of a redirect chain; for a resent request, its second send.
    record.dispatched_us = Some(clock.offset_us(followed.first_dispatched));
    record.headers_us = Some(clock.offset_us(sent.headers_at));
    let mut conn = sent.conn;
    let (parts, mut incoming) = sent.response.into_parts();
    record.http_status = Some(parts.status.as_u16());
    if let Some(id) = parts.headers.get(&X_REQUEST_ID).and_then(|v| v.to_str().ok()) {
        record.server_request_id = Some(id.to_owned());
    }

    // A compressed answer (the request asked for identity): decoded as it arrives.
    let coding = BodyDecoder::for_headers(&parts.headers);
    if !parts.status.is_success() {
        let mut coding = coding.ok().flatten();
        let read =
            read_whole_body(&mut conn, &mut incoming, SNIPPET_BYTES + 4, &mut timer, coding.as_mut()).await;
        record.done_us = Some(clock.now_us());
        let text = match read {
            Ok((b, complete, _)) => {
                if complete {
                    client.release(conn);
                }
                snippet(&b)
            }
            Err(e) => format!("(body unreadable: {})", e.message),
        };
        let reason = parts.status.canonical_reason().unwrap_or("");
        record.fail(ErrorKind::HttpStatus, format!("HTTP {} {reason}: {text}", parts.status.as_u16()));
        return;
    }

    let mut coding = match coding {
        Ok(c) => c,
        Err(e) => {
            record.done_us = Some(clock.now_us());
            coding_failed(record, e);
            return; // connection dropped: its body is not read
        }
    };
    let content_type = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let sse = if content_type.contains("event-stream") {
        true
    } else if content_type.contains("json") {
        false
    } else {
        target.body.streams()
    };
    let mut state = ResponseReader::for_request(target.backend, opts.keep_text, opts.keep_text_without_usage);
    if !sse {
        let read =
            read_whole_body(&mut conn, &mut incoming, opts.max_event_bytes, &mut timer, coding.as_mut())
                .await;
        let mut t = clock.now_us();
        match read {
            Ok((b, true, at)) => {
                // The end of a non-streaming response is when its last bytes were read.
                if let Some(at) = at {
                    t = clock.offset_us(at);
                }
                client.release(conn);
                state.on_body(record, &b, t);
            }
            Ok((_, false, _)) => {
                record.done_us = Some(t);
                record.fail(
                    ErrorKind::EventTooLarge,
                    format!("response body larger than {} bytes", opts.max_event_bytes),
                );
            }
            Err(Failed { kind, cause, message }) => {
                record.done_us = Some(t);
                record.fail_with(kind, cause, message);
            }
        }
        return;
    }

    let mut framer = SseFramer::with_max_event_bytes(opts.max_event_bytes);
    let event_limit = opts.stream_event_limit(spec.expected_output_tokens);
    let mut finished = false; // the record is final ([DONE] or failure); only draining
    loop {
        let next = conn.frame(&mut incoming, timer.get()).await;
        match next {
            Err(ReadBodyError::Deadline) => {
                if timer.rearm() {
                    continue;
                }
                if !finished {
                    record.done_us = Some(clock.now_us());
                    record.fail(ErrorKind::Timeout, timer.message());
                    state.flush(record);
                }
                return; // connection dropped
            }
            Err(e) => {
                if !finished {
                    record.done_us = Some(clock.now_us());
                    record.fail(ErrorKind::Transport, format!("stream error: {e}"));
                    state.flush(record);
                }
                return;
            }
            Ok(None) => {
                let t = clock.now_us();
                client.release(conn);
                if !finished {
                    if let Some(d) = coding.as_mut() {
                        match d.finish() {
                            Ok(rest) => framer.push(rest),
                            Err(e) => {
                                record.done_us = Some(t);
                                coding_failed(record, e);
                                state.flush(record);
                                return;
                            }
                        }
                    }
                    framer.finish();
                    match drain_events(&mut framer, &mut state, record, t) {
                        Flow::Continue if !state.done_seen() => state.end_of_body(record, t),
                        Flow::Stop => state.flush(record),
                        _ => {}
                    }
                }
                return;
            }
            Ok(Some((data, at))) => {
                if finished {
                    continue;
                }
                // `at`: when the socket read that brought these bytes returned.
                let t = clock.offset_us(at);
                timer.progress_at(at);
                match coding.as_mut() {
                    None => framer.push(data),
                    // Decoded events keep the arrival time of their compressed bytes.
                    Some(d) => match d.push(data) {
                        Ok(decoded) => framer.push(decoded),
                        Err(e) => {
                            record.done_us = Some(t);
                            coding_failed(record, e);
                            state.flush(record);
                            return;
                        }
                    },
                }
                match drain_events(&mut framer, &mut state, record, t) {
                    Flow::Continue if framer.events() > event_limit => {
                        record.done_us = Some(t);
                        let cause = FailureCause::RunawayStream;
                        let message = cause.tagged(&runaway_message(opts, spec, event_limit));
                        record.fail_with(ErrorKind::RunawayStream, Some(cause), message);
                        state.flush(record);
                        return; // connection dropped
                    }
                    Flow::Continue => {}
                    Flow::Done => {
                        finished = true;
                        timer.cap(opts.drain_timeout);
                    }
                    Flow::Stop => {
                        state.flush(record);
                        return;
                    }
                }
            }
        }
    }
}

/// A failure of reading a whole body, for the record.
#[derive(Debug)]
struct Failed {
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
        Failed { kind: ErrorKind::Protocol, cause: Some(cause), message: cause.tagged(&e.0) }
    }
}

/// Fails `record` for an undecodable content coding (SB306).
fn coding_failed(record: &mut RequestRecord, e: CodingError) {
    let Failed { kind, cause, message } = e.into();
    record.fail_with(kind, cause, message);
}

/// Reads a non-streamed body — a JSON answer or an error status's body — (at most `max` bytes
/// kept; `false` when it was larger), with the time its last bytes were read. Every read is progress for the stall timer, as in a stream,
/// so `--stall-timeout` means "no byte for that long" here too.
async fn read_whole_body(
    conn: &mut Conn,
    body: &mut Incoming,
    max: usize,
    timer: &mut Timer,
    mut coding: Option<&mut BodyDecoder>,
) -> std::result::Result<(Vec<u8>, bool, Option<Instant>), Failed> {
    let mut buf = Vec::new();
    let mut last = None;
    loop {
        match conn.frame(body, timer.get()).await {
            Err(ReadBodyError::Deadline) => {
                if timer.rearm() {
                    continue;
                }
                let message = format!("reading the response body: {}", timer.message());
                return Err(Failed::new(ErrorKind::Timeout, message));
            }
            Err(e) => return Err(Failed::new(ErrorKind::Transport, e.to_string())),
            Ok(None) => {
                if let Some(c) = coding.as_mut() {
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
                timer.progress_at(at);
                let d = match coding.as_mut() {
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

/// The error message of a stream cut as runaway after `limit` events.
fn runaway_message(opts: &ExecOptions, spec: &RequestSpec, limit: u64) -> String {
    format!(
        "the stream went on past {limit} events ({} x max_tokens {} + {RUNAWAY_SLACK_EVENTS}) \
         without ending; fix: check the server's stop handling, or raise --runaway-stream-factor (0 disables)",
        opts.runaway_factor, spec.expected_output_tokens
    )
}

/// Dispatches every complete event in the framer at time `t`.
fn drain_events(framer: &mut SseFramer, state: &mut ResponseReader, rec: &mut RequestRecord, t: u64) -> Flow {
    loop {
        match framer.next_event() {
            Ok(Some(ev)) => match state.on_event(rec, ev, t) {
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

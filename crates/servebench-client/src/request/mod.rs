//! Executing one generation request: send, timestamp, frame, parse, record.
//!
//! The runner calls [`execute`] after the concurrency gate with a record pre-filled by the
//! schedule. Every outcome — success or any failure — comes back as the record; nothing here
//! returns an error or panics on server input.
//!
//! Phases: `send` (body, headers, write, response head), then `read` (an error status's
//! body, a whole JSON answer, or an event stream), each recording what it measured.
//!
//! Timing: `dispatched_us` is the instant the write of the request started (after the
//! connection was checked out or opened); a request has it once its bytes are written, so one
//! cancelled while waiting for its response head (a server that sends the head only when it
//! starts the request, as llama.cpp does) is sent, not "never sent". `headers_us` when the
//! response head arrives, and for every body frame `Instant::now()` is
//! read as soon as the frame is returned, before any parsing; each event completed by that
//! frame gets that time.

mod read;
mod send;
mod timer;

use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use servebench_core::{CancelReason, ErrorKind, Outcome, RequestRecord, RequestSpec, Result, RunClock};
use tokio::sync::OwnedSemaphorePermit;

use crate::backend::{BackendKind, TargetConfig};
use crate::body::BodyTemplate;
use crate::headers::build_headers;
use crate::sse::DEFAULT_MAX_EVENT_BYTES;
use crate::stream::ResponseReader;
use crate::transport::coding::BodyDecoder;
use crate::transport::HttpClient;
use read::BodyRead;
use timer::Timer;

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
    /// Bound on one SSE event.
    pub max_event_bytes: usize,
    /// Bound on a non-streamed (whole) response body (`--max-response-bytes`): pooling
    /// answers carry vectors, megabytes for a large embedding batch or token-level pooling.
    pub max_body_bytes: usize,
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

/// Default of [`ExecOptions::max_body_bytes`] (`--max-response-bytes`): 256 MiB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 256 << 20;

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
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            drain_timeout: Duration::from_secs(1),
            keep_text_without_usage: false,
            runaway_factor: DEFAULT_RUNAWAY_FACTOR,
        }
    }
}

/// Sends one request and measures it. `record` arrives pre-filled (index, request id,
/// intended time); every measured field is (re)written and `attempts` is incremented.
/// Never fails: failures are outcomes.
///
/// The four entry points are plain functions returning `run_until`'s future, not `async fn`s
/// awaiting it: an async wrapper would hold its by-value arguments (a record, the controls,
/// the cancel future) beside the inner future's own copies, for the request's whole life.
pub fn execute<'a>(
    client: &'a HttpClient,
    target: &'a RequestTarget,
    spec: &'a RequestSpec,
    record: RequestRecord,
    clock: &'a RunClock,
    opts: &'a ExecOptions,
) -> impl std::future::Future<Output = RequestRecord> + 'a {
    execute_until(client, target, spec, record, clock, opts, std::future::pending())
}

/// [`execute`], stopped early when `cancel` completes (interrupt, duration bound): the
/// request is abandoned (its connection closed) and the record comes back `Cancelled` with
/// the timings measured so far (`done_us` = when it was cancelled).
pub fn execute_until<'a>(
    client: &'a HttpClient,
    target: &'a RequestTarget,
    spec: &'a RequestSpec,
    record: RequestRecord,
    clock: &'a RunClock,
    opts: &'a ExecOptions,
    cancel: impl std::future::Future<Output = ()> + 'a,
) -> impl std::future::Future<Output = RequestRecord> + 'a {
    run_until(client, target, spec, None, record, clock, opts, RequestControls::default(), cancel)
}

/// What the run's own load controls ask of one request; both off (the default) for a plain
/// request, which then runs exactly as without them.
#[derive(Debug, Default)]
pub struct RequestControls {
    /// A prefill slot (`--max-prefill-concurrency`), held until the first event carrying
    /// generated content arrives, or until the request ends without one (any outcome, a
    /// cancellation included): it is released when dropped.
    pub prefill_slot: Option<OwnedSemaphorePermit>,
    /// Cancel by design (`--request-cancellation-rate`) this long after the send starts (the
    /// request has passed every client-side gate): if the request has not ended by then, its
    /// connection is closed and it ends `Cancelled` with `cancelled_by = by_design`.
    pub cancel_after: Option<Duration>,
}

/// [`execute_until`] (or, with `prepared`, [`execute_prepared`]) under the run's load
/// controls.
#[allow(clippy::too_many_arguments)]
pub fn execute_controlled<'a>(
    client: &'a HttpClient,
    target: &'a RequestTarget,
    spec: &'a RequestSpec,
    prepared: Option<&'a PreparedBody>,
    record: RequestRecord,
    clock: &'a RunClock,
    opts: &'a ExecOptions,
    controls: RequestControls,
    cancel: impl std::future::Future<Output = ()> + 'a,
) -> impl std::future::Future<Output = RequestRecord> + 'a {
    run_until(client, target, spec, prepared, record, clock, opts, controls, cancel)
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
pub fn execute_prepared<'a>(
    client: &'a HttpClient,
    target: &'a RequestTarget,
    spec: &'a RequestSpec,
    prepared: &'a PreparedBody,
    record: RequestRecord,
    clock: &'a RunClock,
    opts: &'a ExecOptions,
    cancel: impl std::future::Future<Output = ()> + 'a,
) -> impl std::future::Future<Output = RequestRecord> + 'a {
    let controls = RequestControls::default();
    run_until(client, target, spec, Some(prepared), record, clock, opts, controls, cancel)
}

/// Runs one request until it ends or `cancel` (or the by-design delay) completes; a cancelled
/// record keeps the timings measured so far and ends `Cancelled` at the time of cancellation.
#[allow(clippy::too_many_arguments)]
async fn run_until(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    prepared: Option<&PreparedBody>,
    mut record: RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    controls: RequestControls,
    cancel: impl std::future::Future<Output = ()>,
) -> RequestRecord {
    let RequestControls { prefill_slot, cancel_after } = controls;
    // When the request was written (its dispatch instant), kept past a cancel of the send.
    let mut written = None;
    // `Some(reason)`: stopped before the end (`None` = the run's stop, named later).
    let stopped = {
        // Pinned in place and polled by reference: moved into `select!` it would be stored
        // twice in this future (the local and the macro's copy), about 3 KB more per request.
        let mut run = std::pin::pin!(run(
            client,
            target,
            spec,
            &mut record,
            clock,
            opts,
            prepared,
            prefill_slot,
            &mut written
        ));
        match cancel_after {
            None => tokio::select! {
                biased;
                _ = &mut run => None,
                _ = cancel => Some(None),
            },
            Some(after) => tokio::select! {
                biased;
                _ = &mut run => None,
                _ = cancel => Some(None),
                _ = tokio::time::sleep(after) => Some(Some(CancelReason::ByDesign)),
            },
        }
    };
    match stopped {
        // The delay ran out while a finished stream was drained: the request had ended.
        Some(Some(_)) if record.outcome != Outcome::Cancelled => {}
        Some(reason) => {
            record.outcome = Outcome::Cancelled;
            record.error = None;
            record.done_us = Some(clock.now_us());
            // Cancelled after the write, before the head: sent (in flight), not "never sent".
            if record.dispatched_us.is_none() {
                record.dispatched_us = written.map(|t| clock.offset_us(t));
            }
            if reason.is_some() {
                record.cancelled_by = reason;
            }
        }
        None => {}
    }
    redact_server_text(client.redactor(), &mut record);
    record
}

/// The one point where a request's server text (failure message from an error body, an error
/// event or the first bytes of a bad answer; generated text; ids and finish reasons) enters
/// the record: the run's secrets are replaced, so records, the result's `errors`, the console
/// and the reports never show a key the server echoed.
fn redact_server_text(r: &servebench_core::secret::Redactor, record: &mut RequestRecord) {
    if r.is_empty() {
        return;
    }
    if let Some(e) = record.error.as_mut() {
        r.redact_in_place(&mut e.message);
    }
    for text in [&mut record.generated_text, &mut record.server_request_id, &mut record.finish_reason] {
        if let Some(t) = text.as_mut() {
            r.redact_in_place(t);
        }
    }
}

/// One attempt: build and send the request, record the head, then read the body by its kind.
/// `prefill_slot` is released at the first generated content, else when the attempt ends.
#[allow(clippy::too_many_arguments)]
async fn run(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    record: &mut RequestRecord,
    clock: &RunClock,
    opts: &ExecOptions,
    prepared: Option<&PreparedBody>,
    prefill_slot: Option<OwnedSemaphorePermit>,
    written: &mut Option<std::time::Instant>,
) {
    record.attempts += 1;
    record.audio_seconds = spec.audio.as_ref().map(|a| a.seconds());
    record.outcome = Outcome::Cancelled;
    record.error = None;
    let Some(req) = send::build_request(client, target, spec, prepared, record) else { return };
    let mut timer = Timer::new(opts);
    let Some(followed) = send::send(client, req, &mut timer, record, clock, written).await else { return };
    timer.progress();
    // A redirect to another origin: that client's pool owns the connection.
    let client = followed.other.as_ref().unwrap_or(client);
    let (conn, parts, incoming) = send::record_head(followed.sent, followed.first_dispatched, record, clock);
    if send::answered_out_of_turn(record) {
        // The connection is dropped, not pooled.
        record.done_us = Some(clock.now_us());
        let message = "the response arrived before the request was written (its bytes were waiting on the \
                       connection): the server answered out of turn";
        record.fail(ErrorKind::Protocol, message);
        drop(conn);
        return;
    }
    // A compressed answer (the request asked for identity): decoded as it arrives.
    let coding = BodyDecoder::for_headers(&parts.headers);
    if !parts.status.is_success() {
        let body =
            BodyRead { client, conn, incoming, coding: coding.ok().flatten(), timer, clock, prefill_slot };
        body.error_status(parts.status, record).await;
        return;
    }
    let coding = match coding {
        Ok(c) => c,
        Err(e) => {
            record.done_us = Some(clock.now_us());
            read::coding_failed(record, e);
            return; // connection dropped: its body is not read
        }
    };
    let reader = ResponseReader::for_request(target.backend, opts.keep_text, opts.keep_text_without_usage);
    let body = BodyRead { client, conn, incoming, coding, timer, clock, prefill_slot };
    let event_stream = read::is_event_stream(&parts.headers, &target.body);
    if event_stream && target.backend.is_pooling() {
        // A pooling answer is one JSON body; an event stream means another kind of endpoint.
        record.done_us = Some(clock.now_us());
        let message = "a pooling request was answered with an event stream (text/event-stream): the endpoint is not a pooling endpoint; check --endpoint and --backend";
        record.fail(ErrorKind::Protocol, message);
    } else if event_stream {
        body.stream(reader, record, spec, opts).await;
    } else if target.body.streams() && body.coding.is_none() {
        // Labelled JSON, asked for a stream: the first bytes tell which it is.
        body.sniffed(reader, record, spec, opts).await;
    } else {
        body.answer(reader, record, opts).await;
    }
}

#[cfg(test)]
mod future_size_tests {
    use super::*;
    use crate::transport::ClientOptions;
    use std::mem::{size_of, size_of_val};
    use std::sync::Arc;

    /// A request's future lives as long as the request, one per request in flight (1,000 at
    /// 1,000 streams): it must hold the attempt's future once. Moved into `select!`, the
    /// attempt was stored twice, and the `async fn` wrappers kept their by-value arguments
    /// beside the inner future's copies: 8.7 KB instead of 5 KB in a release build.
    #[test]
    fn a_requests_future_holds_its_attempt_once() {
        let client =
            HttpClient::new(ClientOptions { base_url: "http://127.0.0.1:9".into(), ..Default::default() })
                .expect("client");
        let target = RequestTarget::new(&client, &TargetConfig { model: "m".into(), ..Default::default() })
            .expect("target");
        let spec = RequestSpec::new(0, servebench_core::Prompt::Text(Arc::from("hi")), 1, 1);
        let (clock, opts) = (RunClock::start(), ExecOptions::default());
        let mut record = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        let mut written = None;
        let attempt =
            size_of_val(&run(&client, &target, &spec, &mut record, &clock, &opts, None, None, &mut written));
        let controls = RequestControls::default();
        let whole = size_of_val(&execute_controlled(
            &client,
            &target,
            &spec,
            None,
            record.clone(),
            &clock,
            &opts,
            controls,
            std::future::pending(),
        ));
        let plain = size_of_val(&execute(&client, &target, &spec, record, &clock, &opts));
        // The attempt, one record, the stop futures and the select's state: never a second attempt.
        let bound = attempt + size_of::<RequestRecord>() + 1024;
        assert!(whole <= bound, "{whole} bytes for an attempt of {attempt} (bound {bound})");
        assert!(plain <= bound, "{plain} bytes for an attempt of {attempt} (bound {bound})");
    }
}

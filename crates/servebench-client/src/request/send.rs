//! The send phase of a request: its body and headers, the write (following redirects, a
//! resend on a fresh connection), and the response head — each failure recorded.

use std::time::Instant;

use http::header::HeaderValue;
use http::response::Parts;
use http::{Method, Request};
use servebench_core::{ErrorKind, FailureCause, RequestRecord, RequestSpec, RunClock};

use super::timer::Timer;
use super::{PreparedBody, RequestTarget, X_REQUEST_ID};
use crate::transport::redirect::Followed;
use crate::transport::{Conn, HttpClient, Incoming, ReqBody, SendFailKind, Sent, SentPhases};
use servebench_core::HttpPhases;

/// The request of `spec` (or of `prepared`), with its `x-request-id`; `None` when it cannot
/// be built (the record says why).
pub(super) fn build_request(
    client: &HttpClient,
    target: &RequestTarget,
    spec: &RequestSpec,
    prepared: Option<&PreparedBody>,
    record: &mut RequestRecord,
) -> Option<Request<ReqBody>> {
    let built = match prepared {
        Some(p) => Ok(p.body.clone()),
        None => target.body.build_spec(spec),
    };
    let body = match built {
        Ok(b) => b,
        Err(e) => {
            record.fail(ErrorKind::Protocol, e.to_string());
            return None;
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
            return None;
        }
    }
    match client.request(Method::POST, &target.path, headers, body) {
        Ok(r) => Some(r),
        Err(e) => {
            record.fail(ErrorKind::Protocol, e.to_string());
            None
        }
    }
}

/// Writes `req` and waits for the response head (following redirects); `None` when that
/// failed (the record says how, with the send's timings). `written` is set to the dispatch
/// instant as soon as the request is written, before its head arrives.
pub(super) async fn send(
    client: &HttpClient,
    req: Request<ReqBody>,
    timer: &mut Timer,
    record: &mut RequestRecord,
    clock: &RunClock,
    written: &mut Option<Instant>,
) -> Option<Followed> {
    // Boxed: the send state (pool checkout, connect, request head) is done once the head
    // arrives; inline, its size would stay reserved for the whole stream.
    let f = match Box::pin(client.send_following(req, true, timer.get(), Some(written))).await {
        Ok(s) => return Some(s),
        Err(f) => f,
    };
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
        (SendFailKind::Timeout, _) => timer.kind(),
    };
    let msg = if f.kind == SendFailKind::Timeout { timer.message() } else { f.record_message() };
    record.done_us = Some(clock.now_us());
    record.fail_with(kind, f.cause, msg);
    None
}

/// Records what the response head says (timings, status, the server's request id) and hands
/// back the connection, the head and the body.
pub(super) fn record_head(
    sent: Sent,
    first_dispatched: Instant,
    record: &mut RequestRecord,
    clock: &RunClock,
) -> (Conn, Parts, Incoming) {
    record.reconnects = sent.reconnects;
    if sent.resent {
        // Written twice; the first write was never processed (see `HttpClient::send`).
        record.resent = true;
        record.attempts += 1;
    }
    // The first request of a redirect chain; for a resent request, its second send.
    let dispatched = clock.offset_us(first_dispatched);
    record.dispatched_us = Some(dispatched);
    record.headers_us = Some(clock.offset_us(sent.headers_at));
    record.phases = Some(phases(&sent.phases, dispatched, clock));
    let (parts, incoming) = sent.response.into_parts();
    record.http_status = Some(parts.status.as_u16());
    if let Some(id) = parts.headers.get(&X_REQUEST_ID).and_then(|v| v.to_str().ok()) {
        record.server_request_id = Some(id.to_owned());
    }
    (sent.conn, parts, incoming)
}

/// Whether the answer's head was received before the request was written (kernel receive
/// times): bytes that were already waiting on the connection — a server answering out of turn,
/// as one that answers every connection as soon as it accepts it — not this request's answer.
/// Its timings would be negative (a first token 19 µs before the dispatch, a TTFT written as 0).
pub(super) fn answered_out_of_turn(record: &RequestRecord) -> bool {
    matches!((record.headers_us, record.dispatched_us), (Some(head), Some(sent)) if head < sent)
}

/// The record's phases of the answered send: set-up durations of the connection it opened,
/// the write's end and the first response byte as offsets from `dispatched` (µs); the last
/// byte is added when the body ends.
fn phases(p: &SentPhases, dispatched: u64, clock: &RunClock) -> HttpPhases {
    let setup = p.setup.unwrap_or_default();
    let after = |t| Some(HttpPhases::span_us(dispatched, clock.offset_us(t)));
    HttpPhases {
        reused: p.reused,
        dns_us: setup.dns_us,
        connect_us: setup.connect_us,
        tls_us: setup.tls_us,
        written_us: after(p.written),
        first_byte_us: after(p.first_byte),
        last_byte_us: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the rule for an answer received before its request was written (the bytes of a
    /// server that answers each connection at accept, read on a fresh connection): out of
    /// turn. An answer in the same microsecond as the write, or later, is this request's.
    #[test]
    fn an_answer_received_before_the_write_is_out_of_turn() {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        (r.dispatched_us, r.headers_us) = (Some(521_086), Some(521_067));
        assert!(answered_out_of_turn(&r));
        for head in [521_086, 521_300] {
            r.headers_us = Some(head);
            assert!(!answered_out_of_turn(&r));
        }
        r.headers_us = None;
        assert!(!answered_out_of_turn(&r));
    }
}

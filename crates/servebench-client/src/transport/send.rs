//! Sending one request: the request built for the origin (or a forward proxy), then written on
//! a pooled or fresh connection until its response head arrives, sent again only when the
//! server cannot have processed it.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use http::header::{HeaderMap, ACCEPT_ENCODING, HOST};
use http::{Method, Request, Response};
use servebench_core::FailureCause;

use super::error::{ReadHeadError, RequestBuildError, WriteFail};
use super::{coding, Conn, ConnSetup, HttpClient, Incoming, ReqBody, SendFailKind, SendFailure};

/// A response head with the connection that carries its body.
#[derive(Debug)]
pub(crate) struct Sent {
    pub response: Response<Incoming>,
    pub conn: Conn,
    /// When the write of the request that was answered started.
    pub dispatched: Instant,
    pub headers_at: Instant,
    /// The connection and the times of the answered send (docs/metrics.md, "HTTP phases").
    pub phases: SentPhases,
    pub reconnects: u32,
    /// The request was first written on a reused connection that closed before one byte of a
    /// response arrived, then sent once more on a fresh connection.
    pub resent: bool,
}

/// What the answered send of a request measured besides its dispatch and head: whether its
/// connection came from the pool, how long opening it took, and two instants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentPhases {
    /// Taken from the pool (opened earlier) rather than opened by this request.
    pub reused: bool,
    /// The set-up of the connection this request opened (`None` when reused).
    pub setup: Option<ConnSetup>,
    /// When the write of the last request byte returned (handed to the kernel).
    pub written: Instant,
    /// When the read that brought the first response byte returned.
    pub first_byte: Instant,
}

impl HttpClient {
    /// Builds a request for `path` with `headers` (Host is added unless given; through an `http` proxy the
    /// target is absolute-form and `Proxy-Authorization` is added).
    pub(crate) fn request(
        &self,
        method: Method,
        path: &str,
        mut headers: HeaderMap,
        body: bytes::Bytes,
    ) -> std::result::Result<Request<ReqBody>, RequestBuildError> {
        // A `--header Host=…` is sent as given (virtual-host routing through an ingress reached
        // by address); otherwise the origin's authority.
        if !headers.contains_key(HOST) {
            headers.insert(HOST, self.inner.origin.host_header.clone());
        }
        if !headers.contains_key(ACCEPT_ENCODING) {
            headers.insert(ACCEPT_ENCODING, coding::ACCEPT_IDENTITY);
        }
        let absolute;
        let target = match &self.inner.forward_prefix {
            Some(prefix) => {
                if let Some(auth) = self.inner.proxy.as_ref().and_then(|p| p.auth.clone()) {
                    headers.insert(http::header::PROXY_AUTHORIZATION, auth);
                }
                absolute = format!("{prefix}{path}");
                absolute.as_str()
            }
            None => path,
        };
        let mut req = Request::builder().method(method).uri(target).body(body).map_err(RequestBuildError)?;
        *req.headers_mut() = headers;
        Ok(req)
    }

    /// Sends `req` and waits for the response head.
    ///
    /// Sent again, on a fresh connection, only when the server cannot have processed it: a
    /// pooled connection failed before the first byte was written (stale), or — once — the
    /// request was written on a reused connection that then closed (EOF or reset) before one
    /// byte of a response arrived. Never after a response byte, never after a fresh connection.
    ///
    /// `written`, when given, is set to the start of the write (the answered send's
    /// `dispatched`) as soon as the whole request is written: a caller that stops waiting for
    /// the head (a cancel drops this future) still knows the request was sent, and when.
    pub(crate) async fn send(
        &self,
        req: &Request<ReqBody>,
        mut deadline: Option<&mut Pin<Box<tokio::time::Sleep>>>,
        mut written_mark: Option<&mut Option<Instant>>,
    ) -> std::result::Result<Sent, SendFailure> {
        let mut reconnects = 0u32;
        let mut dispatched = None;
        let mut resent = false;
        // Each round consumes a pooled connection or ends; the bound is a safety net.
        for _ in 0..64 {
            let fail = |kind, message: String, dispatched, reconnects| SendFailure {
                kind,
                message,
                cause: None,
                dispatched,
                reconnects,
                resent,
            };
            let pooled = if resent { None } else { self.take_idle(&mut reconnects).await };
            let (mut conn, reused) = match pooled {
                Some(c) => (c, true),
                None => {
                    // Boxed: connect + TLS + handshake state would otherwise be inlined into
                    // every request future, also when a pooled connection is used.
                    let connect = Box::pin(self.connect());
                    let r = match deadline.as_mut() {
                        Some(d) => tokio::select! {
                            r = connect => r,
                            _ = d.as_mut() => {
                                return Err(fail(SendFailKind::Timeout, "request timed out while connecting".into(), dispatched, reconnects));
                            }
                        },
                        None => connect.await,
                    };
                    match r {
                        Ok(c) => (c, false),
                        Err(e) => {
                            let cause = e.unreachable().map(FailureCause::Unreachable);
                            let f = fail(SendFailKind::Connect, e.to_string(), dispatched, reconnects);
                            return Err(SendFailure { cause, ..f });
                        }
                    }
                }
            };
            let setup = conn.setup.take().filter(|_| !reused);
            let t0 = Instant::now();
            dispatched = Some(t0);
            // A pooled connection the server had closed (after its last response, or idle): the
            // request (or what of it was written) was never processed; sent once more on a
            // fresh connection.
            let retry_unanswered = reused && !resent;
            let after_response = conn.uses > 0;
            let written = match conn.write_request(req, deadline.as_deref_mut()).await {
                Ok(()) => {
                    if let Some(m) = written_mark.as_deref_mut() {
                        *m = Some(t0);
                    }
                    Instant::now()
                }
                Err(WriteFail::Unsent(_)) if reused => {
                    // Closed before anything was written: safe to send elsewhere.
                    reconnects += 1;
                    self.inner.counters.stale.fetch_add(1, Ordering::Relaxed);
                    dispatched = None;
                    continue;
                }
                Err(WriteFail::Partial(_)) if retry_unanswered => {
                    self.resend_unanswered(&mut reconnects, &mut resent, after_response);
                    continue;
                }
                Err(WriteFail::Unsent(e)) => {
                    let msg = format!("connection closed before the request was sent: {e}");
                    return Err(fail(SendFailKind::Connect, msg, None, reconnects));
                }
                Err(WriteFail::Partial(e)) => {
                    let msg = format!("request failed while it was being sent: {e}");
                    return Err(fail(SendFailKind::Transport, msg, dispatched, reconnects));
                }
                Err(WriteFail::Deadline { written }) => {
                    let at = if written { dispatched } else { None };
                    return Err(fail(
                        SendFailKind::Timeout,
                        "request timed out while sending".into(),
                        at,
                        reconnects,
                    ));
                }
            };
            let head_request = req.method() == Method::HEAD;
            match conn.read_head(head_request, deadline.as_deref_mut()).await {
                Ok((head, incoming, first_byte)) => {
                    let headers_at = conn.last_read_at();
                    // With kernel receive times the answer can be stamped before our thread,
                    // preempted after the write, read the clock: the write ended by then.
                    let written = written.min(first_byte);
                    let phases = SentPhases { reused, setup, written, first_byte };
                    if reused {
                        self.inner.counters.reused.fetch_add(1, Ordering::Relaxed);
                        if conn.uses > 0 {
                            self.inner.reuse.closes_in_row.store(0, Ordering::Relaxed);
                        }
                    }
                    let mut response = Response::new(incoming);
                    *response.status_mut() = head.status;
                    *response.headers_mut() = head.headers;
                    return Ok(Sent {
                        response,
                        conn,
                        dispatched: t0,
                        headers_at,
                        phases,
                        reconnects,
                        resent,
                    });
                }
                Err(ReadHeadError::Deadline) => {
                    return Err(fail(
                        SendFailKind::Timeout,
                        "request timed out waiting for the response head".into(),
                        dispatched,
                        reconnects,
                    ));
                }
                Err(e) if e.unanswered() && retry_unanswered && close_crossed_the_write(&conn, written) => {
                    self.resend_unanswered(&mut reconnects, &mut resent, after_response);
                    continue;
                }
                Err(e) if e.unanswered() && reused => {
                    // Closed long after the request was written: the server had it (a worker
                    // crash, an OOM kill), so it is a failure, not a stale connection; a POST
                    // the server may have acted on is not sent again.
                    let after = closed_after_write(&conn, written);
                    let msg = format!(
                        "the server closed the connection {:.0} ms after the request was written, without \
                         answering ({e}); it had the request, so it was not sent again",
                        after.as_secs_f64() * 1e3
                    );
                    return Err(fail(SendFailKind::Transport, msg, dispatched, reconnects));
                }
                // Not HTTP/1.1 at all (SB308): the answer is named as it is.
                Err(e) if e.is_not_http1() => {
                    let f = fail(SendFailKind::Transport, e.to_string(), dispatched, reconnects);
                    return Err(SendFailure { cause: Some(FailureCause::NotHttp1), ..f });
                }
                // A body in a transfer coding not decoded (SB306), named rather than misread.
                Err(e) if e.is_transfer_coding() => {
                    let f = fail(SendFailKind::Transport, e.to_string(), dispatched, reconnects);
                    return Err(SendFailure { cause: Some(FailureCause::ContentCoding), ..f });
                }
                Err(e) => {
                    let msg = format!("request failed after it was sent: {e}");
                    return Err(fail(SendFailKind::Transport, msg, dispatched, reconnects));
                }
            }
        }
        Err(SendFailure {
            kind: SendFailKind::Connect,
            message: "too many stale connections in a row".into(),
            cause: None,
            dispatched,
            reconnects,
            resent,
        })
    }

    /// Books a resend of a request that a pooled connection left unanswered; a connection
    /// that had carried a response counts towards "closes after each response".
    fn resend_unanswered(&self, reconnects: &mut u32, resent: &mut bool, after_response: bool) {
        *reconnects += 1;
        *resent = true;
        self.inner.counters.resent.fetch_add(1, Ordering::Relaxed);
        if after_response {
            self.note_close_after_response();
        }
    }
}

/// The least time after a request's write within which an unanswered close of a pooled
/// connection is taken for the server's close of an idle connection crossing the write (the
/// request never processed: resent). Later, the server had the request.
const STALE_CLOSE_WINDOW_MIN: Duration = Duration::from_millis(250);

/// Whether the close that left a request on a pooled connection unanswered came soon enough
/// after its write to have crossed it: within [`stale_close_window`]. A close 300 ms after the
/// write on loopback (a worker that read the request, then died) was resent and counted as a
/// completed request.
///
/// A close already there at the first read after the write crossed it, however late this
/// client got to look (a loaded machine must not turn the keep-alive race into failures).
fn close_crossed_the_write(conn: &Conn, written: Instant) -> bool {
    !conn.waited_since_write() || closed_after_write(conn, written) <= stale_close_window(conn.opened_in)
}

/// How long after the request's write the server's close came (found now, for a reset).
fn closed_after_write(conn: &Conn, written: Instant) -> Duration {
    conn.closed_at().unwrap_or_else(Instant::now).saturating_duration_since(written)
}

/// [`STALE_CLOSE_WINDOW_MIN`], or three round trips of a far server measured by its TCP
/// connect. A connect of a second or more is a retransmitted SYN (a full accept queue: the
/// kernel's first retry comes after 1 s), not a round trip, and widens nothing: an overloaded
/// server's drop 1.5 s after the write was resent as stale.
fn stale_close_window(connect: Duration) -> Duration {
    let round_trips = if connect < Duration::from_secs(1) { connect * 3 } else { Duration::ZERO };
    STALE_CLOSE_WINDOW_MIN.max(round_trips)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the resend window's scale: 250 ms at least, three connect times for a far server
    /// (a 150 ms connect: 450 ms), and a connect slowed by a retransmitted SYN widening nothing.
    #[test]
    fn the_stale_close_window_follows_the_tcp_connect_but_not_a_retransmitted_syn() {
        let ms = Duration::from_millis;
        assert_eq!(stale_close_window(ms(0)), ms(250));
        assert_eq!(stale_close_window(ms(150)), ms(450));
        assert_eq!(stale_close_window(ms(1_050)), ms(250));
    }
}

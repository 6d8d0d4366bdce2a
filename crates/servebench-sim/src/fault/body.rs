//! Body faults of a non-streamed JSON answer ([`ResponseShape::JsonBody`]: pooling endpoints,
//! and completions, chat completions and Responses with `stream: false`). The answer has no
//! events, so the stream failures take a body form:
//!
//! - [`FaultKind::Stall`]: the headers go out, then no byte for the stall duration, then the
//!   whole body (`Content-Length` is the real one);
//! - [`FaultKind::Reset`]: the first half of the body (chunked), then the connection is cut: the
//!   body never ends;
//! - [`FaultKind::MalformedJson`]: only the first half of the JSON, as a complete response
//!   (`Content-Length` of what is sent), so the body does not parse;
//! - [`FaultKind::OversizedEvent`]: the JSON gets a leading `"injected_padding"` string member of
//!   [`FaultConfig::oversized_bytes`] bytes: still valid, but larger than the client's bound.
//!
//! Reset, malformed and oversized bodies are counted when they are built (the answer is ready),
//! a stall when it starts (the first time the connection asks for the body).
//!
//! [`ResponseShape::JsonBody`]: super::ResponseShape::JsonBody

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::{Frame, SizeHint};
use tokio::time::Sleep;

use super::stream::FramePoll;
use super::{FaultConfig, FaultCounters, FaultKind};

/// A JSON answer with one body fault.
#[derive(Debug)]
pub(crate) struct FaultedBody {
    kind: FaultKind,
    /// What is still to be sent.
    bytes: Option<Bytes>,
    /// The declared length (`Content-Length`); `None` sends the body chunked.
    length: Option<u64>,
    stall: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    /// Reset: yielded once after the cut part, so that hyper writes it before the cut.
    flushed: bool,
    done: bool,
    counters: Arc<FaultCounters>,
}

/// Where a body is cut: after half of its bytes, at least one byte and at least one byte short
/// of the end (`None` for a body too short to cut). Every strict prefix of a JSON object is
/// invalid JSON, since the closing brace is its last byte.
fn half(len: usize) -> Option<usize> {
    (len >= 2).then(|| (len / 2).clamp(1, len - 1))
}

/// `body` with a string member of `n` bytes in front of its other members (a body that is not
/// an object gets `n` bytes of trailing whitespace instead, equally valid JSON).
fn padded(body: &[u8], n: usize) -> Bytes {
    const MEMBER: &[u8] = b"{\"injected_padding\":\"";
    let mut out = BytesMut::with_capacity(body.len() + n + MEMBER.len() + 2);
    match body.strip_prefix(b"{") {
        Some(rest) => {
            out.extend_from_slice(MEMBER);
            out.resize(out.len() + n, b'x');
            out.extend_from_slice(b"\"");
            if rest.first().is_some_and(|b| *b != b'}') {
                out.extend_from_slice(b",");
            }
            out.extend_from_slice(rest);
        }
        None => {
            out.extend_from_slice(body);
            out.resize(out.len() + n, b' ');
        }
    }
    out.freeze()
}

impl FaultedBody {
    /// `body` with the body fault `kind`, counted now unless it is a stall; `Err(body)` when
    /// `kind` has no body form (or the body is too short to cut), so nothing is injected.
    pub(crate) fn new(
        kind: FaultKind,
        body: Bytes,
        config: &FaultConfig,
        counters: Arc<FaultCounters>,
    ) -> Result<Self, Bytes> {
        let (bytes, length) = match kind {
            FaultKind::Stall => {
                let n = body.len() as u64;
                (body, Some(n))
            }
            FaultKind::Reset => match half(body.len()) {
                Some(cut) => (body.slice(..cut), None),
                None => return Err(body),
            },
            FaultKind::MalformedJson => match half(body.len()) {
                Some(cut) => (body.slice(..cut), Some(cut as u64)),
                None => return Err(body),
            },
            FaultKind::OversizedEvent => {
                let b = padded(&body, config.oversized_bytes);
                let n = b.len() as u64;
                (b, Some(n))
            }
            _ => return Err(body),
        };
        if kind != FaultKind::Stall {
            counters.add(kind);
        }
        Ok(FaultedBody {
            kind,
            bytes: Some(bytes),
            length,
            stall: config.stall,
            sleep: None,
            flushed: false,
            done: false,
            counters,
        })
    }

    pub(crate) fn poll_frame(&mut self, cx: &mut Context<'_>) -> FramePoll {
        if self.done {
            return Poll::Ready(None);
        }
        if self.kind == FaultKind::Stall && self.bytes.is_some() {
            let sleep = match self.sleep.as_mut() {
                Some(s) => s,
                None => {
                    self.counters.add(FaultKind::Stall);
                    self.sleep.insert(Box::pin(tokio::time::sleep(self.stall)))
                }
            };
            if sleep.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
        }
        if let Some(b) = self.bytes.take() {
            // A body of known length ends with its bytes; a reset body goes on to the cut.
            self.done = self.length.is_some();
            return Poll::Ready(Some(Ok(Frame::data(b))));
        }
        if !self.flushed {
            self.flushed = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.done = true;
        let e = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected fault: reset");
        Poll::Ready(Some(Err(e)))
    }

    pub(crate) fn is_end(&self) -> bool {
        self.done
    }

    pub(crate) fn size_hint(&self) -> SizeHint {
        match self.length {
            Some(n) => SizeHint::with_exact(n),
            None => SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] =
        br#"{"id":"embd-1","object":"list","data":[{"index":0}],"usage":{"prompt_tokens":3}}"#;

    fn faulted(kind: FaultKind) -> (Result<FaultedBody, Bytes>, Arc<FaultCounters>) {
        let counters = Arc::new(FaultCounters::new(None));
        let config = FaultConfig { oversized_bytes: 64, ..FaultConfig::default() };
        (FaultedBody::new(kind, Bytes::from_static(BODY), &config, counters.clone()), counters)
    }

    /// Polls `b` to its end with a no-op waker (no stall involved): the data, and whether it
    /// ended with an error.
    fn drain(b: &mut FaultedBody) -> (Vec<u8>, bool) {
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut out = Vec::new();
        for _ in 0..10 {
            match b.poll_frame(&mut cx) {
                Poll::Ready(Some(Ok(f))) => out.extend_from_slice(&f.into_data().unwrap()),
                Poll::Ready(Some(Err(_))) => return (out, true),
                Poll::Ready(None) => return (out, false),
                Poll::Pending => {}
            }
        }
        panic!("the body did not end");
    }

    #[test]
    fn cut_bodies_are_half_the_json() {
        let (b, counters) = faulted(FaultKind::MalformedJson);
        let mut b = b.unwrap();
        assert_eq!(b.size_hint().exact(), Some(BODY.len() as u64 / 2));
        let (out, failed) = drain(&mut b);
        assert!(!failed && b.is_end());
        assert_eq!(out, &BODY[..BODY.len() / 2]);
        assert!(serde_json::from_slice::<serde_json::Value>(&out).is_err());
        assert_eq!(counters.snapshot().get(FaultKind::MalformedJson), 1);

        let (b, counters) = faulted(FaultKind::Reset);
        let mut b = b.unwrap();
        assert_eq!(b.size_hint().exact(), None, "chunked: the cut is not a clean end");
        let (out, failed) = drain(&mut b);
        assert!(failed, "the body fails after the first half");
        assert_eq!(out, &BODY[..BODY.len() / 2]);
        assert_eq!(counters.snapshot().get(FaultKind::Reset), 1);
    }

    #[test]
    fn oversized_bodies_stay_valid_json() {
        let (b, counters) = faulted(FaultKind::OversizedEvent);
        let (out, failed) = drain(&mut b.unwrap());
        assert!(!failed);
        let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["injected_padding"].as_str().unwrap().len(), 64);
        assert_eq!(v["usage"]["prompt_tokens"], 3);
        assert_eq!(counters.snapshot().get(FaultKind::OversizedEvent), 1);
        let v: serde_json::Value = serde_json::from_slice(&padded(b"{}", 3)).unwrap();
        assert_eq!(v["injected_padding"], "xxx");
        let v: serde_json::Value = serde_json::from_slice(&padded(b"[1]", 3)).unwrap();
        assert_eq!(v[0], 1);
    }

    #[test]
    fn kinds_without_a_body_form_leave_the_body_alone() {
        for kind in
            [FaultKind::Http429, FaultKind::Close, FaultKind::Truncate, FaultKind::NoDone, FaultKind::Crlf]
        {
            let (b, counters) = faulted(kind);
            assert_eq!(b.unwrap_err(), BODY, "{kind}");
            assert_eq!(counters.snapshot().total(), 0, "{kind}");
        }
        let counters = Arc::new(FaultCounters::new(None));
        let short =
            FaultedBody::new(FaultKind::Reset, Bytes::from_static(b"{"), &FaultConfig::default(), counters);
        assert!(short.is_err(), "one byte cannot be cut");
        assert_eq!(half(2), Some(1));
    }

    #[tokio::test]
    async fn a_stall_holds_the_whole_body_back() {
        let counters = Arc::new(FaultCounters::new(None));
        let config = FaultConfig::default().with_stall(Duration::from_millis(30));
        let b = FaultedBody::new(FaultKind::Stall, Bytes::from_static(BODY), &config, counters.clone());
        let mut b = b.unwrap();
        assert_eq!(b.size_hint().exact(), Some(BODY.len() as u64));
        let started = tokio::time::Instant::now();
        let frame = std::future::poll_fn(|cx| b.poll_frame(cx)).await;
        // A lower bound only: the sleep guarantees it, however loaded the machine is.
        assert!(started.elapsed() >= config.stall, "{:?}", started.elapsed());
        assert_eq!(frame.unwrap().unwrap().into_data().unwrap(), BODY);
        assert!(b.is_end());
        assert_eq!(counters.snapshot().get(FaultKind::Stall), 1);
    }
}

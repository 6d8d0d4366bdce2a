//! The stream side of fault injection: framing quirks, and the per-stream state machine that
//! `TokenStream` consults before each event (stall, reset, malformed or oversized event,
//! truncation, no `[DONE]`) and after building each frame (quirks, trickle).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::Frame;
use tokio::time::Sleep;

use super::{FaultCounters, FaultKind};

/// Framing quirks of one stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Quirks {
    pub crlf: bool,
    pub data_no_space: bool,
    pub keep_alive: bool,
    pub trickle: bool,
}

impl Quirks {
    /// Whether the frame bytes must be rewritten.
    pub(crate) fn rewrites(&self) -> bool {
        self.crlf || self.data_no_space || self.keep_alive
    }

    /// Rewrites a frame of complete `data: ...\n\n` events (raw LF only ever separates lines:
    /// JSON escapes newlines inside strings).
    pub(crate) fn apply(&self, frame: &[u8]) -> Vec<u8> {
        let nl: &[u8] = if self.crlf { b"\r\n" } else { b"\n" };
        let mut out = Vec::with_capacity(frame.len() + frame.len() / 8 + 32);
        let mut event_start = true;
        let body = frame.strip_suffix(b"\n").unwrap_or(frame);
        for line in body.split(|&b| b == b'\n') {
            if line.is_empty() {
                out.extend_from_slice(nl);
                event_start = true;
                continue;
            }
            if event_start && self.keep_alive {
                out.extend_from_slice(b": keep-alive");
                out.extend_from_slice(nl);
                out.extend_from_slice(nl);
            }
            event_start = false;
            match line.strip_prefix(b"data: ") {
                Some(rest) if self.data_no_space => {
                    out.extend_from_slice(b"data:");
                    out.extend_from_slice(rest);
                }
                _ => out.extend_from_slice(line),
            }
            out.extend_from_slice(nl);
        }
        out
    }
}

/// The faults of one streamed response.
#[derive(Debug)]
pub(crate) struct StreamFaults {
    /// The stream failure (never a pre-response kind).
    pub failure: Option<FaultKind>,
    /// Token events sent before the failure happens.
    pub at: u32,
    pub quirks: Quirks,
    pub stall: Duration,
    pub oversized_bytes: usize,
    pub counters: Arc<FaultCounters>,
}

impl StreamFaults {
    fn count(&self, kind: FaultKind) {
        self.counters.add(kind);
    }

    /// Counts the quirks (once, when the first frame is sent).
    fn count_quirks(&self) {
        let q = self.quirks;
        for (on, k) in [
            (q.crlf, FaultKind::Crlf),
            (q.data_no_space, FaultKind::DataNoSpace),
            (q.keep_alive, FaultKind::KeepAlive),
            (q.trickle, FaultKind::Trickle),
        ] {
            if on {
                self.counters.add(k);
            }
        }
    }
}

/// What the stream does when an event is due (see [`FaultState::poll_before`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hook {
    /// Send the event as usual.
    Continue,
    /// Put a malformed event in front of the event.
    Malformed,
    /// Send one oversized event of this many text bytes as its own frame now; the due event
    /// follows on the next poll.
    Oversized(usize),
    /// Fail the body (hyper then drops the connection).
    Reset,
    /// End the body cleanly now.
    End,
}

/// A body frame: what `TokenStream::poll_frame` returns.
pub(crate) type FramePoll = Poll<Option<Result<Frame<Bytes>, io::Error>>>;

/// The per-stream state of [`StreamFaults`]: the failure fires once, the tokens of an event
/// that is due but held back (stall, flush before reset) are kept, trickled bytes wait here.
#[derive(Debug)]
pub(crate) struct FaultState {
    f: StreamFaults,
    fired: bool,
    /// Tokens the pacer released for the event that is held back.
    due: Option<u32>,
    stall: Option<Pin<Box<Sleep>>>,
    /// Yielded once before a reset, so that hyper flushes the events already written.
    flushed: bool,
    /// Bytes still to be trickled and the next position.
    trickle: Option<(Bytes, usize)>,
    /// Yield before the next trickled byte (one socket write per byte).
    trickle_yield: bool,
    quirks_counted: bool,
}

impl FaultState {
    pub(crate) fn new(f: StreamFaults) -> Self {
        FaultState {
            f,
            fired: false,
            due: None,
            stall: None,
            flushed: false,
            trickle: None,
            trickle_yield: false,
            quirks_counted: false,
        }
    }

    /// Whether no trickled bytes are waiting.
    pub(crate) fn is_idle(&self) -> bool {
        self.trickle.is_none()
    }

    /// The tokens of an event that was released by the pacer but held back.
    pub(crate) fn take_due(&mut self) -> Option<u32> {
        self.due.take()
    }

    /// The next trickled byte, after a yield (`None` when nothing is being trickled).
    pub(crate) fn poll_trickle(&mut self, cx: &mut Context<'_>) -> Option<FramePoll> {
        let (buf, pos) = self.trickle.as_mut()?;
        if self.trickle_yield {
            self.trickle_yield = false;
            cx.waker().wake_by_ref();
            return Some(Poll::Pending);
        }
        let byte = buf.slice(*pos..(*pos + 1).min(buf.len()));
        *pos += 1;
        if *pos >= buf.len() {
            self.trickle = None;
        }
        self.trickle_yield = true;
        Some(Poll::Ready(Some(Ok(Frame::data(byte)))))
    }

    /// Event `tick` is due with up to `k` tokens: what the failure (if it is due now) does.
    /// `Pending` holds the event back (stall, flush before a reset); `k` is kept for
    /// [`FaultState::take_due`].
    pub(crate) fn poll_before(&mut self, tick: u32, k: u32, cx: &mut Context<'_>) -> Poll<Hook> {
        let Some(kind) = self.f.failure else { return Poll::Ready(Hook::Continue) };
        if self.fired || tick != self.f.at {
            return Poll::Ready(Hook::Continue);
        }
        let hook = match kind {
            FaultKind::Stall => {
                let sleep = match self.stall.as_mut() {
                    Some(s) => s,
                    None => {
                        self.f.count(FaultKind::Stall);
                        self.stall.insert(Box::pin(tokio::time::sleep(self.f.stall)))
                    }
                };
                if sleep.as_mut().poll(cx).is_pending() {
                    self.due = Some(k);
                    return Poll::Pending;
                }
                Hook::Continue
            }
            FaultKind::Reset => {
                if !self.flushed {
                    self.flushed = true;
                    self.due = Some(k);
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                Hook::Reset
            }
            FaultKind::MalformedJson => Hook::Malformed,
            FaultKind::OversizedEvent => {
                self.due = Some(k);
                Hook::Oversized(self.f.oversized_bytes)
            }
            FaultKind::Truncate => Hook::End,
            _ => return Poll::Ready(Hook::Continue),
        };
        self.fired = true;
        if kind != FaultKind::Stall {
            self.f.count(kind);
        }
        Poll::Ready(hook)
    }

    /// Whether the end of the stream carries `data: [DONE]` (counts [`FaultKind::NoDone`]).
    pub(crate) fn done_marker(&mut self) -> bool {
        if self.f.failure == Some(FaultKind::NoDone) && !self.fired {
            self.fired = true;
            self.f.count(FaultKind::NoDone);
            return false;
        }
        true
    }

    /// A frame of complete events, rewritten by the quirks; with trickle, only its first byte
    /// (the rest follows one byte per poll).
    pub(crate) fn frame(&mut self, out: Vec<u8>) -> Bytes {
        if !self.quirks_counted {
            self.quirks_counted = true;
            self.f.count_quirks();
        }
        let q = self.f.quirks;
        let bytes = Bytes::from(if q.rewrites() { q.apply(&out) } else { out });
        if !q.trickle || bytes.len() <= 1 {
            return bytes;
        }
        self.trickle_yield = true;
        let first = bytes.slice(..1);
        self.trickle = Some((bytes, 1));
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quirks_rewrite_lines() {
        let frame = b"data: {\"a\":1}\n\ndata: [DONE]\n\n";
        let q = Quirks { crlf: true, data_no_space: true, keep_alive: true, trickle: false };
        assert_eq!(
            q.apply(frame),
            b": keep-alive\r\n\r\ndata:{\"a\":1}\r\n\r\n: keep-alive\r\n\r\ndata:[DONE]\r\n\r\n".to_vec()
        );
        let q = Quirks { crlf: true, ..Quirks::default() };
        assert_eq!(q.apply(frame), b"data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n".to_vec());
        assert!(!Quirks { trickle: true, ..Quirks::default() }.rewrites());
    }

    fn faults(failure: Option<FaultKind>, quirks: Quirks) -> (FaultState, Arc<FaultCounters>) {
        let counters = Arc::new(FaultCounters::new(None));
        let f = StreamFaults {
            failure,
            at: 2,
            quirks,
            stall: Duration::from_millis(1),
            oversized_bytes: 10,
            counters: counters.clone(),
        };
        (FaultState::new(f), counters)
    }

    #[test]
    fn trickle_sends_one_byte_per_frame_with_a_yield_between() {
        let (mut s, counters) = faults(None, Quirks { trickle: true, ..Quirks::default() });
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        assert_eq!(s.frame(b"abc".to_vec()), Bytes::from_static(b"a"));
        let mut got = Vec::new();
        for _ in 0..10 {
            match s.poll_trickle(&mut cx) {
                Some(Poll::Pending) => {}
                Some(Poll::Ready(Some(Ok(f)))) => got.extend_from_slice(&f.into_data().unwrap()),
                None => break,
                Some(other) => panic!("{other:?}"),
            }
        }
        assert_eq!(got, b"bc");
        assert!(s.is_idle());
        assert_eq!(counters.snapshot().get(FaultKind::Trickle), 1);
    }

    #[test]
    fn failures_fire_once_at_their_event() {
        let waker = std::task::Waker::noop();
        let mut cx = Context::from_waker(waker);
        let (mut s, counters) = faults(Some(FaultKind::Reset), Quirks::default());
        assert_eq!(s.poll_before(1, 1, &mut cx), Poll::Ready(Hook::Continue));
        assert_eq!(s.poll_before(2, 1, &mut cx), Poll::Pending, "yields once to flush");
        assert_eq!(s.take_due(), Some(1));
        assert_eq!(s.poll_before(2, 1, &mut cx), Poll::Ready(Hook::Reset));
        assert_eq!(s.poll_before(2, 1, &mut cx), Poll::Ready(Hook::Continue));
        assert_eq!(counters.snapshot().get(FaultKind::Reset), 1);

        let (mut s, counters) = faults(Some(FaultKind::NoDone), Quirks::default());
        assert_eq!(s.poll_before(2, 1, &mut cx), Poll::Ready(Hook::Continue));
        assert!(!s.done_marker());
        assert_eq!(counters.snapshot().get(FaultKind::NoDone), 1);

        let (mut s, _) = faults(Some(FaultKind::OversizedEvent), Quirks::default());
        assert_eq!(s.poll_before(2, 3, &mut cx), Poll::Ready(Hook::Oversized(10)));
        assert_eq!(s.take_due(), Some(3), "the due event follows");
        assert!(s.done_marker());
    }
}

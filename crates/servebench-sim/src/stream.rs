//! Response bodies. A streamed response is a state machine polled directly by the connection's
//! task: no channel, no extra task, one body frame (one socket write) per tick. The pacer says
//! when tick `i` is due; the frame holds every event of that tick (chat's role chunk joins the
//! first tick; the usage chunk and `[DONE]` join the last one).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};

use crate::fault::{FaultState, FaultedBody, Hook, StreamFaults};
use crate::pacer::Pacer;
use crate::plan::GenerationPlan;
use crate::sse::StreamFormat;
use crate::truth::TruthRecorder;
use crate::vocab::OutputVocab;

/// Body of every response the simulator sends.
#[derive(Debug)]
pub(crate) enum SimBody {
    /// A complete body sent in one frame.
    Full(Option<Bytes>),
    /// A paced SSE stream.
    Stream(Box<TokenStream>),
    /// A JSON answer with an injected body fault (stall, cut, malformed, oversized).
    Faulted(Box<FaultedBody>),
    /// Gateway personality: the inner body gzipped frame by frame.
    Gzip(Box<crate::conn_wrap::GzipBody>),
    /// llama.cpp personality: the inner body with the connection's keep-alive bookkeeping.
    Tracked(Box<crate::conn_wrap::Tracked>),
}

impl SimBody {
    pub(crate) fn full(b: impl Into<Bytes>) -> Self {
        SimBody::Full(Some(b.into()))
    }

    pub(crate) fn empty() -> Self {
        SimBody::Full(None)
    }
}

impl Body for SimBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        match self.get_mut() {
            SimBody::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            SimBody::Stream(s) => s.poll_frame(cx),
            SimBody::Faulted(b) => b.poll_frame(cx),
            SimBody::Gzip(b) => b.poll_frame(cx),
            SimBody::Tracked(b) => b.poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            SimBody::Full(b) => b.is_none(),
            SimBody::Stream(s) => s.is_end(),
            SimBody::Faulted(b) => b.is_end(),
            SimBody::Gzip(b) => b.is_end(),
            SimBody::Tracked(b) => b.inner().is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Stream(_) => SizeHint::default(),
            SimBody::Faulted(b) => b.size_hint(),
            SimBody::Gzip(_) => SizeHint::default(),
            SimBody::Tracked(b) => b.inner().size_hint(),
        }
    }
}

/// One streamed generation.
#[derive(Debug)]
pub(crate) struct TokenStream {
    plan: GenerationPlan,
    fmt: StreamFormat,
    vocab: Arc<OutputVocab>,
    pacer: Pacer,
    /// Events sent so far.
    tick: u32,
    /// Tokens per choice sent so far (the longest choice ends at `tokens`).
    sent: u32,
    tokens: u32,
    emitted: u32,
    truth: Option<TruthRecorder>,
    done: bool,
    /// Injected faults (`None`: a clean stream).
    faults: Option<Box<FaultState>>,
    /// The first this-many tokens of each choice are sent as reasoning deltas.
    reasoning: u32,
    /// Reasoning tokens sent so far (all choices), and the `/metrics` counter they go to.
    reasoning_sent: u32,
    reasoning_counter: Option<Arc<crate::metrics::Counter>>,
}

impl TokenStream {
    pub(crate) fn new(
        plan: GenerationPlan,
        fmt: StreamFormat,
        vocab: Arc<OutputVocab>,
        pacer: Pacer,
        truth: Option<TruthRecorder>,
    ) -> Self {
        let tokens = plan.choices.iter().map(|c| c.tokens).max().unwrap_or(0);
        TokenStream {
            plan,
            fmt,
            vocab,
            pacer,
            tick: 0,
            sent: 0,
            tokens,
            emitted: 0,
            truth,
            done: false,
            faults: None,
            reasoning: 0,
            reasoning_sent: 0,
            reasoning_counter: None,
        }
    }

    /// Sends the first `n` tokens of each choice as reasoning, counted into `counter`.
    pub(crate) fn with_reasoning(mut self, n: u32, counter: Arc<crate::metrics::Counter>) -> Self {
        self.reasoning = n;
        self.reasoning_counter = Some(counter);
        self
    }

    /// Injects `faults` into this stream.
    pub(crate) fn with_faults(mut self, faults: Option<StreamFaults>) -> Self {
        self.faults = faults.map(|f| Box::new(FaultState::new(f)));
        self
    }

    /// Whether the body has ended (no trickled bytes left either).
    fn is_end(&self) -> bool {
        self.done && self.faults.as_ref().is_none_or(|f| f.is_idle())
    }

    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if let Some(p) = self.faults.as_mut().and_then(|f| f.poll_trickle(cx)) {
            return p;
        }
        if self.done {
            return Poll::Ready(None);
        }
        let tick = self.tick;
        let k = match self.faults.as_mut().and_then(|f| f.take_due()) {
            Some(k) => k,
            None => ready!(self.pacer.poll_tokens(tick, self.sent, cx)).max(1),
        };
        let hook = match self.faults.as_mut() {
            Some(f) => ready!(f.poll_before(tick, k, cx)),
            None => Hook::Continue,
        };
        let n_choices = self.plan.choices.len();
        let mut out =
            Vec::with_capacity(self.fmt.event_capacity() * n_choices * if tick == 0 { 2 } else { 1 });
        match hook {
            Hook::Continue => {}
            Hook::Malformed => self.fmt.push_malformed(&mut out),
            Hook::Oversized(n) => {
                self.fmt.push_oversized(&mut out, n, self.emitted);
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
            }
            Hook::Reset => {
                self.done = true;
                let e = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "injected fault: reset");
                return Poll::Ready(Some(Err(e)));
            }
            Hook::End => {
                self.done = true;
                return Poll::Ready(None);
            }
        }
        if tick == 0 {
            // Known once prefill is done; set now because a finish chunk may carry usage
            // (llama.cpp's completions) before the end of the stream is written.
            self.fmt.set_cached_tokens(self.pacer.cached_tokens());
            for (pos, c) in self.plan.choices.iter().enumerate() {
                self.fmt.push_role_chunk(pos, c.index, &mut out);
            }
        }
        let tick_tokens = self.push_tick_tokens(k, &mut out);
        self.sent = self.sent.saturating_add(k);
        self.tick += 1;
        let end = self.sent >= self.tokens;
        if end {
            self.fmt.set_cached_tokens(self.pacer.cached_tokens());
            self.fmt.set_reasoning_tokens(self.reasoning_sent);
            let done_marker = self.faults.as_mut().is_none_or(|f| f.done_marker());
            self.fmt.push_end(&mut out, self.plan.completion_tokens(), done_marker);
            self.done = true;
        }
        if let Some(t) = self.truth.as_mut() {
            let now = Instant::now();
            t.event(now, tick_tokens);
            if end {
                t.finish(now);
            }
        }
        let frame = match self.faults.as_mut() {
            Some(f) => f.frame(out),
            None => Bytes::from(out),
        };
        Poll::Ready(Some(Ok(Frame::data(frame))))
    }

    /// Writes this tick's events: every choice advances by up to `k` tokens (fixed:
    /// `tokens_per_event`; engine: what the scheduler produced since the last tick),
    /// reasoning first while below the reasoning budget. Returns the tokens written.
    fn push_tick_tokens(&mut self, k: u32, out: &mut Vec<u8>) -> u32 {
        let TokenStream { plan, fmt, vocab, .. } = self;
        let start = u64::from(self.sent);
        let mut tick_tokens = 0u32;
        for (pos, c) in plan.choices.iter().enumerate() {
            let n = u64::from(c.tokens).saturating_sub(start).min(u64::from(k)) as u32;
            if n == 0 {
                continue;
            }
            tick_tokens += n;
            self.emitted = self.emitted.saturating_add(n);
            let last = start + u64::from(n) >= u64::from(c.tokens);
            let seed = c.seed;
            let r_n = (u64::from(self.reasoning).saturating_sub(start)).min(u64::from(n)) as u32;
            let c_n = n - r_n;
            if r_n > 0 {
                self.reasoning_sent = self.reasoning_sent.saturating_add(r_n);
                if let Some(counter) = &self.reasoning_counter {
                    counter.add(u64::from(r_n));
                }
                fmt.push_reasoning_event(
                    pos,
                    out,
                    |o| vocab.push_text(seed, start, u64::from(r_n), o),
                    (last && c_n == 0).then_some(c.finish),
                    self.emitted - c_n,
                );
            }
            if c_n > 0 {
                let from = start + u64::from(r_n);
                fmt.push_content(pos, out, vocab, seed, from, c_n, last.then_some(c.finish), self.emitted);
            }
        }
        tick_tokens
    }
}

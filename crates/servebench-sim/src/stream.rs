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
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            SimBody::Full(b) => b.is_none(),
            SimBody::Stream(s) => s.done,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            SimBody::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            SimBody::Full(None) => SizeHint::with_exact(0),
            SimBody::Stream(_) => SizeHint::default(),
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
    tick: u32,
    ticks: u32,
    emitted: u32,
    truth: Option<TruthRecorder>,
    done: bool,
}

impl TokenStream {
    pub(crate) fn new(
        plan: GenerationPlan,
        fmt: StreamFormat,
        vocab: Arc<OutputVocab>,
        pacer: Pacer,
        truth: Option<TruthRecorder>,
    ) -> Self {
        let ticks = plan.ticks();
        TokenStream { plan, fmt, vocab, pacer, tick: 0, ticks, emitted: 0, truth, done: false }
    }

    fn poll_frame(&mut self, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let tick = self.tick;
        ready!(self.pacer.poll_tick(tick, cx));
        let TokenStream { plan, fmt, vocab, .. } = self;
        let n_choices = plan.choices.len();
        let mut out = Vec::with_capacity(fmt.event_capacity() * n_choices * if tick == 0 { 2 } else { 1 });
        if tick == 0 {
            for (pos, c) in plan.choices.iter().enumerate() {
                fmt.push_role_chunk(pos, c.index, &mut out);
            }
        }
        let k = plan.tokens_per_event.max(1);
        let mut tick_tokens = 0u32;
        for (pos, c) in plan.choices.iter().enumerate() {
            let n = plan.tokens_in_event(c, tick);
            if n == 0 {
                continue;
            }
            let start = u64::from(tick) * u64::from(k);
            tick_tokens += n;
            self.emitted = self.emitted.saturating_add(n);
            let last = start + u64::from(n) >= u64::from(c.tokens);
            let seed = c.seed;
            fmt.push_event(
                pos,
                &mut out,
                |o| vocab.push_text(seed, start, u64::from(n), o),
                last.then_some(c.finish),
                self.emitted,
            );
        }
        self.tick += 1;
        let end = self.tick >= self.ticks;
        if end {
            fmt.push_end(&mut out, plan.completion_tokens());
            self.done = true;
        }
        if let Some(t) = self.truth.as_mut() {
            let now = Instant::now();
            t.event(now, tick_tokens);
            if end {
                t.finish(now);
            }
        }
        Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))))
    }
}

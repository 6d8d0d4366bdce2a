//! When each event of one request may be sent, and how many tokens it carries. The streaming
//! body polls its pacer for "the next event is due"; the pacer decides how: the fixed model on
//! absolute timer deadlines, the engine model by waiting on the scheduler's step notifications
//! (tokens produced by several steps the client has not yet taken are coalesced into one event,
//! as a server's output queue does). A fault plan can stretch a tick (stall) without touching
//! the formatting code.
//!
//! The pacer also feeds the server-side latency histograms and token counters of `/metrics`,
//! at the moment each event is released.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use crate::config::TimingModel;
use crate::engine::Progress;
use crate::metrics::Metrics;

/// What a pacer needs to know about its request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PaceInfo {
    /// When the request body was read.
    pub received: Instant,
    /// Tokens per event in fixed mode.
    pub tokens_per_event: u32,
    /// Tokens of the longest choice: the request ends when this many were released.
    pub tokens: u32,
    /// `usage.prompt_tokens` and `usage.completion_tokens`, counted into `/metrics` once the
    /// request finishes.
    pub prompt_tokens: u32,
    pub completion_tokens: u32,
}

/// A per-request pacer.
#[derive(Debug)]
pub(crate) struct Pacer {
    kind: Kind,
    obs: Observer,
}

#[derive(Debug)]
enum Kind {
    /// Absolute deadlines `received + ttft + i * itl`.
    Fixed(FixedPacer),
    /// Tokens as the engine's scheduler produces them.
    Engine(Arc<Progress>),
}

impl Pacer {
    /// A fixed-timing pacer (the engine model needs [`Pacer::engine`]; given an engine model
    /// this falls back to zero delays).
    pub(crate) fn new(model: &TimingModel, info: PaceInfo, metrics: Option<Arc<Metrics>>) -> Self {
        let (ttft, itl) = match *model {
            TimingModel::Fixed { ttft, itl } => (ttft, itl),
            TimingModel::Engine(_) => (Duration::ZERO, Duration::ZERO),
        };
        if let Some(m) = &metrics {
            m.running_add(1);
        }
        Pacer {
            kind: Kind::Fixed(FixedPacer::new(info.received, ttft, itl)),
            obs: Observer::new(info, metrics, true),
        }
    }

    /// A pacer fed by the engine scheduler through `progress`.
    pub(crate) fn engine(progress: Arc<Progress>, info: PaceInfo, metrics: Option<Arc<Metrics>>) -> Self {
        Pacer { kind: Kind::Engine(progress), obs: Observer::new(info, metrics, false) }
    }

    /// Ready with `n ≥ 1` once the next event is due: it may carry up to `n` more tokens per
    /// choice. `tick` counts the events released before; `sent` the tokens per choice released
    /// before.
    pub(crate) fn poll_tokens(&mut self, tick: u32, sent: u32, cx: &mut Context<'_>) -> Poll<u32> {
        let n = match &mut self.kind {
            Kind::Fixed(p) => match p.poll_tick(tick, cx) {
                Poll::Ready(()) => self.obs.info.tokens_per_event.max(1),
                Poll::Pending => return Poll::Pending,
            },
            Kind::Engine(progress) => {
                let mut g = progress.lock();
                if g.produced > sent {
                    g.produced - sent
                } else {
                    g.waker = Some(cx.waker().clone());
                    return Poll::Pending;
                }
            }
        };
        self.obs.release(sent.saturating_add(n));
        Poll::Ready(n)
    }

    /// Waits until every token of the request is due (non-streamed responses).
    pub(crate) async fn wait_all(&mut self) {
        let total = self.obs.info.tokens;
        if let Kind::Fixed(p) = &mut self.kind {
            let last = total.div_ceil(self.obs.info.tokens_per_event.max(1)).saturating_sub(1);
            std::future::poll_fn(|cx| p.poll_tick(last, cx)).await;
            self.obs.release(total);
            return;
        }
        let mut sent = 0u32;
        let mut tick = 0u32;
        while sent < total {
            let n = std::future::poll_fn(|cx| self.poll_tokens(tick, sent, cx)).await;
            sent = sent.saturating_add(n);
            tick += 1;
        }
    }

    /// Prompt tokens served from the prefix cache (known once the engine admitted the request;
    /// always 0 in fixed mode).
    pub(crate) fn cached_tokens(&self) -> u32 {
        match &self.kind {
            Kind::Fixed(_) => 0,
            Kind::Engine(p) => p.lock().cached.unwrap_or(0),
        }
    }
}

impl Drop for Pacer {
    fn drop(&mut self) {
        if let Kind::Engine(p) = &self.kind {
            p.cancel();
        }
    }
}

/// Records latencies and counts into `/metrics` as events are released.
#[derive(Debug)]
struct Observer {
    info: PaceInfo,
    metrics: Option<Arc<Metrics>>,
    last: Option<Instant>,
    finished: bool,
    /// Fixed mode keeps `num_requests_running` itself (the engine's scheduler publishes it).
    owns_running_gauge: bool,
}

impl Observer {
    fn new(info: PaceInfo, metrics: Option<Arc<Metrics>>, owns_running_gauge: bool) -> Self {
        Observer { info, metrics, last: None, finished: false, owns_running_gauge }
    }

    fn release(&mut self, sent_after: u32) {
        let Some(m) = &self.metrics else { return };
        if self.finished {
            return;
        }
        let now = Instant::now();
        match self.last {
            None => m.ttft.observe(now.saturating_duration_since(self.info.received)),
            Some(prev) => m.itl.observe(now.saturating_duration_since(prev)),
        }
        self.last = Some(now);
        if sent_after >= self.info.tokens {
            self.finished = true;
            m.e2e.observe(now.saturating_duration_since(self.info.received));
            m.prompt_tokens.add(u64::from(self.info.prompt_tokens));
            m.generation_tokens.add(u64::from(self.info.completion_tokens));
            m.requests_finished.inc();
            if self.owns_running_gauge {
                self.owns_running_gauge = false;
                m.running_add(-1);
            }
        }
    }
}

impl Drop for Observer {
    fn drop(&mut self) {
        if let (true, Some(m)) = (self.owns_running_gauge, &self.metrics) {
            m.running_add(-1);
        }
    }
}

/// Fixed timing on absolute deadlines: lateness of one event never shifts the next.
#[derive(Debug)]
pub(crate) struct FixedPacer {
    first: Instant,
    itl: Duration,
    sleep: Pin<Box<Sleep>>,
    armed_for: Option<u32>,
}

impl FixedPacer {
    fn new(received: Instant, ttft: Duration, itl: Duration) -> Self {
        let first = received.checked_add(ttft).unwrap_or(received);
        FixedPacer { first, itl, sleep: Box::pin(tokio::time::sleep_until(first.into())), armed_for: Some(0) }
    }

    /// The deadline of tick `tick`.
    pub(crate) fn deadline(&self, tick: u32) -> Instant {
        let offset = self.itl.checked_mul(tick).unwrap_or(Duration::from_secs(86_400 * 365));
        self.first.checked_add(offset).unwrap_or(self.first)
    }

    fn poll_tick(&mut self, tick: u32, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = self.deadline(tick);
        if Instant::now() >= deadline {
            return Poll::Ready(());
        }
        if self.armed_for != Some(tick) {
            self.sleep.as_mut().reset(deadline.into());
            self.armed_for = Some(tick);
        }
        self.sleep.as_mut().poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(t0: Instant, tokens: u32) -> PaceInfo {
        PaceInfo { received: t0, tokens_per_event: 1, tokens, prompt_tokens: 3, completion_tokens: tokens }
    }

    #[tokio::test]
    async fn deadlines_are_absolute() {
        let t0 = Instant::now();
        let p = FixedPacer {
            first: t0 + Duration::from_millis(50),
            itl: Duration::from_millis(10),
            sleep: Box::pin(tokio::time::sleep(Duration::ZERO)),
            armed_for: None,
        };
        assert_eq!(p.deadline(0), t0 + Duration::from_millis(50));
        assert_eq!(p.deadline(7), t0 + Duration::from_millis(120));
    }

    #[tokio::test]
    async fn waits_until_each_deadline_and_records_metrics() {
        let t0 = Instant::now();
        let model = TimingModel::Fixed { ttft: Duration::from_millis(20), itl: Duration::from_millis(5) };
        let m = Arc::new(Metrics::new("m", 0));
        let mut p = Pacer::new(&model, info(t0, 4), Some(m.clone()));
        assert_eq!(m.running.get(), 1);
        for tick in 0..4u32 {
            let n = std::future::poll_fn(|cx| p.poll_tokens(tick, tick, cx)).await;
            assert_eq!(n, 1);
            assert!(t0.elapsed() >= Duration::from_millis(20 + 5 * u64::from(tick)));
        }
        drop(p);
        assert_eq!(m.running.get(), 0);
        assert_eq!(m.ttft.count(), 1);
        assert_eq!(m.itl.count(), 3);
        assert_eq!(m.generation_tokens.get(), 4);
        assert_eq!(m.prompt_tokens.get(), 3);
    }

    #[tokio::test]
    async fn engine_pacer_coalesces_and_cancels() {
        let progress = Arc::new(Progress::default());
        let mut p = Pacer::engine(progress.clone(), info(Instant::now(), 5), None);
        let waiter = tokio::spawn(async move {
            let n = std::future::poll_fn(|cx| p.poll_tokens(0, 0, cx)).await;
            (n, p)
        });
        tokio::task::yield_now().await;
        progress.add(2);
        let (n, p) = waiter.await.unwrap();
        assert!((1..=2).contains(&n));
        progress.set_cached(16);
        assert_eq!(p.cached_tokens(), 16);
        assert!(!progress.is_cancelled());
        drop(p);
        assert!(progress.is_cancelled());
    }
}

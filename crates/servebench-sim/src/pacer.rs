//! When each event of one request may be sent. The streaming body polls its pacer for "tick
//! `i` is due"; the pacer decides how. This is the seam for other timing models: an engine
//! model's pacer would wait for the scheduler's step notifications instead of a timer, and a
//! fault plan can stretch a tick (stall) without touching the formatting code.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use crate::config::TimingModel;

/// A per-request pacer.
#[derive(Debug)]
pub(crate) enum Pacer {
    /// Absolute deadlines `received + ttft + i * itl`.
    Fixed(FixedPacer),
}

impl Pacer {
    /// The pacer of a request received at `received` under `model`.
    pub(crate) fn new(model: &TimingModel, received: Instant) -> Self {
        match *model {
            TimingModel::Fixed { ttft, itl } => Pacer::Fixed(FixedPacer::new(received, ttft, itl)),
        }
    }

    /// Ready once tick `tick` is due.
    pub(crate) fn poll_tick(&mut self, tick: u32, cx: &mut Context<'_>) -> Poll<()> {
        match self {
            Pacer::Fixed(p) => p.poll_tick(tick, cx),
        }
    }

    /// Waits until tick `tick` is due.
    pub(crate) async fn wait_tick(&mut self, tick: u32) {
        std::future::poll_fn(|cx| self.poll_tick(tick, cx)).await
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
    async fn waits_until_each_deadline() {
        let t0 = Instant::now();
        let model = TimingModel::Fixed { ttft: Duration::from_millis(20), itl: Duration::from_millis(5) };
        let mut p = Pacer::new(&model, t0);
        for tick in 0..4u32 {
            p.wait_tick(tick).await;
            assert!(t0.elapsed() >= Duration::from_millis(20 + 5 * u64::from(tick)));
        }
    }
}

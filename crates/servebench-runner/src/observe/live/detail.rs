//! The live dashboard's detail of [`LiveMetrics`]: percentile estimates from the live
//! histograms, failures by kind with the latest message, and the client queue from the arrival
//! schedule (docs/metrics.md, "Live dashboard"). Read about once a second by the display
//! thread; nothing here is on a request's path.

use super::{AtomicHistogram, LiveMetrics};
use servebench_core::{ErrorKind, RunClock};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The percentiles the dashboard shows.
pub const LIVE_PERCENTILES: [f64; 3] = [50.0, 90.0, 99.0];

/// An estimate of the `p`-th percentile (0–100, seconds) from cumulative bucket counts
/// `(upper bound in s or None for +Inf, cumulative count)`, as Prometheus's
/// `histogram_quantile`: the rank `p/100 × count` is located in its bucket and interpolated
/// linearly between the bucket's bounds (the first bucket's lower bound is 0); a rank in the
/// +Inf bucket yields the highest finite bound. `None` without observations.
pub fn bucket_percentile(buckets: &[(Option<f64>, u64)], p: f64) -> Option<f64> {
    let total = buckets.last()?.1;
    if total == 0 || !p.is_finite() {
        return None;
    }
    let rank = (p.clamp(0.0, 100.0) / 100.0) * total as f64;
    let (mut lower, mut below) = (0.0, 0u64);
    for &(bound, cum) in buckets {
        let Some(upper) = bound else { return Some(lower) };
        if cum as f64 >= rank && cum > below {
            let share = (rank - below as f64) / (cum - below) as f64;
            return Some(lower + (upper - lower) * share.clamp(0.0, 1.0));
        }
        (lower, below) = (upper, cum);
    }
    Some(lower)
}

/// Percentile estimates (seconds) of one live histogram, in [`LIVE_PERCENTILES`] order.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct LivePercentiles {
    pub count: u64,
    pub values: [Option<f64>; 3],
}

impl LivePercentiles {
    fn of(h: &AtomicHistogram) -> Self {
        let buckets = h.cumulative();
        LivePercentiles {
            count: buckets.last().map_or(0, |b| b.1),
            values: LIVE_PERCENTILES.map(|p| bucket_percentile(&buckets, p)),
        }
    }
}

/// What the dashboard reads besides [`super::LiveSnapshot`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LiveDetail {
    pub ttft: LivePercentiles,
    pub itl: LivePercentiles,
    pub e2el: LivePercentiles,
    /// Dispatch lateness (released − intended) of sent requests.
    pub lateness: LivePercentiles,
    /// Failed requests by kind, kinds with none left out, in [`ErrorKind::ALL`] order; failures
    /// without a kind last, as `None`.
    pub failed_by_kind: Vec<(Option<ErrorKind>, u64)>,
    /// The latest failure: its kind and message.
    pub latest_failure: Option<(ErrorKind, String)>,
    /// Requests due by the arrival schedule and not yet sent (waiting at the client's
    /// concurrency gate or prefill cap, or for the dispatcher); `None` without a schedule
    /// (closed loop, conversations).
    pub queued: Option<u64>,
    /// Seconds from now until the schedule's last arrival is due (0 once past); `None`
    /// without a schedule.
    pub schedule_left_s: Option<f64>,
}

/// The arrival schedule of a measured phase: its clock and offsets (µs, sorted).
#[derive(Debug, Clone)]
pub(super) struct LiveSchedule {
    clock: RunClock,
    offsets_us: Arc<[u64]>,
}

impl LiveMetrics {
    /// The measured phase sends on this schedule (offsets from `clock`'s origin, ascending):
    /// the dashboard derives the client queue from it. Not called for loads without one.
    pub fn set_schedule(&self, clock: RunClock, offsets_us: Arc<[u64]>) {
        if let Ok(mut s) = self.schedule.lock() {
            *s = Some(LiveSchedule { clock, offsets_us });
        }
    }

    /// Notes a failed request's kind and message as the latest failure (by the collector).
    pub(super) fn note_failure(&self, kind: ErrorKind, message: &str) {
        if let Ok(mut f) = self.latest_failure.lock() {
            *f = Some((kind, message.to_owned()));
        }
    }

    /// `(queued, seconds until the last arrival)` from the schedule, for `sent` requests sent.
    fn schedule_state(&self, sent: u64) -> (Option<u64>, Option<f64>) {
        let Some(s) = self.schedule.lock().ok().and_then(|s| s.clone()) else { return (None, None) };
        let now = s.clock.now_us();
        let due = s.offsets_us.partition_point(|&o| o <= now) as u64;
        let last = s.offsets_us.last().copied().unwrap_or(0);
        (Some(due.saturating_sub(sent)), Some(last.saturating_sub(now) as f64 / 1e6))
    }

    /// The dashboard's detail now.
    pub fn detail(&self) -> LiveDetail {
        let mut failed_by_kind: Vec<(Option<ErrorKind>, u64)> = ErrorKind::ALL
            .iter()
            .zip(&self.failed)
            .map(|(&k, c)| (Some(k), c.load(Ordering::Relaxed)))
            .collect();
        failed_by_kind.push((None, self.failed_unclassified.load(Ordering::Relaxed)));
        failed_by_kind.retain(|f| f.1 > 0);
        let (queued, schedule_left_s) = self.schedule_state(self.sent.load(Ordering::Relaxed));
        LiveDetail {
            ttft: LivePercentiles::of(&self.ttft),
            itl: LivePercentiles::of(&self.itl),
            e2el: LivePercentiles::of(&self.e2el),
            lateness: LivePercentiles::of(&self.lateness),
            failed_by_kind,
            latest_failure: self.latest_failure.lock().ok().and_then(|f| f.clone()),
            queued,
            schedule_left_s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets ≤1 s: 2, ≤2 s: 6 (4 in it), ≤4 s: 8 (2 in it), +Inf: 10 (2 in it).
    fn buckets() -> Vec<(Option<f64>, u64)> {
        vec![(Some(1.0), 2), (Some(2.0), 6), (Some(4.0), 8), (None, 10)]
    }

    #[test]
    fn bucket_percentile_interpolates_within_the_bucket_as_histogram_quantile() {
        let b = buckets();
        // p50: rank 5 lies in (1, 2] holding ranks 2..6: 1 + 1 × (5 − 2)/4 = 1.75.
        assert_eq!(bucket_percentile(&b, 50.0), Some(1.75));
        // p10: rank 1 in [0, 1] holding 2: 0 + 1 × 1/2 = 0.5.
        assert_eq!(bucket_percentile(&b, 10.0), Some(0.5));
        // p70: rank 7 in (2, 4] holding ranks 6..8: 2 + 2 × 1/2 = 3.
        assert_eq!(bucket_percentile(&b, 70.0), Some(3.0));
        // p90: rank 9 in +Inf: the highest finite bound.
        assert_eq!(bucket_percentile(&b, 90.0), Some(4.0));
        assert_eq!(bucket_percentile(&[(Some(1.0), 0), (None, 0)], 50.0), None);
        assert_eq!(bucket_percentile(&[], 50.0), None);
        assert_eq!(bucket_percentile(&b, f64::NAN), None);
    }

    #[test]
    fn bucket_percentile_skips_empty_buckets() {
        // Nothing ≤ 1 s; rank 0 (p0) is the lower bound of the first non-empty bucket.
        let b = vec![(Some(1.0), 0), (Some(2.0), 4), (None, 4)];
        assert_eq!(bucket_percentile(&b, 0.0), Some(1.0));
        assert_eq!(bucket_percentile(&b, 100.0), Some(2.0));
    }

    #[test]
    fn detail_counts_failures_by_kind_and_keeps_the_latest_message() {
        use servebench_core::record_builder::RecordBuilder;
        let live = LiveMetrics::new();
        let failed = |kind, msg: &str| RecordBuilder::new(0).failed(kind, msg);
        live.request_ended(&failed(ErrorKind::Timeout, "stalled 30 s"));
        live.request_ended(&failed(ErrorKind::HttpStatus, "HTTP 503"));
        live.request_ended(&failed(ErrorKind::Timeout, "stalled again"));
        let d = live.detail();
        assert_eq!(d.failed_by_kind, vec![(Some(ErrorKind::HttpStatus), 1), (Some(ErrorKind::Timeout), 2)]);
        assert_eq!(d.latest_failure, Some((ErrorKind::Timeout, "stalled again".to_owned())));
        assert_eq!((d.queued, d.schedule_left_s), (None, None));
        assert_eq!(d.ttft.count, 0);
        assert_eq!(d.ttft.values, [None; 3]);
    }

    #[test]
    fn queued_is_due_by_the_schedule_minus_sent() {
        let live = LiveMetrics::new();
        // Offsets far in the past and far in the future of a clock started now.
        let clock = RunClock::start();
        live.set_schedule(clock, vec![0, 0, 0, 3_600_000_000].into());
        live.request_sent(0);
        let d = live.detail();
        assert_eq!(d.queued, Some(2));
        assert!(d.schedule_left_s.is_some_and(|s| s > 3000.0), "{:?}", d.schedule_left_s);
    }
}

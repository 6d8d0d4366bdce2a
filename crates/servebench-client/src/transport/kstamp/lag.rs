//! The clock mapping of a kernel receive timestamp and the read-lag statistics (pure: tested on
//! hand-made times).
//!
//! Mapping. The kernel stamps a packet with CLOCK_REALTIME; the run's clock is CLOCK_MONOTONIC
//! (`Instant`). Right after `recvmsg` returns, the reader takes CLOCK_REALTIME (`real_now`) and
//! then CLOCK_MONOTONIC (`user`); the read lag is `real_now − kernel` (both on one clock) and the
//! kernel time on the monotonic clock is `user − lag`. Every read re-syncs this way, so a step
//! of CLOCK_REALTIME (settimeofday, a leap second, an NTP step) can only affect bytes the kernel
//! received before the step and we read after it; NTP slewing changes both clocks' rates alike
//! and does not move their offset. The error of one mapping is the time between the two clock
//! reads (two vDSO calls, tens of ns; more only if the thread is preempted between them, and
//! then the mapped time is later, never earlier, than the truth). A negative lag or one above
//! [`MAX_LAG_NS`] can only be a clock step: the read keeps its user-space time and counts as a
//! clock anomaly.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A read lag above this is taken for a clock step, not a lag.
pub(crate) const MAX_LAG_NS: i128 = 10_000_000_000;

/// A kernel receive time mapped onto the monotonic clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mapped {
    /// The kernel time, and how long before the user-space read it was.
    Kernel { at: Instant, lag: Duration },
    /// The realtime clock stepped between the stamp and the read: the user-space time stands.
    Anomaly,
}

/// Maps `kernel_ns` (CLOCK_REALTIME ns of the kernel's stamp) given `real_now_ns` and `user`,
/// the realtime and monotonic readings taken, in that order, right after the read.
pub(crate) fn map(kernel_ns: i128, real_now_ns: i128, user: Instant) -> Mapped {
    let lag = real_now_ns - kernel_ns;
    if !(0..=MAX_LAG_NS).contains(&lag) {
        return Mapped::Anomaly;
    }
    let lag = Duration::from_nanos(lag as u64);
    match user.checked_sub(lag) {
        Some(at) => Mapped::Kernel { at, lag },
        None => Mapped::Anomaly,
    }
}

/// Sub-buckets per power of two: a bucket is at most 1/16 of its value wide.
const SUB: u64 = 16;
/// Buckets: exact below 16 µs, then 16 per power of two up to 2^40 µs.
const BUCKETS: usize = 16 + 37 * 16;

/// The bucket of `us`.
fn bucket(us: u64) -> usize {
    if us < SUB {
        return us as usize;
    }
    let e = 63 - u64::from(us.leading_zeros()); // >= 4
    let i = (e - 3) * SUB + ((us >> (e - 4)) & (SUB - 1));
    (i as usize).min(BUCKETS - 1)
}

/// The middle of bucket `i` (its value when exact), µs.
fn bucket_mid(i: usize) -> f64 {
    let i = i as u64;
    if i < SUB {
        return i as f64;
    }
    let e = i / SUB + 3;
    let lower = (SUB + i % SUB) << (e - 4);
    let width = 1u64 << (e - 4);
    lower as f64 + (width as f64 - 1.0) / 2.0
}

/// Read-lag counters of one client, shared by its connections (relaxed atomics: one add per
/// read, to its bucket; the maximum is written only when it grows; the kernel-stamped reads
/// are the buckets' sum).
#[derive(Debug)]
pub(crate) struct LagStats {
    user_only_reads: AtomicU64,
    anomalies: AtomicU64,
    max_us: AtomicU64,
    buckets: Box<[AtomicU64]>,
}

impl Default for LagStats {
    fn default() -> Self {
        LagStats {
            user_only_reads: AtomicU64::new(0),
            anomalies: AtomicU64::new(0),
            max_us: AtomicU64::new(0),
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl LagStats {
    /// A read that carried a kernel timestamp `lag` before the user-space read.
    pub(crate) fn kernel(&self, lag: Duration) {
        let us = lag.as_micros() as u64;
        self.buckets[bucket(us)].fetch_add(1, Ordering::Relaxed);
        if us > self.max_us.load(Ordering::Relaxed) {
            self.max_us.fetch_max(us, Ordering::Relaxed);
        }
    }

    /// A read that brought bytes without a kernel timestamp.
    pub(crate) fn user_only(&self) {
        self.user_only_reads.fetch_add(1, Ordering::Relaxed);
    }

    /// A read whose stamp was dropped as a clock step.
    pub(crate) fn anomaly(&self) {
        self.anomalies.fetch_add(1, Ordering::Relaxed);
    }

    /// Starts counting afresh (at the start of the measured phase).
    pub(crate) fn reset(&self) {
        for a in [&self.user_only_reads, &self.anomalies, &self.max_us] {
            a.store(0, Ordering::Relaxed);
        }
        for b in self.buckets.iter() {
            b.store(0, Ordering::Relaxed);
        }
    }

    /// The counters so far.
    pub(crate) fn snapshot(&self) -> ReadLag {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let kernel_reads = counts.iter().sum();
        ReadLag {
            kernel_reads,
            user_only_reads: self.user_only_reads.load(Ordering::Relaxed),
            clock_anomalies: self.anomalies.load(Ordering::Relaxed),
            p50_us: quantile(&counts, 0.50),
            p99_us: quantile(&counts, 0.99),
            max_us: (kernel_reads > 0).then(|| self.max_us.load(Ordering::Relaxed) as f64),
        }
    }
}

/// The `q` quantile of bucket counts (nearest rank, at the bucket's middle); `None` when empty.
fn quantile(counts: &[u64], q: f64) -> Option<f64> {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = ((q * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (i, &c) in counts.iter().enumerate() {
        seen += c;
        if seen >= rank {
            return Some(bucket_mid(i));
        }
    }
    None
}

/// The client's read lag (user-space read time − kernel receive time) over the reads so far:
/// docs/metrics.md, "Receive timestamps".
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadLag {
    /// Reads whose bytes carried a kernel receive timestamp.
    pub kernel_reads: u64,
    /// Reads that brought bytes without one (their user-space time is used).
    pub user_only_reads: u64,
    /// Stamps dropped because the realtime clock stepped (their user-space time is used).
    pub clock_anomalies: u64,
    /// Median read lag, µs (bucketed: within 1/32 of the value; exact below 16 µs).
    pub p50_us: Option<f64>,
    /// 99th percentile of the read lag, µs (bucketed likewise).
    pub p99_us: Option<f64>,
    /// Largest read lag, µs (exact).
    pub max_us: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_time_is_user_time_minus_realtime_lag() {
        let user = Instant::now() + Duration::from_secs(100);
        // Stamped 1,250 µs before the realtime reading taken after the read.
        let m = map(5_000_000_000, 5_001_250_000, user);
        assert_eq!(
            m,
            Mapped::Kernel { at: user - Duration::from_micros(1_250), lag: Duration::from_micros(1_250) }
        );
        // Same instant: zero lag.
        assert_eq!(map(7, 7, user), Mapped::Kernel { at: user, lag: Duration::ZERO });
    }

    #[test]
    fn clock_steps_are_anomalies_not_lags() {
        let user = Instant::now() + Duration::from_secs(100);
        // Realtime stepped back after the stamp: negative lag.
        assert_eq!(map(5_000_000_000, 4_999_000_000, user), Mapped::Anomaly);
        // Stepped forward by more than the bound.
        assert_eq!(map(0, MAX_LAG_NS + 1, user), Mapped::Anomaly);
        assert!(matches!(map(0, MAX_LAG_NS, user), Mapped::Kernel { .. }));
    }

    #[test]
    fn buckets_are_exact_below_16_and_within_a_sixteenth_above() {
        for us in 0..16 {
            assert_eq!(bucket(us), us as usize);
            assert_eq!(bucket_mid(bucket(us)), us as f64);
        }
        assert_eq!(bucket(16), 16);
        assert_eq!(bucket(31), 31);
        assert_eq!(bucket(32), 32);
        assert_eq!(bucket(33), 32); // 32..=33 share a bucket of width 2
        assert_eq!(bucket_mid(32), 32.5);
        for us in [17u64, 100, 1_000, 12_345, 1 << 30] {
            let mid = bucket_mid(bucket(us));
            assert!((mid - us as f64).abs() <= us as f64 / 32.0, "{us} -> {mid}");
        }
        assert_eq!(bucket(u64::MAX), BUCKETS - 1);
        let mut last = 0;
        for us in 0..100_000u64 {
            assert!(bucket(us) >= last);
            last = bucket(us);
        }
    }

    #[test]
    fn snapshot_quantiles_counts_and_max_on_hand_data() {
        let s = LagStats::default();
        assert_eq!(s.snapshot(), ReadLag::default());
        // 98 reads at 3 µs, one at 10 µs, one at 2,000 µs.
        for _ in 0..98 {
            s.kernel(Duration::from_micros(3));
        }
        s.kernel(Duration::from_micros(10));
        s.kernel(Duration::from_nanos(2_000_900));
        s.user_only();
        s.anomaly();
        let r = s.snapshot();
        assert_eq!((r.kernel_reads, r.user_only_reads, r.clock_anomalies), (100, 1, 1));
        assert_eq!(r.p50_us, Some(3.0));
        // Rank ceil(0.99 × 100) = 99: the 10 µs read.
        assert_eq!(r.p99_us, Some(10.0));
        assert_eq!(r.max_us, Some(2_000.0));
    }
}

//! Cancellation by design (`--request-cancellation-rate`, `--request-cancellation-delay`,
//! AIPerf's names): a seeded share of the requests is abandoned a fixed delay after its send
//! starts, to measure how the server recovers the capacity of abandoned streams
//! (docs/workloads.md, "Client-side cancellation").

use std::time::Duration;

/// Which requests are cancelled by design, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CancellationPlan {
    /// Percent of the requests chosen, in (0, 100].
    pub rate_percent: f64,
    /// From the start of a chosen request's send (after every client-side gate).
    pub delay: Duration,
    /// `--seed`.
    pub seed: u64,
}

impl CancellationPlan {
    /// Whether request `index` is chosen: a seeded draw per index, so the choice is the same
    /// whatever order requests run in, in every run with the same seed (and in every shard).
    pub fn chosen(&self, index: u64) -> bool {
        let u = (mix(self.seed ^ mix(index ^ 0x6361_6e63_656c)) >> 11) as f64 / (1u64 << 53) as f64;
        u * 100.0 < self.rate_percent
    }

    /// The delay after which request `index` is cancelled; `None` when it is not chosen.
    pub fn delay_for(&self, index: u64) -> Option<Duration> {
        self.chosen(index).then_some(self.delay)
    }
}

/// The run's cancellation plan (`None` without `--request-cancellation-rate`).
pub fn plan(cfg: &crate::config::RunConfig) -> Option<CancellationPlan> {
    cfg.load.cancellation.map(|(rate_percent, delay)| CancellationPlan {
        rate_percent,
        delay,
        seed: cfg.seed,
    })
}

/// SplitMix64's finalizer: a well-mixed 64-bit value of `x`.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(rate_percent: f64, seed: u64) -> CancellationPlan {
        CancellationPlan { rate_percent, delay: Duration::from_millis(500), seed }
    }

    #[test]
    fn cancellation_choice_is_seeded_and_per_index() {
        let a: Vec<bool> = (0..1000).map(|i| plan(25.0, 7).chosen(i)).collect();
        let again: Vec<bool> = (0..1000).rev().map(|i| plan(25.0, 7).chosen(i)).rev().collect();
        assert_eq!(a, again, "the same whatever the order of asking");
        let other: Vec<bool> = (0..1000).map(|i| plan(25.0, 8).chosen(i)).collect();
        assert_ne!(a, other, "another seed chooses others");
    }

    #[test]
    fn cancellation_share_follows_the_rate() {
        // 20 000 draws: the share is within 1.5 points of the rate (≈ 5 standard deviations).
        for rate in [1.0, 10.0, 50.0, 90.0] {
            let n = (0..20_000).filter(|&i| plan(rate, 1).chosen(i)).count();
            let share = n as f64 / 200.0;
            assert!((share - rate).abs() < 1.5, "rate {rate}: {share}");
        }
        assert!((0..1000).all(|i| plan(100.0, 3).chosen(i)), "100 % chooses every request");
        assert!((0..1000).all(|i| plan(100.0, 3).delay_for(i) == Some(Duration::from_millis(500))));
    }
}

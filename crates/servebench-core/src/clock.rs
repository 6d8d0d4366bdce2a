//! The run clock: one monotonic origin per run plus a wall-clock anchor taken at the same moment,
//! so records are offsets (µs) that shards and the simulator's ground-truth log can align.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// The wall clock now, µs since the Unix epoch (0 before it).
pub fn unix_now_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_micros() as u64).unwrap_or(0)
}

/// Monotonic origin of a run with its wall-clock anchor.
#[derive(Debug, Clone, Copy)]
pub struct RunClock {
    origin: Instant,
    wall_anchor_unix_us: u64,
}

impl RunClock {
    /// A clock whose origin is now.
    pub fn start() -> Self {
        Self::at(Instant::now())
    }

    /// A clock with the given monotonic origin; the wall anchor is derived from now.
    pub fn at(origin: Instant) -> Self {
        let now_mono = Instant::now();
        let now_wall = unix_now_us();
        let wall_anchor_unix_us = if now_mono >= origin {
            now_wall.saturating_sub(now_mono.duration_since(origin).as_micros() as u64)
        } else {
            now_wall + origin.duration_since(now_mono).as_micros() as u64
        };
        RunClock { origin, wall_anchor_unix_us }
    }

    /// The monotonic origin.
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// Wall-clock time of the origin, µs since the Unix epoch.
    pub fn wall_anchor_unix_us(&self) -> u64 {
        self.wall_anchor_unix_us
    }

    /// µs from the origin to `t` (0 if `t` is before the origin).
    pub fn offset_us(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_micros() as u64
    }

    /// µs from the origin to now.
    pub fn now_us(&self) -> u64 {
        self.offset_us(Instant::now())
    }

    /// The instant `offset_us` after the origin.
    pub fn instant_at(&self, offset_us: u64) -> Instant {
        self.origin + std::time::Duration::from_micros(offset_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_relative_to_origin() {
        let c = RunClock::start();
        let t = c.instant_at(1_500);
        assert_eq!(c.offset_us(t), 1_500);
        assert_eq!(c.offset_us(c.origin()), 0);
        assert!(c.wall_anchor_unix_us() > 1_600_000_000_000_000);
    }
}

//! HTTP phase timing over a run (docs/metrics.md, "HTTP phases"): per phase, the mean, median
//! and p99 over the completed requests that had the phase, and how many requests opened their
//! connection or reused one.

use serde::{Deserialize, Serialize};

use crate::compact_records::RecordSet;
use crate::record::{HttpPhases, Outcome, RequestRecord};
use crate::stats::{mean, percentile_sorted};
use std::borrow::Borrow;

/// One phase over the requests that had it, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PhaseStats {
    /// Requests that had the phase.
    pub count: u64,
    pub mean_ms: f64,
    pub median_ms: f64,
    pub p99_ms: f64,
}

impl PhaseStats {
    /// The statistics of `us` (µs values, any order, sorted here); `None` when empty.
    fn of_us<T: Ord + Copy>(us: &mut [UsAsMs<T>]) -> Option<PhaseStats>
    where
        f64: From<UsAsMs<T>>,
    {
        if us.is_empty() {
            return None;
        }
        us.sort_unstable();
        Some(PhaseStats {
            count: us.len() as u64,
            mean_ms: mean(us),
            median_ms: percentile_sorted(us, 50.0),
            p99_ms: percentile_sorted(us, 99.0),
        })
    }
}

/// A value in µs that the statistics read in ms (`v / 1000`, as a copy of the values in `f64`
/// would hold them): no such copy is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct UsAsMs<T>(T);

impl From<UsAsMs<u32>> for f64 {
    fn from(v: UsAsMs<u32>) -> f64 {
        f64::from(v.0) / 1000.0
    }
}

impl From<UsAsMs<u64>> for f64 {
    fn from(v: UsAsMs<u64>) -> f64 {
        v.0 as f64 / 1000.0
    }
}

/// The result's `http_phases` block. Set-up phases (`dns`, `connect`, `tls`) are durations;
/// the others are times from the start of the request's write (`dispatched`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HttpPhaseSummary {
    /// Completed requests with phase timing.
    pub requests: u64,
    /// Of them, requests that opened their own connection.
    pub new_connections: u64,
    /// Of them, requests sent on a connection taken from the pool.
    pub reused_connections: u64,
    pub dns: Option<PhaseStats>,
    pub connect: Option<PhaseStats>,
    pub tls: Option<PhaseStats>,
    pub request_written: Option<PhaseStats>,
    pub first_byte: Option<PhaseStats>,
    pub response_head: Option<PhaseStats>,
    pub first_token: Option<PhaseStats>,
    pub last_byte: Option<PhaseStats>,
}

impl HttpPhaseSummary {
    /// The phases in timeline order, with their result keys.
    pub fn phases(&self) -> [(&'static str, Option<PhaseStats>); 8] {
        [
            ("dns", self.dns),
            ("connect", self.connect),
            ("tls", self.tls),
            ("request_written", self.request_written),
            ("first_byte", self.first_byte),
            ("response_head", self.response_head),
            ("first_token", self.first_token),
            ("last_byte", self.last_byte),
        ]
    }
}

/// Phase values (µs) of the completed requests, one vector per phase: the phases a record
/// keeps as `u32` in 4 bytes, the times from dispatch in 8. Each is sized for every record at
/// once (pages are touched only as values arrive: no doubling and copying on the way).
struct Columns {
    dns: Vec<UsAsMs<u32>>,
    connect: Vec<UsAsMs<u32>>,
    tls: Vec<UsAsMs<u32>>,
    written: Vec<UsAsMs<u32>>,
    first_byte: Vec<UsAsMs<u32>>,
    head: Vec<UsAsMs<u64>>,
    first_token: Vec<UsAsMs<u64>>,
    last_byte: Vec<UsAsMs<u32>>,
}

impl Columns {
    fn with_capacity(n: usize) -> Columns {
        Columns {
            dns: Vec::with_capacity(n),
            connect: Vec::with_capacity(n),
            tls: Vec::with_capacity(n),
            written: Vec::with_capacity(n),
            first_byte: Vec::with_capacity(n),
            head: Vec::with_capacity(n),
            first_token: Vec::with_capacity(n),
            last_byte: Vec::with_capacity(n),
        }
    }

    fn push(&mut self, r: &RequestRecord, p: &HttpPhases) {
        let from_dispatch = |t: Option<u64>| Some(UsAsMs(t?.saturating_sub(r.dispatched_us?)));
        let phases = [
            (&mut self.dns, p.dns_us),
            (&mut self.connect, p.connect_us),
            (&mut self.tls, p.tls_us),
            (&mut self.written, p.written_us),
            (&mut self.first_byte, p.first_byte_us),
            (&mut self.last_byte, p.last_byte_us),
        ];
        for (col, v) in phases {
            col.extend(v.map(UsAsMs));
        }
        self.head.extend(from_dispatch(r.headers_us));
        self.first_token.extend(from_dispatch(r.first_token_us));
    }
}

/// The `http_phases` block of `records`: `None` when no completed request has phase timing
/// (records written before phases existed, or no request completed).
pub fn http_phases<S: RecordSet + ?Sized>(records: &S) -> Option<HttpPhaseSummary> {
    let mut cols = Columns::with_capacity(records.record_count());
    let (mut requests, mut reused) = (0u64, 0u64);
    for r in records.records() {
        let r = r.borrow();
        if r.outcome != Outcome::Completed {
            continue;
        }
        let Some(p) = &r.phases else { continue };
        requests += 1;
        reused += u64::from(p.reused);
        cols.push(r, p);
    }
    if requests == 0 {
        return None;
    }
    Some(HttpPhaseSummary {
        requests,
        new_connections: requests - reused,
        reused_connections: reused,
        dns: PhaseStats::of_us(&mut cols.dns),
        connect: PhaseStats::of_us(&mut cols.connect),
        tls: PhaseStats::of_us(&mut cols.tls),
        request_written: PhaseStats::of_us(&mut cols.written),
        first_byte: PhaseStats::of_us(&mut cols.first_byte),
        response_head: PhaseStats::of_us(&mut cols.head),
        first_token: PhaseStats::of_us(&mut cols.first_token),
        last_byte: PhaseStats::of_us(&mut cols.last_byte),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(dispatched: u64, head: u64, phases: HttpPhases) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 1, 1);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(dispatched);
        r.headers_us = Some(head);
        r.phases = Some(phases);
        r
    }

    /// Three completed requests, one new (DNS 2 ms, connect 1 ms, TLS 4 ms) and two reused;
    /// a failed request with phases is left out.
    #[test]
    fn phase_statistics_cover_the_completed_requests_that_had_each_phase() {
        let new = HttpPhases {
            reused: false,
            dns_us: Some(2_000),
            connect_us: Some(1_000),
            tls_us: Some(4_000),
            written_us: Some(100),
            first_byte_us: Some(10_000),
            last_byte_us: Some(50_000),
        };
        let reused = |written, first_byte, last_byte| HttpPhases {
            reused: true,
            written_us: Some(written),
            first_byte_us: Some(first_byte),
            last_byte_us: last_byte,
            ..HttpPhases::default()
        };
        let mut a = rec(1_000, 12_000, new);
        a.first_token_us = Some(21_000);
        let b = rec(0, 20_000, reused(300, 20_000, Some(70_000)));
        let mut c = rec(5_000, 35_000, reused(200, 30_000, None));
        c.first_token_us = Some(45_000);
        let mut failed = rec(0, 1, HttpPhases { connect_us: Some(99_000), ..new });
        failed.outcome = Outcome::Failed;
        let s = http_phases(&[a, b, c, failed]).unwrap();
        assert_eq!((s.requests, s.new_connections, s.reused_connections), (3, 1, 2));
        let one = |ms| Some(PhaseStats { count: 1, mean_ms: ms, median_ms: ms, p99_ms: ms });
        assert_eq!(s.dns, one(2.0));
        assert_eq!(s.connect, one(1.0));
        assert_eq!(s.tls, one(4.0));
        // written 0.1, 0.2, 0.3 ms: mean 0.2, median 0.2, p99 = 0.2 + 0.98 × 0.1.
        let w = s.request_written.unwrap();
        assert_eq!(w.count, 3);
        assert!((w.mean_ms - 0.2).abs() < 1e-12 && (w.median_ms - 0.2).abs() < 1e-12);
        assert!((w.p99_ms - 0.298).abs() < 1e-12, "{w:?}");
        // Head − dispatched: 11, 20, 30 ms.
        let h = s.response_head.unwrap();
        assert!((h.mean_ms - 61.0 / 3.0).abs() < 1e-12 && h.median_ms == 20.0, "{h:?}");
        assert!((h.p99_ms - (20.0 + 0.98 * 10.0)).abs() < 1e-9, "{h:?}");
        // First token − dispatched: 20 and 40 ms (b has none).
        let t = s.first_token.unwrap();
        assert_eq!((t.count, t.mean_ms, t.median_ms), (2, 30.0, 30.0));
        assert!((t.p99_ms - 39.8).abs() < 1e-9, "{t:?}");
        // c's body was not read to its end: two last bytes, 50 and 70 ms.
        assert_eq!(s.last_byte.unwrap().count, 2);
        assert_eq!(s.last_byte.unwrap().mean_ms, 60.0);
        assert_eq!(s.first_byte.unwrap().median_ms, 20.0);
    }

    #[test]
    fn no_completed_request_with_phases_gives_no_block() {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 1, 1);
        r.outcome = Outcome::Completed;
        assert_eq!(http_phases(&[r]), None, "records written before phases existed");
        assert_eq!(http_phases::<[RequestRecord]>(&[]), None);
    }

    #[test]
    fn phases_are_compact_in_records_and_absent_ones_are_left_out() {
        let p = HttpPhases { reused: true, written_us: Some(12), ..HttpPhases::default() };
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"reused":true,"written_us":12}"#);
        assert_eq!(HttpPhases::span_us(10, 5), 0);
        assert_eq!(HttpPhases::span_us(0, u64::MAX), u32::MAX);
    }

    /// The statistics as a copy of the values in ms computed them, bit for bit.
    fn stats_of_ms_copy(mut us: Vec<u64>) -> PhaseStats {
        us.sort_unstable();
        let ms: Vec<f64> = us.iter().map(|&v| v as f64 / 1000.0).collect();
        PhaseStats {
            count: ms.len() as u64,
            mean_ms: mean(&ms),
            median_ms: percentile_sorted(&ms, 50.0),
            p99_ms: percentile_sorted(&ms, 99.0),
        }
    }

    fn bits(s: PhaseStats) -> (u64, u64, u64, u64) {
        (s.count, s.mean_ms.to_bits(), s.median_ms.to_bits(), s.p99_ms.to_bits())
    }

    proptest::proptest! {
        #[test]
        fn phase_statistics_have_the_bits_of_a_copy_in_ms(
            narrow in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..60),
            wide in proptest::collection::vec(proptest::prelude::any::<u64>(), 1..60),
        ) {
            let want = stats_of_ms_copy(narrow.iter().map(|&v| u64::from(v)).collect());
            let mut n: Vec<UsAsMs<u32>> = narrow.into_iter().map(UsAsMs).collect();
            proptest::prop_assert_eq!(bits(PhaseStats::of_us(&mut n).unwrap()), bits(want));
            let want = stats_of_ms_copy(wide.clone());
            let mut w: Vec<UsAsMs<u64>> = wide.into_iter().map(UsAsMs).collect();
            proptest::prop_assert_eq!(bits(PhaseStats::of_us(&mut w).unwrap()), bits(want));
        }
    }
}

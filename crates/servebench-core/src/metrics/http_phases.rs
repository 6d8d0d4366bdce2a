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
    /// The statistics of `us` (µs values, any order); `None` when empty.
    pub fn of_us(us: &mut [u64]) -> Option<PhaseStats> {
        if us.is_empty() {
            return None;
        }
        us.sort_unstable();
        let ms: Vec<f64> = us.iter().map(|&v| v as f64 / 1000.0).collect();
        Some(PhaseStats {
            count: ms.len() as u64,
            mean_ms: mean(&ms),
            median_ms: percentile_sorted(&ms, 50.0),
            p99_ms: percentile_sorted(&ms, 99.0),
        })
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

/// Phase values (µs) of the completed requests, one vector per phase.
#[derive(Default)]
struct Columns {
    dns: Vec<u64>,
    connect: Vec<u64>,
    tls: Vec<u64>,
    written: Vec<u64>,
    first_byte: Vec<u64>,
    head: Vec<u64>,
    first_token: Vec<u64>,
    last_byte: Vec<u64>,
}

impl Columns {
    fn push(&mut self, r: &RequestRecord, p: &HttpPhases) {
        let from_dispatch = |t: Option<u64>| Some(t?.saturating_sub(r.dispatched_us?));
        let pairs = [
            (&mut self.dns, p.dns_us.map(u64::from)),
            (&mut self.connect, p.connect_us.map(u64::from)),
            (&mut self.tls, p.tls_us.map(u64::from)),
            (&mut self.written, p.written_us.map(u64::from)),
            (&mut self.first_byte, p.first_byte_us.map(u64::from)),
            (&mut self.head, from_dispatch(r.headers_us)),
            (&mut self.first_token, from_dispatch(r.first_token_us)),
            (&mut self.last_byte, p.last_byte_us.map(u64::from)),
        ];
        for (col, v) in pairs {
            col.extend(v);
        }
    }
}

/// The `http_phases` block of `records`: `None` when no completed request has phase timing
/// (records written before phases existed, or no request completed).
pub fn http_phases<S: RecordSet + ?Sized>(records: &S) -> Option<HttpPhaseSummary> {
    let mut cols = Columns::default();
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
}

//! Comparing the client's records with the simulator's ground-truth log, request by request
//! (pure; `servebench calibrate` and tests use it).
//!
//! For every completed request found in both, with times of each side on its own monotonic
//! clock (only durations are compared, so no alignment is needed):
//! - TTFT: client `first_token_us − dispatched_us` vs simulator `event_us[0] − received_us`;
//! - ITL: client event gaps vs simulator send gaps, when both saw the same number of events;
//! - E2EL: client `done_us − dispatched_us` vs simulator `done_us − received_us`.
//!
//! The error of a statistic is the statistic of the measured values minus the same statistic
//! of the true values (mean − mean, p99 − p99): what a user would see as the difference
//! between the reported number and the number the server produced.
//!
//! When both sides give their clock's wall-clock origin, the *intake delay* is also computed:
//! simulator `received_us` − client `dispatched_us` on one wall-clock line — the time a sent
//! request waited before the simulator's handler took it (its accept/read queue when a burst
//! arrives). The simulator's TTFT starts at its handler, the client's at its send, so this
//! delay is part of the TTFT error although it is server-side queueing a real client should
//! and does measure.

use servebench_report::fmt::us_to_ms;
use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use servebench_core::stats::{mean, percentile};
use servebench_core::{BenchError, Outcome, RequestRecord, Result};

/// One line of the simulator's `--ground-truth` log (the fields used here).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct TruthLine {
    pub request_id: String,
    pub received_us: u64,
    pub event_us: Vec<u64>,
    pub done_us: Option<u64>,
    /// Wall-clock time of the simulator clock's origin (µs since the Unix epoch).
    #[serde(default)]
    pub origin_unix_us: Option<u64>,
}

/// Reads a ground-truth log into a map by request id.
pub fn read_truth(path: &Path) -> Result<HashMap<String, TruthLine>> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    let mut map = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let t: TruthLine = serde_json::from_str(line).map_err(|e| BenchError::DatasetFile {
            path: path.display().to_string(),
            location: format!("line {}", n + 1),
            problem: format!("not a ground-truth record ({e})"),
            fix: "pass the file `servebench sim --ground-truth` wrote".into(),
            source: Some(Box::new(e)),
        })?;
        map.insert(t.request_id.clone(), t);
    }
    Ok(map)
}

/// Measured − truth for one set of records, in ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TruthErrors {
    /// Requests compared (completed and present in the truth log).
    pub matched: usize,
    pub ttft_mean_err_ms: f64,
    pub ttft_p99_err_ms: f64,
    /// Gaps compared.
    pub itl_gaps: usize,
    pub itl_mean_err_ms: f64,
    pub itl_p99_err_ms: f64,
    pub e2el_mean_err_ms: f64,
    /// Mean of the true TTFT (what the simulator produced), for reference.
    pub truth_ttft_mean_ms: f64,
    /// Mean of the true ITL.
    pub truth_itl_mean_ms: f64,
    /// Mean intake delay in ms (see the module docs), when both wall-clock origins are known.
    pub intake_mean_ms: Option<f64>,
}

/// Compares `records` (whose run clock started at `client_origin_unix_us`, when known) with
/// `truth` (see the module docs).
pub fn compare(
    records: &[RequestRecord],
    client_origin_unix_us: Option<u64>,
    truth: &HashMap<String, TruthLine>,
) -> TruthErrors {
    let (mut m_ttft, mut t_ttft, mut m_itl, mut t_itl, mut m_e2e, mut t_e2e) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut intake = Vec::new();
    for r in records.iter().filter(|r| r.outcome == Outcome::Completed) {
        let Some(t) = truth.get(&r.request_id) else { continue };
        let (Some(sent), Some(first), Some(&t_first)) =
            (r.dispatched_us, r.first_token_us, t.event_us.first())
        else {
            continue;
        };
        m_ttft.push(us_to_ms(first.saturating_sub(sent)));
        t_ttft.push(us_to_ms(t_first.saturating_sub(t.received_us)));
        if let (Some(c0), Some(s0)) = (client_origin_unix_us, t.origin_unix_us) {
            let received = (s0 + t.received_us) as f64;
            intake.push((received - (c0 + sent) as f64) / 1000.0);
        }
        let gaps = &r.token_events.gaps_us;
        if gaps.len() + 1 == t.event_us.len() {
            m_itl.extend(gaps.iter().map(|&g| us_to_ms(u64::from(g))));
            t_itl.extend(t.event_us.windows(2).map(|w| us_to_ms(w[1].saturating_sub(w[0]))));
        }
        if let (Some(done), Some(t_done)) = (r.done_us, t.done_us) {
            m_e2e.push(us_to_ms(done.saturating_sub(sent)));
            t_e2e.push(us_to_ms(t_done.saturating_sub(t.received_us)));
        }
    }
    let p99 = |v: &[f64]| if v.is_empty() { 0.0 } else { percentile(v, 99.0) };
    TruthErrors {
        matched: m_ttft.len(),
        ttft_mean_err_ms: mean(&m_ttft) - mean(&t_ttft),
        ttft_p99_err_ms: p99(&m_ttft) - p99(&t_ttft),
        itl_gaps: m_itl.len(),
        itl_mean_err_ms: mean(&m_itl) - mean(&t_itl),
        itl_p99_err_ms: p99(&m_itl) - p99(&t_itl),
        e2el_mean_err_ms: mean(&m_e2e) - mean(&t_e2e),
        truth_ttft_mean_ms: mean(&t_ttft),
        truth_itl_mean_ms: mean(&t_itl),
        intake_mean_ms: (!intake.is_empty()).then(|| mean(&intake)),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn rec(id: &str, sent: u64, first: u64, gaps: Vec<u32>, done: u64) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, id.into(), 0, 0, 0);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(sent);
        r.first_token_us = Some(first);
        r.token_events.gaps_us = gaps;
        r.done_us = Some(done);
        r
    }

    fn truth(id: &str, received: u64, events: Vec<u64>, done: u64) -> (String, TruthLine) {
        (
            id.into(),
            TruthLine {
                request_id: id.into(),
                received_us: received,
                event_us: events,
                done_us: Some(done),
                origin_unix_us: Some(1_000_000),
            },
        )
    }

    #[test]
    fn errors_are_statistics_of_measured_minus_truth() {
        // Request a: measured TTFT 52 ms (truth 50), gaps 11, 9 (truth 10, 10), E2EL 73 (truth 70).
        // Request b: measured TTFT 51 ms (truth 50), gaps 10, 12 (truth 10, 10), E2EL 74 (truth 70).
        let records = vec![
            rec("a", 1_000, 53_000, vec![11_000, 9_000], 74_000),
            rec("b", 0, 51_000, vec![10_000, 12_000], 74_000),
            rec("not-in-truth", 0, 1, vec![], 2),
        ];
        let truth: HashMap<_, _> = [
            truth("a", 500, vec![50_500, 60_500, 70_500], 70_500),
            truth("b", 7_000, vec![57_000, 67_000, 77_000], 77_000),
        ]
        .into_iter()
        .collect();
        // The client's clock started 2 ms before the simulator's: a, sent at 1 ms client time
        // = −1 ms on the simulator's clock and received at 0.5 ms, waited 1.5 ms; b, sent at
        // −2 ms and received at 7 ms, waited 9 ms; mean 5.25 ms.
        let e = compare(&records, Some(998_000), &truth);
        assert_eq!(e.intake_mean_ms, Some(5.25), "{e:?}");
        assert_eq!(compare(&records, None, &truth).intake_mean_ms, None);
        assert_eq!(e.matched, 2);
        assert!((e.ttft_mean_err_ms - 1.5).abs() < 1e-9, "{e:?}");
        // p99 of [51, 52] = 51.99; truth p99 = 50.
        assert!((e.ttft_p99_err_ms - 1.99).abs() < 1e-9, "{e:?}");
        assert_eq!(e.itl_gaps, 4);
        assert!((e.itl_mean_err_ms - 0.5).abs() < 1e-9);
        // p99 of [9, 10, 11, 12] = 11.97; truth 10.
        assert!((e.itl_p99_err_ms - 1.97).abs() < 1e-9, "{e:?}");
        assert!((e.e2el_mean_err_ms - 3.5).abs() < 1e-9);
        assert!((e.truth_ttft_mean_ms - 50.0).abs() < 1e-9);
    }

    #[test]
    fn gap_count_mismatch_skips_itl_only() {
        let records = vec![rec("a", 0, 50_000, vec![10_000], 60_000)];
        let truth: HashMap<_, _> =
            [truth("a", 0, vec![50_000, 55_000, 60_000], 60_000)].into_iter().collect();
        let e = compare(&records, None, &truth);
        assert_eq!((e.matched, e.itl_gaps), (1, 0));
    }
}

//! The summary of `--probe-request-rate` probes (vLLM 0.33's keys): how many completed and
//! failed, and the median, p99 and largest end-to-end latency of the completed ones. vLLM
//! writes the keys only when at least one probe completed; servebench writes them whenever
//! probes were sent, with null latencies when none completed (a metric without data is null,
//! never 0).

use serde_json::{Map, Value};
use servebench_core::metrics::RequestTimes;
use servebench_core::record::{Outcome, RequestRecord};
use servebench_core::stats::percentile;
use std::fmt::Write as _;

/// The probes of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSummary {
    pub completed: u64,
    /// Probes that did not complete (failed or cancelled).
    pub failed: u64,
    pub median_e2el_ms: Option<f64>,
    pub p99_e2el_ms: Option<f64>,
    pub max_e2el_ms: Option<f64>,
}

impl ProbeSummary {
    /// The summary of `probes`; None when no probe was sent.
    pub fn of(probes: &[RequestRecord]) -> Option<ProbeSummary> {
        if probes.is_empty() {
            return None;
        }
        let e2el: Vec<f64> = probes
            .iter()
            .filter(|r| r.outcome == Outcome::Completed)
            .filter_map(|r| RequestTimes::of(r).e2el_us)
            .map(|us| us as f64 / 1000.0)
            .collect();
        let completed = probes.iter().filter(|r| r.outcome == Outcome::Completed).count() as u64;
        let has = !e2el.is_empty();
        Some(ProbeSummary {
            completed,
            failed: probes.len() as u64 - completed,
            median_e2el_ms: has.then(|| percentile(&e2el, 50.0)),
            p99_e2el_ms: has.then(|| percentile(&e2el, 99.0)),
            max_e2el_ms: e2el.iter().copied().reduce(f64::max),
        })
    }

    /// The console block, as vLLM prints it (latencies as "n/a" when no probe completed).
    pub fn console_block(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{:-^50}", "Probe Requests");
        crate::fmt::row_int(&mut out, "Probe requests completed:", self.completed);
        crate::fmt::row_int(&mut out, "Probe requests failed:", self.failed);
        for (label, v) in [
            ("Median probe E2EL (ms):", self.median_e2el_ms),
            ("P99 probe E2EL (ms):", self.p99_e2el_ms),
            ("Max probe E2EL (ms):", self.max_e2el_ms),
        ] {
            match v {
                Some(v) => crate::fmt::row_f2(&mut out, label, v),
                None => crate::fmt::row_int(&mut out, label, "n/a"),
            }
        }
        out
    }

    /// Adds the `probe_*` keys to a result object.
    pub fn add_to(&self, o: &mut Map<String, Value>) {
        o.insert("probe_completed".into(), Value::from(self.completed));
        o.insert("probe_failed".into(), Value::from(self.failed));
        o.insert("probe_median_e2el_ms".into(), self.median_e2el_ms.into());
        o.insert("probe_p99_e2el_ms".into(), self.p99_e2el_ms.into());
        o.insert("probe_max_e2el_ms".into(), self.max_e2el_ms.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::record::{ErrorKind, RequestError};

    fn probe(i: u64, e2el_ms: Option<u64>) -> RequestRecord {
        let mut r = RequestRecord::scheduled(i, format!("p-{i}"), i * 1000, 1, 1);
        r.dispatched_us = Some(i * 1000);
        match e2el_ms {
            Some(ms) => {
                r.outcome = Outcome::Completed;
                r.first_token_us = Some(i * 1000 + 1);
                r.last_token_us = r.first_token_us;
                r.done_us = Some(i * 1000 + ms * 1000);
                r.token_event_count = 1;
            }
            None => {
                r.outcome = Outcome::Failed;
                r.error =
                    Some(RequestError { kind: ErrorKind::HttpStatus, message: "503".into(), cause: None });
            }
        }
        r
    }

    #[test]
    fn summary_counts_and_latencies_of_completed_probes() {
        assert_eq!(ProbeSummary::of(&[]), None);
        let s =
            ProbeSummary::of(&[probe(0, Some(10)), probe(1, Some(30)), probe(2, None), probe(3, Some(20))])
                .unwrap();
        assert_eq!((s.completed, s.failed), (3, 1));
        assert_eq!(s.median_e2el_ms, Some(20.0));
        assert_eq!(s.max_e2el_ms, Some(30.0));
        assert!((s.p99_e2el_ms.unwrap() - 29.8).abs() < 1e-9, "{:?}", s.p99_e2el_ms);
        let mut o = Map::new();
        s.add_to(&mut o);
        assert_eq!(o["probe_completed"], 3);
        assert_eq!(o["probe_max_e2el_ms"], 30.0);
        assert!(s.console_block().contains("Probe requests failed:                   1"));
    }

    #[test]
    fn no_completed_probe_gives_null_latencies_not_zero() {
        let s = ProbeSummary::of(&[probe(0, None)]).unwrap();
        assert_eq!((s.completed, s.failed, s.median_e2el_ms, s.max_e2el_ms), (0, 1, None, None));
        let mut o = Map::new();
        s.add_to(&mut o);
        assert!(o["probe_median_e2el_ms"].is_null());
        assert!(s.console_block().contains("n/a"));
    }
}

//! What a run that stopped early says about it: the result's `early_stop` block and its
//! console line (docs/metrics.md, "Early stop").

use super::{ErrorRateEvidence, SaturationEvidence};
use serde::{Deserialize, Serialize};

/// Why the run stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EarlyStopReason {
    /// `--detect-saturation`: arrivals persistently above finishes, in flight growing.
    Saturation,
    /// `--max-error-rate` (windowed) or `--max-errors` (absolute).
    ErrorRate,
}

impl EarlyStopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            EarlyStopReason::Saturation => "saturation",
            EarlyStopReason::ErrorRate => "error_rate",
        }
    }
}

/// The result's `early_stop` block. Times are seconds since the run's start; evidence that
/// does not belong to the reason is `None` (JSON `null`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarlyStopReport {
    pub reason: EarlyStopReason,
    /// Saturation: the first of the consecutive positive tests; errors: when the limit was
    /// exceeded.
    pub detected_at_s: f64,
    /// When the run stopped releasing requests.
    pub stopped_at_s: f64,
    /// The window the evidence is over, seconds (errors: from the first of the last N finished
    /// requests to the last).
    pub window_s: f64,
    /// Requests due per second over the window (saturation).
    pub arrival_rate: Option<f64>,
    /// Requests finished per second over the window (saturation).
    pub finish_rate: Option<f64>,
    /// In flight (due, not finished) at the window's first and last sample (saturation).
    pub in_flight_start: Option<u64>,
    pub in_flight_end: Option<u64>,
    /// Least-squares growth of in flight over the window, requests/s (saturation).
    pub in_flight_growth_per_s: Option<f64>,
    /// `rate` (`--max-error-rate`, over the last `finished_in_window`) or `count` (`--max-errors`).
    pub error_limit: Option<String>,
    /// Failed requests the limit counted, and the finished requests they are among.
    pub failed: Option<u64>,
    pub finished_in_window: Option<u64>,
    /// `failed / finished_in_window`.
    pub error_rate: Option<f64>,
    /// Requests of the workload never sent because of the stop (records `cancelled_by:
    /// early_stop` without `dispatched_us`).
    pub requests_not_sent: u64,
    /// `drained` (in-flight requests ran to their end) or `cancelled` (`--on-interrupt cancel`).
    pub in_flight: String,
    /// Requests in flight at the stop that were cancelled (0 when drained).
    pub cancelled_in_flight: u64,
}

impl EarlyStopReport {
    /// A saturation stop raised at `stopped_at_s`.
    pub fn saturation(ev: &SaturationEvidence, stopped_at_s: f64) -> Self {
        EarlyStopReport {
            reason: EarlyStopReason::Saturation,
            detected_at_s: ev.detected_at_s,
            stopped_at_s,
            window_s: ev.window_s,
            arrival_rate: Some(ev.arrival_rate),
            finish_rate: Some(ev.finish_rate),
            in_flight_start: Some(ev.in_flight_start),
            in_flight_end: Some(ev.in_flight_end),
            in_flight_growth_per_s: Some(ev.in_flight_slope_per_s),
            ..Self::empty(EarlyStopReason::Saturation)
        }
    }

    /// An error stop raised at `at_s`, its window `window_s` long.
    pub fn errors(ev: &ErrorRateEvidence, at_s: f64, window_s: f64) -> Self {
        EarlyStopReport {
            detected_at_s: at_s,
            stopped_at_s: at_s,
            window_s,
            error_limit: Some(if ev.absolute { "count" } else { "rate" }.to_owned()),
            failed: Some(ev.failed),
            finished_in_window: Some(ev.over),
            error_rate: Some(ev.rate),
            ..Self::empty(EarlyStopReason::ErrorRate)
        }
    }

    fn empty(reason: EarlyStopReason) -> Self {
        EarlyStopReport {
            reason,
            detected_at_s: 0.0,
            stopped_at_s: 0.0,
            window_s: 0.0,
            arrival_rate: None,
            finish_rate: None,
            in_flight_start: None,
            in_flight_end: None,
            in_flight_growth_per_s: None,
            error_limit: None,
            failed: None,
            finished_in_window: None,
            error_rate: None,
            requests_not_sent: 0,
            in_flight: "drained".to_owned(),
            cancelled_in_flight: 0,
        }
    }

    /// One console line: why, from when, and what was not sent.
    pub fn console_line(&self) -> String {
        let why = match self.reason {
            EarlyStopReason::Saturation => format!(
                "server saturated from {:.1} s: over the {:.1}-s window {:.2} requests/s arrived and {:.2}/s \
                 finished, in flight {} -> {} ({:+.2}/s)",
                self.detected_at_s,
                self.window_s,
                self.arrival_rate.unwrap_or(f64::NAN),
                self.finish_rate.unwrap_or(f64::NAN),
                self.in_flight_start.unwrap_or(0),
                self.in_flight_end.unwrap_or(0),
                self.in_flight_growth_per_s.unwrap_or(f64::NAN),
            ),
            // The time is when the limit was exceeded (the evidence's end), not where the
            // evidence starts: the rate's window started `window_s` before it, the count's at
            // the run's start.
            EarlyStopReason::ErrorRate if self.error_limit.as_deref() == Some("count") => format!(
                "errors: {} of the {} requests finished so far failed ({:.1}%, limit by count, over the \
                 whole run), exceeded at {:.1} s",
                self.failed.unwrap_or(0),
                self.finished_in_window.unwrap_or(0),
                self.error_rate.unwrap_or(f64::NAN) * 100.0,
                self.detected_at_s,
            ),
            EarlyStopReason::ErrorRate => format!(
                "errors: {} of the last {} finished requests failed ({:.1}%, limit by rate; they finished \
                 from {:.2} s to {:.2} s), exceeded at {:.1} s",
                self.failed.unwrap_or(0),
                self.finished_in_window.unwrap_or(0),
                self.error_rate.unwrap_or(f64::NAN) * 100.0,
                (self.detected_at_s - self.window_s).max(0.0),
                self.detected_at_s,
                self.detected_at_s,
            ),
        };
        format!(
            "Early stop ({}): {why}; stopped at {:.1} s, {} requests not sent, in-flight requests {}",
            self.reason.as_str(),
            self.stopped_at_s,
            self.requests_not_sent,
            self.in_flight
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_keeps_only_the_evidence_of_its_reason() {
        let ev = ErrorRateEvidence { failed: 6, over: 10, rate: 0.6, absolute: false };
        let r = EarlyStopReport::errors(&ev, 4.5, 2.0);
        let v = serde_json::to_value(&r).unwrap_or_default();
        assert_eq!(v["reason"], "error_rate");
        assert_eq!((v["failed"].as_u64(), v["finished_in_window"].as_u64()), (Some(6), Some(10)));
        assert!(v["arrival_rate"].is_null() && v["in_flight_growth_per_s"].is_null());
        assert!(
            r.console_line().contains("6 of the last 10 finished requests failed (60.0%"),
            "{}",
            r.console_line()
        );
    }

    /// Pins what each time of an error stop's console line is. It said "errors from 0.7 s" for
    /// both limits: for `--max-errors` (a count over the whole run) and for the rate (whose
    /// window of finished requests started at 0.10 s while it said "from 0.4 s") it was the
    /// time the limit was exceeded.
    #[test]
    fn an_error_stop_line_says_when_the_limit_was_exceeded_and_what_its_window_is() {
        let ev = ErrorRateEvidence { failed: 6, over: 10, rate: 0.6, absolute: false };
        let line = EarlyStopReport::errors(&ev, 0.4, 0.3).console_line();
        assert!(
            line.contains("limit by rate; they finished from 0.10 s to 0.40 s), exceeded at 0.4 s"),
            "{line}"
        );
        assert!(!line.contains("from 0.4 s"), "{line}");
        let ev = ErrorRateEvidence { failed: 2, over: 33, rate: 2.0 / 33.0, absolute: true };
        let line = EarlyStopReport::errors(&ev, 0.7, 0.6).console_line();
        assert!(
            line.contains("errors: 2 of the 33 requests finished so far failed (6.1%, limit by count, over the whole run), exceeded at 0.7 s"),
            "{line}"
        );
    }
}

//! The run's `validity` block and console line (docs/metrics.md, "Run validity"): the rules of
//! `servebench_core::validity` over what this run measured.

use super::assemble::RunResults;
use servebench_core::metrics::OUTPUT_DISAGREEMENT_WARN;
use servebench_core::validity::{send_rates, Validity, ValidityInputs};
use servebench_report::sections::additions::LoadRegime;

impl RunResults {
    /// The validity verdict of the run.
    pub fn validity(&self) -> Validity {
        Validity::of(&self.validity_inputs())
    }

    fn validity_inputs(&self) -> ValidityInputs {
        let h = &self.info.client_health;
        let m = &self.metrics;
        let ms = |us: Option<f64>| us.map(|v| v / 1000.0);
        // A self-timed trace replay has a schedule (the trace's timestamps) at rate inf.
        let schedule = LoadRegime::of(&self.info).schedule_meaningful() || self.groups.trace;
        let tokens = &m.token_accounting.usage_vs_retokenized;
        ValidityInputs {
            client_cpu_percent: h.client_cpu_percent,
            available_cores: h.available_cores,
            client_cpu_wait_percent: self
                .out
                .health
                .client_cpu_wait_seconds
                .and_then(|w| servebench_report::info::cpu_share_percent(w, self.out.health.wall_seconds)),
            hiccup_p99_ms: ms(h.hiccup_p99_us),
            dispatch_lateness_p99_ms: ms(h.dispatch_lateness_p99_us).filter(|_| schedule),
            send_rates: schedule
                .then(|| {
                    send_rates(
                        self.out.records.iter().filter_map(|r| Some((r.intended_us, r.dispatched_us?))),
                    )
                })
                .flatten(),
            steady_state: self.steady.as_ref().map(|s| s.as_ref().map(|_| ()).map_err(|e| e.reason.clone())),
            server_scrapes: self.server_side.server.as_ref().map(|s| s.samples.len() as u64),
            token_mismatch: (tokens.requests > 0).then_some((tokens.mean_rel_diff, OUTPUT_DISAGREEMENT_WARN)),
            sent: m.sent,
            completed: m.completed,
            failed: m.failed,
            max_concurrency: self.info.max_concurrency,
            early_stop: self.out.early_stop.is_some(),
            interrupted: self.out.interrupted,
        }
    }
}

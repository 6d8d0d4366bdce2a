//! The early-stop flags (`--detect-saturation`, `--saturation-window`, `--max-error-rate`,
//! `--max-error-rate-window`, `--max-errors`; `crate::cli::workload`) validated into the run's
//! `EarlyStopOptions` (docs/workloads.md, "Early stop"): SB140 (a tuning flag alone), SB141
//! (saturation without an arrival schedule), SB121 (saturation on a ramp-up), SB142 (an error
//! window longer than the run).

use crate::cli::RunArgs;
use servebench_core::early_stop::{ErrorRateConfig, SaturationConfig};
use servebench_core::{BenchError, Result};
use servebench_runner::load::early_stop::EarlyStopOptions;
use servebench_runner::load::stages::is_closed_loop;
use servebench_runner::LoadOptions;

/// GuideLLM's window of its sliding error rate, in finished requests.
pub const DEFAULT_ERROR_WINDOW: usize = 30;

/// The early-stop options of the run, from its flags and its load (`load`: the load options
/// built so far, stages and multi-turn included).
pub fn options(args: &RunArgs, load: &LoadOptions) -> Result<EarlyStopOptions> {
    let w = &args.workload;
    let alone = |given: &str, needs: &str| BenchError::EarlyStopFlagAlone {
        given: given.into(),
        needs: needs.into(),
    };
    if w.saturation_window.is_some() && !w.detect_saturation {
        return Err(alone("--saturation-window", "--detect-saturation"));
    }
    if w.max_error_rate_window.is_some() && w.max_error_rate.is_none() {
        return Err(alone("--max-error-rate-window", "--max-error-rate"));
    }
    let saturation = if w.detect_saturation {
        if args.ramp_up_strategy.is_some() {
            // A ramp is a schedule, but one whose rate grows: below capacity too the requests in
            // flight grow with it (Little's law), which the test reads as saturation (the
            // detector fires on a ramp 1 → 100 req/s of a server without a limit).
            return Err(BenchError::FlagCombination {
                first: "--detect-saturation".into(),
                second: "--ramp-up-strategy".into(),
                why: "a ramp's growing rate keeps more requests in flight below capacity too, which the test would read as saturation".into(),
                fix: "drop --detect-saturation, or test a constant --request-rate (or --stages RATE:SECONDS steps, or --find-max-rate)".into(),
            });
        }
        if let Some(load) = unscheduled(args, load) {
            return Err(BenchError::SaturationNeedsSchedule { load: load.into() });
        }
        let d = SaturationConfig::default();
        Some(SaturationConfig { window_s: w.saturation_window.unwrap_or(d.window_s), ..d })
    } else {
        None
    };
    let window = w.max_error_rate_window.unwrap_or(DEFAULT_ERROR_WINDOW);
    // The run sends at most --num-prompts requests (a duration, stages, a trace or
    // conversations decide their own count).
    let bounded = w.duration.is_none()
        && w.stages.is_none()
        && !args.is_trace()
        && !w.multi_turn
        && load.agentic.is_none();
    if w.max_error_rate.is_some() && bounded && window as u64 > args.num_prompts {
        return Err(BenchError::ErrorWindowTooLong { window: window as u64, requests: args.num_prompts });
    }
    let errors = (w.max_error_rate.is_some() || w.max_errors.is_some()).then_some(ErrorRateConfig {
        max_rate: w.max_error_rate,
        window: if w.max_error_rate.is_some() { window } else { 0 },
        max_errors: w.max_errors,
    });
    Ok(EarlyStopOptions { saturation, errors })
}

/// A warning when a `--duration` or `--stages` run plans fewer requests (rate × seconds) than
/// `--max-error-rate`'s window: its count is drawn at random, so it is not refused as a
/// `--num-prompts` run is (SB142), but the limit would likely never be tested.
pub fn short_run_warning(run: &servebench_runner::RunConfig) -> Option<String> {
    let window = run.load.early_stop.errors.as_ref().map(|e| e.window).filter(|&w| w > 0)?;
    let stages = run.planned_stages();
    // A closed-loop stage sends as fast as it is answered: no count known before the run.
    if stages.is_empty() || stages.iter().any(|s| s.concurrency.is_some()) {
        return None;
    }
    let planned = servebench_runner::load::stages::planned_requests(&stages);
    if planned >= window as f64 {
        return None;
    }
    let flag = if run.load.stages.is_empty() { "--duration" } else { "--stages" };
    Some(format!(
        "warning[SB142]: --max-error-rate is tested over the last {window} finished requests, and {flag} \
         plans about {planned:.0} (rate × seconds), so it would likely never be tested; pass \
         --max-error-rate-window of at most {}, or --max-errors N for an absolute limit",
        (planned.floor() as u64).max(1)
    ))
}

/// Why the load has no arrival schedule for the saturation test, or `None` when it has one.
fn unscheduled(args: &RunArgs, load: &LoadOptions) -> Option<&'static str> {
    let e = &args.experiment;
    if load.agentic.is_some() {
        return Some("--dataset-name agentic (each turn waits for the replies it depends on)");
    }
    if load.multi_turn.is_some() {
        return Some("--multi-turn (each turn waits for the previous reply)");
    }
    if !load.stages.is_empty() {
        return is_closed_loop(&load.stages).then_some("--stages c=N:SECONDS (a closed loop)");
    }
    if e.sweep_max_concurrency.is_some() && args.request_rate.is_infinite() {
        return Some("a concurrency sweep at --request-rate inf");
    }
    let swept = e.sweep_request_rate.as_ref().is_some_and(|r| r.0.iter().any(|v| v.is_finite()));
    let searched = e.find_max_rate || e.slo.is_some();
    let trace = args.is_trace() && !args.workload.no_self_timed;
    if args.request_rate.is_finite() || swept || searched || trace {
        return None;
    }
    Some("--request-rate inf (every request is due at once)")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use clap::Parser;

    /// Pins saturation detection on a ramp-up: it was refused with SB141 "--request-rate inf has
    /// no schedule; fix: give a finite --request-rate", while a ramp is a schedule and
    /// `--request-rate` beside it is refused. The detector reads a ramp's own growth as
    /// saturation (core: `a_ramp_below_capacity_fires_so_a_ramp_is_no_schedule_to_test`), so it
    /// stays refused, saying why.
    #[test]
    fn saturation_on_a_ramp_up_is_refused_naming_the_ramp() {
        let argv = [
            "servebench",
            "--ramp-up-strategy",
            "linear",
            "--ramp-up-start-rps",
            "5",
            "--ramp-up-end-rps",
            "20",
            "--detect-saturation",
        ];
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        let line = crate::config::validate(&cli.run, None).unwrap_err().user_line();
        assert!(
            line.starts_with("error[SB121]: --detect-saturation cannot be combined with --ramp-up-strategy"),
            "{line}"
        );
        assert!(!line.contains("--request-rate inf") && line.contains("drop --detect-saturation"), "{line}");
        let cli =
            crate::cli::Cli::try_parse_from(["servebench", "--request-rate", "5", "--detect-saturation"])
                .unwrap();
        assert!(crate::config::validate(&cli.run, None).is_ok());
    }
}

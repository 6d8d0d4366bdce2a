//! The experiment, steady-state, scraping and profiling flags (`crate::cli::experiment`) checked
//! and turned into the runner's typed `ExperimentConfig`.

use crate::cli::experiment::ExperimentArgs;
use servebench_core::flag_values::MAX_FLAG_SECONDS;
use servebench_core::{BenchError, Result};
use servebench_runner::experiment::{Experiment, ExperimentConfig, SearchOptions};
use servebench_runner::observe::profiling::ProfileOptions;
use servebench_runner::observe::server_side::{GpuOptions, ServerSideOptions};
use servebench_runner::results::SteadyOptions;
use std::time::Duration;

impl ExperimentArgs {
    /// The experiment these flags ask for, validated, over `num_prompts` prompts; `None` for a
    /// single run.
    pub fn experiment(&self, num_prompts: u64) -> Result<Option<ExperimentConfig>> {
        let Some(kind) = plan(self)? else { return Ok(None) };
        let sweep_summary_percentiles = match &self.sweep_summary_percentiles {
            Some(s) if kind.is_sweep() => s.0.clone(),
            _ => Vec::new(),
        };
        Ok(Some(ExperimentConfig {
            kind,
            num_prompts: num_prompts as usize,
            reuse_prompts: self.reuse_prompts,
            reset_prefix_cache: self.reset_prefix_cache,
            sweep_summary_percentiles,
            search: SearchOptions {
                start_rate: self.search_start_rate,
                max_rate: self.search_max_rate,
                tolerance: self.search_tolerance,
                saturation_threshold: self.saturation_threshold,
            },
            steady: self.steady_options(),
            server_side: self.server_side_options(),
        }))
    }

    /// The steady-state options (checked by [`plan`]).
    pub fn steady_options(&self) -> SteadyOptions {
        SteadyOptions {
            enabled: !self.no_steady_state,
            threshold: self.steady_state_threshold,
            min_window_s: self.steady_state_min_window,
        }
    }

    /// What runs on the server side of each measured phase (checked by [`plan`]).
    pub fn server_side_options(&self) -> ServerSideOptions {
        ServerSideOptions {
            scrape_interval: self.scrape_metrics.then(|| seconds(self.scrape_interval)),
            profile: self.profile.then(|| ProfileOptions {
                batch_threshold: self.profile_batch_threshold,
                duration: seconds(self.profile_duration),
            }),
            metrics_urls: self.server_metrics_url.clone(),
            poll_interval: seconds(self.scrape_interval),
            gpu: (self.gpu_metrics || !self.gpu_metrics_url.is_empty())
                .then(|| GpuOptions { urls: self.gpu_metrics_url.clone() }),
            series_path: None,
        }
    }
}

/// Seconds [`plan`] checked (0 for a value it refuses, never a panic).
fn seconds(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.min(MAX_FLAG_SECONDS)).unwrap_or_default()
}

fn range(flag: &str, ok: bool, what: &str) -> Result<()> {
    if ok {
        Ok(())
    } else {
        Err(BenchError::config(flag, what.to_owned(), format!("pass {flag} {what}")))
    }
}

/// Checks the experiment, steady-state, scraping and profiling flags; returns the experiment
/// they ask for, if any.
pub fn plan(a: &ExperimentArgs) -> Result<Option<Experiment>> {
    let t = a.steady_state_threshold;
    range("--steady-state-threshold", t > 0.0 && t <= 1.0, "in (0, 1]")?;
    if let Some(w) = a.steady_state_min_window {
        range("--steady-state-min-window", w.is_finite() && w >= 0.0, "≥ 0 seconds")?;
    }
    let i = a.scrape_interval;
    range("--scrape-interval", (0.05..=MAX_FLAG_SECONDS).contains(&i), "from 0.05 to 1e9 seconds")?;
    range("--num-runs", a.num_runs >= 1, "≥ 1")?;
    range("--search-tolerance", a.search_tolerance > 0.0 && a.search_tolerance < 1.0, "in (0, 1)")?;
    range(
        "--saturation-threshold",
        a.saturation_threshold > 0.0 && a.saturation_threshold <= 1.0,
        "in (0, 1]",
    )?;
    let (s, m) = (a.search_start_rate, a.search_max_rate);
    range(
        "--search-start-rate",
        s.is_finite() && s >= servebench_core::flag_values::MIN_REQUEST_RATE,
        "finite and at least 1/86400 (one request a day)",
    )?;
    range("--search-max-rate", m.is_finite() && m >= s, "finite and ≥ --search-start-rate")?;
    if a.profile_batch_threshold.is_some() && !a.profile {
        return Err(BenchError::config(
            "--profile-batch-threshold",
            "needs --profile",
            "add --profile, or drop --profile-batch-threshold",
        ));
    }
    let d = a.profile_duration;
    range("--profile-duration", d > 0.0 && d <= MAX_FLAG_SECONDS, "> 0 and at most 1e9 seconds")?;
    if d != 5.0 && a.profile_batch_threshold.is_none() {
        return Err(BenchError::config(
            "--profile-duration",
            "only applies with --profile-batch-threshold",
            "add --profile-batch-threshold N, or drop --profile-duration",
        ));
    }
    if let Some(f) = a.sweep_num_prompts_factor {
        range("--sweep-num-prompts-factor", f.is_finite() && f > 0.0, "> 0")?;
        if a.sweep_max_concurrency.is_none() {
            return Err(BenchError::config(
                "--sweep-num-prompts-factor",
                "applies to concurrency sweeps only",
                "add --sweep-max-concurrency, or drop --sweep-num-prompts-factor",
            ));
        }
    }
    // The experiments given, by the flag that asks for each: the message names those.
    let num_runs = format!("--num-runs {}", a.num_runs);
    let chosen: Vec<&str> = [
        (a.sweep_max_concurrency.is_some(), "--sweep-max-concurrency"),
        // vllm-bench runs the concurrency sweep and drops the rate sweep without a word.
        (a.sweep_request_rate.is_some(), "--sweep-request-rate"),
        (a.find_max_rate, "--find-max-rate"),
        (a.slo.is_some(), "--slo"),
        (a.num_runs > 1, num_runs.as_str()),
    ]
    .into_iter()
    .filter_map(|(given, flag)| given.then_some(flag))
    .collect();
    if let [first, second, ..] = chosen[..] {
        return Err(BenchError::FlagCombination {
            first: first.to_owned(),
            second: second.to_owned(),
            why: "each is an experiment of its own (a sweep, a rate search, an SLO search, repeated runs)"
                .into(),
            fix: format!("run one experiment per command: keep {first} or {second}"),
        });
    }
    if let Some(c) = &a.sweep_max_concurrency {
        return Ok(Some(Experiment::SweepConcurrency {
            values: c.0.clone(),
            num_prompts_factor: a.sweep_num_prompts_factor,
        }));
    }
    if let Some(r) = &a.sweep_request_rate {
        return Ok(Some(Experiment::SweepRate { values: r.0.clone() }));
    }
    if a.find_max_rate {
        return Ok(Some(Experiment::FindMaxRate));
    }
    if let Some(s) = &a.slo {
        return Ok(Some(Experiment::SloSearch { slos: s.0.clone() }));
    }
    if a.num_runs > 1 {
        return Ok(Some(Experiment::MultiRun { runs: a.num_runs, same_seed: a.same_seed }));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ExperimentArgs {
        ExperimentArgs {
            steady_state_threshold: 0.95,
            scrape_interval: 1.0,
            num_runs: 1,
            search_tolerance: 0.05,
            search_start_rate: 1.0,
            search_max_rate: 1000.0,
            saturation_threshold: 0.95,
            profile_duration: 5.0,
            ..ExperimentArgs::default()
        }
    }

    #[test]
    fn plan_precedence_and_conflicts() {
        let mut a = args();
        assert_eq!(plan(&a).unwrap(), None);
        a.sweep_request_rate = Some(crate::cli::values::rate_list("1,inf").unwrap());
        assert_eq!(plan(&a).unwrap(), Some(Experiment::SweepRate { values: vec![1.0, f64::INFINITY] }));
        a.sweep_max_concurrency = Some(crate::cli::values::concurrency_list("2").unwrap());
        // Pins the rate sweep dropped without a word beside a concurrency sweep (vllm-bench's
        // precedence): two experiments on one line, SB121 as any other pair.
        let e = plan(&a).unwrap_err();
        assert!(
            e.user_line().starts_with(
                "error[SB121]: --sweep-max-concurrency cannot be combined with --sweep-request-rate"
            ),
            "{}",
            e.user_line()
        );
        a.sweep_request_rate = None;
        assert!(matches!(plan(&a).unwrap(), Some(Experiment::SweepConcurrency { .. })));
        a.num_runs = 3;
        assert!(plan(&a).is_err());
        let mut p = args();
        p.profile_batch_threshold = Some(4);
        assert!(plan(&p).is_err(), "threshold needs --profile");
        let mut d = args();
        d.profile = true;
        d.profile_duration = 2.0;
        assert!(plan(&d).is_err(), "duration needs a threshold");
    }

    #[test]
    fn scrape_interval_and_profile_duration_beyond_1e9_seconds_are_refused_not_a_panic() {
        let mut a = args();
        a.scrape_metrics = true;
        a.scrape_interval = 1e30;
        let e = plan(&a).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("--scrape-interval from 0.05 to 1e9 seconds"), "{e}");
        assert_eq!(a.server_side_options().poll_interval, Duration::from_secs(1_000_000_000));
        a.scrape_interval = 1e9;
        assert!(plan(&a).is_ok());
        let mut p = args();
        (p.profile, p.profile_batch_threshold, p.profile_duration) = (true, Some(4), 1e30);
        assert_eq!(plan(&p).unwrap_err().code().as_str(), "SB101");
    }
}

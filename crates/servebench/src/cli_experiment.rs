//! Flags of experiments beyond one run (sweeps, rate searches, multi-run), the steady-state
//! window, the server-side view (`/metrics` scraping) and profiling. Flattened into `RunArgs`.
//! Names follow vllm-bench (the Rust `vllm bench serve`) where it has the feature;
//! docs/experiments.md lists which flags come from where. `plan` checks them and
//! `ExperimentArgs::experiment` turns them into the runner's typed `ExperimentConfig`.

use clap::Args;
use servebench_core::{BenchError, Result};
use servebench_runner::experiment::{Experiment, ExperimentConfig, SearchOptions};
use servebench_runner::observe::profiling::ProfileOptions;
use servebench_runner::results::SteadyOptions;
use servebench_runner::run::server_side::ServerSideOptions;
use std::time::Duration;

/// Experiment, steady-state, server-metrics and profiling flags.
#[derive(Debug, Clone, Default, Args)]
pub struct ExperimentArgs {
    // ---- sweeps (vllm-bench) ----
    /// Run one point per value of --max-concurrency, e.g. 1,8,32 (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli_values::concurrency_list, help_heading = "Experiments")]
    pub sweep_max_concurrency: Option<crate::cli_values::ConcurrencyList>,
    /// Run one point per request rate, e.g. 1,10,inf (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli_values::rate_list, help_heading = "Experiments")]
    pub sweep_request_rate: Option<crate::cli_values::RateList>,
    /// Concurrency sweeps: each point sends concurrency × F prompts (vllm-bench).
    #[arg(long, value_name = "F", help_heading = "Experiments")]
    pub sweep_num_prompts_factor: Option<f64>,
    /// Extra percentiles of the sweep summary table, e.g. 95,99.9 (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli_values::summary_percentiles, help_heading = "Experiments")]
    pub sweep_summary_percentiles: Option<crate::cli_values::Percentiles>,
    /// POST /reset_prefix_cache before each sweep, search or multi-run point (vllm-bench; vLLM
    /// needs VLLM_SERVER_DEV_MODE=1). Sends the run's headers and API key.
    #[arg(long, help_heading = "Experiments")]
    pub reset_prefix_cache: bool,
    /// Send the same prompts at every sweep, search or multi-run point (vLLM's behaviour). By
    /// default each point gets prompts of its own (same dataset and lengths, seeded by --seed and
    /// the point), so a prefix-caching server cannot serve later points from its cache.
    #[arg(long, help_heading = "Experiments")]
    pub reuse_prompts: bool,

    // ---- searches (servebench) ----
    /// Find the saturation rate: the highest request rate whose achieved rate still tracks the
    /// offered rate (see --saturation-threshold), by bisection.
    #[arg(long, help_heading = "Experiments")]
    pub find_max_rate: bool,
    /// Find the highest request rate meeting every SLO, e.g. ttft_p99:500,tpot_p99:50
    /// (METRIC_pP, METRIC_mean or METRIC_median; metrics ttft, tpot, itl, e2el; ms).
    #[arg(long, value_name = "LIST", value_parser = crate::cli_values::slos, help_heading = "Experiments")]
    pub slo: Option<crate::cli_values::Slos>,
    /// Bisection stops when (high − low) / high ≤ this.
    #[arg(long, default_value_t = 0.05, help_heading = "Experiments")]
    pub search_tolerance: f64,
    /// First rate a search tries (req/s); it doubles or halves from there to bracket.
    #[arg(long, default_value_t = 1.0, help_heading = "Experiments")]
    pub search_start_rate: f64,
    /// Highest rate a search tries (req/s).
    #[arg(long, default_value_t = 10_000.0, help_heading = "Experiments")]
    pub search_max_rate: f64,
    /// --find-max-rate: a rate "tracks" when achieved ≥ this × offered.
    #[arg(long, default_value_t = 0.95, help_heading = "Experiments")]
    pub saturation_threshold: f64,

    // ---- multi-run (vllm-bench) ----
    /// Repeat the run N times; report mean, std, min, max and 95 % CI per metric.
    #[arg(long, default_value_t = 1, help_heading = "Experiments")]
    pub num_runs: u32,
    /// Multi-run: keep --seed for every run (default: seed + run index).
    #[arg(long, help_heading = "Experiments")]
    pub same_seed: bool,

    // ---- steady state (vllm-bench) ----
    /// Steady-state window: the signal must be at or above this fraction of its reference.
    #[arg(long, default_value_t = 0.95, help_heading = "Steady state")]
    pub steady_state_threshold: f64,
    /// Warn when the steady-state window is shorter than this many seconds (default
    /// max(10 s, 10 % of the run)).
    #[arg(long, help_heading = "Steady state")]
    pub steady_state_min_window: Option<f64>,
    /// Do not compute the steady-state window.
    #[arg(long, help_heading = "Steady state")]
    pub no_steady_state: bool,

    // ---- server side ----
    /// Poll the server's Prometheus /metrics during the measured phase; the result gets the
    /// time series and derived figures (`server_metrics`).
    #[arg(long, help_heading = "Server metrics")]
    pub scrape_metrics: bool,
    /// Seconds between /metrics polls.
    #[arg(long, default_value_t = 1.0, help_heading = "Server metrics")]
    pub scrape_interval: f64,

    // ---- profiling (vLLM / vllm-bench) ----
    /// POST /start_profile when the measured phase starts and /stop_profile when it ends.
    #[arg(long, help_heading = "Profiling")]
    pub profile: bool,
    /// With --profile: start once vllm:num_requests_running ≥ N (polled every 500 ms), profile
    /// --profile-duration seconds, then stop (vllm-bench).
    #[arg(long, help_heading = "Profiling")]
    pub profile_batch_threshold: Option<u64>,
    /// With --profile-batch-threshold: seconds to profile.
    #[arg(long, default_value_t = 5.0, help_heading = "Profiling")]
    pub profile_duration: f64,
}

impl ExperimentArgs {
    /// Whether the command line asks for more than one run.
    pub fn is_experiment(&self) -> bool {
        self.sweep_max_concurrency.is_some()
            || self.sweep_request_rate.is_some()
            || self.find_max_rate
            || self.slo.is_some()
            || self.num_runs > 1
    }

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
            scrape_interval: self.scrape_metrics.then(|| Duration::from_secs_f64(self.scrape_interval)),
            profile: self.profile.then(|| ProfileOptions {
                batch_threshold: self.profile_batch_threshold,
                duration: Duration::from_secs_f64(self.profile_duration),
            }),
        }
    }
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
    range("--scrape-interval", a.scrape_interval.is_finite() && a.scrape_interval >= 0.05, "≥ 0.05 seconds")?;
    range("--num-runs", a.num_runs >= 1, "≥ 1")?;
    range("--search-tolerance", a.search_tolerance > 0.0 && a.search_tolerance < 1.0, "in (0, 1)")?;
    range(
        "--saturation-threshold",
        a.saturation_threshold > 0.0 && a.saturation_threshold <= 1.0,
        "in (0, 1]",
    )?;
    let (s, m) = (a.search_start_rate, a.search_max_rate);
    range("--search-start-rate", s.is_finite() && s > 0.0, "> 0 and finite")?;
    range("--search-max-rate", m.is_finite() && m >= s, "finite and ≥ --search-start-rate")?;
    if a.profile_batch_threshold.is_some() && !a.profile {
        return Err(BenchError::config(
            "--profile-batch-threshold",
            "needs --profile",
            "add --profile, or drop --profile-batch-threshold",
        ));
    }
    let d = a.profile_duration;
    range("--profile-duration", d.is_finite() && d > 0.0, "> 0 seconds")?;
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
    let chosen = [
        a.sweep_max_concurrency.is_some() || a.sweep_request_rate.is_some(),
        a.find_max_rate,
        a.slo.is_some(),
        a.num_runs > 1,
    ];
    if chosen.iter().filter(|&&c| c).count() > 1 {
        return Err(BenchError::config(
            "--num-runs",
            "sweeps, --find-max-rate, --slo and --num-runs > 1 are separate experiments",
            "run one experiment per command",
        ));
    }
    if let Some(c) = &a.sweep_max_concurrency {
        // vllm-bench's precedence: a concurrency sweep wins over a rate sweep.
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
        a.sweep_request_rate = Some(crate::cli_values::rate_list("1,inf").unwrap());
        assert_eq!(plan(&a).unwrap(), Some(Experiment::SweepRate { values: vec![1.0, f64::INFINITY] }));
        a.sweep_max_concurrency = Some(crate::cli_values::concurrency_list("2").unwrap());
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
}

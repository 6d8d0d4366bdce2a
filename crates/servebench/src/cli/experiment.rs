//! Flags of experiments beyond one run (sweeps, rate searches, multi-run), the steady-state
//! window, the server-side view (`/metrics` scraping) and profiling. Flattened into `RunArgs`.
//! Names follow vllm-bench (the Rust `vllm bench serve`) where it has the feature;
//! docs/experiments.md lists which flags come from where. `config::experiment` checks them and
//! turns them into the runner's typed `ExperimentConfig`.

use clap::Args;

/// Experiment, steady-state, server-metrics and profiling flags.
#[derive(Debug, Clone, Default, Args)]
pub struct ExperimentArgs {
    // ---- sweeps (vllm-bench) ----
    /// Run one point per value of --max-concurrency, e.g. 1,8,32 (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::concurrency_list, help_heading = "Experiments")]
    pub sweep_max_concurrency: Option<crate::cli::values::ConcurrencyList>,
    /// Run one point per request rate, e.g. 1,10,inf (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::rate_list, help_heading = "Experiments")]
    pub sweep_request_rate: Option<crate::cli::values::RateList>,
    /// Concurrency sweeps: each point sends concurrency × F prompts (vllm-bench).
    #[arg(long, value_name = "F", help_heading = "Experiments")]
    pub sweep_num_prompts_factor: Option<f64>,
    /// Extra percentiles of the sweep summary table, e.g. 95,99.9 (vllm-bench).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::summary_percentiles, help_heading = "Experiments")]
    pub sweep_summary_percentiles: Option<crate::cli::values::Percentiles>,
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
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::slos, help_heading = "Experiments")]
    pub slo: Option<crate::cli::values::Slos>,
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
    /// Seconds between /metrics polls (also of --server-metrics-url and the GPU readings).
    #[arg(long, default_value_t = 1.0, help_heading = "Server metrics")]
    pub scrape_interval: f64,
    /// Also scrape this Prometheus /metrics URL through the measured phase (repeatable:
    /// replicas, a router, an exporter): every series is kept in RESULT.server-metrics.jsonl
    /// and summarised per endpoint in `server_metrics.endpoints`. No API key or --header is sent.
    #[arg(long, value_name = "URL", value_parser = metrics_url, help_heading = "Server metrics")]
    pub server_metrics_url: Vec<servebench_runner::observe::metrics_url::MetricsUrl>,
    /// GPU telemetry and energy (`gpu_energy`): read the DCGM exporters of --gpu-metrics-url,
    /// else nvidia-smi on this host when present (the run goes on without it when absent).
    #[arg(long, help_heading = "Server metrics")]
    pub gpu_metrics: bool,
    /// A DCGM exporter's /metrics URL (repeatable; implies --gpu-metrics): power, energy,
    /// utilisation, memory and SM clock per GPU.
    #[arg(long, value_name = "URL", value_parser = gpu_metrics_url, help_heading = "Server metrics")]
    pub gpu_metrics_url: Vec<servebench_runner::observe::metrics_url::MetricsUrl>,

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

fn metrics_url(
    text: &str,
) -> Result<servebench_runner::observe::metrics_url::MetricsUrl, servebench_core::BenchError> {
    servebench_runner::observe::metrics_url::MetricsUrl::parse("--server-metrics-url", text)
}

fn gpu_metrics_url(
    text: &str,
) -> Result<servebench_runner::observe::metrics_url::MetricsUrl, servebench_core::BenchError> {
    servebench_runner::observe::metrics_url::MetricsUrl::parse("--gpu-metrics-url", text)
}

impl ExperimentArgs {
    /// The flag of a sweep or search (each point sets its own rate or concurrency), if any.
    pub fn point_flag(&self) -> Option<&'static str> {
        if self.sweep_max_concurrency.is_some() {
            Some("--sweep-max-concurrency")
        } else if self.sweep_request_rate.is_some() {
            Some("--sweep-request-rate")
        } else if self.find_max_rate {
            Some("--find-max-rate")
        } else if self.slo.is_some() {
            Some("--slo")
        } else {
            None
        }
    }

    /// Whether every point of the sweep or search is paced (a finite rate, or a concurrency
    /// cap): a `--duration` then bounds each point as it bounds one paced run.
    pub fn every_point_is_paced(&self) -> bool {
        match (&self.sweep_max_concurrency, &self.sweep_request_rate) {
            (Some(_), _) => true,
            (None, Some(rates)) => rates.0.iter().all(|r| r.is_finite()),
            (None, None) => self.find_max_rate || self.slo.is_some(),
        }
    }

    /// The flag of an experiment whose points differ by their request rate (a rate sweep, a
    /// saturation or SLO search), if any.
    pub fn rate_flag(&self) -> Option<&'static str> {
        self.point_flag().filter(|f| *f != "--sweep-max-concurrency")
    }

    /// The flag that asks for an experiment (`--num-runs N` included), if any: what a
    /// refusal of a flag that works for one run only names.
    pub fn experiment_flag(&self) -> Option<String> {
        match self.point_flag() {
            Some(f) => Some(f.to_owned()),
            None => (self.num_runs > 1).then(|| format!("--num-runs {}", self.num_runs)),
        }
    }

    /// Whether the command line asks for more than one run.
    pub fn is_experiment(&self) -> bool {
        self.sweep_max_concurrency.is_some()
            || self.sweep_request_rate.is_some()
            || self.find_max_rate
            || self.slo.is_some()
            || self.num_runs > 1
    }
}

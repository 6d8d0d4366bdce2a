//! The validated configuration of an experiment (built by the CLI from its flags): which
//! experiment, and the options its points share.

use crate::observe::server_side::ServerSideOptions;
use crate::results::SteadyOptions;
use servebench_core::metrics::MetricName;

/// Which experiment the flags ask for (vllm-bench's precedence for sweeps: concurrency sweep,
/// then rate sweep; then the searches; then multi-run).
#[derive(Debug, Clone, PartialEq)]
pub enum Experiment {
    SweepConcurrency { values: Vec<u64>, num_prompts_factor: Option<f64> },
    SweepRate { values: Vec<f64> },
    FindMaxRate,
    SloSearch { slos: Vec<SloBound> },
    MultiRun { runs: u32, same_seed: bool },
}

impl Experiment {
    /// Stable name used in the saved JSON (`servebench_experiment`) and file names.
    pub fn name(&self) -> &'static str {
        match self {
            Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. } => "sweep",
            Experiment::FindMaxRate => "find_max_rate",
            Experiment::SloSearch { .. } => "slo_search",
            Experiment::MultiRun { .. } => "multi_run",
        }
    }

    /// Whether the experiment is a sweep (concurrency or rate).
    pub fn is_sweep(&self) -> bool {
        matches!(self, Experiment::SweepConcurrency { .. } | Experiment::SweepRate { .. })
    }
}

/// Which statistic of a latency metric an SLO bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloStat {
    Mean,
    Median,
    Percentile(f64),
}

/// One `--slo` term: `stat(metric) ≤ max_ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct SloBound {
    /// As written, e.g. `ttft_p99`.
    pub name: String,
    pub metric: MetricName,
    pub stat: SloStat,
    pub max_ms: f64,
}

/// The bisection of the rate searches (`--find-max-rate`, `--slo`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SearchOptions {
    /// First rate tried (req/s).
    pub start_rate: f64,
    /// Highest rate tried (req/s).
    pub max_rate: f64,
    /// Stop when (high − low) / high ≤ this.
    pub tolerance: f64,
    /// `--find-max-rate`: a rate passes when achieved ≥ this × offered.
    pub saturation_threshold: f64,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions { start_rate: 1.0, max_rate: 10_000.0, tolerance: 0.05, saturation_threshold: 0.95 }
    }
}

/// Everything an experiment runs with beyond the run's own configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct ExperimentConfig {
    pub kind: Experiment,
    /// `--num-prompts` (a concurrency sweep with a prompt factor sizes its points itself).
    pub num_prompts: usize,
    /// `--reuse-prompts`: every point sends the same prompts.
    pub reuse_prompts: bool,
    /// `--reset-prefix-cache` before each point.
    pub reset_prefix_cache: bool,
    /// `--sweep-summary-percentiles` (sweeps only).
    pub sweep_summary_percentiles: Vec<f64>,
    pub search: SearchOptions,
    pub steady: SteadyOptions,
    pub server_side: ServerSideOptions,
}

impl ExperimentConfig {
    /// An experiment of `kind` over `num_prompts` prompts with every other option at its default.
    pub fn new(kind: Experiment, num_prompts: usize) -> Self {
        ExperimentConfig {
            kind,
            num_prompts,
            reuse_prompts: false,
            reset_prefix_cache: false,
            sweep_summary_percentiles: Vec::new(),
            search: SearchOptions::default(),
            steady: SteadyOptions::default(),
            server_side: ServerSideOptions::default(),
        }
    }
}

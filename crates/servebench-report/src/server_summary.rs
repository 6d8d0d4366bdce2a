//! The types of the scraped server metrics and GPU energy summaries (`--server-metrics-url`,
//! `--scrape-metrics`, `--gpu-metrics`, `--gpu-metrics-url`): written by the runner
//! (`servebench_runner::observe`), read back by `document`, printed by
//! `sections::server_endpoints`, charted by `html`. Figures are defined in docs/metrics.md
//! ("Server metrics of every engine", "GPU telemetry and energy").

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One known meaning of one endpoint over the measured phase. Gauges have `mean`, `max`,
/// `last` and `series` of values; counters `delta`, `rate_per_s` and `series` of per-interval
/// rates; histograms `count`, `mean`, `p50`/`p90`/`p99` over the run and `series` of
/// per-interval p50 (`series_p99` of p99). Series points are `[t_s, value]`, `t_s` from the
/// start of the measured phase, at the end of the interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MeaningSummary {
    /// The engine series read (the table's first name the endpoint has).
    pub metric: String,
    /// `gauge`, `counter` or `histogram`.
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_per_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99: Option<f64>,
    #[serde(default)]
    pub series: Vec<[f64; 2]>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series_p99: Vec<[f64; 2]>,
}

/// One histogram series (family and label set) over the measured phase: last − first scrape.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HistogramSummary {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub count: f64,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
}

/// One scraped endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointSummary {
    /// The URL scraped (no credentials: URLs with user info are refused).
    pub url: String,
    /// Engines whose names the endpoint exports (`vllm`, `sglang`, `trtllm`, `tgi`,
    /// `llamacpp`, `dynamo`); empty when none is known.
    pub engines: Vec<String>,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    pub last_error: Option<String>,
    /// Distinct series (name and label set) seen in the scrapes.
    pub series_count: u64,
    /// Known meanings, by key (`queue`, `running`, `kv_cache_usage`, `ttft`, ...).
    pub meanings: BTreeMap<String, MeaningSummary>,
    /// Δhits / Δqueries (TensorRT-LLM: Δhits / (Δhits + Δmisses)) over the phase; `None`
    /// without lookups.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Every histogram series, over the phase.
    pub histograms: Vec<HistogramSummary>,
}

/// Energy and telemetry of one GPU over the measured phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuRow {
    /// `Hostname` label (DCGM), the endpoint URL or `localhost` (nvidia-smi).
    pub host: String,
    /// GPU index (`gpu` label; nvidia-smi `index`).
    pub gpu: String,
    pub uuid: Option<String>,
    /// Joules over the window; `None` without two readings.
    pub energy_j: Option<f64>,
    /// `energy_counter` (difference of DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) or
    /// `power_integral` (trapezoids of the power samples).
    pub method: Option<String>,
    /// energy_j / window_s.
    pub avg_power_w: Option<f64>,
    /// Seconds between the first and the last reading used.
    pub window_s: Option<f64>,
    pub mean_util_pct: Option<f64>,
    pub max_fb_used_mib: Option<f64>,
    pub mean_sm_clock_mhz: Option<f64>,
    pub samples: u64,
    /// `[t_s, watts]` of each reading.
    #[serde(default)]
    pub power_series: Vec<[f64; 2]>,
}

/// The result's `gpu_energy`: per GPU and in total, and per output token of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuEnergy {
    /// `energy_counter`, `power_integral`, or `mixed` when GPUs differ.
    pub method: String,
    /// Σ energy_j of the GPUs that have it.
    pub total_energy_j: f64,
    /// Σ avg_power_w of the GPUs.
    pub avg_power_w: Option<f64>,
    /// Output tokens of the run's successful requests (the client's count).
    pub output_tokens: u64,
    /// total_energy_j / output_tokens; `None` without output tokens.
    pub joules_per_output_token: Option<f64>,
    /// output_tokens / total_energy_j; `None` when no energy was measured.
    pub output_tokens_per_joule: Option<f64>,
    pub gpus: Vec<GpuRow>,
}

/// The result's `gpu_telemetry`: where GPU readings came from, or why there are none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuTelemetry {
    /// `dcgm` (URLs) or `nvidia-smi` (this host).
    pub source: String,
    pub urls: Vec<String>,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    pub last_error: Option<String>,
    /// Why there is no reading (nvidia-smi absent, every scrape failed), when so.
    pub note: Option<String>,
    /// The server-metrics file holding the readings, when written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series_file: Option<String>,
}

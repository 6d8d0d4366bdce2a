//! What to do with the results of a run (or of each point of an experiment): which files,
//! which statistics, and the names the result carries.

use servebench_core::metrics::{MetricName, Slo};
use std::path::PathBuf;

/// What to do with the results of a run.
#[derive(Debug, Clone)]
pub struct OutputConfig {
    pub save_result: bool,
    pub save_detailed: bool,
    pub append_result: bool,
    pub result_dir: Option<PathBuf>,
    pub result_filename: Option<String>,
    pub label: Option<String>,
    pub metadata: Vec<(String, String)>,
    pub percentile_metrics: Vec<MetricName>,
    pub metric_percentiles: Vec<f64>,
    pub goodput: Vec<Slo>,
    pub backend_name: String,
    /// Percent of failed requests above which the run exits with code 3.
    pub max_failure_rate: Option<f64>,
    /// `--plot-timeline`: the two ITL thresholds (ms) of the timeline page; None = no page.
    pub timeline_itl_ms: Option<(f64, f64)>,
    /// The effective config of the run (flags by long name, secrets redacted), recorded in the
    /// result as its `config` key; None records nothing.
    pub effective_config: Option<serde_json::Map<String, serde_json::Value>>,
    /// `--otlp`: export spans and metrics to an OpenTelemetry collector after the run.
    pub otlp: Option<crate::config::otlp::OtlpConfig>,
}

impl OutputConfig {
    /// The result file `--result-filename` names (inside `--result-dir`), when it names one.
    pub fn named_result_path(&self) -> Option<std::path::PathBuf> {
        self.result_filename.as_ref().map(|f| self.result_dir.clone().unwrap_or_default().join(f))
    }

    /// `doc` (a result document) with the effective config recorded as its `config` key.
    pub fn with_config(&self, mut doc: serde_json::Value) -> serde_json::Value {
        if let (Some(c), Some(o)) = (&self.effective_config, doc.as_object_mut()) {
            o.insert("config".into(), serde_json::Value::Object(c.clone()));
        }
        doc
    }
}

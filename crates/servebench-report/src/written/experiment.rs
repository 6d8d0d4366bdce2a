//! The experiment documents as servebench writes them (docs/experiments.md): one struct per
//! kind, keys in the written order, each point's result a [`RunDocument`]. `compare` and the
//! experiment report read them back through [`crate::document::ExperimentDocument`] (lenient:
//! older files and hand-edited ones), which shares [`Summary`] (and its `Aggregate`) with these.

use serde::Serialize;
use serde_json::{Map, Value};

use super::run::{RunDocument, ServerTokenizeDoc};
use crate::document::Summary;
use crate::sections::experiment::SummaryRow;

/// What every experiment document starts with.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExperimentHeader {
    /// `sweep`, `find_max_rate`, `slo_search` or `multi_run`.
    pub servebench_experiment: String,
    pub date: String,
    pub backend: String,
    pub label: Option<String>,
    pub model_id: String,
    pub tokenizer_id: String,
    /// The prompt-length check with the server's tokenizer (as a run's `server_tokenize`).
    pub server_tokenize: ServerTokenizeDoc,
    pub burstiness: f64,
    pub percentiles: Vec<f64>,
}

/// One point of an experiment: how it ran and its result document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PointDocument {
    pub label: String,
    /// The rate as vLLM prints it (`inf` or a number).
    pub request_rate: String,
    pub max_concurrency: Option<usize>,
    pub num_prompts: usize,
    pub seed: u64,
    pub result: RunDocument,
}

/// The best point of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BestPoint {
    pub index: usize,
    pub label: String,
    /// `request_goodput` or `request_throughput`.
    pub criterion: String,
    pub value: f64,
}

/// The point of an experiment that ended it before its plan was done: its run stopped early
/// (its own `early_stop` block has the evidence), or not one of its requests succeeded (SB602;
/// its result's `errors` and `error_kinds` have the failures). The points after it were not run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StoppedEarly {
    /// Its index among the points run, and its label.
    pub index: usize,
    pub label: String,
    /// `saturation` or `error_rate` (the run stopped early), or `no_success` (no request of
    /// the point succeeded).
    pub reason: String,
    /// Seconds into the point's run when the stop was detected (`null` for `no_success`).
    pub detected_at_s: Option<f64>,
    /// Points planned after it and not run (`null` in a search, which plans its steps as it
    /// goes).
    pub points_not_run: Option<usize>,
}

/// A concurrency or rate sweep (`servebench_experiment: sweep`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepDocument {
    #[serde(flatten)]
    pub header: ExperimentHeader,
    /// `max_concurrency` or `request_rate`.
    pub sweep_parameter: String,
    pub interrupted: bool,
    /// The points the sweep planned (one per value); `points` has those run.
    pub points_planned: usize,
    /// `stopped_early`: the point that ended the sweep — its run stopped early (saturation,
    /// errors) or none of its requests succeeded; `null` when none did.
    pub stopped_early: Option<StoppedEarly>,
    pub summary: Vec<SummaryRow>,
    /// `points` before `best`, the order sweep documents have always had.
    pub points: Vec<PointDocument>,
    pub best: Option<BestPoint>,
}

/// `--num-runs` (`servebench_experiment: multi_run`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MultiRunDocument {
    #[serde(flatten)]
    pub header: ExperimentHeader,
    /// The runs in `runs` (those run; fewer than planned when the experiment stopped).
    pub num_runs: usize,
    /// `--num-runs`: the runs planned.
    pub num_runs_planned: usize,
    pub same_seed: bool,
    pub interrupted: bool,
    /// As a sweep's: the run that stopped early (or had no successful request) ended the
    /// repetitions.
    pub stopped_early: Option<StoppedEarly>,
    /// Indices in `runs` of the runs whose figures cover part of their requests (interrupted or
    /// stopped early): listed in `runs`, left out of `summary`.
    pub partial_runs: Vec<usize>,
    pub request_rate: String,
    pub max_concurrency: Option<usize>,
    pub summary: Summary,
    pub runs: Vec<PointDocument>,
}

/// What a search's points are judged by.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum SearchCriterion {
    /// `--find-max-rate`: achieved rate against offered rate.
    Saturation { saturation_threshold: f64, definition: String },
    /// `--slo`: every bound met.
    Slos { slos: Vec<SloDocument>, definition: String },
}

/// One SLO bound as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SloDocument {
    pub name: String,
    pub max_ms: f64,
}

/// One step of a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchStep {
    pub step: usize,
    pub request_rate: f64,
    pub offered_rate: Option<f64>,
    pub achieved_rate: Option<f64>,
    pub achieved_over_offered: Option<f64>,
    pub completed: u64,
    pub failed: u64,
    /// Each SLO's value at this step (its name → ms, `null` without data).
    pub slo_values: Map<String, Value>,
    pub passed: bool,
    pub reasons: Vec<String>,
}

/// `--find-max-rate` or `--slo` (`find_max_rate`, `slo_search`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchDocument {
    #[serde(flatten)]
    pub header: ExperimentHeader,
    pub criterion: SearchCriterion,
    pub tolerance: f64,
    pub max_concurrency: Option<usize>,
    /// `--num-prompts`: the requests of each step, unless a `--duration` sets each step's own
    /// count (rate × duration; then each point's `num_prompts` says it).
    pub num_prompts: u64,
    /// Each step's run length (`--duration`), when it sets the steps' counts; else `null`.
    pub duration_s: Option<f64>,
    pub result_rate: Option<f64>,
    pub lowest_failing_rate: Option<f64>,
    pub interrupted: bool,
    /// The step that ended the search before it converged: none of its requests succeeded and
    /// its first failure does not depend on the load (reason `no_success`); `null` otherwise.
    pub stopped_early: Option<StoppedEarly>,
    pub trajectory: Vec<SearchStep>,
    pub points: Vec<PointDocument>,
}

/// Any experiment document, as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum WrittenExperiment {
    Sweep(SweepDocument),
    MultiRun(MultiRunDocument),
    Search(SearchDocument),
}

impl WrittenExperiment {
    /// Whether the experiment was stopped early.
    pub fn interrupted(&self) -> bool {
        match self {
            WrittenExperiment::Sweep(d) => d.interrupted,
            WrittenExperiment::MultiRun(d) => d.interrupted,
            WrittenExperiment::Search(d) => d.interrupted,
        }
    }

    /// The document as one JSON object, keys in the written order.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

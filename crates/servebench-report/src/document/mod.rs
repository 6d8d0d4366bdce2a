//! The typed reader of result documents: what `report`, `compare` and `merge` read back from
//! the JSON files servebench (or vLLM) wrote, as serde structs instead of lookups by key string
//! (what servebench writes is typed in `crate::written`).
//!
//! - [`ResultDocument`] (`result`): one run's result — its configuration as written, its
//!   [`Metrics`] (`metrics`), client health, `records_file`, scraped server metrics, vLLM's
//!   detailed arrays, a merge's `shards`;
//! - [`ExperimentDocument`] (`experiment`): a sweep/search/multi-run document (`runs`, `summary`)
//!   as read (`crate::written::WrittenExperiment` is the same documents as servebench writes them);
//! - [`JsonFile`]: which of the two a file holds (a whole JSON document, or the last line of a
//!   JSONL file written with `--append-result`).
//!
//! The reader is lenient where real files are (`lenient`): every key is optional, a value of an
//! unexpected shape reads as absent, unknown keys are ignored, `request_rate` may be `"inf"`.

mod experiment;
mod lean;
mod lenient;
mod metrics;
mod non_json;
mod result;
mod shards;

#[cfg(test)]
mod tests;

pub use experiment::{
    Aggregate, Criterion, ExperimentDocument, ExperimentSettings, PointEntry, PointResult, RunEntry,
    SearchStepEntry, SloBound, Summary,
};
pub use lenient::{Lenient, Object, Shown};
pub use metrics::{LatencyStats, Metrics, SteadyMetrics};
pub use non_json::{find_non_json_number, NonJsonNumber};
pub use result::{
    ClientHealthDoc, DetailedArrays, ResultDocument, RunConfig, ServerMetricsDoc, ServerSampleDoc,
};
pub use shards::{MergedShard, MissingShard, ShardEntry};

use lean::LeanJson;
use serde::Deserialize;

/// Keys by which a single-run result is recognised (vLLM's and ours): one of them is present.
#[derive(Debug, Default, Deserialize)]
struct ResultProbe {
    #[serde(default, deserialize_with = "lenient::present")]
    model_id: bool,
    #[serde(default, deserialize_with = "lenient::present")]
    completed: bool,
    #[serde(default, deserialize_with = "lenient::present")]
    request_throughput: bool,
    #[serde(default, deserialize_with = "lenient::present")]
    duration: bool,
}

/// What a JSON text holds, as `report` and `compare` tell it.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonFile {
    /// An experiment document (it names a `servebench_experiment` string).
    Experiment(Box<ExperimentDocument>),
    /// A document that is not an experiment.
    Result(Box<ResultDocument>),
}

/// The experiment document `v` is, if it is an object naming its `servebench_experiment`.
fn experiment_of(v: &serde_json::Value) -> Option<ExperimentDocument> {
    ExperimentDocument::of(v)
}

/// The result document of a text read with [`LeanJson`]: its keys, with the per-request arrays
/// read straight into numbers.
fn result_of(lean: &mut LeanJson, rest: &serde_json::Value) -> Option<ResultDocument> {
    let mut doc = ResultDocument::deserialize(rest).ok()?;
    doc.detailed = lean.take_arrays();
    Some(doc)
}

impl JsonFile {
    /// Reads a result or experiment document: the whole text, else its last non-blank line. A
    /// value that is not an object reads as an empty result. Fails only on text that is not JSON.
    pub fn parse(text: &str) -> Result<JsonFile, serde_json::Error> {
        let mut lean = LeanJson::whole_or_last_line(text)?;
        let v = lean.rest_value();
        if let Some(doc) = experiment_of(&v) {
            return Ok(JsonFile::Experiment(Box::new(doc)));
        }
        Ok(JsonFile::Result(Box::new(result_of(&mut lean, &v).unwrap_or_default())))
    }

    /// The experiment document that `text` is as a whole, if it is one (`report`: an experiment
    /// is never read from a JSONL line).
    pub fn experiment(text: &str) -> Option<ExperimentDocument> {
        let mut lean: LeanJson = serde_json::from_str(text).ok()?;
        experiment_of(&lean.rest_value())
    }

    /// The single-run result `text` holds, if it is one: the whole text (else its last line)
    /// has one of the keys a result has (`model_id`, `completed`, `request_throughput`,
    /// `duration`), whatever their values.
    pub fn single_result(text: &str) -> Option<ResultDocument> {
        let mut lean = LeanJson::whole_or_last_line(text).ok()?;
        let v = lean.rest_value();
        let probe = ResultProbe::deserialize(v.is_object().then_some(&v)?).ok()?;
        if !(probe.model_id || probe.completed || probe.request_throughput || probe.duration) {
            return None;
        }
        result_of(&mut lean, &v)
    }
}

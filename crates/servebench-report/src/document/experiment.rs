//! The experiment documents (`servebench_experiment`: a sweep, `--find-max-rate`, `--slo`,
//! `--num-runs`; docs/experiments.md), as `compare` and the experiment report read them: the
//! sweep's points and SLO criterion, a multi-run document's per-run results and its across-run
//! summary, and the settings shown as written.

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::lenient::{lenient, object, shown, Lenient, Object, Shown};
use super::metrics::Metrics;
use crate::result_keys::MetricKey;

/// An experiment document. Unknown keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ExperimentDocument {
    /// `servebench_experiment`: `sweep`, `find_max_rate`, `slo_search` or `multi_run`.
    #[serde(default, deserialize_with = "lenient")]
    pub servebench_experiment: Option<String>,
    /// `runs` of a multi-run document (`{label, seed, result}`).
    #[serde(default, deserialize_with = "lenient")]
    pub runs: Option<Vec<Object<RunEntry>>>,
    /// `partial_runs` of a multi-run document: the indices in `runs` of runs that cover part of
    /// their requests (interrupted, stopped early), left out of `summary` and of comparisons.
    #[serde(default, deserialize_with = "lenient")]
    pub partial_runs: Option<Vec<usize>>,
    /// `summary` of a multi-run document: the across-run aggregate of each metric key.
    #[serde(default, deserialize_with = "object")]
    pub summary: Option<Summary>,
    /// `points` of a sweep or search (`{label, request_rate, result}`).
    #[serde(default, deserialize_with = "lenient")]
    pub points: Option<Vec<Object<PointEntry>>>,
    /// `criterion` of a search (an SLO search's `slos`, a saturation search's threshold).
    #[serde(default, deserialize_with = "object")]
    pub criterion: Option<Criterion>,
    /// `trajectory` of a search: one step per point, in search order.
    #[serde(default, deserialize_with = "lenient")]
    pub trajectory: Option<Vec<Object<SearchStepEntry>>>,
    /// The settings the report shows as written (`null` included; absent keys are `None`).
    #[serde(flatten)]
    pub settings: ExperimentSettings,
}

/// An experiment's settings, shown as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ExperimentSettings {
    #[serde(default, deserialize_with = "shown")]
    pub model_id: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub backend: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub date: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub sweep_parameter: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub result_rate: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub lowest_failing_rate: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub num_runs: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub same_seed: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub request_rate: Option<Shown>,
    #[serde(default, deserialize_with = "shown")]
    pub max_concurrency: Option<Shown>,
}

impl ExperimentSettings {
    /// The setting named `key` (its JSON name), when the document has it.
    pub fn get(&self, key: &str) -> Option<&Shown> {
        match key {
            "model_id" => self.model_id.as_ref(),
            "backend" => self.backend.as_ref(),
            "date" => self.date.as_ref(),
            "sweep_parameter" => self.sweep_parameter.as_ref(),
            "result_rate" => self.result_rate.as_ref(),
            "lowest_failing_rate" => self.lowest_failing_rate.as_ref(),
            "num_runs" => self.num_runs.as_ref(),
            "same_seed" => self.same_seed.as_ref(),
            "request_rate" => self.request_rate.as_ref(),
            "max_concurrency" => self.max_concurrency.as_ref(),
            _ => None,
        }
    }
}

/// One point of a sweep or search.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PointEntry {
    #[serde(default, deserialize_with = "lenient")]
    pub label: Option<String>,
    /// The point's rate as written (a number or `"inf"`).
    #[serde(default, deserialize_with = "shown")]
    pub request_rate: Option<Shown>,
    /// The point's concurrency limit as written (a number or `null`).
    #[serde(default, deserialize_with = "shown")]
    pub max_concurrency: Option<Shown>,
    #[serde(default, deserialize_with = "object")]
    pub result: Option<PointResult>,
}

/// A point's `result`: its metrics, and whether the run of the point was interrupted (its
/// `interrupted` key: the figures cover part of its requests).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct PointResult {
    #[serde(default, deserialize_with = "lenient")]
    pub interrupted: Option<bool>,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// One step of a search's `trajectory`: the rate tried, what it offered and achieved, each
/// SLO's value, and whether it passed.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SearchStepEntry {
    #[serde(default, deserialize_with = "lenient")]
    pub step: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub request_rate: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub offered_rate: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub achieved_rate: Option<f64>,
    /// Each SLO's value at this step (ms; `null` without data).
    #[serde(default, deserialize_with = "lenient")]
    pub slo_values: Option<std::collections::BTreeMap<String, Lenient<f64>>>,
    #[serde(default, deserialize_with = "lenient")]
    pub passed: Option<bool>,
}

/// An SLO search's criterion.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct Criterion {
    #[serde(default, deserialize_with = "lenient")]
    pub slos: Option<Vec<Object<SloBound>>>,
    /// `--find-max-rate`: a step passes when achieved ≥ this × offered.
    #[serde(default, deserialize_with = "lenient")]
    pub saturation_threshold: Option<f64>,
}

/// One SLO bound of a search (`ttft_p99` ≤ `max_ms`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct SloBound {
    #[serde(default, deserialize_with = "lenient")]
    pub name: Option<String>,
    #[serde(default, deserialize_with = "lenient")]
    pub max_ms: Option<f64>,
}

/// One run of a multi-run document.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RunEntry {
    #[serde(default, deserialize_with = "object")]
    pub result: Option<Metrics>,
    #[serde(default, deserialize_with = "lenient")]
    pub seed: Option<u64>,
    /// The entry's own metrics: a run given as a bare result (no `result` object).
    #[serde(flatten)]
    pub bare: Metrics,
}

/// The across-run aggregate of one metric (`{n, mean, std, min, max, ci95_low, ci95_high}`), as
/// a multi-run document writes it (`null` for an interval of one run) and reads it back.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Aggregate {
    #[serde(default, deserialize_with = "lenient")]
    pub n: Option<u64>,
    #[serde(default, deserialize_with = "lenient")]
    pub mean: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub std: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub min: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub max: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub ci95_low: Option<f64>,
    #[serde(default, deserialize_with = "lenient")]
    pub ci95_high: Option<f64>,
}

impl From<servebench_core::inference::Aggregate> for Aggregate {
    fn from(a: servebench_core::inference::Aggregate) -> Self {
        Aggregate {
            n: Some(a.n as u64),
            mean: Some(a.mean),
            std: a.std,
            min: Some(a.min),
            max: Some(a.max),
            ci95_low: a.ci95_low,
            ci95_high: a.ci95_high,
        }
    }
}

/// A multi-run summary: metric key → aggregate, in the document's order (keys that are not
/// metric keys, and aggregates that are not objects, are skipped when read).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary(pub Vec<(MetricKey, Aggregate)>);

impl<'de> Deserialize<'de> for Summary {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = Summary;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a multi-run summary object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Summary, A::Error> {
                let mut out: Vec<(MetricKey, Aggregate)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    let Some(key) = MetricKey::parse(&name) else {
                        map.next_value::<IgnoredAny>()?;
                        continue;
                    };
                    let Some(agg) = map.next_value::<Object<Aggregate>>()?.0 else { continue };
                    match out.iter_mut().find(|(k, _)| *k == key) {
                        Some(slot) => slot.1 = agg,
                        None => out.push((key, agg)),
                    }
                }
                Ok(Summary(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

impl Serialize for Summary {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, a) in &self.0 {
            map.serialize_entry(&k.to_string(), a)?;
        }
        map.end()
    }
}

impl ExperimentDocument {
    /// The experiment document `v` is, if it is an object naming its `servebench_experiment`.
    pub fn of(v: &serde_json::Value) -> Option<ExperimentDocument> {
        let doc = ExperimentDocument::deserialize(v.is_object().then_some(v)?).ok()?;
        doc.kind().is_some().then_some(doc)
    }

    /// The experiment's kind (`servebench_experiment`), when it names one.
    pub fn kind(&self) -> Option<&str> {
        self.servebench_experiment.as_deref()
    }

    /// The per-run results of a multi-run document (runs without a result object skipped).
    pub fn run_results(&self) -> Vec<Metrics> {
        let partial = self.partial_runs.as_deref().unwrap_or_default();
        let runs = self.runs.iter().flatten().enumerate();
        runs.filter(|(i, _)| !partial.contains(i)).filter_map(|(_, r)| r.0.as_ref()?.result.clone()).collect()
    }

    /// The across-run means of a multi-run document, as one set of metrics.
    pub fn summary_means(&self) -> Metrics {
        let mut means = Metrics::default();
        for (key, agg) in self.summary.iter().flat_map(|s| &s.0) {
            if agg.mean.is_some() {
                means.set(key, agg.mean);
            }
        }
        means
    }
}

//! The experiment documents (`servebench_experiment`: a sweep, `--find-max-rate`, `--slo`,
//! `--num-runs`; docs/experiments.md), as far as `compare` reads them: a multi-run document's
//! per-run results and its across-run summary.

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::lenient::{lenient, object, Object};
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
    /// `summary` of a multi-run document: the across-run aggregate of each metric key.
    #[serde(default, deserialize_with = "object")]
    pub summary: Option<Summary>,
}

/// One run of a multi-run document.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct RunEntry {
    #[serde(default, deserialize_with = "object")]
    pub result: Option<Metrics>,
    #[serde(default, deserialize_with = "lenient")]
    pub seed: Option<u64>,
}

/// The across-run aggregate of one metric (`{n, mean, std, min, max, ci95_low, ci95_high}`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
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

/// A multi-run summary: metric key → aggregate, in the document's order (keys that are not
/// metric keys, and aggregates that are not objects, are skipped).
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

impl ExperimentDocument {
    /// The experiment's kind (`servebench_experiment`), when it names one.
    pub fn kind(&self) -> Option<&str> {
        self.servebench_experiment.as_deref()
    }

    /// The per-run results of a multi-run document (runs without a result object skipped).
    pub fn run_results(&self) -> Vec<Metrics> {
        self.runs.iter().flatten().filter_map(|r| r.0.as_ref()?.result.clone()).collect()
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

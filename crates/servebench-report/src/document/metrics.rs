//! The metric keys of a result document, typed ([`crate::result_keys`] names them): the
//! headline numbers, every latency statistic in the document's order and the steady-state
//! throughputs. A multi-run summary's means have the same shape.

use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::lenient::{lenient, object, Lenient};
use crate::result_keys::{Headline, LatencyKey, LatencyMetric, MetricKey, SteadyKey};

/// The metrics of one result. A key that is missing, `null` or not a number is `None`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct Metrics {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub completed: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub failed: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub duration: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub request_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub request_goodput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub input_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub output_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub total_token_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub max_output_tokens_per_s: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub max_concurrent_requests: Option<f64>,
    /// `steady_state`: `None` when missing or `null` (no steady-state window).
    #[serde(default, deserialize_with = "object", skip_serializing_if = "Option::is_none")]
    pub steady_state: Option<SteadyMetrics>,
    /// Every `<stat>_<metric>_ms` key, in the document's order.
    #[serde(flatten)]
    pub latency: LatencyStats,
}

/// The steady-state throughputs (`steady_state`; docs/metrics.md).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct SteadyMetrics {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub request_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub output_throughput: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub total_token_throughput: Option<f64>,
}

impl SteadyMetrics {
    /// The value of `key`.
    pub fn get(&self, key: SteadyKey) -> Option<f64> {
        match key {
            SteadyKey::RequestThroughput => self.request_throughput,
            SteadyKey::OutputThroughput => self.output_throughput,
            SteadyKey::TotalTokenThroughput => self.total_token_throughput,
        }
    }
}

/// The latency statistics of a result (`p99_ttft_ms`, `mean_itl_ms`, ...) in the document's
/// order; `None` for a statistic without data (`null`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LatencyStats(pub Vec<(LatencyKey, Option<f64>)>);

impl LatencyStats {
    /// The value of `key`.
    pub fn get(&self, key: &LatencyKey) -> Option<f64> {
        self.0.iter().find(|(k, _)| k == key).and_then(|(_, v)| *v)
    }

    /// The keys with data of `metric`, in the document's order.
    pub fn keys_of(&self, metric: LatencyMetric) -> impl Iterator<Item = &LatencyKey> {
        self.0.iter().filter(move |(k, v)| k.metric == metric && v.is_some()).map(|(k, _)| k)
    }

    fn set(&mut self, key: LatencyKey, v: Option<f64>) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = v,
            None => self.0.push((key, v)),
        }
    }
}

impl<'de> Deserialize<'de> for LatencyStats {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Keys;
        impl<'de> Visitor<'de> for Keys {
            type Value = LatencyStats;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a result object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<LatencyStats, A::Error> {
                let mut out = LatencyStats::default();
                while let Some(name) = map.next_key::<String>()? {
                    match LatencyKey::parse(&name) {
                        Some(key) => out.set(key, map.next_value::<Lenient<f64>>()?.0),
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(out)
            }
        }
        d.deserialize_map(Keys)
    }
}

impl Serialize for LatencyStats {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(&k.to_string(), v)?;
        }
        map.end()
    }
}

impl Metrics {
    /// The first value no run can have, as `key is value: why` (`None` when every value is
    /// possible): a count that is negative or not whole, a duration, rate or latency that is
    /// negative or not finite. `report` and `compare` refuse such a file (SB208) rather than
    /// show figures computed from it (a `completed` of −5 read as 0, a duration of −3 s).
    pub fn impossible_value(&self) -> Option<String> {
        let count = |v: f64| v.is_finite() && v >= 0.0 && v.fract() == 0.0;
        let amount = |v: f64| v.is_finite() && v >= 0.0;
        for key in Headline::ALL {
            let Some(v) = self.headline(key) else { continue };
            let (ok, what) = match key {
                Headline::Completed | Headline::Failed | Headline::MaxConcurrentRequests => {
                    (count(v), "a count is a non-negative whole number")
                }
                _ => (amount(v), "a duration or rate is a non-negative finite number"),
            };
            if !ok {
                return Some(format!("`{}` is {v}: {what}", key.key()));
            }
        }
        self.latency.0.iter().find_map(|(k, v)| {
            v.filter(|v| !amount(*v))
                .map(|v| format!("`{k}` is {v}: a latency is a non-negative finite number"))
        })
    }

    /// The value of a headline key.
    pub fn headline(&self, key: Headline) -> Option<f64> {
        match key {
            Headline::Completed => self.completed,
            Headline::Failed => self.failed,
            Headline::Duration => self.duration,
            Headline::RequestThroughput => self.request_throughput,
            Headline::RequestGoodput => self.request_goodput,
            Headline::InputThroughput => self.input_throughput,
            Headline::OutputThroughput => self.output_throughput,
            Headline::TotalTokenThroughput => self.total_token_throughput,
            Headline::MaxOutputTokensPerS => self.max_output_tokens_per_s,
            Headline::MaxConcurrentRequests => self.max_concurrent_requests,
        }
    }

    fn headline_mut(&mut self, key: Headline) -> &mut Option<f64> {
        match key {
            Headline::Completed => &mut self.completed,
            Headline::Failed => &mut self.failed,
            Headline::Duration => &mut self.duration,
            Headline::RequestThroughput => &mut self.request_throughput,
            Headline::RequestGoodput => &mut self.request_goodput,
            Headline::InputThroughput => &mut self.input_throughput,
            Headline::OutputThroughput => &mut self.output_throughput,
            Headline::TotalTokenThroughput => &mut self.total_token_throughput,
            Headline::MaxOutputTokensPerS => &mut self.max_output_tokens_per_s,
            Headline::MaxConcurrentRequests => &mut self.max_concurrent_requests,
        }
    }

    /// The value of `key`; `None` without data.
    pub fn get(&self, key: &MetricKey) -> Option<f64> {
        match key {
            MetricKey::Headline(h) => self.headline(*h),
            MetricKey::Latency(k) => self.latency.get(k),
            MetricKey::Steady(k) => self.steady_state.as_ref().and_then(|s| s.get(*k)),
        }
    }

    /// Sets `key` (a multi-run summary's mean, for one).
    pub fn set(&mut self, key: &MetricKey, v: Option<f64>) {
        match key {
            MetricKey::Headline(h) => *self.headline_mut(*h) = v,
            MetricKey::Latency(k) => self.latency.set(k.clone(), v),
            MetricKey::Steady(k) => {
                let s = self.steady_state.get_or_insert_with(SteadyMetrics::default);
                let slot = match k {
                    SteadyKey::RequestThroughput => &mut s.request_throughput,
                    SteadyKey::OutputThroughput => &mut s.output_throughput,
                    SteadyKey::TotalTokenThroughput => &mut s.total_token_throughput,
                };
                *slot = v;
            }
        }
    }

    /// The keys this result has data for: the headline, every latency statistic (by metric, in
    /// the result's order within one) and the steady-state throughputs.
    pub fn keys(&self) -> Vec<MetricKey> {
        let mut keys: Vec<MetricKey> = Headline::ALL
            .into_iter()
            .filter(|h| self.headline(*h).is_some())
            .map(MetricKey::Headline)
            .collect();
        for m in LatencyMetric::ALL {
            keys.extend(self.latency.keys_of(m).cloned().map(MetricKey::Latency));
        }
        let steady = self.steady_state.as_ref();
        keys.extend(
            SteadyKey::ALL
                .into_iter()
                .filter(|k| steady.and_then(|s| s.get(*k)).is_some())
                .map(MetricKey::Steady),
        );
        keys
    }
}

impl Metrics {
    /// vLLM's `0.0` placeholders read as no data (docs/metrics.md, "Metrics without data"):
    /// under vLLM's keys a result (ours or vLLM's) writes `0.0` where there is no data, so with
    /// `duration` 0 the duration and vLLM's rates are no data, and with `completed` 0 so are the
    /// statistics of vLLM's latency metrics. For `compare`, which shows "n/a" for no data.
    pub fn vllm_placeholders_as_none(mut self) -> Self {
        if self.duration == Some(0.0) {
            for v in [
                &mut self.duration,
                &mut self.request_throughput,
                &mut self.request_goodput,
                &mut self.output_throughput,
                &mut self.total_token_throughput,
                &mut self.max_output_tokens_per_s,
            ] {
                *v = None;
            }
        }
        if self.completed == Some(0.0) {
            self.latency.0.iter_mut().filter(|(_, v)| *v == Some(0.0)).for_each(|(_, v)| *v = None);
        }
        self
    }

    /// [`Metrics::vllm_placeholders_as_none`], knowing the run the document was written from:
    /// also a latency metric without one sample is no data (TPOT of one-token outputs, ITL of
    /// single-event streams: vLLM's keys say `0.0`). For aggregates over runs (`--num-runs`),
    /// which must not average a placeholder as a measurement.
    pub fn no_data_as_none(self, run: &servebench_core::metrics::RunMetrics) -> Self {
        let mut m = self.vllm_placeholders_as_none();
        let samples = |metric: LatencyMetric| match metric {
            LatencyMetric::Ttft => run.ttft.count,
            LatencyMetric::Tpot => run.tpot.count,
            LatencyMetric::Itl => run.itl.count,
            LatencyMetric::E2el => run.e2el.count,
        };
        m.latency.0.iter_mut().filter(|(k, _)| samples(k.metric) == 0).for_each(|(_, v)| *v = None);
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_with_data_in_report_order() {
        let v = serde_json::json!({"p99_ttft_ms": 1.0, "completed": 3, "mean_queue_time_ms": 2.0,
            "mean_itl_ms": null, "duration": "soon", "steady_state": {"request_throughput": 4.0}});
        let m: Metrics = serde_json::from_value(v).unwrap();
        let keys: Vec<String> = m.keys().iter().map(ToString::to_string).collect();
        assert_eq!(keys, vec!["completed", "p99_ttft_ms", "steady_state.request_throughput"]);
        assert_eq!(m.get(&MetricKey::parse("steady_state.request_throughput").unwrap()), Some(4.0));
        let m: Metrics = serde_json::from_value(serde_json::json!({"p99.9_itl_ms": 2.0})).unwrap();
        assert_eq!(m.get(&MetricKey::parse("p99.9_itl_ms").unwrap()), Some(2.0));
        let m: Metrics = serde_json::from_value(serde_json::json!({"steady_state": null})).unwrap();
        assert!(m.keys().is_empty());
    }

    #[test]
    fn vllms_zero_placeholders_read_as_no_data() {
        let v = serde_json::json!({"completed": 0, "duration": 0.0, "request_throughput": 0.0,
            "mean_ttft_ms": 0.0, "mean_queue_time_ms": 2.0});
        let m: Metrics = serde_json::from_value::<Metrics>(v).unwrap().vllm_placeholders_as_none();
        assert_eq!((m.duration, m.request_throughput), (None, None));
        assert_eq!(m.get(&MetricKey::parse("mean_ttft_ms").unwrap()), None);
        assert_eq!(m.completed, Some(0.0), "a count is a count");
        let v = serde_json::json!({"completed": 3, "duration": 1.5, "mean_tpot_ms": 0.0});
        let m: Metrics = serde_json::from_value::<Metrics>(v).unwrap().vllm_placeholders_as_none();
        assert_eq!(m.duration, Some(1.5));
        assert_eq!(m.get(&MetricKey::parse("mean_tpot_ms").unwrap()), Some(0.0), "not told from data");
    }
}

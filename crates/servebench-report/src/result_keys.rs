//! The metric keys of a result document, typed: which keys multi-run summaries and `compare`
//! report (headline, latency statistics, steady-state throughputs), their JSON names and which
//! way is better. One table per key family; the names are vLLM's (`docs/metrics.md`).

use std::fmt;

/// Headline keys, in report order (vLLM's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Headline {
    Completed,
    Failed,
    Duration,
    RequestThroughput,
    RequestGoodput,
    InputThroughput,
    OutputThroughput,
    TotalTokenThroughput,
    MaxOutputTokensPerS,
    MaxConcurrentRequests,
}

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    Neither,
}

impl Headline {
    /// Every headline key, in report order.
    pub const ALL: [Headline; 10] = [
        Headline::Completed,
        Headline::Failed,
        Headline::Duration,
        Headline::RequestThroughput,
        Headline::RequestGoodput,
        Headline::InputThroughput,
        Headline::OutputThroughput,
        Headline::TotalTokenThroughput,
        Headline::MaxOutputTokensPerS,
        Headline::MaxConcurrentRequests,
    ];

    /// The key's name in the result JSON, and which way is better: durations and failures
    /// lower; throughputs, goodput and completions higher; peak concurrency neither.
    const fn spec(self) -> (&'static str, Better) {
        match self {
            Headline::Completed => ("completed", Better::Higher),
            Headline::Failed => ("failed", Better::Lower),
            Headline::Duration => ("duration", Better::Lower),
            Headline::RequestThroughput => ("request_throughput", Better::Higher),
            Headline::RequestGoodput => ("request_goodput", Better::Higher),
            Headline::InputThroughput => ("input_throughput", Better::Higher),
            Headline::OutputThroughput => ("output_throughput", Better::Higher),
            Headline::TotalTokenThroughput => ("total_token_throughput", Better::Higher),
            Headline::MaxOutputTokensPerS => ("max_output_tokens_per_s", Better::Higher),
            Headline::MaxConcurrentRequests => ("max_concurrent_requests", Better::Neither),
        }
    }

    /// The key's name in the result JSON.
    pub const fn key(self) -> &'static str {
        self.spec().0
    }
}

/// Steady-state keys (inside `steady_state`), reported as `steady_state.<key>`; all throughputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SteadyKey {
    RequestThroughput,
    OutputThroughput,
    TotalTokenThroughput,
}

impl SteadyKey {
    /// Every steady-state key, in report order.
    pub const ALL: [SteadyKey; 3] =
        [SteadyKey::RequestThroughput, SteadyKey::OutputThroughput, SteadyKey::TotalTokenThroughput];

    /// The key's name inside `steady_state`.
    pub const fn key(self) -> &'static str {
        match self {
            SteadyKey::RequestThroughput => "request_throughput",
            SteadyKey::OutputThroughput => "output_throughput",
            SteadyKey::TotalTokenThroughput => "total_token_throughput",
        }
    }
}

/// A per-request latency metric of vLLM's (its statistics are `<stat>_<metric>_ms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LatencyMetric {
    Ttft,
    Tpot,
    Itl,
    E2el,
}

impl LatencyMetric {
    /// Every latency metric, in report order.
    pub const ALL: [LatencyMetric; 4] =
        [LatencyMetric::Ttft, LatencyMetric::Tpot, LatencyMetric::Itl, LatencyMetric::E2el];

    /// The metric's name in keys (`ttft`).
    pub const fn name(self) -> &'static str {
        match self {
            LatencyMetric::Ttft => "ttft",
            LatencyMetric::Tpot => "tpot",
            LatencyMetric::Itl => "itl",
            LatencyMetric::E2el => "e2el",
        }
    }
}

/// A statistic of a latency metric: `mean`, `median`, `std` or a percentile `pP` (P kept as
/// written, e.g. `99.9`, so the key prints back unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Stat {
    Mean,
    Median,
    Std,
    Percentile(String),
}

impl Stat {
    fn parse(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Mean),
            "median" => Some(Stat::Median),
            "std" => Some(Stat::Std),
            _ => {
                let p = s.strip_prefix('p')?;
                p.parse::<f64>().is_ok().then(|| Stat::Percentile(p.to_owned()))
            }
        }
    }
}

impl fmt::Display for Stat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stat::Mean => f.write_str("mean"),
            Stat::Median => f.write_str("median"),
            Stat::Std => f.write_str("std"),
            Stat::Percentile(p) => write!(f, "p{p}"),
        }
    }
}

/// A latency statistic key, `<stat>_<metric>_ms` (`p99_ttft_ms`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LatencyKey {
    pub stat: Stat,
    pub metric: LatencyMetric,
}

impl LatencyKey {
    /// The key `name` names, if it is a latency statistic (`mean_response_ttft_ms` is not).
    pub fn parse(name: &str) -> Option<LatencyKey> {
        let stem = name.strip_suffix("_ms")?;
        LatencyMetric::ALL.into_iter().find_map(|metric| {
            let stat = stem.strip_suffix(metric.name())?.strip_suffix('_')?;
            Some(LatencyKey { stat: Stat::parse(stat)?, metric })
        })
    }
}

impl fmt::Display for LatencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}_{}_ms", self.stat, self.metric.name())
    }
}

/// A metric key of a result document, as `compare` and multi-run summaries name it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum MetricKey {
    Headline(Headline),
    Latency(LatencyKey),
    Steady(SteadyKey),
}

impl MetricKey {
    /// The key named `name` (`p99_ttft_ms`, `steady_state.request_throughput`, `completed`).
    pub fn parse(name: &str) -> Option<MetricKey> {
        if let Some(rest) = name.strip_prefix("steady_state.") {
            return SteadyKey::ALL.into_iter().find(|k| k.key() == rest).map(MetricKey::Steady);
        }
        if let Some(h) = Headline::ALL.into_iter().find(|h| h.key() == name) {
            return Some(MetricKey::Headline(h));
        }
        LatencyKey::parse(name).map(MetricKey::Latency)
    }

    /// Which direction of change is an improvement: latencies lower, steady-state throughputs
    /// higher, headline keys by their table.
    pub fn better(&self) -> Better {
        match self {
            MetricKey::Headline(h) => h.spec().1,
            MetricKey::Latency(_) => Better::Lower,
            MetricKey::Steady(_) => Better::Higher,
        }
    }

    /// The latency metric a key is a statistic of (`p99_ttft_ms` → `ttft`).
    pub fn latency_metric(&self) -> Option<LatencyMetric> {
        match self {
            MetricKey::Latency(k) => Some(k.metric),
            _ => None,
        }
    }
}

impl fmt::Display for MetricKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MetricKey::Headline(h) => f.write_str(h.key()),
            MetricKey::Latency(k) => k.fmt(f),
            MetricKey::Steady(k) => write!(f, "steady_state.{}", k.key()),
        }
    }
}

impl serde::Serialize for MetricKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn better(key: &str) -> Better {
        MetricKey::parse(key).unwrap().better()
    }

    fn latency_metric(key: &str) -> Option<&'static str> {
        MetricKey::parse(key).and_then(|k| k.latency_metric()).map(LatencyMetric::name)
    }

    #[test]
    fn directions_and_latency_keys() {
        assert_eq!(better("p99_ttft_ms"), Better::Lower);
        assert_eq!(better("request_throughput"), Better::Higher);
        assert_eq!(better("steady_state.output_throughput"), Better::Higher);
        assert_eq!(better("max_concurrent_requests"), Better::Neither);
        assert_eq!(latency_metric("p99.9_itl_ms"), Some("itl"));
        assert_eq!(latency_metric("mean_e2el_ms"), Some("e2el"));
        assert_eq!(latency_metric("mean_response_ttft_ms"), None);
        assert_eq!(MetricKey::parse("mean_queue_time_ms"), None);
        assert_eq!(MetricKey::parse("steady_state.duration"), None);
    }

    #[test]
    fn keys_print_back_as_parsed() {
        for k in [
            "completed",
            "max_output_tokens_per_s",
            "p99.9_itl_ms",
            "p50_tpot_ms",
            "std_e2el_ms",
            "median_ttft_ms",
            "steady_state.total_token_throughput",
        ] {
            assert_eq!(MetricKey::parse(k).unwrap().to_string(), k);
        }
    }
}

//! Which result-JSON keys multi-run summaries and `compare` report, and which way is better
//! (the metric keys of a result document, read by name: `value_at`).

use serde_json::Value;

/// Headline keys, in report order (vLLM's names).
pub const HEADLINE: &[&str] = &[
    "completed",
    "failed",
    "duration",
    "request_throughput",
    "request_goodput",
    "input_throughput",
    "output_throughput",
    "total_token_throughput",
    "max_output_tokens_per_s",
    "max_concurrent_requests",
];

/// Steady-state keys (inside `steady_state`), reported as `steady_state.<key>`.
pub const STEADY: &[&str] = &["request_throughput", "output_throughput", "total_token_throughput"];

const LATENCY_METRICS: &[&str] = &["ttft", "tpot", "itl", "e2el"];

/// Which direction of change is an improvement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    Neither,
}

/// Direction of `key`: latencies, duration and failures are better lower; throughputs,
/// goodput and completions higher; peak concurrency is neither.
pub fn better(key: &str) -> Better {
    let k = leaf(key);
    if k.ends_with("_ms") || k == "duration" || k == "failed" {
        Better::Lower
    } else if k.contains("throughput")
        || k.contains("goodput")
        || k == "completed"
        || k == "max_output_tokens_per_s"
    {
        Better::Higher
    } else {
        Better::Neither
    }
}

/// The latency metric a key is a statistic of (`p99_ttft_ms` → `ttft`).
pub fn latency_metric(key: &str) -> Option<&'static str> {
    let k = leaf(key);
    let stem = k.strip_suffix("_ms")?;
    LATENCY_METRICS.iter().copied().find(|m| {
        stem.strip_suffix(m).and_then(|s| s.strip_suffix('_')).is_some_and(|stat| {
            stat == "mean"
                || stat == "median"
                || stat == "std"
                || stat.strip_prefix('p').is_some_and(|p| p.parse::<f64>().is_ok())
        })
    })
}

/// The key without a `steady_state.` prefix.
fn leaf(key: &str) -> &str {
    key.strip_prefix("steady_state.").unwrap_or(key)
}

/// The number at `key` in a JSON object: the key itself (`p99.9_itl_ms`), else an `a.b` path
/// (`steady_state.request_throughput`).
pub fn value_at(v: &Value, key: &str) -> Option<f64> {
    if let Some(x) = v.get(key) {
        return x.as_f64();
    }
    let (head, rest) = key.split_once('.')?;
    value_at(v.get(head)?, rest)
}

/// Keys a result reports: the headline, every latency statistic (`mean_/median_/std_/pP_` ×
/// ttft/tpot/itl/e2el, in the result's order) and the steady-state throughputs.
pub fn metric_keys(result: &Value) -> Vec<String> {
    let mut keys: Vec<String> =
        HEADLINE.iter().filter(|k| value_at(result, k).is_some()).map(|k| (*k).to_owned()).collect();
    if let Some(o) = result.as_object() {
        for m in LATENCY_METRICS {
            keys.extend(
                o.keys().filter(|k| latency_metric(k) == Some(m) && o[k.as_str()].is_number()).cloned(),
            );
        }
    }
    for k in STEADY {
        let key = format!("steady_state.{k}");
        if value_at(result, &key).is_some() {
            keys.push(key);
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directions_and_latency_keys() {
        assert_eq!(better("p99_ttft_ms"), Better::Lower);
        assert_eq!(better("request_throughput"), Better::Higher);
        assert_eq!(better("steady_state.output_throughput"), Better::Higher);
        assert_eq!(better("max_concurrent_requests"), Better::Neither);
        assert_eq!(latency_metric("p99.9_itl_ms"), Some("itl"));
        assert_eq!(latency_metric("mean_e2el_ms"), Some("e2el"));
        assert_eq!(latency_metric("mean_response_ttft_ms"), None);
        let v = serde_json::json!({"completed": 3, "p99_ttft_ms": 1.0, "mean_queue_time_ms": 2.0,
            "steady_state": {"request_throughput": 4.0}});
        assert_eq!(metric_keys(&v), vec!["completed", "p99_ttft_ms", "steady_state.request_throughput"]);
        assert_eq!(value_at(&v, "steady_state.request_throughput"), Some(4.0));
        assert_eq!(value_at(&serde_json::json!({"p99.9_itl_ms": 2.0}), "p99.9_itl_ms"), Some(2.0));
    }
}

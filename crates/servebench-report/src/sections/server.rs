//! The server section: what `--scrape-metrics` and `--profile` saw of the server during the
//! measured phase (docs/metrics.md, "Server metrics"). The runner scrapes and profiles
//! (`servebench_runner::observe`); this section owns the figures' types, their console block and
//! their keys in the result document (`server_metrics`, vllm-bench's top-level `spec_decode_*`,
//! `profile`).

use serde::Serialize;

/// One poll of `/metrics`. `None` where the server does not export the metric.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScrapeSample {
    /// Seconds since the scraper started (the start of the measured phase).
    pub t_s: f64,
    /// The baseline poll (before the first request) or the final poll (after the last ended):
    /// in the counters' deltas, left out of the gauges' means (docs/metrics.md).
    pub phase_edge: bool,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV cache usage, 0..1.
    pub kv_cache_usage: Option<f64>,
    pub prefix_cache_queries: Option<f64>,
    pub prefix_cache_hits: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    pub spec_decode_num_drafts: Option<f64>,
    pub spec_decode_draft_tokens: Option<f64>,
    pub spec_decode_accepted_tokens: Option<f64>,
    /// `vllm:spec_decode_num_accepted_tokens_per_pos_total` by its `position` label (index =
    /// position), summed over the other labels; empty when the server has no such series.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub spec_decode_accepted_per_position: Vec<f64>,
}

/// Run-level figures derived from the series.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerDerived {
    pub mean_running: Option<f64>,
    /// Mean of `vllm:num_requests_waiting` over the samples: the server's queue depth.
    pub mean_queue_depth: Option<f64>,
    pub max_queue_depth: Option<f64>,
    pub mean_kv_cache_usage: Option<f64>,
    pub max_kv_cache_usage: Option<f64>,
    /// Δhits / Δqueries over the phase (prompt tokens found in the prefix cache), 0..1.
    pub prefix_cache_hit_rate: Option<f64>,
    pub prompt_tokens: Option<f64>,
    pub generation_tokens: Option<f64>,
    /// Δaccepted / Δdraft tokens × 100 (vllm-bench's `spec_decode_acceptance_rate`).
    pub spec_decode_acceptance_rate: Option<f64>,
    /// 1 + Δaccepted / Δdrafts (vllm-bench's `spec_decode_acceptance_length`).
    pub spec_decode_acceptance_length: Option<f64>,
    pub spec_decode_num_drafts: Option<f64>,
    pub spec_decode_draft_tokens: Option<f64>,
    pub spec_decode_accepted_tokens: Option<f64>,
    /// Δaccepted at position `i` / Δdrafts, for each draft position (vllm-bench's
    /// `spec_decode_per_position_acceptance_rates`); `None` without the per-position series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_per_position_acceptance_rates: Option<Vec<f64>>,
}

/// What `--scrape-metrics` produced (the result's `server_metrics`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerMetrics {
    pub interval_s: f64,
    /// Polls that failed (transport error, non-2xx, unparsable body).
    pub failed_scrapes: u64,
    pub last_error: Option<String>,
    pub samples: Vec<ScrapeSample>,
    pub derived: ServerDerived,
    /// Every endpoint scraped (`--server-metrics-url`, and the base URL's `/metrics` with
    /// `--scrape-metrics`), summarised per known meaning; absent when none was (older keys only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<super::server_endpoints::EndpointSummary>,
    /// The JSON Lines file of every scraped series (docs/metrics.md, "The server-metrics
    /// file"), named beside the result; absent when nothing was written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub series_file: Option<String>,
}

/// What the profiler did, seconds from the start of the measured phase (the result's `profile`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ProfileOutcome {
    pub started_at_s: Option<f64>,
    pub stopped_at_s: Option<f64>,
    /// Why profiling did not start or stop cleanly (failures only warn, as in vllm-bench).
    pub warnings: Vec<String>,
}

/// The console block of the server-side view.
pub fn console_block(m: &ServerMetrics) -> String {
    let d = &m.derived;
    let mut out = format!("{:=^50}\n", " Server Metrics (/metrics) ");
    let row = |out: &mut String, k: &str, v: Option<f64>, digits: usize| {
        let v = v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.digits$}"));
        out.push_str(&format!("{k:<40}{v:<10}\n"));
    };
    row(&mut out, "Samples:", Some(m.samples.len() as f64), 0);
    row(&mut out, "Mean running requests:", d.mean_running, 2);
    row(&mut out, "Mean queue depth (waiting):", d.mean_queue_depth, 2);
    row(&mut out, "Max queue depth:", d.max_queue_depth, 0);
    row(&mut out, "Mean KV cache usage (%):", d.mean_kv_cache_usage.map(|v| v * 100.0), 2);
    row(&mut out, "Prefix cache hit rate (%):", d.prefix_cache_hit_rate.map(|v| v * 100.0), 2);
    row(&mut out, "Spec decode acceptance rate (%):", d.spec_decode_acceptance_rate, 2);
    row(&mut out, "Spec decode acceptance length:", d.spec_decode_acceptance_length, 2);
    if let Some(rates) = &d.spec_decode_per_position_acceptance_rates {
        let shown: Vec<String> = rates.iter().map(|r| format!("{:.1}", r * 100.0)).collect();
        out.push_str(&format!("{:<40}{}\n", "Spec decode acceptance by position (%):", shown.join(", ")));
    }
    if m.failed_scrapes > 0 {
        out.push_str(&format!(
            "warning: {} /metrics polls failed (last: {})\n",
            m.failed_scrapes,
            m.last_error.as_deref().unwrap_or("?")
        ));
    }
    out.push_str(&"=".repeat(50));
    out
}

/// vllm-bench's top-level spec-decode keys, from the same counters as `server_metrics.derived`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpecDecodeKeys {
    pub spec_decode_acceptance_rate: Option<f64>,
    pub spec_decode_acceptance_length: Option<f64>,
    pub spec_decode_num_drafts: Option<f64>,
    pub spec_decode_draft_tokens: Option<f64>,
    pub spec_decode_accepted_tokens: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spec_decode_per_position_acceptance_rates: Option<Vec<f64>>,
}

impl SpecDecodeKeys {
    /// The keys, when the server drafted tokens during the run.
    pub fn of(d: &ServerDerived) -> Option<SpecDecodeKeys> {
        d.spec_decode_draft_tokens.is_some_and(|t| t > 0.0).then_some(SpecDecodeKeys {
            spec_decode_acceptance_rate: d.spec_decode_acceptance_rate,
            spec_decode_acceptance_length: d.spec_decode_acceptance_length,
            spec_decode_num_drafts: d.spec_decode_num_drafts,
            spec_decode_draft_tokens: d.spec_decode_draft_tokens,
            spec_decode_accepted_tokens: d.spec_decode_accepted_tokens,
            spec_decode_per_position_acceptance_rates: d.spec_decode_per_position_acceptance_rates.clone(),
        })
    }
}

/// The section's keys in a result document: `server_metrics` (and the spec-decode keys) when
/// the run scraped, `profile` when it profiled; nothing otherwise.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ServerSection {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub spec_decode: Option<SpecDecodeKeys>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileOutcome>,
    /// `--gpu-metrics`: where the readings came from (or why there are none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_telemetry: Option<super::server_endpoints::GpuTelemetry>,
    /// `--gpu-metrics`: the energy figures; `null` when telemetry was asked and gave no energy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_energy: Option<Option<super::server_endpoints::GpuEnergy>>,
}

impl ServerSection {
    /// The section of a run that scraped `server` and profiled `profile` (either may be absent).
    pub fn new(server: Option<&ServerMetrics>, profile: Option<&ProfileOutcome>) -> ServerSection {
        ServerSection {
            server_metrics: server.cloned(),
            spec_decode: server.and_then(|s| SpecDecodeKeys::of(&s.derived)),
            profile: profile.cloned(),
            gpu_telemetry: None,
            gpu_energy: None,
        }
    }

    /// With the GPU telemetry of the run (when it asked for it) and its energy figures.
    pub fn with_gpu(
        mut self,
        gpu: Option<(&super::server_endpoints::GpuTelemetry, Option<&super::server_endpoints::GpuEnergy>)>,
    ) -> ServerSection {
        if let Some((t, e)) = gpu {
            self.gpu_telemetry = Some(t.clone());
            self.gpu_energy = Some(e.cloned());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_decode_keys_only_when_tokens_were_drafted() {
        let mut m = ServerMetrics { interval_s: 1.0, ..ServerMetrics::default() };
        let v = serde_json::to_value(ServerSection::new(Some(&m), None)).unwrap_or_default();
        let keys: Vec<&String> = v.as_object().into_iter().flat_map(|o| o.keys()).collect();
        assert_eq!(keys, ["server_metrics"]);
        m.derived.spec_decode_draft_tokens = Some(8.0);
        m.derived.spec_decode_accepted_tokens = Some(6.0);
        let profile = ProfileOutcome { started_at_s: Some(0.5), ..ProfileOutcome::default() };
        let v = serde_json::to_value(ServerSection::new(Some(&m), Some(&profile))).unwrap_or_default();
        let keys: Vec<&String> = v.as_object().into_iter().flat_map(|o| o.keys()).collect();
        assert_eq!(
            keys,
            [
                "server_metrics",
                "spec_decode_acceptance_rate",
                "spec_decode_acceptance_length",
                "spec_decode_num_drafts",
                "spec_decode_draft_tokens",
                "spec_decode_accepted_tokens",
                "profile"
            ]
        );
        assert_eq!(v["spec_decode_accepted_tokens"], 6.0);
        assert!(serde_json::to_value(ServerSection::default())
            .unwrap_or_default()
            .as_object()
            .is_some_and(|o| o.is_empty()));
    }
}

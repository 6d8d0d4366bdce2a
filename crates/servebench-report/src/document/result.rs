//! The result document of one run (`--save-result`; vLLM's keys, then servebench's): what
//! `report`, `compare` and `merge` read back. vLLM-written results parse too (their keys are
//! a subset, plus the `--save-detailed` arrays).

use serde::{Deserialize, Serialize};

use super::lenient::{lenient, number_lists, numbers, object, shown, strings, Lenient, Object, Shown};
use super::metrics::Metrics;

/// One run's result document. Every field is optional (older files, vLLM's, a merge lack
/// some); a value of an unexpected shape reads as absent; unknown keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ResultDocument {
    /// How the run was configured, shown as written.
    #[serde(flatten)]
    pub run: RunConfig,
    /// `label`: the run's label when it is a string (vLLM writes `null` without `--label`).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(flatten)]
    pub metrics: Metrics,
    #[serde(default, deserialize_with = "object", skip_serializing_if = "Option::is_none")]
    pub client_health: Option<ClientHealthDoc>,
    /// `run_origin_unix_us`: the wall-clock time of the run's monotonic origin (µs since the
    /// Unix epoch; record times are offsets from it).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub run_origin_unix_us: Option<u64>,
    /// `records_file`: the records' file name, when not `<result>.records.jsonl`.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub records_file: Option<String>,
    /// `server_metrics` (`--scrape-metrics`).
    #[serde(default, deserialize_with = "object", skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetricsDoc>,
    /// `early_stop`: why and when the run stopped early (`null` when it ran to its end).
    #[serde(default, deserialize_with = "object", skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<servebench_core::early_stop::EarlyStopReport>,
    /// `gpu_energy` (GPU telemetry and energy); `None` when missing, null or malformed.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub gpu_energy: Option<crate::server_summary::GpuEnergy>,
    #[serde(flatten)]
    pub detailed: DetailedArrays,
    /// `shards` of a merged result (`servebench merge`).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub shards: Option<Vec<Object<super::ShardEntry>>>,
    /// `validity` (docs/metrics.md, "Run validity").
    #[serde(default, deserialize_with = "object", skip_serializing_if = "Option::is_none")]
    pub validity: Option<servebench_core::validity::Validity>,
    /// `percentiles`: the run's `--metric-percentiles` (servebench results; vLLM's have none).
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<Vec<f64>>,
    /// `merge_warnings` of a merged result.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub merge_warnings: Option<Vec<Lenient<String>>>,
}

/// The run's configuration keys (vLLM's), shown as written: `request_rate` is a number or
/// `"inf"`, a key may be `null`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct RunConfig {
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub date: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub model_id: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub tokenizer_id: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub backend: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub num_prompts: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub request_rate: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub burstiness: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub ramp_up_strategy: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub ramp_up_start_rps: Option<Shown>,
    #[serde(default, deserialize_with = "shown", skip_serializing_if = "Option::is_none")]
    pub ramp_up_end_rps: Option<Shown>,
}

impl RunConfig {
    /// The configuration rows of a report header, `(name, value)`, for the keys present.
    pub fn rows(&self) -> Vec<(String, String)> {
        [
            ("date", &self.date),
            ("model", &self.model_id),
            ("tokenizer", &self.tokenizer_id),
            ("backend", &self.backend),
            ("prompts", &self.num_prompts),
            ("request rate (req/s)", &self.request_rate),
            ("burstiness", &self.burstiness),
            ("max concurrency", &self.max_concurrency),
            ("ramp-up", &self.ramp_up_strategy),
            ("ramp-up start (req/s)", &self.ramp_up_start_rps),
            ("ramp-up end (req/s)", &self.ramp_up_end_rps),
        ]
        .into_iter()
        .filter_map(|(name, v)| v.as_ref().map(|v| (name.to_owned(), v.text())))
        .collect()
    }
}

/// `client_health`: the client's self-measurement (docs/metrics.md, "Client health").
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ClientHealthDoc {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub dispatch_lateness_p50_ms: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub dispatch_lateness_p99_ms: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub hiccup_p99_ms: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub client_cpu_percent: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub available_cores: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub client_cpu_seconds: Option<f64>,
    /// `warnings`; an entry that is not a string is skipped.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub warnings: Option<Vec<Lenient<String>>>,
}

impl ClientHealthDoc {
    /// The client-health rows of a report header, `(name, value)`, for the numbers present.
    pub fn rows(&self) -> Vec<(String, String)> {
        [
            ("dispatch lateness p50", self.dispatch_lateness_p50_ms, " ms"),
            ("dispatch lateness p99", self.dispatch_lateness_p99_ms, " ms"),
            ("event-loop hiccup p99", self.hiccup_p99_ms, " ms"),
            ("client CPU (% of one core)", self.client_cpu_percent, " %"),
            ("available cores", self.available_cores, ""),
            ("peak RSS", self.peak_rss_bytes.map(|b| b / 1_048_576.0), " MiB"),
        ]
        .into_iter()
        .filter_map(|(name, v, unit)| {
            let v = v?;
            let text = match unit {
                "" => format!("{v}"),
                " MiB" => format!("{v:.1}{unit}"),
                _ => format!("{v:.2}{unit}"),
            };
            Some((name.to_owned(), text))
        })
        .collect()
    }

    /// The warnings that are strings.
    pub fn warning_texts(&self) -> impl Iterator<Item = &str> {
        self.warnings.iter().flatten().filter_map(|w| w.0.as_deref())
    }
}

/// `server_metrics`: the series scraped from the server during the run.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ServerMetricsDoc {
    /// `samples`; `None` when missing or not an array.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub samples: Option<Vec<Object<ServerSampleDoc>>>,
    /// `endpoints`: every scraped endpoint's summary; `None` when missing or malformed.
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<crate::server_summary::EndpointSummary>>,
}

/// One scrape (`server_metrics.samples[i]`).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct ServerSampleDoc {
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub t_s: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub kv_cache_usage: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub prefix_cache_queries: Option<f64>,
    #[serde(default, deserialize_with = "lenient", skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hits: Option<f64>,
}

/// vLLM's per-request arrays (seconds, one entry per request; `--save-detailed` for some).
/// An entry that is not a number (`null`) is `None`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
pub struct DetailedArrays {
    #[serde(default, deserialize_with = "numbers", skip_serializing_if = "Option::is_none")]
    pub ttfts: Option<Vec<Option<f64>>>,
    #[serde(default, deserialize_with = "numbers", skip_serializing_if = "Option::is_none")]
    pub latencies: Option<Vec<Option<f64>>>,
    #[serde(default, deserialize_with = "numbers", skip_serializing_if = "Option::is_none")]
    pub output_lens: Option<Vec<Option<f64>>>,
    /// `itls`: one array of gaps per request; an entry that is not an array is `None`.
    #[serde(default, deserialize_with = "number_lists", skip_serializing_if = "Option::is_none")]
    pub itls: Option<super::lenient::GapLists>,
    /// Prompt tokens per request.
    #[serde(default, deserialize_with = "numbers", skip_serializing_if = "Option::is_none")]
    pub input_lens: Option<Vec<Option<f64>>>,
    /// When each request started (s, on the client's clock; vLLM 0.33 writes them).
    #[serde(default, deserialize_with = "numbers", skip_serializing_if = "Option::is_none")]
    pub start_times: Option<Vec<Option<f64>>>,
    /// `errors`: `""` for a success, else the failure's text; an entry that is not a string is
    /// `None`.
    #[serde(default, deserialize_with = "strings", skip_serializing_if = "Option::is_none")]
    pub errors: Option<Vec<Lenient<String>>>,
}

impl DetailedArrays {
    /// Request `i`'s inter-token gaps (s); empty when its `itls` entry is missing or not an array.
    pub fn gaps(&self, i: usize) -> impl Iterator<Item = f64> + '_ {
        let entry = self.itls.as_ref().and_then(|v| v.get(i)).and_then(|g| g.0.as_ref());
        entry.into_iter().flatten().filter_map(|x| x.0)
    }

    /// Request `i`'s latency (s, vLLM's: dispatch to last token): its `latencies` entry; a
    /// result without a `latencies` key (older vLLM's `--save-detailed` wrote `ttfts` and
    /// `itls` only) rebuilds it as `ttfts[i] + Σ itls[i]`. `None` when neither can say (the
    /// rebuild needs an `itls` entry that is an array of numbers).
    pub fn latency(&self, i: usize) -> Option<f64> {
        match &self.latencies {
            Some(l) => l.get(i).copied().flatten(),
            None => {
                let ttft = self.ttfts.as_ref()?.get(i).copied().flatten()?;
                let gaps = self.itls.as_ref()?.get(i)?.0.as_ref()?;
                let sum = gaps.iter().map(|g| g.0).sum::<Option<f64>>()?;
                Some(ttft + sum)
            }
        }
    }

    /// When the per-request arrays present do not all have one entry per request, which lengths
    /// they have (`ttfts 10, itls 3`): such arrays cannot be lined up request by request.
    pub fn length_mismatch(&self) -> Option<String> {
        let lens = [
            ("ttfts", self.ttfts.as_ref().map(Vec::len)),
            ("latencies", self.latencies.as_ref().map(Vec::len)),
            ("itls", self.itls.as_ref().map(Vec::len)),
            ("input_lens", self.input_lens.as_ref().map(Vec::len)),
            ("output_lens", self.output_lens.as_ref().map(Vec::len)),
            ("start_times", self.start_times.as_ref().map(Vec::len)),
            ("errors", self.errors.as_ref().map(Vec::len)),
        ];
        let present: Vec<(&str, usize)> = lens.iter().filter_map(|&(k, n)| Some((k, n?))).collect();
        let first = present.first()?.1;
        present
            .iter()
            .any(|&(_, n)| n != first)
            .then(|| present.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "))
    }
}

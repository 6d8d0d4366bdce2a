//! `/metrics`: server-side counters in Prometheus text format under vLLM's metric names, so the
//! client's `/metrics` readers (spec-decode stats, profiling thresholds) work against the
//! simulator. Every series carries `model_name="<served model>"`.
//!
//! Lock-free on the hot path: counters and histogram buckets are atomics. Other modules add
//! their own counters through [`MetricsRegistry::counter`] (e.g. injected faults).

use servebench_core::prom::{self, Kind};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A monotonically increasing counter.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds one.
    pub fn inc(&self) {
        self.add(1);
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// Current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A gauge holding a signed integer.
#[derive(Debug, Default)]
pub(crate) struct Gauge(AtomicI64);

impl Gauge {
    pub(crate) fn set(&self, v: i64) {
        self.0.store(v, Ordering::Relaxed);
    }
    pub(crate) fn add(&self, v: i64) {
        self.0.fetch_add(v, Ordering::Relaxed);
    }
    pub(crate) fn get(&self) -> i64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Latency bucket bounds in seconds (roughly log-spaced from 1 ms to 10 min).
const LATENCY_BOUNDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0,
    2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0,
];

/// A cumulative histogram of durations.
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: Vec<AtomicU64>,
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: LATENCY_BOUNDS.iter().map(|_| AtomicU64::new(0)).collect(),
            sum_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }
}

impl Histogram {
    pub(crate) fn observe(&self, d: Duration) {
        let s = d.as_secs_f64();
        if let Some(i) = LATENCY_BOUNDS.iter().position(|&b| s <= b) {
            if let Some(b) = self.buckets.get(i) {
                b.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.sum_ns.fetch_add(d.as_nanos().min(u128::from(u64::MAX)) as u64, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    fn render(&self, out: &mut String, name: &str, help: &str, model: &str) {
        prom::family(out, name, Kind::Histogram, help);
        let bucket = format!("{name}_bucket");
        let mut cum = 0u64;
        for (b, n) in LATENCY_BOUNDS.iter().zip(&self.buckets) {
            cum += n.load(Ordering::Relaxed);
            prom::sample(out, &bucket, &[("model_name", model), ("le", &b.to_string())], cum as f64);
        }
        let count = self.count();
        prom::sample(out, &bucket, &[("model_name", model), ("le", "+Inf")], count as f64);
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        prom::sample(out, &format!("{name}_sum"), &[("model_name", model)], sum);
        prom::sample(out, &format!("{name}_count"), &[("model_name", model)], count as f64);
    }
}

/// Extra counters registered by other parts of the simulator, rendered after the built-in ones.
#[derive(Debug, Default)]
pub struct MetricsRegistry {
    extra: Mutex<Vec<Registered>>,
}

#[derive(Debug)]
struct Registered {
    name: String,
    help: String,
    labels: Vec<(String, String)>,
    counter: Arc<Counter>,
}

impl MetricsRegistry {
    /// The counter `name` with extra `labels` (besides `model_name`), registered on first use;
    /// later calls with the same name and labels return the same counter. `name` should be a
    /// valid Prometheus name such as `servebench_sim:faults_injected_total`.
    pub fn counter(&self, name: &str, help: &str, labels: &[(&str, &str)]) -> Arc<Counter> {
        let labels: Vec<(String, String)> =
            labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = extra.iter().find(|r| r.name == name && r.labels == labels) {
            return r.counter.clone();
        }
        let counter = Arc::new(Counter::default());
        extra.push(Registered { name: name.into(), help: help.into(), labels, counter: counter.clone() });
        counter
    }

    fn render(&self, out: &mut String, model: &str) {
        let extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen: Vec<&str> = Vec::new();
        for r in extra.iter() {
            if !seen.contains(&r.name.as_str()) {
                seen.push(&r.name);
                prom::family(out, &r.name, Kind::Counter, &r.help);
                for s in extra.iter().filter(|s| s.name == r.name) {
                    let mut labels = vec![("model_name", model)];
                    labels.extend(s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())));
                    prom::sample(out, &s.name, &labels, s.counter.get() as f64);
                }
            }
        }
    }
}

/// Every metric the simulator exports.
#[derive(Debug)]
pub(crate) struct Metrics {
    /// The `model_name` label of every sample.
    model: String,
    pub running: Gauge,
    pub waiting: Gauge,
    /// KV cache usage in parts per million.
    pub kv_usage_ppm: Gauge,
    pub prompt_tokens: Counter,
    pub generation_tokens: Counter,
    pub requests_finished: Counter,
    pub ttft: Histogram,
    pub itl: Histogram,
    pub e2e: Histogram,
    pub prefix_queries: Counter,
    pub prefix_hits: Counter,
    pub spec_drafts: Counter,
    pub spec_draft_tokens: Counter,
    pub spec_accepted: Counter,
    /// Accepted drafts per position (index 0 = first draft token).
    pub spec_accepted_per_pos: Vec<Counter>,
    pub registry: MetricsRegistry,
}

impl Metrics {
    /// Metrics of a server serving `model`, with `spec_k` per-position acceptance counters.
    pub(crate) fn new(model: &str, spec_k: u32) -> Self {
        Metrics {
            model: model.to_owned(),
            running: Gauge::default(),
            waiting: Gauge::default(),
            kv_usage_ppm: Gauge::default(),
            prompt_tokens: Counter::default(),
            generation_tokens: Counter::default(),
            requests_finished: Counter::default(),
            ttft: Histogram::default(),
            itl: Histogram::default(),
            e2e: Histogram::default(),
            prefix_queries: Counter::default(),
            prefix_hits: Counter::default(),
            spec_drafts: Counter::default(),
            spec_draft_tokens: Counter::default(),
            spec_accepted: Counter::default(),
            spec_accepted_per_pos: (0..spec_k).map(|_| Counter::default()).collect(),
            registry: MetricsRegistry::default(),
        }
    }

    /// The Prometheus text exposition (format 0.0.4).
    pub(crate) fn render(&self) -> String {
        let l = self.model.as_str();
        let mut out = String::with_capacity(8192);
        let one = |out: &mut String, name: &str, kind: Kind, help: &str, v: f64| {
            prom::family(out, name, kind, help);
            prom::sample(out, name, &[("model_name", l)], v);
        };
        one(
            &mut out,
            "vllm:num_requests_running",
            Kind::Gauge,
            "Requests in the running batch.",
            self.running.get() as f64,
        );
        one(
            &mut out,
            "vllm:num_requests_waiting",
            Kind::Gauge,
            "Requests waiting for admission.",
            self.waiting.get() as f64,
        );
        let kv = self.kv_usage_ppm.get().max(0) as f64 / 1e6;
        one(&mut out, "vllm:kv_cache_usage_perc", Kind::Gauge, "KV cache usage (1 = full).", kv);
        one(&mut out, "vllm:gpu_cache_usage_perc", Kind::Gauge, "KV cache usage (1 = full; older name).", kv);
        let counter =
            |out: &mut String, name: &str, help: &str, v: u64| one(out, name, Kind::Counter, help, v as f64);
        counter(&mut out, "vllm:prompt_tokens_total", "Prompt tokens processed.", self.prompt_tokens.get());
        counter(&mut out, "vllm:generation_tokens_total", "Tokens generated.", self.generation_tokens.get());
        let success = "vllm:request_success_total";
        prom::family(&mut out, success, Kind::Counter, "Finished requests.");
        prom::sample(
            &mut out,
            success,
            &[("model_name", l), ("finished_reason", "any")],
            self.requests_finished.get() as f64,
        );
        self.ttft.render(&mut out, "vllm:time_to_first_token_seconds", "Time to first token.", l);
        self.itl.render(&mut out, "vllm:inter_token_latency_seconds", "Time between token events.", l);
        self.itl.render(
            &mut out,
            "vllm:time_per_output_token_seconds",
            "Time between token events (older name).",
            l,
        );
        self.e2e.render(&mut out, "vllm:e2e_request_latency_seconds", "Request latency.", l);
        counter(
            &mut out,
            "vllm:prefix_cache_queries_total",
            "Prompt tokens looked up.",
            self.prefix_queries.get(),
        );
        counter(
            &mut out,
            "vllm:prefix_cache_hits_total",
            "Prompt tokens found cached.",
            self.prefix_hits.get(),
        );
        if !self.spec_accepted_per_pos.is_empty() {
            counter(&mut out, "vllm:spec_decode_num_drafts_total", "Draft rounds.", self.spec_drafts.get());
            counter(
                &mut out,
                "vllm:spec_decode_num_draft_tokens_total",
                "Draft tokens proposed.",
                self.spec_draft_tokens.get(),
            );
            counter(
                &mut out,
                "vllm:spec_decode_num_accepted_tokens_total",
                "Draft tokens accepted.",
                self.spec_accepted.get(),
            );
            let name = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
            prom::family(&mut out, name, Kind::Counter, "Accepted draft tokens per position.");
            for (i, c) in self.spec_accepted_per_pos.iter().enumerate() {
                prom::sample(
                    &mut out,
                    name,
                    &[("model_name", l), ("position", &i.to_string())],
                    c.get() as f64,
                );
            }
        }
        self.registry.render(&mut out, l);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_histograms_and_extras() {
        let m = Metrics::new("m\"1", 2);
        m.prompt_tokens.add(5);
        m.ttft.observe(Duration::from_millis(3));
        m.ttft.observe(Duration::from_secs(1000));
        let c = m.registry.counter("servebench_sim:faults_total", "Faults.", &[("kind", "stall")]);
        c.inc();
        assert!(Arc::ptr_eq(
            &c,
            &m.registry.counter("servebench_sim:faults_total", "Faults.", &[("kind", "stall")])
        ));
        let text = m.render();
        assert!(text.contains("vllm:prompt_tokens_total{model_name=\"m\\\"1\"} 5\n"), "{text}");
        assert!(
            text.contains("vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"0.005\"} 1\n")
        );
        assert!(
            text.contains("vllm:time_to_first_token_seconds_bucket{model_name=\"m\\\"1\",le=\"+Inf\"} 2\n")
        );
        assert!(text.contains("vllm:time_to_first_token_seconds_count{model_name=\"m\\\"1\"} 2\n"));
        assert!(text.contains("servebench_sim:faults_total{model_name=\"m\\\"1\",kind=\"stall\"} 1\n"));
        assert!(text.contains("position=\"1\"} 0\n"));
        assert!(!Metrics::new("m", 0).render().contains("spec_decode"));
    }
}

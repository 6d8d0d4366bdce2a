//! `/metrics`: server-side counters in Prometheus text format under vLLM's metric names, so the
//! client's `/metrics` readers (spec-decode stats, profiling thresholds) work against the
//! simulator. Every series carries `model_name="<served model>"`.
//!
//! Lock-free on the hot path: counters and histogram buckets are atomics. Other modules add
//! their own counters through [`MetricsRegistry::counter`] (e.g. injected faults).

use crate::personality::MetricNames;
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
    /// Adds `v`; returns the new value.
    pub(crate) fn add(&self, v: i64) -> i64 {
        self.0.fetch_add(v, Ordering::Relaxed) + v
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

    fn render(&self, x: &mut Exposition<'_>, name: &str, help: &str) {
        let Some(series) = x.family(name, Kind::Histogram, help) else { return };
        let bucket = format!("{series}_bucket");
        let mut cum = 0u64;
        for (b, n) in LATENCY_BOUNDS.iter().zip(&self.buckets) {
            cum += n.load(Ordering::Relaxed);
            x.sample(&bucket, &[("le", &b.to_string())], cum as f64);
        }
        let count = self.count();
        x.sample(&bucket, &[("le", "+Inf")], count as f64);
        let sum = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
        x.sample(&format!("{series}_sum"), &[], sum);
        x.sample(&format!("{series}_count"), &[], count as f64);
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

    fn render(&self, x: &mut Exposition<'_>) {
        let extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let mut seen: Vec<&str> = Vec::new();
        for r in extra.iter() {
            if seen.contains(&r.name.as_str()) {
                continue;
            }
            seen.push(&r.name);
            let Some(series) = x.family(&r.name, Kind::Counter, &r.help) else { continue };
            for s in extra.iter().filter(|s| s.name == r.name) {
                let labels: Vec<(&str, &str)> =
                    s.labels.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
                x.sample(&series, &labels, s.counter.get() as f64);
            }
        }
    }
}

/// A histogram family `name` of one +Inf bucket holding `count` observations summing to `sum`.
fn sum_histogram(x: &mut Exposition<'_>, name: &str, help: &str, sum: u64, count: u64) {
    let Some(series) = x.family(name, Kind::Histogram, help) else { return };
    x.sample(&format!("{series}_bucket"), &[("le", "+Inf")], count as f64);
    x.sample(&format!("{series}_sum"), &[], sum as f64);
    x.sample(&format!("{series}_count"), &[], count as f64);
}

/// The text exposition under one personality's metric names: each family is written under
/// the personality's name for it, or left out when that server has no such series.
struct Exposition<'a> {
    out: String,
    names: MetricNames,
    model: &'a str,
}

impl Exposition<'_> {
    /// Writes the `# HELP`/`# TYPE` lines of the vLLM family `name` under the personality's
    /// name, which it returns; `None` (nothing written) when the server has no such series.
    fn family(&mut self, name: &str, kind: Kind, help: &str) -> Option<String> {
        let series = self.names.series_name(name)?.to_owned();
        prom::family(&mut self.out, &series, kind, help);
        Some(series)
    }

    /// One sample of `series`, labelled with the model (where the server does) and `labels`.
    fn sample(&mut self, series: &str, labels: &[(&str, &str)], value: f64) {
        let mut all = Vec::with_capacity(labels.len() + 1);
        if let Some(key) = self.names.model_label() {
            all.push((key, self.model));
        }
        all.extend_from_slice(labels);
        prom::sample(&mut self.out, series, &all, value);
    }

    /// A family of one sample.
    fn single(&mut self, name: &str, kind: Kind, help: &str, value: f64) {
        if let Some(series) = self.family(name, kind, help) {
            self.sample(&series, &[], value);
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
    /// Simulated GPUs whose power follows `running` (`--sim-gpus`).
    pub power: Option<crate::power::GpuPower>,
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
            power: None,
        }
    }

    /// With simulated GPUs whose power follows the running requests.
    pub(crate) fn with_power(mut self, config: Option<crate::power::GpuPowerConfig>) -> Self {
        self.power = config.map(|c| crate::power::GpuPower::new(c, std::time::Instant::now()));
        self
    }

    /// Adds `d` to the running requests (and moves the GPUs' power with them).
    pub(crate) fn running_add(&self, d: i64) {
        let n = self.running.add(d);
        if let Some(p) = &self.power {
            p.set_running_at(n, std::time::Instant::now());
        }
    }

    /// Sets the running requests (and the GPUs' power).
    pub(crate) fn running_set(&self, n: i64) {
        self.running.set(n);
        if let Some(p) = &self.power {
            p.set_running_at(n, std::time::Instant::now());
        }
    }

    /// The Prometheus text exposition (format 0.0.4) under the personality's metric names.
    pub(crate) fn render(&self, names: MetricNames) -> String {
        let x = &mut Exposition { out: String::with_capacity(8192), names, model: &self.model };
        x.single(
            "vllm:num_requests_running",
            Kind::Gauge,
            "Requests in the running batch.",
            self.running.get() as f64,
        );
        x.single(
            "vllm:num_requests_waiting",
            Kind::Gauge,
            "Requests waiting for admission.",
            self.waiting.get() as f64,
        );
        let kv = self.kv_usage_ppm.get().max(0) as f64 / 1e6;
        x.single("vllm:kv_cache_usage_perc", Kind::Gauge, "KV cache usage (1 = full).", kv);
        x.single("vllm:gpu_cache_usage_perc", Kind::Gauge, "KV cache usage (1 = full; older name).", kv);
        let counter = |x: &mut Exposition<'_>, name: &str, help: &str, v: u64| {
            x.single(name, Kind::Counter, help, v as f64)
        };
        counter(x, "vllm:prompt_tokens_total", "Prompt tokens processed.", self.prompt_tokens.get());
        counter(x, "vllm:generation_tokens_total", "Tokens generated.", self.generation_tokens.get());
        if let Some(success) = x.family("vllm:request_success_total", Kind::Counter, "Finished requests.") {
            x.sample(&success, &[("finished_reason", "any")], self.requests_finished.get() as f64);
        }
        self.ttft.render(x, "vllm:time_to_first_token_seconds", "Time to first token.");
        self.itl.render(x, "vllm:inter_token_latency_seconds", "Time between token events.");
        self.itl.render(x, "vllm:time_per_output_token_seconds", "Time between token events (older name).");
        self.e2e.render(x, "vllm:e2e_request_latency_seconds", "Request latency.");
        counter(x, "vllm:prefix_cache_queries_total", "Prompt tokens looked up.", self.prefix_queries.get());
        counter(x, "vllm:prefix_cache_hits_total", "Prompt tokens found cached.", self.prefix_hits.get());
        // Engines that count tokens only per request, in histograms (read by their `_sum`): one
        // +Inf bucket over the finished requests, the sum of the counter.
        let finished = self.requests_finished.get();
        match names {
            MetricNames::Tgi => {
                let (p, g) = (self.prompt_tokens.get(), self.generation_tokens.get());
                sum_histogram(x, "tgi_request_input_length", "Input tokens per request.", p, finished);
                sum_histogram(
                    x,
                    "tgi_request_generated_tokens",
                    "Generated tokens per request.",
                    g,
                    finished,
                );
            }
            MetricNames::Dynamo => {
                let (p, h) = (self.prompt_tokens.get(), self.prefix_hits.get());
                sum_histogram(
                    x,
                    "dynamo_frontend_input_sequence_tokens",
                    "Input tokens per request.",
                    p,
                    finished,
                );
                sum_histogram(
                    x,
                    "dynamo_frontend_cached_tokens",
                    "Cached prompt tokens per request.",
                    h,
                    finished,
                );
            }
            _ => {}
        }
        if names == MetricNames::Trtllm {
            let missed = self.prefix_queries.get().saturating_sub(self.prefix_hits.get());
            counter(x, "trtllm_kv_cache_missed_blocks_total", "Prompt tokens not found cached.", missed);
        }
        // The simulator never preempts: the counter stays 0 where the server has one.
        counter(x, "vllm:num_preemptions_total", "Requests preempted.", 0);
        if !self.spec_accepted_per_pos.is_empty() {
            counter(x, "vllm:spec_decode_num_drafts_total", "Draft rounds.", self.spec_drafts.get());
            counter(
                x,
                "vllm:spec_decode_num_draft_tokens_total",
                "Draft tokens proposed.",
                self.spec_draft_tokens.get(),
            );
            counter(
                x,
                "vllm:spec_decode_num_accepted_tokens_total",
                "Draft tokens accepted.",
                self.spec_accepted.get(),
            );
            let per_pos = "vllm:spec_decode_num_accepted_tokens_per_pos_total";
            if let Some(series) = x.family(per_pos, Kind::Counter, "Accepted draft tokens per position.") {
                for (i, c) in self.spec_accepted_per_pos.iter().enumerate() {
                    x.sample(&series, &[("position", &i.to_string())], c.get() as f64);
                }
            }
        }
        self.registry.render(x);
        std::mem::take(&mut x.out)
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
        let text = m.render(MetricNames::Vllm);
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
        assert!(!Metrics::new("m", 0).render(MetricNames::Vllm).contains("spec_decode"));
    }

    #[test]
    fn each_personality_exports_its_servers_series_names() {
        let m = Metrics::new("m", 0);
        m.prompt_tokens.add(5);
        m.e2e.observe(Duration::from_millis(400));
        m.registry.counter("servebench_sim_faults_total", "Faults.", &[("kind", "reset")]).add(2);
        let l = m.render(MetricNames::LlamaCpp);
        assert!(l.contains("# TYPE llamacpp:prompt_tokens_total counter\n"), "{l}");
        assert!(l.contains("\nllamacpp:prompt_tokens_total 5\n"), "{l}");
        assert!(!l.contains("vllm:"), "series llama.cpp does not have are left out: {l}");
        assert!(l.contains("servebench_sim_faults_total{kind=\"reset\"} 2"), "{l}");
        let t = m.render(MetricNames::Tgi);
        assert!(t.contains("tgi_request_duration_bucket{le=\"0.5\"} 1"), "{t}");
        assert!(t.contains("# TYPE tgi_request_input_length histogram\n"), "{t}");
        assert!(t.contains("\ntgi_request_input_length_sum 5\n"), "{t}");
        let d = m.render(MetricNames::Dynamo);
        assert!(d.contains("dynamo_frontend_input_sequence_tokens_sum{model=\"m\"} 5\n"), "{d}");
        assert!(d.contains("dynamo_component_gpu_cache_usage_percent{model=\"m\"} 0\n"), "{d}");
        assert!(t.contains("tgi_request_duration_count 1\n"), "{t}");
        let s = m.render(MetricNames::Sglang);
        assert!(s.contains("sglang:prompt_tokens_total{model_name=\"m\"} 5"), "{s}");
        assert!(s.contains("# HELP sglang:num_requests_total Finished requests.\n"), "{s}");
        assert!(!s.contains("vllm:"), "{s}");
        assert_eq!(m.render(MetricNames::None), m.render(MetricNames::Vllm));
    }
}

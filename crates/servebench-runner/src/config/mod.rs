//! The validated configuration of one run, built by the CLI from its flags.

pub mod load_options;
pub mod otlp;
pub mod output;

pub use load_options::LoadOptions;
pub use output::OutputConfig;

use servebench_client::backend::TargetConfig;
use servebench_core::schedule::RateConfig;
use servebench_core::shard::ShardSpec;
use servebench_data::random::RandomDatasetConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Which workload to build.
#[derive(Debug, Clone)]
pub enum DatasetSpec {
    Random(RandomDatasetConfig),
    /// sharegpt, burstgpt, sonnet, custom, custom_image, prefix_repetition, random-mm,
    /// random-rerank, spec_bench, speed-bench, hf.
    Dataset(servebench_data::dataset::DatasetRequest),
    /// `timed_trace`: Mooncake-style JSONL replayed on its own timestamps.
    TimedTrace(servebench_data::trace::TraceConfig),
}

impl DatasetSpec {
    /// A trace replayed on its own timestamps: the factor on them; `None` for any other workload
    /// (its load mode is its rate's).
    pub fn trace_time_scale(&self) -> Option<f64> {
        match self {
            DatasetSpec::TimedTrace(t) if t.self_timed => Some(t.sec_multiplier),
            _ => None,
        }
    }
}

/// What happens to requests in flight when the run is interrupted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InterruptMode {
    /// Stop them at once; they end as `cancelled` records with the timings they had.
    #[default]
    Cancel,
    /// Let them finish; only requests not yet sent are cancelled.
    Drain,
}

/// The scheduler time slice of the client's threads (docs/metrics.md, "Receive timestamps"):
/// with a short one, a thread woken by a socket preempts batch work on its core sooner, so it
/// reads the bytes sooner after they arrived.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TimeSlice {
    /// A custom slice of this many µs (Linux 6.12+: `sched_setattr`'s runtime for a
    /// `SCHED_OTHER` thread, read back to check it).
    Short { us: u64 },
    /// The kernel's default slice: none was asked for (`--no-short-time-slice`, a library
    /// caller).
    #[default]
    NotRequested,
    /// The kernel's default slice: asked for a short one, not granted, and why.
    Unavailable { why: String },
}

impl TimeSlice {
    /// The custom slice in µs (`None`: the kernel's default).
    pub fn short_us(&self) -> Option<u64> {
        match self {
            TimeSlice::Short { us } => Some(*us),
            TimeSlice::NotRequested | TimeSlice::Unavailable { .. } => None,
        }
    }

    /// One line for the run header and the result: the slice and where it comes from.
    pub fn describe(&self) -> String {
        match self {
            TimeSlice::Short { us } => {
                format!(
                    "{} ms time slices for the client's threads (sched_setattr, EEVDF)",
                    *us as f64 / 1000.0
                )
            }
            TimeSlice::NotRequested => "the kernel's default time slices".into(),
            TimeSlice::Unavailable { why } => format!("the kernel's default time slices ({why})"),
        }
    }
}

/// Everything a run needs, validated.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// `scheme://host:port` of the server.
    pub base_url: String,
    /// Request shape: backend, endpoint, model sent, headers, key, sampling, extra body.
    /// `target.model` may be empty: it is then filled from `--served-model-name`, `--model` or
    /// GET /v1/models.
    pub target: TargetConfig,
    pub insecure: bool,
    /// `--cacert`, `--client-cert`/`--client-key`, `SSL_CERT_FILE`/`SSL_CERT_DIR`.
    pub tls: servebench_client::transport::TlsOptions,
    /// Proxy variables and `--no-proxy`.
    pub proxy: servebench_client::transport::ProxyOptions,
    /// Kernel receive timestamps where supported (`--no-kernel-timestamps`: false).
    pub kernel_timestamps: bool,
    /// The scheduler time slice the client's threads run with, as the caller set it before
    /// the async runtime started (the binary asks for a short one; `--no-short-time-slice`).
    pub time_slice: TimeSlice,
    /// `--model` (None = auto-detect).
    pub model: Option<String>,
    /// `--served-model-name`.
    pub served_model_name: Option<String>,
    /// `--tokenizer` (None = the model).
    pub tokenizer: Option<String>,
    pub dataset: DatasetSpec,
    /// Drop requests whose prompt + expected output exceed this.
    pub max_model_len: Option<u32>,
    pub rate: RateConfig,
    pub max_concurrency: Option<usize>,
    pub seed: u64,
    pub num_warmups: u64,
    /// Zero = skip the readiness check.
    pub ready_check_timeout: Duration,
    pub request_id_prefix: String,
    pub dry_run: bool,
    /// Prompts whose length is checked against the server's /tokenize (0 = none).
    pub verify_prompts: usize,
    pub preconnect: usize,
    /// Total time a request may take.
    pub request_timeout: Option<Duration>,
    /// Longest silence (no byte) a request may have.
    pub stall_timeout: Option<Duration>,
    /// `--runaway-stream-factor`: a stream with more than factor × max_tokens + 16 events
    /// fails as `runaway_stream` (0: no bound).
    pub runaway_factor: u32,
    /// `--max-response-bytes`: a non-streamed response body larger than this fails as
    /// `event_too_large`.
    pub max_response_bytes: usize,
    /// Keep generated text in records (`--save-detailed`).
    pub keep_text: bool,
    /// `--retokenize-output`: count every completed request's generated text with the client
    /// tokenizer (otherwise only responses without output-token usage are counted).
    pub retokenize_output: bool,
    /// Records file (JSONL), if any.
    pub records_path: Option<PathBuf>,
    pub show_progress: bool,
    pub on_interrupt: InterruptMode,
    /// Extra attempts for a request whose connection could not be made (nothing was sent).
    pub retries: u32,
    /// Trace replay, multi-turn, LoRA, `--duration`, `--stages` (the `load` module).
    pub load: LoadOptions,
    /// `--metrics-port`/`--metrics-host`: serve live client metrics (Prometheus) here.
    pub metrics_listen: Option<std::net::SocketAddr>,
    /// `--max-records-in-memory`: records held in memory during the run; the rest are read
    /// back from disk at the end (`collector::RecordStore`).
    pub max_records_in_memory: usize,
    /// `--num-shards`/`--shard-index`: send only this shard's share (docs/scale-out.md).
    pub shard: Option<ShardConfig>,
    /// `--start-at`: wall-clock start of the schedule, µs since the Unix epoch.
    pub start_at_unix_us: Option<u64>,
}

/// One stage of a run's load as planned (`RunConfig::planned_stages`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlannedStage {
    /// Requests per second of the whole run (infinite for a concurrency stage).
    pub rate: f64,
    pub seconds: f64,
    /// Concurrency stages (`c=N`): requests kept in flight.
    pub concurrency: Option<u64>,
}

impl RunConfig {
    /// The run's stages as planned: `--stages` (a `--duration` shorter than them cuts the last
    /// ones short, or off), else a `--duration` at a finite rate is one stage (not for
    /// multi-turn conversations or a trace replay); none otherwise.
    pub fn planned_stages(&self) -> Vec<PlannedStage> {
        let load = &self.load;
        if !load.stages.is_empty() {
            let mut left = load.duration.map_or(f64::INFINITY, |d| d.as_secs_f64());
            let mut v = Vec::new();
            for s in &load.stages {
                if left <= 0.0 {
                    break;
                }
                let concurrency = s.concurrency.map(|c| c as u64);
                v.push(PlannedStage { rate: s.rate, seconds: s.seconds.min(left), concurrency });
                left -= s.seconds;
            }
            return v;
        }
        match (load.duration, &load.multi_turn, matches!(self.dataset, DatasetSpec::TimedTrace(_))) {
            (Some(d), None, false) if self.rate.request_rate.is_finite() => {
                vec![PlannedStage {
                    rate: self.rate.request_rate,
                    seconds: d.as_secs_f64(),
                    concurrency: None,
                }]
            }
            _ => Vec::new(),
        }
    }

    /// The options every client of this run starts from: the server, TLS, proxies, and the
    /// secrets (API key, sensitive headers) its server text is redacted of.
    pub fn client_options(&self) -> servebench_client::ClientOptions {
        servebench_client::ClientOptions {
            base_url: self.base_url.clone(),
            insecure: self.insecure,
            tls: self.tls.clone(),
            proxy: self.proxy.clone(),
            secrets: servebench_client::headers::redactor(&self.target),
            kernel_timestamps: self.kernel_timestamps,
            ..servebench_client::ClientOptions::default()
        }
    }
}

/// `--shard-index/--num-shards` and what the merged result needs from the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardConfig {
    pub spec: ShardSpec,
    /// `--backend` as given.
    pub backend: String,
    /// `--label`.
    pub label: Option<String>,
    /// `--max-concurrency` of the whole run; this shard uses its share.
    pub max_concurrency_total: Option<usize>,
    /// The run's statistics (`--metric-percentiles`, `--percentile-metrics`, `--goodput`) and
    /// `--metadata`, recorded in the shard header for the merged result.
    pub metrics: servebench_core::metrics::MetricsConfig,
    pub metadata: Vec<(String, String)>,
}

//! Configuration of the simulator: the served model, the tokenizer, the timing model and the
//! knobs that shape responses.

use std::sync::Arc;
use std::time::Duration;

use servebench_core::{BenchError, Result, TextTokenizer};

use crate::engine::EngineConfig;
use crate::fault::FaultConfig;

/// How the simulator decides when each token event is sent.
///
/// `Fixed` is the ground truth for calibration: every request gets exactly the same first-token
/// delay and inter-event interval, independent of load. `Engine` is a continuous-batching model
/// with queueing, KV capacity, chunked prefill, prefix caching and speculative decoding (see
/// [`EngineConfig`]). The streaming body asks a per-request pacer (see `pacer.rs`) for the next
/// event, so the response formatting does not change with the model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimingModel {
    /// The first event is sent `ttft` after the request was received, event `i` (0-based) at
    /// `ttft + i * itl`, on absolute deadlines (no drift).
    Fixed {
        /// Delay from request received to the first token event.
        ttft: Duration,
        /// Interval between consecutive token events.
        itl: Duration,
    },
    /// A continuous-batching engine: one scheduler steps every running request together.
    Engine(EngineConfig),
}

impl TimingModel {
    /// Fixed timing from milliseconds. Errors on negative, NaN or infinite values.
    pub fn fixed_ms(ttft_ms: f64, itl_ms: f64) -> Result<Self> {
        Ok(TimingModel::Fixed {
            ttft: ms_to_duration("--sim-ttft-ms", ttft_ms)?,
            itl: ms_to_duration("--sim-itl-ms", itl_ms)?,
        })
    }
}

fn ms_to_duration(flag: &str, ms: f64) -> Result<Duration> {
    if !ms.is_finite() || !(0.0..=86_400_000.0).contains(&ms) {
        return Err(BenchError::config(
            flag,
            format!("must be a finite number of milliseconds in [0, 86400000] (got {ms})"),
            "pass a non-negative number of milliseconds",
        ));
    }
    Ok(Duration::from_secs_f64(ms / 1000.0))
}

/// Configuration of one simulated server.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Served model name (the only name `/v1/models` lists and requests may use).
    pub model: String,
    /// Tokenizer used to count prompts, serve `/tokenize` and `/detokenize`, and to pick output
    /// words that re-encode to exactly one token each.
    pub tokenizer: Arc<dyn TextTokenizer>,
    /// When token events are sent.
    pub timing: TimingModel,
    /// Seed of every random choice (output lengths, output words). Same seed + same request
    /// content = same response.
    pub seed: u64,
    /// Maximum prompt + output length in tokens (as vLLM's `--max-model-len`).
    pub max_model_len: u32,
    /// Output limit when a request sets neither `max_tokens` nor `max_completion_tokens`
    /// (capped at `max_model_len - prompt_tokens`).
    pub default_max_tokens: u32,
    /// Tokens carried by each streamed event (1 = one token per SSE event; larger values model
    /// speculative decoding or server-side batching of deltas). The last event may carry fewer.
    pub tokens_per_event: u32,
    /// Report `usage.prompt_tokens_details = {"cached_tokens": 0}` (as vLLM with
    /// `--enable-prompt-tokens-details`); otherwise it is `null` / absent.
    pub prompt_tokens_details: bool,
    /// Keep the ground-truth log of event send times (see [`crate::GroundTruth`]).
    pub record_ground_truth: bool,
    /// Largest accepted request body in bytes (larger bodies get 413).
    pub max_body_bytes: usize,
    /// Injected faults (default: none). See [`FaultConfig`].
    pub faults: FaultConfig,
    /// The first this-many tokens of every chat and Responses output are reasoning (sent as
    /// reasoning deltas before the content); they count as completion tokens. 0 = none.
    pub reasoning_tokens: u32,
    /// The chat delta field reasoning text goes into.
    pub reasoning_field: ReasoningField,
    /// Length of the vectors `/v1/embeddings` and `/pooling` return when the request does not
    /// set `dimensions`.
    pub embedding_dim: u32,
    /// LoRA adapter names served besides the base model (`--sim-lora-modules`): listed by
    /// `/v1/models` (with the base model as `parent`) and accepted as a request's `model`.
    pub lora_modules: Vec<String>,
    /// The server the simulator imitates on the wire (`--sim-personality`; default: today's
    /// vLLM-shaped simulator with every native endpoint).
    pub personality: crate::personality::Personality,
    /// Gateway personality: the path prefix the API is mounted under (`--sim-path-prefix`,
    /// default `/gw`).
    pub path_prefix: String,
    /// Overrides the idle time after which a personality that closes idle connections
    /// (llama.cpp: 5 s) closes them (library only, for tests).
    pub idle_close: Option<Duration>,
    /// `--sim-gpus`: simulated GPUs whose power follows the load, on `/dcgm/metrics`
    /// (`None`: no such route).
    pub gpus: Option<crate::power::GpuPowerConfig>,
}

/// Where chat streams put reasoning text: current vLLM sends it twice, as `reasoning` and as
/// its deprecated alias `reasoning_content` (copied by a validator of its `DeltaMessage` and
/// `ChatMessage`); others one of the two (`reasoning_content`: older vLLM, DeepSeek's API).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningField {
    /// Both fields, the same text (current vLLM).
    #[default]
    Both,
    Reasoning,
    ReasoningContent,
}

impl ReasoningField {
    /// The JSON field name written first (`Both`: `reasoning`, then its alias).
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningField::Both | ReasoningField::Reasoning => "reasoning",
            ReasoningField::ReasoningContent => "reasoning_content",
        }
    }

    /// Whether the text is written again under `reasoning_content` (after `reasoning`).
    pub fn with_alias(self) -> bool {
        self == ReasoningField::Both
    }

    /// Parses `both`, `reasoning` or `reasoning_content`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "both" => Ok(ReasoningField::Both),
            "reasoning" => Ok(ReasoningField::Reasoning),
            "reasoning_content" | "reasoning-content" => Ok(ReasoningField::ReasoningContent),
            other => Err(BenchError::config(
                "--sim-reasoning-field",
                format!("unknown field '{other}'"),
                "use both (current vLLM: reasoning and its alias reasoning_content), reasoning, or \
                 reasoning_content (older vLLM)",
            )),
        }
    }
}

impl SimConfig {
    /// A configuration with defaults: fixed timing with 50 ms TTFT and 10 ms ITL, seed 0,
    /// `max_model_len` 32768, `default_max_tokens` 256, one token per event, no ground truth.
    pub fn new(model: impl Into<String>, tokenizer: Arc<dyn TextTokenizer>) -> Self {
        SimConfig {
            model: model.into(),
            tokenizer,
            timing: TimingModel::Fixed { ttft: Duration::from_millis(50), itl: Duration::from_millis(10) },
            seed: 0,
            max_model_len: 32_768,
            default_max_tokens: 256,
            tokens_per_event: 1,
            prompt_tokens_details: false,
            record_ground_truth: false,
            max_body_bytes: 64 << 20,
            faults: FaultConfig::default(),
            reasoning_tokens: 0,
            reasoning_field: ReasoningField::default(),
            embedding_dim: 256,
            lora_modules: Vec::new(),
            personality: crate::personality::Personality::default(),
            path_prefix: "/gw".into(),
            idle_close: None,
            gpus: None,
        }
    }

    /// Sets fixed timing from milliseconds (see [`TimingModel::fixed_ms`]).
    pub fn with_fixed_timing_ms(mut self, ttft_ms: f64, itl_ms: f64) -> Result<Self> {
        self.timing = TimingModel::fixed_ms(ttft_ms, itl_ms)?;
        Ok(self)
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets `max_model_len`.
    pub fn with_max_model_len(mut self, max_model_len: u32) -> Self {
        self.max_model_len = max_model_len;
        self
    }

    /// Sets the default output limit.
    pub fn with_default_max_tokens(mut self, n: u32) -> Self {
        self.default_max_tokens = n;
        self
    }

    /// Sets the number of tokens per streamed event.
    pub fn with_tokens_per_event(mut self, n: u32) -> Self {
        self.tokens_per_event = n;
        self
    }

    /// Uses the engine timing model (and, with prefix caching, reports
    /// `usage.prompt_tokens_details.cached_tokens`).
    pub fn with_engine(mut self, engine: EngineConfig) -> Self {
        if engine.prefix_caching {
            self.prompt_tokens_details = true;
        }
        self.timing = TimingModel::Engine(engine);
        self
    }

    /// Sets the injected faults.
    pub fn with_faults(mut self, faults: FaultConfig) -> Self {
        self.faults = faults;
        self
    }

    /// Sends the first `n` tokens of every chat and Responses output as reasoning.
    pub fn with_reasoning_tokens(mut self, n: u32) -> Self {
        self.reasoning_tokens = n;
        self
    }

    /// Serves these simulated GPUs on `/dcgm/metrics` (see [`crate::power`]).
    pub fn with_gpus(mut self, gpus: crate::power::GpuPowerConfig) -> Self {
        self.gpus = Some(gpus);
        self
    }

    /// Sets the personality.
    pub fn with_personality(mut self, p: crate::personality::Personality) -> Self {
        self.personality = p;
        self
    }

    /// Turns the ground-truth log on or off.
    pub fn with_ground_truth(mut self, on: bool) -> Self {
        self.record_ground_truth = on;
        self
    }

    /// Checks the values; `start` calls this.
    pub fn validate(&self) -> Result<()> {
        if self.model.is_empty() {
            return Err(BenchError::config("--sim-model", "must not be empty", "pass the served model name"));
        }
        if self.max_model_len == 0 {
            return Err(BenchError::config(
                "--sim-max-model-len",
                "must be at least 1",
                "pass a positive length",
            ));
        }
        if self.default_max_tokens == 0 {
            return Err(BenchError::config(
                "--default-max-tokens",
                "must be at least 1",
                "pass a positive number of tokens",
            ));
        }
        if let TimingModel::Engine(e) = &self.timing {
            e.validate()?;
        }
        if self.tokens_per_event == 0 {
            return Err(BenchError::config(
                "--tokens-per-event",
                "must be at least 1",
                "pass 1 for one token per event",
            ));
        }
        self.faults.validate()?;
        let p = &self.path_prefix;
        if !p.starts_with('/') || p.len() < 2 || p.ends_with('/') || p.contains(['?', '#', ' ']) {
            return Err(BenchError::config(
                "--sim-path-prefix",
                format!("'{p}' is not a path prefix"),
                "pass a path such as /gw or /team-a/llm (leading slash, no trailing slash)",
            ));
        }
        if self.embedding_dim == 0 || self.embedding_dim > 65_536 {
            return Err(BenchError::config(
                "--sim-embedding-dim",
                format!("{} is outside 1..=65536", self.embedding_dim),
                "pass a vector length such as 1024",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_ms_rejects_bad_values() {
        assert!(TimingModel::fixed_ms(-1.0, 10.0).is_err());
        assert!(TimingModel::fixed_ms(10.0, f64::NAN).is_err());
        assert!(TimingModel::fixed_ms(f64::INFINITY, 1.0).is_err());
        let t = TimingModel::fixed_ms(50.0, 2.5).unwrap();
        assert_eq!(
            t,
            TimingModel::Fixed { ttft: Duration::from_millis(50), itl: Duration::from_micros(2500) }
        );
    }
}

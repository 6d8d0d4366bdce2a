//! The load-shape options of a run (trace replay, multi-turn, LoRA, `--duration`, `--stages`,
//! probes): plain data and their checks. What the options do is in `crate::load`.

use std::path::PathBuf;
use std::time::Duration;

use servebench_core::{BenchError, Result};

/// Load options of a run (all off by default).
#[derive(Debug, Clone, Default)]
pub struct LoadOptions {
    /// `--lora-modules` / `--lora-assignment`.
    pub lora: Option<LoraConfig>,
    /// `--multi-turn` and its options.
    pub multi_turn: Option<MultiTurnConfig>,
    /// `--stages RATE:SECONDS,...` or `c=N:SECONDS,...` (empty = none).
    pub stages: Vec<Stage>,
    /// `--duration SECONDS`: nothing is sent after this time.
    pub duration: Option<Duration>,
    /// `--on-duration-end cancel`: requests in flight at the end are cancelled (default: they
    /// finish).
    pub cancel_at_end: bool,
    /// `--probe-request-rate`: probe requests per second alongside the load (crate::load::probe_requests).
    pub probe_request_rate: Option<f64>,
    /// `--max-prefill-concurrency`: requests sent and not yet at their first token, at most.
    pub max_prefill_concurrency: Option<usize>,
    /// `--request-cancellation-rate` (percent, > 0) and `--request-cancellation-delay`.
    pub cancellation: Option<(f64, Duration)>,
    /// `--detect-saturation`, `--max-error-rate`, `--max-errors` (crate::load::early_stop).
    pub early_stop: EarlyStopOptions,
    /// `--dataset-name agentic`: session-tree replay and its controls.
    pub agentic: Option<AgenticConfig>,
    /// `--prefix-cache-hit-rate`, the bimodal pair, `--prefix-cache-bust`: shared prefixes laid
    /// over the token-id prompts, primed before the measured phase (docs/workloads.md).
    pub prefix_cache: Option<servebench_data::prefix_cache::PrefixCacheConfig>,
}

/// The early-stop options of a run (both off by default).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct EarlyStopOptions {
    /// `--detect-saturation` (with `--saturation-window` as its shortest window).
    pub saturation: Option<servebench_core::early_stop::SaturationConfig>,
    /// `--max-error-rate` / `--max-error-rate-window` / `--max-errors`.
    pub errors: Option<servebench_core::early_stop::ErrorRateConfig>,
}

impl EarlyStopOptions {
    pub fn enabled(&self) -> bool {
        self.saturation.is_some() || self.errors.is_some()
    }
}

/// Session-tree replay (`--dataset-name agentic`, docs/workloads.md §Session trees).
#[derive(Debug, Clone, PartialEq)]
pub struct AgenticConfig {
    /// `--dataset-path`.
    pub path: PathBuf,
    /// `--agentic-format` (None: told from the file).
    pub format: Option<servebench_data::agentic::AgenticFormat>,
    /// `--agentic-sessions N`: a seeded sample of N sessions (None: every session).
    pub sessions: Option<usize>,
    /// `--replay-speedup` (> 0): recorded times are divided by it.
    pub speedup: f64,
    /// `--inter-turn-delay-cap-seconds`: cap on one think/tool time after the speed-up.
    pub max_idle: Option<Duration>,
    /// `--max-idle-gap-cap-seconds` (open loop): cap on each pause between consecutive session
    /// starts, after the speed-up.
    pub start_gap_cap: Option<Duration>,
    /// `--agentic-loop closed`: this many sessions at a time (None: open loop).
    pub closed_loop: Option<usize>,
    /// Output tokens of a turn whose trace gives none (`--random-output-len`).
    pub default_output_tokens: u32,
}

/// How adapters are assigned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoraAssignment {
    /// Uniformly at random, seeded by `--seed` (vLLM's default).
    #[default]
    Random,
    /// Unit `i` gets adapter `i mod N`.
    RoundRobin,
}

impl LoraAssignment {
    /// Parses vLLM's names (`random`, `round-robin`).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "random" => Ok(LoraAssignment::Random),
            "round-robin" | "round_robin" => Ok(LoraAssignment::RoundRobin),
            other => Err(BenchError::config(
                "--lora-assignment",
                format!("unknown assignment '{other}'"),
                "use random or round-robin",
            )),
        }
    }
}

/// The adapters of a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoraConfig {
    pub modules: Vec<String>,
    pub assignment: LoraAssignment,
}

impl LoraConfig {
    /// Checks the names are non-empty and distinct.
    pub fn validate(&self) -> Result<()> {
        if self.modules.is_empty() || self.modules.iter().any(|m| m.trim().is_empty()) {
            return Err(BenchError::config(
                "--lora-modules",
                "needs one or more non-empty adapter names",
                "pass the served adapter names, e.g. --lora-modules sql-lora chat-lora",
            ));
        }
        Ok(())
    }
}

/// Options of a multi-turn run (vLLM's `--multi-turn-*` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiTurnConfig {
    /// `--multi-turn-num-turns` (synthetic turns per conversation).
    pub num_turns: u32,
    /// `--multi-turn-min-turns` (0 = the maximum).
    pub min_turns: u32,
    /// `--multi-turn-max-turns` (0 = num-turns for synthetic, uncapped for ShareGPT).
    pub max_turns: u32,
    /// `--multi-turn-concurrency`: requests in flight at most (None = --max-concurrency, else
    /// the number of conversations).
    pub concurrency: Option<usize>,
    /// `--multi-turn-delay-ms`: think time between a reply and the next turn.
    pub delay: Duration,
    /// `--per-turn-input-len`: user message length of turns ≥ 1 (0 = --random-input-len).
    pub per_turn_input_len: u32,
    /// Prefix-sharing mode: share of each message that is one global block, and one
    /// per-conversation block. Either > 0 switches history accumulation off.
    pub prefix_global_ratio: f64,
    pub prefix_conversation_ratio: f64,
    /// ShareGPT conversations from this file instead of synthetic turns.
    pub sharegpt_path: Option<PathBuf>,
}

impl Default for MultiTurnConfig {
    fn default() -> Self {
        MultiTurnConfig {
            num_turns: 3,
            min_turns: 0,
            max_turns: 0,
            concurrency: None,
            delay: Duration::ZERO,
            per_turn_input_len: 0,
            prefix_global_ratio: 0.0,
            prefix_conversation_ratio: 0.0,
            sharegpt_path: None,
        }
    }
}

impl MultiTurnConfig {
    /// Whether each turn carries the conversation so far.
    pub fn history(&self) -> bool {
        self.prefix_global_ratio <= 0.0 && self.prefix_conversation_ratio <= 0.0
    }

    /// Checks the ratios and turn bounds.
    pub fn validate(&self) -> Result<()> {
        let fix = "pass ratios in [0, 1) whose sum is below 1";
        for (flag, r) in [
            ("--multi-turn-prefix-global-ratio", self.prefix_global_ratio),
            ("--multi-turn-prefix-conversation-ratio", self.prefix_conversation_ratio),
        ] {
            if !(0.0..1.0).contains(&r) {
                return Err(BenchError::config(flag, format!("{r} is not in [0, 1)"), fix));
            }
        }
        if self.prefix_global_ratio + self.prefix_conversation_ratio >= 1.0 {
            return Err(BenchError::config(
                "--multi-turn-prefix-global-ratio",
                "the two ratios sum to 1 or more",
                fix,
            ));
        }
        if self.num_turns == 0 {
            return Err(BenchError::config("--multi-turn-num-turns", "must be at least 1", "pass 1 or more"));
        }
        if self.max_turns > 0 && self.min_turns > self.max_turns {
            return Err(BenchError::config(
                "--multi-turn-min-turns",
                format!("{} is above --multi-turn-max-turns {}", self.min_turns, self.max_turns),
                "pass a minimum <= the maximum",
            ));
        }
        if self.sharegpt_path.is_some() && self.max_turns == 1 {
            return Err(BenchError::config(
                "--multi-turn-max-turns",
                "1 turn is not a conversation",
                "pass 0 (uncapped) or 2 or more",
            ));
        }
        if self.sharegpt_path.is_some() && !self.history() {
            return Err(BenchError::config(
                "--multi-turn-prefix-global-ratio",
                "prefix-sharing mode needs the random dataset",
                "drop the prefix ratios or use --dataset-name random",
            ));
        }
        Ok(())
    }
}

/// One stage held for `seconds`: `rate` requests per second (open loop), or — a concurrency
/// stage (`c=N`) — a closed loop keeping `concurrency` requests in flight, each replaced as it
/// ends (`rate` is then infinite).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    pub rate: f64,
    pub seconds: f64,
    pub concurrency: Option<usize>,
}

impl Stage {
    /// `rate` requests per second for `seconds`.
    pub fn at_rate(rate: f64, seconds: f64) -> Stage {
        Stage { rate, seconds, concurrency: None }
    }

    /// `concurrency` requests in flight for `seconds` (closed loop).
    pub fn at_concurrency(concurrency: usize, seconds: f64) -> Stage {
        Stage { rate: f64::INFINITY, seconds, concurrency: Some(concurrency) }
    }
}

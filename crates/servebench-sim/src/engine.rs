//! The `engine` timing model: a continuous-batching step loop, so that queueing, saturation and
//! batch-size-dependent inter-token latency emerge as on a real server.
//!
//! One scheduler task (see `engine_sched.rs`) owns every sequence. Each step it admits waiting
//! requests in FCFS order while the running set has room (max sequences, KV tokens), spends a
//! per-step token budget on one decode token per running sequence and on chunks of pending
//! prefills, sleeps for the step's modelled duration, then hands the step's tokens to the
//! sequences. A request's pacer (`pacer.rs`) waits on those notifications instead of a timer.
//!
//! Step duration = `decode_step_base + decode_per_seq × decoding sequences` (if any sequence
//! decodes) `+ prefill tokens of the step / prefill_tokens_per_s`, times a seeded jitter factor
//! in `[1 − jitter, 1 + jitter]`.

use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Waker;
use std::time::Duration;

use servebench_core::{BenchError, Result};

/// Parameters of the continuous-batching model. All durations are per engine step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineConfig {
    /// Most sequences running at once (vLLM `--max-num-seqs`). A request with `n` choices (or a
    /// batch of prompts) counts as that many sequences.
    pub max_num_seqs: u32,
    /// KV cache capacity in tokens. A request is admitted only while the prompt + planned output
    /// tokens of the running requests plus its own fit (a request larger than the whole cache
    /// is admitted alone).
    pub kv_capacity_tokens: u64,
    /// Prefill speed in prompt tokens per second.
    pub prefill_tokens_per_s: f64,
    /// Token budget of one step (vLLM `--max-num-batched-tokens`): decode tokens first, then
    /// prefill chunks.
    pub max_num_batched_tokens: u32,
    /// Fixed cost of a decode step.
    pub decode_step_base: Duration,
    /// Added cost per decoding sequence in the batch.
    pub decode_per_seq: Duration,
    /// Relative jitter of each step's duration (0.02 = ±2 %), seeded.
    pub jitter: f64,
    /// Prefix caching by block hash: full prompt blocks already computed skip prefill.
    pub prefix_caching: bool,
    /// Tokens per KV block (the prefix cache's granularity).
    pub block_size: u32,
    /// Blocks the prefix cache keeps (least recently used evicted first). 0 = the KV capacity
    /// in blocks.
    pub prefix_cache_blocks: u64,
    /// Speculative decoding: draft tokens proposed per step per sequence (0 = off). A step then
    /// yields 1 + accepted tokens, in one event.
    pub spec_k: u32,
    /// Probability that each draft token is accepted (drafts after the first rejection are
    /// dropped).
    pub spec_acceptance: f64,
}

/// Named parameter sets for `--sim-preset`. See docs/simulator.md for where the numbers come
/// from.
pub const PRESETS: &[&str] = &["h100-8b", "cpu-tiny"];

impl EngineConfig {
    /// A plausible 8B model (Llama-3-8B class, bf16) on one H100 with vLLM: ~15k prompt tok/s
    /// prefill, 7 ms + 30 µs/seq decode steps, 256 sequences, 400k KV tokens, 8192-token step
    /// budget, prefix caching on.
    pub fn h100_8b() -> Self {
        EngineConfig {
            max_num_seqs: 256,
            kv_capacity_tokens: 400_000,
            prefill_tokens_per_s: 15_000.0,
            max_num_batched_tokens: 8192,
            decode_step_base: Duration::from_millis(7),
            decode_per_seq: Duration::from_micros(30),
            jitter: 0.02,
            prefix_caching: true,
            block_size: 16,
            prefix_cache_blocks: 0,
            spec_k: 0,
            spec_acceptance: 0.7,
        }
    }

    /// A small model on a few CPU cores: 500 prompt tok/s, 20 ms + 2 ms/seq decode steps, 8
    /// sequences, 8192 KV tokens, 512-token step budget.
    pub fn cpu_tiny() -> Self {
        EngineConfig {
            max_num_seqs: 8,
            kv_capacity_tokens: 8192,
            prefill_tokens_per_s: 500.0,
            max_num_batched_tokens: 512,
            decode_step_base: Duration::from_millis(20),
            decode_per_seq: Duration::from_millis(2),
            jitter: 0.05,
            prefix_caching: true,
            block_size: 16,
            prefix_cache_blocks: 0,
            spec_k: 0,
            spec_acceptance: 0.7,
        }
    }

    /// The preset called `name` (see [`PRESETS`]).
    pub fn preset(name: &str) -> Result<Self> {
        match name {
            "h100-8b" => Ok(Self::h100_8b()),
            "cpu-tiny" => Ok(Self::cpu_tiny()),
            other => Err(BenchError::config(
                "--sim-preset",
                format!("unknown preset '{other}'"),
                format!("use one of: {}", PRESETS.join(", ")),
            )),
        }
    }

    /// Checks the values.
    pub fn validate(&self) -> Result<()> {
        let bad =
            |flag: &str, what: &str| Err(BenchError::config(flag, what.to_owned(), "see docs/simulator.md"));
        if self.max_num_seqs == 0 {
            return bad("--sim-max-num-seqs", "must be at least 1");
        }
        if self.kv_capacity_tokens == 0 {
            return bad("--sim-kv-capacity-tokens", "must be at least 1");
        }
        if !self.prefill_tokens_per_s.is_finite() || self.prefill_tokens_per_s <= 0.0 {
            return bad("--sim-prefill-tokens-per-s", "must be a positive number");
        }
        if self.max_num_batched_tokens == 0 {
            return bad("--sim-max-num-batched-tokens", "must be at least 1");
        }
        if !self.jitter.is_finite() || !(0.0..1.0).contains(&self.jitter) {
            return bad("--sim-jitter", "must be in [0, 1)");
        }
        if self.block_size == 0 {
            return bad("--sim-block-size", "must be at least 1");
        }
        if !self.spec_acceptance.is_finite() || !(0.0..=1.0).contains(&self.spec_acceptance) {
            return bad("--sim-spec-acceptance", "must be in [0, 1]");
        }
        if self.spec_k > 64 {
            return bad("--sim-spec-k", "must be at most 64");
        }
        if self.decode_step_base > Duration::from_secs(60) || self.decode_per_seq > Duration::from_secs(60) {
            return bad("--sim-decode-step-ms", "must be at most 60 s");
        }
        Ok(())
    }

    /// Capacity of the prefix cache in blocks.
    pub(crate) fn cache_blocks(&self) -> u64 {
        if self.prefix_cache_blocks > 0 {
            self.prefix_cache_blocks
        } else {
            (self.kv_capacity_tokens / u64::from(self.block_size.max(1))).max(1)
        }
    }
}

/// Progress of one request, shared between the scheduler (writer) and the request's pacer
/// (reader). One uncontended lock per step per request.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    inner: Mutex<ProgressInner>,
}

#[derive(Debug, Default)]
pub(crate) struct ProgressInner {
    /// Tokens per choice generated so far.
    pub produced: u32,
    /// Prompt tokens found in the prefix cache, once admitted.
    pub cached: Option<u32>,
    /// The client went away: the scheduler drops the sequence.
    pub cancelled: bool,
    /// The pacer waiting for more tokens.
    pub waker: Option<Waker>,
}

impl Progress {
    pub(crate) fn lock(&self) -> MutexGuard<'_, ProgressInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by the scheduler: adds tokens and wakes the pacer.
    pub(crate) fn add(&self, tokens: u32) {
        let waker = {
            let mut g = self.lock();
            g.produced = g.produced.saturating_add(tokens);
            g.waker.take()
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    pub(crate) fn set_cached(&self, cached: u32) {
        self.lock().cached = Some(cached);
    }

    pub(crate) fn cancel(&self) {
        self.lock().cancelled = true;
    }

    pub(crate) fn is_cancelled(&self) -> bool {
        self.lock().cancelled
    }
}

/// A request handed to the scheduler.
#[derive(Debug)]
pub(crate) struct Submission {
    /// Prompt tokens (summed over the prompts of a batch).
    pub prompt_tokens: u32,
    /// Tokens each choice generates (the longest choice).
    pub output_tokens: u32,
    /// Total planned output tokens over choices (KV reservation).
    pub total_output_tokens: u64,
    /// Sequences this request occupies (choices).
    pub seqs: u32,
    /// Block-hash chain of each prompt (full blocks only), for the prefix cache.
    pub blocks: Vec<Vec<u64>>,
    pub progress: Arc<Progress>,
}

/// Block-hash chain of a prompt: hash `i` covers tokens `[0, (i + 1) × block_size)`, so equal
/// hashes mean equal prefixes. Only full blocks are hashed.
pub(crate) fn block_hashes(ids: &[u32], block_size: u32) -> Vec<u64> {
    let bs = block_size.max(1) as usize;
    let mut out = Vec::with_capacity(ids.len() / bs);
    let mut prev = 0x5eed_b10c_u64;
    for block in ids.chunks_exact(bs) {
        let mut h = crate::hash::Fnv::new(prev);
        for id in block {
            h = h.bytes(&id.to_le_bytes());
        }
        prev = h.finish();
        out.push(prev);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_preset_is_valid_and_bad_values_are_refused() {
        for p in PRESETS {
            EngineConfig::preset(p).unwrap().validate().unwrap();
        }
        assert!(EngineConfig::preset("nope").is_err());
        let mut c = EngineConfig::cpu_tiny();
        c.spec_acceptance = 1.5;
        assert!(c.validate().is_err());
        c = EngineConfig::cpu_tiny();
        c.max_num_seqs = 0;
        assert!(c.validate().is_err());
    }

    #[test]
    fn block_chain_depends_on_prefix() {
        let a: Vec<u32> = (0..40).collect();
        let mut b = a.clone();
        b[20] = 999;
        let ha = block_hashes(&a, 16);
        let hb = block_hashes(&b, 16);
        assert_eq!(ha.len(), 2);
        assert_eq!(ha[0], hb[0]);
        assert_ne!(ha[1], hb[1]);
        let mut c = a.clone();
        c[0] = 7;
        assert_ne!(block_hashes(&c, 16)[1], ha[1], "a block's hash covers the whole prefix");
    }
}

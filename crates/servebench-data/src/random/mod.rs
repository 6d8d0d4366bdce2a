//! The `random` dataset: prompts of random tokens with exact, seeded lengths.
//!
//! Lengths follow `vllm bench serve`: the input length of a request is a uniform integer in
//! `[floor(L·(1−r)), ceil(L·(1+r))]`, the output length one in
//! `[max(1, floor(O·(1−r))), max(1, ceil(O·(1+r)))]`; both are fixed when `r = 0`.
//!
//! **Token-count convention.** `RequestSpec::prompt_tokens = prefix_len + input_len`, where
//! `input_len` is the sampled input length, and it *includes* the special tokens the tokenizer
//! adds (`num_special_tokens`, e.g. a Llama 3 BOS). The prompt text therefore encodes without
//! special tokens to exactly `prompt_tokens − num_special` tokens (the first `prefix_len` of
//! which are the shared prefix), and a server's `/tokenize`, which adds BOS, reports exactly
//! `prompt_tokens`. If the sampled input length is smaller than `num_special`, the text part
//! after the prefix is empty and `prompt_tokens = prefix_len + num_special`.
//! In token-id mode ([`RandomDatasetConfig::prompt_token_ids`]) the ids are sent as they are
//! (servers add no BOS to an id prompt): a prompt has exactly `prefix_len + input_len` ids, all
//! from the allowed set (no special tokens), and `prompt_tokens` is that number.
//!
//! **Exactness and speed.** Text prompts are concatenations of *stable words*: tokens whose
//! text is a space and ASCII letters (` word`) and which encode alone to themselves. The
//! pre-tokenizers of byte-level BPE (GPT-2, Llama 3, Qwen, cl100k/o200k) and of
//! SentencePiece-style tokenizers (Metaspace) cut such a concatenation back into exactly those
//! words, and BPE encodes every pre-token on its own, so `n` words are `n` tokens with no
//! tokenizer call per prompt. The pool is built once per call (one pass over the vocabulary)
//! and validated on the whole pool in random orders; after generation the prefix and a spread
//! sample of prompts (up to 32, capped at 65,536 tokens) are re-encoded. If the pool cannot be
//! built or a sample mismatches, the whole workload is built by the general path instead
//! (decode → re-encode → adjust, per prompt), which works with any tokenizer but is slow.
//!
//! **Reproducibility.** Request `i` draws everything (lengths, then tokens) from its own ChaCha8
//! stream keyed by `(seed, i)`; the prefix has a stream of its own. The workload does not
//! depend on the number of threads (generation runs on rayon).

pub mod exact;
mod general;
pub(crate) mod pool;
mod source;

pub use exact::{ExactText, ExactTexts};
pub use source::RandomSource;

use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use servebench_core::{BenchError, Prompt, RequestSource, Requests, Result, TextTokenizer, Workload};

use pool::{scan_vocab, WordPool};

/// How text prompts are built.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TextMethod {
    /// Stable words when the tokenizer allows it (verified), else the general path.
    #[default]
    Auto,
    /// Always the general decode → re-encode → adjust path (slow; for tests and comparison).
    General,
}

/// Options of the random dataset (`--random-*` flags).
#[derive(Debug, Clone, PartialEq)]
pub struct RandomDatasetConfig {
    /// Number of requests (`--num-prompts`).
    pub num_prompts: usize,
    /// Mean input length in tokens, special tokens included (`--random-input-len`).
    pub input_len: usize,
    /// Mean output length in tokens (`--random-output-len`).
    pub output_len: usize,
    /// Tokens of a prefix shared by every prompt (`--random-prefix-len`).
    pub prefix_len: usize,
    /// Relative spread of input lengths, in `[0, 1)` (`--random-range-ratio`).
    pub range_ratio_input: f64,
    /// Relative spread of output lengths, in `[0, 1)`.
    pub range_ratio_output: f64,
    /// Send token ids instead of text (`--prompt-token-ids`).
    pub prompt_token_ids: bool,
    /// Seed (`--seed`).
    pub seed: u64,
    /// How text prompts are built (default: [`TextMethod::Auto`]).
    pub method: TextMethod,
}

impl Default for RandomDatasetConfig {
    /// `vllm bench serve` defaults: 1000 prompts, 1024 in, 128 out, no prefix, no spread, seed 0.
    fn default() -> Self {
        Self {
            num_prompts: 1000,
            input_len: 1024,
            output_len: 128,
            prefix_len: 0,
            range_ratio_input: 0.0,
            range_ratio_output: 0.0,
            prompt_token_ids: false,
            seed: 0,
            method: TextMethod::Auto,
        }
    }
}

/// How the prompts of a workload were built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GenerationPath {
    /// Token-id prompts.
    TokenIds,
    /// Concatenated stable words; `pool` words were available.
    StableWords {
        /// Number of stable words in the pool.
        pool: usize,
    },
    /// The general decode → re-encode → adjust path, and why it was used.
    General {
        /// Why the fast path was not used.
        reason: String,
    },
}

/// A generated workload and how it was built.
#[derive(Debug, Clone)]
pub struct RandomOutcome {
    /// The requests.
    pub workload: Workload,
    /// The path taken (for logs and the result's metadata).
    pub path: GenerationPath,
    /// Wall time of each phase, in order (`scan`, `pool`, `generate`, `verify`, `general`),
    /// for logs; phases that did not run are absent.
    pub phases: Vec<(&'static str, Duration)>,
}

/// Inclusive bounds of a sampled length: `[floor(len·(1−r)), ceil(len·(1+r))]`, each raised
/// to at least `min`.
pub fn length_bounds(len: usize, ratio: f64, min: usize) -> (usize, usize) {
    let l = len as f64;
    let lo = (l * (1.0 - ratio)).floor().max(0.0) as usize;
    let hi = (l * (1.0 + ratio)).ceil().max(0.0) as usize;
    (lo.max(min), hi.max(min).max(lo.max(min)))
}

/// Stream of request `i` (the prefix uses `u64::MAX`).
fn stream_rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

const PREFIX_STREAM: u64 = u64::MAX;

fn check_config(cfg: &RandomDatasetConfig) -> Result<()> {
    for (flag, r) in [
        ("--random-range-ratio (input)", cfg.range_ratio_input),
        ("--random-range-ratio (output)", cfg.range_ratio_output),
    ] {
        if !(r.is_finite() && (0.0..1.0).contains(&r)) {
            return Err(BenchError::config(
                flag,
                format!("must be in [0, 1) (got {r})"),
                "pass a value such as 0.1",
            ));
        }
    }
    let (_, hi) = length_bounds(cfg.input_len, cfg.range_ratio_input, 0);
    let (_, out_hi) = length_bounds(cfg.output_len, cfg.range_ratio_output, 1);
    if hi.saturating_add(cfg.prefix_len) > u32::MAX as usize / 2 || out_hi > u32::MAX as usize / 2 {
        return Err(BenchError::config(
            "--random-input-len/--random-prefix-len/--random-output-len",
            "lengths are too large",
            "use lengths below 2^31 tokens",
        ));
    }
    Ok(())
}

/// Per-request lengths: `(input_len, output_len)` and the request's RNG, positioned after them.
fn draw_lengths(cfg: &RandomDatasetConfig, index: u64) -> (usize, usize, ChaCha8Rng) {
    let mut rng = stream_rng(cfg.seed, index);
    let (lo, hi) = length_bounds(cfg.input_len, cfg.range_ratio_input, 0);
    let (olo, ohi) = length_bounds(cfg.output_len, cfg.range_ratio_output, 1);
    let input = rng.random_range(lo..=hi);
    let output = rng.random_range(olo..=ohi);
    (input, output, rng)
}

/// Generates the random workload. See [`generate_random_detailed`].
pub fn generate_random(cfg: &RandomDatasetConfig, tok: &dyn TextTokenizer) -> Result<Workload> {
    generate_random_detailed(cfg, tok).map(|o| o.workload)
}

/// Generates the random workload and reports the path taken. Text prompts encode (without
/// special tokens) to exactly `prompt_tokens − num_special` tokens; see the module docs.
/// Every request held in memory: [`prepare_random`] builds them on demand instead.
pub fn generate_random_detailed(cfg: &RandomDatasetConfig, tok: &dyn TextTokenizer) -> Result<RandomOutcome> {
    let prepared = prepare_random(cfg, tok)?;
    let mut phases = prepared.phases;
    let t = Instant::now();
    let workload = match prepared.requests {
        Requests::Lazy(_) => match &prepared.source {
            Some(src) => collect(src),
            None => prepared.requests.into_workload(),
        },
        held => held.into_workload(),
    };
    if prepared.source.is_some() {
        phases.push(("generate", t.elapsed()));
    }
    Ok(RandomOutcome { workload, path: prepared.path, phases })
}

/// Every request of `src`, built in parallel (one reused text buffer per worker).
fn collect(src: &RandomSource) -> Workload {
    let requests =
        (0..src.len()).into_par_iter().map_init(Vec::new, |buf, i| src.build_with(i, buf)).collect();
    Workload::new(requests)
}

/// The random dataset ready to be sent: built on demand ([`Requests::Lazy`], from a
/// [`RandomSource`]) on the token-id and stable-word paths, held on the general path (each
/// prompt converges on its own and may fail, so all are built before the run).
#[derive(Debug)]
pub struct RandomPrepared {
    pub requests: Requests,
    /// The source of lazy requests (`None` on the general path).
    pub source: Option<Arc<RandomSource>>,
    pub path: GenerationPath,
    /// As [`RandomOutcome::phases`] (no `generate`: nothing is generated in advance).
    pub phases: Vec<(&'static str, Duration)>,
}

/// Prepares the random workload without building its prompts (except on the general path):
/// the vocabulary scan, the word pool, the prefix, and the verification sample, whose prompts
/// are built and re-encoded here exactly as the run will build them.
pub fn prepare_random(cfg: &RandomDatasetConfig, tok: &dyn TextTokenizer) -> Result<RandomPrepared> {
    check_config(cfg)?;
    let mut phases = Vec::new();
    let mut t = Instant::now();
    let mut lap = |name: &'static str, phases: &mut Vec<(&'static str, Duration)>| {
        phases.push((name, t.elapsed()));
        t = Instant::now();
    };
    let scan = scan_vocab(tok);
    lap("scan", &mut phases);
    if scan.allowed.is_empty() {
        return Err(BenchError::Dataset {
            detail: format!("tokenizer '{}' has no usable (non-special) token", tok.name()),
            source: None,
        });
    }
    let lazy = |src: RandomSource, path: GenerationPath, phases| {
        let src = Arc::new(src);
        let requests = Requests::lazy(src.clone());
        RandomPrepared { requests, source: Some(src), path, phases }
    };
    if cfg.prompt_token_ids {
        let prefix =
            general::sample_ids(&scan.allowed, cfg.prefix_len, &mut stream_rng(cfg.seed, PREFIX_STREAM));
        return Ok(lazy(
            RandomSource::token_ids(cfg, scan.allowed, prefix),
            GenerationPath::TokenIds,
            phases,
        ));
    }
    let num_special = tok.num_special_tokens() as usize;
    let reason = match cfg.method {
        TextMethod::General => "requested".to_string(),
        TextMethod::Auto => {
            let pool = WordPool::build(tok, &scan);
            lap("pool", &mut phases);
            match pool {
                Err(why) => format!("no stable-word pool: {why}"),
                Ok(pool) => {
                    let mut prefix = Vec::with_capacity(cfg.prefix_len * pool.mean_len());
                    let mut prefix_ids = Vec::with_capacity(cfg.prefix_len);
                    let mut prng = stream_rng(cfg.seed, PREFIX_STREAM);
                    pool.push_random(&mut prefix, Some(&mut prefix_ids), cfg.prefix_len, &mut prng, true);
                    let prefix_text = ascii_text(&prefix).into_owned();
                    let size = pool.len();
                    let src = RandomSource::words(cfg, pool, prefix, num_special);
                    let problem = verify_sample(tok, &src, &prefix_text, &prefix_ids, num_special);
                    lap("verify", &mut phases);
                    match problem {
                        None => return Ok(lazy(src, GenerationPath::StableWords { pool: size }, phases)),
                        Some(why) => format!("verification failed: {why}"),
                    }
                }
            }
        }
    };
    let workload = general_workload(cfg, tok, &scan.allowed, num_special)?;
    lap("general", &mut phases);
    Ok(RandomPrepared {
        requests: workload.into(),
        source: None,
        path: GenerationPath::General { reason },
        phases,
    })
}

/// The words are ASCII; a lossy conversion keeps this panic-free regardless.
fn ascii_text(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}

/// At most this many prompts are re-encoded after fast generation, spread over the workload...
const VERIFY_PROMPTS: usize = 32;
/// ...and no more once this many tokens have been checked (at least two prompts are).
const VERIFY_TOKENS: usize = 1 << 16;

/// Builds and re-encodes the prefix and a spread sample of prompts. `Some(why)` on a mismatch.
fn verify_sample(
    tok: &dyn TextTokenizer,
    src: &RandomSource,
    prefix_text: &str,
    prefix_ids: &[u32],
    num_special: usize,
) -> Option<String> {
    let n = src.len();
    let want = VERIFY_PROMPTS.min(n);
    let mut idx: Vec<usize> = (0..want).map(|k| k * n / want).collect();
    idx.dedup();
    let mut budget = 0usize;
    let idx: Vec<usize> = idx
        .into_iter()
        .enumerate()
        .take_while(|&(k, i)| {
            let keep = k < 2 || budget < VERIFY_TOKENS;
            budget += src.lengths(i).0 as usize;
            keep
        })
        .map(|(_, i)| i)
        .collect();
    let problem = idx.par_iter().find_map_first(|&i| {
        let r = src.build(i);
        let text = r.prompt.text()?;
        let want = (r.prompt_tokens as usize).saturating_sub(num_special);
        match tok.encode(text, false) {
            Ok(ids) if ids.len() == want && ids.starts_with(prefix_ids) => None,
            Ok(ids) => Some(format!("prompt {i} encodes to {} tokens, expected {want}", ids.len())),
            Err(e) => Some(format!("prompt {i}: {e}")),
        }
    });
    if problem.is_some() {
        return problem;
    }
    match tok.encode(prefix_text, false) {
        Ok(ids) if ids == prefix_ids => None,
        Ok(ids) => Some(format!("the prefix encodes to {} tokens, expected {}", ids.len(), prefix_ids.len())),
        Err(e) => Some(format!("prefix: {e}")),
    }
}

/// Slow path: every prompt converges on its own (in parallel).
fn general_workload(
    cfg: &RandomDatasetConfig,
    tok: &dyn TextTokenizer,
    allowed: &[u32],
    num_special: usize,
) -> Result<Workload> {
    let mut prng = stream_rng(cfg.seed, PREFIX_STREAM);
    let prefix = general::converge(tok, allowed, "", &[], cfg.prefix_len, &mut prng)?;
    let prefix_ids = tok.encode(&prefix, false)?;
    let requests = (0..cfg.num_prompts)
        .into_par_iter()
        .map(|i| {
            let (input, output, mut rng) = draw_lengths(cfg, i as u64);
            let body = input.saturating_sub(num_special);
            let text =
                general::converge(tok, allowed, &prefix, &prefix_ids, cfg.prefix_len + body, &mut rng)?;
            Ok(source::spec(i, Prompt::Text(Arc::from(text)), cfg.prefix_len + body + num_special, output))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Workload::new(requests))
}

/// Brings a server-side token list to exactly `target` ids: truncates, or pads by cycling
/// through the ids from the start (`[a, b, c]` → `[a, b, c, a, b]`). Empty input stays empty.
///
/// Used by the client's verification against the server (`/tokenize` → adjust →
/// `/detokenize` → `/tokenize` again, a few rounds): when the server counts a prompt
/// differently than the client tokenizer, the client tokenizes the prompt on the server,
/// strips the special tokens the server added (e.g. BOS) from the ids, calls
/// `adjust_to_length(ids, prompt_tokens − num_special)`, turns the result back into text with
/// the server's `/detokenize`, and checks the new text's count again. The text then has the
/// length the server will see, whatever tokenizer the client had.
pub fn adjust_to_length(server_ids: &[u32], target: usize) -> Vec<u32> {
    if server_ids.len() >= target {
        return server_ids.get(..target).map(<[u32]>::to_vec).unwrap_or_default();
    }
    server_ids.iter().copied().cycle().take(target).collect()
}

#[cfg(test)]
mod tests;

//! The `prefix_repetition` dataset: `--prefix-repetition-num-prefixes` random prefixes of
//! `--prefix-repetition-prefix-len` tokens, each shared by `num_prompts / num_prefixes` prompts
//! (the remainder is dropped, as vLLM does), each prompt ending with its own random suffix of
//! `--prefix-repetition-suffix-len` tokens. Prompts are shuffled (seeded) so that groups
//! interleave. Prefix and suffix texts come from the `random` generator (exact lengths);
//! `prompt_tokens` is the whole prompt encoded with special tokens.

use super::{finish, shuffle_source, Sample, Sampling};
use crate::random::{generate_random, RandomDatasetConfig};
use rayon::prelude::*;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// Options of the prefix_repetition dataset (vLLM defaults 256 / 256 / 10 / 128).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrefixRepetitionConfig {
    pub prefix_len: usize,
    pub suffix_len: usize,
    pub num_prefixes: usize,
    pub output_len: usize,
}

impl Default for PrefixRepetitionConfig {
    fn default() -> Self {
        PrefixRepetitionConfig { prefix_len: 256, suffix_len: 256, num_prefixes: 10, output_len: 128 }
    }
}

/// Random texts of exactly `len` tokens (without special tokens).
pub(crate) fn blocks(count: usize, len: usize, seed: u64, tok: &dyn TextTokenizer) -> Result<Vec<Arc<str>>> {
    if len == 0 {
        return Ok(vec![Arc::from(""); count]);
    }
    let specials = tok.num_special_tokens() as usize;
    let cfg = RandomDatasetConfig {
        num_prompts: count,
        input_len: len + specials,
        output_len: 1,
        seed,
        ..RandomDatasetConfig::default()
    };
    let w = generate_random(&cfg, tok)?;
    Ok(w.requests.into_iter().map(|r| Arc::from(r.prompt.text().unwrap_or(""))).collect())
}

/// Builds the prefix_repetition workload.
pub fn generate_prefix_repetition(
    cfg: &PrefixRepetitionConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    if cfg.num_prefixes == 0 || cfg.num_prefixes > sampling.num_prompts {
        return Err(BenchError::config(
            "--prefix-repetition-num-prefixes",
            format!("{} prefixes for {} prompts", cfg.num_prefixes, sampling.num_prompts),
            "pass between 1 and --num-prompts prefixes",
        ));
    }
    let per_prefix = sampling.num_prompts / cfg.num_prefixes;
    let total = per_prefix * cfg.num_prefixes;
    let prefixes = blocks(cfg.num_prefixes, cfg.prefix_len, sampling.seed.wrapping_add(0x5052_4546), tok)?;
    let suffixes = blocks(total, cfg.suffix_len, sampling.seed.wrapping_add(0x5355_4646), tok)?;
    let mut samples: Vec<Sample> = (0..total)
        .into_par_iter()
        .map(|i| {
            let prompt = format!("{}{}", prefixes[i / per_prefix], suffixes[i]);
            let len = tok.encode(&prompt, true)?.len();
            Ok(Sample::text(prompt, len, cfg.output_len))
        })
        .collect::<Result<_>>()?;
    shuffle_source(&mut samples, sampling);
    Ok(finish(samples, &Sampling { num_prompts: total, oversample: false, ..*sampling }))
}

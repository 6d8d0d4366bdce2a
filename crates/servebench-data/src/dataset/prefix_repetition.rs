//! The `prefix_repetition` dataset: `--prefix-repetition-num-prefixes` random prefixes of
//! `--prefix-repetition-prefix-len` tokens, each shared by `num_prompts / num_prefixes` prompts
//! (the remainder is dropped, as vLLM does), each prompt ending with its own random suffix of
//! `--prefix-repetition-suffix-len` tokens. Prompts are shuffled (seeded) so that groups
//! interleave. Prefix and suffix texts come from the `random` generator (exact lengths), and
//! every prompt is checked to encode to exactly `prefix_len + suffix_len` tokens that start with
//! its prefix's tokens (else rebuilt, see `exact_prompts`); `prompt_tokens` is that count plus
//! the special tokens the tokenizer adds.

use super::{finish, rng, shuffle_source, Sample, Sampling};
use crate::random::exact::try_join;
use crate::random::{generate_random, ExactText, ExactTexts, RandomDatasetConfig};
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

/// Seeds of the prefix and suffix texts, and of the fallback streams of [`exact_prompts`].
const PREFIX_SEED: u64 = 0x5052_4546;
const SUFFIX_SEED: u64 = 0x5355_4646;
const REBUILD_PREFIX_SEED: u64 = 0x5242_5046;
const REBUILD_SUFFIX_SEED: u64 = 0x5242_5346;

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
    let prompts = exact_prompts(cfg, per_prefix, total, sampling.seed, tok)?;
    let num_special = tok.num_special_tokens() as usize;
    let mut samples: Vec<Sample> = prompts
        .into_iter()
        .map(|p| {
            let len = p.len() + num_special;
            Sample::text(p.text, len, cfg.output_len)
        })
        .collect();
    shuffle_source(&mut samples, sampling);
    Ok(finish(samples, &Sampling { num_prompts: total, oversample: false, ..*sampling }))
}

/// Prompt `i` = prefix `i / per_prefix` + its own suffix, each prompt exactly
/// `prefix_len + suffix_len` tokens (without special tokens) starting with its prefix's text and
/// tokens. The texts come from the `random` generator and are joined as strings; a prompt whose
/// joined text does not encode so (the prefix's last word and the suffix's first fused, as with
/// SentencePiece-style tokenizers, which drop the space before a text's first word) is rebuilt:
/// its prefix extended by `suffix_len` random tokens in one piece ([`ExactTexts::join`]).
fn exact_prompts(
    cfg: &PrefixRepetitionConfig,
    per_prefix: usize,
    total: usize,
    seed: u64,
    tok: &dyn TextTokenizer,
) -> Result<Vec<ExactText>> {
    let prefix_texts = blocks(cfg.num_prefixes, cfg.prefix_len, seed.wrapping_add(PREFIX_SEED), tok)?;
    let suffixes = blocks(total, cfg.suffix_len, seed.wrapping_add(SUFFIX_SEED), tok)?;
    let mut prefixes: Vec<Option<ExactText>> = prefix_texts
        .par_iter()
        .map(|p| {
            let ids = tok.encode(p, false)?;
            Ok((ids.len() == cfg.prefix_len).then(|| ExactText::new(p.to_string(), ids)))
        })
        .collect::<Result<_>>()?;
    let suffix = |i: usize| suffixes.get(i).map_or("", |s| &**s);
    let joined = |prefixes: &[Option<ExactText>], i: usize| -> Result<Option<ExactText>> {
        match prefixes.get(i / per_prefix).and_then(Option::as_ref) {
            Some(prefix) => try_join(tok, prefix, suffix(i), cfg.suffix_len),
            None => Ok(None),
        }
    };
    let prompts: Vec<Option<ExactText>> =
        (0..total).into_par_iter().map(|i| joined(&prefixes, i)).collect::<Result<_>>()?;
    if prompts.iter().all(Option::is_some) {
        return Ok(prompts.into_iter().flatten().collect());
    }
    let exact = ExactTexts::new(tok)?;
    for (g, prefix) in prefixes.iter_mut().enumerate() {
        if prefix.is_none() {
            let mut r = rng(seed.wrapping_add(REBUILD_PREFIX_SEED), g as u64);
            *prefix = Some(exact.extend(&ExactText::default(), cfg.prefix_len, &mut r)?);
        }
    }
    prompts
        .into_par_iter()
        .enumerate()
        .map(|(i, p)| match p {
            Some(p) => Ok(p),
            None => {
                let prefix =
                    prefixes.get(i / per_prefix).and_then(Option::as_ref).cloned().unwrap_or_default();
                let mut r = rng(seed.wrapping_add(REBUILD_SUFFIX_SEED), i as u64);
                exact.join(&prefix, suffix(i), cfg.suffix_len, &mut r)
            }
        })
        .collect()
}

//! File-based and synthetic datasets of `vllm bench serve` besides `random`: sharegpt, burstgpt,
//! sonnet, custom, custom_image, custom_audio, prefix_repetition, random-mm, random-rerank, spec_bench,
//! speed-bench and hf.
//!
//! Every dataset follows the same steps, as vLLM does: read the source, shuffle it (seeded,
//! unless `--disable-shuffle`), turn entries into samples in that order (tokenizing in parallel
//! with rayon, chunk by chunk, until `--num-prompts` valid samples exist), then oversample with
//! replacement when there are fewer valid samples than requested (unless `--no-oversample`).
//! Token counts (`prompt_tokens`) follow the `random` dataset's convention: the prompt encoded
//! *with* the special tokens the tokenizer adds (BOS), as a server's `/tokenize` counts it.

pub mod audio_decode;
pub mod burstgpt;
pub mod chat_render;
pub mod csv_reader;
pub mod custom;
pub mod custom_audio;
pub mod custom_image;
pub mod file;
pub mod hf;
pub mod hf_asr;
pub mod hf_bfcl;
pub mod hf_chat;
pub mod hf_image;
pub mod hf_mlperf;
pub mod hf_parsers;
pub mod hf_text;
pub(crate) mod hub;
pub mod jpeg;
pub mod json_string;
pub mod media;
pub mod prefix_repetition;
pub mod problem;
pub mod py_random;
pub mod random_mm;
pub mod random_rerank;
pub mod sharegpt;
pub mod sonnet;
pub mod spec;
pub mod spec_bench;
pub mod speed_bench;
pub mod stats;
pub mod wav;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use servebench_core::{
    AudioClip, BenchError, BodyOverrides, ChatMessages, Prompt, RequestSpec, RerankPayload, Result, Workload,
};
use std::sync::Arc;

pub use spec::{build_dataset, DatasetKind, DatasetRequest};
pub use stats::DatasetStats;

/// How samples are drawn from a source (the flags every dataset shares).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sampling {
    /// `--num-prompts`.
    pub num_prompts: usize,
    /// `--seed`.
    pub seed: u64,
    /// Shuffle the source before sampling (not `--disable-shuffle`).
    pub shuffle: bool,
    /// Duplicate samples up to `num_prompts` (not `--no-oversample`).
    pub oversample: bool,
}

impl Default for Sampling {
    fn default() -> Self {
        Sampling { num_prompts: 1000, seed: 0, shuffle: true, oversample: true }
    }
}

/// One request before it gets its index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub prompt: Arc<str>,
    /// Prompt tokens, special tokens included.
    pub prompt_len: u32,
    pub output_len: u32,
    pub multimodal: Option<Arc<[Arc<str>]>>,
    pub rerank: Option<Arc<RerankPayload>>,
    /// The whole chat `messages`, built here (`custom_image` rows with interleaved content).
    pub messages: Option<ChatMessages>,
    /// The audio clip (`custom_audio`).
    pub audio: Option<Arc<AudioClip>>,
    /// Per-request body fields (BFCL's tools).
    pub overrides: Option<Arc<BodyOverrides>>,
}

impl Sample {
    pub fn text(prompt: impl Into<Arc<str>>, prompt_len: usize, output_len: usize) -> Self {
        Sample {
            prompt: prompt.into(),
            prompt_len: saturate(prompt_len),
            output_len: saturate(output_len),
            multimodal: None,
            rerank: None,
            messages: None,
            audio: None,
            overrides: None,
        }
    }
}

pub(crate) fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Stream ids of the seeded RNGs, so that shuffling, oversampling and generation never share
/// a stream.
pub(crate) mod streams {
    pub const SONNET: u64 = 0x534f_4e4e;
    pub const IMAGES: u64 = 0x494d_4147;
    pub const MM_ITEMS: u64 = 0x4d4d_4954;
}

/// A ChaCha8 stream keyed by `(seed, stream)`.
pub(crate) fn rng(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(stream);
    r
}

/// Shuffles `items` when `sampling.shuffle`, as vLLM does: `random.seed(seed)` then
/// `random.shuffle(items)` (Python's generator, `py_random.rs`): the same seed gives vLLM's order.
pub fn shuffle_source<T>(items: &mut [T], sampling: &Sampling) {
    if sampling.shuffle {
        py_random::PyRandom::seed(sampling.seed).shuffle(items);
    }
}

/// Turns `entries` into samples in order, in parallel chunks, until `needed` samples exist
/// (`f` returns `None` for an entry that is filtered out). The result does not depend on the
/// number of threads nor on the chunk sizes: samples are taken in entry order.
pub fn collect_samples<T: Sync>(
    entries: &[T],
    needed: usize,
    f: impl Fn(&T) -> Result<Option<Sample>> + Sync,
) -> Result<Vec<Sample>> {
    let mut out = Vec::with_capacity(needed.min(entries.len()));
    let mut start = 0;
    while start < entries.len() && out.len() < needed {
        let end =
            start.saturating_add(next_chunk_len(needed - out.len(), start, out.len())).min(entries.len());
        let part: Vec<Option<Sample>> = entries[start..end].par_iter().map(&f).collect::<Result<_>>()?;
        out.extend(part.into_iter().flatten().take(needed - out.len()));
        start = end;
    }
    Ok(out)
}

/// How many entries to turn into samples next, when `missing` samples are still needed and
/// `kept` of the first `tried` entries were kept: enough to finish at the acceptance rate seen
/// so far, plus a margin (1/16, at least 64) so that one more small chunk is rarely needed.
/// Entries past the end of the last chunk are never looked at, so a tight estimate saves the
/// tokenizing of entries that would be thrown away.
fn next_chunk_len(missing: usize, tried: usize, kept: usize) -> usize {
    let margin = (missing / 16).max(64);
    let expected = if kept == 0 {
        // Nothing kept yet: the whole missing count at first, then twice what was tried.
        if tried == 0 {
            missing
        } else {
            tried.saturating_mul(2)
        }
    } else {
        let scaled = (missing as u128 * tried as u128).div_ceil(kept as u128);
        usize::try_from(scaled).unwrap_or(usize::MAX)
    };
    expected.saturating_add(margin)
}

/// The workload of `samples`: cut to `num_prompts`, or oversampled up to it (with replacement,
/// seeded) unless oversampling is off. Indices are 0-based in send order.
pub fn finish(mut samples: Vec<Sample>, sampling: &Sampling) -> Workload {
    samples.truncate(sampling.num_prompts);
    let mut resampled = 0;
    if sampling.oversample && !samples.is_empty() && samples.len() < sampling.num_prompts {
        // As vLLM: `random.seed(seed)`, then `random.choice(samples)` for each one missing.
        let mut r = py_random::PyRandom::seed(sampling.seed);
        let have = samples.len();
        resampled = sampling.num_prompts - have;
        for _ in have..sampling.num_prompts {
            let pick = samples[r.below(have)].clone();
            samples.push(pick);
        }
    }
    let requests = samples
        .into_iter()
        .enumerate()
        .map(|(i, s)| {
            let mut spec = RequestSpec::new(i as u64, Prompt::Text(s.prompt), s.prompt_len, s.output_len);
            spec.multimodal = s.multimodal;
            spec.rerank = s.rerank;
            spec.messages = s.messages;
            spec.audio = s.audio;
            spec.overrides = s.overrides;
            spec
        })
        .collect();
    Workload { requests, resampled }
}

/// `--enable-multimodal-chat`: builds every request's whole chat `messages` array now (the
/// text part, then its multimodal parts), as vLLM's datasets do with that flag. The parts move
/// into the messages; requests that already have messages keep them.
pub fn to_chat_messages(workload: &mut Workload) -> Result<()> {
    workload.requests.par_iter_mut().try_for_each(|spec| {
        if spec.messages.is_some() {
            return Ok(());
        }
        let Prompt::Text(text) = &spec.prompt else {
            return Err(BenchError::Dataset {
                detail: "--enable-multimodal-chat builds chat messages from text prompts, and this \
                         dataset has token-id or batched prompts; fix: drop --enable-multimodal-chat"
                    .into(),
                source: None,
            });
        };
        let parts = spec.multimodal.take();
        let m = ChatMessages::user_turn(text, parts.as_deref().unwrap_or(&[]))
            .map_err(|e| BenchError::dataset_from("building chat messages", e))?;
        spec.messages = Some(m);
        Ok(())
    })
}

#[cfg(test)]
mod tests;

//! The random dataset as a [`RequestSource`]: request `i` built on demand from its own ChaCha8
//! stream `(seed, i)`, the shared prefix and the word pool (or the allowed ids). This is the
//! one place a random request is built: the eager workload is these requests collected, so
//! lazy and eager generation give the same bytes.

use std::sync::Arc;

use servebench_core::{Prompt, RequestSource, RequestSpec};

use super::general::sample_ids;
use super::pool::WordPool;
use super::{draw_lengths, RandomDatasetConfig};

/// How prompts are made.
#[derive(Debug)]
enum Body {
    /// Token ids drawn from `allowed`, after the prefix ids.
    TokenIds { allowed: Vec<u32>, prefix: Vec<u32> },
    /// Stable words after the prefix text; `num_special` tokens the tokenizer adds.
    Words { pool: WordPool, prefix: Vec<u8>, num_special: usize },
}

/// Random requests, built one at a time.
#[derive(Debug)]
pub struct RandomSource {
    cfg: RandomDatasetConfig,
    body: Body,
}

impl RandomSource {
    pub(super) fn token_ids(cfg: &RandomDatasetConfig, allowed: Vec<u32>, prefix: Vec<u32>) -> Self {
        RandomSource { cfg: cfg.clone(), body: Body::TokenIds { allowed, prefix } }
    }

    pub(super) fn words(
        cfg: &RandomDatasetConfig,
        pool: WordPool,
        prefix: Vec<u8>,
        num_special: usize,
    ) -> Self {
        RandomSource { cfg: cfg.clone(), body: Body::Words { pool, prefix, num_special } }
    }

    /// Request `i` with a caller's buffer for the text (reused across calls by rayon workers).
    pub(super) fn build_with(&self, i: usize, buf: &mut Vec<u8>) -> RequestSpec {
        let (input, output, mut rng) = draw_lengths(&self.cfg, i as u64);
        match &self.body {
            Body::TokenIds { allowed, prefix } => {
                let mut ids = Vec::with_capacity(prefix.len() + input);
                ids.extend_from_slice(prefix);
                ids.extend(sample_ids(allowed, input, &mut rng));
                let n = ids.len();
                spec(i, Prompt::TokenIds(Arc::from(ids)), n, output)
            }
            Body::Words { pool, prefix, num_special } => {
                let body = input.saturating_sub(*num_special);
                buf.clear();
                buf.extend_from_slice(prefix);
                pool.push_random(buf, None, body, &mut rng, prefix.is_empty());
                let total = self.cfg.prefix_len + body + num_special;
                spec(i, Prompt::Text(Arc::from(String::from_utf8_lossy(buf))), total, output)
            }
        }
    }
}

pub(super) fn spec(index: usize, prompt: Prompt, prompt_tokens: usize, output: usize) -> RequestSpec {
    RequestSpec::new(
        index as u64,
        prompt,
        u32::try_from(prompt_tokens).unwrap_or(u32::MAX),
        u32::try_from(output).unwrap_or(u32::MAX),
    )
}

impl RequestSource for RandomSource {
    fn len(&self) -> usize {
        self.cfg.num_prompts
    }

    fn lengths(&self, i: usize) -> (u32, u32) {
        let (input, output, _) = draw_lengths(&self.cfg, i as u64);
        let prompt = match &self.body {
            Body::TokenIds { prefix, .. } => prefix.len() + input,
            Body::Words { num_special, .. } => {
                self.cfg.prefix_len + input.saturating_sub(*num_special) + num_special
            }
        };
        (u32::try_from(prompt).unwrap_or(u32::MAX), u32::try_from(output).unwrap_or(u32::MAX))
    }

    fn build(&self, i: usize) -> RequestSpec {
        self.build_with(i, &mut Vec::new())
    }
}

//! The general (slow) path for exact-length text prompts: decode random ids, re-encode,
//! adjust, repeat until the text encodes to exactly the target count. Works with any
//! tokenizer; used when the stable-word pool cannot be built or fails verification.

use rand::Rng;
use servebench_core::{BenchError, Result, TextTokenizer};

/// Restarts with a fresh random body before giving up.
const RESTARTS: usize = 8;
/// Adjustment rounds per restart.
const ROUNDS: usize = 32;

/// `n` ids drawn uniformly from `allowed`.
pub(crate) fn sample_ids<R: Rng>(allowed: &[u32], n: usize, rng: &mut R) -> Vec<u32> {
    if allowed.is_empty() {
        return Vec::new();
    }
    (0..n).map(|_| allowed.get(rng.random_range(0..allowed.len())).copied().unwrap_or(0)).collect()
}

/// A text that starts with `prefix_text` and encodes (without special tokens) to exactly
/// `target` tokens. In the first half of the restarts the encoding must also start with
/// `prefix_ids` (the prefix keeps its own tokens); after that only the text prefix is kept.
pub(crate) fn converge<R: Rng>(
    tok: &dyn TextTokenizer,
    allowed: &[u32],
    prefix_text: &str,
    prefix_ids: &[u32],
    target: usize,
    rng: &mut R,
) -> Result<String> {
    if target <= prefix_ids.len() && tok.count(prefix_text)? == target {
        return Ok(prefix_text.to_string());
    }
    let keep = prefix_ids.len();
    let body_target = target.saturating_sub(keep);
    let mut best = usize::MAX;
    for restart in 0..RESTARTS {
        let strict = restart < RESTARTS / 2;
        let mut body = sample_ids(allowed, body_target, rng);
        for _ in 0..ROUNDS {
            // Decode prefix and body together (decoders such as Metaspace treat the first
            // token of a sequence specially), keeping the prefix text as it is.
            let mut seq = Vec::with_capacity(keep + body.len());
            seq.extend_from_slice(prefix_ids);
            seq.extend_from_slice(&body);
            let joint = tok.decode(&seq, true)?;
            let full = if joint.starts_with(prefix_text) {
                joint
            } else {
                format!("{prefix_text}{}", tok.decode(&body, true)?)
            };
            let ids = tok.encode(&full, false)?;
            best = best.min(ids.len().abs_diff(target));
            let prefix_ok = !strict || ids.starts_with(prefix_ids);
            if ids.len() == target && prefix_ok {
                return Ok(full);
            }
            if !prefix_ok {
                break;
            }
            // Continue from the canonical (re-encoded) body ids.
            body = ids.get(keep..).map(<[u32]>::to_vec).unwrap_or_default();
            if ids.len() > target {
                let excess = ids.len() - target;
                body.truncate(body.len().saturating_sub(excess));
            } else if ids.len() < target {
                body.extend(sample_ids(allowed, target - ids.len(), rng));
            } else {
                // Right length but the prefix merged with the body: change the first body id.
                if let Some(first) = body.first_mut() {
                    *first = sample_ids(allowed, 1, rng).first().copied().unwrap_or(*first);
                }
            }
        }
    }
    Err(BenchError::Dataset {
        detail: format!(
            "could not build a random prompt of exactly {target} tokens with tokenizer '{}' \
             (closest was {best} tokens off); fix: try another --seed or length",
            tok.name()
        ),
        source: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{HfTokenizer, TiktokenTokenizer};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use servebench_testkit::fixtures::smollm2_tokenizer;

    #[test]
    fn converges_exactly() {
        let hf = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        let tk = TiktokenTokenizer::from_name("o200k_base").unwrap();
        for tok in [&hf as &dyn TextTokenizer, &tk] {
            let allowed = crate::random::pool::scan_vocab(tok).allowed;
            let mut rng = ChaCha8Rng::seed_from_u64(7);
            let prefix = converge(tok, &allowed, "", &[], 37, &mut rng).unwrap();
            let prefix_ids = tok.encode(&prefix, false).unwrap();
            assert_eq!(prefix_ids.len(), 37);
            for target in [37, 38, 40, 100, 300] {
                let text = converge(tok, &allowed, &prefix, &prefix_ids, target, &mut rng).unwrap();
                assert!(text.starts_with(&prefix));
                assert_eq!(tok.count(&text).unwrap(), target, "{}", tok.name());
            }
        }
    }

    #[test]
    fn zero_target_is_empty() {
        let tok = TiktokenTokenizer::from_name("cl100k_base").unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        assert_eq!(converge(&tok, &[1, 2, 3], "", &[], 0, &mut rng).unwrap(), "");
    }
}

//! The vocabulary scan and the pool of "stable words" behind fast exact-length text prompts.
//!
//! A stable word is a token whose text, a space followed by ASCII letters (` word`), encodes
//! alone to exactly that token. With the pre-tokenizers of byte-level BPE (GPT-2, Llama 3,
//! Qwen, cl100k/o200k: one pre-token per ` ?\p{L}+`) and of SentencePiece-style tokenizers
//! (Metaspace, which splits before every `▁`), a concatenation of such words is split back
//! into exactly those words, and BPE encodes each pre-token on its own: the text of `n`
//! stable words encodes to exactly those `n` ids, with no re-encoding. The theory is checked,
//! not trusted: the pool is validated on long concatenations in random orders when built, and
//! generated prompts are sampled and re-encoded afterwards (see `super::generate_random`).

use rand::seq::SliceRandom;
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;
use servebench_core::TextTokenizer;

/// Pools smaller than this are not used (the prompts would repeat too much).
pub(crate) const MIN_POOL: usize = 256;
/// Words per validation chunk.
const CHUNK: usize = 128;
/// Filtering passes, each over the whole pool in a different random order (a final clean
/// pass over the survivors follows).
const PASSES: u64 = 1;
/// Longest word (leading space included), in bytes; each word is stored in this many bytes.
const WORD_BYTES: usize = 16;
/// Largest share of candidates that validation may reject before the pool is abandoned.
const MAX_REJECTED_SHARE: f64 = 0.05;

/// Result of one pass over every id of the vocabulary.
#[derive(Debug, Default)]
pub(crate) struct VocabScan {
    /// Ids whose text (special tokens skipped) is non-empty: the ids random prompts draw from.
    pub allowed: Vec<u32>,
    /// `(id, letters, spaced)` for ids whose text is ASCII letters, after one space if
    /// `spaced`.
    pub candidates: Vec<(u32, String, bool)>,
}

/// Decodes every id once (in parallel). Unknown ids of sparse vocabularies are skipped.
pub(crate) fn scan_vocab(tok: &dyn TextTokenizer) -> VocabScan {
    let rows: Vec<(u32, Option<(String, bool)>)> = (0..tok.vocab_size())
        .into_par_iter()
        .filter_map(|id| {
            let text = tok.decode(&[id], true).ok()?;
            if text.is_empty() {
                return None;
            }
            let letters = text.strip_prefix(' ').unwrap_or(&text);
            let cand = (!letters.is_empty()
                && letters.len() < WORD_BYTES
                && letters.bytes().all(|b| b.is_ascii_alphabetic()))
            .then(|| (letters.to_string(), letters.len() < text.len()));
            Some((id, cand))
        })
        .collect();
    let mut scan = VocabScan::default();
    for (id, cand) in rows {
        scan.allowed.push(id);
        if let Some((letters, spaced)) = cand {
            scan.candidates.push((id, letters, spaced));
        }
    }
    scan
}

/// The validated stable words.
#[derive(Debug, Clone)]
pub(crate) struct WordPool {
    /// Each word with its leading space, zero-padded to `WORD_BYTES` (fixed-size copies).
    words: Vec<[u8; WORD_BYTES]>,
    /// Length of each word in bytes.
    lens: Vec<u8>,
    ids: Vec<u32>,
    /// The tokenizer adds a space of its own at the start of a text (Llama-2-style
    /// SentencePiece normalizers): the first word of a text goes without its space.
    strip_first: bool,
}

impl WordPool {
    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.ids.len()
    }

    /// Mean word length in bytes (for sizing buffers).
    pub(crate) fn mean_len(&self) -> usize {
        let total: usize = self.lens.iter().map(|&l| usize::from(l)).sum();
        total.div_ceil(self.len().max(1))
    }

    /// Appends `n` random words to `out` (and their ids to `ids`, if given). `at_start`: `out`
    /// holds no text yet, so the first word may lose its space (see `strip_first`).
    ///
    /// Word `k` is chosen as `(x · len) >> 32` for a random `u32` `x` (bias below `len / 2^32`).
    pub(crate) fn push_random<R: RngCore>(
        &self,
        out: &mut Vec<u8>,
        mut ids: Option<&mut Vec<u32>>,
        n: usize,
        rng: &mut R,
        at_start: bool,
    ) {
        let len = self.len() as u64;
        if len == 0 || n == 0 {
            return;
        }
        out.reserve(n * WORD_BYTES);
        let strip = at_start && self.strip_first;
        for j in 0..n {
            let k = ((u64::from(rng.next_u32()) * len) >> 32) as usize;
            let (Some(w), Some(&l)) = (self.words.get(k), self.lens.get(k)) else { continue };
            if j == 0 && strip {
                out.extend_from_slice(w.get(1..usize::from(l)).unwrap_or_default());
            } else {
                // A fixed-size copy, then cut back to the word's length.
                let end = out.len() + usize::from(l);
                out.extend_from_slice(w);
                out.truncate(end);
            }
            if let Some(ids) = ids.as_deref_mut() {
                ids.push(self.ids.get(k).copied().unwrap_or(0));
            }
        }
    }

    /// Builds and validates the pool; `Err` says why it cannot be used.
    pub(crate) fn build(tok: &dyn TextTokenizer, scan: &VocabScan) -> Result<WordPool, String> {
        let keep = Self::build_mode(tok, scan, false);
        match keep {
            Ok(pool) => Ok(pool),
            Err(keep_err) => Self::build_mode(tok, scan, true)
                .map_err(|strip_err| format!("{keep_err}; without leading space: {strip_err}")),
        }
    }

    fn build_mode(tok: &dyn TextTokenizer, scan: &VocabScan, strip_first: bool) -> Result<WordPool, String> {
        // Byte-level tokenizers decode ` word` with its space: then only those are candidates.
        // (SentencePiece decoders drop the space of a lone `▁word`: then all are.)
        let spaced = scan.candidates.iter().filter(|c| c.2).count() >= MIN_POOL;
        let mut words: Vec<(u32, String)> = scan
            .candidates
            .par_iter()
            .filter(|c| !spaced || strip_first || c.2)
            .filter_map(|(id, letters, _)| {
                let alone = if strip_first { letters.clone() } else { format!(" {letters}") };
                match tok.encode(&alone, false) {
                    Ok(ids) if ids == [*id] => Some((*id, format!(" {letters}"))),
                    _ => None,
                }
            })
            .collect();
        words.sort_unstable();
        if words.len() < MIN_POOL {
            return Err(format!("only {} stable words (need {MIN_POOL})", words.len()));
        }
        let candidates = words.len();
        for pass in 0..PASSES {
            let mut order: Vec<usize> = (0..words.len()).collect();
            order.shuffle(&mut ChaCha8Rng::seed_from_u64(0x5eed_0000 + pass));
            let bad: Vec<usize> = order
                .par_chunks(CHUNK)
                .filter(|chunk| !chunk_round_trips(tok, &words, chunk, strip_first))
                .flat_map_iter(|chunk| chunk.iter().copied())
                .collect();
            if bad.is_empty() {
                continue;
            }
            let mut drop = vec![false; words.len()];
            for i in bad {
                if let Some(d) = drop.get_mut(i) {
                    *d = true;
                }
            }
            let mut it = drop.iter();
            words.retain(|_| !it.next().copied().unwrap_or(true));
        }
        let rejected = candidates - words.len();
        if rejected as f64 > MAX_REJECTED_SHARE * candidates as f64 || words.len() < MIN_POOL {
            return Err(format!("{rejected} of {candidates} stable words failed in context"));
        }
        // A last pass over the survivors must be clean.
        let mut order: Vec<usize> = (0..words.len()).collect();
        order.shuffle(&mut ChaCha8Rng::seed_from_u64(0x5eed_ffff));
        if !order.par_chunks(CHUNK).all(|chunk| chunk_round_trips(tok, &words, chunk, strip_first)) {
            return Err("stable words still fail in context after filtering".to_string());
        }
        let mut pool = WordPool {
            words: Vec::with_capacity(words.len()),
            lens: Vec::with_capacity(words.len()),
            ids: Vec::with_capacity(words.len()),
            strip_first,
        };
        for (id, w) in words {
            let mut fixed = [0u8; WORD_BYTES];
            let Some(dst) = fixed.get_mut(..w.len()) else { continue };
            dst.copy_from_slice(w.as_bytes());
            pool.words.push(fixed);
            pool.lens.push(w.len() as u8);
            pool.ids.push(id);
        }
        Ok(pool)
    }
}

/// True if the words at `idx`, concatenated, encode to exactly their ids.
fn chunk_round_trips(
    tok: &dyn TextTokenizer,
    words: &[(u32, String)],
    idx: &[usize],
    strip_first: bool,
) -> bool {
    let mut text = String::new();
    let mut want = Vec::with_capacity(idx.len());
    for (j, &i) in idx.iter().enumerate() {
        let Some((id, w)) = words.get(i) else { return false };
        if j == 0 && strip_first {
            text.push_str(w.strip_prefix(' ').unwrap_or(w));
        } else {
            text.push_str(w);
        }
        want.push(*id);
    }
    matches!(tok.encode(&text, false), Ok(got) if got == want)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenizer::{HfTokenizer, TiktokenTokenizer};
    use servebench_testkit::fixtures::smollm2_tokenizer;

    #[test]
    fn smollm2_pool_is_large_and_round_trips() {
        let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        let scan = scan_vocab(&tok);
        assert_eq!(scan.allowed.len(), 49152 - 17);
        let pool = WordPool::build(&tok, &scan).unwrap();
        assert!(pool.len() > 10_000, "pool {}", pool.len());
        assert!(!pool.strip_first);
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut text = Vec::new();
        let mut ids = Vec::new();
        pool.push_random(&mut text, Some(&mut ids), 500, &mut rng, true);
        let text = String::from_utf8(text).unwrap();
        assert_eq!(tok.encode(&text, false).unwrap(), ids);
        assert!(text.starts_with(' '));
    }

    #[test]
    fn cl100k_pool() {
        let tok = TiktokenTokenizer::from_name("cl100k_base").unwrap();
        let pool = WordPool::build(&tok, &scan_vocab(&tok)).unwrap();
        assert!(pool.len() > 10_000, "pool {}", pool.len());
    }
}

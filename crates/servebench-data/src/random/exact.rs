//! Random texts of exact token counts that extend one another: a shared prefix followed by
//! more random tokens, such that the whole text starts with the prefix's text, encodes to
//! exactly the asked number of tokens, and (whenever the tokenizer allows it) starts with the
//! prefix's own tokens. This is what datasets that glue random blocks together
//! (`prefix_repetition`, multi-turn prefix sharing) need: two texts of `a` and `b` tokens,
//! joined as strings, are not `a + b` tokens with every tokenizer (a SentencePiece-style
//! `Metaspace` tokenizer drops the space before the first word of a text, so the prefix's last
//! word and the suffix's first word fuse into one).
//!
//! The machinery is the `random` dataset's: stable words appended after the prefix (verified by
//! encoding the result), else the general decode → re-encode → adjust path, which decodes the
//! prefix's ids and the new ids in one call, as vLLM decodes `prefix_tokens + suffix_tokens`.

use rand::Rng;
use servebench_core::{BenchError, Result, TextTokenizer};

use super::general::converge;
use super::pool::{scan_vocab, WordPool};

/// A text and its token ids (encoded without special tokens).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExactText {
    pub text: String,
    pub ids: Vec<u32>,
}

impl ExactText {
    /// A text known to encode to `ids` (the caller encoded it).
    pub fn new(text: impl Into<String>, ids: Vec<u32>) -> Self {
        ExactText { text: text.into(), ids }
    }

    /// Number of tokens (without special tokens).
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True for the empty text.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty() && self.text.is_empty()
    }
}

/// Builds exact-length random texts with one tokenizer (the vocabulary is scanned once).
pub struct ExactTexts<'t> {
    tok: &'t dyn TextTokenizer,
    allowed: Vec<u32>,
    pool: Option<WordPool>,
}

impl std::fmt::Debug for ExactTexts<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExactTexts")
            .field("tokenizer", &self.tok.name())
            .field("allowed", &self.allowed.len())
            .field("pool", &self.pool.as_ref().map(WordPool::len))
            .finish()
    }
}

impl<'t> ExactTexts<'t> {
    /// Scans the vocabulary and builds the stable-word pool when the tokenizer allows one.
    pub fn new(tok: &'t dyn TextTokenizer) -> Result<Self> {
        let scan = scan_vocab(tok);
        if scan.allowed.is_empty() {
            return Err(BenchError::dataset(format!(
                "tokenizer '{}' has no usable (non-special) token",
                tok.name()
            )));
        }
        let pool = WordPool::build(tok, &scan).ok();
        Ok(ExactTexts { tok, allowed: scan.allowed, pool })
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &'t dyn TextTokenizer {
        self.tok
    }

    /// `prefix` followed by `n` more random tokens: the text starts with `prefix.text` and
    /// encodes (without special tokens) to exactly `prefix.len() + n` tokens, the first of which
    /// are `prefix.ids` whenever the tokenizer allows it (tokenizers whose every merge can cross
    /// a word boundary may re-cut the prefix; the length is exact regardless).
    pub fn extend<R: Rng>(&self, prefix: &ExactText, n: usize, rng: &mut R) -> Result<ExactText> {
        if n == 0 {
            return Ok(prefix.clone());
        }
        let target = prefix.len() + n;
        if let Some(pool) = &self.pool {
            let mut buf = prefix.text.as_bytes().to_vec();
            pool.push_random(&mut buf, None, n, rng, prefix.text.is_empty());
            let text = String::from_utf8_lossy(&buf).into_owned();
            let ids = self.tok.encode(&text, false)?;
            if ids.len() == target && ids.starts_with(&prefix.ids) {
                return Ok(ExactText { text, ids });
            }
        }
        let text = converge(self.tok, &self.allowed, &prefix.text, &prefix.ids, target, rng)?;
        let ids = self.tok.encode(&text, false)?;
        Ok(ExactText { text, ids })
    }

    /// `prefix` followed by `suffix` (a text of `suffix_len` tokens built elsewhere) when the
    /// joined text encodes to exactly `prefix.len() + suffix_len` tokens starting with the
    /// prefix's; otherwise `prefix` extended by `suffix_len` fresh random tokens
    /// ([`ExactTexts::extend`]).
    pub fn join<R: Rng>(
        &self,
        prefix: &ExactText,
        suffix: &str,
        suffix_len: usize,
        rng: &mut R,
    ) -> Result<ExactText> {
        if let Some(joined) = try_join(self.tok, prefix, suffix, suffix_len)? {
            return Ok(joined);
        }
        self.extend(prefix, suffix_len, rng)
    }
}

/// `prefix.text + suffix` when it encodes to exactly `prefix.len() + suffix_len` tokens that
/// start with `prefix.ids`; `None` when it does not (the two fused, or re-cut at the seam).
pub fn try_join(
    tok: &dyn TextTokenizer,
    prefix: &ExactText,
    suffix: &str,
    suffix_len: usize,
) -> Result<Option<ExactText>> {
    let text = format!("{}{suffix}", prefix.text);
    let ids = tok.encode(&text, false)?;
    Ok((ids.len() == prefix.len() + suffix_len && ids.starts_with(&prefix.ids))
        .then_some(ExactText { text, ids }))
}

//! [`TiktokenTokenizer`]: OpenAI's BPE encodings built into the binary (no download), packed
//! (`super::tiktoken_tables`).

use servebench_core::{BenchError, Result, TextTokenizer};
use tiktoken_rs::CoreBPE;

/// Names of the built-in encodings, as accepted by [`TiktokenTokenizer::builtin`].
/// `gpt2` is an alias of `r50k_base`.
pub const BUILTIN_ENCODINGS: [&str; 7] =
    ["cl100k_base", "o200k_base", "o200k_harmony", "p50k_base", "p50k_edit", "r50k_base", "gpt2"];

/// Highest id probed when sizing an encoding (o200k has 200,019 ids).
const MAX_PROBED_ID: u32 = 1 << 20;
/// Probing stops after this many consecutive unassigned ids.
const PROBE_GAP: u32 = 1 << 16;

/// A built-in tiktoken encoding. Adds no special tokens when encoding (tiktoken has no BOS);
/// special-token text in the input is encoded as ordinary text.
///
/// The id space of `cl100k_base` and `o200k_base` is sparse (ids between the last ordinary
/// token and the special tokens are unassigned): decoding skips unknown ids instead of failing.
pub struct TiktokenTokenizer {
    name: String,
    /// Owned (not tiktoken-rs's process-wide singleton) so that dropping the tokenizer frees
    /// its tables before the measured phase.
    bpe: CoreBPE,
    vocab_size: u32,
    /// Sorted ids of the special tokens.
    special_ids: Vec<u32>,
}

impl std::fmt::Debug for TiktokenTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TiktokenTokenizer")
            .field("name", &self.name)
            .field("vocab_size", &self.vocab_size)
            .field("special_ids", &self.special_ids)
            .finish()
    }
}

impl TiktokenTokenizer {
    /// The built-in encoding called `name`, or `None` if `name` is not one of
    /// [`BUILTIN_ENCODINGS`].
    pub fn builtin(name: &str) -> Option<Self> {
        // From servebench's packed tables (tiktoken_tables), not tiktoken-rs's text tables.
        let bpe = super::tiktoken_tables::core_bpe(name)?.ok()?;
        let mut special_ids: Vec<u32> = bpe
            .special_tokens()
            .into_iter()
            .filter_map(|s| match bpe.encode_with_special_tokens(s).as_slice() {
                [id] => Some(*id),
                _ => None,
            })
            .collect();
        special_ids.sort_unstable();
        special_ids.dedup();
        // The encoder maps are private: size the id space by probing.
        let mut max_id = special_ids.last().copied().unwrap_or(0);
        let mut id = max_id;
        while id < MAX_PROBED_ID && id - max_id <= PROBE_GAP {
            id += 1;
            if bpe.decode_bytes(&[id]).is_ok() {
                max_id = id;
            }
        }
        Some(Self { name: name.to_string(), bpe, vocab_size: max_id + 1, special_ids })
    }

    /// Like [`TiktokenTokenizer::builtin`], with a [`BenchError::TokenizerLoad`] for unknown names.
    pub fn from_name(name: &str) -> Result<Self> {
        Self::builtin(name).ok_or_else(|| {
            BenchError::tokenizer_load(
                name,
                format!("not a built-in encoding (known: {})", BUILTIN_ENCODINGS.join(", ")),
            )
        })
    }

    /// The special token ids (sorted).
    pub fn special_token_ids(&self) -> &[u32] {
        &self.special_ids
    }

    fn is_special(&self, id: u32) -> bool {
        self.special_ids.binary_search(&id).is_ok()
    }

    /// Ids usable in random token-id prompts: assigned (decodable) ids that are not special.
    /// Unassigned ids of sparse encodings are left out. Sorted ascending.
    pub fn allowed_token_ids(&self) -> Vec<u32> {
        (0..self.vocab_size)
            .filter(|&id| !self.is_special(id) && self.bpe.decode_bytes(&[id]).is_ok())
            .collect()
    }

    fn decode_bytes(&self, ids: &[u32], skip_special: bool) -> Vec<u8> {
        if !skip_special {
            if let Ok(bytes) = self.bpe.decode_bytes(ids) {
                return bytes;
            }
        }
        // Slow path: skip unknown (and, if asked, special) ids one by one.
        let mut out = Vec::with_capacity(ids.len() * 4);
        for &id in ids {
            if skip_special && self.is_special(id) {
                continue;
            }
            if let Ok(b) = self.bpe.decode_bytes(&[id]) {
                out.extend_from_slice(&b);
            }
        }
        out
    }
}

impl TextTokenizer for TiktokenTokenizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn encode(&self, text: &str, _add_special: bool) -> Result<Vec<u32>> {
        Ok(self.bpe.encode_ordinary(text))
    }

    /// Unknown ids are skipped; invalid UTF-8 (a multi-byte character split across ids) is
    /// replaced by U+FFFD.
    fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        let bytes = self.decode_bytes(ids, skip_special);
        Ok(match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        })
    }

    fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    fn num_special_tokens(&self) -> u32 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_load_with_expected_sizes() {
        for (name, size) in [
            ("r50k_base", 50257),
            ("gpt2", 50257),
            ("p50k_base", 50281),
            ("cl100k_base", 100277),
            ("o200k_base", 200019),
        ] {
            let tok = TiktokenTokenizer::from_name(name).unwrap();
            assert_eq!(tok.vocab_size(), size, "{name}");
            assert_eq!(tok.num_special_tokens(), 0);
            assert_eq!(tok.name(), name);
        }
        assert!(TiktokenTokenizer::builtin("cl100k").is_none());
        let err = TiktokenTokenizer::from_name("nope").unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::TokenizerLoad);
    }

    #[test]
    fn sparse_ids_decode_without_panic() {
        let tok = TiktokenTokenizer::from_name("o200k_base").unwrap();
        // 199998 is <|endoftext|>; ids between the last ordinary token and the specials, and
        // ids past the end, are unassigned.
        let ids: Vec<u32> = (199_990..200_030).chain([u32::MAX]).collect();
        let text = tok.decode(&ids, false).unwrap();
        assert!(text.contains("<|endoftext|>"));
        let skipped = tok.decode(&ids, true).unwrap();
        assert!(!skipped.contains("<|endoftext|>"));
        let cl = TiktokenTokenizer::from_name("cl100k_base").unwrap();
        assert!(cl.decode(&(100_250..100_300).collect::<Vec<_>>(), true).is_ok());
    }

    #[test]
    fn allowed_ids_are_decodable_and_not_special() {
        let tok = TiktokenTokenizer::from_name("o200k_base").unwrap();
        let allowed = tok.allowed_token_ids();
        assert!(allowed.len() > 199_000 && allowed.len() < 200_019);
        assert!(allowed.iter().all(|&id| !tok.special_token_ids().contains(&id)));
        let text = tok.decode(&allowed[allowed.len() - 50..], true).unwrap();
        assert!(!text.is_empty());
    }

    #[test]
    fn round_trip() {
        let tok = TiktokenTokenizer::from_name("cl100k_base").unwrap();
        let ids = tok.encode("hello world <|endoftext|>", true).unwrap();
        assert_eq!(tok.decode(&ids, false).unwrap(), "hello world <|endoftext|>");
        assert!(ids.len() > 3, "special-token text is encoded as ordinary text");
    }
}

//! Tokenizers for tests that need one but not a real vocabulary.

use std::sync::Arc;

use servebench_core::{Result, TextTokenizer};

/// One token per byte (ids 0–255): token counts are byte counts, decoding is lossless for
/// ASCII. For a simulator or a workload where the vocabulary does not matter.
#[derive(Debug, Clone, Copy, Default)]
pub struct ByteTokenizer;

impl TextTokenizer for ByteTokenizer {
    fn name(&self) -> &str {
        "bytes"
    }
    fn encode(&self, text: &str, _add_special: bool) -> Result<Vec<u32>> {
        Ok(text.bytes().map(u32::from).collect())
    }
    fn decode(&self, ids: &[u32], _skip: bool) -> Result<String> {
        let bytes: Vec<u8> = ids.iter().map(|&i| u8::try_from(i).unwrap_or(b'?')).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
    fn vocab_size(&self) -> u32 {
        256
    }
}

/// A shared [`ByteTokenizer`].
pub fn byte_tokenizer() -> Arc<dyn TextTokenizer> {
    Arc::new(ByteTokenizer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_token_per_byte_round_trips() {
        let t = byte_tokenizer();
        let ids = t.encode("héllo", false).unwrap();
        assert_eq!(ids.len(), "héllo".len());
        assert_eq!(t.decode(&ids, false).unwrap(), "héllo");
    }
}

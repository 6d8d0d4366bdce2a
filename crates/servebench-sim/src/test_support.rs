//! Test-only tokenizers for unit tests.

use servebench_core::{Result, TextTokenizer};

/// Every byte is a token; decodes lossily. Enough for limit checks.
#[derive(Debug)]
pub(crate) struct NullTok;

impl TextTokenizer for NullTok {
    fn name(&self) -> &str {
        "bytes"
    }
    fn encode(&self, text: &str, _add_special: bool) -> Result<Vec<u32>> {
        Ok(text.bytes().map(u32::from).collect())
    }
    fn decode(&self, ids: &[u32], _skip: bool) -> Result<String> {
        let bytes: Vec<u8> = ids.iter().map(|&i| i as u8).collect();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }
    fn vocab_size(&self) -> u32 {
        256
    }
}

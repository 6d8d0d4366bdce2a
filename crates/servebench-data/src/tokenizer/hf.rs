//! [`HfTokenizer`]: a Hugging Face `tokenizer.json` loaded with the `tokenizers` crate.

use std::path::Path;

use super::chat_template::HfChatTemplate;
use servebench_core::{BenchError, ChatTemplate, Result, TextTokenizer};
use tokenizers::Model as _;

/// A tokenizer loaded from a Hugging Face `tokenizer.json` (BPE, WordPiece, Unigram, ...).
///
/// Truncation and padding configured in the file are switched off: a benchmark counts every
/// token of a prompt. Loaded from a file, it carries the chat template of its directory
/// ([`HfChatTemplate::from_dir`]), as a Hugging Face tokenizer does.
pub struct HfTokenizer {
    name: String,
    inner: tokenizers::Tokenizer,
    vocab_size: u32,
    num_special: u32,
    /// Sorted ids of added tokens flagged `special`.
    special_ids: Vec<u32>,
    chat_template: Option<HfChatTemplate>,
}

impl std::fmt::Debug for HfTokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfTokenizer")
            .field("name", &self.name)
            .field("vocab_size", &self.vocab_size)
            .field("num_special", &self.num_special)
            .field("special_ids", &self.special_ids.len())
            .field("chat_template", &self.chat_template.is_some())
            .finish()
    }
}

/// Why bytes the `tokenizers` crate refused are not a tokenizer.json, when they are valid JSON
/// (its own error, "expected `,` or `}` at line 1 column 9", reads as a syntax error in a file
/// that has none). `None` when the bytes are not JSON: the crate's error says where.
fn not_a_tokenizer(bytes: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let Some(object) = value.as_object() else {
        return Some("valid JSON, but not a tokenizer.json (not a JSON object)".to_string());
    };
    let config_keys = ["tokenizer_class", "chat_template", "model_max_length", "added_tokens_decoder"];
    Some(if object.contains_key("model") {
        "valid JSON, but not a tokenizer.json the tokenizers library can load (its fields do not \
         match the format)"
            .to_string()
    } else if config_keys.iter().any(|k| object.contains_key(*k)) {
        "valid JSON, but a tokenizer_config.json, not a tokenizer.json (pass the tokenizer.json \
         beside it, or their directory)"
            .to_string()
    } else {
        "valid JSON, but not a tokenizer.json (it has no \"model\")".to_string()
    })
}

impl HfTokenizer {
    /// Loads a `tokenizer.json` file; `name` is what [`TextTokenizer::name`] reports.
    pub fn from_file(path: &Path, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let bytes = std::fs::read(path).map_err(|e| BenchError::TokenizerLoad {
            name: name.clone(),
            detail: format!("cannot read {}: {e}", path.display()),
            source: Some(Box::new(e)),
        })?;
        let mut tok = Self::from_owned_bytes(bytes, name).map_err(|e| match e {
            BenchError::TokenizerLoad { name, detail, source } => {
                BenchError::TokenizerLoad { name, detail: format!("{}: {detail}", path.display()), source }
            }
            other => other,
        })?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        tok.chat_template = HfChatTemplate::from_dir(dir, &tok.name)?;
        Ok(tok)
    }

    /// Parses the contents of a `tokenizer.json`.
    pub fn from_bytes(bytes: &[u8], name: impl Into<String>) -> Result<Self> {
        Self::from_owned_bytes(bytes.to_vec(), name)
    }

    /// [`HfTokenizer::from_bytes`], freeing the bytes as soon as they are parsed.
    fn from_owned_bytes(bytes: Vec<u8>, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        // A tokenizers error is kept as the source.
        let load_err = |what: &str, e: tokenizers::Error| BenchError::TokenizerLoad {
            name: name.clone(),
            detail: format!("{what}: {e}"),
            source: Some(e),
        };
        // A BPE file streams into the model (a fraction of the crate's peak memory); anything
        // else, or anything that path does not read exactly as the crate, goes the crate's way.
        use super::hf_bpe_load::{load, Outcome};
        let (mut inner, model_max_id) = match load(bytes) {
            Outcome::Loaded(l) => (l.tokenizer, l.model_max_id),
            Outcome::Invalid(e) => return Err(load_err("not a valid tokenizer.json", e)),
            Outcome::NotMine(bytes) => {
                let t =
                    tokenizers::Tokenizer::from_bytes(&bytes).map_err(|e| match not_a_tokenizer(&bytes) {
                        Some(detail) => {
                            BenchError::TokenizerLoad { name: name.clone(), detail, source: Some(e) }
                        }
                        None => load_err("not a valid tokenizer.json", e),
                    })?;
                let max = t.get_model().get_vocab().into_values().max();
                (t, max)
            }
        };
        inner.with_truncation(None).map_err(|e| load_err("cannot disable truncation", e))?;
        inner.with_padding(None);
        let added = inner.get_added_tokens_decoder();
        // The largest id of the whole vocabulary (model and added tokens), plus one.
        let vocab_size = added.keys().copied().chain(model_max_id).max().map_or(0, |m| m.saturating_add(1));
        let mut special_ids: Vec<u32> =
            added.into_iter().filter(|(_, t)| t.special).map(|(id, _)| id).collect();
        special_ids.sort_unstable();
        special_ids.dedup();
        let num_special =
            inner.encode_fast("", true).map_err(|e| load_err("cannot encode the empty string", e))?.len()
                as u32;
        Ok(Self { name, inner, vocab_size, num_special, special_ids, chat_template: None })
    }

    /// The wrapped `tokenizers` tokenizer.
    pub fn inner(&self) -> &tokenizers::Tokenizer {
        &self.inner
    }

    /// Ids of added tokens flagged special (sorted).
    pub fn special_token_ids(&self) -> &[u32] {
        &self.special_ids
    }

    /// Token ids usable in random token-id prompts: every id of the vocabulary (added tokens
    /// included) except added tokens flagged special. Sorted ascending.
    pub fn allowed_token_ids(&self) -> Vec<u32> {
        let mut ids: Vec<u32> = self
            .inner
            .get_vocab(true)
            .into_values()
            .filter(|id| self.special_ids.binary_search(id).is_err())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }
}

impl TextTokenizer for HfTokenizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        let enc = self.inner.encode_fast(text, add_special).map_err(|e| BenchError::Dataset {
            detail: format!("tokenizer '{}' failed to encode text: {e}", self.name),
            source: Some(e),
        })?;
        Ok(enc.get_ids().to_vec())
    }

    /// Unknown ids are skipped (never an error, never a panic).
    fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String> {
        self.inner.decode(ids, skip_special).map_err(|e| BenchError::Dataset {
            detail: format!("tokenizer '{}' failed to decode ids: {e}", self.name),
            source: Some(e),
        })
    }

    fn vocab_size(&self) -> u32 {
        self.vocab_size
    }

    fn num_special_tokens(&self) -> u32 {
        self.num_special
    }

    fn chat_template(&self) -> Option<&dyn ChatTemplate> {
        self.chat_template.as_ref().map(|t| t as &dyn ChatTemplate)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_testkit::fixtures::smollm2_tokenizer;

    #[test]
    fn smollm2_loads_and_round_trips() {
        let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        assert_eq!(tok.name(), "smollm2");
        assert_eq!(tok.vocab_size(), 49152);
        assert_eq!(tok.num_special_tokens(), 0, "SmolLM2 adds no BOS");
        let ids = tok.encode("Hello world, this is a test.", false).unwrap();
        assert!(!ids.is_empty());
        assert_eq!(tok.decode(&ids, false).unwrap(), "Hello world, this is a test.");
        assert_eq!(tok.count("Hello world").unwrap(), 2);
    }

    #[test]
    fn allowed_ids_exclude_specials() {
        let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        assert_eq!(tok.special_token_ids(), (0..17).collect::<Vec<u32>>().as_slice());
        let allowed = tok.allowed_token_ids();
        assert_eq!(allowed.len(), 49152 - 17);
        assert!(allowed.iter().all(|&id| id >= 17));
    }

    #[test]
    fn a_tokenizer_file_carries_the_chat_template_of_its_directory() {
        let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        let msgs = serde_json::json!([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]);
        let opts = servebench_core::ChatRender { add_generation_prompt: true, ..Default::default() };
        let text = tok.chat_template().unwrap().render(&msgs, &opts).unwrap();
        assert_eq!(
            text,
            "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
        );
        assert!(HfTokenizer::from_bytes(&std::fs::read(smollm2_tokenizer()).unwrap(), "b")
            .unwrap()
            .chat_template()
            .is_none());
    }

    #[test]
    fn unknown_ids_do_not_panic() {
        let tok = HfTokenizer::from_file(&smollm2_tokenizer(), "smollm2").unwrap();
        assert!(tok.decode(&[u32::MAX, 1_000_000, 300], false).is_ok());
    }

    #[test]
    fn invalid_json_is_tokenizer_load() {
        let err = HfTokenizer::from_bytes(b"{not json", "bad").unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::TokenizerLoad);
    }

    #[test]
    fn tokenizer_load_errors_keep_the_io_or_tokenizers_error_as_source() {
        use std::error::Error as _;
        let missing = std::path::Path::new("/nonexistent/servebench/tokenizer.json");
        let err = HfTokenizer::from_file(missing, "gone").unwrap_err();
        let io = err.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.map(std::io::Error::kind), Some(std::io::ErrorKind::NotFound), "{err}");
        assert!(err.to_string().contains("cannot read /nonexistent/servebench/tokenizer.json"), "{err}");
        let err = HfTokenizer::from_bytes(b"{not json", "bad").unwrap_err();
        let source = err.source().map(ToString::to_string).unwrap_or_default();
        assert!(!source.is_empty() && err.to_string().contains(&source), "{err} / {source}");
    }
}

//! Tokenizers and the chain that resolves `--tokenizer` (or `--model`) to one.
//!
//! [`load_tokenizer`] tries, in order:
//! 1. a built-in tiktoken encoding ([`tiktoken::BUILTIN_ENCODINGS`]; `gpt2` = `r50k_base`);
//! 2. a local path: a `tokenizer.json` file, or a directory containing `tokenizer.json`
//!    (a directory without one is an error; the Hub is not consulted);
//! 3. a Hugging Face model id (`org/name`): the local hub cache first, then a download of
//!    `tokenizer.json` (unless `HF_HUB_OFFLINE` is set). When neither works the error is
//!    [`servebench_core::BenchError::TokenizerOffline`], which tells the user to pass a path.
//!
//! A Hugging Face tokenizer carries the chat template found beside its `tokenizer.json`
//! ([`chat_template`]); a model id's template files are fetched with it.
//!
//! The server `/tokenize` tokenizer is not part of this chain (it lives with the HTTP client).

pub mod chat_template;
pub mod hf;
mod hf_bpe_load;
pub mod hub;
pub mod py_json;
pub mod tiktoken;
mod tiktoken_tables;

use std::path::Path;
use std::sync::Arc;

use servebench_core::{BenchError, Result, TextTokenizer};

pub use hf::HfTokenizer;
pub use hub::HubEnv;
pub use tiktoken::TiktokenTokenizer;

/// Resolves `spec` to a tokenizer, reading the Hub settings from the environment
/// ([`HubEnv::from_env`]). May download from the Hub (blocking); see the module docs.
pub fn load_tokenizer(spec: &str) -> Result<Arc<dyn TextTokenizer>> {
    load_tokenizer_with(spec, &HubEnv::from_env())
}

/// [`load_tokenizer`] with explicit Hub settings.
pub fn load_tokenizer_with(spec: &str, env: &HubEnv) -> Result<Arc<dyn TextTokenizer>> {
    let spec = spec.trim();
    if let Some(t) = TiktokenTokenizer::builtin(spec) {
        return Ok(Arc::new(t));
    }
    let path = Path::new(spec);
    if path.is_file() {
        return Ok(Arc::new(HfTokenizer::from_file(path, spec)?));
    }
    if path.is_dir() {
        let file = path.join("tokenizer.json");
        if file.is_file() {
            return Ok(Arc::new(HfTokenizer::from_file(&file, spec)?));
        }
        return Err(BenchError::tokenizer_load(
            spec,
            format!(
                "the directory has no tokenizer.json (looked for {}); only tokenizer.json \
                 (Hugging Face fast tokenizer) files are supported",
                file.display()
            ),
        ));
    }
    if path.exists() {
        // `/dev/null`, a FIFO, a socket: there, but neither a file nor a directory (it used to
        // say "no such file or directory").
        return Err(BenchError::tokenizer_load(
            spec,
            "exists but is neither a regular file nor a directory (a device, a pipe or a socket)",
        ));
    }
    if hub::looks_like_model_id(spec) {
        let file = hub::resolve_model_tokenizer(spec, env)?;
        return Ok(Arc::new(HfTokenizer::from_file(&file, spec)?));
    }
    Err(BenchError::tokenizer_load(
        spec,
        format!(
            "no such file or directory, and not a built-in encoding ({}) or a Hugging Face \
             model id (org/name)",
            tiktoken::BUILTIN_ENCODINGS.join(", ")
        ),
    ))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use servebench_core::ErrorCode;
    use servebench_testkit::fixtures::smollm2_tokenizer;

    fn offline_env(cache: &Path) -> HubEnv {
        HubEnv { cache_dir: Some(cache.to_path_buf()), offline: true, ..HubEnv::default() }
    }

    #[test]
    fn builtin_names() {
        let env = HubEnv { offline: true, ..HubEnv::default() };
        for name in ["cl100k_base", "o200k_base", "p50k_base", "r50k_base", "gpt2"] {
            let t = load_tokenizer_with(name, &env).unwrap();
            assert_eq!(t.name(), name);
        }
    }

    #[test]
    fn file_and_directory() {
        let env = HubEnv { offline: true, ..HubEnv::default() };
        let file = smollm2_tokenizer();
        let t = load_tokenizer_with(file.to_str().unwrap(), &env).unwrap();
        assert_eq!(t.vocab_size(), 49152);
        let dir = file.parent().unwrap();
        let t = load_tokenizer_with(dir.to_str().unwrap(), &env).unwrap();
        assert_eq!(t.encode("Hello world", false).unwrap().len(), 2);
    }

    #[test]
    fn directory_without_tokenizer_json() {
        let dir = tempfile::tempdir().unwrap();
        let env = offline_env(dir.path());
        let err = load_tokenizer_with(dir.path().to_str().unwrap(), &env).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenizerLoad);
        assert!(err.to_string().contains("tokenizer.json"), "{err}");
    }

    #[test]
    fn missing_path() {
        let env = HubEnv { offline: true, ..HubEnv::default() };
        let err = load_tokenizer_with("/nonexistent/dir/tokenizer.json", &env).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenizerLoad);
        let err = load_tokenizer_with("./no/such/dir/", &env).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenizerLoad);
    }

    #[test]
    fn model_id_from_cache_then_offline() {
        let cache = tempfile::tempdir().unwrap();
        let repo = cache.path().join("models--HuggingFaceTB--SmolLM2-135M");
        let snap = repo.join("snapshots").join("abc123");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::create_dir_all(repo.join("refs")).unwrap();
        std::fs::write(repo.join("refs").join("main"), "abc123\n").unwrap();
        std::fs::copy(smollm2_tokenizer(), snap.join("tokenizer.json")).unwrap();
        let env = offline_env(cache.path());
        let t = load_tokenizer_with("HuggingFaceTB/SmolLM2-135M", &env).unwrap();
        assert_eq!(t.name(), "HuggingFaceTB/SmolLM2-135M");
        assert_eq!(t.vocab_size(), 49152);

        let err = load_tokenizer_with("meta-llama/Not-Cached", &env).unwrap_err();
        assert_eq!(err.code(), ErrorCode::TokenizerOffline);
        assert!(err.to_string().contains("--tokenizer"), "{err}");
    }

    #[test]
    fn cache_without_refs_uses_any_snapshot() {
        let cache = tempfile::tempdir().unwrap();
        let snap = cache.path().join("models--org--name").join("snapshots").join("rev1");
        std::fs::create_dir_all(&snap).unwrap();
        std::fs::copy(smollm2_tokenizer(), snap.join("tokenizer.json")).unwrap();
        assert_eq!(hub::find_in_cache(cache.path(), "org/name"), Some(snap.join("tokenizer.json")));
        assert_eq!(hub::find_in_cache(cache.path(), "org/other"), None);
    }
}

//! Hugging Face Hub: the local cache layout and the (blocking) download of `tokenizer.json`.

use std::path::{Path, PathBuf};

use servebench_core::error::Cause;
use servebench_core::secret::Secret;
use servebench_core::{BenchError, Result};

/// Where and how to look for Hub files. Built from the environment by [`HubEnv::from_env`];
/// tests build it by hand so that they never depend on (or change) the process environment.
/// The token is a [`Secret`]: `Debug` shows `<redacted>`, never its value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HubEnv {
    /// The hub cache directory (the one holding `models--org--name`).
    pub cache_dir: Option<PathBuf>,
    /// `HF_HUB_OFFLINE` (or `TRANSFORMERS_OFFLINE`) is set: never download.
    pub offline: bool,
    /// `HF_TOKEN` / `HUGGING_FACE_HUB_TOKEN`, for gated models.
    pub token: Option<Secret>,
    /// `HF_ENDPOINT`, a mirror of huggingface.co.
    pub endpoint: Option<String>,
}

fn env_nonempty(key: &str) -> Option<String> {
    std::env::var(key).ok().filter(|v| !v.trim().is_empty())
}

fn truthy(value: Option<String>) -> bool {
    value.is_some_and(|v| !matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false" | "no" | "off"))
}

impl HubEnv {
    /// Reads the environment as `huggingface_hub` does: the cache is `$HF_HUB_CACHE`, else
    /// `$HF_HOME/hub`, else `$XDG_CACHE_HOME/huggingface/hub`, else `~/.cache/huggingface/hub`.
    pub fn from_env() -> Self {
        let cache_dir = env_nonempty("HF_HUB_CACHE")
            .map(PathBuf::from)
            .or_else(|| env_nonempty("HF_HOME").map(|h| Path::new(&h).join("hub")))
            .or_else(|| env_nonempty("XDG_CACHE_HOME").map(|x| Path::new(&x).join("huggingface").join("hub")))
            .or_else(|| {
                env_nonempty("HOME").map(|h| Path::new(&h).join(".cache").join("huggingface").join("hub"))
            });
        Self {
            cache_dir,
            offline: truthy(env_nonempty("HF_HUB_OFFLINE")) || truthy(env_nonempty("TRANSFORMERS_OFFLINE")),
            token: env_nonempty("HF_TOKEN")
                .or_else(|| env_nonempty("HUGGING_FACE_HUB_TOKEN"))
                .map(Secret::new),
            endpoint: env_nonempty("HF_ENDPOINT"),
        }
    }

    /// An hf-hub client for this environment (token, cache, mirror; no progress bar, two
    /// retries). The token leaves its [`Secret`] only here, to go on the wire.
    pub(crate) fn api(&self) -> std::result::Result<hf_hub::api::sync::Api, hf_hub::api::sync::ApiError> {
        let mut builder = hf_hub::api::sync::ApiBuilder::new()
            .with_progress(false)
            .with_retries(2)
            .with_token(self.token.as_ref().map(|t| t.expose().to_owned()));
        if let Some(cache) = &self.cache_dir {
            builder = builder.with_cache_dir(cache.clone());
        }
        if let Some(endpoint) = &self.endpoint {
            builder = builder.with_endpoint(endpoint.clone());
        }
        builder.build()
    }
}

/// True if `spec` has the shape of a Hub model id: `name` or `org/name`, made of ASCII
/// letters, digits, `-`, `_` and `.`, not starting with `.` or `-`.
pub fn looks_like_model_id(spec: &str) -> bool {
    let parts: Vec<&str> = spec.split('/').collect();
    if parts.is_empty() || parts.len() > 2 || spec.ends_with(".json") {
        return false;
    }
    parts.iter().all(|p| {
        !p.is_empty()
            && !p.starts_with(['.', '-'])
            && !p.contains("..")
            && p.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    })
}

/// The cached `tokenizer.json` of `model_id` under a hub cache directory, if any:
/// `models--org--name/snapshots/<rev>/tokenizer.json`, preferring the revision `refs/main`
/// points to, else the first snapshot (by name) that has one.
pub fn find_in_cache(cache_dir: &Path, model_id: &str) -> Option<PathBuf> {
    let repo = cache_dir.join(format!("models--{}", model_id.replace('/', "--")));
    let snapshots = repo.join("snapshots");
    if let Ok(rev) = std::fs::read_to_string(repo.join("refs").join("main")) {
        let p = snapshots.join(rev.trim()).join("tokenizer.json");
        if !rev.trim().is_empty() && p.is_file() {
            return Some(p);
        }
    }
    let mut revs: Vec<PathBuf> =
        std::fs::read_dir(&snapshots).ok()?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    revs.sort();
    revs.into_iter().map(|r| r.join("tokenizer.json")).find(|p| p.is_file())
}

/// Longest quote of a download error in SB202's one line (the whole error stays its source).
const DOWNLOAD_ERROR_BYTES: usize = 80;

/// SB202; `source` is the download error, if any. The fix is the code's own (said once).
fn offline_error(model_id: &str, detail: String, source: Option<Cause>) -> BenchError {
    BenchError::TokenizerOffline { name: model_id.to_string(), detail, source }
}

/// Finds `tokenizer.json` of `model_id` in the cache or downloads it (blocking network I/O:
/// call from a plain thread, not from an async task). Offline or failed downloads give
/// [`BenchError::TokenizerOffline`].
pub fn resolve_model_tokenizer(model_id: &str, env: &HubEnv) -> Result<PathBuf> {
    if let Some(cache) = &env.cache_dir {
        if let Some(p) = find_in_cache(cache, model_id) {
            return Ok(p);
        }
    }
    let where_ = env
        .cache_dir
        .as_ref()
        .map_or_else(|| "no hub cache directory".to_string(), |c| format!("not in {}", c.display()));
    if env.offline {
        return Err(offline_error(model_id, format!("{where_} and HF_HUB_OFFLINE is set"), None));
    }
    download(model_id, env).map_err(|e| {
        let said = servebench_core::text::one_line(&e.to_string(), DOWNLOAD_ERROR_BYTES);
        let detail = format!("{where_}; download failed: {said}");
        offline_error(model_id, detail, Some(Box::new(e)))
    })
}

fn download(model_id: &str, env: &HubEnv) -> std::result::Result<PathBuf, hf_hub::api::sync::ApiError> {
    let api = env.api()?;
    let repo = api.model(model_id.to_string());
    let path = repo.get("tokenizer.json")?;
    // The chat template lives beside it (either file may be absent: a model without one).
    for extra in ["tokenizer_config.json", "chat_template.jinja"] {
        let _ = repo.get(extra);
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_id_shapes() {
        for ok in ["meta-llama/Llama-3.1-8B", "HuggingFaceTB/SmolLM2-135M", "bert-base-uncased"] {
            assert!(looks_like_model_id(ok), "{ok}");
        }
        for bad in ["/abs/path", "./rel", "a/b/c", "x/tokenizer.json", "../up", "a//b", "", "~/x"] {
            assert!(!looks_like_model_id(bad), "{bad}");
        }
    }

    #[test]
    fn truthiness() {
        assert!(truthy(Some("1".into())));
        assert!(truthy(Some("TRUE".into())));
        assert!(!truthy(Some("0".into())));
        assert!(!truthy(Some("off".into())));
        assert!(!truthy(None));
    }

    #[test]
    fn offline_without_cache_entry_is_offline_error() {
        let dir = tempfile::tempdir().unwrap();
        let env = HubEnv { cache_dir: Some(dir.path().to_path_buf()), offline: true, ..HubEnv::default() };
        let err = resolve_model_tokenizer("org/missing", &env).unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::TokenizerOffline);
        // The fix, said once (its detail used to repeat it).
        assert_eq!(err.to_string().matches("--tokenizer /path/to/tokenizer.json").count(), 1, "{err}");
    }

    #[test]
    fn debug_of_hub_env_never_shows_the_hf_token() {
        let env = HubEnv { token: Some(Secret::new("hf_planted0123456789")), ..HubEnv::default() };
        let shown = format!("{env:?} {env:#?}");
        assert!(!shown.contains("hf_planted0123456789"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
        assert_eq!(env.token.as_ref().map(Secret::expose), Some("hf_planted0123456789"));
    }
}

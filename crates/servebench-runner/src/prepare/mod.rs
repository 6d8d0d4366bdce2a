//! Preparation before the measured run: which model, which tokenizer, the workload, and the
//! check of prompt lengths against the server's own `/tokenize`.

pub mod batch;
pub mod blocking;
pub mod failure_codes;
pub mod prompt_check;
pub mod ready;
pub mod server_tokenize;
pub mod server_workload;
pub mod tokenize_dialect;

use serde::Deserialize;
use servebench_client::transport::HttpClient;
use servebench_core::{BenchError, Prompt, RequestSpec, Requests, Result, TextTokenizer, Workload};
use sha2::{Digest, Sha256};
use std::path::PathBuf;
use std::sync::Arc;

pub use crate::prepare::server_tokenize::{Probe, ServerTokenize, TokenizeReport};

/// The model as the server names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelIds {
    /// Model id reported in results (`--model`, or the served id of /v1/models).
    pub model_id: String,
    /// Name sent in the `model` field of requests.
    pub served_name: String,
    /// Default tokenizer source (`root` of /v1/models when present).
    pub tokenizer_hint: String,
}

#[derive(Debug, Deserialize)]
struct ModelList {
    data: Vec<ModelEntry>,
}

#[derive(Debug, Deserialize)]
struct ModelEntry {
    id: String,
    #[serde(default)]
    root: Option<String>,
}

/// Resolves the model: `--model`/`--served-model-name` when given, else the first entry of
/// GET /v1/models (its `root`, the underlying model path, becomes the tokenizer hint).
pub async fn resolve_model(
    client: &HttpClient,
    headers: &http::HeaderMap,
    model: Option<&str>,
    served_name: Option<&str>,
) -> Result<ModelIds> {
    if let Some(m) = model {
        return Ok(ModelIds {
            model_id: m.to_string(),
            served_name: served_name.unwrap_or(m).to_string(),
            tokenizer_hint: m.to_string(),
        });
    }
    let list: ModelList = client.get_json("/v1/models", headers).await.map_err(|e| match e {
        BenchError::Protocol { detail, source, .. } => BenchError::ModelDetect { detail, source },
        BenchError::HttpStatus { context, status: 404, .. } if doubled_api_path(&context) => {
            base_url_path_error(&context)
        }
        other => other,
    })?;
    let first = list.data.into_iter().next().ok_or_else(|| BenchError::ModelDetect {
        detail: "the server lists no models".into(),
        source: None,
    })?;
    let tokenizer_hint = first.root.filter(|r| !r.is_empty()).unwrap_or_else(|| first.id.clone());
    Ok(ModelIds {
        served_name: served_name.map(str::to_string).unwrap_or_else(|| first.id.clone()),
        model_id: first.id,
        tokenizer_hint,
    })
}

/// Whether a control request's `METHOD url` has an API path before its own `/v1/…` (`GET
/// http://h:8000/v1/completions/v1/models`): a `--base-url` given with an endpoint path.
fn doubled_api_path(context: &str) -> bool {
    context.matches("/v1").count() > 1
}

/// SB101 for a `--base-url` that carries an API path every request path is appended to (a
/// 404 on `GET …/v1/completions/v1/models` said only "HTTP 404: Not Found").
fn base_url_path_error(context: &str) -> BenchError {
    BenchError::config(
        "--base-url",
        format!(
            "{context} answered 404: the base URL carries an API path, and every request path \
             (/v1/models, the endpoint) is appended to it"
        ),
        "give --base-url as scheme://host:port and the endpoint path as --endpoint (e.g. /v1/completions)",
    )
}

/// Drops requests whose prompt + expected output exceed `max_model_len` (the rest renumbered
/// in order); returns how many. Lazy requests are judged by their lengths, not built.
pub fn filter_max_model_len(workload: &mut Requests, max_model_len: Option<u32>) -> usize {
    let Some(limit) = max_model_len else { return 0 };
    workload.retain_within(limit)
}

/// How the prompt-length check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verification {
    /// Not asked for, or nothing to check (token-id prompts).
    Skipped,
    /// A previous run verified this (server, model, tokenizer) triple; the dialect it used.
    Cached { dialect: Option<String> },
    /// The sampled prompts had exactly the expected length on the server.
    Verified { checked: usize },
    /// Some prompts differed; every prompt was checked and `fixed` of them rewritten.
    Fixed { checked: usize, fixed: usize, unresolved: usize },
    /// The endpoint cannot be used for this (4xx, another dialect): a warning, not a failure.
    Unavailable { detail: String },
}

/// Where verified (server, model, tokenizer) triples are remembered.
pub fn verification_cache_path(base_url: &str, model: &str, tokenizer: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    let mut h = Sha256::new();
    for part in [base_url, model, tokenizer] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    Some(base.join("servebench").join("verified").join(hex::encode(h.finalize())))
}

/// Checks the first `sample` prompts' lengths with the server. On any mismatch every prompt is
/// checked and rewritten through the server's own tokenizer until its length is exact (lazy
/// requests are then all built and held: rewritten prompts are no longer a function of the
/// seed).
pub async fn verify_prompt_lengths(
    server: &ServerTokenize,
    workload: &mut Requests,
    sample: usize,
    cache: Option<PathBuf>,
) -> Result<Verification> {
    let is_text = |r: &RequestSpec| matches!(r.prompt, Prompt::Text(_));
    let has_text = match workload {
        Requests::Held(w) => w.requests.iter().any(is_text),
        // A lazy workload's prompts are all of one kind.
        Requests::Lazy(_) => workload.spec(0).is_some_and(|r| is_text(&r)),
    };
    if sample == 0 || !has_text {
        return Ok(Verification::Skipped);
    }
    if let Some(text) = cache.as_ref().and_then(|p| std::fs::read_to_string(p).ok()) {
        // "verified <dialect>" (older files: "verified").
        let dialect = text.split_whitespace().nth(1).map(str::to_owned);
        return Ok(Verification::Cached { dialect });
    }
    let mut mismatch = false;
    let n = sample.min(workload.len());
    for spec in workload.specs().take(n) {
        let Prompt::Text(text) = &spec.prompt else { continue };
        match server.tokenize(text).await? {
            Probe::Unavailable(detail) => return Ok(Verification::Unavailable { detail }),
            Probe::Ok(ids) => mismatch |= ids.len() != spec.prompt_tokens as usize,
        }
    }
    if !mismatch {
        if let Some(p) = cache {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            let dialect = server.report().map_or("", |r| r.dialect.name());
            let _ = std::fs::write(&p, format!("verified {dialect}\n"));
        }
        return Ok(Verification::Verified { checked: n });
    }
    let mut held = std::mem::take(workload).into_workload();
    let fixed = fix_all_prompts(server, &mut held).await;
    *workload = held.into();
    fixed
}

/// A rewritten prompt: its text, its length on the server, and whether that is the target.
struct FixedPrompt {
    text: Arc<str>,
    len: u32,
    exact: bool,
}

/// Checks every text prompt on the server and rewrites those whose length differs.
pub async fn fix_all_prompts(server: &ServerTokenize, workload: &mut Workload) -> Result<Verification> {
    use futures::stream::{self, StreamExt};
    // The server adds its special tokens (BOS) on every tokenize: learn how many once, so that
    // each rewritten text, re-tokenized, lands on its target.
    let specials = match server.tokenize("").await? {
        Probe::Ok(v) => v.len(),
        Probe::Unavailable(_) => 0,
    };
    let specs: Vec<RequestSpec> = workload.requests.clone();
    let results: Vec<Result<Option<FixedPrompt>>> = stream::iter(specs)
        .map(|spec| async move { fix_one(server, &spec, specials).await })
        .buffered(64)
        .collect()
        .await;
    let (mut fixed, mut unresolved) = (0, 0);
    for (spec, res) in workload.requests.iter_mut().zip(results) {
        match res? {
            None => {}
            // A rewrite that does not land on the target is not applied: the prompt is kept as
            // it was (docs/backends.md), not sent in a form nobody asked for.
            Some(FixedPrompt { exact: false, .. }) => unresolved += 1,
            Some(FixedPrompt { text, len, exact: true }) => {
                // Pre-built chat messages are rewritten too; interleaved content (several text
                // parts) cannot be, and keeps its prompt.
                if !spec.replace_text(text) {
                    unresolved += 1;
                    continue;
                }
                spec.prompt_tokens = len;
                fixed += 1;
            }
        }
    }
    Ok(Verification::Fixed { checked: workload.requests.len(), fixed, unresolved })
}

/// `None` when the prompt is already exact; else the new text, its server length, and whether
/// it reached the target.
async fn fix_one(
    server: &ServerTokenize,
    spec: &RequestSpec,
    specials: usize,
) -> Result<Option<FixedPrompt>> {
    let Prompt::Text(text) = &spec.prompt else { return Ok(None) };
    let target = spec.prompt_tokens as usize;
    let mut current: Arc<str> = text.clone();
    let mut ids = match server.tokenize(&current).await? {
        Probe::Ok(ids) => ids,
        Probe::Unavailable(_) => return Ok(None),
    };
    if ids.len() == target {
        return Ok(None);
    }
    for _ in 0..8 {
        let body_ids: Vec<u32> = ids.get(specials..).unwrap_or(&[]).to_vec();
        let want = target.saturating_sub(specials);
        let adjusted = servebench_data::random::adjust_to_length(&body_ids, want);
        let new_text = match server.detokenize(&adjusted).await? {
            Probe::Ok(t) => t,
            Probe::Unavailable(_) => break,
        };
        current = Arc::from(new_text.as_str());
        ids = match server.tokenize(&current).await? {
            Probe::Ok(ids) => ids,
            Probe::Unavailable(_) => break,
        };
        if ids.len() == target {
            return Ok(Some(FixedPrompt { text: current, len: target as u32, exact: true }));
        }
    }
    Ok(Some(FixedPrompt { text: current, len: ids.len() as u32, exact: false }))
}

/// Loads the tokenizer off the async runtime's worker threads.
pub async fn load_tokenizer(spec: String) -> Result<Arc<dyn TextTokenizer>> {
    blocking::off_runtime(
        move || servebench_data::tokenizer::load_tokenizer(&spec),
        |e| BenchError::TokenizerLoad {
            name: "tokenizer".into(),
            detail: e.to_string(),
            source: Some(Box::new(e)),
        },
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pins the message of a `--base-url` given with an endpoint path: `GET
    /// …/v1/completions/v1/models` answered 404, said as "HTTP 404: Not Found" with no fix.
    #[test]
    fn a_base_url_with_an_api_path_is_named_as_the_fix() {
        assert!(doubled_api_path("GET http://127.0.0.1:8000/v1/completions/v1/models"));
        assert!(doubled_api_path("GET http://gw/v1/v1/models"));
        assert!(!doubled_api_path("GET http://127.0.0.1:8000/v1/models"));
        assert!(!doubled_api_path("GET http://gw/openai/v1/models"));
        let e = base_url_path_error("GET http://h:1/v1/completions/v1/models");
        assert_eq!(e.code(), servebench_core::ErrorCode::ConfigInvalid, "{e}");
        assert!(e.to_string().contains("fix: give --base-url as scheme://host:port"), "{e}");
    }

    fn spec(i: u64, p: u32, o: u32) -> RequestSpec {
        RequestSpec::new(i, Prompt::Text(Arc::from("x")), p, o)
    }

    #[test]
    fn max_model_len_filter_drops_and_reindexes() {
        let mut w = Requests::from(Workload::new(vec![spec(0, 10, 10), spec(1, 100, 10), spec(2, 5, 5)]));
        assert_eq!(filter_max_model_len(&mut w, Some(20)), 1);
        assert_eq!(w.metas().map(|r| r.index).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(w.meta(1).unwrap().prompt_tokens, 5);
        assert_eq!(filter_max_model_len(&mut w, None), 0);
    }

    #[test]
    fn cache_path_depends_on_every_part() {
        let a = verification_cache_path("http://a", "m", "t");
        let b = verification_cache_path("http://a", "m", "t2");
        if a.is_some() {
            assert_ne!(a, b);
        }
    }
}

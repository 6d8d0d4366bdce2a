//! Pooling endpoints: `POST /v1/embeddings`, `/pooling` (also `/v1/pooling`) and `/v1/rerank`
//! (also `/rerank`). Non-streaming: the answer is sent when a prefill-like delay has passed —
//! fixed mode: the configured TTFT; engine mode: the request's prefill and one step through the
//! scheduler (one sequence per input) — with `usage.prompt_tokens` counted by the real
//! tokenizer.
//!
//! Inputs:
//! - embeddings/pooling `input`: a string, a list of strings, token ids, or a list of token-id
//!   lists (one vector per entry), or chat `messages` (vLLM's embeddings-chat form, rendered
//!   with the chat template without a generation prompt);
//! - rerank `query` and `documents` (strings or `{text}` objects): one score per document; a
//!   pair counts `tokens(query, with special tokens) + tokens(document)`; `top_n` keeps the best.
//!
//! `truncate_prompt_tokens` (−1 = the model's limit, k > 0 = the last k tokens) is honoured;
//! inputs above `max_model_len` get vLLM's 400. Vectors and scores are seeded by the content, so
//! the same request gets the same answer. `encoding_format` other than `float` gets 400.
//! Injected faults: the pre-response kinds, and the body faults of a JSON answer
//! (`fault/body.rs`).

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use serde::{Deserialize, Serialize};

use crate::engine::{Progress, Submission};
use crate::fault::ResponseShape;
use crate::handlers::SimState;
use crate::hash::{mix, Fnv};
use crate::pacer::{PaceInfo, Pacer};
use crate::prompt::{chat_prompt, completion_prompts};
use crate::protocol::{parse_json, ApiError, ChatMessage, PromptField};
use crate::stream::SimBody;
use crate::truth::{GroundTruth, TruthRecorder};

/// Which pooling API a path serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    Embeddings,
    Pooling,
    Rerank,
}

impl Endpoint {
    /// The endpoint served at `path`, if any.
    pub(crate) fn of(path: &str) -> Option<Endpoint> {
        match path {
            "/v1/embeddings" => Some(Endpoint::Embeddings),
            "/pooling" | "/v1/pooling" => Some(Endpoint::Pooling),
            "/v1/rerank" | "/rerank" | "/v2/rerank" => Some(Endpoint::Rerank),
            _ => None,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Endpoint::Embeddings => "/v1/embeddings",
            Endpoint::Pooling => "/pooling",
            Endpoint::Rerank => "/v1/rerank",
        }
    }
}

#[derive(Debug, Deserialize)]
struct EmbedRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    input: Option<PromptField>,
    #[serde(default)]
    messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    dimensions: Option<i64>,
    #[serde(default)]
    encoding_format: Option<String>,
    #[serde(default)]
    truncate_prompt_tokens: Option<i64>,
    /// Infinity's input modality: `text` (default) or `image` (each `input` is an image URL).
    #[serde(default)]
    modality: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Document {
    Text(String),
    Object { text: String },
}

impl Document {
    fn text(&self) -> &str {
        match self {
            Document::Text(t) | Document::Object { text: t } => t,
        }
    }
}

#[derive(Debug, Deserialize)]
struct RerankRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    query: Option<String>,
    #[serde(default)]
    documents: Option<Vec<Document>>,
    #[serde(default)]
    top_n: Option<i64>,
    #[serde(default)]
    truncate_prompt_tokens: Option<i64>,
}

/// Token count after `truncate_prompt_tokens`, or vLLM's 400 when over the model's limit.
fn limit(tokens: u32, truncate: Option<i64>, max_model_len: u32) -> Result<u32, ApiError> {
    let tokens = match truncate {
        None => tokens,
        Some(-1) => tokens.min(max_model_len),
        Some(k) if k > 0 => {
            if k > i64::from(max_model_len) {
                return Err(ApiError::bad_request(format!(
                    "truncate_prompt_tokens value ({k}) is greater than max_model_len ({max_model_len}). \
                     Please, select a smaller truncation size."
                )));
            }
            tokens.min(k as u32)
        }
        Some(k) => {
            return Err(ApiError::bad_request(format!(
                "truncate_prompt_tokens must be -1 or positive, got {k}"
            )))
        }
    };
    if tokens > max_model_len {
        return Err(ApiError::bad_request(format!(
            "This model's maximum context length is {max_model_len} tokens. However, you requested \
             {tokens} tokens in the input for embedding generation. Please reduce the length of the input."
        )));
    }
    Ok(tokens)
}

/// What a pooling request asks for, once parsed: token counts and content hashes per item.
struct Parsed {
    /// Per input (embeddings/pooling) or per document (rerank): tokens and content hash.
    items: Vec<(u32, u64)>,
    dims: u32,
    top_n: Option<usize>,
}

fn parse(state: &SimState, ep: Endpoint, body: &[u8]) -> Result<Parsed, ApiError> {
    let tok = state.config.tokenizer.as_ref();
    let mml = state.config.max_model_len;
    if ep == Endpoint::Rerank {
        let r: RerankRequest = parse_json(body)?;
        state.check_model(r.model.as_deref())?;
        let query = r.query.ok_or_else(|| ApiError::bad_request("Field required: query"))?;
        let docs = r.documents.ok_or_else(|| ApiError::bad_request("Field required: documents"))?;
        if docs.is_empty() {
            return Err(ApiError::bad_request("documents must not be empty"));
        }
        if matches!(r.top_n, Some(n) if n < 0) {
            return Err(ApiError::bad_request("top_n must be non-negative"));
        }
        let q = tok.encode(&query, true).map_err(|e| ApiError::bad_request(e.to_string()))?.len() as u32;
        let qh = Fnv::new(7).bytes(query.as_bytes()).finish();
        let mut items = Vec::with_capacity(docs.len());
        for d in &docs {
            let n =
                tok.encode(d.text(), false).map_err(|e| ApiError::bad_request(e.to_string()))?.len() as u32;
            let tokens = limit(q.saturating_add(n), r.truncate_prompt_tokens, mml)?;
            items.push((tokens, Fnv::new(qh).bytes(d.text().as_bytes()).finish()));
        }
        let top_n = r.top_n.filter(|&n| n > 0).map(|n| n as usize);
        return Ok(Parsed { items, dims: 0, top_n });
    }
    let r: EmbedRequest = parse_json(body)?;
    state.check_model(r.model.as_deref())?;
    if let Some(f) = r.encoding_format.as_deref().filter(|f| *f != "float") {
        return Err(ApiError::bad_request(format!(
            "encoding_format '{f}' is not supported by this server; use float"
        )));
    }
    let dims = match r.dimensions {
        None => state.config.embedding_dim,
        Some(d) if (1..=65_536).contains(&d) => d as u32,
        Some(d) => return Err(ApiError::bad_request(format!("dimensions must be in 1..=65536, got {d}"))),
    };
    if let Some(m) = r.modality.as_deref().filter(|m| *m != "text") {
        if m != "image" {
            return Err(ApiError::bad_request(format!("modality '{m}' is not supported (text, image)")));
        }
        let urls: Vec<&str> = match &r.input {
            Some(PromptField::Text(u)) => vec![u.as_str()],
            Some(PromptField::Texts(us)) if !us.is_empty() => us.iter().map(String::as_str).collect(),
            _ => return Err(ApiError::bad_request("modality 'image' takes image URLs as input")),
        };
        let items = urls
            .iter()
            .map(|u| {
                let tokens = crate::media::image_tokens(u);
                Ok((limit(tokens, r.truncate_prompt_tokens, mml)?, Fnv::new(11).bytes(u.as_bytes()).finish()))
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        return Ok(Parsed { items, dims, top_n: None });
    }
    let prompts = match (&r.messages, &r.input) {
        (Some(m), _) if ep == Endpoint::Embeddings || ep == Endpoint::Pooling => {
            if m.is_empty() {
                return Err(ApiError::bad_request("messages must not be empty"));
            }
            vec![chat_prompt(m, false, tok)?]
        }
        _ => completion_prompts(r.input.as_ref(), tok)?,
    };
    let items = prompts
        .iter()
        .map(|p| Ok((limit(p.tokens, r.truncate_prompt_tokens, mml)?, p.hash)))
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Parsed { items, dims, top_n: None })
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u32,
    total_tokens: u32,
    completion_tokens: u32,
    prompt_tokens_details: Option<()>,
}

#[derive(Serialize)]
struct EmbeddingItem {
    index: usize,
    object: &'static str,
    embedding: Vec<f32>,
}

#[derive(Serialize)]
struct PoolingItem {
    index: usize,
    object: &'static str,
    data: Vec<f32>,
}

#[derive(Serialize)]
struct ListBody<'a, T> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    data: Vec<T>,
    usage: Usage,
}

#[derive(Serialize)]
struct RerankItem {
    index: usize,
    relevance_score: f64,
}

#[derive(Serialize)]
struct RerankBody<'a> {
    id: &'a str,
    model: &'a str,
    usage: RerankUsage,
    results: Vec<RerankItem>,
}

#[derive(Serialize)]
struct RerankUsage {
    prompt_tokens: u32,
    total_tokens: u32,
}

/// A unit-length vector seeded by `hash`.
fn vector(hash: u64, dims: u32) -> Vec<f32> {
    let raw: Vec<f32> =
        (0..u64::from(dims)).map(|i| ((mix(hash ^ mix(i)) >> 40) as f32 / 8_388_608.0) - 1.0).collect();
    let norm = raw.iter().map(|x| x * x).sum::<f32>().sqrt().max(f32::MIN_POSITIVE);
    raw.into_iter().map(|x| x / norm).collect()
}

fn unix_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn body_of(state: &SimState, ep: Endpoint, id: &str, p: &Parsed, prompt_tokens: u32) -> Bytes {
    let model = state.config.model.as_str();
    let usage = Usage {
        prompt_tokens,
        total_tokens: prompt_tokens,
        completion_tokens: 0,
        prompt_tokens_details: None,
    };
    let json = match ep {
        Endpoint::Embeddings => serde_json::to_vec(&ListBody {
            id,
            object: "list",
            created: unix_secs(),
            model,
            data: p
                .items
                .iter()
                .enumerate()
                .map(|(index, &(_, h))| EmbeddingItem {
                    index,
                    object: "embedding",
                    embedding: vector(h, p.dims),
                })
                .collect(),
            usage,
        }),
        Endpoint::Pooling => serde_json::to_vec(&ListBody {
            id,
            object: "list",
            created: unix_secs(),
            model,
            data: p
                .items
                .iter()
                .enumerate()
                .map(|(index, &(_, h))| PoolingItem { index, object: "pooling", data: vector(h, p.dims) })
                .collect(),
            usage,
        }),
        Endpoint::Rerank => {
            let mut results: Vec<RerankItem> = p
                .items
                .iter()
                .enumerate()
                .map(|(index, &(_, h))| RerankItem {
                    index,
                    relevance_score: (mix(h) >> 11) as f64 / (1u64 << 53) as f64,
                })
                .collect();
            results.sort_by(|a, b| b.relevance_score.total_cmp(&a.relevance_score));
            if let Some(n) = p.top_n {
                results.truncate(n);
            }
            serde_json::to_vec(&RerankBody {
                id,
                model,
                usage: RerankUsage { prompt_tokens, total_tokens: prompt_tokens },
                results,
            })
        }
    };
    Bytes::from(json.unwrap_or_default())
}

/// Handles one pooling request at `path`.
pub(crate) async fn handle(
    state: &Arc<SimState>,
    path: &str,
    body: Bytes,
    received: Instant,
    header_id: &Option<String>,
    fault_key: Option<&str>,
) -> Result<Response<SimBody>, ApiError> {
    let ep = Endpoint::of(path).ok_or_else(|| ApiError::bad_request("not a pooling endpoint"))?;
    let parsed = if body.len() <= 4096 {
        parse(state, ep, &body)?
    } else {
        let st = state.clone();
        tokio::task::spawn_blocking(move || parse(&st, ep, &body)).await.map_err(|e| ApiError {
            status: 500,
            kind: "InternalServerError",
            message: format!("request preparation failed: {e}"),
        })??
    };
    let prompt_tokens: u32 = parsed.items.iter().map(|&(t, _)| t).fold(0u32, u32::saturating_add);
    let info = PaceInfo { received, tokens_per_event: 1, tokens: 1, prompt_tokens, completion_tokens: 0 };
    let metrics = Some(state.metrics.clone());
    let mut pacer = match &state.engine {
        None => Pacer::new(&state.config.timing, info, metrics),
        Some(engine) => {
            let progress = Arc::new(Progress::default());
            let submitted = engine.submit(Submission {
                prompt_tokens,
                output_tokens: 1,
                total_output_tokens: 0,
                seqs: parsed.items.len() as u32,
                blocks: Vec::new(),
                progress: progress.clone(),
            });
            if !submitted {
                return Err(ApiError {
                    status: 503,
                    kind: "ServiceUnavailable",
                    message: "engine stopped".into(),
                });
            }
            Pacer::engine(progress, info, metrics)
        }
    };
    let prefix = match ep {
        Endpoint::Embeddings => "embd-",
        Endpoint::Pooling => "pool-",
        Endpoint::Rerank => "rerank-",
    };
    let base = header_id.clone().unwrap_or_else(|| state.fresh_id());
    let id = format!("{prefix}{base}");
    let truth = state.truth.as_ref().map(|log| {
        TruthRecorder::new(
            log.clone(),
            GroundTruth {
                request_id: base.clone(),
                endpoint: ep.path(),
                stream: false,
                received,
                events: Vec::with_capacity(1),
                done: None,
                prompt_tokens,
                completion_tokens: 0,
                reasoning_tokens: 0,
            },
        )
    });
    pacer.wait_all().await;
    let out = body_of(state, ep, &id, &parsed, prompt_tokens);
    state
        .metrics
        .registry
        .counter(
            "servebench_sim:pooling_requests_total",
            "Pooling requests answered, by endpoint.",
            &[("endpoint", ep.path())],
        )
        .inc();
    if let Some(mut t) = truth {
        let now = Instant::now();
        t.event(now, 0);
        t.finish(now);
    }
    let faults = state.faults.plan(ResponseShape::JsonBody, fault_key);
    let mut r = Response::new(state.faults.json_body(&faults, out));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncation_and_limits() {
        assert_eq!(limit(10, None, 100).unwrap(), 10);
        assert_eq!(limit(200, Some(-1), 100).unwrap(), 100);
        assert_eq!(limit(200, Some(50), 100).unwrap(), 50);
        assert_eq!(limit(200, None, 100).unwrap_err().status, 400);
        assert_eq!(limit(20, Some(500), 100).unwrap_err().status, 400);
        assert_eq!(limit(20, Some(-3), 100).unwrap_err().status, 400);
    }

    #[test]
    fn vectors_are_unit_length_and_seeded() {
        let v = vector(42, 64);
        assert_eq!(v.len(), 64);
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-4);
        assert_eq!(v, vector(42, 64));
        assert_ne!(v, vector(43, 64));
    }
}

//! Routing and request handlers.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;

use crate::config::{SimConfig, TimingModel};
use crate::engine_sched::Engine;
use crate::fault::{FaultClose, FaultInjector, PreResponse, ResponseShape};
use crate::generate::{generate, Gen};
use crate::hash::mix;
use crate::metrics::Metrics;
use crate::native::NativeRoute;
use crate::prompt::{chat_ids, checked_ids, render_chat};
use crate::protocol::{parse_json, ApiError, DetokenizeRequest, TokenizeRequest};
use crate::response::{detokenize_body, models_body, tokenize_body};
use crate::sse::Api;
use crate::stream::SimBody;
use crate::truth::GroundTruthLog;
use crate::vocab::OutputVocab;

const X_REQUEST_ID: &str = "x-request-id";
pub(crate) const JSON: &str = "application/json";
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Everything the handlers share.
#[derive(Debug)]
pub(crate) struct SimState {
    pub config: SimConfig,
    pub vocab: Arc<OutputVocab>,
    pub truth: Option<Arc<GroundTruthLog>>,
    /// Everything `/metrics` reports; other modules register extra counters on
    /// `metrics.registry`.
    pub metrics: Arc<Metrics>,
    /// The scheduler of the engine timing model (`None` in fixed mode).
    pub(crate) engine: Option<Engine>,
    /// Fault injection (plans, counters).
    pub faults: FaultInjector,
    models: Bytes,
    /// The personality's behaviour table (read once per request).
    pub behaviour: &'static crate::personality::Behaviour,
    id_salt: u64,
    counter: AtomicU64,
}

impl SimState {
    pub(crate) fn new(config: SimConfig) -> Self {
        let vocab = Arc::new(OutputVocab::build(config.tokenizer.as_ref()));
        let truth = config.record_ground_truth.then(|| Arc::new(GroundTruthLog::default()));
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let id_salt = mix(now.as_nanos() as u64 ^ u64::from(std::process::id()).rotate_left(32));
        let perm = format!("modelperm-{:016x}{:016x}", mix(id_salt), mix(!id_salt));
        let behaviour = config.personality.behaviour();
        let models = match behaviour.models {
            crate::personality::ModelsShape::Vllm => {
                models_body(&config.model, &config.lora_modules, now.as_secs(), config.max_model_len, &perm)
            }
            shape => {
                let names: Vec<&str> = std::iter::once(config.model.as_str())
                    .chain(config.lora_modules.iter().map(String::as_str))
                    .collect();
                let n_vocab = config.tokenizer.vocab_size();
                crate::wire::models_body(shape, &names, now.as_secs(), config.max_model_len, n_vocab)
            }
        };
        let spec_k = match &config.timing {
            TimingModel::Engine(e) => e.spec_k,
            TimingModel::Fixed { .. } => 0,
        };
        let metrics = Arc::new(Metrics::new(&config.model, spec_k).with_power(config.gpus));
        let engine = match &config.timing {
            TimingModel::Engine(e) => Engine::spawn(*e, config.seed, metrics.clone()),
            TimingModel::Fixed { .. } => None,
        };
        let faults = FaultInjector::new(config.faults.clone(), &metrics.registry);
        SimState {
            config,
            vocab,
            truth,
            metrics,
            engine,
            faults,
            models,
            behaviour,
            id_salt,
            counter: AtomicU64::new(1),
        }
    }

    /// A fresh 32-hex-digit id (like vLLM's `random_uuid()`).
    pub(crate) fn fresh_id(&self) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{:016x}{:016x}", mix(self.id_salt ^ n), mix(self.id_salt.rotate_left(17) ^ n))
    }

    pub(crate) fn check_model(&self, model: Option<&str>) -> Result<(), ApiError> {
        match model {
            Some(m)
                if self.behaviour.checks_model
                    && m != self.config.model
                    && !self.config.lora_modules.iter().any(|l| l == m) =>
            {
                Err(ApiError::model_not_found(m))
            }
            _ => Ok(()),
        }
    }
}

pub(crate) fn unix_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

pub(crate) fn response(status: u16, content_type: Option<&'static str>, body: SimBody) -> Response<SimBody> {
    let mut r = Response::new(body);
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(ct) = content_type {
        r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    r
}

fn json(body: Bytes) -> Response<SimBody> {
    response(200, Some(JSON), SimBody::full(body))
}

fn error(e: &ApiError) -> Response<SimBody> {
    response(e.status, Some(JSON), SimBody::full(e.body()))
}

fn detail(status: u16, text: &'static str) -> Response<SimBody> {
    let body = format!("{{\"detail\":\"{text}\"}}");
    response(status, Some(JSON), SimBody::full(body))
}

fn header_id(headers: &HeaderMap) -> Option<String> {
    headers.get(X_REQUEST_ID).and_then(|v| v.to_str().ok()).filter(|s| !s.is_empty()).map(str::to_owned)
}

impl SimState {
    /// An injected error status (429/500/503) with `Retry-After` when set.
    fn fault_status(&self, pre: PreResponse) -> Response<SimBody> {
        let mut r = self.error(&pre.error);
        if let Some(v) = pre.retry_after {
            r.headers_mut().insert(RETRY_AFTER, v);
        }
        r
    }

    /// An error answer in the personality's shape.
    pub(crate) fn error(&self, e: &ApiError) -> Response<SimBody> {
        match self.behaviour.errors {
            crate::personality::ErrorStyle::Vllm => error(e),
            style => {
                let (status, body) = crate::wire::error_body(style, e);
                response(status, Some(JSON), SimBody::full(body))
            }
        }
    }

    /// TGI's `GET /info`.
    fn tgi_info(&self) -> Bytes {
        let c = &self.config;
        let v = serde_json::json!({
            "model_id": c.model, "model_sha": null, "model_pipeline_tag": "text-generation",
            "max_input_tokens": c.max_model_len.saturating_sub(1), "max_total_tokens": c.max_model_len,
            "max_concurrent_requests": 128, "max_best_of": 1, "max_stop_sequences": 4,
            "validation_workers": 2, "router": "text-generation-router", "version": "servebench-sim"
        });
        Bytes::from(v.to_string())
    }

    /// The 404 of a route the personality does not serve.
    fn not_found(&self, method: &Method, path: &str) -> Response<SimBody> {
        match crate::wire::not_found(self.behaviour.errors, method.as_str(), path) {
            Some((ct, body)) => response(404, Some(ct), SimBody::full(body)),
            None => response(404, None, SimBody::empty()),
        }
    }
}

/// The method of a known API route (whether the personality serves it is a separate question).
fn method_of(path: &str) -> Option<Method> {
    match path {
        "/v1/models" | "/health" | "/metrics" | "/dcgm/metrics" => Some(Method::GET),
        "/v1/completions" | "/v1/chat/completions" | "/tokenize" | "/detokenize" => Some(Method::POST),
        "/start_profile" | "/stop_profile" | "/reset_prefix_cache" => Some(Method::POST),
        "/v1/responses" => Some(Method::POST),
        "/generate" | "/generate_stream" | "/completion" | "/v1/messages" => Some(Method::POST),
        "/v1/audio/transcriptions" => Some(Method::POST),
        "/info" => Some(Method::GET),
        p if crate::pooling::Endpoint::of(p).is_some() => Some(Method::POST),
        _ => None,
    }
}

/// The API path of a gateway request: `raw` without the configured prefix (joined by path
/// segment: `/gw` does not match `/gwx/...`), or `None` when it does not start with it.
fn strip_prefix<'a>(raw: &'a str, prefix: &str) -> Option<&'a str> {
    let rest = raw.strip_prefix(prefix)?;
    rest.starts_with('/').then_some(rest)
}

/// A gateway's answer to an unprefixed path: a redirect to the prefixed one for an API route
/// (307 for GET and HEAD, 308 otherwise, so the method and body are kept), 404 otherwise.
fn gateway_redirect(state: &SimState, method: &Method, uri: &http::Uri) -> Response<SimBody> {
    let path = uri.path();
    if method_of(path).is_none() || !state.behaviour.serves(path) {
        return detail(404, "Not Found");
    }
    let status = if method == Method::GET || method == Method::HEAD { 307 } else { 308 };
    let mut location = format!("{}{}", state.config.path_prefix, path);
    if let Some(q) = uri.query() {
        location.push('?');
        location.push_str(q);
    }
    let mut r = response(status, None, SimBody::empty());
    if let Ok(v) = HeaderValue::from_str(&location) {
        r.headers_mut().insert(http::header::LOCATION, v);
    }
    r
}

/// Entry point of every request. The only error is an injected fault that closes the
/// connection without a response. `conn` is the connection's keep-alive bookkeeping (llama.cpp
/// personality only).
pub(crate) async fn handle(
    state: Arc<SimState>,
    req: Request<Incoming>,
    conn: Option<Arc<crate::conn_wrap::ConnCtx>>,
) -> Result<Response<SimBody>, FaultClose> {
    let b = state.behaviour;
    let (parts, body) = req.into_parts();
    let header_id = header_id(&parts.headers);
    let gzip = b.gzip && crate::conn_wrap::accepts_gzip(&parts.headers);
    let path = match b.prefixed {
        false => Some(parts.uri.path()),
        true => strip_prefix(parts.uri.path(), &state.config.path_prefix),
    };
    if let Some(c) = &conn {
        c.begin();
    }
    let mut resp = match path {
        None => gateway_redirect(&state, &parts.method, &parts.uri),
        Some(path) => {
            let ct = parts.headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
            route(&state, &parts.method, path, body, &header_id, ct).await?
        }
    };
    if let Some(id) = header_id {
        if let Ok(v) = HeaderValue::from_str(&id) {
            resp.headers_mut().insert(X_REQUEST_ID, v);
        }
    }
    if gzip {
        resp = gzip_response(resp);
    }
    if let Some(c) = conn {
        let streamed = matches!(resp.body(), SimBody::Stream(_));
        resp.headers_mut().insert("keep-alive", HeaderValue::from_static("timeout=5, max=100"));
        resp = resp.map(|body| SimBody::Tracked(Box::new(crate::conn_wrap::Tracked::new(body, c, streamed))));
    }
    Ok(resp)
}

/// The answer gzipped (`Content-Encoding: gzip`): a complete body at once, a stream frame by
/// frame.
fn gzip_response(resp: Response<SimBody>) -> Response<SimBody> {
    let (mut parts, body) = resp.into_parts();
    let body = match body {
        SimBody::Full(None) => return Response::from_parts(parts, SimBody::Full(None)),
        SimBody::Full(Some(b)) => SimBody::full(crate::conn_wrap::gzip_all(&b)),
        other => SimBody::Gzip(Box::new(crate::conn_wrap::GzipBody::new(other))),
    };
    parts.headers.insert(http::header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    parts.headers.insert(http::header::VARY, HeaderValue::from_static("accept-encoding"));
    Response::from_parts(parts, body)
}

/// Routes one request by its API path.
async fn route(
    state: &Arc<SimState>,
    method: &Method,
    path: &str,
    body: Incoming,
    header_id: &Option<String>,
    content_type: Option<String>,
) -> Result<Response<SimBody>, FaultClose> {
    let b = state.behaviour;
    let resp = match method_of(path).filter(|_| b.serves(path)) {
        None => state.not_found(method, path),
        Some(m) if m != method => detail(405, "Method Not Allowed"),
        Some(_) => match path {
            "/health" => response(200, None, SimBody::empty()),
            "/v1/models" => json(state.models.clone()),
            "/info" => json(state.tgi_info()),
            "/metrics" => {
                let text = state.metrics.render(b.metrics);
                response(200, Some(PROMETHEUS), SimBody::full(text))
            }
            "/dcgm/metrics" => match &state.metrics.power {
                Some(p) => {
                    response(200, Some(PROMETHEUS), SimBody::full(p.render_at(std::time::Instant::now())))
                }
                None => state.not_found(method, path),
            },
            "/start_profile" | "/stop_profile" => response(200, None, SimBody::empty()),
            "/reset_prefix_cache" => {
                if let Some(e) = &state.engine {
                    e.reset_prefix_cache();
                }
                response(200, None, SimBody::empty())
            }
            _ => match Limited::new(body, state.config.max_body_bytes).collect().await {
                Err(e) if e.is::<http_body_util::LengthLimitError>() => state.error(&ApiError {
                    status: 413,
                    kind: "RequestEntityTooLarge",
                    message: e.to_string(),
                }),
                Err(e) => {
                    state.error(&ApiError::bad_request(format!("reading the request body failed: {e}")))
                }
                Ok(collected) => post(state, path, collected.to_bytes(), header_id, content_type).await?,
            },
        },
    };
    Ok(resp)
}

/// A POST with its body read.
async fn post(
    state: &Arc<SimState>,
    path: &str,
    body: Bytes,
    header_id: &Option<String>,
    content_type: Option<String>,
) -> Result<Response<SimBody>, FaultClose> {
    let received = Instant::now();
    let native = NativeRoute::of(path, &body, state.behaviour);
    let fault_key = match path {
        "/tokenize" | "/detokenize" => None,
        _ => state.faults.key(header_id.as_deref()),
    };
    let key = fault_key.as_deref();
    // The pre-response failure is the same on every response shape (its kinds are drawn first
    // and apply to all), so it is decided before the body is parsed.
    let pre = state.faults.plan(ResponseShape::JsonBody, key);
    let result = match (state.faults.pre_response(&pre)?, path) {
        (Some(pre), _) => Ok(state.fault_status(pre)),
        (None, "/v1/completions") => {
            generate(state, Gen::Api(Api::Completions), body, received, header_id, key, None).await
        }
        (None, "/v1/chat/completions") => {
            generate(state, Gen::Api(Api::Chat), body, received, header_id, key, None).await
        }
        (None, "/v1/responses") => {
            generate(state, Gen::Api(Api::Responses), body, received, header_id, key, None).await
        }
        (None, "/v1/audio/transcriptions") => {
            generate(state, Gen::Transcription, body, received, header_id, key, content_type).await
        }
        (None, _) if native.is_some() => {
            let route = native.unwrap_or(NativeRoute::Anthropic);
            let r = generate(state, Gen::Native(route), body, received, header_id, key, None).await;
            return Ok(r.unwrap_or_else(|e| {
                let (status, body) = route.error_body(&e);
                response(status, Some(JSON), SimBody::full(body))
            }));
        }
        (None, p) if crate::pooling::Endpoint::of(p).is_some() => {
            crate::pooling::handle(state, p, body, received, header_id, key).await
        }
        (None, "/tokenize") => tokenize(state, &body),
        (None, _) => detokenize(state, &body),
    };
    Ok(result.unwrap_or_else(|e| state.error(&e)))
}

fn tokenize(state: &SimState, body: &[u8]) -> Result<Response<SimBody>, ApiError> {
    use crate::personality::TokenizeDialect;
    use crate::wire::{tokenize_answer, tokenize_input, TokenizeInput};
    let dialect = state.behaviour.tokenize;
    if dialect != TokenizeDialect::Prompt {
        let tok = state.config.tokenizer.as_ref();
        let with_pieces = serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .and_then(|v| v.get("with_pieces").and_then(serde_json::Value::as_bool))
            .unwrap_or(false);
        let input = match tokenize_input(dialect, body) {
            // GuideLLM's mock answers with pydantic's multi-line text.
            Err(e) if e.kind == "ValidationError" => {
                return Ok(response(400, Some("text/plain; charset=utf-8"), SimBody::full(e.message)));
            }
            other => other?,
        };
        let ids = match input {
            TokenizeInput::Empty => Vec::new(),
            TokenizeInput::Text(t, special) => {
                tok.encode(&t, special).map_err(|e| ApiError::bad_request(e.to_string()))?
            }
        };
        let pieces: Vec<String> = match dialect == TokenizeDialect::Inputs || with_pieces {
            true => ids.iter().map(|&id| tok.decode(&[id], false).unwrap_or_default()).collect(),
            false => Vec::new(),
        };
        return Ok(json(tokenize_answer(dialect, &ids, &pieces, with_pieces)));
    }
    let r: TokenizeRequest = parse_json(body)?;
    state.check_model(r.model.as_deref())?;
    let tok = state.config.tokenizer.as_ref();
    let ids = match (&r.messages, &r.prompt) {
        (Some(messages), _) => {
            let rendered = render_chat(messages, r.add_generation_prompt.unwrap_or(true))?;
            if r.add_special_tokens.unwrap_or(false) {
                tok.encode(&rendered, true).map_err(|e| ApiError::bad_request(e.to_string()))?
            } else {
                chat_ids(&rendered, tok)?
            }
        }
        (None, Some(prompt)) => tok
            .encode(prompt, r.add_special_tokens.unwrap_or(true))
            .map_err(|e| ApiError::bad_request(e.to_string()))?,
        (None, None) => return Err(ApiError::bad_request("either 'prompt' or 'messages' is required")),
    };
    Ok(json(tokenize_body(&ids, state.config.max_model_len)))
}

fn detokenize(state: &SimState, body: &[u8]) -> Result<Response<SimBody>, ApiError> {
    let r: DetokenizeRequest = parse_json(body)?;
    state.check_model(r.model.as_deref())?;
    let tok = state.config.tokenizer.as_ref();
    let ids = checked_ids(&r.tokens, tok.vocab_size())?;
    let text = tok.decode(&ids, false).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if state.behaviour.tokenize == crate::personality::TokenizeDialect::Content {
        return Ok(json(Bytes::from(serde_json::json!({ "content": text }).to_string())));
    }
    Ok(json(detokenize_body(&text)))
}

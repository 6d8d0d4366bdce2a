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
use crate::engine::{block_hashes, Progress, Submission};
use crate::engine_sched::Engine;
use crate::fault::{FaultClose, FaultInjector, PreResponse, ResponseShape};
use crate::hash::mix;
use crate::metrics::Metrics;
use crate::pacer::{PaceInfo, Pacer};
use crate::plan::{plan, GenerationPlan};
use crate::prompt::{chat_ids, chat_prompt, checked_ids, completion_prompts, render_chat};
use crate::protocol::{
    parse_json, ApiError, ChatRequest, CompletionRequest, DetokenizeRequest, GenerationFields,
    TokenizeRequest,
};
use crate::response::{detokenize_body, generation_body, models_body, tokenize_body, ChatReasoning};
use crate::sse::{Api, StreamFormat, UsageOptions};
use crate::stream::{SimBody, TokenStream};
use crate::truth::{GroundTruth, GroundTruthLog, TruthRecorder};
use crate::vocab::OutputVocab;

const X_REQUEST_ID: &str = "x-request-id";
const JSON: &str = "application/json";
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
        let models =
            models_body(&config.model, &config.lora_modules, now.as_secs(), config.max_model_len, &perm);
        let spec_k = match &config.timing {
            TimingModel::Engine(e) => e.spec_k,
            TimingModel::Fixed { .. } => 0,
        };
        let metrics = Arc::new(Metrics::new(&config.model, spec_k));
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
            Some(m) if m != self.config.model && !self.config.lora_modules.iter().any(|l| l == m) => {
                Err(ApiError::model_not_found(m))
            }
            _ => Ok(()),
        }
    }
}

fn unix_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn response(status: u16, content_type: Option<&'static str>, body: SimBody) -> Response<SimBody> {
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

/// An injected error status (429/500/503) with `Retry-After` when set.
fn fault_status(pre: PreResponse) -> Response<SimBody> {
    let mut r = error(&pre.error);
    if let Some(v) = pre.retry_after {
        r.headers_mut().insert(RETRY_AFTER, v);
    }
    r
}

/// Entry point of every request. The only error is an injected fault that closes the
/// connection without a response.
pub(crate) async fn handle(
    state: Arc<SimState>,
    req: Request<Incoming>,
) -> Result<Response<SimBody>, FaultClose> {
    let (parts, body) = req.into_parts();
    let header_id = header_id(&parts.headers);
    let path = parts.uri.path();
    let route = match path {
        "/v1/models" | "/health" | "/metrics" => Some(Method::GET),
        "/v1/completions" | "/v1/chat/completions" | "/tokenize" | "/detokenize" => Some(Method::POST),
        "/start_profile" | "/stop_profile" | "/reset_prefix_cache" => Some(Method::POST),
        "/v1/responses" => Some(Method::POST),
        p if crate::pooling::Endpoint::of(p).is_some() => Some(Method::POST),
        _ => None,
    };
    let mut resp = match route {
        None => detail(404, "Not Found"),
        Some(m) if m != parts.method => detail(405, "Method Not Allowed"),
        Some(_) => match path {
            "/health" => response(200, None, SimBody::empty()),
            "/v1/models" => json(state.models.clone()),
            "/metrics" => response(200, Some(PROMETHEUS), SimBody::full(state.metrics.render())),
            "/start_profile" | "/stop_profile" => response(200, None, SimBody::empty()),
            "/reset_prefix_cache" => {
                if let Some(e) = &state.engine {
                    e.reset_prefix_cache();
                }
                response(200, None, SimBody::empty())
            }
            _ => match Limited::new(body, state.config.max_body_bytes).collect().await {
                Err(e) if e.is::<http_body_util::LengthLimitError>() => {
                    error(&ApiError { status: 413, kind: "RequestEntityTooLarge", message: e.to_string() })
                }
                Err(e) => error(&ApiError::bad_request(format!("reading the request body failed: {e}"))),
                Ok(collected) => {
                    let body = collected.to_bytes();
                    let received = Instant::now();
                    let fault_key = match path {
                        "/tokenize" | "/detokenize" => None,
                        _ => state.faults.key(header_id.as_deref()),
                    };
                    let key = fault_key.as_deref();
                    // The pre-response failure is the same on every response shape (its kinds are
                    // drawn first and apply to all), so it is decided before the body is parsed.
                    let pre = state.faults.plan(ResponseShape::JsonBody, key);
                    let result = match (state.faults.pre_response(&pre)?, path) {
                        (Some(pre), _) => Ok(fault_status(pre)),
                        (None, "/v1/completions") => {
                            generate(&state, Api::Completions, body.clone(), received, &header_id, key).await
                        }
                        (None, "/v1/chat/completions") => {
                            generate(&state, Api::Chat, body.clone(), received, &header_id, key).await
                        }
                        (None, "/v1/responses") => {
                            generate(&state, Api::Responses, body.clone(), received, &header_id, key).await
                        }
                        (None, p) if crate::pooling::Endpoint::of(p).is_some() => {
                            crate::pooling::handle(&state, p, body.clone(), received, &header_id, key).await
                        }
                        (None, "/tokenize") => tokenize(&state, &body),
                        (None, _) => detokenize(&state, &body),
                    };
                    result.unwrap_or_else(|e| error(&e))
                }
            },
        },
    };
    if let Some(id) = header_id {
        if let Ok(v) = HeaderValue::from_str(&id) {
            resp.headers_mut().insert(X_REQUEST_ID, v);
        }
    }
    Ok(resp)
}

/// Bodies above this size are parsed and tokenized on the blocking pool, so a long prompt does
/// not delay other streams' events on the I/O workers.
const INLINE_BODY_BYTES: usize = 4096;

/// A planned request: the plan, the request's fields and, for the engine's prefix cache, the
/// block-hash chain of each prompt.
type Prepared = (GenerationPlan, GenerationFields, Vec<Vec<u64>>);

/// Parsing, tokenization and planning: the CPU part of a generation request.
fn prepare(state: &SimState, api: Api, body: &[u8]) -> Result<Prepared, ApiError> {
    let config = &state.config;
    let tok = config.tokenizer.as_ref();
    let (prompts, fields, max_tokens) = match api {
        Api::Completions => {
            let r: CompletionRequest = parse_json(body)?;
            state.check_model(r.gen.model.as_deref())?;
            let prompts = completion_prompts(r.prompt.as_ref(), tok)?;
            let max = r.gen.max_tokens;
            (prompts, r.gen, max)
        }
        Api::Chat => {
            let r: ChatRequest = parse_json(body)?;
            state.check_model(r.gen.model.as_deref())?;
            let p = chat_prompt(&r.messages, r.add_generation_prompt.unwrap_or(true), tok)?;
            let max = r.max_completion_tokens.or(r.gen.max_tokens);
            (vec![p], r.gen, max)
        }
        Api::Responses => {
            let (p, gen, max) = crate::responses::prompt(body, tok)?;
            state.check_model(gen.model.as_deref())?;
            (vec![p], gen, max)
        }
    };
    let salt = match api {
        Api::Completions => 0xc0,
        Api::Chat => 0xc4a7,
        Api::Responses => 0x2e5,
    };
    let plan = plan(&prompts, &fields, max_tokens, config, salt)?;
    let blocks = match &config.timing {
        TimingModel::Engine(e) if e.prefix_caching => {
            prompts.iter().map(|p| block_hashes(&p.ids, e.block_size)).collect()
        }
        _ => Vec::new(),
    };
    Ok((plan, fields, blocks))
}

async fn generate(
    state: &Arc<SimState>,
    api: Api,
    body: Bytes,
    received: Instant,
    header_id: &Option<String>,
    fault_key: Option<&str>,
) -> Result<Response<SimBody>, ApiError> {
    let (plan, fields, blocks) = if body.len() <= INLINE_BODY_BYTES {
        prepare(state, api, &body)?
    } else {
        let st = state.clone();
        tokio::task::spawn_blocking(move || prepare(&st, api, &body)).await.map_err(|e| ApiError {
            status: 500,
            kind: "InternalServerError",
            message: format!("request preparation failed: {e}"),
        })??
    };
    let config = &state.config;
    let base_id = header_id.clone().or(fields.request_id.clone()).unwrap_or_else(|| state.fresh_id());
    let id = format!("{}{}", api.id_prefix(), base_id);
    let created = unix_secs();
    let stream = fields.stream.unwrap_or(false);
    let truth = state.truth.as_ref().map(|log| {
        TruthRecorder::new(
            log.clone(),
            GroundTruth {
                request_id: header_id.clone().unwrap_or(base_id),
                endpoint: api.path(),
                stream,
                received,
                events: Vec::with_capacity(plan.ticks() as usize),
                done: None,
                prompt_tokens: plan.prompt_tokens,
                completion_tokens: plan.completion_tokens(),
                reasoning_tokens: reasoning_of(config, api, &plan),
            },
        )
    });
    let mut pacer = make_pacer(state, &plan, blocks, received)?;
    let model = config.model.as_str();
    if stream {
        let present = fields.stream_options.is_some();
        let so = fields.stream_options.unwrap_or_default();
        let include_usage = present && so.include_usage.unwrap_or(true);
        let usage = UsageOptions {
            include_usage,
            continuous: include_usage && so.continuous_usage_stats.unwrap_or(false),
            details: config.prompt_tokens_details,
        };
        let reasoning = if reasoning_of(config, api, &plan) > 0 { config.reasoning_tokens } else { 0 };
        let fmt = StreamFormat::new(api, &id, created, model, &plan, usage)
            .with_reasoning(config.reasoning_field.as_str(), &plan);
        let shape =
            if api == Api::Responses { ResponseShape::TypedEventStream } else { ResponseShape::ChunkStream };
        let stream_faults = state.faults.stream(&state.faults.plan(shape, fault_key), plan.ticks());
        let mut s = TokenStream::new(plan, fmt, state.vocab.clone(), pacer, truth).with_faults(stream_faults);
        if reasoning > 0 {
            s = s.with_reasoning(reasoning, state.reasoning_counter());
        }
        let mut r = response(200, Some("text/event-stream; charset=utf-8"), SimBody::Stream(Box::new(s)));
        r.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
        return Ok(r);
    }
    pacer.wait_all().await;
    let details = config.prompt_tokens_details.then(|| pacer.cached_tokens());
    let reasoning_total = reasoning_of(config, api, &plan);
    let reasoning = if reasoning_total > 0 { config.reasoning_tokens } else { 0 };
    let body = match api {
        Api::Responses => {
            let cached = Some(pacer.cached_tokens()).filter(|_| config.prompt_tokens_details);
            crate::responses::body(&id, created, model, &plan, &state.vocab, cached, reasoning)
        }
        _ => {
            let reasoning = ChatReasoning { field: config.reasoning_field, tokens: reasoning };
            generation_body(api, &id, created, model, &plan, &state.vocab, details, reasoning)
        }
    };
    if reasoning_total > 0 {
        state.reasoning_counter().add(u64::from(reasoning_total));
    }
    if let Some(mut t) = truth {
        let now = Instant::now();
        t.event(now, plan.completion_tokens());
        t.finish(now);
    }
    let faults = state.faults.plan(ResponseShape::JsonBody, fault_key);
    Ok(response(200, Some(JSON), state.faults.json_body(&faults, body)))
}

/// Reasoning tokens of a request's output: the first `--sim-reasoning-tokens` of each choice,
/// for the chat and Responses APIs (completions have no reasoning field).
fn reasoning_of(config: &SimConfig, api: Api, plan: &GenerationPlan) -> u32 {
    if api == Api::Completions || config.reasoning_tokens == 0 {
        return 0;
    }
    plan.choices.iter().map(|c| c.tokens.min(config.reasoning_tokens)).sum()
}

impl SimState {
    /// The `/metrics` counter of reasoning tokens sent.
    pub(crate) fn reasoning_counter(&self) -> Arc<crate::metrics::Counter> {
        self.metrics.registry.counter(
            "servebench_sim:reasoning_tokens_total",
            "Completion tokens sent as reasoning text (--sim-reasoning-tokens).",
            &[],
        )
    }
}

/// The pacer of a request: a timer in fixed mode, a submission to the scheduler in engine mode.
fn make_pacer(
    state: &SimState,
    plan: &GenerationPlan,
    blocks: Vec<Vec<u64>>,
    received: Instant,
) -> Result<Pacer, ApiError> {
    let tokens = plan.choices.iter().map(|c| c.tokens).max().unwrap_or(0);
    let info = PaceInfo {
        received,
        tokens_per_event: plan.tokens_per_event,
        tokens,
        prompt_tokens: plan.prompt_tokens,
        completion_tokens: plan.completion_tokens(),
    };
    let metrics = Some(state.metrics.clone());
    let Some(engine) = &state.engine else {
        return Ok(Pacer::new(&state.config.timing, info, metrics));
    };
    let progress = Arc::new(Progress::default());
    let submitted = engine.submit(Submission {
        prompt_tokens: plan.prompt_tokens,
        output_tokens: tokens,
        total_output_tokens: u64::from(plan.completion_tokens()),
        seqs: plan.choices.len() as u32,
        blocks,
        progress: progress.clone(),
    });
    if !submitted {
        return Err(ApiError { status: 503, kind: "ServiceUnavailable", message: "engine stopped".into() });
    }
    Ok(Pacer::engine(progress, info, metrics))
}

fn tokenize(state: &SimState, body: &[u8]) -> Result<Response<SimBody>, ApiError> {
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
    Ok(json(detokenize_body(&text)))
}

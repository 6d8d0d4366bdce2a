//! Generation requests (OpenAI routes, native dialects, transcriptions): parse and plan, then
//! answer with a paced stream or one JSON body after the pacer says the output is done.

use crate::protocol::StreamOptions;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::header::HeaderValue;
use http::Response;

use crate::config::{SimConfig, TimingModel};
use crate::engine::{block_hashes, Progress, Submission};
use crate::fault::ResponseShape;
use crate::handlers::{response, unix_secs, SimState, JSON};
use crate::native::NativeRoute;
use crate::pacer::{PaceInfo, Pacer};
use crate::plan::{plan, GenerationPlan};
use crate::prompt::{chat_prompt, completion_prompts};
use crate::protocol::{parse_json, ApiError, ChatRequest, CompletionRequest, GenerationFields};
use crate::response::{generation_body, ChatReasoning};
use crate::sse::{Api, StreamFormat, UsageOptions};
use crate::sse_native::NativeKind;
use crate::stream::{SimBody, TokenStream};
use crate::truth::{GroundTruth, TruthRecorder};

/// Bodies above this size are parsed and tokenized on the blocking pool, so a long prompt does
/// not delay other streams' events on the I/O workers.
const INLINE_BODY_BYTES: usize = 4096;

/// A planned request: the plan, the request's fields and, for the engine's prefix cache, the
/// block-hash chain of each prompt; the native dialect of the answer, and for a transcription
/// the audio seconds and whether the answer is plain text.
struct Prepared {
    plan: GenerationPlan,
    fields: GenerationFields,
    blocks: Vec<Vec<u64>>,
    native: Option<NativeKind>,
    audio: Option<(f64, bool)>,
}

/// A generation route: an OpenAI API or a native dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gen {
    Api(Api),
    Native(NativeRoute),
    /// `/v1/audio/transcriptions` (chat-shaped `transcription.chunk` streams).
    Transcription,
}

impl Gen {
    /// The OpenAI API whose chunk layout and reasoning rules apply (natives have none).
    fn api(self) -> Api {
        match self {
            Gen::Api(a) => a,
            Gen::Native(NativeRoute::Anthropic) | Gen::Transcription => Api::Chat,
            Gen::Native(_) => Api::Completions,
        }
    }

    fn path(self) -> &'static str {
        match self {
            Gen::Api(a) => a.path(),
            Gen::Native(r) => r.path(),
            Gen::Transcription => "/v1/audio/transcriptions",
        }
    }
}

/// Parsing, tokenization and planning: the CPU part of a generation request.
fn prepare(
    state: &SimState,
    gen: Gen,
    body: &[u8],
    content_type: Option<&str>,
) -> Result<Prepared, ApiError> {
    let config = &state.config;
    let tok = config.tokenizer.as_ref();
    let api = match gen {
        Gen::Api(a) => a,
        Gen::Native(route) => {
            let r = crate::native::parse(route, body, tok)?;
            state.check_model(r.fields.model.as_deref())?;
            let plan = plan(&r.prompts, &r.fields, r.max_tokens, config, route.salt())?;
            let blocks = prefix_blocks(config, &r.prompts);
            return Ok(Prepared { plan, fields: r.fields, blocks, native: Some(r.kind), audio: None });
        }
        Gen::Transcription => {
            let t = crate::audio::parse(body, content_type, tok)?;
            state.check_model(t.fields.model.as_deref())?;
            let prompts = [t.prompt];
            let plan = plan(&prompts, &t.fields, t.max_tokens, config, 0xa0d1)?;
            let blocks = prefix_blocks(config, &prompts);
            let audio = Some((t.seconds, t.text_format));
            return Ok(Prepared { plan, fields: t.fields, blocks, native: None, audio });
        }
    };
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
    let blocks = prefix_blocks(config, &prompts);
    Ok(Prepared { plan, fields, blocks, native: None, audio: None })
}

/// The block-hash chains of the prompts for the engine's prefix cache (empty without it).
fn prefix_blocks(config: &SimConfig, prompts: &[crate::prompt::PromptInfo]) -> Vec<Vec<u64>> {
    match &config.timing {
        TimingModel::Engine(e) if e.prefix_caching => {
            prompts.iter().map(|p| block_hashes(&p.ids, e.block_size)).collect()
        }
        _ => Vec::new(),
    }
}

pub(crate) async fn generate(
    state: &Arc<SimState>,
    gen: Gen,
    body: Bytes,
    received: Instant,
    header_id: &Option<String>,
    fault_key: Option<&str>,
    content_type: Option<String>,
) -> Result<Response<SimBody>, ApiError> {
    let Prepared { plan, fields, blocks, native, audio } =
        prepare_request(state, gen, body, content_type).await?;
    let base_id = header_id.clone().or(fields.request_id.clone()).unwrap_or_else(|| state.fresh_id());
    let id = format!("{}{base_id}", id_prefix(state, gen));
    let stream = fields.stream.unwrap_or(false);
    let truth = state.truth.as_ref().map(|log| {
        TruthRecorder::new(
            log.clone(),
            GroundTruth {
                request_id: header_id.clone().unwrap_or(base_id),
                endpoint: gen.path(),
                stream,
                received,
                events: Vec::with_capacity(plan.ticks() as usize),
                done: None,
                prompt_tokens: plan.prompt_tokens,
                completion_tokens: plan.completion_tokens(),
                reasoning_tokens: reasoning_of(&state.config, gen, &plan),
            },
        )
    });
    let pacer = make_pacer(state, &plan, blocks, received)?;
    let created = unix_secs();
    let answer = Answer { state, gen, id, created, plan, pacer, truth, native, received };
    if stream {
        return Ok(answer.stream(fields.stream_options, fault_key));
    }
    Ok(answer.whole(audio, fault_key).await)
}

/// Parses the request and plans its answer; large bodies are parsed off the runtime.
async fn prepare_request(
    state: &Arc<SimState>,
    gen: Gen,
    body: Bytes,
    content_type: Option<String>,
) -> Result<Prepared, ApiError> {
    if body.len() <= INLINE_BODY_BYTES {
        return prepare(state, gen, &body, content_type.as_deref());
    }
    let st = state.clone();
    tokio::task::spawn_blocking(move || prepare(&st, gen, &body, content_type.as_deref())).await.map_err(
        |e| ApiError {
            status: 500,
            kind: "InternalServerError",
            message: format!("request preparation failed: {e}"),
        },
    )?
}

/// The prefix of the response id, as each server spells it.
fn id_prefix(state: &SimState, gen: Gen) -> &'static str {
    let b = state.behaviour;
    match gen {
        Gen::Native(NativeRoute::Anthropic) => "msg_",
        Gen::Native(_) => "",
        Gen::Transcription => "trsc-",
        Gen::Api(Api::Completions) => b.completion_id_prefix,
        Gen::Api(Api::Chat) => b.chat_id_prefix,
        Gen::Api(Api::Responses) => gen.api().id_prefix(),
    }
}

/// One planned answer, sent as a stream or as a whole body.
struct Answer<'a> {
    state: &'a Arc<SimState>,
    gen: Gen,
    id: String,
    /// The `created` field (Unix seconds when the request was taken).
    created: u64,
    plan: GenerationPlan,
    pacer: Pacer,
    truth: Option<TruthRecorder>,
    native: Option<NativeKind>,
    received: Instant,
}

impl Answer<'_> {
    /// An event stream paced token by token.
    fn stream(self, stream_options: Option<StreamOptions>, fault_key: Option<&str>) -> Response<SimBody> {
        let Answer { state, gen, id, created, plan, pacer, truth, native, received } = self;
        let (config, api) = (&state.config, gen.api());
        let model = config.model.as_str();
        let present = stream_options.is_some();
        let so = stream_options.unwrap_or_default();
        let include_usage = present && so.include_usage.unwrap_or(true);
        let usage = UsageOptions {
            include_usage,
            continuous: include_usage && so.continuous_usage_stats.unwrap_or(false),
            details: config.prompt_tokens_details,
        };
        let reasoning = if reasoning_of(config, gen, &plan) > 0 { config.reasoning_tokens } else { 0 };
        let mut fmt = StreamFormat::new(api, &id, created, model, &plan, usage)
            .with_reasoning(config.reasoning_field, &plan)
            .with_behaviour(state.behaviour, received);
        if gen == Gen::Transcription {
            fmt = fmt.with_object("transcription.chunk");
        }
        let shape =
            if api == Api::Responses { ResponseShape::TypedEventStream } else { ResponseShape::ChunkStream };
        // Native streams get the pre-response faults only.
        let stream_faults = match native {
            Some(kind) => {
                fmt = fmt.with_native(crate::native::format(kind, &id, model, &plan, received));
                None
            }
            None => state.faults.stream(&state.faults.plan(shape, fault_key), plan.ticks()),
        };
        let mut s = TokenStream::new(plan, fmt, state.vocab.clone(), pacer, truth).with_faults(stream_faults);
        if reasoning > 0 {
            s = s.with_reasoning(reasoning, state.reasoning_counter());
        }
        let mut r = response(200, Some("text/event-stream; charset=utf-8"), SimBody::Stream(Box::new(s)));
        r.headers_mut().insert("cache-control", HeaderValue::from_static("no-cache"));
        r
    }

    /// A whole body, sent when every token is due.
    async fn whole(self, audio: Option<(f64, bool)>, fault_key: Option<&str>) -> Response<SimBody> {
        let Answer { state, gen, id, created, plan, mut pacer, truth, native, received } = self;
        let (config, api) = (&state.config, gen.api());
        let model = config.model.as_str();
        pacer.wait_all().await;
        let details = config.prompt_tokens_details.then(|| pacer.cached_tokens());
        let reasoning_total = reasoning_of(config, gen, &plan);
        let reasoning = if reasoning_total > 0 { config.reasoning_tokens } else { 0 };
        let (content_type, body) = match (native, api) {
            _ if audio.is_some() => transcription_body(state, &plan, audio.unwrap_or_default()),
            (Some(kind), _) => {
                let f = crate::native::format(kind, &id, model, &plan, received);
                (JSON, crate::native::body(&f, kind, &id, model, &plan, &state.vocab))
            }
            (None, Api::Responses) => {
                let cached = Some(pacer.cached_tokens()).filter(|_| config.prompt_tokens_details);
                (JSON, crate::responses::body(&id, created, model, &plan, &state.vocab, cached, reasoning))
            }
            (None, _) => {
                let reasoning = ChatReasoning { field: config.reasoning_field, tokens: reasoning };
                (JSON, generation_body(api, &id, created, model, &plan, &state.vocab, details, reasoning))
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
        // Native and transcription answers get the pre-response faults only.
        let out = match native.is_some() || audio.is_some() {
            true => SimBody::full(body),
            false => state.faults.json_body(&state.faults.plan(ResponseShape::JsonBody, fault_key), body),
        };
        response(200, Some(content_type), out)
    }
}

/// A transcription's answer: plain text or `{"text", "usage"}` (`(seconds, text_format)`).
fn transcription_body(
    state: &SimState,
    plan: &GenerationPlan,
    (seconds, text_format): (f64, bool),
) -> (&'static str, Bytes) {
    let text =
        plan.choices.first().map(|c| state.vocab.text(c.seed, u64::from(c.tokens))).unwrap_or_default();
    if text_format {
        return ("text/plain; charset=utf-8", Bytes::from(text));
    }
    let v =
        serde_json::json!({"text": text, "usage": {"type": "duration", "seconds": seconds.ceil() as u64}});
    (JSON, Bytes::from(v.to_string()))
}

/// Reasoning tokens of a request's output: the first `--sim-reasoning-tokens` of each choice,
/// for the chat and Responses APIs (completions have no reasoning field).
fn reasoning_of(config: &SimConfig, gen: Gen, plan: &GenerationPlan) -> u32 {
    if matches!(gen, Gen::Api(Api::Completions) | Gen::Native(_) | Gen::Transcription)
        || config.reasoning_tokens == 0
    {
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

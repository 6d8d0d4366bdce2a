//! Native dialect endpoints: request bodies (TGI `/generate` and `/generate_stream`, SGLang
//! `/generate`, llama.cpp `/completion`, Anthropic `/v1/messages`) turned into the same prompts,
//! fields and plans as the OpenAI routes, and their non-streamed answers. Streams are in
//! `sse_native.rs`.

use bytes::Bytes;
use serde::Deserialize;
use serde_json::{json, Value};
use servebench_core::TextTokenizer;

use crate::plan::{Finish, GenerationPlan};
use crate::prompt::{chat_prompt, completion_prompts, PromptInfo};
use crate::protocol::{
    parse_json, ApiError, ChatMessage, ContentPart, GenerationFields, MessageContent, PromptField,
};
use crate::sse_native::{NativeFormat, NativeKind};
use crate::vocab::OutputVocab;

/// A native generation route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NativeRoute {
    /// TGI `/generate` (one JSON answer).
    TgiGenerate,
    /// TGI `/generate_stream`.
    TgiStream,
    /// SGLang `/generate` (streamed with `"stream": true`).
    Sglang,
    /// llama.cpp `/completion`.
    LlamaCpp,
    /// Anthropic `/v1/messages`.
    Anthropic,
}

impl NativeRoute {
    pub(crate) fn path(self) -> &'static str {
        match self {
            NativeRoute::TgiGenerate | NativeRoute::Sglang => "/generate",
            NativeRoute::TgiStream => "/generate_stream",
            NativeRoute::LlamaCpp => "/completion",
            NativeRoute::Anthropic => "/v1/messages",
        }
    }

    /// `/generate` is TGI's or SGLang's: TGI bodies have `inputs`.
    pub(crate) fn of(path: &str, body: &[u8], b: &crate::personality::Behaviour) -> Option<NativeRoute> {
        match path {
            "/generate" if b.routes.tgi && (!b.routes.sglang || looks_like_tgi(body)) => {
                Some(NativeRoute::TgiGenerate)
            }
            "/generate" => Some(NativeRoute::Sglang),
            "/generate_stream" => Some(NativeRoute::TgiStream),
            "/completion" => Some(NativeRoute::LlamaCpp),
            "/v1/messages" => Some(NativeRoute::Anthropic),
            _ => None,
        }
    }

    /// Seed salt of the plans (separates the routes like completions from chat).
    pub(crate) fn salt(self) -> u64 {
        match self {
            NativeRoute::TgiGenerate | NativeRoute::TgiStream => 0x7619,
            NativeRoute::Sglang => 0x5c1a,
            NativeRoute::LlamaCpp => 0x11a3,
            NativeRoute::Anthropic => 0xa17c,
        }
    }

    /// The error shape of the route (whatever the personality, a route answers in its own).
    pub(crate) fn error_body(self, e: &ApiError) -> (u16, Bytes) {
        use crate::personality::ErrorStyle;
        match self {
            NativeRoute::TgiGenerate | NativeRoute::TgiStream => crate::wire::error_body(ErrorStyle::Tgi, e),
            NativeRoute::Sglang => crate::wire::error_body(ErrorStyle::Sglang, e),
            NativeRoute::LlamaCpp => crate::wire::error_body(ErrorStyle::LlamaCpp, e),
            NativeRoute::Anthropic => {
                let kind = match e.status {
                    404 => "not_found_error",
                    429 => "rate_limit_error",
                    529 | 503 => "overloaded_error",
                    s if s >= 500 => "api_error",
                    _ => "invalid_request_error",
                };
                let v = json!({"type": "error", "error": {"type": kind, "message": e.message}});
                (e.status, Bytes::from(v.to_string()))
            }
        }
    }
}

fn looks_like_tgi(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body).is_ok_and(|v| v.get("inputs").is_some())
}

/// A parsed native request.
pub(crate) struct NativeRequest {
    pub prompts: Vec<PromptInfo>,
    pub fields: GenerationFields,
    pub max_tokens: Option<i64>,
    pub kind: NativeKind,
}

#[derive(Deserialize)]
struct TgiRequest {
    inputs: String,
    #[serde(default)]
    parameters: Option<TgiParameters>,
}

#[derive(Deserialize, Default)]
struct TgiParameters {
    #[serde(default)]
    max_new_tokens: Option<i64>,
    #[serde(default)]
    details: Option<bool>,
    #[serde(default)]
    seed: Option<i64>,
}

#[derive(Deserialize)]
struct SglangRequest {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    input_ids: Option<Vec<i64>>,
    #[serde(default)]
    sampling_params: Option<SglangSampling>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    rid: Option<String>,
}

#[derive(Deserialize, Default)]
struct SglangSampling {
    #[serde(default)]
    max_new_tokens: Option<i64>,
    #[serde(default)]
    min_new_tokens: Option<i64>,
    #[serde(default)]
    ignore_eos: Option<bool>,
}

#[derive(Deserialize)]
struct LlamaRequest {
    #[serde(default)]
    prompt: Option<PromptField>,
    #[serde(default)]
    n_predict: Option<i64>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    ignore_eos: Option<bool>,
}

#[derive(Deserialize)]
struct AnthropicRequest {
    #[serde(default)]
    model: Option<String>,
    max_tokens: i64,
    messages: Vec<AnthropicMessage>,
    #[serde(default)]
    system: Option<AnthropicContent>,
    #[serde(default)]
    stream: Option<bool>,
    #[serde(default)]
    ignore_eos: Option<bool>,
}

#[derive(Deserialize)]
struct AnthropicMessage {
    role: String,
    content: AnthropicContent,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AnthropicContent {
    Text(String),
    Blocks(Vec<Value>),
}

impl AnthropicContent {
    /// As chat content: text blocks as text parts, image blocks as image parts.
    fn into_content(self) -> MessageContent {
        match self {
            AnthropicContent::Text(t) => MessageContent::Text(t),
            AnthropicContent::Blocks(blocks) => MessageContent::Parts(
                blocks
                    .into_iter()
                    .map(|b| {
                        let kind = b.get("type").and_then(Value::as_str).unwrap_or("text").to_owned();
                        let text = b.get("text").and_then(Value::as_str).map(str::to_owned);
                        let mut part = ContentPart::of(kind, text);
                        if part.kind == "image" {
                            part.image_url = anthropic_image(&b).map(Value::String);
                        }
                        part
                    })
                    .collect(),
            ),
        }
    }
}

/// The URL of an Anthropic image block: its `source` as a `data:` URL (`base64`) or its `url`.
fn anthropic_image(block: &Value) -> Option<String> {
    let src = block.get("source")?;
    match src.get("type").and_then(Value::as_str)? {
        "base64" => {
            let mime = src.get("media_type").and_then(Value::as_str).unwrap_or("image/png");
            Some(format!("data:{mime};base64,{}", src.get("data").and_then(Value::as_str)?))
        }
        _ => src.get("url").and_then(Value::as_str).map(str::to_owned),
    }
}

/// Parses the body of `route`.
pub(crate) fn parse(
    route: NativeRoute,
    body: &[u8],
    tok: &dyn TextTokenizer,
) -> Result<NativeRequest, ApiError> {
    match route {
        NativeRoute::TgiGenerate | NativeRoute::TgiStream => {
            let r: TgiRequest = parse_json(body)?;
            if r.inputs.is_empty() {
                return Err(ApiError::bad_request("Input validation error: `inputs` cannot be empty"));
            }
            let p = r.parameters.unwrap_or_default();
            let prompts = completion_prompts(Some(&PromptField::Text(r.inputs)), tok)?;
            // TGI's `/generate` answers one JSON body whatever `stream` says.
            let stream = route == NativeRoute::TgiStream;
            let fields =
                GenerationFields { stream: Some(stream), seed: p.seed, ..GenerationFields::default() };
            let kind = NativeKind::Tgi { details: p.details.unwrap_or(false) };
            Ok(NativeRequest { prompts, fields, max_tokens: p.max_new_tokens, kind })
        }
        NativeRoute::Sglang => {
            let r: SglangRequest = parse_json(body)?;
            let field = match (r.text, r.input_ids) {
                (Some(t), _) => PromptField::Text(t),
                (None, Some(ids)) => PromptField::Ids(ids),
                (None, None) => {
                    return Err(ApiError::bad_request("Either text or input_ids should be provided."))
                }
            };
            let prompts = completion_prompts(Some(&field), tok)?;
            let s = r.sampling_params.unwrap_or_default();
            let fields = GenerationFields {
                stream: r.stream,
                ignore_eos: s.ignore_eos,
                min_tokens: s.min_new_tokens,
                request_id: r.rid,
                ..GenerationFields::default()
            };
            Ok(NativeRequest { prompts, fields, max_tokens: s.max_new_tokens, kind: NativeKind::Sglang })
        }
        NativeRoute::LlamaCpp => {
            let r: LlamaRequest = parse_json(body)?;
            let prompts = completion_prompts(r.prompt.as_ref(), tok)
                .map_err(|_| ApiError::bad_request("\"prompt\" must be provided"))?;
            let fields = GenerationFields {
                stream: r.stream,
                ignore_eos: r.ignore_eos,
                ..GenerationFields::default()
            };
            // `n_predict: -1` (the default) is "until the end of sequence or the context".
            let max = r.n_predict.filter(|&n| n >= 0);
            Ok(NativeRequest { prompts, fields, max_tokens: max, kind: NativeKind::LlamaCpp })
        }
        NativeRoute::Anthropic => {
            let r: AnthropicRequest = parse_json(body)?;
            if r.messages.is_empty() {
                return Err(ApiError::bad_request("messages: at least one message is required"));
            }
            let mut messages = Vec::with_capacity(r.messages.len() + 1);
            if let Some(system) = r.system {
                messages.push(ChatMessage { role: "system".into(), content: Some(system.into_content()) });
            }
            for m in r.messages {
                messages.push(ChatMessage { role: m.role, content: Some(m.content.into_content()) });
            }
            let prompt = chat_prompt(&messages, true, tok)?;
            let fields = GenerationFields {
                model: r.model,
                stream: r.stream,
                ignore_eos: r.ignore_eos,
                ..GenerationFields::default()
            };
            Ok(NativeRequest {
                prompts: vec![prompt],
                fields,
                max_tokens: Some(r.max_tokens),
                kind: NativeKind::Anthropic,
            })
        }
    }
}

/// The formatter of a native answer (first choice).
pub(crate) fn format(
    kind: NativeKind,
    id: &str,
    model: &str,
    plan: &GenerationPlan,
    received: std::time::Instant,
) -> NativeFormat {
    let (seed, tokens, finish) =
        plan.choices.first().map_or((0, 0, Finish::Stop), |c| (c.seed, c.tokens, c.finish));
    NativeFormat::new(kind, id, model, plan.prompt_tokens, seed, tokens, finish, received)
}

/// The non-streamed answer of a native route.
pub(crate) fn body(
    f: &NativeFormat,
    kind: NativeKind,
    id: &str,
    model: &str,
    plan: &GenerationPlan,
    vocab: &OutputVocab,
) -> Bytes {
    let Some(c) = plan.choices.first() else { return Bytes::new() };
    let text = vocab.text(c.seed, u64::from(c.tokens));
    let length = c.finish == Finish::Length;
    let v = match kind {
        NativeKind::Tgi { details } => {
            let reason = if length { "length" } else { "eos_token" };
            match details {
                true => json!({"generated_text": text, "details": {"finish_reason": reason,
                    "generated_tokens": c.tokens, "input_length": plan.prompt_tokens, "seed": null,
                    "prefill": [], "tokens": []}}),
                false => json!({"generated_text": text}),
            }
        }
        NativeKind::Sglang => {
            let finish = match length {
                true => json!({"type": "length", "length": c.tokens}),
                false => json!({"type": "stop", "matched": 2}),
            };
            json!({"text": text, "meta_info": {"id": id, "finish_reason": finish,
                "prompt_tokens": plan.prompt_tokens, "completion_tokens": c.tokens, "cached_tokens": 0}})
        }
        NativeKind::LlamaCpp => {
            let mut out = Vec::with_capacity(text.len() + 512);
            f.push_llamacpp_final(&mut out, true, Some(vocab));
            return Bytes::from(out);
        }
        NativeKind::Anthropic => json!({
            "id": id, "type": "message", "role": "assistant", "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": if length { "max_tokens" } else { "end_turn" }, "stop_sequence": null,
            "usage": {"input_tokens": plan.prompt_tokens, "output_tokens": c.tokens}
        }),
    };
    Bytes::from(v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::personality::Personality;
    use crate::test_support::NullTok;

    #[test]
    fn generate_is_tgi_or_sglang_by_body() {
        let sim = Personality::Sim.behaviour();
        assert_eq!(NativeRoute::of("/generate", br#"{"inputs":"x"}"#, sim), Some(NativeRoute::TgiGenerate));
        assert_eq!(NativeRoute::of("/generate", br#"{"text":"x"}"#, sim), Some(NativeRoute::Sglang));
        let tgi = Personality::Tgi.behaviour();
        assert_eq!(NativeRoute::of("/generate", br#"{"text":"x"}"#, tgi), Some(NativeRoute::TgiGenerate));
    }

    #[test]
    fn native_request_bodies_parse_into_generation_fields() {
        let r = parse(
            NativeRoute::TgiStream,
            br#"{"inputs":"a b","parameters":{"max_new_tokens":5,"details":true}}"#,
            &NullTok,
        )
        .unwrap();
        assert_eq!(r.max_tokens, Some(5));
        assert_eq!(r.fields.stream, Some(true));
        assert_eq!(r.kind, NativeKind::Tgi { details: true });
        let r = parse(NativeRoute::LlamaCpp, br#"{"prompt":[1,2,3],"n_predict":-1}"#, &NullTok).unwrap();
        assert_eq!(r.max_tokens, None);
        assert_eq!(r.prompts[0].tokens, 3);
        let r = parse(
            NativeRoute::Anthropic,
            br#"{"model":"m","max_tokens":4,"system":"s","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}"#,
            &NullTok,
        )
        .unwrap();
        assert_eq!(r.max_tokens, Some(4));
        assert!(parse(NativeRoute::Anthropic, br#"{"max_tokens":4,"messages":[]}"#, &NullTok).is_err());
        assert!(parse(NativeRoute::Sglang, br#"{"sampling_params":{}}"#, &NullTok).is_err());
        let (s, b) = NativeRoute::Anthropic.error_body(&ApiError::bad_request("x"));
        assert_eq!(s, 400);
        let v: Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["error"]["type"], "invalid_request_error");
    }
}

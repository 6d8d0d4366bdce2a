//! Request bodies the simulator understands (the subset of vLLM's OpenAI-compatible API that
//! shapes a response; every other field is accepted and ignored) and the error body.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

/// `prompt` of `/v1/completions`: text, a batch of texts, token ids, or a batch of token ids.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum PromptField {
    Text(String),
    Texts(Vec<String>),
    Ids(Vec<i64>),
    IdBatches(Vec<Vec<i64>>),
}

/// `stream_options`. As in vLLM, `include_usage` defaults to true once the object is present.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct StreamOptions {
    #[serde(default)]
    pub include_usage: Option<bool>,
    #[serde(default)]
    pub continuous_usage_stats: Option<bool>,
}

/// Fields shared by completions and chat requests that shape the generation.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct GenerationFields {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<i64>,
    #[serde(default)]
    pub min_tokens: Option<i64>,
    #[serde(default)]
    pub ignore_eos: Option<bool>,
    #[serde(default)]
    pub stream: Option<bool>,
    #[serde(default)]
    pub stream_options: Option<StreamOptions>,
    #[serde(default)]
    pub n: Option<i64>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub request_id: Option<String>,
}

/// `POST /v1/completions`.
#[derive(Debug, Deserialize)]
pub(crate) struct CompletionRequest {
    #[serde(default)]
    pub prompt: Option<PromptField>,
    #[serde(flatten)]
    pub gen: GenerationFields,
}

/// `POST /v1/chat/completions`.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatRequest {
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub max_completion_tokens: Option<i64>,
    #[serde(default)]
    pub add_generation_prompt: Option<bool>,
    #[serde(flatten)]
    pub gen: GenerationFields,
}

/// One chat message.
#[derive(Debug, Deserialize)]
pub(crate) struct ChatMessage {
    pub role: String,
    #[serde(default)]
    pub content: Option<MessageContent>,
}

/// Message content: a string or a list of typed parts.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

/// One content part: `text`, or media counted by `media.rs` (`image_url`, `input_audio`,
/// `audio_url`); other types are rejected.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct ContentPart {
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub text: Option<String>,
    /// `{"url": ...}` (or a plain string).
    #[serde(default)]
    pub image_url: Option<serde_json::Value>,
    /// `{"data": base64, "format": "wav"}`.
    #[serde(default)]
    pub input_audio: Option<serde_json::Value>,
    /// `{"url": ...}`.
    #[serde(default)]
    pub audio_url: Option<serde_json::Value>,
    /// `{"url": ...}` (MMVU and other video sets).
    #[serde(default)]
    pub video_url: Option<serde_json::Value>,
}

impl ContentPart {
    /// A part of `kind` with `text`.
    pub(crate) fn of(kind: String, text: Option<String>) -> Self {
        ContentPart { kind, text, ..ContentPart::default() }
    }
}

/// `POST /tokenize`: `{model, prompt}` or `{model, messages}`.
#[derive(Debug, Deserialize)]
pub(crate) struct TokenizeRequest {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub messages: Option<Vec<ChatMessage>>,
    #[serde(default)]
    pub add_special_tokens: Option<bool>,
    #[serde(default)]
    pub add_generation_prompt: Option<bool>,
}

/// `POST /detokenize`.
#[derive(Debug, Deserialize)]
pub(crate) struct DetokenizeRequest {
    #[serde(default)]
    pub model: Option<String>,
    pub tokens: Vec<i64>,
}

/// An error answer in vLLM's shape: `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    pub status: u16,
    pub kind: &'static str,
    pub message: String,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    error: ErrorInfo<'a>,
}

#[derive(Serialize)]
struct ErrorInfo<'a> {
    message: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    param: Option<&'a str>,
    code: u16,
}

impl ApiError {
    /// 400 `BadRequestError`.
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        ApiError { status: 400, kind: "BadRequestError", message: message.into() }
    }

    /// 404 `NotFoundError` for a model this server does not serve (vLLM's wording).
    pub(crate) fn model_not_found(model: &str) -> Self {
        ApiError {
            status: 404,
            kind: "NotFoundError",
            message: format!("The model `{model}` does not exist."),
        }
    }

    /// The JSON body.
    pub(crate) fn body(&self) -> Bytes {
        let body = ErrorBody {
            error: ErrorInfo { message: &self.message, kind: self.kind, param: None, code: self.status },
        };
        Bytes::from(serde_json::to_vec(&body).unwrap_or_default())
    }
}

/// Parses a JSON body into `T`, mapping failures to vLLM-style 400 errors.
pub(crate) fn parse_json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            ApiError::bad_request(format!("JSON decode error: {e}"))
        } else {
            ApiError::bad_request(format!("Invalid request body: {e}"))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_body_has_vllm_shape() {
        let e = ApiError::model_not_found("x");
        let v: serde_json::Value = serde_json::from_slice(&e.body()).unwrap();
        assert_eq!(v["error"]["type"], "NotFoundError");
        assert_eq!(v["error"]["code"], 404);
        assert!(v["error"]["param"].is_null());
        assert_eq!(v["error"]["message"], "The model `x` does not exist.");
    }

    #[test]
    fn prompt_field_variants_parse() {
        let r: CompletionRequest = parse_json(br#"{"prompt":"hi","max_tokens":3,"extra":1}"#).unwrap();
        assert!(matches!(r.prompt, Some(PromptField::Text(_))));
        assert_eq!(r.gen.max_tokens, Some(3));
        let r: CompletionRequest = parse_json(br#"{"prompt":["a","b"]}"#).unwrap();
        assert!(matches!(r.prompt, Some(PromptField::Texts(v)) if v.len() == 2));
        let r: CompletionRequest = parse_json(br#"{"prompt":[1,2,3]}"#).unwrap();
        assert!(matches!(r.prompt, Some(PromptField::Ids(v)) if v.len() == 3));
        let r: CompletionRequest = parse_json(br#"{"prompt":[[1],[2,3]]}"#).unwrap();
        assert!(matches!(r.prompt, Some(PromptField::IdBatches(v)) if v.len() == 2));
        assert!(parse_json::<CompletionRequest>(b"{not json").is_err());
        assert!(parse_json::<CompletionRequest>(br#"{"prompt":{"x":1}}"#).is_err());
    }

    #[test]
    fn chat_content_variants_parse() {
        let r: ChatRequest = parse_json(
            br#"{"model":"m","messages":[{"role":"user","content":"hi"},
                {"role":"user","content":[{"type":"text","text":"a"}]},
                {"role":"assistant","content":null}],"max_completion_tokens":5}"#,
        )
        .unwrap();
        assert_eq!(r.messages.len(), 3);
        assert_eq!(r.max_completion_tokens, Some(5));
        assert!(parse_json::<ChatRequest>(br#"{"model":"m"}"#).is_err());
    }
}

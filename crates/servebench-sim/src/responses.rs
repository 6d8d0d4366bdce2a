//! `POST /v1/responses`: the request (its `input` becomes a chat prompt, counted with the real
//! tokenizer through the same ChatML template as chat) and the non-streamed response object.
//! The streamed events are formatted by `sse_responses.rs`; timing is the same as chat.
//!
//! Accepted `input`: a string (one user message) or a list of items `{role, content}` /
//! `{type: "message", role, content}` whose content is a string or parts of type `input_text`,
//! `output_text` or `text`. `instructions` becomes a system message. Other part types (images,
//! files) get 400, as a text-only server answers. `max_output_tokens` limits the output.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use servebench_core::TextTokenizer;

use crate::plan::{Finish, GenerationPlan};
use crate::prompt::{chat_prompt, PromptInfo};
use crate::protocol::{parse_json, ApiError, ChatMessage, ContentPart, GenerationFields, MessageContent};
use crate::vocab::OutputVocab;

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum InputField {
    Text(String),
    Items(Vec<InputItem>),
}

#[derive(Debug, Deserialize)]
struct InputItem {
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    content: Option<ItemContent>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum ItemContent {
    Text(String),
    Parts(Vec<Part>),
}

#[derive(Debug, Deserialize)]
struct Part {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    /// `input_image`: a URL string (or `{"url": ...}`).
    #[serde(default)]
    image_url: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct ResponsesRequest {
    #[serde(default)]
    input: Option<InputField>,
    #[serde(default)]
    instructions: Option<String>,
    #[serde(default)]
    max_output_tokens: Option<i64>,
    #[serde(flatten)]
    gen: GenerationFields,
}

/// Parses a Responses request: its prompt, the generation fields and the output limit.
pub(crate) fn prompt(
    body: &[u8],
    tok: &dyn TextTokenizer,
) -> Result<(PromptInfo, GenerationFields, Option<i64>), ApiError> {
    let r: ResponsesRequest = parse_json(body)?;
    let mut messages = Vec::new();
    if let Some(i) = r.instructions.filter(|i| !i.is_empty()) {
        messages.push(ChatMessage { role: "system".into(), content: Some(MessageContent::Text(i)) });
    }
    match r.input {
        None => return Err(ApiError::bad_request("Field required: input")),
        Some(InputField::Text(t)) => {
            messages.push(ChatMessage { role: "user".into(), content: Some(MessageContent::Text(t)) })
        }
        Some(InputField::Items(items)) if items.is_empty() => {
            return Err(ApiError::bad_request("input must not be empty"))
        }
        Some(InputField::Items(items)) => {
            for item in items {
                let content = match item.content {
                    None => MessageContent::Text(String::new()),
                    Some(ItemContent::Text(t)) => MessageContent::Text(t),
                    Some(ItemContent::Parts(parts)) => {
                        let mut out = Vec::with_capacity(parts.len());
                        for p in parts {
                            match p.kind.as_str() {
                                "input_text" | "output_text" | "text" => {
                                    out.push(ContentPart::of("text".into(), Some(p.text.unwrap_or_default())))
                                }
                                // Counted by `media.rs` like a chat `image_url` part.
                                "input_image" => out.push(ContentPart {
                                    kind: "image_url".into(),
                                    image_url: p.image_url,
                                    ..ContentPart::default()
                                }),
                                other => {
                                    return Err(ApiError::bad_request(format!(
                                        "content part type '{other}' is not supported by this model"
                                    )))
                                }
                            }
                        }
                        MessageContent::Parts(out)
                    }
                };
                let role = item.role.unwrap_or_else(|| "user".into());
                messages.push(ChatMessage { role, content: Some(content) });
            }
        }
    }
    let p = chat_prompt(&messages, true, tok)?;
    Ok((p, r.gen, r.max_output_tokens))
}

#[derive(Serialize)]
struct OutputText {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
    annotations: [(); 0],
}

#[derive(Serialize)]
struct OutputItem {
    id: String,
    #[serde(rename = "type")]
    kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
    status: &'static str,
    content: Vec<OutputText>,
}

#[derive(Serialize)]
struct InputDetails {
    cached_tokens: u32,
}

#[derive(Serialize)]
struct OutputDetails {
    reasoning_tokens: u32,
}

#[derive(Serialize)]
struct Usage {
    input_tokens: u32,
    input_tokens_details: InputDetails,
    output_tokens: u32,
    output_tokens_details: OutputDetails,
    total_tokens: u64,
}

#[derive(Serialize)]
struct Incomplete {
    reason: &'static str,
}

#[derive(Serialize)]
struct ResponseObj<'a> {
    id: &'a str,
    object: &'static str,
    created_at: u64,
    model: &'a str,
    status: &'static str,
    incomplete_details: Option<Incomplete>,
    error: Option<()>,
    output: Vec<OutputItem>,
    usage: Usage,
}

/// The body of a non-streamed Responses answer: a reasoning item (when the output has
/// reasoning tokens) and a message item, with usage.
pub(crate) fn body(
    id: &str,
    created: u64,
    model: &str,
    plan: &GenerationPlan,
    vocab: &OutputVocab,
    cached: Option<u32>,
    reasoning_per_choice: u32,
) -> Bytes {
    let mut output = Vec::new();
    let mut reasoning_total = 0;
    let mut length = false;
    // The Responses API has one output; with `n` > 1 (not part of the API) the first choice.
    if let Some(c) = plan.choices.first() {
        let r = c.tokens.min(reasoning_per_choice);
        reasoning_total = r;
        length = c.finish == Finish::Length;
        let short = id.trim_start_matches("resp_");
        if r > 0 {
            let mut t = Vec::new();
            vocab.push_text(c.seed, 0, u64::from(r), &mut t);
            output.push(OutputItem {
                id: format!("rs_{short}_0"),
                kind: "reasoning",
                role: None,
                status: "completed",
                content: vec![OutputText {
                    kind: "reasoning_text",
                    text: String::from_utf8(t).unwrap_or_default(),
                    annotations: [],
                }],
            });
        }
        let mut t = Vec::new();
        vocab.push_text(c.seed, u64::from(r), u64::from(c.tokens - r), &mut t);
        output.push(OutputItem {
            id: format!("msg_{short}_{}", output.len()),
            kind: "message",
            role: Some("assistant"),
            status: "completed",
            content: vec![OutputText {
                kind: "output_text",
                text: String::from_utf8(t).unwrap_or_default(),
                annotations: [],
            }],
        });
    }
    let out_tokens = plan.choices.first().map_or(0, |c| c.tokens);
    let obj = ResponseObj {
        id,
        object: "response",
        created_at: created,
        model,
        status: if length { "incomplete" } else { "completed" },
        incomplete_details: length.then_some(Incomplete { reason: "max_output_tokens" }),
        error: None,
        output,
        usage: Usage {
            input_tokens: plan.prompt_tokens,
            input_tokens_details: InputDetails { cached_tokens: cached.unwrap_or(0) },
            output_tokens: out_tokens,
            output_tokens_details: OutputDetails { reasoning_tokens: reasoning_total },
            total_tokens: u64::from(plan.prompt_tokens) + u64::from(out_tokens),
        },
    };
    Bytes::from(serde_json::to_vec(&obj).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::NullTok;

    #[test]
    fn input_forms_and_errors() {
        let tok: Box<dyn TextTokenizer> = Box::new(NullTok);
        let (a, g, max) =
            prompt(br#"{"model":"m","input":"hello","max_output_tokens":5,"store":false}"#, tok.as_ref())
                .unwrap();
        assert_eq!((g.model.as_deref(), max), (Some("m"), Some(5)));
        let (b, _, _) = prompt(
            br#"{"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hello"}]}]}"#,
            tok.as_ref(),
        )
        .unwrap();
        assert_eq!(a.tokens, b.tokens, "a string input is one user message");
        let (c, _, _) = prompt(br#"{"input":"hello","instructions":"be brief"}"#, tok.as_ref()).unwrap();
        assert!(c.tokens > a.tokens);
        for bad in [
            &br#"{"model":"m"}"#[..],
            br#"{"input":[]}"#,
            br#"{"input":5}"#,
            br#"{"input":[{"role":"user","content":[{"type":"input_file","file_id":"x"}]}]}"#,
            br#"{"input":[{"role":"user","content":[{"type":"input_image"}]}]}"#,
            b"{nope",
        ] {
            assert_eq!(prompt(bad, tok.as_ref()).unwrap_err().status, 400);
        }
    }
}

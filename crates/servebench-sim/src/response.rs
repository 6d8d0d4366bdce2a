//! Non-streamed JSON bodies in vLLM's shapes (key order as vLLM emits them): completions,
//! chat completions, the model list, `/tokenize` and `/detokenize`.

use bytes::Bytes;
use serde::Serialize;

use crate::config::ReasoningField;
use crate::plan::GenerationPlan;
use crate::sse::Api;
use crate::vocab::OutputVocab;

#[derive(Serialize)]
struct Details {
    cached_tokens: u32,
}

#[derive(Serialize)]
struct Usage {
    prompt_tokens: u32,
    total_tokens: u64,
    completion_tokens: u32,
    prompt_tokens_details: Option<Details>,
}

impl Usage {
    fn of(plan: &GenerationPlan, details: Option<u32>) -> Self {
        let c = plan.completion_tokens();
        Usage {
            prompt_tokens: plan.prompt_tokens,
            total_tokens: u64::from(plan.prompt_tokens) + u64::from(c),
            completion_tokens: c,
            prompt_tokens_details: details.map(|cached_tokens| Details { cached_tokens }),
        }
    }
}

#[derive(Serialize)]
struct CompletionChoice {
    index: u32,
    text: String,
    logprobs: Option<()>,
    finish_reason: &'static str,
    stop_reason: Option<()>,
    prompt_logprobs: Option<()>,
}

/// A non-streamed chat message. The reasoning text goes into the configured field only (the
/// other one is left out); `content` is null when the whole output was reasoning, as vLLM's
/// reasoning parsers leave it.
#[derive(Serialize)]
struct ChatMessageOut {
    role: &'static str,
    content: Option<String>,
    tool_calls: [(); 0],
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning: Option<Option<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<Option<String>>,
}

/// Reasoning of a non-streamed chat answer: the first `tokens` tokens of every choice are
/// reasoning text, in the message field `field` (`reasoning` or `reasoning_content`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ChatReasoning {
    pub field: ReasoningField,
    pub tokens: u32,
}

impl ChatMessageOut {
    /// The message of a choice of `tokens` tokens seeded by `seed`: reasoning first (in the
    /// configured field, null without reasoning), then the content.
    fn of(vocab: &OutputVocab, seed: u64, tokens: u32, r: ChatReasoning) -> Self {
        let reasoning_tokens = tokens.min(r.tokens);
        let reasoning = (reasoning_tokens > 0).then(|| {
            let mut t = Vec::with_capacity(reasoning_tokens as usize * 5);
            vocab.push_text(seed, 0, u64::from(reasoning_tokens), &mut t);
            String::from_utf8(t).unwrap_or_default()
        });
        let content = (reasoning_tokens == 0 || tokens > reasoning_tokens).then(|| {
            let mut t = Vec::with_capacity((tokens - reasoning_tokens) as usize * 5);
            vocab.push_text(seed, u64::from(reasoning_tokens), u64::from(tokens - reasoning_tokens), &mut t);
            String::from_utf8(t).unwrap_or_default()
        });
        let (reasoning, reasoning_content) = match r.field {
            ReasoningField::Both => (Some(reasoning.clone()), Some(reasoning)),
            ReasoningField::Reasoning => (Some(reasoning), None),
            ReasoningField::ReasoningContent => (None, Some(reasoning)),
        };
        ChatMessageOut { role: "assistant", content, tool_calls: [], reasoning, reasoning_content }
    }
}

#[derive(Serialize)]
struct ChatChoice {
    index: u32,
    message: ChatMessageOut,
    logprobs: Option<()>,
    finish_reason: &'static str,
    stop_reason: Option<()>,
}

#[derive(Serialize)]
struct Generation<'a, C> {
    id: &'a str,
    object: &'static str,
    created: u64,
    model: &'a str,
    choices: Vec<C>,
    usage: Usage,
}

/// The body of a non-streamed completion or chat completion (`reasoning`: chat only; usage
/// counts reasoning tokens as completion tokens, as vLLM does).
#[allow(clippy::too_many_arguments)]
pub(crate) fn generation_body(
    api: Api,
    id: &str,
    created: u64,
    model: &str,
    plan: &GenerationPlan,
    vocab: &OutputVocab,
    details: Option<u32>,
    reasoning: ChatReasoning,
) -> Bytes {
    let usage = Usage::of(plan, details);
    let text = |seed: u64, tokens: u32| vocab.text(seed, u64::from(tokens));
    let json = match api {
        Api::Completions => serde_json::to_vec(&Generation {
            id,
            object: "text_completion",
            created,
            model,
            choices: plan
                .choices
                .iter()
                .map(|c| CompletionChoice {
                    index: c.index,
                    text: text(c.seed, c.tokens),
                    logprobs: None,
                    finish_reason: c.finish.as_str(),
                    stop_reason: None,
                    prompt_logprobs: None,
                })
                .collect(),
            usage,
        }),
        // `Api::Responses` bodies are built by `responses::body`; never reached.
        Api::Chat | Api::Responses => serde_json::to_vec(&Generation {
            id,
            object: "chat.completion",
            created,
            model,
            choices: plan
                .choices
                .iter()
                .map(|c| ChatChoice {
                    index: c.index,
                    message: ChatMessageOut::of(vocab, c.seed, c.tokens, reasoning),
                    logprobs: None,
                    finish_reason: c.finish.as_str(),
                    stop_reason: None,
                })
                .collect(),
            usage,
        }),
    };
    Bytes::from(json.unwrap_or_default())
}

#[derive(Serialize)]
struct ModelPermission<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    allow_create_engine: bool,
    allow_sampling: bool,
    allow_logprobs: bool,
    allow_search_indices: bool,
    allow_view: bool,
    allow_fine_tuning: bool,
    organization: &'static str,
    group: Option<()>,
    is_blocking: bool,
}

#[derive(Serialize)]
struct ModelCard<'a> {
    id: &'a str,
    object: &'static str,
    created: u64,
    owned_by: &'static str,
    root: &'a str,
    parent: Option<&'a str>,
    max_model_len: u32,
    permission: [ModelPermission<'a>; 1],
}

#[derive(Serialize)]
struct ModelList<'a> {
    object: &'static str,
    data: Vec<ModelCard<'a>>,
}

/// `GET /v1/models`.
pub(crate) fn models_body(
    model: &str,
    loras: &[String],
    created: u64,
    max_model_len: u32,
    perm_id: &str,
) -> Bytes {
    // The base model first (clients take the first entry), then each LoRA adapter with the
    // base model as its parent, as vLLM lists them.
    let names = std::iter::once((model, None)).chain(loras.iter().map(|l| (l.as_str(), Some(model))));
    let list = ModelList {
        object: "list",
        data: names
            .map(|(id, parent)| ModelCard {
                id,
                object: "model",
                created,
                owned_by: "servebench-sim",
                root: id,
                parent,
                max_model_len,
                permission: [ModelPermission {
                    id: perm_id,
                    object: "model_permission",
                    created,
                    allow_create_engine: false,
                    allow_sampling: true,
                    allow_logprobs: true,
                    allow_search_indices: false,
                    allow_view: true,
                    allow_fine_tuning: false,
                    organization: "*",
                    group: None,
                    is_blocking: false,
                }],
            })
            .collect(),
    };
    Bytes::from(serde_json::to_vec(&list).unwrap_or_default())
}

#[derive(Serialize)]
struct TokenizeOut<'a> {
    count: usize,
    max_model_len: u32,
    tokens: &'a [u32],
    token_strs: Option<()>,
}

/// `POST /tokenize`.
pub(crate) fn tokenize_body(tokens: &[u32], max_model_len: u32) -> Bytes {
    let out = TokenizeOut { count: tokens.len(), max_model_len, tokens, token_strs: None };
    Bytes::from(serde_json::to_vec(&out).unwrap_or_default())
}

#[derive(Serialize)]
struct DetokenizeOut<'a> {
    prompt: &'a str,
}

/// `POST /detokenize`.
pub(crate) fn detokenize_body(prompt: &str) -> Bytes {
    Bytes::from(serde_json::to_vec(&DetokenizeOut { prompt }).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{ChoicePlan, Finish};
    use crate::test_support::NullTok;

    #[test]
    fn whole_bodies_have_the_shape_of_each_api() {
        let plan = GenerationPlan {
            prompt_tokens: 4,
            choices: vec![ChoicePlan { index: 0, tokens: 3, finish: Finish::Stop, seed: 9 }],
            tokens_per_event: 1,
        };
        let vocab = OutputVocab::build(&NullTok);
        let none = ChatReasoning { field: ReasoningField::ReasoningContent, tokens: 0 };
        let b = generation_body(Api::Chat, "chatcmpl-x", 1, "m", &plan, &vocab, None, none);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["object"], "chat.completion");
        assert_eq!(v["choices"][0]["message"]["content"], " the the the");
        assert_eq!(v["choices"][0]["finish_reason"], "stop");
        assert_eq!(v["usage"]["total_tokens"], 7);
        assert!(v["usage"]["prompt_tokens_details"].is_null());
        assert!(v["choices"][0]["message"]["reasoning_content"].is_null());
        assert!(v["choices"][0]["message"].get("reasoning").is_none(), "only the configured field");
        let b = generation_body(Api::Completions, "cmpl-x", 1, "m", &plan, &vocab, Some(0), none);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        assert_eq!(v["choices"][0]["text"], " the the the");
        assert_eq!(v["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
        let v: serde_json::Value = serde_json::from_slice(&models_body("m", &[], 5, 99, "p")).unwrap();
        assert_eq!(v["data"][0]["max_model_len"], 99);
        assert_eq!(v["data"][0]["owned_by"], "servebench-sim");
        assert!(v["data"][0]["parent"].is_null());
        let loras = ["a".to_string()];
        let v: serde_json::Value = serde_json::from_slice(&models_body("m", &loras, 5, 99, "p")).unwrap();
        assert_eq!(v["data"][0]["id"], "m");
        assert_eq!(v["data"][1]["id"], "a");
        assert_eq!(v["data"][1]["parent"], "m");
        let v: serde_json::Value = serde_json::from_slice(&tokenize_body(&[1, 2], 9)).unwrap();
        assert_eq!(v["count"], 2);
        assert!(v["token_strs"].is_null());
    }

    #[test]
    fn chat_reasoning_goes_into_the_configured_field() {
        let plan = |tokens| GenerationPlan {
            prompt_tokens: 4,
            choices: vec![ChoicePlan { index: 0, tokens, finish: Finish::Length, seed: 9 }],
            tokens_per_event: 1,
        };
        let vocab = OutputVocab::build(&NullTok);
        let r = ChatReasoning { field: ReasoningField::Reasoning, tokens: 2 };
        let b = generation_body(Api::Chat, "chatcmpl-x", 1, "m", &plan(5), &vocab, None, r);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        let m = &v["choices"][0]["message"];
        assert_eq!(m["reasoning"], " the the");
        assert_eq!(m["content"], " the the the");
        assert!(m.get("reasoning_content").is_none());
        assert_eq!(v["usage"]["completion_tokens"], 5, "reasoning tokens are completion tokens");
        // The whole output is reasoning: no content, as vLLM's parsers leave it.
        let r = ChatReasoning { field: ReasoningField::ReasoningContent, tokens: 8 };
        let b = generation_body(Api::Chat, "chatcmpl-x", 1, "m", &plan(3), &vocab, None, r);
        let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
        let m = &v["choices"][0]["message"];
        assert_eq!(m["reasoning_content"], " the the the");
        assert!(m["content"].is_null());
        assert_eq!(v["usage"]["completion_tokens"], 3);
    }
}

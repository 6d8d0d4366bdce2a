//! Prompt handling: turning a completions `prompt` or chat `messages` into token counts with the
//! real tokenizer, and a content hash that seeds the response.
//!
//! Chat prompts are rendered with a ChatML template before counting, as a server applies its
//! chat template before tokenizing:
//!
//! ```text
//! <|im_start|>{role}\n{text}<|im_end|>\n      (per message)
//! <|im_start|>assistant\n                     (generation prompt, unless add_generation_prompt=false)
//! ```
//!
//! encoded without added special tokens (the template carries them). A message's text is its
//! string content, or its `text` parts joined with `\n`. With a tokenizer that knows the ChatML
//! markers the template overhead is small and fixed: with SmolLM2 it is 5 tokens per message
//! (`<|im_start|>`, role, `\n`, `<|im_end|>`, `\n`) + 4 for the generation prompt (`assistant`
//! is two tokens there). With other tokenizers the markers split into more tokens, but the count
//! is still a deterministic function of the messages that `/tokenize` reproduces exactly.
//! Model-specific default system prompts are not injected.

use servebench_core::TextTokenizer;

use crate::hash::Fnv;
use crate::protocol::{ApiError, ChatMessage, MessageContent, PromptField};

/// One prompt of a request after tokenization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PromptInfo {
    /// Token count the server reports in `usage.prompt_tokens`.
    pub tokens: u32,
    /// Hash of the prompt content (seeds output lengths and words).
    pub hash: u64,
    /// The token ids (the engine's prefix cache hashes them by block).
    pub ids: Vec<u32>,
}

fn encode_err(e: impl std::fmt::Display) -> ApiError {
    ApiError::bad_request(format!("tokenization failed: {e}"))
}

/// Tokenizes the prompt(s) of a completions request. Batches give several prompts.
pub(crate) fn completion_prompts(
    field: Option<&PromptField>,
    tok: &dyn TextTokenizer,
) -> Result<Vec<PromptInfo>, ApiError> {
    let missing = || ApiError::bad_request("Either prompt or prompt_embeds must be provided and non-empty.");
    let field = field.ok_or_else(missing)?;
    match field {
        PromptField::Text(text) => Ok(vec![text_prompt(text, tok)?]),
        PromptField::Texts(texts) if texts.is_empty() => Err(missing()),
        PromptField::Texts(texts) => texts.iter().map(|t| text_prompt(t, tok)).collect(),
        PromptField::Ids(ids) if ids.is_empty() => Err(missing()),
        PromptField::Ids(ids) => Ok(vec![id_prompt(ids, tok)?]),
        PromptField::IdBatches(batches) if batches.is_empty() => Err(missing()),
        PromptField::IdBatches(batches) => batches.iter().map(|ids| id_prompt(ids, tok)).collect(),
    }
}

fn text_prompt(text: &str, tok: &dyn TextTokenizer) -> Result<PromptInfo, ApiError> {
    let ids = tok.encode(text, true).map_err(encode_err)?;
    let hash = Fnv::new(1).bytes(text.as_bytes()).finish();
    Ok(PromptInfo { tokens: ids.len() as u32, hash, ids })
}

fn id_prompt(ids: &[i64], tok: &dyn TextTokenizer) -> Result<PromptInfo, ApiError> {
    let ids = checked_ids(ids, tok.vocab_size())?;
    let mut h = Fnv::new(2);
    for id in &ids {
        h = h.bytes(&id.to_le_bytes());
    }
    Ok(PromptInfo { tokens: ids.len() as u32, hash: h.finish(), ids })
}

/// Validates token ids against the vocabulary (vLLM rejects out-of-vocabulary ids with 400).
pub(crate) fn checked_ids(ids: &[i64], vocab_size: u32) -> Result<Vec<u32>, ApiError> {
    ids.iter()
        .map(|&id| {
            if id < 0 || id >= i64::from(vocab_size) {
                Err(ApiError::bad_request(format!("Token id {id} is out of vocabulary")))
            } else {
                Ok(id as u32)
            }
        })
        .collect()
}

/// The chat prompt rendered with the ChatML template described in the module docs.
pub(crate) fn render_chat(messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String, ApiError> {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(&m.role);
        out.push('\n');
        match &m.content {
            None => {}
            Some(MessageContent::Text(t)) => out.push_str(t),
            Some(MessageContent::Parts(parts)) => {
                let mut first = true;
                for p in parts {
                    // Media parts are counted by `media_tokens`, not rendered.
                    if crate::media::part_tokens(p)?.is_some() {
                        continue;
                    }
                    if !first {
                        out.push('\n');
                    }
                    first = false;
                    out.push_str(p.text.as_deref().unwrap_or(""));
                }
            }
        }
        out.push_str("<|im_end|>\n");
    }
    if add_generation_prompt {
        out.push_str("<|im_start|>assistant\n");
    }
    Ok(out)
}

/// Token ids of a rendered chat prompt (no added special tokens: the template has them).
pub(crate) fn chat_ids(rendered: &str, tok: &dyn TextTokenizer) -> Result<Vec<u32>, ApiError> {
    tok.encode(rendered, false).map_err(encode_err)
}

/// Tokenizes a chat request's messages.
pub(crate) fn chat_prompt(
    messages: &[ChatMessage],
    add_generation_prompt: bool,
    tok: &dyn TextTokenizer,
) -> Result<PromptInfo, ApiError> {
    let rendered = render_chat(messages, add_generation_prompt)?;
    let mut ids = chat_ids(&rendered, tok)?;
    let mut hash = Fnv::new(3).bytes(rendered.as_bytes());
    // Media parts: their tokens, and as many placeholder ids derived from their content (so the
    // engine's prefix cache sees the same image as the same blocks).
    for m in messages {
        let Some(MessageContent::Parts(parts)) = &m.content else { continue };
        for p in parts {
            if let Some((n, h)) = crate::media::part_tokens(p)? {
                hash = hash.u64(h);
                let vocab = u64::from(tok.vocab_size().max(1));
                ids.extend((0..u64::from(n)).map(|i| (crate::hash::mix(h ^ i) % vocab) as u32));
            }
        }
    }
    Ok(PromptInfo { tokens: ids.len() as u32, hash: hash.finish(), ids })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::ContentPart;

    fn msg(role: &str, content: Option<MessageContent>) -> ChatMessage {
        ChatMessage { role: role.into(), content }
    }

    #[test]
    fn chatml_rendering() {
        let m = vec![
            msg("system", Some(MessageContent::Text("be brief".into()))),
            msg(
                "user",
                Some(MessageContent::Parts(vec![
                    ContentPart::of("text".into(), Some("a".into())),
                    ContentPart::of("text".into(), Some("b".into())),
                ])),
            ),
            msg("assistant", None),
        ];
        let r = render_chat(&m, true).unwrap();
        assert_eq!(
            r,
            "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\na\nb<|im_end|>\n\
             <|im_start|>assistant\n<|im_end|>\n<|im_start|>assistant\n"
        );
        assert!(!render_chat(&m, false).unwrap().ends_with("assistant\n"));
    }

    #[test]
    fn unknown_parts_are_rejected_and_media_is_counted() {
        let m =
            vec![msg("user", Some(MessageContent::Parts(vec![ContentPart::of("video_url".into(), None)])))];
        assert_eq!(render_chat(&m, true).unwrap_err().status, 400);
        let image = ContentPart {
            kind: "image_url".into(),
            image_url: Some(serde_json::json!({"url": "https://x/cat.png"})),
            ..ContentPart::default()
        };
        let text = ContentPart::of("text".into(), Some("hi".into()));
        let with = vec![msg("user", Some(MessageContent::Parts(vec![text, image])))];
        let without = vec![msg(
            "user",
            Some(MessageContent::Parts(vec![ContentPart::of("text".into(), Some("hi".into()))])),
        )];
        let tok = crate::test_support::NullTok;
        let a = chat_prompt(&with, true, &tok).unwrap();
        let b = chat_prompt(&without, true, &tok).unwrap();
        assert_eq!(a.tokens, b.tokens + crate::media::DEFAULT_IMAGE_TOKENS);
        assert_ne!(a.hash, b.hash);
    }

    #[test]
    fn ids_are_checked_against_vocab() {
        assert_eq!(checked_ids(&[0, 5, 9], 10).unwrap(), vec![0, 5, 9]);
        assert!(checked_ids(&[10], 10).is_err());
        assert!(checked_ids(&[-1], 10).is_err());
    }
}

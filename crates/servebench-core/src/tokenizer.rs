//! The tokenizer interface every part of servebench uses (dataset generation, the simulator's
//! prompt counting, retokenizing output). Implementations live in `servebench-data`.

use crate::error::Result;

/// A text tokenizer. Implementations must be cheap to share across threads.
pub trait TextTokenizer: Send + Sync + std::fmt::Debug {
    /// A human-readable name (path, encoding name, or `server:/tokenize`).
    fn name(&self) -> &str;
    /// Token ids of `text`. With `add_special`, the special tokens the model adds (e.g. BOS).
    fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>>;
    /// Text of `ids`; with `skip_special`, special tokens are left out.
    fn decode(&self, ids: &[u32], skip_special: bool) -> Result<String>;
    /// Number of token ids (upper bound of valid ids + 1).
    fn vocab_size(&self) -> u32;
    /// Number of special tokens `encode(_, true)` adds to any text (e.g. 1 for a BOS token).
    fn num_special_tokens(&self) -> u32 {
        self.encode("", true).map(|v| v.len() as u32).unwrap_or(0)
    }
    /// Number of tokens of `text` without special tokens.
    fn count(&self, text: &str) -> Result<usize> {
        self.encode(text, false).map(|v| v.len())
    }
    /// The tokenizer's chat template, when it has one (a Hugging Face tokenizer's
    /// `chat_template.jinja` or `tokenizer_config.json` `chat_template`).
    fn chat_template(&self) -> Option<&dyn ChatTemplate> {
        None
    }
}

/// What a chat-template rendering gets besides the messages: transformers'
/// `apply_chat_template(messages, tools=…, add_generation_prompt=…, tokenize=False, **kwargs)`.
#[derive(Debug, Clone, Copy, Default)]
pub struct ChatRender<'a> {
    /// Append the assistant turn's opening (`add_generation_prompt`).
    pub add_generation_prompt: bool,
    /// The tool definitions (a JSON array), as `tools=`.
    pub tools: Option<&'a serde_json::Value>,
    /// Extra template variables (`--chat-template-kwargs`).
    pub kwargs: Option<&'a serde_json::Map<String, serde_json::Value>>,
}

/// A chat template that renders a conversation to the prompt text a model sees.
pub trait ChatTemplate: Send + Sync + std::fmt::Debug {
    /// Renders `messages` (a JSON array of `{"role", "content", …}` objects).
    fn render(&self, messages: &serde_json::Value, opts: &ChatRender<'_>) -> Result<String>;
}

//! The workload: what each request sends. Built once before the run; prompt text and token ids
//! are shared (`Arc`) so that handing a request to the runner never copies a prompt.

use std::sync::Arc;

/// The prompt of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Text sent as `prompt` (completions) or as the user message (chat).
    Text(Arc<str>),
    /// Token ids sent as `prompt: [ids]` (completions only; `--prompt-token-ids`).
    TokenIds(Arc<[u32]>),
    /// Several texts sent in one request as `input: [..]` (pooling backends with
    /// `--random-batch-size` > 1).
    Batch(Arc<[Arc<str>]>),
}

impl Prompt {
    /// The text of the prompt, if it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Prompt::Text(t) => Some(t),
            Prompt::TokenIds(_) | Prompt::Batch(_) => None,
        }
    }
}

/// One request of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// Position in the workload (0-based).
    pub index: u64,
    pub prompt: Prompt,
    /// Prompt length in tokens as the client tokenizer counts it, special tokens (BOS) included.
    pub prompt_tokens: u32,
    /// Output tokens to ask for (`max_tokens` / `max_completion_tokens`).
    pub expected_output_tokens: u32,
    /// Multimodal content parts (chat only), each a pre-serialized JSON object such as
    /// `{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,..."}}`, sent after the
    /// text part. `None` for text-only requests.
    pub multimodal: Option<Arc<[Arc<str>]>>,
    /// A rerank request (`random-rerank` dataset): the query and its documents.
    pub rerank: Option<Arc<RerankPayload>>,
}

impl RequestSpec {
    /// A text-or-token-id request without multimodal parts or rerank payload.
    pub fn new(index: u64, prompt: Prompt, prompt_tokens: u32, expected_output_tokens: u32) -> Self {
        RequestSpec { index, prompt, prompt_tokens, expected_output_tokens, multimodal: None, rerank: None }
    }
}

/// The body of one rerank request: a query scored against documents (`/v1/rerank`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RerankPayload {
    pub query: Arc<str>,
    pub documents: Arc<[Arc<str>]>,
}

/// The whole workload of a run, in send order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workload {
    pub requests: Vec<RequestSpec>,
}

impl Workload {
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Total prompt tokens over the workload.
    pub fn total_prompt_tokens(&self) -> u64 {
        self.requests.iter().map(|r| u64::from(r.prompt_tokens)).sum()
    }

    /// Total expected output tokens over the workload.
    pub fn total_expected_output_tokens(&self) -> u64 {
        self.requests.iter().map(|r| u64::from(r.expected_output_tokens)).sum()
    }
}

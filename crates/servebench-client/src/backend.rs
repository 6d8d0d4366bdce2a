//! What a run talks to: the backend (`--backend`, which API family and dialect), its default
//! endpoint and what its bodies can carry, and the [`TargetConfig`] fixed for a run.
//!
//! Pure descriptors: the request bodies are laid out by [`crate::body`] from the field lists of
//! the API families in `api`, and the headers by [`crate::headers`].

use std::fmt;
use std::str::FromStr;

use serde_json::{Map, Value};
use servebench_core::secret::Secret;
use servebench_core::{BenchError, Result};

/// The API dialect of the generation requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum BackendKind {
    /// `/v1/completions` (`--backend vllm` or `openai`).
    #[default]
    Completions,
    /// `/v1/chat/completions` (`--backend openai-chat`).
    Chat,
    /// `/v1/responses`, event-typed SSE (`--backend openai-responses`; `api/responses.rs`).
    Responses,
    /// `/v1/embeddings` with `input` (`--backend openai-embeddings`; non-streaming).
    Embeddings,
    /// `/v1/embeddings` with chat `messages` (`--backend openai-embeddings-chat`).
    EmbeddingsChat,
    /// `/v1/embeddings`, CLIP-style chat `messages`: an image request sends an empty text part
    /// (`--backend openai-embeddings-clip`; `api/embed.rs`).
    EmbeddingsClip,
    /// `/v1/embeddings`, VLM2Vec chat `messages`: images first, vLLM's "Represent the given
    /// image" text (`--backend openai-embeddings-vlm2vec`; `api/embed.rs`).
    EmbeddingsVlm2Vec,
    /// `/v1/embeddings` of an Infinity server: `input` text (`--backend infinity-embeddings`).
    Infinity,
    /// `/v1/embeddings` of an Infinity server: an image request sends its URL as `input` with
    /// `modality` (`--backend infinity-embeddings-clip`).
    InfinityClip,
    /// `/pooling` (`--backend vllm-pooling`; non-streaming).
    Pooling,
    /// `/v1/rerank` with `query` and `documents` (`--backend vllm-rerank`; non-streaming).
    Rerank,
    /// `/v1/audio/transcriptions`, a multipart/form-data upload of the request's audio,
    /// streamed (`--backend openai-audio`; `api/audio.rs`).
    Audio,
    /// A native server dialect: `tgi`, `sglang`, `llama.cpp`, `anthropic` (`api/`).
    Native(Dialect),
}

impl BackendKind {
    /// The default endpoint path.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            BackendKind::Completions => "/v1/completions",
            BackendKind::Chat => "/v1/chat/completions",
            BackendKind::Responses => "/v1/responses",
            BackendKind::Embeddings
            | BackendKind::EmbeddingsChat
            | BackendKind::EmbeddingsClip
            | BackendKind::EmbeddingsVlm2Vec
            | BackendKind::Infinity
            | BackendKind::InfinityClip => "/v1/embeddings",
            BackendKind::Pooling => "/pooling",
            BackendKind::Audio => "/v1/audio/transcriptions",
            BackendKind::Rerank => "/v1/rerank",
            BackendKind::Native(d) => d.default_endpoint(),
        }
    }
}

/// The API family of a backend: which module of `api/` lays out its bodies and parses its
/// answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiFamily {
    /// OpenAI completions and chat (`api/openai.rs`).
    OpenAi,
    /// The Responses API (`api/responses.rs`).
    Responses,
    /// Embeddings, pooling and rerank: one JSON answer, no tokens (`api/pooling.rs`).
    Pooling,
    /// Transcriptions: a multipart upload, answered with OpenAI-style chunks (`api/audio.rs`).
    Audio,
    /// A native server dialect (`api/{tgi,sglang,llamacpp,anthropic}.rs`).
    Native(Dialect),
}

impl BackendKind {
    /// The backend's API family; every backend names one (the match is exhaustive).
    pub fn family(self) -> ApiFamily {
        match self {
            BackendKind::Completions | BackendKind::Chat => ApiFamily::OpenAi,
            BackendKind::Responses => ApiFamily::Responses,
            BackendKind::Embeddings
            | BackendKind::EmbeddingsChat
            | BackendKind::EmbeddingsClip
            | BackendKind::EmbeddingsVlm2Vec
            | BackendKind::Infinity
            | BackendKind::InfinityClip
            | BackendKind::Pooling
            | BackendKind::Rerank => ApiFamily::Pooling,
            BackendKind::Audio => ApiFamily::Audio,
            BackendKind::Native(d) => ApiFamily::Native(d),
        }
    }

    /// Pooling backends answer with one JSON body and generate no tokens.
    pub fn is_pooling(self) -> bool {
        self.family() == ApiFamily::Pooling
    }

    /// Whether the backend's body can carry token-id prompts.
    pub fn takes_token_ids(self) -> bool {
        matches!(self, BackendKind::Completions | BackendKind::Embeddings | BackendKind::Pooling)
    }

    /// Whether the backend's body can carry multimodal content parts (images).
    pub fn takes_multimodal(self) -> bool {
        self.takes_messages() || self == BackendKind::InfinityClip
    }

    /// Whether the backend's body has chat `messages` (pre-built ones can be sent as they are).
    pub fn takes_messages(self) -> bool {
        matches!(
            self,
            BackendKind::Chat
                | BackendKind::EmbeddingsChat
                | BackendKind::EmbeddingsClip
                | BackendKind::EmbeddingsVlm2Vec
        )
    }
}

impl FromStr for BackendKind {
    type Err = BenchError;
    fn from_str(s: &str) -> Result<Self> {
        if let Some(d) = Dialect::from_name(s) {
            return Ok(BackendKind::Native(d));
        }
        match s {
            "vllm" | "openai" => Ok(BackendKind::Completions),
            "openai-chat" => Ok(BackendKind::Chat),
            "openai-responses" => Ok(BackendKind::Responses),
            "openai-embeddings" => Ok(BackendKind::Embeddings),
            "openai-embeddings-chat" => Ok(BackendKind::EmbeddingsChat),
            "openai-embeddings-clip" => Ok(BackendKind::EmbeddingsClip),
            "openai-embeddings-vlm2vec" => Ok(BackendKind::EmbeddingsVlm2Vec),
            "infinity-embeddings" => Ok(BackendKind::Infinity),
            "infinity-embeddings-clip" => Ok(BackendKind::InfinityClip),
            "vllm-pooling" => Ok(BackendKind::Pooling),
            "openai-audio" => Ok(BackendKind::Audio),
            "vllm-rerank" => Ok(BackendKind::Rerank),
            other => Err(BenchError::config(
                "--backend",
                format!("unknown backend '{other}'"),
                "use vllm, openai, openai-chat, openai-audio, openai-responses, openai-embeddings, \
                 openai-embeddings-chat, openai-embeddings-clip, openai-embeddings-vlm2vec, \
                 infinity-embeddings, infinity-embeddings-clip, vllm-pooling, vllm-rerank, tgi, \
                 sglang, llama.cpp or anthropic",
            )),
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::Completions => "openai",
            BackendKind::Chat => "openai-chat",
            BackendKind::Responses => "openai-responses",
            BackendKind::Embeddings => "openai-embeddings",
            BackendKind::EmbeddingsChat => "openai-embeddings-chat",
            BackendKind::EmbeddingsClip => "openai-embeddings-clip",
            BackendKind::EmbeddingsVlm2Vec => "openai-embeddings-vlm2vec",
            BackendKind::Infinity => "infinity-embeddings",
            BackendKind::InfinityClip => "infinity-embeddings-clip",
            BackendKind::Pooling => "vllm-pooling",
            BackendKind::Audio => "openai-audio",
            BackendKind::Rerank => "vllm-rerank",
            BackendKind::Native(d) => d.name(),
        })
    }
}

/// Everything that shapes generation requests, fixed for a run.
#[derive(Debug, Clone, Default)]
pub struct TargetConfig {
    pub backend: BackendKind,
    /// Endpoint path (with optional query); `None` = the backend's default.
    pub endpoint: Option<String>,
    /// The served model name sent as `model`.
    pub model: String,
    /// `Authorization: Bearer <key>` when set (`x-api-key` for Anthropic). A [`Secret`]: never
    /// printed by `Debug`, logged or recorded; the header built from it is marked sensitive.
    pub api_key: Option<Secret>,
    /// Extra headers (`--header K=V`), applied after the defaults. Values are [`Secret`]s (a
    /// header may carry a token); those of credential-like names are marked sensitive.
    pub headers: Vec<(String, Secret)>,
    /// `logprobs` (completions only; sent as `null` when unset).
    pub logprobs: Option<u32>,
    pub ignore_eos: bool,
    /// Sampling parameters (`--temperature`, `--top-p`, ...), laid over the base body.
    pub sampling: Map<String, Value>,
    /// `--extra-body`, laid over everything.
    pub extra_body: Map<String, Value>,
    /// `--random-batch-size`: prompts per request of the pooling backends (0 or 1 = one).
    pub batch_size: usize,
}

/// A native API dialect (`--backend tgi|sglang|llama.cpp|anthropic`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dialect {
    /// Hugging Face Text Generation Inference, `POST /generate_stream`.
    Tgi,
    /// SGLang's native `POST /generate` (cumulative text, `meta_info`).
    Sglang,
    /// llama.cpp server `POST /completion` (`content`, `stop`, `timings`).
    LlamaCpp,
    /// Anthropic-style Messages API, `POST /v1/messages` (typed events).
    Anthropic,
}

impl Dialect {
    /// Every dialect.
    pub const ALL: [Dialect; 4] = [Dialect::Tgi, Dialect::Sglang, Dialect::LlamaCpp, Dialect::Anthropic];

    /// The `--backend` name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Tgi => "tgi",
            Dialect::Sglang => "sglang",
            Dialect::LlamaCpp => "llama.cpp",
            Dialect::Anthropic => "anthropic",
        }
    }

    /// Parses a `--backend` name (`llamacpp` and `llama-cpp` are accepted for `llama.cpp`).
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "tgi" => Some(Dialect::Tgi),
            "sglang" => Some(Dialect::Sglang),
            "llama.cpp" | "llamacpp" | "llama-cpp" => Some(Dialect::LlamaCpp),
            "anthropic" => Some(Dialect::Anthropic),
            _ => None,
        }
    }

    /// The default endpoint path.
    pub fn default_endpoint(self) -> &'static str {
        match self {
            Dialect::Tgi => "/generate_stream",
            Dialect::Sglang => "/generate",
            Dialect::LlamaCpp => "/completion",
            Dialect::Anthropic => "/v1/messages",
        }
    }

    /// Whether prompts given as token ids can be sent (only llama.cpp's `prompt` takes them).
    pub fn accepts_token_ids(self) -> bool {
        self == Dialect::LlamaCpp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_endpoints() {
        assert_eq!("vllm".parse::<BackendKind>().unwrap(), BackendKind::Completions);
        assert_eq!("openai".parse::<BackendKind>().unwrap(), BackendKind::Completions);
        assert_eq!("openai-chat".parse::<BackendKind>().unwrap(), BackendKind::Chat);
        assert!("tgi-native".parse::<BackendKind>().is_err());
        assert_eq!(BackendKind::Chat.default_endpoint(), "/v1/chat/completions");
    }
}

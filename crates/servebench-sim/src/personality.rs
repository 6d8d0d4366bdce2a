//! Personalities: which real server the simulator imitates on the wire. Each is a small table
//! of behaviours ([`Behaviour`]) read once per request (or per connection); the engine model,
//! the plans and the pacing are the same for all of them. Sources per behaviour: the module
//! docs of each table below and docs/simulator.md ("Personalities").

use servebench_core::{BenchError, Result};

/// The server the simulator imitates (`--sim-personality`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Personality {
    /// The default: vLLM's wire format on the OpenAI routes (today's simulator, byte for
    /// byte) and, besides, every native dialect endpoint (TGI, SGLang, llama.cpp, Anthropic),
    /// so that every client backend runs against it.
    #[default]
    Sim,
    /// vLLM's OpenAI-compatible server: only the routes vLLM serves.
    Vllm,
    /// SGLang's server (`/generate` plus the OpenAI routes).
    Sglang,
    /// llama.cpp's `llama-server` (`/completion`, `/v1/messages` plus the OpenAI routes).
    LlamaCpp,
    /// Hugging Face TGI (`/generate`, `/generate_stream`, the Messages API).
    Tgi,
    /// A generic OpenAI-API server (OpenAI's response and error shapes; a `/tokenize` that
    /// wants `text`, like GuideLLM's mock server).
    OpenAi,
    /// A gateway in front of vLLM: a path prefix, redirects from the unprefixed paths and gzip.
    Gateway,
    /// TensorRT-LLM's `trtllm-serve`: the OpenAI routes, `/health`, and `/metrics` under its
    /// `trtllm_` names (tensorrt_llm/metrics/collector.py); otherwise vLLM's wire.
    TrtLlm,
    /// NVIDIA Dynamo's HTTP frontend: the OpenAI routes, `/health`, and `/metrics` under its
    /// `dynamo_frontend_*` names (lib/runtime/src/metrics/prometheus_names.rs); otherwise
    /// vLLM's wire.
    Dynamo,
}

/// Where `usage` rides in a streamed completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UsagePlacement {
    /// A separate last chunk with `"choices": []` (when `stream_options.include_usage`).
    SeparateChunk,
    /// Inside the chunk that carries `finish_reason`, always (llama.cpp completions).
    InFinishChunk,
}

/// The `/tokenize` and `/detokenize` dialect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizeDialect {
    /// vLLM / SGLang: `{"prompt"}` or `{"messages"}` → `{"count","max_model_len","tokens"}`.
    Prompt,
    /// llama.cpp: `{"content"}` → `{"tokens"}` (a `prompt` body gets an empty list);
    /// `/detokenize` answers `{"content"}`.
    Content,
    /// TGI: `{"inputs"}` → `[{"id","text","start","stop"}]`; no `/detokenize`.
    Inputs,
    /// GuideLLM's mock: `{"text"}` → `{"tokens"}`; anything else 400 with a multi-line
    /// pydantic-style body.
    Text,
    /// No `/tokenize` at all (404).
    None,
}

/// The shape of error bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorStyle {
    /// vLLM: `{"error":{"message","type","param","code"}}`; unknown routes
    /// `{"detail":"Not Found"}` (FastAPI).
    Vllm,
    /// SGLang: `{"object":"error","message","type","param","code"}`.
    Sglang,
    /// llama.cpp: `{"error":{"code","message","type"}}` (`invalid_request_error`,
    /// `not_found_error`); unknown routes 404 `File Not Found`.
    LlamaCpp,
    /// TGI: `{"error","error_type"}`; validation errors are 422; unknown routes 404 with an
    /// empty body.
    Tgi,
    /// OpenAI: `{"error":{"message","type":"invalid_request_error","param","code"}}`.
    OpenAi,
}

/// The `/v1/models` shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelsShape {
    /// vLLM's cards (`root`, `parent`, `max_model_len`, `permission`).
    Vllm,
    /// SGLang's cards (`owned_by: "sglang"`, `root`, `max_model_len`).
    Sglang,
    /// llama.cpp: `models` (Ollama-style) and `data` with a `meta` object.
    LlamaCpp,
    /// OpenAI's cards (`id`, `object`, `created`, `owned_by`); also TGI.
    OpenAi,
}

/// The metric names of `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricNames {
    Vllm,
    Sglang,
    LlamaCpp,
    Tgi,
    Trtllm,
    Dynamo,
    /// No `/metrics` route.
    None,
}

impl MetricNames {
    /// The personality's name for the vLLM series `vllm_name` (a family name; `_bucket`,
    /// `_sum` and `_count` follow it). `None`: the server has no such series, so it is left
    /// out. The simulator's own series (not `vllm:`) keep their names.
    pub(crate) fn series_name(self, vllm_name: &str) -> Option<&str> {
        let table: &[(&str, &'static str)] = match self {
            MetricNames::Vllm | MetricNames::None => return Some(vllm_name),
            MetricNames::Sglang => &[
                ("vllm:num_requests_running", "sglang:num_running_reqs"),
                ("vllm:num_requests_waiting", "sglang:num_queue_reqs"),
                ("vllm:kv_cache_usage_perc", "sglang:token_usage"),
                ("vllm:prompt_tokens_total", "sglang:prompt_tokens_total"),
                ("vllm:generation_tokens_total", "sglang:generation_tokens_total"),
                ("vllm:prefix_cache_hits_total", "sglang:cached_tokens_total"),
                ("vllm:num_preemptions_total", "sglang:num_retracted_requests_total"),
                ("vllm:request_success_total", "sglang:num_requests_total"),
                ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds"),
                ("vllm:inter_token_latency_seconds", "sglang:inter_token_latency_seconds"),
                ("vllm:e2e_request_latency_seconds", "sglang:e2e_request_latency_seconds"),
            ],
            // tools/server (`--metrics`): current builds export no KV-cache usage
            // (`llamacpp:kv_cache_usage_ratio` and `kv_cache_tokens` were removed).
            MetricNames::LlamaCpp => &[
                ("vllm:prompt_tokens_total", "llamacpp:prompt_tokens_total"),
                ("vllm:generation_tokens_total", "llamacpp:tokens_predicted_total"),
                ("vllm:num_requests_running", "llamacpp:requests_processing"),
                ("vllm:num_requests_waiting", "llamacpp:requests_deferred"),
            ],
            // docs/source/reference/metrics.md; the per-request token histograms are written
            // by `Metrics::render`.
            MetricNames::Tgi => &[
                ("vllm:num_requests_running", "tgi_batch_current_size"),
                ("vllm:num_requests_waiting", "tgi_queue_size"),
                ("vllm:request_success_total", "tgi_request_success"),
                ("vllm:e2e_request_latency_seconds", "tgi_request_duration"),
                ("vllm:time_per_output_token_seconds", "tgi_request_mean_time_per_token_duration"),
            ],
            // tensorrt_llm/metrics/collector.py; prefix reuse is counted in blocks there, in
            // tokens here (the hit rate is the same).
            MetricNames::Trtllm => &[
                ("vllm:num_requests_running", "trtllm_num_requests_running"),
                ("vllm:num_requests_waiting", "trtllm_num_requests_waiting"),
                ("vllm:kv_cache_usage_perc", "trtllm_kv_cache_utilization"),
                ("vllm:prompt_tokens_total", "trtllm_prompt_tokens_total"),
                ("vllm:generation_tokens_total", "trtllm_generation_tokens_total"),
                ("vllm:request_success_total", "trtllm_request_success_total"),
                ("vllm:prefix_cache_hits_total", "trtllm_kv_cache_reused_blocks_total"),
                ("vllm:time_to_first_token_seconds", "trtllm_time_to_first_token_seconds"),
                ("vllm:time_per_output_token_seconds", "trtllm_time_per_output_token_seconds"),
                ("vllm:e2e_request_latency_seconds", "trtllm_e2e_request_latency_seconds"),
            ],
            // lib/runtime/src/metrics/prometheus_names.rs (frontend_service, kvstats; the
            // KV usage gauge lost its `kvstats_` infix in 2026). The per-request token
            // histograms are written by `Metrics::render`.
            MetricNames::Dynamo => &[
                ("vllm:num_requests_running", "dynamo_frontend_inflight_requests"),
                ("vllm:num_requests_waiting", "dynamo_frontend_queued_requests"),
                ("vllm:kv_cache_usage_perc", "dynamo_component_gpu_cache_usage_percent"),
                ("vllm:generation_tokens_total", "dynamo_frontend_output_tokens_total"),
                ("vllm:request_success_total", "dynamo_frontend_requests_total"),
                ("vllm:time_to_first_token_seconds", "dynamo_frontend_time_to_first_token_seconds"),
                ("vllm:inter_token_latency_seconds", "dynamo_frontend_inter_token_latency_seconds"),
                ("vllm:e2e_request_latency_seconds", "dynamo_frontend_request_duration_seconds"),
            ],
        };
        match table.iter().find(|(from, _)| *from == vllm_name) {
            Some((_, to)) => Some(to),
            None if vllm_name.starts_with("vllm:") => None,
            None => Some(vllm_name),
        }
    }

    /// The label naming the model on every sample (llama.cpp and TGI export theirs without;
    /// Dynamo's is `model`).
    pub(crate) fn model_label(self) -> Option<&'static str> {
        match self {
            MetricNames::LlamaCpp | MetricNames::Tgi => None,
            MetricNames::Dynamo => Some("model"),
            _ => Some("model_name"),
        }
    }
}

/// What happens to a connection between requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeepAlive {
    /// HTTP/1.1 keep-alive, no idle limit (vLLM's uvicorn keeps idle connections 5 s; the
    /// simulator does not close them, as before).
    Plain,
    /// llama.cpp: `Keep-Alive: timeout=5, max=100` on every answer, no `Connection: close`,
    /// yet the connection is closed right after every streamed answer, and after
    /// `idle_secs` without a request.
    CloseAfterStream { idle_secs: u64 },
}

/// Which extra routes a personality serves besides the OpenAI generation routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Routes {
    /// `/v1/responses`.
    pub responses: bool,
    /// `/v1/embeddings`.
    pub embeddings: bool,
    /// `/pooling`, `/v1/pooling`, `/v1/rerank`, `/rerank`, `/v2/rerank`.
    pub pooling: bool,
    /// `/health`.
    pub health: bool,
    /// vLLM's `/start_profile`, `/stop_profile`, `/reset_prefix_cache`.
    pub vllm_admin: bool,
    /// TGI `/generate` and `/generate_stream`, `/info`.
    pub tgi: bool,
    /// SGLang `/generate`.
    pub sglang: bool,
    /// llama.cpp `/completion`.
    pub llamacpp: bool,
    /// Anthropic `/v1/messages`.
    pub anthropic: bool,
    /// `/v1/audio/transcriptions`.
    pub audio: bool,
}

/// The wire-visible behaviours of one personality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Behaviour {
    pub name: &'static str,
    /// Completions streams: where usage rides.
    pub completions_usage: UsagePlacement,
    /// The chat role chunk says `"content": null` instead of `""`.
    pub role_content_null: bool,
    /// Id prefixes of completions and chat completions.
    pub completion_id_prefix: &'static str,
    pub chat_id_prefix: &'static str,
    /// Choices carry `"stop_reason": null` (vLLM).
    pub stop_reason: bool,
    /// The final chunk carries llama.cpp's `timings` object.
    pub timings: bool,
    /// The `model` of a request is checked against the served names (llama.cpp ignores it).
    pub checks_model: bool,
    pub tokenize: TokenizeDialect,
    pub errors: ErrorStyle,
    pub models: ModelsShape,
    pub metrics: MetricNames,
    pub keep_alive: KeepAlive,
    pub routes: Routes,
    /// Gateway: gzip answers when the client accepts gzip or sends no `Accept-Encoding`.
    pub gzip: bool,
    /// Gateway: the API is mounted under the configured prefix; unprefixed API paths are
    /// redirected there (307 for GET, 308 otherwise).
    pub prefixed: bool,
}

const ALL_ROUTES: Routes = Routes {
    responses: true,
    embeddings: true,
    pooling: true,
    health: true,
    vllm_admin: true,
    tgi: true,
    sglang: true,
    llamacpp: true,
    anthropic: true,
    audio: true,
};

const VLLM_ROUTES: Routes =
    Routes { tgi: false, sglang: false, llamacpp: false, anthropic: false, ..ALL_ROUTES };

const NO_ROUTES: Routes = Routes {
    responses: false,
    embeddings: false,
    pooling: false,
    health: false,
    vllm_admin: false,
    tgi: false,
    sglang: false,
    llamacpp: false,
    anthropic: false,
    audio: false,
};

const SIM: Behaviour = Behaviour {
    name: "sim",
    completions_usage: UsagePlacement::SeparateChunk,
    role_content_null: false,
    completion_id_prefix: "cmpl-",
    chat_id_prefix: "chatcmpl-",
    stop_reason: true,
    timings: false,
    checks_model: true,
    tokenize: TokenizeDialect::Prompt,
    errors: ErrorStyle::Vllm,
    models: ModelsShape::Vllm,
    metrics: MetricNames::Vllm,
    keep_alive: KeepAlive::Plain,
    routes: ALL_ROUTES,
    gzip: false,
    prefixed: false,
};

const VLLM: Behaviour = Behaviour { name: "vllm", routes: VLLM_ROUTES, ..SIM };

const SGLANG: Behaviour = Behaviour {
    name: "sglang",
    completion_id_prefix: "",
    chat_id_prefix: "",
    stop_reason: false,
    errors: ErrorStyle::Sglang,
    models: ModelsShape::Sglang,
    metrics: MetricNames::Sglang,
    routes: Routes { sglang: true, embeddings: true, pooling: true, health: true, ..NO_ROUTES },
    ..SIM
};

const LLAMACPP: Behaviour = Behaviour {
    name: "llamacpp",
    completions_usage: UsagePlacement::InFinishChunk,
    role_content_null: true,
    completion_id_prefix: "chatcmpl-",
    chat_id_prefix: "chatcmpl-",
    stop_reason: false,
    timings: true,
    checks_model: false,
    tokenize: TokenizeDialect::Content,
    errors: ErrorStyle::LlamaCpp,
    models: ModelsShape::LlamaCpp,
    metrics: MetricNames::LlamaCpp,
    keep_alive: KeepAlive::CloseAfterStream { idle_secs: 5 },
    routes: Routes { llamacpp: true, anthropic: true, embeddings: true, health: true, ..NO_ROUTES },
    ..SIM
};

const TGI: Behaviour = Behaviour {
    name: "tgi",
    completion_id_prefix: "",
    chat_id_prefix: "",
    stop_reason: false,
    checks_model: false,
    tokenize: TokenizeDialect::Inputs,
    errors: ErrorStyle::Tgi,
    models: ModelsShape::OpenAi,
    metrics: MetricNames::Tgi,
    routes: Routes { tgi: true, health: true, ..NO_ROUTES },
    ..SIM
};

const OPENAI: Behaviour = Behaviour {
    name: "openai",
    stop_reason: false,
    tokenize: TokenizeDialect::Text,
    errors: ErrorStyle::OpenAi,
    models: ModelsShape::OpenAi,
    metrics: MetricNames::None,
    routes: Routes { responses: true, embeddings: true, audio: true, ..NO_ROUTES },
    ..SIM
};

const GATEWAY: Behaviour = Behaviour { name: "gateway", gzip: true, prefixed: true, ..VLLM };

const TRTLLM: Behaviour = Behaviour {
    name: "trtllm",
    tokenize: TokenizeDialect::None,
    models: ModelsShape::OpenAi,
    metrics: MetricNames::Trtllm,
    routes: Routes { health: true, ..NO_ROUTES },
    ..VLLM
};

const DYNAMO: Behaviour = Behaviour { name: "dynamo", metrics: MetricNames::Dynamo, ..TRTLLM };

impl Personality {
    /// Every personality.
    pub const ALL: [Personality; 9] = [
        Personality::Sim,
        Personality::Vllm,
        Personality::Sglang,
        Personality::LlamaCpp,
        Personality::Tgi,
        Personality::OpenAi,
        Personality::Gateway,
        Personality::TrtLlm,
        Personality::Dynamo,
    ];

    /// The behaviour table.
    pub fn behaviour(self) -> &'static Behaviour {
        match self {
            Personality::Sim => &SIM,
            Personality::Vllm => &VLLM,
            Personality::Sglang => &SGLANG,
            Personality::LlamaCpp => &LLAMACPP,
            Personality::Tgi => &TGI,
            Personality::OpenAi => &OPENAI,
            Personality::Gateway => &GATEWAY,
            Personality::TrtLlm => &TRTLLM,
            Personality::Dynamo => &DYNAMO,
        }
    }

    /// The `--sim-personality` name.
    pub fn name(self) -> &'static str {
        self.behaviour().name
    }

    /// Parses a `--sim-personality` name (`llama.cpp` and `llama-cpp` are accepted too).
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "sim" | "default" => Ok(Personality::Sim),
            "vllm" => Ok(Personality::Vllm),
            "sglang" => Ok(Personality::Sglang),
            "llamacpp" | "llama.cpp" | "llama-cpp" => Ok(Personality::LlamaCpp),
            "tgi" => Ok(Personality::Tgi),
            "openai" => Ok(Personality::OpenAi),
            "gateway" => Ok(Personality::Gateway),
            "trtllm" | "tensorrt-llm" => Ok(Personality::TrtLlm),
            "dynamo" => Ok(Personality::Dynamo),
            other => Err(BenchError::config(
                "--sim-personality",
                format!("unknown personality '{other}'"),
                "use sim, vllm, sglang, llamacpp, tgi, openai, gateway, trtllm or dynamo",
            )),
        }
    }
}

impl Behaviour {
    /// Whether the personality serves the API route `path` (after a gateway prefix is
    /// stripped) at all. The OpenAI generation routes and `/v1/models` are always served.
    pub fn serves(&self, path: &str) -> bool {
        let r = &self.routes;
        match path {
            "/v1/completions" | "/v1/chat/completions" | "/v1/models" => true,
            "/health" => r.health,
            "/metrics" => self.metrics != MetricNames::None,
            // The simulated DCGM exporter (`--sim-gpus`), whatever the personality.
            "/dcgm/metrics" => true,
            "/tokenize" => self.tokenize != TokenizeDialect::None,
            "/detokenize" => !matches!(self.tokenize, TokenizeDialect::None | TokenizeDialect::Inputs),
            "/v1/responses" => r.responses,
            "/v1/embeddings" => r.embeddings,
            "/pooling" | "/v1/pooling" | "/v1/rerank" | "/rerank" | "/v2/rerank" => r.pooling,
            "/start_profile" | "/stop_profile" | "/reset_prefix_cache" => r.vllm_admin,
            "/generate" => r.tgi || r.sglang,
            "/generate_stream" | "/info" => r.tgi,
            "/completion" => r.llamacpp,
            "/v1/messages" => r.anthropic,
            "/v1/audio/transcriptions" => r.audio,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_default_is_sim() {
        for p in Personality::ALL {
            assert_eq!(Personality::parse(p.name()).unwrap(), p);
        }
        assert_eq!(Personality::default(), Personality::Sim);
        assert!(Personality::parse("nginx").is_err());
    }

    #[test]
    fn each_personality_serves_only_its_servers_routes() {
        let b = |p: Personality| p.behaviour();
        assert!(b(Personality::Sim).serves("/generate_stream"));
        assert!(!b(Personality::Vllm).serves("/generate_stream"));
        assert!(b(Personality::Tgi).serves("/generate_stream") && !b(Personality::Tgi).serves("/completion"));
        assert!(
            b(Personality::LlamaCpp).serves("/completion") && !b(Personality::LlamaCpp).serves("/generate")
        );
        assert!(
            b(Personality::Sglang).serves("/generate") && !b(Personality::Sglang).serves("/generate_stream")
        );
        assert!(!b(Personality::OpenAi).serves("/metrics") && b(Personality::OpenAi).serves("/tokenize"));
        assert!(!b(Personality::Tgi).serves("/detokenize"));
    }
}

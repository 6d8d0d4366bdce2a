//! The checks of the `vllm bench serve` request, tokenizer and report flags, and the body fields
//! they add (the flags: `crate::cli::vllm`).

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use serde_json::{Map, Value};
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};

/// The chat backends whose request body has vLLM's `chat_template_kwargs` field.
fn renders_chat_template(backend: BackendKind) -> bool {
    backend.takes_messages()
}

/// Whether the client-side chat template is skipped where `--skip-chat-template` applies: the
/// flag, or a chat backend (vLLM 0.34's `CHAT_TEMPLATE_BACKENDS`: the server renders its own
/// template, so the client renders none, as if the flag were given).
pub fn skips_chat_template(args: &RunArgs) -> bool {
    args.dataset.skip_chat_template || args.backend.kind.takes_messages()
}

/// Whether the client renders the chat template with `--chat-template-kwargs`, as vLLM's
/// custom and speed_bench datasets do unless the template is skipped.
fn client_renders_with_kwargs(args: &RunArgs) -> bool {
    matches!(args.dataset_name.kind, DatasetName::Custom | DatasetName::SpeedBench)
        && !skips_chat_template(args)
}

/// `--chat-template-kwargs` (None when not given).
pub fn chat_template_kwargs_map(args: &RunArgs) -> Option<Map<String, Value>> {
    args.vllm.chat_template_kwargs.as_ref().map(|o| o.0.clone())
}

/// `--chat-template-kwargs` for the request body: chat backends send it for the server's
/// rendering; other backends send nothing (the client's rendering, where there is one, takes
/// it), and with neither it is SB113.
pub fn chat_template_kwargs(args: &RunArgs, backend: BackendKind) -> Result<Option<Map<String, Value>>> {
    let Some(map) = chat_template_kwargs_map(args) else { return Ok(None) };
    if renders_chat_template(backend) {
        return Ok(Some(map));
    }
    if client_renders_with_kwargs(args) {
        return Ok(None);
    }
    Err(BenchError::not_applicable(
        "--chat-template-kwargs",
        "chat templates: the client's (custom and speed_bench datasets without --skip-chat-template, as vLLM) or the server's (chat requests)",
        format!("--backend {backend} sends no chat messages and this dataset renders no template in the client"),
        "use --backend openai-chat (or openai-embeddings-chat) or the custom / speed_bench dataset, or drop the flag",
    ))
}

/// Fields the vLLM flags add to every request body: `use_beam_search`, `chat_template_kwargs`.
/// They go under `--extra-body`, whose own keys win.
pub fn body_fields(args: &RunArgs, backend: BackendKind) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    if args.vllm.use_beam_search {
        if !matches!(backend, BackendKind::Completions | BackendKind::Chat) {
            return Err(BenchError::not_applicable(
                "--use-beam-search",
                "generation requests of the OpenAI-compatible API (--backend openai, vllm, openai-chat)",
                format!("--backend {backend} has no use_beam_search field"),
                "use --backend openai or openai-chat, or drop --use-beam-search",
            ));
        }
        out.insert("use_beam_search".into(), Value::Bool(true));
    }
    if let Some(kwargs) = chat_template_kwargs(args, backend)? {
        out.insert("chat_template_kwargs".into(), Value::Object(kwargs));
    }
    Ok(out)
}

/// `--timeline-itl-thresholds` in ms, with `--plot-timeline` only (as vLLM).
pub fn itl_thresholds_ms(args: &RunArgs) -> Option<(f64, f64)> {
    let t = args.vllm.timeline_itl_thresholds;
    args.vllm.plot_timeline.then_some((t.0, t.1))
}

/// `--probe-request-rate` (None = off).
pub fn probe_rate(args: &RunArgs, backend: BackendKind) -> Result<Option<f64>> {
    let r = args.vllm.probe_request_rate;
    if r == 0.0 {
        return Ok(None);
    }
    if !(r.is_finite() && r > 0.0) {
        return Err(BenchError::config(
            "--probe-request-rate",
            format!("{r} is not a positive rate"),
            "pass probe requests per second (e.g. 1), or 0 for none",
        ));
    }
    if backend.is_pooling() {
        return Err(BenchError::not_applicable(
            "--probe-request-rate",
            "generation backends (a probe asks for one output token)",
            format!("--backend {backend} generates no tokens"),
            "drop --probe-request-rate, or use a generation backend",
        ));
    }
    Ok(Some(r))
}

/// `--skip-tokenizer-init`: the tokenizer the run uses instead of a local one (`server`).
pub fn tokenizer(args: &RunArgs) -> Result<Option<String>> {
    if !args.vllm.skip_tokenizer_init {
        return Ok(args.tokenizer.clone());
    }
    match args.tokenizer.as_deref() {
        None | Some(servebench_runner::run::SERVER_TOKENIZER) => {
            Ok(Some(servebench_runner::run::SERVER_TOKENIZER.to_string()))
        }
        Some(t) => Err(BenchError::not_applicable(
            "--skip-tokenizer-init",
            "runs without a client tokenizer",
            format!("--tokenizer {t} asks for one"),
            "drop --tokenizer, or drop --skip-tokenizer-init",
        )),
    }
}

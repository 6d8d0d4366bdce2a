//! The checks of the `vllm bench serve` request, tokenizer and report flags, and the body fields
//! they add (the flags: `crate::cli_vllm`).

use crate::cli::RunArgs;
use serde_json::{Map, Value};
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};

/// The chat backends whose request body has vLLM's `chat_template_kwargs` field.
fn renders_chat_template(backend: BackendKind) -> bool {
    backend.takes_messages()
}

/// Whether the client renders the chat template with `--chat-template-kwargs`, as vLLM's
/// custom and speed_bench datasets do unless `--skip-chat-template`.
fn client_renders_with_kwargs(args: &RunArgs) -> bool {
    matches!(args.dataset_name.as_str(), "custom" | "speed_bench" | "speed-bench")
        && !args.dataset.skip_chat_template
}

/// `--chat-template-kwargs` parsed as a JSON object (None when not given).
pub fn parse_chat_template_kwargs(args: &RunArgs) -> Result<Option<Map<String, Value>>> {
    let Some(text) = &args.vllm.chat_template_kwargs else { return Ok(None) };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(Some(m)),
        Ok(_) | Err(_) => Err(BenchError::config(
            "--chat-template-kwargs",
            "is not a JSON object",
            "pass a JSON object such as '{\"enable_thinking\": false}'",
        )),
    }
}

/// `--chat-template-kwargs` for the request body: chat backends send it for the server's
/// rendering; other backends send nothing (the client's rendering, where there is one, takes
/// it), and with neither it is SB113.
pub fn chat_template_kwargs(args: &RunArgs, backend: BackendKind) -> Result<Option<Map<String, Value>>> {
    let Some(map) = parse_chat_template_kwargs(args)? else { return Ok(None) };
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

/// `--timeline-itl-thresholds` in ms (two ascending non-negative numbers). Checked only with
/// `--plot-timeline`, as vLLM does.
pub fn itl_thresholds_ms(args: &RunArgs) -> Result<Option<(f64, f64)>> {
    if !args.vllm.plot_timeline {
        return Ok(None);
    }
    let fix = "pass two comma-separated thresholds in ms, e.g. --timeline-itl-thresholds 25,50";
    let parts: Vec<&str> = args.vllm.timeline_itl_thresholds.split(',').map(str::trim).collect();
    let values: Vec<f64> = parts.iter().filter_map(|p| p.parse::<f64>().ok()).collect();
    match values[..] {
        [a, b] if parts.len() == 2 && a.is_finite() && b.is_finite() && 0.0 <= a && a <= b => {
            Ok(Some((a, b)))
        }
        _ => Err(BenchError::config(
            "--timeline-itl-thresholds",
            format!("'{}' is not two ascending non-negative numbers", args.vllm.timeline_itl_thresholds),
            fix,
        )),
    }
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

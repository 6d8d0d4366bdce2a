//! Flags of `vllm bench serve` (vLLM 0.33) about requests, tokenizer and reports that the other
//! flag groups do not cover (flattened into `RunArgs`); checked against the backend by
//! `config::vllm_flags` (SB113 when a non-default value cannot apply). Defaults are vLLM's: a flag at its default is
//! never refused.

use clap::Args;

/// Request, tokenizer and report flags of vLLM 0.33.
#[derive(Debug, Clone, Args)]
pub struct VllmArgs {
    /// After the run, write every request's timeline (TTFT, then each inter-token gap coloured
    /// by --timeline-itl-thresholds) as a self-contained HTML page of SVG next to the result
    /// file: RESULT.timeline.html (docs/reports.md), as vLLM does (with plotly).
    #[arg(long, help_heading = "Output")]
    pub plot_timeline: bool,
    /// Two ITL thresholds in ms, comma-separated, splitting the timeline's gaps into three
    /// colours: below the first (green), between (orange), at or above the second (red).
    #[arg(long, default_value = "25,50", value_parser = crate::cli::values::itl_thresholds, help_heading = "Output")]
    pub timeline_itl_thresholds: crate::cli::values::ItlThresholds,
    /// Send single-token text probe requests ("Hi", max 1 token) one after another, pausing
    /// 1/RATE s after each, alongside the run and outside --max-concurrency; their latency is
    /// reported apart (probe_* keys): how much the load stalls an unrelated request. 0 = off.
    #[arg(long, default_value_t = 0.0, help_heading = "Load")]
    pub probe_request_rate: f64,
    /// Ask the server for beam search: `use_beam_search: true` in every completions or chat
    /// body (vLLM's request field; vLLM's own client accepts the flag and sends nothing).
    #[arg(long, help_heading = "Request")]
    pub use_beam_search: bool,
    /// Load no tokenizer in the client: prompts are built and counted with the server's
    /// /tokenize (as --tokenizer server) and output tokens come from the server's usage.
    #[arg(long, help_heading = "Model")]
    pub skip_tokenizer_init: bool,
    /// JSON object of chat template arguments, e.g. '{"enable_thinking": false}'. Passed to
    /// the chat template where the client renders it (custom, speed_bench, as vLLM), and sent
    /// by chat backends as the body's `chat_template_kwargs` for the server's rendering (an
    /// --extra-body `chat_template_kwargs` wins).
    #[arg(long, value_parser = crate::cli::values::chat_template_kwargs, help_heading = "Request")]
    pub chat_template_kwargs: Option<crate::cli::values::JsonObject>,
}

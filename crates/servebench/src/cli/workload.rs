//! Flags of trace replay, multi-turn sessions, LoRA adapters and duration-bound / staged load,
//! validated into `RunConfig` by `config::workload` (docs/workloads.md).

use clap::Args;
use servebench_runner::config::load_options::LoraAssignment;

/// Trace replay, multi-turn, LoRA and duration flags.
#[derive(Debug, Clone, Args)]
pub struct WorkloadArgs {
    // ---- timed trace (vLLM in-tree names and defaults) ----
    /// timed_trace: tokens each hash id expands to.
    #[arg(long, default_value_t = 16, help_heading = "Trace replay")]
    pub timed_trace_chunk_hash_size: u32,
    /// timed_trace: scale of trace time (0.5 replays twice as fast).
    #[arg(long, default_value_t = 1.0, help_heading = "Trace replay")]
    pub timed_trace_sec_multiplier: f64,
    /// timed_trace: name of the timestamp field (milliseconds).
    #[arg(long, default_value = "timestamp", help_heading = "Trace replay")]
    pub timed_trace_label_timestamp: String,
    /// timed_trace: name of the input-length field.
    #[arg(long, default_value = "input_length", help_heading = "Trace replay")]
    pub timed_trace_label_input_length: String,
    /// timed_trace: name of the output-length field.
    #[arg(long, default_value = "output_length", help_heading = "Trace replay")]
    pub timed_trace_label_output_length: String,
    /// timed_trace: name of the hash-ids field.
    #[arg(long, default_value = "hash_ids", help_heading = "Trace replay")]
    pub timed_trace_label_hash_ids: String,
    /// timed_trace: send on the trace's timestamps (the default for timed_trace).
    #[arg(long, help_heading = "Trace replay", conflicts_with = "no_self_timed")]
    pub self_timed: bool,
    /// timed_trace: ignore the timestamps and send on --request-rate instead.
    #[arg(long, help_heading = "Trace replay")]
    pub no_self_timed: bool,

    // ---- multi-turn (vLLM's Rust client names and defaults) ----
    /// Run conversations: each turn sends the history so far (chat backend only).
    #[arg(long, help_heading = "Multi-turn")]
    pub multi_turn: bool,
    /// Turns per synthetic conversation.
    #[arg(long, default_value_t = 3, help_heading = "Multi-turn")]
    pub multi_turn_num_turns: u32,
    /// Fewest turns per conversation (0 = the maximum).
    #[arg(long, default_value_t = 0, help_heading = "Multi-turn")]
    pub multi_turn_min_turns: u32,
    /// Most turns per conversation (0 = num-turns for synthetic, uncapped for ShareGPT).
    #[arg(long, default_value_t = 0, help_heading = "Multi-turn")]
    pub multi_turn_max_turns: u32,
    /// Requests in flight at most (default: --max-concurrency, else every conversation).
    #[arg(long, help_heading = "Multi-turn")]
    pub multi_turn_concurrency: Option<u64>,
    /// Think time between a reply and the next turn, ms.
    #[arg(long, default_value_t = 0.0, help_heading = "Multi-turn")]
    pub multi_turn_delay_ms: f64,
    /// User message length of turns after the first (0 = --random-input-len).
    #[arg(long, default_value_t = 0, help_heading = "Multi-turn")]
    pub per_turn_input_len: u32,
    /// Prefix-sharing mode: share of each message common to all conversations (no history).
    #[arg(long, default_value_t = 0.0, help_heading = "Multi-turn")]
    pub multi_turn_prefix_global_ratio: f64,
    /// Prefix-sharing mode: share of each message common to one conversation (no history).
    #[arg(long, default_value_t = 0.0, help_heading = "Multi-turn")]
    pub multi_turn_prefix_conversation_ratio: f64,

    // ---- LoRA ----
    /// LoRA adapter names; each request (or conversation) sends one as its model.
    #[arg(long, num_args = 1.., help_heading = "LoRA")]
    pub lora_modules: Vec<String>,
    /// How adapters are assigned: random (seeded by --seed) or round-robin.
    #[arg(long, default_value = "random", value_parser = crate::cli::values::lora_assignment, help_heading = "LoRA")]
    pub lora_assignment: LoraAssignment,

    // ---- duration / stages ----
    /// Send nothing after this many seconds (at --request-rate; requests reuse the prompts).
    #[arg(long, value_name = "SECONDS", help_heading = "Load")]
    pub duration: Option<f64>,
    /// Load stages run back to back, each reported on its own: rate stages RATE:SECONDS,...
    /// (e.g. 5:60,20:60), or concurrency stages c=N:SECONDS,... (e.g. c=8:60,c=32:60: a closed
    /// loop keeping N requests in flight; with the default infinite --request-rate and no
    /// --max-concurrency).
    #[arg(long, value_name = "RATE:SECONDS,...|c=N:SECONDS,...", value_parser = crate::cli::values::stages, help_heading = "Load")]
    pub stages: Option<crate::cli::values::Stages>,
    /// At the end of --duration/--stages: `drain` lets requests in flight finish, `cancel`
    /// stops them (recorded as cancelled).
    #[arg(long, default_value = "drain", value_parser = crate::cli::values::cancel_at_end, help_heading = "Load")]
    pub on_duration_end: crate::cli::values::CancelAtEnd,

    // ---- client-side load controls (AIPerf's counterparts) ----
    /// Requests sent and not yet at their first token, at most (AIPerf: --prefill-concurrency).
    /// A request takes a prefill slot after --max-concurrency's gate and frees it at its first
    /// generated token (or when it ends without one); streamed responses only.
    #[arg(long, value_name = "N", value_parser = crate::cli::values::prefill_concurrency, help_heading = "Load")]
    pub max_prefill_concurrency: Option<usize>,
    /// Percent of the requests to cancel by design (seeded by --seed), each
    /// --request-cancellation-delay seconds after its send starts if still running (AIPerf's name).
    #[arg(long, value_name = "PERCENT", value_parser = crate::cli::values::cancellation_rate, help_heading = "Load")]
    pub request_cancellation_rate: Option<f64>,
    /// Seconds after its send starts at which a request chosen by --request-cancellation-rate
    /// is cancelled, its connection closed (AIPerf's name).
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::values::cancellation_delay, help_heading = "Load")]
    pub request_cancellation_delay: Option<std::time::Duration>,

    // ---- early stop (GuideLLM's names where it has the feature) ----
    /// Stop the run when the server is saturated: over a whole window, requests are due faster
    /// than they finish and the number in flight grows steadily (GuideLLM's flag; our test,
    /// docs/metrics.md "Early stop"). Needs an arrival schedule (a finite --request-rate, a
    /// timed trace or rate stages). Exit code 4 when it fires.
    #[arg(long, help_heading = "Early stop")]
    pub detect_saturation: bool,
    /// --detect-saturation: the shortest window, seconds (widened to 4 service times).
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::values::saturation_window, help_heading = "Early stop")]
    pub saturation_window: Option<f64>,
    /// Stop the run when more than this fraction of the last --max-error-rate-window finished
    /// requests failed, e.g. 0.5 (GuideLLM's name). Exit code 4 when it fires.
    #[arg(long, value_name = "FRACTION", value_parser = crate::cli::values::max_error_rate, help_heading = "Early stop")]
    pub max_error_rate: Option<f64>,
    /// --max-error-rate: the sliding window, in finished requests [default: 30].
    #[arg(long, value_name = "N", value_parser = crate::cli::values::error_rate_window, help_heading = "Early stop")]
    pub max_error_rate_window: Option<usize>,
    /// Stop the run when more than N requests have failed in all (GuideLLM's name). Exit code 4
    /// when it fires.
    #[arg(long, value_name = "N", help_heading = "Early stop")]
    pub max_errors: Option<u64>,
    // ---- session trees (--dataset-name agentic; AIPerf's names where they exist) ----
    /// agentic: the trace format; default: told from the file.
    #[arg(long, value_name = "servebench|dag|weka", value_parser = crate::cli::agentic_values::agentic_format, help_heading = "Session trees")]
    pub agentic_format: Option<servebench_data::agentic::AgenticFormat>,
    /// agentic: recorded session starts and think/tool times are divided by this (AIPerf's name).
    #[arg(long, value_name = "X", value_parser = crate::cli::agentic_values::replay_speedup, help_heading = "Session trees")]
    pub replay_speedup: Option<f64>,
    /// agentic: cap on each think/tool time, seconds, after the speed-up (AIPerf's name).
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::agentic_values::inter_turn_delay_cap, help_heading = "Session trees")]
    pub inter_turn_delay_cap_seconds: Option<std::time::Duration>,
    /// agentic, open loop: cap on each pause between consecutive session starts, seconds,
    /// after the speed-up (AIPerf's name), so a sparse or sampled trace skips dead air.
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::agentic_values::max_idle_gap_cap, help_heading = "Session trees")]
    pub max_idle_gap_cap_seconds: Option<std::time::Duration>,
    /// agentic: replay a seeded sample (--seed) of N sessions, in file order.
    #[arg(long, value_name = "N", value_parser = crate::cli::agentic_values::agentic_sessions, help_heading = "Session trees")]
    pub agentic_sessions: Option<usize>,
    /// agentic: `open` starts each session at its recorded start; `closed` keeps N sessions
    /// running (--agentic-concurrency, else --max-concurrency).
    #[arg(long, value_name = "open|closed", value_parser = crate::cli::agentic_values::agentic_loop, help_heading = "Session trees")]
    pub agentic_loop: Option<crate::cli::agentic_values::AgenticLoop>,
    /// agentic, closed loop: sessions running at once (default: --max-concurrency).
    #[arg(long, value_name = "N", value_parser = crate::cli::agentic_values::agentic_concurrency, help_heading = "Session trees")]
    pub agentic_concurrency: Option<usize>,
}

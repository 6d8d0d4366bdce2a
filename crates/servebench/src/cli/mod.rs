//! Command-line interface. clap types live here only; `config.rs` turns them into a validated
//! `RunConfig`. Flags and defaults follow Python `vllm bench serve`.

pub mod agentic_values;
pub mod config_file;
pub mod dataset;
pub mod experiment;
pub mod front;
pub mod hf_parser_flags;
pub mod live;
pub mod network;
pub mod otel;
pub mod prefix_cache;
pub mod sampling;
pub mod shard;
pub mod subcommands;
pub mod tokens;
pub mod values;
pub mod vllm;
pub mod workload;

use crate::cli::values::SimMode;
use clap::{Args, Parser, Subcommand};

/// `vllm bench serve` flags that servebench does not implement yet. They are recognised (never
/// "unknown argument") and refused with error SB102 so that nothing is silently ignored. Every
/// flag of vLLM 0.33 is implemented (tests/cli_parity.rs); flags of newer vLLM versions go here
/// until they are.
pub const NOT_SUPPORTED_YET: &[&str] = &[];

/// servebench: benchmark OpenAI-compatible LLM inference servers.
///
/// With no subcommand it runs a benchmark (flags of `vllm bench serve`). `--sim` runs it against
/// an embedded simulated server instead of a real one.
#[derive(Debug, Parser)]
#[command(
    name = "servebench",
    version,
    args_conflicts_with_subcommands = true,
    allow_negative_numbers = true,
    // A flag given twice keeps its last value, as Python's argparse does for `vllm bench serve`
    // (`$COMMON_FLAGS --num-prompts 100`); list flags (`ArgAction::Append`) keep every value.
    args_override_self = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub run: RunArgs,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the simulated OpenAI-compatible server standalone.
    Sim(Box<SimArgs>),
    /// Measure the client's error against a fixed-timing simulator (separate process) at a
    /// ladder of concurrencies: measured − truth for TTFT, ITL, E2EL, with client CPU and RSS.
    Calibrate(subcommands::CalibrateArgs),
    /// Explain an error code (e.g. `servebench explain SB301`); without a code, list all codes.
    Explain {
        /// The code, e.g. SB301.
        code: Option<String>,
    },
    /// Write an HTML report (and optionally a CSV) from records files or result JSON files;
    /// several inputs are compared in one report.
    Report(ReportArgs),
    /// Merge the records files of the shards of one sharded run (--num-shards) into one result,
    /// recomputed over the union of their records (docs/scale-out.md).
    Merge(subcommands::MergeArgs),
    /// Compare result files against the first: deltas, % change, better/worse by the metric's
    /// direction, and significance tests where records or multi-run data allow: location tests
    /// for means and percentiles, a spread test for std (docs/experiments.md).
    Compare(subcommands::CompareArgs),
    /// Config files and scenario presets: `init` writes one, `show` prints the effective config
    /// of a command line, `presets` lists the presets (docs/config.md).
    #[command(subcommand)]
    Config(config_file::ConfigCommand),
}

/// Arguments of `servebench report`.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Records files (JSONL), or result JSON files whose `<result>.records.jsonl` is read.
    #[arg(required = true, value_name = "RECORDS_OR_RESULT")]
    pub inputs: Vec<std::path::PathBuf>,
    /// The HTML report to write.
    #[arg(short = 'o', long = "output", default_value = "report.html")]
    pub output: std::path::PathBuf,
    /// Also write the per-request CSV (a leading `run` column when several inputs are given).
    #[arg(long)]
    pub csv: Option<std::path::PathBuf>,
    /// Run names, in input order (default: the result's label or the file name). Place it after
    /// the inputs or repeat it (`--label a --label b`): it takes every following word.
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append)]
    pub label: Vec<String>,
    /// SLOs for goodput in the summary: ttft:MS tpot:MS e2el:MS.
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli::values::goodput)]
    pub goodput: Vec<crate::cli::values::Goodput>,
}

/// Options of the simulated server (shared by `servebench sim` and `--sim`).
#[derive(Debug, Clone, Args)]
pub struct SimOptions {
    /// Simulator: time to first token in ms (fixed mode).
    #[arg(long, default_value_t = 50.0)]
    pub sim_ttft_ms: f64,
    /// Simulator: inter-token interval in ms (fixed mode).
    #[arg(long, default_value_t = 10.0)]
    pub sim_itl_ms: f64,
    /// Simulator: model name it serves (default: with --sim, the run's --served-model-name or
    /// --model, so `--sim --model NAME` works as against a real server; else servebench-sim).
    #[arg(long)]
    pub sim_model: Option<String>,
    /// Simulator: tokenizer for prompt counting and /tokenize (path to tokenizer.json, a
    /// directory, or a built-in encoding such as cl100k_base).
    #[arg(long, default_value = "cl100k_base")]
    pub sim_tokenizer: String,
    /// Simulator: seed of output lengths when ignore_eos is not set.
    #[arg(long, default_value_t = 0)]
    pub sim_seed: u64,
    /// Simulator: maximum prompt + output length it accepts.
    #[arg(long, default_value_t = 131_072)]
    pub sim_max_model_len: u32,
    /// Simulator timing model: `fixed` (exact TTFT/ITL, the ground truth) or `engine`
    /// (continuous batching: queueing, KV capacity, chunked prefill; see docs/simulator.md).
    #[arg(long, value_enum, default_value_t = SimMode::Fixed)]
    pub sim_mode: SimMode,
    /// Simulator (engine): parameter preset (`h100-8b`, `cpu-tiny`); implies `--sim-mode engine`.
    /// The flags below override single values.
    #[arg(long, value_parser = crate::cli::values::sim_preset)]
    pub sim_preset: Option<crate::cli::values::SimPreset>,
    /// Simulator (engine): most sequences running at once.
    #[arg(long)]
    pub sim_max_num_seqs: Option<u32>,
    /// Simulator (engine): KV cache capacity in tokens.
    #[arg(long)]
    pub sim_kv_capacity_tokens: Option<u64>,
    /// Simulator (engine): prefill rate in prompt tokens per second.
    #[arg(long)]
    pub sim_prefill_tokens_per_s: Option<f64>,
    /// Simulator (engine): token budget of one step (chunked prefill).
    #[arg(long)]
    pub sim_max_num_batched_tokens: Option<u32>,
    /// Simulator (engine): fixed cost of a decode step in ms.
    #[arg(long)]
    pub sim_decode_step_ms: Option<f64>,
    /// Simulator (engine): added decode step cost per running sequence in µs.
    #[arg(long)]
    pub sim_decode_per_seq_us: Option<f64>,
    /// Simulator (engine): relative jitter of step durations (0.02 = ±2 %).
    #[arg(long)]
    pub sim_jitter: Option<f64>,
    /// Simulator (engine): speculative decoding draft tokens per step (0 = off).
    #[arg(long)]
    pub sim_spec_k: Option<u32>,
    /// Simulator (engine): acceptance probability of each draft token.
    #[arg(long)]
    pub sim_spec_acceptance: Option<f64>,
    /// Simulator (engine): prefix caching by block hash (`true`/`false`).
    #[arg(long)]
    pub sim_prefix_caching: Option<bool>,
    /// Simulator (engine): blocks the prefix cache keeps, least recently used evicted first
    /// (default: the KV capacity in blocks).
    #[arg(long, value_name = "BLOCKS")]
    pub sim_prefix_cache_blocks: Option<u64>,
    /// Simulator: inject a fault into this fraction of generation and pooling requests,
    /// KIND=RATE (repeatable; `all=RATE` sets every kind). Kinds: http_429, http_500, http_503,
    /// close, reset, stall, malformed_json, oversized_event, truncate, no_done, crlf,
    /// data_no_space, keep_alive, trickle; which apply to which answer: docs/simulator.md,
    /// "Faults".
    #[arg(long, value_name = "KIND=RATE", action = clap::ArgAction::Append, value_parser = crate::cli::values::sim_fault)]
    pub sim_fault: Vec<crate::cli::values::SimFault>,
    /// Simulator: LoRA adapter names it serves besides --sim-model (listed by /v1/models,
    /// accepted as a request's model).
    #[arg(long, num_args = 1.., value_name = "NAME")]
    pub sim_lora_modules: Vec<String>,
    /// Simulator: seed of the fault decisions (made per request from its x-request-id).
    #[arg(long, default_value_t = 0)]
    pub sim_fault_seed: u64,
    /// Simulator: how long a `stall` fault keeps a stream (or a JSON body) silent, in ms.
    #[arg(long, default_value_t = 2000.0)]
    pub sim_fault_stall_ms: f64,
    /// Simulator: the first N tokens of every chat and Responses output are reasoning deltas
    /// (sent before the content; part of the completion tokens).
    #[arg(long, default_value_t = 0)]
    pub sim_reasoning_tokens: u32,
    /// Simulator: chat delta field of reasoning text: `both` (current vLLM: `reasoning` and its
    /// deprecated alias `reasoning_content`, the same text), `reasoning`, or `reasoning_content`
    /// (older vLLM).
    #[arg(long, default_value = "both", value_parser = crate::cli::values::reasoning_field)]
    pub sim_reasoning_field: servebench_sim::ReasoningField,
    /// Simulator: vector length of /v1/embeddings and /pooling answers.
    #[arg(long, default_value_t = 256)]
    pub sim_embedding_dim: u32,
    /// Simulator: the server it imitates on the wire: sim (default: vLLM's shapes and every
    /// native endpoint), vllm, sglang, llamacpp, tgi, openai, gateway, trtllm, dynamo
    /// (docs/simulator.md).
    #[arg(long, default_value = "sim", value_parser = crate::cli::values::personality)]
    pub sim_personality: servebench_sim::Personality,
    /// Simulator (gateway personality): the path prefix the API is mounted under.
    #[arg(long, default_value = "/gw")]
    pub sim_path_prefix: String,
    /// Simulator: serve N simulated GPUs on /dcgm/metrics, in a DCGM exporter's format, whose
    /// power follows the running requests and whose energy counter is its exact integral
    /// (0 = no such route; docs/simulator.md, "GPUs").
    #[arg(long, default_value_t = 0, value_name = "N")]
    pub sim_gpus: u32,
    /// Simulator (--sim-gpus): watts of each GPU when idle.
    #[arg(long, default_value_t = 60.0, value_name = "W")]
    pub sim_gpu_idle_watts: f64,
    /// Simulator (--sim-gpus): watts each running request adds to each GPU.
    #[arg(long, default_value_t = 25.0, value_name = "W")]
    pub sim_gpu_request_watts: f64,
    /// Simulator (--sim-gpus): the power cap of each GPU, watts.
    #[arg(long, default_value_t = 700.0, value_name = "W")]
    pub sim_gpu_max_watts: f64,
    #[command(flatten)]
    pub sim_tls: crate::cli::network::SimTlsArgs,
}

#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1", value_parser = crate::cli::values::listen_host)]
    pub host: std::net::IpAddr,
    /// Port to listen on (0 = any free port).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,
    /// Record every event the simulator sends, with its monotonic send time, and write them as
    /// JSON lines to PATH when it stops (Ctrl-C or SIGTERM): the ground truth client
    /// measurements are compared with.
    #[arg(long)]
    pub ground_truth: Option<std::path::PathBuf>,
    /// Serve from this CPU only (Linux; 0-based), e.g. to keep the simulator off the client's
    /// core on one host.
    #[arg(long, value_name = "CPU")]
    pub pin_cpu: Option<usize>,
    #[command(flatten)]
    pub sim: SimOptions,
}

/// Flags of a benchmark run.
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    // ---- connection ----
    /// API dialect: `openai`/`vllm` (completions), `openai-chat`, `openai-responses`, the pooling
    /// backends `openai-embeddings`, `openai-embeddings-chat`, `vllm-pooling`, `vllm-rerank`, or a
    /// native one (docs/backends.md).
    #[arg(long, default_value = "openai", value_parser = crate::cli::values::backend, help_heading = "Connection")]
    pub backend: crate::cli::values::Backend,
    /// Server base URL (overrides --host/--port), e.g. http://10.0.0.1:8000.
    #[arg(long, value_parser = crate::cli::values::base_url, help_heading = "Connection")]
    pub base_url: Option<crate::cli::values::BaseUrl>,
    /// Server host (used when --base-url is not given).
    #[arg(long, default_value = "127.0.0.1", help_heading = "Connection")]
    pub host: String,
    /// Server port (used when --base-url is not given).
    #[arg(long, default_value_t = 8000, help_heading = "Connection")]
    pub port: u16,
    /// API path; defaults by backend (/v1/completions, /v1/chat/completions, /generate_stream, ...;
    /// docs/backends.md).
    #[arg(long, value_parser = crate::cli::values::endpoint, help_heading = "Connection")]
    pub endpoint: Option<String>,
    /// Extra request header KEY=VALUE (repeatable; several per flag allowed).
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli::values::header, help_heading = "Connection")]
    pub header: Vec<servebench_core::flag_values::Header>,
    /// Accept invalid TLS certificates.
    #[arg(long, help_heading = "Connection")]
    pub insecure: bool,
    #[command(flatten)]
    pub network: crate::cli::network::NetworkArgs,
    /// Run against an embedded simulated server on an ephemeral port (no server, no network).
    #[arg(long, help_heading = "Connection")]
    pub sim: bool,
    #[command(flatten, next_help_heading = "Simulator (with --sim)")]
    pub sim_options: SimOptions,

    // ---- model ----
    /// Model name; omitted → the first model of GET /v1/models.
    #[arg(long, help_heading = "Model")]
    pub model: Option<String>,
    /// Model name put in requests (defaults to --model).
    #[arg(long, help_heading = "Model")]
    pub served_model_name: Option<String>,
    /// Tokenizer: tokenizer.json path or directory, built-in encoding (cl100k_base, o200k_base,
    /// p50k_base, r50k_base, gpt2), Hugging Face model id, or `server` (the server's /tokenize).
    #[arg(long, help_heading = "Model")]
    pub tokenizer: Option<String>,
    /// Accepted for compatibility with vLLM and checked (auto, hf, slow, mistral, deepseek_v32,
    /// custom), but it has no effect: servebench always loads the tokenizer's tokenizer.json.
    #[arg(long, default_value = "auto", value_parser = crate::cli::values::tokenizer_mode, help_heading = "Model")]
    pub tokenizer_mode: crate::cli::values::TokenizerMode,
    /// Accepted for compatibility (no remote code is ever run).
    #[arg(long, help_heading = "Model")]
    pub trust_remote_code: bool,

    // ---- dataset ----
    /// random, random-mm, random-rerank, sharegpt, burstgpt, sonnet, custom, custom_image,
    /// custom_audio, prefix_repetition, spec_bench, speed_bench, hf or timed_trace (`-` and `_`
    /// spellings alike).
    #[arg(long, default_value = "random", value_parser = crate::cli::values::dataset_name, help_heading = "Dataset")]
    pub dataset_name: crate::cli::values::Dataset,
    /// Number of requests to send (prompts to build).
    #[arg(long, default_value_t = 1000, help_heading = "Dataset")]
    pub num_prompts: u64,
    /// Seed of the dataset sampling and the arrival schedule.
    #[arg(long, default_value_t = 0, help_heading = "Dataset")]
    pub seed: u64,
    /// random: prompt length in tokens.
    #[arg(long, default_value_t = 1024, help_heading = "Dataset")]
    pub random_input_len: u32,
    /// random: output length in tokens (max_tokens of each request).
    #[arg(long, default_value_t = 128, help_heading = "Dataset")]
    pub random_output_len: u32,
    /// random: tokens of a prefix shared by every prompt (before the random part).
    #[arg(long, default_value_t = 0, help_heading = "Dataset")]
    pub random_prefix_len: u32,
    /// Length spread: a number in [0, 1) or JSON {"input": r, "output": r}.
    #[arg(long, default_value = "0.0", value_parser = crate::cli::values::range_ratio, help_heading = "Dataset")]
    pub random_range_ratio: servebench_core::flag_values::RangeRatio,
    /// Send prompts as token-id arrays (completions only).
    #[arg(long, help_heading = "Dataset")]
    pub prompt_token_ids: bool,
    /// Overrides --random-input-len.
    #[arg(long, help_heading = "Dataset")]
    pub input_len: Option<u32>,
    /// Overrides --random-output-len.
    #[arg(long, help_heading = "Dataset")]
    pub output_len: Option<u32>,
    /// Drop requests whose prompt + output exceed this many tokens.
    #[arg(long, help_heading = "Dataset")]
    pub max_model_len: Option<u32>,
    /// Keep the dataset's order instead of shuffling it (sharegpt, custom, hf, ...).
    #[arg(long, help_heading = "Dataset")]
    pub disable_shuffle: bool,

    // ---- rate ----
    /// Requests per second (inf = all at once).
    #[arg(long, default_value = "inf", value_parser = crate::cli::values::request_rate, help_heading = "Load")]
    pub request_rate: f64,
    /// Gamma shape of inter-arrival times (1.0 = Poisson).
    #[arg(long, default_value_t = 1.0, help_heading = "Load")]
    pub burstiness: f64,
    /// Most requests in flight at once (client-side cap; default: no cap). A request
    /// whose scheduled time has come waits in the client's queue until a slot frees.
    #[arg(long, help_heading = "Load")]
    pub max_concurrency: Option<u64>,
    /// linear or exponential.
    #[arg(long, value_parser = crate::cli::values::ramp_strategy, help_heading = "Load")]
    pub ramp_up_strategy: Option<servebench_core::schedule::RampStrategy>,
    /// Ramp-up: request rate at the start of the run (with --ramp-up-strategy).
    #[arg(long, help_heading = "Load")]
    pub ramp_up_start_rps: Option<f64>,
    /// Ramp-up: request rate at the end of the run (with --ramp-up-strategy).
    #[arg(long, help_heading = "Load")]
    pub ramp_up_end_rps: Option<f64>,

    // ---- sampling ----
    /// Sampling temperature sent with every request (default: 0.0, greedy decoding, as `vllm bench
    /// serve` sends, for OpenAI-style backends; the server's own for native dialects).
    #[arg(long, value_parser = crate::cli::sampling::temperature, help_heading = "Sampling")]
    pub temperature: Option<f64>,
    /// Nucleus sampling top_p sent with every request (default: the server's).
    #[arg(long, value_parser = crate::cli::sampling::top_p, help_heading = "Sampling")]
    pub top_p: Option<f64>,
    /// top_k sent with every request (default: the server's).
    #[arg(long, help_heading = "Sampling")]
    pub top_k: Option<i64>,
    /// min_p sent with every request (default: the server's).
    #[arg(long, value_parser = crate::cli::sampling::min_p, help_heading = "Sampling")]
    pub min_p: Option<f64>,
    /// frequency_penalty sent with every request (default: the server's).
    #[arg(long, value_parser = crate::cli::sampling::frequency_penalty, help_heading = "Sampling")]
    pub frequency_penalty: Option<f64>,
    /// presence_penalty sent with every request (default: the server's).
    #[arg(long, value_parser = crate::cli::sampling::presence_penalty, help_heading = "Sampling")]
    pub presence_penalty: Option<f64>,
    /// repetition_penalty sent with every request (default: the server's).
    #[arg(long, value_parser = crate::cli::sampling::repetition_penalty, help_heading = "Sampling")]
    pub repetition_penalty: Option<f64>,
    /// JSON object merged into every request body (wins over sampling flags).
    #[arg(long, value_parser = crate::cli::values::json_object, help_heading = "Sampling")]
    pub extra_body: Option<crate::cli::values::JsonObject>,

    // ---- request ----
    /// Ask the server to ignore EOS (forced on for the random dataset, as vLLM does).
    #[arg(long, help_heading = "Request")]
    pub ignore_eos: bool,
    /// Ask for this many log-probabilities per output token.
    #[arg(long, help_heading = "Request")]
    pub logprobs: Option<u32>,
    /// Warm-up requests sent (and not measured) before the run.
    #[arg(long, default_value_t = 0, help_heading = "Request")]
    pub num_warmups: u64,
    /// Seconds to wait for the endpoint to answer a test request (0 = no check, vLLM's default).
    #[arg(long, default_value_t = 0, help_heading = "Request")]
    pub ready_check_timeout_sec: u64,
    /// Request ids are this prefix + the request index (default: bench-<8 hex>-).
    #[arg(long, help_heading = "Request")]
    pub request_id_prefix: Option<String>,
    /// Build the workload, print its statistics and exit (no benchmark traffic).
    #[arg(long, help_heading = "Request")]
    pub dry_run: bool,
    /// Verify the first N prompts' lengths with the server's /tokenize (0 = off).
    #[arg(long, default_value_t = 10, help_heading = "Request")]
    pub verify_prompts: u64,
    /// Skip verifying prompt lengths with the server's /tokenize.
    #[arg(long, help_heading = "Request")]
    pub skip_tokenize_verification: bool,
    /// Open this many connections before the run starts (0 = connect on demand, as vLLM).
    #[arg(long, default_value_t = 0, help_heading = "Request")]
    pub preconnect: u64,
    /// Run the client on this CPU only (Linux; 0-based), e.g. to keep it off the core of a
    /// simulator or server on the same host.
    #[arg(long, value_name = "CPU", help_heading = "Request")]
    pub pin_cpu: Option<usize>,
    /// Fail a request that has not finished after this many seconds.
    #[arg(long, default_value_t = 21_600.0, help_heading = "Request")]
    pub request_timeout: f64,
    /// Fail a request when no byte arrives for this many seconds (waiting for the response head
    /// included). Off by default: a loaded server may queue a request for a long time.
    #[arg(long, help_heading = "Request")]
    pub stall_timeout: Option<f64>,
    /// Fail a streamed request as `runaway_stream` (SB405) once it has more than
    /// FACTOR × max_tokens + 16 events: a server that never stops fails fast instead of
    /// running until --request-timeout. 0 disables the bound.
    #[arg(long, value_name = "FACTOR", default_value_t = 4, help_heading = "Request")]
    pub runaway_stream_factor: u32,
    /// Fail a non-streamed response (pooling, embeddings, `"stream": false` in --extra-body)
    /// whose body is larger than this many bytes, as `event_too_large`. Raise it for token-level
    /// pooling or large embedding batches; the body is held in memory while it is read.
    #[arg(long, value_name = "BYTES", default_value_t = servebench_client::request::DEFAULT_MAX_BODY_BYTES, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..), help_heading = "Request")]
    pub max_response_bytes: usize,
    /// Retry a request up to N times when its connection could not be made (nothing of it was
    /// sent). Off by default: other failures are never retried (a retried POST can bill twice).
    #[arg(long, default_value_t = 0, help_heading = "Request")]
    pub retries: u32,
    /// On Ctrl-C/SIGTERM: `cancel` stops in-flight requests at once (they are recorded as
    /// cancelled with their partial timings) or `drain` lets them finish. Either way nothing new
    /// is sent, results are written for what finished, and the exit code is 130. While
    /// draining, a second Ctrl-C cancels the requests in flight (still recorded, results still
    /// written); the next one exits at once.
    #[arg(long, default_value = "cancel", value_parser = crate::cli::values::interrupt_mode, help_heading = "Request")]
    pub on_interrupt: servebench_runner::InterruptMode,
    /// Exit with code 3 (after writing results) when more than this percentage of requests
    /// failed.
    #[arg(long, help_heading = "Request")]
    pub max_failure_rate: Option<f64>,

    // ---- output ----
    /// Write the result JSON (to --result-dir/--result-filename; default name from the
    /// backend, rate, model and time).
    #[arg(long, help_heading = "Output")]
    pub save_result: bool,
    /// Add the per-request arrays (ttfts, itls, latencies, lengths, errors, ...) to the
    /// result JSON.
    #[arg(long, help_heading = "Output")]
    pub save_detailed: bool,
    /// Append the result to an existing result file (one JSON object per line).
    #[arg(long, help_heading = "Output")]
    pub append_result: bool,
    /// Directory of the result file (default: the current directory); created if missing.
    #[arg(long, help_heading = "Output")]
    pub result_dir: Option<std::path::PathBuf>,
    /// File name of the result JSON (default: from the backend, rate, model and time).
    #[arg(long, help_heading = "Output")]
    pub result_filename: Option<String>,
    /// Records file (JSONL, one line per request, appended as each request ends). Default with
    /// --save-result: next to the result file, `<result>.records.jsonl`.
    #[arg(long, help_heading = "Output")]
    pub records: Option<std::path::PathBuf>,
    /// Label of the run (in the result's `label` key and the default file name).
    #[arg(long, help_heading = "Output")]
    pub label: Option<String>,
    /// KEY=VALUE pairs copied into the result JSON.
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli::values::metadata, help_heading = "Output")]
    pub metadata: Vec<(String, String)>,
    /// Comma-separated metrics to report percentiles for (ttft,tpot,itl,e2el).
    #[arg(long, value_parser = crate::cli::values::metric_names, help_heading = "Output")]
    pub percentile_metrics: Option<crate::cli::values::MetricNames>,
    /// Comma-separated percentiles, e.g. 50,90,99.
    #[arg(long, default_value = "99", value_parser = crate::cli::values::percentiles, help_heading = "Output")]
    pub metric_percentiles: crate::cli::values::Percentiles,
    /// SLOs for goodput: ttft:MS tpot:MS e2el:MS.
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli::values::goodput, help_heading = "Output")]
    pub goodput: Vec<crate::cli::values::Goodput>,
    /// Do not print the progress line.
    #[arg(long, help_heading = "Output")]
    pub disable_tqdm: bool,
    /// Print the full detail after the result block: token sources and accounting, cached input
    /// tokens, the schedule-anchored view (Response TTFT/E2EL, queue time), ITL per token and the
    /// client's health figures. The result JSON has all of it either way.
    #[arg(long, help_heading = "Output")]
    pub verbose: bool,
    /// Write a self-contained HTML report with charts to PATH after the run.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub html_report: Option<std::path::PathBuf>,
    /// Write one CSV row per request to PATH after the run.
    #[arg(long, value_name = "PATH", help_heading = "Output")]
    pub csv: Option<std::path::PathBuf>,
    /// After the run, write the prompt, output and prompt + output token histograms and the
    /// tokens per request as a self-contained HTML page of SVG charts next to the result file:
    /// RESULT.dataset_stats.html (the result's name with .json replaced; in --result-dir),
    /// with or without --save-result. vLLM writes RESULT.dataset_stats.png.
    #[arg(long, help_heading = "Output")]
    pub plot_dataset_stats: bool,
    #[command(flatten)]
    pub dataset: crate::cli::dataset::DatasetArgs,
    #[command(flatten)]
    pub hf_parsers: crate::cli::hf_parser_flags::HfParserArgs,
    #[command(flatten)]
    pub vllm: crate::cli::vllm::VllmArgs,
    #[command(flatten)]
    pub workload: crate::cli::workload::WorkloadArgs,
    #[command(flatten)]
    pub prefix_cache: crate::cli::prefix_cache::PrefixCacheArgs,
    #[command(flatten)]
    pub live: crate::cli::live::LiveArgs,
    #[command(flatten)]
    pub otel: crate::cli::otel::OtelArgs,
    #[command(flatten)]
    pub shard: crate::cli::shard::ShardArgs,
    #[command(flatten)]
    pub experiment: crate::cli::experiment::ExperimentArgs,
    #[command(flatten)]
    pub tokens: crate::cli::tokens::TokenArgs,
    #[command(flatten)]
    pub config_file: crate::cli::config_file::ConfigFileArgs,
}

impl RunArgs {
    /// Whether `--dataset-name` is the timed trace.
    pub fn is_trace(&self) -> bool {
        self.dataset_name.kind == crate::cli::values::DatasetName::TimedTrace
    }
}

/// Rewrites Python's underscore spellings (`--result_filename`) to ours (`--result-filename`),
/// so existing `vllm bench serve` scripts work unchanged.
pub fn normalize_underscores(args: impl IntoIterator<Item = String>) -> Vec<String> {
    args.into_iter()
        .map(|a| {
            if let Some(rest) = a.strip_prefix("--") {
                let (name, value) = match rest.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (rest, None),
                };
                if name.contains('_') {
                    let name = name.replace('_', "-");
                    return match value {
                        Some(v) => format!("--{name}={v}"),
                        None => format!("--{name}"),
                    };
                }
            }
            a
        })
        .collect()
}

/// The first flag in `args` that `vllm bench serve` has but servebench does not support yet.
pub fn find_unsupported(args: &[String]) -> Option<&'static str> {
    find_listed(args, NOT_SUPPORTED_YET)
}

/// The first flag in `args` that is in `list` (`--flag` or `--flag=value`).
pub fn find_listed(args: &[String], list: &[&'static str]) -> Option<&'static str> {
    args.iter().find_map(|a| {
        let name = a.split_once('=').map_or(a.as_str(), |(n, _)| n);
        list.iter().copied().find(|f| *f == name)
    })
}

#[cfg(test)]
mod help_tests;

//! Flags of the subcommands besides `sim` and `report` (in `cli/mod.rs`): `calibrate`,
//! `merge`, `compare`. Their commands are in `cmd/`.

use clap::Args;
use std::path::PathBuf;

/// Arguments of `servebench calibrate`.
#[derive(Debug, Clone, Args)]
pub struct CalibrateArgs {
    /// Concurrency levels, comma-separated.
    #[arg(long, default_value = "1,10,100,500,1000", value_delimiter = ',')]
    pub levels: Vec<u64>,
    /// Requests per level (default: max(20, 2 × level)).
    #[arg(long)]
    pub requests: Option<u64>,
    /// Output tokens per request (ignore_eos).
    #[arg(long, default_value_t = 100)]
    pub output_len: u32,
    /// Prompt tokens per request.
    #[arg(long, default_value_t = 32)]
    pub input_len: u32,
    /// Simulator time to first token in ms (the truth).
    #[arg(long, default_value_t = 50.0)]
    pub ttft_ms: f64,
    /// Simulator inter-token interval in ms (the truth).
    #[arg(long, default_value_t = 10.0)]
    pub itl_ms: f64,
    /// Tokenizer of both simulator and client (path to tokenizer.json, a directory, or a
    /// built-in encoding).
    #[arg(long, default_value = "cl100k_base")]
    pub tokenizer: String,
    /// Write the numbers as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the per-level result files in this directory (default: a temporary one, removed).
    #[arg(long)]
    pub work_dir: Option<PathBuf>,
    /// Let the simulator and the client share all CPUs. By default, with two or more CPUs,
    /// the client runs on the first CPU this process may use and the simulator on the second
    /// (`--pin-cpu`), as if on two hosts: otherwise each preempts the other and that delay is
    /// charged to the client.
    #[arg(long)]
    pub no_pin: bool,
    /// Run the simulator from this servebench binary instead of this one (another build), to
    /// tell a simulator change from a client change when the figures move.
    #[arg(long, value_name = "PATH")]
    pub sim_exe: Option<PathBuf>,
    /// Run the client from this servebench binary instead of this one (another build).
    #[arg(long, value_name = "PATH")]
    pub client_exe: Option<PathBuf>,
}

/// Arguments of `servebench merge`.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// The records files of the shards, one per shard index (`*.records.jsonl` written by runs
    /// with --num-shards), or directories: every `*.records.jsonl` directly in them that has a
    /// shard header.
    #[arg(required = true, value_name = "SHARD_RECORDS")]
    pub inputs: Vec<PathBuf>,
    /// Wait up to SECS for every shard to finish (its records file ends with the shard's summary
    /// line), checking every 5 s; then merge what is there. For a merge Job started together
    /// with the shards (deploy/k8s).
    #[arg(long, value_name = "SECS", default_value_t = 0)]
    pub wait_secs: u64,
    /// Write the merged result JSON and, next to it, the merged records file.
    #[arg(long)]
    pub save_result: bool,
    /// With --save-result: write every per-request array (ttfts, itls, errors, input_lens,
    /// output_lens, start_times, generated_texts) in the merged result, as a run's
    /// --save-detailed does (latencies and queue_times are always written).
    #[arg(long)]
    pub save_detailed: bool,
    /// Directory of the merged result (default: the current directory).
    #[arg(long, value_name = "DIR")]
    pub result_dir: Option<PathBuf>,
    /// File name of the merged result (default: vLLM's name for the whole run).
    #[arg(long, value_name = "NAME")]
    pub result_filename: Option<String>,
    /// Merge even if some shards are missing (a warning says so; the result covers only part
    /// of the workload). Without it a missing shard is an error (SB702).
    #[arg(long)]
    pub allow_missing_shards: bool,
    /// Comma-separated metrics to report percentiles of (as for a run; default: the shards' run's,
    /// else ttft,tpot,itl).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::metric_names)]
    pub percentile_metrics: Option<crate::cli::values::MetricNames>,
    /// Comma-separated percentiles (as for a run; default: the shards' run's, else 99).
    #[arg(long, value_name = "LIST", value_parser = crate::cli::values::percentiles)]
    pub metric_percentiles: Option<crate::cli::values::Percentiles>,
    /// Goodput SLOs, KEY:VALUE in ms (as for a run; default: the shards' run's).
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli::values::goodput)]
    pub goodput: Vec<crate::cli::values::Goodput>,
}

/// Arguments of `servebench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result files (vLLM's JSON, ours, JSONL: the last line, or a `--num-runs` document); the
    /// first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    pub inputs: Vec<PathBuf>,
    /// Significance level of the tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Also write the comparison as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub output_json: Option<PathBuf>,
}

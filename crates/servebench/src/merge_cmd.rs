//! `servebench merge SHARD_RECORDS... [--save-result]`: the result of a sharded run, recomputed
//! from the union of its shards' records (docs/scale-out.md).

//!
//! The shard files are read by `servebench_runner::records::shard_files`, the merged run
//! described by `servebench_runner::results::merged`, the shard table is
//! `servebench_report::sections::shards`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use servebench_core::config::parse_percentile_metrics;
use servebench_core::merge::{merge_shards, MergedRun};
use servebench_core::metrics::{compute, MetricsConfig, RunMetrics};
use servebench_core::BenchError;
use servebench_report::sections::shards::shard_table;
use servebench_report::{console_block, default_result_filename, write_result, RunInfo};
use servebench_runner::records::shard_files::{read_shard, wait_for_shards, write_merged_records};
use servebench_runner::results::merged::{merged_result, merged_run_info};

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
    /// Comma-separated metrics to report percentiles of (as for a run).
    #[arg(long, value_name = "LIST", value_parser = crate::cli_values::metric_names)]
    pub percentile_metrics: Option<crate::cli_values::MetricNames>,
    /// Comma-separated percentiles (as for a run).
    #[arg(long, default_value = "99", value_name = "LIST", value_parser = crate::cli_values::percentiles)]
    pub metric_percentiles: crate::cli_values::Percentiles,
    /// Goodput SLOs, KEY:VALUE in ms (as for a run).
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append, value_parser = crate::cli_values::goodput)]
    pub goodput: Vec<crate::cli_values::Goodput>,
}

/// `servebench merge`. Returns the exit code.
pub fn merge(args: &MergeArgs) -> anyhow::Result<u8> {
    let cfg = MetricsConfig {
        percentiles: args.metric_percentiles.0.clone(),
        selected: match &args.percentile_metrics {
            Some(m) => m.0.clone(),
            None => parse_percentile_metrics("ttft,tpot,itl")?,
        },
        goodput: crate::cli_values::goodput_slos(&args.goodput),
    };
    let files = wait_for_shards(&args.inputs, Duration::from_secs(args.wait_secs), &mut |done, of| {
        let of = of.map_or_else(|| "?".into(), |n| n.to_string());
        println!("Waiting for shards: {done} of {of} finished");
    })?;
    let mut inputs = Vec::new();
    for path in &files {
        inputs.push(read_shard(path, &mut || {
            println!("note: {}: ignored a truncated last line (the shard was stopped?)", path.display());
        })?);
    }
    let merged = merge_shards(inputs, args.allow_missing_shards)?;
    let metrics = compute(&merged.records, &cfg);
    let info = merged_run_info(&merged);
    println!("{}", console_block(&info, &metrics));
    print!("{}", shard_table(&merged));
    for w in &merged.warnings {
        println!("note: {w}");
    }
    if args.save_result {
        save(args, &info, &metrics, &merged)?;
    }
    Ok(0)
}

/// `--save-result`: the merged result and, next to it, the merged records file.
fn save(args: &MergeArgs, info: &RunInfo, metrics: &RunMetrics, merged: &MergedRun) -> anyhow::Result<()> {
    let dir = args.result_dir.clone().unwrap_or_default();
    let name = args.result_filename.clone().unwrap_or_else(|| default_result_filename(info));
    let path = dir.join(name);
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(dir.display(), e))?;
    }
    write_result(&path, &merged_result(info, metrics, merged), false)?;
    println!("Result: {}", path.display());
    let mut records = path.as_os_str().to_os_string();
    records.push(".records.jsonl");
    let records = PathBuf::from(records);
    write_merged_records(&records, merged)?;
    println!("Records: {} ({} lines)", records.display(), merged.records.len());
    Ok(())
}

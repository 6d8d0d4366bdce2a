//! `servebench merge SHARD_RECORDS... [--save-result]`: the result of a sharded run, recomputed
//! from the union of its shards' records (docs/scale-out.md).

//!
//! The shard files are read by `servebench_runner::records::shard_files`, the merged run
//! described by `servebench_runner::results::merged`, the shard table is
//! `servebench_report::sections::shards`.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::subcommands::MergeArgs;
use servebench_core::merge::{merge_shards, MergedRun};
use servebench_core::metrics::{compute, MetricsConfig, RunMetrics};
use servebench_core::BenchError;
use servebench_report::sections::shards::shard_table;
use servebench_report::sections::steady_state::steady_state_block;
use servebench_report::{console_block, default_result_filename, write_result, RunInfo};
use servebench_runner::records::shard_files::{
    earlier_merges, read_shard, wait_for_shards, write_merged_records,
};
use servebench_runner::results::inputs::shard_records_path;
use servebench_runner::results::merged::{merged_result, merged_run_info, merged_steady_state};
use servebench_runner::results::steady::Steady;

/// `--wait-secs`: at most `MAX_FLAG_SECONDS` (SB101; 2^63 s overflowed the deadline).
fn wait(secs: u64) -> Result<Duration, BenchError> {
    if secs as f64 > servebench_core::flag_values::MAX_FLAG_SECONDS {
        return Err(crate::config::too_many_seconds("--wait-secs", secs));
    }
    Ok(Duration::from_secs(secs))
}

/// The statistics of the merged result: the flags given to `merge`, else what the shards' run
/// reported (recorded in their headers; vLLM's defaults for files written before that).
fn metrics_config(args: &MergeArgs, recorded: Option<MetricsConfig>) -> MetricsConfig {
    let recorded = recorded.unwrap_or_default();
    MetricsConfig {
        percentiles: args.metric_percentiles.as_ref().map_or(recorded.percentiles, |p| p.0.clone()),
        selected: args.percentile_metrics.as_ref().map_or(recorded.selected, |m| m.0.clone()),
        goodput: match args.goodput.is_empty() {
            true => recorded.goodput,
            false => crate::cli::values::goodput_slos(&args.goodput),
        },
    }
}

/// `servebench merge`. Returns the exit code.
pub fn merge(args: &MergeArgs) -> anyhow::Result<u8> {
    crate::config::check_result_filename(args.result_filename.as_deref())?;
    // A shard's result JSON stands for the records file it names.
    let inputs = args.inputs.iter().map(|p| shard_records_path(p)).collect::<Result<Vec<_>, _>>()?;
    let files = wait_for_shards(&inputs, wait(args.wait_secs)?, &mut |done, of| {
        let of = of.map_or_else(|| "?".into(), |n| n.to_string());
        outln!("Waiting for shards: {done} of {of} finished");
    })?;
    for f in earlier_merges(&inputs)? {
        errln!(
            "note: {}: left out, an earlier merge of these shards (one shard of the same workload)",
            f.display()
        );
    }
    let mut inputs = Vec::new();
    for path in &files {
        inputs.push(read_shard(path, &mut || {
            errln!("note: {}: ignored a truncated last line (the shard was stopped?)", path.display());
        })?);
    }
    let merged = merge_shards(inputs, args.allow_missing_shards)?;
    let cfg = metrics_config(args, merged.header.run.metrics.clone());
    let metrics = compute(&merged.records, &cfg);
    let info = merged_run_info(&merged);
    let steady = merged_steady_state(&merged, (&cfg.percentiles, &cfg.selected));
    outln!("{}", console_block(&info, &metrics));
    if let Some(s) = &steady {
        outln!("{}", steady_state_block(s));
    }
    out!("{}", shard_table(&merged));
    if let Some(e) = merged.early_stop() {
        outln!("{} (first shard to stop, on the merged clock)", e.console_line());
    }
    for w in &merged.warnings {
        errln!("note: {w}");
    }
    if args.save_result {
        let mut read: Vec<(String, PathBuf)> =
            files.iter().map(|p| ("a shard file".to_owned(), p.clone())).collect();
        read.extend(args.inputs.iter().map(|p| ("an input".to_owned(), p.clone())));
        // A shard's result written beside its records file (`R` for `R.records.jsonl`).
        let results =
            files.iter().filter_map(|p| Some(PathBuf::from(p.to_str()?.strip_suffix(".records.jsonl")?)));
        read.extend(results.filter(|p| p.is_file()).map(|p| ("a shard's result".to_owned(), p)));
        save(args, &info, &metrics, &merged, steady.as_ref(), &read)?;
    }
    Ok(0)
}

/// `--save-result`: the merged result and, next to it, the merged records file.
fn save(
    args: &MergeArgs,
    info: &RunInfo,
    metrics: &RunMetrics,
    merged: &MergedRun,
    steady: Option<&Steady>,
    read: &[(String, PathBuf)],
) -> anyhow::Result<()> {
    let dir = args.result_dir.clone().unwrap_or_default();
    let name = args.result_filename.clone().unwrap_or_else(|| default_result_filename(info));
    let path = dir.join(name);
    let mut records = path.as_os_str().to_os_string();
    records.push(".records.jsonl");
    let records = PathBuf::from(records);
    // Neither the merged result nor its records may replace a shard's file (SB120).
    let outputs = [
        ("--result-filename".to_owned(), path.clone()),
        ("the merged records file".to_owned(), records.clone()),
    ];
    crate::config::path_collisions::check_files(read, &outputs)?;
    if !dir.as_os_str().is_empty() {
        std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(dir.display(), e))?;
    }
    write_result(&path, &merged_result(info, metrics, merged, steady, args.save_detailed), false)?;
    outln!("Result: {}", path.display());
    write_merged_records(&records, merged)?;
    outln!("Records: {} ({} lines)", records.display(), merged.records.len());
    Ok(())
}

//! `servebench merge SHARD_RECORDS... [--save-result]`: the result of a sharded run, recomputed
//! from the union of its shards' records (docs/scale-out.md).

use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::{json, Value};
use servebench_core::config::{parse_goodput, parse_metric_percentiles, parse_percentile_metrics};
use servebench_core::merge::{merge_shards, MergedRun, ShardInput};
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::schedule::{ArrivalSchedule, RateConfig};
use servebench_core::shard::ShardHeader;
use servebench_core::BenchError;
use servebench_report::{
    console_block, default_result_filename, result_json, write_result, ClientHealth, RunInfo,
};
use servebench_runner::read_records_file;
use time::OffsetDateTime;

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
    #[arg(long, value_name = "LIST")]
    pub percentile_metrics: Option<String>,
    /// Comma-separated percentiles (as for a run).
    #[arg(long, default_value = "99", value_name = "LIST")]
    pub metric_percentiles: String,
    /// Goodput SLOs, KEY:VALUE in ms (as for a run).
    #[arg(long, num_args = 1.., action = clap::ArgAction::Append)]
    pub goodput: Vec<String>,
}

/// The records files named by `inputs`: files as given, directories expanded to their
/// `*.records.jsonl` files that start with a shard header (sorted by name).
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, BenchError> {
    let mut out = Vec::new();
    for p in inputs {
        if !p.is_dir() {
            out.push(p.clone());
            continue;
        }
        let mut found: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| BenchError::io(p.display(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.is_file() && f.to_string_lossy().ends_with(".records.jsonl"))
            .filter(|f| first_line(f).is_some_and(|l| servebench_core::shard::is_shard_line(&l)))
            .collect();
        found.sort();
        out.extend(found);
    }
    Ok(out)
}

fn first_line(path: &Path) -> Option<String> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).ok()?;
    std::io::BufReader::new(f).lines().next()?.ok()
}

/// Expands `inputs` until every shard's file has its summary line, or `wait` has passed.
fn wait_for_shards(inputs: &[PathBuf], wait: std::time::Duration) -> Result<Vec<PathBuf>, BenchError> {
    let deadline = std::time::Instant::now() + wait;
    loop {
        let files = expand_inputs(inputs)?;
        if wait.is_zero() {
            return Ok(files);
        }
        let mut expected = None;
        let mut finished = 0;
        for f in &files {
            if let Ok(file) = read_records_file(f) {
                expected = expected.or(file.shard_header.map(|h| h.num_shards as usize));
                finished += usize::from(file.shard_summary.is_some());
            }
        }
        if expected.is_some_and(|n| finished >= n) {
            // A shard renames its records file next to its result just after writing the
            // summary: let that settle, then list the files again.
            std::thread::sleep(std::time::Duration::from_secs(2));
            return expand_inputs(inputs);
        }
        if std::time::Instant::now() >= deadline {
            return Ok(files);
        }
        let of = expected.map_or_else(|| "?".into(), |n| n.to_string());
        println!("Waiting for shards: {finished} of {of} finished");
        std::thread::sleep(
            std::time::Duration::from_secs(5)
                .min(deadline.saturating_duration_since(std::time::Instant::now())),
        );
    }
}

/// Reads one shard's records file.
pub fn read_shard(path: &Path) -> Result<ShardInput, BenchError> {
    let file = read_records_file(path)?;
    if file.truncated > 0 {
        println!("note: {}: ignored a truncated last line (the shard was stopped?)", path.display());
    }
    let header = file.shard_header.ok_or_else(|| BenchError::ShardSet {
        detail: format!(
            "{}: no shard header: this records file was not written by a run with --num-shards",
            path.display()
        ),
    })?;
    Ok(ShardInput {
        source: path.display().to_string(),
        header,
        summary: file.shard_summary,
        records: file.records,
    })
}

/// `servebench merge`. Returns the exit code.
pub fn merge(args: &MergeArgs) -> anyhow::Result<u8> {
    let cfg = MetricsConfig {
        percentiles: parse_metric_percentiles(&args.metric_percentiles)?,
        selected: parse_percentile_metrics(args.percentile_metrics.as_deref().unwrap_or("ttft,tpot,itl"))?,
        goodput: parse_goodput(&args.goodput)?,
    };
    let files = wait_for_shards(&args.inputs, std::time::Duration::from_secs(args.wait_secs))?;
    let inputs = files.iter().map(|p| read_shard(p)).collect::<Result<Vec<_>, _>>()?;
    let merged = merge_shards(inputs, args.allow_missing_shards)?;
    let metrics = compute(&merged.records, &cfg);
    let info = merged_info(&merged);
    println!("{}", console_block(&info, &metrics));
    print!("{}", shard_table(&merged));
    for w in &merged.warnings {
        println!("note: {w}");
    }
    if args.save_result {
        let dir = args.result_dir.clone().unwrap_or_default();
        let name = args.result_filename.clone().unwrap_or_else(|| default_result_filename(&info));
        let path = dir.join(name);
        if !dir.as_os_str().is_empty() {
            std::fs::create_dir_all(&dir).map_err(|e| BenchError::io(dir.display(), e))?;
        }
        let mut result = result_json(&info, &metrics, &merged.records, false);
        if let Value::Object(o) = &mut result {
            o.insert("shards".into(), shards_json(&merged));
            o.insert("merge_warnings".into(), json!(merged.warnings));
        }
        write_result(&path, &result, false)?;
        println!("Result: {}", path.display());
        let mut records = path.as_os_str().to_os_string();
        records.push(".records.jsonl");
        let records = PathBuf::from(records);
        write_merged_records(&records, &merged)?;
        println!("Records: {} ({} lines)", records.display(), merged.records.len());
    }
    Ok(0)
}

/// The merged records file: a header of a 1-shard run anchored at the merged origin (so it can
/// be reported or merged again), then every record.
fn write_merged_records(path: &Path, merged: &MergedRun) -> Result<(), BenchError> {
    let header = ShardHeader {
        shard_index: 0,
        num_shards: 1,
        shard_requests: merged.records.len() as u64,
        wall_anchor_unix_us: merged.origin_unix_us,
        waited_us: None,
        ..merged.header.clone()
    };
    let mut text = header.to_line();
    text.push('\n');
    for r in &merged.records {
        text.push_str(&serde_json::to_string(r).map_err(|e| BenchError::io(path.display(), e))?);
        text.push('\n');
    }
    std::fs::write(path, text).map_err(|e| BenchError::io(path.display(), e))
}

fn local(unix_us: u64) -> OffsetDateTime {
    let now = OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc());
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_us) * 1000)
        .map(|t| t.to_offset(now.offset()))
        .unwrap_or(now)
}

/// The merged run's description. Client health is the worst shard's (highest lateness,
/// hiccups, CPU share and RSS); connections and CPU seconds are summed.
fn merged_info(m: &MergedRun) -> RunInfo {
    let run = &m.header.run;
    let rate = RateConfig {
        request_rate: run.request_rate.unwrap_or(f64::INFINITY),
        burstiness: run.burstiness,
        ramp_up: run.ramp_up,
    };
    let rps_change_events = run
        .ramp_up
        .map(|_| {
            ArrivalSchedule::generate(m.header.total_requests as usize, &rate, m.header.seed)
                .rps_change_events(&rate)
        })
        .unwrap_or_default();
    let summaries: Vec<_> = m.shards.iter().filter_map(|s| s.summary.as_ref()).collect();
    let worst = |f: &dyn Fn(&servebench_core::shard::ShardSummary) -> Option<f64>| {
        summaries
            .iter()
            .filter_map(|s| f(s))
            .fold(None, |acc: Option<f64>, v| Some(acc.map_or(v, |a| a.max(v))))
    };
    let cpu_share = |s: &servebench_core::shard::ShardSummary| {
        (s.wall_seconds > 0.0 && s.cpus > 0)
            .then(|| s.client_cpu_seconds / s.wall_seconds * 100.0 / s.cpus as f64)
    };
    let any = !summaries.is_empty();
    let client_health = ClientHealth {
        dispatch_lateness_p50_us: worst(&|s| s.dispatch_lateness_p50_us),
        dispatch_lateness_p99_us: worst(&|s| s.dispatch_lateness_p99_us),
        hiccup_p99_us: worst(&|s| s.hiccup_p99_us),
        // The worst shard's CPU as a share of its cores, expressed against one core.
        client_cpu_percent: worst(&cpu_share),
        available_cores: any.then_some(1.0),
        peak_rss_bytes: summaries.iter().filter_map(|s| s.peak_rss_bytes).max(),
        client_cpu_seconds: any.then(|| summaries.iter().map(|s| s.client_cpu_seconds).sum()),
        connections_opened: any.then(|| summaries.iter().map(|s| s.connections_opened).sum()),
        stale_connections: None,
        resent_requests: Some(m.records.iter().filter(|r| r.resent).count() as u64),
        pooling_disabled: None,
    };
    RunInfo {
        date: local(m.records.iter().filter_map(|r| r.done_us).max().unwrap_or(0) + m.origin_unix_us),
        origin_wall: local(m.origin_unix_us),
        backend: run.backend.clone(),
        endpoint_type: run.backend.clone(),
        label: run.label.clone(),
        model_id: run.model_id.clone(),
        tokenizer_id: run.tokenizer_id.clone(),
        num_prompts: m.header.total_requests,
        request_rate: rate.request_rate,
        burstiness: rate.burstiness,
        max_concurrency: run.max_concurrency,
        ramp_up: run.ramp_up,
        rps_change_events,
        metadata: vec![
            ("num_shards".into(), m.header.num_shards.to_string()),
            ("workload_fingerprint".into(), m.header.workload_fingerprint.clone()),
        ],
        client_health,
    }
}

fn ms(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), |v| format!("{:.2}", v / 1000.0))
}

/// Per-shard client health and clock-skew estimates, as a console table.
pub fn shard_table(m: &MergedRun) -> String {
    let mut out = format!(
        "Shards: {} of {} merged (fingerprint {}…, seed {})\n",
        m.shards.len(),
        m.header.num_shards,
        m.header.workload_fingerprint.chars().take(12).collect::<String>(),
        m.header.seed
    );
    out.push_str(&format!(
        "{:<6}{:>9}{:>12}{:>15}{:>11}{:>15}{:>13}{:>13}{:>8}\n",
        "shard",
        "records",
        "origin+ms",
        "anchor-start",
        "waited s",
        "1st late ms",
        "late p99 ms",
        "hiccup p99",
        "CPU %"
    ));
    for s in &m.shards {
        let sum = s.summary.as_ref();
        out.push_str(&format!(
            "{:<6}{:>9}{:>12.3}{:>15}{:>11}{:>15}{:>13}{:>13}{:>8}\n",
            s.shard_index,
            s.records,
            s.anchor_offset_us as f64 / 1000.0,
            s.anchor_minus_start_us.map_or_else(|| "-".into(), |v| format!("{v} µs")),
            s.waited_us.map_or_else(|| "-".into(), |v| format!("{:.1}", v as f64 / 1e6)),
            ms(sum.and_then(|x| x.first_dispatch_lateness_us).map(|v| v as f64)),
            ms(sum.and_then(|x| x.dispatch_lateness_p99_us)),
            ms(sum.and_then(|x| x.hiccup_p99_us)),
            sum.filter(|x| x.wall_seconds > 0.0).map_or_else(
                || "-".into(),
                |x| format!("{:.0}", x.client_cpu_seconds / x.wall_seconds * 100.0)
            ),
        ));
    }
    let spread = m.shards.iter().map(|s| s.anchor_offset_us).max().unwrap_or(0);
    out.push_str(&format!(
        "Clock skew estimate: shard origins within {:.3} ms of each other on their own clocks{}; \
         offsets between host clocks themselves (NTP) are not visible in records\n",
        spread as f64 / 1000.0,
        if m.header.start_at_unix_us.is_some() {
            " (all anchored on --start-at)"
        } else {
            " (no --start-at)"
        }
    ));
    out
}

/// The `shards` key of the merged result.
fn shards_json(m: &MergedRun) -> Value {
    Value::Array(
        m.shards
            .iter()
            .map(|s| {
                json!({
                    "shard_index": s.shard_index,
                    "records_file": s.source,
                    "records": s.records,
                    "origin_offset_us": s.anchor_offset_us,
                    "anchor_minus_start_at_us": s.anchor_minus_start_us,
                    "waited_for_start_us": s.waited_us,
                    "client_health": s.summary,
                })
            })
            .chain(m.missing.iter().map(|i| json!({ "shard_index": i, "missing": true })))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::shard::{ShardRunInfo, ShardSummary, FORMAT_VERSION};
    use servebench_core::{Outcome, RequestRecord};

    fn write_shard(dir: &Path, index: u32, count: u32, total: u64, summary: bool) -> PathBuf {
        let header = ShardHeader {
            version: FORMAT_VERSION,
            servebench_version: "t".into(),
            shard_index: index,
            num_shards: count,
            workload_fingerprint: "ab".into(),
            seed: 0,
            total_requests: total,
            shard_requests: (u64::from(index)..total).step_by(count as usize).count() as u64,
            wall_anchor_unix_us: 1_000_000 + u64::from(index),
            start_at_unix_us: Some(1_000_000),
            waited_us: Some(5),
            run: ShardRunInfo {
                model_id: "m".into(),
                backend: "openai".into(),
                burstiness: 1.0,
                ..Default::default()
            },
        };
        let mut text = header.to_line() + "\n";
        for i in (u64::from(index)..total).step_by(count as usize) {
            let mut r = RequestRecord::scheduled(i, format!("r{i}"), i * 100, 8, 2);
            r.outcome = Outcome::Completed;
            r.dispatched_us = Some(i * 100 + 1);
            r.first_token_us = Some(i * 100 + 50);
            r.last_token_us = Some(i * 100 + 60);
            r.done_us = Some(i * 100 + 61);
            r.token_event_count = 2;
            r.token_events.gaps_us = vec![10];
            text += &(serde_json::to_string(&r).unwrap() + "\n");
        }
        if summary {
            text += &(ShardSummary { shard_index: index, records: 3, ..Default::default() }.to_line() + "\n");
        }
        let path = dir.join(format!("run-shard{index}of{count}.json.records.jsonl"));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn directories_expand_to_their_shard_records_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = write_shard(dir.path(), 0, 2, 6, true);
        let b = write_shard(dir.path(), 1, 2, 6, false);
        std::fs::write(dir.path().join("plain.records.jsonl"), "{\"index\":0}\n").unwrap();
        std::fs::write(dir.path().join("run.json"), "{}").unwrap();
        assert_eq!(expand_inputs(&[dir.path().to_path_buf()]).unwrap(), vec![a.clone(), b.clone()]);
        // Not every shard finished: the wait ends at its deadline with what is there.
        let t = std::time::Instant::now();
        let files =
            wait_for_shards(&[dir.path().to_path_buf()], std::time::Duration::from_millis(300)).unwrap();
        assert_eq!(files.len(), 2);
        assert!(t.elapsed() >= std::time::Duration::from_millis(300));

        let inputs: Vec<ShardInput> = files.iter().map(|p| read_shard(p).unwrap()).collect();
        let merged = merge_shards(inputs, false).unwrap();
        assert_eq!(merged.records.len(), 6);
        let table = shard_table(&merged);
        assert!(table.contains("Shards: 2 of 2 merged (fingerprint ab…, seed 0)"), "{table}");
        assert!(table.contains("all anchored on --start-at"), "{table}");
        let info = merged_info(&merged);
        assert_eq!(info.num_prompts, 6);
        assert_eq!(info.request_rate, f64::INFINITY);
        let shards = shards_json(&merged);
        assert_eq!(shards[1]["origin_offset_us"], 1);
        assert_eq!(shards[1]["client_health"], Value::Null);

        let out = dir.path().join("merged.records.jsonl");
        write_merged_records(&out, &merged).unwrap();
        let again = read_shard(&out).unwrap();
        assert_eq!((again.header.shard_index, again.header.num_shards), (0, 1));
        assert_eq!(again.records, merged.records);
        assert!(read_shard(&dir.path().join("plain.records.jsonl")).is_err());
    }
}

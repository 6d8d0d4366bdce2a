//! Merging the records of the shards of one run (`servebench merge`): checks that the shards
//! belong together, aligns their times on one origin, and returns the union of their records,
//! over which every metric is then recomputed by the usual `metrics::compute`.
//!
//! Alignment: each shard's offsets are relative to its own origin, whose wall-clock time is the
//! header's `wall_anchor_unix_us`. The merged origin is the earliest anchor; a shard whose anchor
//! is `d` µs later has `d` added to every time of its records. With `--start-at` every anchor is
//! the start instant (read on each host's clock), so `d` is ~0 and the merged records are exactly
//! what one process would have recorded, up to the hosts' clock offset.

use crate::early_stop::EarlyStopReport;
use crate::error::{BenchError, Result};
use crate::record::RequestRecord;
use crate::shard::{ShardHeader, ShardSpec, ShardSummary};

/// Anchors further apart than this (without `--start-at`) are reported as a warning: the shards
/// did not start together, so the merged load was not the intended one.
pub const ANCHOR_SPREAD_WARN_US: u64 = 1_000_000;

/// One shard's records file, read.
#[derive(Debug, Clone)]
pub struct ShardInput {
    /// Where it came from (for messages).
    pub source: String,
    pub header: ShardHeader,
    pub summary: Option<ShardSummary>,
    pub records: Vec<RequestRecord>,
}

/// How one shard took part in the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardReport {
    pub shard_index: u32,
    pub source: String,
    pub records: usize,
    /// This shard's anchor − the merged origin, µs (added to every time of its records).
    pub anchor_offset_us: u64,
    /// Anchor − `--start-at`, µs: how far this host's origin is from the agreed instant on its
    /// own clock (reading jitter; large values mean the shard anchored elsewhere).
    pub anchor_minus_start_us: Option<i64>,
    /// How long the shard waited for `--start-at` (negative: ready this late after it).
    pub waited_us: Option<i64>,
    pub summary: Option<ShardSummary>,
}

/// The union of the shards.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// Every record of every shard, times relative to `origin_unix_us`, sorted by index.
    pub records: Vec<RequestRecord>,
    /// Wall-clock time of the merged origin (the earliest anchor), µs since the Unix epoch.
    pub origin_unix_us: u64,
    /// Header of the lowest shard (run info, fingerprint, seed, totals).
    pub header: ShardHeader,
    pub shards: Vec<ShardReport>,
    /// Shard indices with no file (only with `allow_missing`).
    pub missing: Vec<u32>,
    pub warnings: Vec<String>,
}

impl MergedRun {
    /// Whether the run was stopped early: a shard says it was interrupted (Ctrl-C / SIGTERM), or
    /// has no summary line (it did not end normally).
    pub fn interrupted(&self) -> bool {
        self.shards.iter().any(|s| s.summary.as_ref().is_none_or(|x| x.interrupted))
    }

    /// The summary line of the merged records file (`servebench merge --save-result`): the
    /// merged run's end (interrupted, early stop on the merged clock) and the shards' health as
    /// the merged result reports it — the worst shard's lateness and hiccups, the processes'
    /// CPU, cores and connections added up, the largest peak RSS, the longest wall time. Read
    /// back, the file is a run that ended as the merged one did, not a shard that was cut off.
    pub fn summary(&self) -> ShardSummary {
        let s: Vec<&ShardSummary> = self.shards.iter().filter_map(|s| s.summary.as_ref()).collect();
        let worst = |f: &dyn Fn(&ShardSummary) -> Option<f64>| s.iter().filter_map(|x| f(x)).reduce(f64::max);
        let max = |f: &dyn Fn(&ShardSummary) -> Option<u64>| s.iter().filter_map(|x| f(x)).max();
        ShardSummary {
            shard_index: 0,
            records: self.records.len() as u64,
            first_dispatch_lateness_us: max(&|x| x.first_dispatch_lateness_us),
            dispatch_lateness_p50_us: worst(&|x| x.dispatch_lateness_p50_us),
            dispatch_lateness_p99_us: worst(&|x| x.dispatch_lateness_p99_us),
            dispatch_lateness_max_us: max(&|x| x.dispatch_lateness_max_us),
            hiccup_p99_us: worst(&|x| x.hiccup_p99_us),
            client_cpu_seconds: s.iter().map(|x| x.client_cpu_seconds).sum(),
            wall_seconds: s.iter().map(|x| x.wall_seconds).fold(0.0, f64::max),
            cpus: s.iter().map(|x| x.cpus).sum(),
            peak_rss_bytes: max(&|x| x.peak_rss_bytes),
            connections_opened: s.iter().map(|x| x.connections_opened).sum(),
            interrupted: self.interrupted(),
            early_stop: self.early_stop(),
        }
    }

    /// The merged run's early stop: the first shard to stop (times moved onto the merged
    /// clock), with `requests_not_sent` and `cancelled_in_flight` summed over every shard that
    /// stopped. `None` when no shard stopped early. Each shard stops on its own evidence; the
    /// others run on (`early_stop_warning`).
    pub fn early_stop(&self) -> Option<EarlyStopReport> {
        let stopped: Vec<EarlyStopReport> = self
            .shards
            .iter()
            .filter_map(|s| {
                let mut r = s.summary.as_ref()?.early_stop.clone()?;
                let shift = s.anchor_offset_us as f64 / 1e6;
                r.detected_at_s += shift;
                r.stopped_at_s += shift;
                Some(r)
            })
            .collect();
        let mut first = stopped.iter().min_by(|a, b| a.stopped_at_s.total_cmp(&b.stopped_at_s))?.clone();
        first.requests_not_sent = stopped.iter().map(|r| r.requests_not_sent).sum();
        first.cancelled_in_flight = stopped.iter().map(|r| r.cancelled_in_flight).sum();
        Some(first)
    }

    /// The merge warning when some shards stopped early and others did not.
    pub fn early_stop_warning(&self) -> Option<String> {
        let (stopped, ran): (Vec<&ShardReport>, Vec<&ShardReport>) =
            self.shards.iter().partition(|s| s.summary.as_ref().is_some_and(|x| x.early_stop.is_some()));
        if stopped.is_empty() || ran.is_empty() {
            return None;
        }
        let list =
            |v: &[&ShardReport]| v.iter().map(|s| s.shard_index.to_string()).collect::<Vec<_>>().join(", ");
        Some(format!(
            "shard(s) {} stopped early and shard(s) {} ran to their end: after the first stop the merged \
             load is lighter than the one asked for",
            list(&stopped),
            list(&ran)
        ))
    }
}

/// Checks and merges shards. Refuses (SB701) shards of different workloads, seeds, shard
/// counts, versions or start instants, and records that do not belong to their shard; refuses
/// (SB702) duplicate shard indices and, unless `allow_missing`, missing shards.
pub fn merge_shards(mut inputs: Vec<ShardInput>, allow_missing: bool) -> Result<MergedRun> {
    inputs.sort_by_key(|s| s.header.shard_index);
    let Some(first) = inputs.first() else {
        return Err(BenchError::ShardSet { detail: "no shard records file given".into() });
    };
    let reference = first.header.clone();
    let mut warnings = Vec::new();
    for s in &inputs {
        check_same_run(&reference, &first.source, s)?;
        warnings.extend(run_info_differs(&reference, &first.source, s));
    }
    let missing = missing_shards(&inputs, &reference, allow_missing, &mut warnings)?;
    let origin = inputs.iter().map(|s| s.header.wall_anchor_unix_us).min().unwrap_or(0);
    let spread = inputs.iter().map(|s| s.header.wall_anchor_unix_us - origin).max().unwrap_or(0);
    if reference.start_at_unix_us.is_none() && spread > ANCHOR_SPREAD_WARN_US {
        warnings.push(format!(
            "shard origins are {:.3} s apart (no --start-at): the shards did not run their schedules together",
            spread as f64 / 1e6
        ));
    }
    let mut records = Vec::with_capacity(inputs.iter().map(|s| s.records.len()).sum());
    let mut shards = Vec::with_capacity(inputs.len());
    for s in inputs {
        check_shard_records(&s, &mut warnings)?;
        let h = &s.header;
        let offset = h.wall_anchor_unix_us - origin;
        shards.push(ShardReport {
            shard_index: h.shard_index,
            source: s.source.clone(),
            records: s.records.len(),
            anchor_offset_us: offset,
            anchor_minus_start_us: h.start_at_unix_us.map(|t| h.wall_anchor_unix_us as i64 - t as i64),
            waited_us: h.waited_us,
            summary: s.summary.clone(),
        });
        records.extend(s.records.into_iter().map(|r| shift_times(r, offset)));
    }
    // Shards own disjoint indices (checked above): no stable sort's scratch buffer needed.
    records.sort_unstable_by_key(|r| r.index);
    if let Some(pair) = records.windows(2).find(|p| p[0].index == p[1].index) {
        return Err(BenchError::ShardMismatch {
            detail: format!("request {} appears in more than one record", pair[0].index),
        });
    }
    let mut merged =
        MergedRun { records, origin_unix_us: origin, header: reference, shards, missing, warnings };
    merged.warnings.extend(merged.early_stop_warning());
    Ok(merged)
}

/// The shard indexes not given (sorted `inputs`): an error unless `allow_missing`, then a
/// warning. A shard given twice is an error.
fn missing_shards(
    inputs: &[ShardInput],
    reference: &ShardHeader,
    allow_missing: bool,
    warnings: &mut Vec<String>,
) -> Result<Vec<u32>> {
    for pair in inputs.windows(2) {
        if pair[0].header.shard_index == pair[1].header.shard_index {
            return Err(BenchError::ShardSet {
                detail: format!(
                    "shard {} appears twice ({} and {})",
                    pair[0].header.shard_index, pair[0].source, pair[1].source
                ),
            });
        }
    }
    let present: Vec<u32> = inputs.iter().map(|s| s.header.shard_index).collect();
    let missing: Vec<u32> = (0..reference.num_shards).filter(|i| !present.contains(i)).collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let list = missing.iter().map(u32::to_string).collect::<Vec<_>>().join(", ");
    if !allow_missing {
        return Err(BenchError::ShardSet {
            detail: format!(
                "{} of {} shards given; missing shard(s) {list}",
                inputs.len(),
                reference.num_shards
            ),
        });
    }
    warnings.push(format!(
        "merged {} of {} shards (missing {list}): the result covers only part of the workload",
        inputs.len(),
        reference.num_shards
    ));
    Ok(missing)
}

/// Every record of shard `s` must be one of its positions; a shard stopped early or without
/// its summary line is a warning.
fn check_shard_records(s: &ShardInput, warnings: &mut Vec<String>) -> Result<()> {
    let h = &s.header;
    let spec = ShardSpec { index: h.shard_index, count: h.num_shards };
    if let Some(r) = s.records.iter().find(|r| !spec.owns(r.index as usize) || r.index >= h.total_requests) {
        return Err(BenchError::ShardMismatch {
            detail: format!(
                "{}: request {} does not belong to shard {} of {} (of {} requests)",
                s.source, r.index, h.shard_index, h.num_shards, h.total_requests
            ),
        });
    }
    if (s.records.len() as u64) < h.shard_requests {
        warnings.push(format!(
            "shard {} ({}) has {} of its {} records: it was stopped before it finished",
            h.shard_index,
            s.source,
            s.records.len(),
            h.shard_requests
        ));
    }
    if s.summary.is_none() {
        warnings.push(format!(
            "shard {} ({}) has no summary line: it did not end normally, client health unknown",
            h.shard_index, s.source
        ));
    }
    Ok(())
}

/// A warning when shard `s` was run with other reporting settings than the reference (lowest)
/// shard — `--label`, `--metadata`, `--metric-percentiles` / `--percentile-metrics` /
/// `--goodput`, the model or the backend — which the merged result takes from the reference
/// alone. (What changes the load is in the workload fingerprint, refused by
/// [`check_same_run`].)
fn run_info_differs(reference: &ShardHeader, ref_source: &str, s: &ShardInput) -> Option<String> {
    let (a, b) = (&reference.run, &s.header.run);
    let differing: Vec<&str> = [
        ("--label", a.label != b.label),
        ("--metadata", a.metadata != b.metadata),
        ("--metric-percentiles/--percentile-metrics/--goodput", a.metrics != b.metrics),
        ("the model", a.model_id != b.model_id),
        ("--backend", a.backend != b.backend),
    ]
    .into_iter()
    .filter_map(|(what, differs)| differs.then_some(what))
    .collect();
    (!differing.is_empty()).then(|| {
        format!(
            "shard {} ({}) was run with another {} than shard {} ({}): the merged result takes shard {}'s",
            s.header.shard_index,
            s.source,
            differing.join(", "),
            reference.shard_index,
            ref_source,
            reference.shard_index
        )
    })
}

fn check_same_run(reference: &ShardHeader, ref_source: &str, s: &ShardInput) -> Result<()> {
    let h = &s.header;
    let differs = |what: &str, a: String, b: String| BenchError::ShardMismatch {
        detail: format!("{what} differs: {a} in {ref_source}, {b} in {}", s.source),
    };
    if h.workload_fingerprint != reference.workload_fingerprint {
        return Err(differs(
            "workload fingerprint (dataset, seed, rate, load flags such as --max-concurrency, --lora-modules or cancellation, or servebench version)",
            reference.workload_fingerprint.clone(),
            h.workload_fingerprint.clone(),
        ));
    }
    if h.seed != reference.seed {
        return Err(differs("--seed", reference.seed.to_string(), h.seed.to_string()));
    }
    if h.num_shards != reference.num_shards {
        return Err(differs("--num-shards", reference.num_shards.to_string(), h.num_shards.to_string()));
    }
    if h.total_requests != reference.total_requests {
        return Err(differs(
            "total requests",
            reference.total_requests.to_string(),
            h.total_requests.to_string(),
        ));
    }
    if h.start_at_unix_us != reference.start_at_unix_us {
        return Err(differs(
            "--start-at (shards of different runs)",
            format!("{:?}", reference.start_at_unix_us),
            format!("{:?}", h.start_at_unix_us),
        ));
    }
    if h.shard_index >= h.num_shards {
        return Err(BenchError::ShardMismatch {
            detail: format!(
                "{}: shard index {} is not below {} shards",
                s.source, h.shard_index, h.num_shards
            ),
        });
    }
    Ok(())
}

/// `r` with `offset` µs added to every time (offset) it carries. Durations (token gaps) are
/// unchanged. The destructuring is exhaustive on purpose: a new field of `RequestRecord` must be
/// classified here (time offset or not) before the workspace compiles.
pub fn shift_times(r: RequestRecord, offset: u64) -> RequestRecord {
    let RequestRecord {
        index,
        request_id,
        server_request_id,
        conversation,
        turn,
        agent_depth,
        agent_branch,
        agent_tool,
        lora,
        stage,
        outcome,
        error,
        cancelled_by,
        http_status,
        intended_us,
        gate_us,
        prefill_wait_us,
        cancel_after_us,
        dispatched_us,
        headers_us,
        first_event_us,
        first_token_us,
        first_content_us,
        last_token_us,
        done_us,
        token_events,
        prompt_tokens,
        server_prompt_tokens,
        cached_prompt_tokens,
        completion_tokens,
        expected_output_tokens,
        audio_seconds,
        token_event_count,
        reasoning_events,
        content_events,
        output_chars,
        retokenized_tokens,
        finish_reason,
        attempts,
        reconnects,
        resent,
        generated_text,
        phases,
        server_queue_time_ms,
        server_ttft_ms,
    } = r;
    let shift = |t: Option<u64>| t.map(|v| v + offset);
    RequestRecord {
        index,
        request_id,
        server_request_id,
        conversation,
        turn,
        agent_depth,
        agent_branch,
        agent_tool,
        lora,
        stage,
        outcome,
        error,
        cancelled_by,
        http_status,
        intended_us: intended_us + offset,
        gate_us: shift(gate_us),
        // Durations, not times.
        prefill_wait_us,
        cancel_after_us,
        dispatched_us: shift(dispatched_us),
        headers_us: shift(headers_us),
        first_event_us: shift(first_event_us),
        first_token_us: shift(first_token_us),
        first_content_us: shift(first_content_us),
        last_token_us: shift(last_token_us),
        done_us: shift(done_us),
        token_events,
        prompt_tokens,
        server_prompt_tokens,
        cached_prompt_tokens,
        completion_tokens,
        expected_output_tokens,
        audio_seconds,
        token_event_count,
        reasoning_events,
        content_events,
        output_chars,
        retokenized_tokens,
        finish_reason,
        attempts,
        reconnects,
        resent,
        generated_text,
        // Durations and offsets from `dispatched_us`, not times.
        phases,
        // Durations on the server's clock.
        server_queue_time_ms,
        server_ttft_ms,
    }
}

#[cfg(test)]
mod tests;

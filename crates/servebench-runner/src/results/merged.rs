//! The description and result document of a merged sharded run (`servebench merge`;
//! docs/scale-out.md): the run as one, with the worst shard's client health.

use super::steady::{steady_state_with, Arrivals, Steady, SteadyOptions};
use serde_json::Value;
use servebench_core::merge::MergedRun;
use servebench_core::metrics::http_phases::http_phases;
use servebench_core::metrics::{MetricName, RunMetrics};
use servebench_core::schedule::{ArrivalSchedule, RateConfig};
use servebench_core::shard::ShardSummary;
use servebench_report::info::{cpu_share_percent, LoadStage};
use servebench_report::sections::groups::{result_keys, GroupInfo, StageInfo};
use servebench_report::sections::shards::shard_entries;
use servebench_report::written::MergedDocument;
use servebench_report::{result_object, ClientHealth, RunInfo};
use time::OffsetDateTime;

fn local(unix_us: u64) -> OffsetDateTime {
    let now = OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc());
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(unix_us) * 1000)
        .map(|t| t.to_offset(now.offset()))
        .unwrap_or(now)
}

/// The merged run's client health: the worst shard's (highest lateness, hiccups, CPU share and
/// RSS); connections and CPU seconds are summed.
fn merged_health(m: &MergedRun) -> ClientHealth {
    let summaries: Vec<&ShardSummary> = m.shards.iter().filter_map(|s| s.summary.as_ref()).collect();
    let cpu_share = |s: &&ShardSummary| {
        (s.cpus > 0)
            .then(|| cpu_share_percent(s.client_cpu_seconds, s.wall_seconds).map(|p| p / s.cpus as f64))
            .flatten()
    };
    let any = !summaries.is_empty();
    // The shards' health as the merged records file's summary line carries it (worst lateness,
    // hiccups and RSS; CPU seconds and connections summed).
    let all = m.summary();
    ClientHealth {
        dispatch_lateness_p50_us: all.dispatch_lateness_p50_us,
        dispatch_lateness_p99_us: all.dispatch_lateness_p99_us,
        hiccup_p99_us: all.hiccup_p99_us,
        // The worst shard's CPU as a share of its cores, expressed against one core.
        client_cpu_percent: summaries.iter().filter_map(cpu_share).reduce(f64::max),
        available_cores: any.then_some(1.0),
        peak_rss_bytes: all.peak_rss_bytes,
        client_cpu_seconds: any.then_some(all.client_cpu_seconds),
        connections_opened: any.then_some(all.connections_opened),
        stale_connections: None,
        resent_requests: Some(m.records.iter().filter(|r| r.resent).count() as u64),
        pooling_disabled: None,
        receive_timestamps: None,
        time_slice: None,
    }
}

/// The merged run's description.
pub fn merged_run_info(m: &MergedRun) -> RunInfo {
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
        trace_time_scale: run.trace_time_scale,
        rps_change_events,
        stages: run.stages.iter().filter_map(|s| s.rate).map(LoadStage::Rate).collect(),
        // The run's own --metadata (as each shard's result has it), then the merge's keys.
        metadata: run
            .metadata
            .iter()
            .cloned()
            .chain([
                ("num_shards".into(), m.header.num_shards.to_string()),
                ("workload_fingerprint".into(), m.header.workload_fingerprint.clone()),
            ])
            .collect(),
        client_health: merged_health(m),
    }
}

/// The merged run's steady state, over the union of the shards' records as one run (the whole
/// run's rate and concurrency cap; the default `--steady-state-*` settings), with the given
/// statistics (`(percentiles, metrics)`).
pub fn merged_steady_state(m: &MergedRun, stats: (&[f64], &[MetricName])) -> Option<Steady> {
    let run = &m.header.run;
    let rate = run.request_rate.unwrap_or(f64::INFINITY);
    let pooling = servebench_report::sections::pooling::is_pooling_backend(&run.backend);
    let arrivals = Arrivals::of(rate, run.trace_time_scale.is_some(), run.max_concurrency);
    steady_state_with(&m.records, &SteadyOptions::default(), stats, pooling, arrivals)
}

/// The merged result document: a run's result, `interrupted` and `steady_state` (as a single
/// run's), then `shards` and `merge_warnings`; with `detailed` (`merge --save-detailed`) every
/// per-request array, as a run's `--save-detailed` writes them.
pub fn merged_result(
    info: &RunInfo,
    metrics: &RunMetrics,
    m: &MergedRun,
    steady: Option<&Steady>,
    detailed: bool,
) -> Value {
    let (mut result, arrays) = result_object(info, metrics, &m.records, detailed);
    arrays.fill(&mut result);
    // The sections a run's result has beside its headline keys, over the union of the records:
    // per-stage metrics (stages from the shard header) and HTTP phases.
    let run = &m.header.run;
    let stages = run
        .stages
        .iter()
        .map(|s| StageInfo { rate: s.rate.unwrap_or(f64::INFINITY), seconds: s.seconds, concurrency: None })
        .collect();
    let group = GroupInfo { stages, trace: run.trace_time_scale.is_some(), ..GroupInfo::default() };
    let mut groups = result_keys(&m.records, &metrics.config, &group);
    groups.insert("http_phases".into(), serde_json::to_value(http_phases(&m.records)).unwrap_or_default());
    MergedDocument {
        result,
        groups,
        interrupted: m.interrupted(),
        early_stop: m.early_stop(),
        steady_state: steady.and_then(|s| s.as_ref().ok()).cloned(),
        steady_state_reason: steady.and_then(|s| s.as_ref().err()).map(|e| e.reason.clone()),
        shards: shard_entries(m),
        merge_warnings: m.warnings.clone(),
    }
    .to_value()
}

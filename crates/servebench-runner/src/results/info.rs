//! The run's description (`RunInfo`) the console block, the result JSON and the HTML report
//! are written from.

use crate::config::OutputConfig;
use crate::run::RunOutput;
use servebench_client::transport::kstamp::{ReceiveTimestamps, StampSource};
use servebench_core::schedule::{RateConfig, RpsChange};
use servebench_core::stats::percentile;
use servebench_report::info::cpu_share_percent;
use servebench_report::{ClientHealth, ReceiveTimesHealth, RunInfo, TimeSliceHealth};
use time::OffsetDateTime;

/// The local time (UTC when the local offset is unknown).
pub fn now_local() -> OffsetDateTime {
    OffsetDateTime::now_local().unwrap_or_else(|_| OffsetDateTime::now_utc())
}

/// The run's description for the report: names, rate, and the client's health measurements.
pub fn run_info(
    output: &OutputConfig,
    num_prompts: u64,
    out: &RunOutput,
    rate: &RateConfig,
    max_concurrency: Option<usize>,
    rps_change_events: Vec<RpsChange>,
) -> RunInfo {
    let lateness: Vec<f64> = out.health.dispatch_lateness_us.iter().map(|&v| v as f64).collect();
    let hiccups: Vec<f64> = out.health.hiccup_us.iter().map(|&v| f64::from(v)).collect();
    let wall = out.health.wall_seconds.max(1e-9);
    let origin_wall =
        OffsetDateTime::from_unix_timestamp_nanos(i128::from(out.clock.wall_anchor_unix_us()) * 1000)
            .map(|t| t.to_offset(now_local().offset()))
            .unwrap_or_else(|_| now_local());
    RunInfo {
        date: now_local(),
        origin_wall,
        backend: output.backend_name.clone(),
        endpoint_type: output.backend_name.clone(),
        label: output.label.clone(),
        model_id: out.model.model_id.clone(),
        tokenizer_id: Some(out.tokenizer_id.clone()),
        num_prompts,
        request_rate: rate.request_rate,
        burstiness: rate.burstiness,
        max_concurrency: max_concurrency.map(|c| c as u64),
        ramp_up: rate.ramp_up,
        trace_time_scale: None,
        rps_change_events,
        stages: Vec::new(),
        metadata: output.metadata.clone(),
        client_health: ClientHealth {
            dispatch_lateness_p50_us: (!lateness.is_empty()).then(|| percentile(&lateness, 50.0)),
            dispatch_lateness_p99_us: (!lateness.is_empty()).then(|| percentile(&lateness, 99.0)),
            hiccup_p99_us: (!hiccups.is_empty()).then(|| percentile(&hiccups, 99.0)),
            client_cpu_percent: cpu_share_percent(out.health.client_cpu_seconds, wall),
            available_cores: Some(out.health.cpus as f64),
            peak_rss_bytes: out.health.peak_rss_bytes,
            client_cpu_seconds: Some(out.health.client_cpu_seconds),
            connections_opened: Some(out.health.connections_opened),
            stale_connections: Some(out.health.stale_connections),
            resent_requests: Some(out.health.resent_requests),
            pooling_disabled: Some(out.health.pooling_disabled),
            receive_timestamps: out.health.receive_timestamps.as_ref().map(receive_times),
            time_slice: out
                .health
                .time_slice
                .as_ref()
                .map(|t| TimeSliceHealth { short_us: t.short_us(), detail: t.describe() }),
        },
    }
}

/// The run's receive-timestamp source and read lag as the report shows them.
fn receive_times(r: &ReceiveTimestamps) -> ReceiveTimesHealth {
    let source = match r.source {
        StampSource::Kernel => "kernel",
        StampSource::UserSpace(_) => "user-space",
    };
    ReceiveTimesHealth {
        source: source.into(),
        detail: r.source.describe(),
        kernel_stamped_reads: r.lag.kernel_reads,
        unstamped_reads: r.lag.user_only_reads,
        clock_anomalies: r.lag.clock_anomalies,
        read_lag_p50_us: r.lag.p50_us,
        read_lag_p99_us: r.lag.p99_us,
        read_lag_max_us: r.lag.max_us,
    }
}

/// The result's `num_prompts`: the run's requests, as in vLLM: `asked` (`--num-prompts`, or an
/// experiment point's count; conversations for a multi-turn run) unless the run's own length
/// decides them — session trees send every turn of the trace, a `--duration` or `--stages` run
/// the requests its schedule placed before its end (`records`, a record each, whatever
/// `--num-prompts` says: it read 1000, the flag's default, beside 17 records), and a shard its
/// own share. A single run and an experiment's point use this one rule (a multi-turn point said
/// 12 turns where the same run alone said 4 conversations).
pub fn result_num_prompts(run: &crate::config::RunConfig, records: usize, asked: u64) -> u64 {
    let load = &run.load;
    match load.agentic.is_some() || load.duration.is_some() || !load.stages.is_empty() || run.shard.is_some()
    {
        true => records as u64,
        false => asked,
    }
}

//! Sharded runs: which requests of the one seeded workload a shard sends, and the header and
//! summary lines a shard writes around its records so `servebench merge` can check and align
//! the shards (docs/scale-out.md).
//!
//! Every shard builds the same workload and arrival schedule, then keeps the requests whose
//! *position in arrival order* `p` satisfies `p % num_shards == shard_index` (round-robin). The
//! schedule's offsets are non-decreasing in position, so each shard sends every N-th arrival and
//! runs at `1/N` of the total rate for the whole run (a contiguous split would run one shard at
//! the full rate for `1/N` of the time). The union of the shards is exactly the single-process
//! workload: the same request indices with the same intended offsets.
//!
//! A sharded records file is the usual JSONL of request records with two extra lines: a header
//! first (`{"servebench_shard": {...}}`, written before the first request) and a summary last
//! (`{"servebench_shard_end": {...}}`, the shard's client health, written when the run ends).
//! Readers of records skip both (`is_shard_line`).

use serde::{Deserialize, Serialize};

use crate::error::{BenchError, Result};
use crate::schedule::RampUp;

/// Key of the header line of a sharded records file.
pub const HEADER_KEY: &str = "servebench_shard";
/// Key of the summary (last) line of a sharded records file.
pub const SUMMARY_KEY: &str = "servebench_shard_end";
/// Version of the header/summary format.
pub const FORMAT_VERSION: u32 = 1;

/// Which share of the workload this process sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSpec {
    /// 0-based shard index, `< count`.
    pub index: u32,
    /// Number of shards (≥ 1).
    pub count: u32,
}

impl ShardSpec {
    /// A checked shard spec.
    pub fn new(index: u32, count: u32) -> Result<ShardSpec> {
        if count == 0 {
            return Err(BenchError::config(
                "--num-shards",
                "must be at least 1",
                "pass --num-shards 1 or more",
            ));
        }
        if index >= count {
            return Err(BenchError::config(
                "--shard-index",
                format!("{index} is not below --num-shards {count}"),
                "pass a 0-based index in 0..num-shards (a Kubernetes Indexed Job's JOB_COMPLETION_INDEX)",
            ));
        }
        Ok(ShardSpec { index, count })
    }

    /// Whether the request at arrival position `position` belongs to this shard.
    pub fn owns(&self, position: usize) -> bool {
        position % self.count as usize == self.index as usize
    }

    /// Positions (in arrival order, `0..n`) this shard sends.
    pub fn positions(&self, n: usize) -> Vec<usize> {
        (self.index as usize..n).step_by(self.count.max(1) as usize).collect()
    }

    /// This shard's part of a total concurrency limit: `total / count`, the remainder going to
    /// the lowest indices, so the shards' limits add up to `total`. `None` if `total < count`
    /// (some shard would get no slot).
    pub fn concurrency_share(&self, total: usize) -> Option<usize> {
        let n = self.count as usize;
        if total < n {
            return None;
        }
        Some(total / n + usize::from((self.index as usize) < total % n))
    }
}

/// What a shard knows about the run, for the merged result (the same on every shard of a run).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ShardRunInfo {
    pub model_id: String,
    #[serde(default)]
    pub tokenizer_id: Option<String>,
    pub backend: String,
    #[serde(default)]
    pub label: Option<String>,
    /// Requests per second of the whole run; `None` = infinity (JSON has no infinity).
    #[serde(default)]
    pub request_rate: Option<f64>,
    pub burstiness: f64,
    #[serde(default)]
    pub ramp_up: Option<RampUp>,
    /// `--max-concurrency` of the whole run (the shards split it).
    #[serde(default)]
    pub max_concurrency: Option<u64>,
    /// A trace replayed on its own timestamps: `--timed-trace-sec-multiplier` (the merged
    /// result's load mode is "trace replay", not the rate's); `None` otherwise, and in files
    /// written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_time_scale: Option<f64>,
    /// The run's rate stages (`--stages`, or a `--duration` at a finite rate), whole-run rates:
    /// the merged result reports per-stage metrics as a run does. Empty without stages, and in
    /// files written before they were recorded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<ShardStage>,
    /// The run's `--metric-percentiles`, `--percentile-metrics` and `--goodput`: `merge` reports
    /// the statistics the shards did unless its own flags say otherwise. `None` in files written
    /// before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<crate::metrics::MetricsConfig>,
    /// The run's `--metadata KEY=VALUE` pairs: the merged result carries them as a run's does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metadata: Vec<(String, String)>,
}

/// One rate stage of a sharded run, as its shard header records it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ShardStage {
    /// Requests per second of the whole run; `None` = infinity (JSON has no infinity).
    pub rate: Option<f64>,
    pub seconds: f64,
}

/// The first line of a sharded records file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShardHeader {
    pub version: u32,
    /// servebench version that wrote the file (part of the fingerprint too).
    pub servebench_version: String,
    pub shard_index: u32,
    pub num_shards: u32,
    /// sha256 (hex) of the seed, the rate configuration, the arrival offsets and every request
    /// of the whole (unsharded) workload: equal on every shard of one run.
    pub workload_fingerprint: String,
    pub seed: u64,
    /// Requests of the whole workload.
    pub total_requests: u64,
    /// Requests this shard sends.
    pub shard_requests: u64,
    /// Wall-clock time (µs since the Unix epoch, this host's clock) of the shard's monotonic
    /// origin: every `*_us` offset of its records is relative to it.
    pub wall_anchor_unix_us: u64,
    /// `--start-at`, µs since the Unix epoch, when given.
    #[serde(default)]
    pub start_at_unix_us: Option<u64>,
    /// How long the shard waited for `--start-at` (µs); negative = it was ready this late after
    /// the start instant had passed.
    #[serde(default)]
    pub waited_us: Option<i64>,
    /// A `servebench merge` output: the number of shards it merged (absent in a shard's own
    /// file). A directory's merge leaves such a file out beside the shards it came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged_from: Option<u32>,
    pub run: ShardRunInfo,
}

/// The last line of a sharded records file: the shard's client health.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ShardSummary {
    pub shard_index: u32,
    /// Records written (excluding header and summary).
    pub records: u64,
    /// Lateness of the first release (released − intended), µs.
    #[serde(default)]
    pub first_dispatch_lateness_us: Option<u64>,
    #[serde(default)]
    pub dispatch_lateness_p50_us: Option<f64>,
    #[serde(default)]
    pub dispatch_lateness_p99_us: Option<f64>,
    #[serde(default)]
    pub dispatch_lateness_max_us: Option<u64>,
    #[serde(default)]
    pub hiccup_p99_us: Option<f64>,
    pub client_cpu_seconds: f64,
    pub wall_seconds: f64,
    pub cpus: usize,
    #[serde(default)]
    pub peak_rss_bytes: Option<u64>,
    pub connections_opened: u64,
    pub interrupted: bool,
    /// The shard's early stop (`--max-error-rate`, …), times on the shard's own clock; absent
    /// when it ran to its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub early_stop: Option<crate::early_stop::EarlyStopReport>,
}

#[derive(Serialize, Deserialize)]
struct HeaderLine {
    servebench_shard: ShardHeader,
}

#[derive(Serialize, Deserialize)]
struct SummaryLine {
    servebench_shard_end: ShardSummary,
}

/// One line of a records file that is not a request record.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardLine {
    Header(ShardHeader),
    Summary(ShardSummary),
}

impl ShardHeader {
    /// The JSON line (without newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(&HeaderLine { servebench_shard: self.clone() }).unwrap_or_default()
    }
}

impl ShardSummary {
    /// The JSON line (without newline).
    pub fn to_line(&self) -> String {
        serde_json::to_string(&SummaryLine { servebench_shard_end: self.clone() }).unwrap_or_default()
    }
}

/// Whether `line` is a shard header or summary line (cheap: looks at the first key only).
pub fn is_shard_line(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with(&format!("{{\"{HEADER_KEY}\"")) || t.starts_with(&format!("{{\"{SUMMARY_KEY}\""))
}

/// Parses a shard header or summary line; `None` if `line` is neither.
pub fn parse_shard_line(line: &str) -> Option<ShardLine> {
    if !is_shard_line(line) {
        return None;
    }
    if let Ok(h) = serde_json::from_str::<HeaderLine>(line) {
        return Some(ShardLine::Header(h.servebench_shard));
    }
    serde_json::from_str::<SummaryLine>(line).ok().map(|s| ShardLine::Summary(s.servebench_shard_end))
}

/// Parses `--start-at`: RFC 3339 (`2026-11-30T01:00:00Z`, fractions allowed) or Unix seconds
/// (`1790000000`, `1790000000.25`). Returns µs since the Unix epoch.
pub fn parse_start_at(text: &str) -> Result<u64> {
    let t = text.trim();
    let bad = |problem: String| {
        BenchError::config(
            "--start-at",
            problem,
            "pass an RFC 3339 time (2026-11-30T01:00:00Z) or Unix seconds (1790000000)",
        )
    };
    if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() || secs < 0.0 {
            return Err(bad(format!("'{t}' is not a time after 1970")));
        }
        // 1e30 and 2^64 saturated to u64::MAX µs, later read as a time long past.
        if secs >= LAST_START_AT_SECS {
            return Err(bad(format!("'{t}' is after the year 9999")));
        }
        return Ok((secs * 1e6).round() as u64);
    }
    let dt = time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
        .map_err(|e| bad(format!("'{t}' is neither Unix seconds nor RFC 3339 ({e})")))?;
    let us = dt.unix_timestamp_nanos() / 1000;
    u64::try_from(us).map_err(|_| bad(format!("'{t}' is before 1970")))
}

/// 10000-01-01T00:00:00Z in Unix seconds: `--start-at` is before it (as RFC 3339 is).
const LAST_START_AT_SECS: f64 = 253_402_300_800.0;

/// How far ahead `--start-at` may be: 7 days.
pub const START_AT_MAX_AHEAD_US: u64 = 7 * 86_400 * 1_000_000;

/// How long ago `--start-at` may have passed: 1 hour. A shard that is a little late still runs
/// (its overdue arrivals are sent at once, with a warning); one far later would measure every
/// latency from send times hours to decades ago.
pub const START_AT_MAX_PAST_US: u64 = 3_600 * 1_000_000;

/// Checks `--start-at` (`start_us`) against the wall clock (`now_us`, µs since the epoch): at
/// most [`START_AT_MAX_AHEAD_US`] ahead and [`START_AT_MAX_PAST_US`] past (SB101).
pub fn check_start_at(start_us: u64, now_us: u64) -> Result<()> {
    let secs = |us: u64| us as f64 / 1e6;
    if start_us > now_us.saturating_add(START_AT_MAX_AHEAD_US) {
        return Err(BenchError::config(
            "--start-at",
            format!("it is {:.0} s from now, more than 7 days ahead", secs(start_us - now_us)),
            "pass a start time within the next 7 days (e.g. `date -u -d '+2 min' +%s`)",
        ));
    }
    if start_us.saturating_add(START_AT_MAX_PAST_US) < now_us {
        return Err(BenchError::config(
            "--start-at",
            format!(
                "it passed {:.0} s ago, more than an hour: latencies measured from its send times would include that",
                secs(now_us - start_us)
            ),
            "pass a start time in the future shared by every shard (e.g. `date -u -d '+2 min' +%s`), or drop --start-at",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_robin_partitions_positions_exactly() {
        let n = 103;
        let mut seen = vec![0u32; n];
        for i in 0..4 {
            let s = ShardSpec::new(i, 4).unwrap();
            let p = s.positions(n);
            assert!(p.iter().all(|&x| s.owns(x)));
            assert!(p.len() == 25 || p.len() == 26);
            for x in p {
                seen[x] += 1;
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "every position in exactly one shard");
        assert_eq!(ShardSpec::new(0, 1).unwrap().positions(5), vec![0, 1, 2, 3, 4]);
        assert!(ShardSpec::new(4, 4).is_err());
        assert!(ShardSpec::new(0, 0).is_err());
    }

    #[test]
    fn concurrency_shares_add_up_to_the_total() {
        let shares: Vec<usize> =
            (0..4).map(|i| ShardSpec::new(i, 4).unwrap().concurrency_share(10).unwrap()).collect();
        assert_eq!(shares, vec![3, 3, 2, 2]);
        assert_eq!(ShardSpec::new(0, 4).unwrap().concurrency_share(3), None);
    }

    #[test]
    fn start_at_accepts_rfc3339_and_unix_seconds() {
        assert_eq!(parse_start_at("1790000000").unwrap(), 1_790_000_000_000_000);
        assert_eq!(parse_start_at("1790000000.25").unwrap(), 1_790_000_000_250_000);
        assert_eq!(parse_start_at("1970-01-01T00:00:01.5Z").unwrap(), 1_500_000);
        assert_eq!(
            parse_start_at("2026-11-30T02:00:00+01:00").unwrap(),
            parse_start_at("2026-11-30T01:00:00Z").unwrap()
        );
        assert!(parse_start_at("tomorrow").is_err());
        assert!(parse_start_at("-5").is_err());
    }

    /// Pins `--start-at` bounds: 1e30 and 2^64 s saturated to `u64::MAX` µs and ran at once,
    /// "passed 1796610216 s ago"; a start long past only warned, and latencies measured from
    /// its send times came out as decades.
    #[test]
    fn start_at_beyond_the_year_9999_or_a_week_ahead_or_an_hour_past_is_refused() {
        for far in ["1e30", "18446744073709551615", "253402300800"] {
            let e = parse_start_at(far).unwrap_err();
            assert_eq!(e.code().as_str(), "SB101");
            assert!(e.to_string().contains("after the year 9999"), "{e}");
        }
        assert!(parse_start_at("253402300799").is_ok());
        let now = 1_800_000_000_000_000;
        assert!(check_start_at(now, now).is_ok());
        assert!(check_start_at(now + START_AT_MAX_AHEAD_US, now).is_ok());
        assert!(check_start_at(now - START_AT_MAX_PAST_US, now).is_ok(), "a little late: warned at start");
        let ahead = check_start_at(now + START_AT_MAX_AHEAD_US + 1, now).unwrap_err();
        assert!(ahead.to_string().contains("more than 7 days ahead"), "{ahead}");
        let past = check_start_at(now - START_AT_MAX_PAST_US - 1, now).unwrap_err();
        assert_eq!(past.code().as_str(), "SB101");
        assert!(past.to_string().contains("more than an hour"), "{past}");
        assert!(check_start_at(u64::MAX, now).is_err() && check_start_at(0, now).is_err());
    }

    #[test]
    fn header_and_summary_lines_round_trip_and_are_recognised() {
        let h = ShardHeader {
            version: FORMAT_VERSION,
            servebench_version: "0.1.0".into(),
            shard_index: 1,
            num_shards: 4,
            workload_fingerprint: "ab".into(),
            seed: 0,
            total_requests: 10,
            shard_requests: 3,
            wall_anchor_unix_us: 5,
            start_at_unix_us: Some(5),
            waited_us: Some(-3),
            merged_from: None,
            run: ShardRunInfo {
                model_id: "m".into(),
                backend: "openai".into(),
                burstiness: 1.0,
                ..Default::default()
            },
        };
        let line = h.to_line();
        assert!(is_shard_line(&line));
        assert_eq!(parse_shard_line(&line), Some(ShardLine::Header(h)));
        let s = ShardSummary { shard_index: 1, records: 3, ..Default::default() };
        assert_eq!(parse_shard_line(&s.to_line()), Some(ShardLine::Summary(s)));
        assert!(!is_shard_line(r#"{"index":0}"#));
        assert_eq!(parse_shard_line(r#"{"servebench_shard": 3}"#), None);
    }
}

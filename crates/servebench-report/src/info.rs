//! What the runner knows about a run besides its records: configuration and client health.

use servebench_core::schedule::{RampUp, RpsChange};
use servebench_core::validity;
use time::OffsetDateTime;

/// Dispatch lateness p99 above which the client may be the bottleneck (µs); the validity
/// rule `dispatch_lateness` (one definition: `servebench_core::validity`).
pub const LATENESS_P99_WARN_US: f64 = validity::DISPATCH_LATENESS_WARN_MS * 1000.0;
/// Hiccup (event-loop stall) p99 above which the client may be the bottleneck (µs); the
/// validity rule `event_loop_hiccup`.
pub const HICCUP_P99_WARN_US: f64 = validity::HICCUP_P99_WARN_MS * 1000.0;
/// Client CPU use, as a share of the available cores, above which the client may be the
/// bottleneck (percent of all cores); the validity rule `client_cpu`.
pub const CPU_SHARE_WARN_PERCENT: f64 = validity::CLIENT_CPU_WARN_PERCENT;
/// Shortest measured phase (wall seconds) whose client CPU share is reported: below it the CPU
/// time of a few bursts (connecting, the first responses) over a tiny wall time gives shares
/// such as 479 % that say nothing about a steady load, so the share is null (no verdict).
pub const MIN_CPU_SHARE_SECONDS: f64 = 1.0;

/// The client's CPU share (percent of one core) of `cpu_seconds` over `wall_seconds`; `None`
/// when the phase is shorter than [`MIN_CPU_SHARE_SECONDS`].
pub fn cpu_share_percent(cpu_seconds: f64, wall_seconds: f64) -> Option<f64> {
    (wall_seconds >= MIN_CPU_SHARE_SECONDS).then(|| cpu_seconds / wall_seconds * 100.0)
}

/// Self-measurement of the client during the run. `None` where not measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientHealth {
    /// How late the scheduler released requests relative to their intended time, p50 (µs).
    pub dispatch_lateness_p50_us: Option<f64>,
    /// Same, p99 (µs).
    pub dispatch_lateness_p99_us: Option<f64>,
    /// Overshoot of a 1-ms sleep probe, p99 (µs).
    pub hiccup_p99_us: Option<f64>,
    /// CPU time of the client process over the run / wall time, percent of one core
    /// (200 = two cores busy); `None` for a measured phase shorter than
    /// [`MIN_CPU_SHARE_SECONDS`] (see [`cpu_share_percent`]).
    pub client_cpu_percent: Option<f64>,
    /// Cores available to the client (for the CPU warning).
    pub available_cores: Option<f64>,
    /// Peak resident set size (bytes).
    pub peak_rss_bytes: Option<u64>,
    /// CPU seconds of the client's threads during the measured phase.
    pub client_cpu_seconds: Option<f64>,
    /// TCP connections the client opened during the run.
    pub connections_opened: Option<u64>,
    /// Pooled connections found closed by the server while idle and replaced before use.
    pub stale_connections: Option<u64>,
    /// Requests sent a second time on a fresh connection because the reused connection they
    /// were written on closed before one byte of a response arrived.
    pub resent_requests: Option<u64>,
    /// The client stopped pooling connections: the server closes them after each response.
    pub pooling_disabled: Option<bool>,
    /// Where response times came from and the client's read lag (`None`: not known, e.g. a
    /// merged run or an older result).
    pub receive_timestamps: Option<ReceiveTimesHealth>,
    /// The scheduler time slice the client's threads ran with (`None`: not known, e.g. a
    /// merged run or an older result).
    pub time_slice: Option<TimeSliceHealth>,
}

/// The scheduler time slice of a run's client threads (docs/metrics.md, "Receive timestamps").
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeSliceHealth {
    /// The custom slice, µs (`None`: the kernel's default).
    pub short_us: Option<u64>,
    /// One line: the slice, or why it is the kernel's default.
    pub detail: String,
}

/// Receive timestamps of a run (docs/metrics.md, "Receive timestamps"): their source and the
/// client's read lag (user-space read time − kernel receive time) over kernel-stamped reads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReceiveTimesHealth {
    /// `kernel` or `user-space`.
    pub source: String,
    /// One line: the mechanism, or why user-space times were used.
    pub detail: String,
    /// Socket reads that carried a kernel receive timestamp.
    pub kernel_stamped_reads: u64,
    /// Socket reads that brought bytes without one (their user-space time was used).
    pub unstamped_reads: u64,
    /// Stamps dropped because the realtime clock stepped (user-space time used).
    pub clock_anomalies: u64,
    /// Read lag p50 / p99 / max, µs (`None` without kernel-stamped reads).
    pub read_lag_p50_us: Option<f64>,
    pub read_lag_p99_us: Option<f64>,
    pub read_lag_max_us: Option<f64>,
}

impl ClientHealth {
    /// Human-readable warnings when the client may have limited the measurement:
    /// dispatch lateness p99 > 10 ms, hiccup p99 > 5 ms, or CPU above 90 % of the available cores.
    pub fn warnings(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(v) = self.dispatch_lateness_p99_us.filter(|v| *v > LATENESS_P99_WARN_US) {
            out.push(format!(
                "dispatch lateness p99 {:.2} ms > {:.0} ms: the client could not send on schedule",
                v / 1000.0,
                LATENESS_P99_WARN_US / 1000.0
            ));
        }
        if let Some(v) = self.hiccup_p99_us.filter(|v| *v > HICCUP_P99_WARN_US) {
            out.push(format!(
                "event-loop hiccup p99 {:.2} ms > {:.0} ms: client timestamps may be late",
                v / 1000.0,
                HICCUP_P99_WARN_US / 1000.0
            ));
        }
        if let (Some(cpu), Some(cores)) = (self.client_cpu_percent, self.available_cores) {
            if cores > 0.0 && cpu > CPU_SHARE_WARN_PERCENT * cores {
                out.push(format!(
                    "client CPU {cpu:.0}% > {CPU_SHARE_WARN_PERCENT:.0}% of {cores} cores: the client may be the bottleneck"
                ));
            }
        }
        out
    }
}

/// One load stage (`--stages`): a constant rate, or a number of requests kept in flight (the
/// two kinds are never mixed in one run).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadStage {
    /// Requests per second (`RATE:SECONDS`).
    Rate(f64),
    /// Requests kept in flight (`c=N:SECONDS`).
    Concurrency(u64),
}

/// Everything about a run the report needs besides its records and metrics.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// When the result was produced, local time (vLLM's `date`, `YYYYMMDD-HHMMSS`; also in the
    /// default file name).
    pub date: OffsetDateTime,
    /// Wall-clock time of the run's monotonic origin, local offset: anchors `rps_change_events`.
    pub origin_wall: OffsetDateTime,
    /// `--backend` (vLLM writes it as both `backend` and `endpoint_type`).
    pub backend: String,
    pub endpoint_type: String,
    pub label: Option<String>,
    pub model_id: String,
    pub tokenizer_id: Option<String>,
    pub num_prompts: u64,
    /// Requests per second; `f64::INFINITY` when unpaced.
    pub request_rate: f64,
    pub burstiness: f64,
    pub max_concurrency: Option<u64>,
    pub ramp_up: Option<RampUp>,
    /// Trace replay on the trace's own timestamps (`--self-timed`, the default for traces): the
    /// time scale (`--timed-trace-sec-multiplier`). `None` for every other run: then requests
    /// follow `request_rate`.
    pub trace_time_scale: Option<f64>,
    /// From `ArrivalSchedule::rps_change_events` (empty without ramp-up).
    pub rps_change_events: Vec<RpsChange>,
    /// The load stages (`--stages`), in order; empty without them. With stages the run's own
    /// `request_rate` is infinite and says nothing about its load: the stages do.
    pub stages: Vec<LoadStage>,
    /// `--metadata KEY=VALUE` pairs, in order.
    pub metadata: Vec<(String, String)>,
    pub client_health: ClientHealth,
}

/// `YYYYMMDD-HHMMSS` of `dt` (vLLM's `date` and file-name stamp).
pub fn vllm_date(dt: OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}-{:02}{:02}{:02}",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

/// Python's naive `datetime.isoformat()`: `YYYY-MM-DDTHH:MM:SS[.ffffff]` (fraction omitted when 0).
pub fn python_isoformat(dt: OffsetDateTime) -> String {
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        u8::from(dt.month()),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    match dt.microsecond() {
        0 => base,
        us => format!("{base}.{us:06}"),
    }
}

/// Python's `str(float)` for the values that appear in names and rows: `10.0`, `0.5`, `inf`.
pub fn python_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else if x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A number as vLLM's int-typed flags print it: whole values without a fraction (`5`), others as
/// Python floats (`2.5`).
pub fn python_int_or_float(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
        format!("{}", x as i64)
    } else {
        python_float(x)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn dates_and_floats_format_like_python() {
        let dt = datetime!(2026-11-29 21:13:48.000123 +01:00);
        assert_eq!(vllm_date(dt), "20261129-211348");
        assert_eq!(python_isoformat(dt), "2026-11-29T21:13:48.000123");
        assert_eq!(python_isoformat(datetime!(2026-01-02 03:04:05 UTC)), "2026-01-02T03:04:05");
        assert_eq!(python_float(10.0), "10.0");
        assert_eq!(python_float(0.5), "0.5");
        assert_eq!(python_float(f64::INFINITY), "inf");
        assert_eq!(python_int_or_float(5.0), "5");
        assert_eq!(python_int_or_float(2.5), "2.5");
    }

    #[test]
    fn health_warnings_use_documented_thresholds() {
        let ok = ClientHealth {
            dispatch_lateness_p50_us: Some(100.0),
            dispatch_lateness_p99_us: Some(10_000.0),
            hiccup_p99_us: Some(5_000.0),
            client_cpu_percent: Some(180.0),
            available_cores: Some(2.0),
            ..ClientHealth::default()
        };
        assert!(ok.warnings().is_empty());
        let bad = ClientHealth {
            dispatch_lateness_p99_us: Some(10_001.0),
            hiccup_p99_us: Some(6_000.0),
            client_cpu_percent: Some(181.0),
            ..ok
        };
        assert_eq!(bad.warnings().len(), 3);
        assert!(ClientHealth::default().warnings().is_empty());
    }

    /// Pins the CPU verdict of short runs: a run that failed within 0.1 s used to warn
    /// "client CPU 479 % > 90 % of 2 cores". Below MIN_CPU_SHARE_SECONDS there is no share.
    #[test]
    fn a_cpu_share_needs_a_measured_phase_of_one_second() {
        assert_eq!(cpu_share_percent(0.479, 0.1), None);
        assert_eq!(cpu_share_percent(0.5, 0.999), None);
        assert_eq!(cpu_share_percent(0.5, 1.0), Some(50.0));
        assert_eq!(cpu_share_percent(3.0, 2.0), Some(150.0));
    }
}

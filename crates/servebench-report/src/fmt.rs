//! Formatting shared by every section and format: the console's fixed-width rows and banners
//! (vLLM's layout), the opening of a result block, and the JSON value conventions (statistic
//! and rate values, percentile key words, infinities), and whether a metric is reported.

use std::fmt::Write as _;

use serde_json::{Map, Value};
use servebench_core::metrics::{MetricName, RunMetrics};
use servebench_core::stats::Summary;

use crate::info::RunInfo;

// ---- console ----

/// Banner width (vLLM Python uses 50).
pub const WIDTH: usize = 50;

pub fn banner(out: &mut String, title: &str, fill: char) {
    let _ = writeln!(out, "{}", center(title, fill));
}

/// `title` centred in `WIDTH` columns padded with `fill` (Python's `{:c^50}`: the extra fill
/// character, if any, goes right).
pub fn center(title: &str, fill: char) -> String {
    let len = title.chars().count();
    if len >= WIDTH {
        return title.to_string();
    }
    let pad = WIDTH - len;
    let left = pad / 2;
    let f = fill.to_string();
    format!("{}{}{}", f.repeat(left), title, f.repeat(pad - left))
}

pub fn row_int(out: &mut String, label: &str, v: impl std::fmt::Display) {
    let _ = writeln!(out, "{:<40} {:<10}", label, v);
}

pub fn row_f2(out: &mut String, label: &str, v: f64) {
    let _ = writeln!(out, "{:<40} {:<10.2}", label, v);
}

/// A rate over the run: "n/a" when nothing was measured (no duration).
pub fn row_rate(out: &mut String, label: &str, duration_s: f64, v: f64) {
    row_opt_f2(out, label, (duration_s > 0.0).then_some(v));
}

pub fn row_opt_f2(out: &mut String, label: &str, v: Option<f64>) {
    match v {
        Some(v) => row_f2(out, label, v),
        None => row_int(out, label, "n/a"),
    }
}

pub fn stats_section(out: &mut String, header: &str, short: &str, s: &Summary) {
    banner(out, header, '-');
    // A metric without data (no completed request has it) is "n/a", never 0.00.
    let has = |v: f64| (s.count > 0).then_some(v);
    row_opt_f2(out, &format!("Mean {short} (ms):"), has(s.mean));
    row_opt_f2(out, &format!("Median {short} (ms):"), has(s.median));
    for &(p, v) in &s.percentiles {
        row_opt_f2(out, &format!("P{} {short} (ms):", percentile_word(p)), has(v));
    }
}

pub fn vllm_header(metric: MetricName) -> (&'static str, &'static str) {
    match metric {
        MetricName::Ttft => ("Time to First Token", "TTFT"),
        MetricName::Tpot => ("Time per Output Token (excl. 1st token)", "TPOT"),
        MetricName::Itl => ("Inter-token Latency", "ITL"),
        MetricName::E2el => ("End-to-end Latency", "E2EL"),
        MetricName::ClientQueueTime => ("Client-side Queueing", "Client Queue Time"),
        MetricName::E2elIncludingClientQueue => {
            ("Queue-inclusive End-to-end Latency", "E2EL incl. Client Queue")
        }
    }
}

/// The opening of vLLM's result blocks (serving and pooling): title, request counts,
/// concurrency, configured rate, duration.
pub fn result_head(out: &mut String, title: &str, info: &RunInfo, m: &RunMetrics) {
    banner(out, title, '=');
    row_int(out, "Successful requests:", m.completed);
    row_int(out, "Failed requests:", m.failed);
    if let Some(c) = info.max_concurrency {
        row_int(out, "Maximum request concurrency:", c);
    }
    if info.request_rate.is_finite() {
        row_f2(out, "Request rate configured (RPS):", info.request_rate);
    }
    row_rate(out, "Benchmark duration (s):", m.duration_s, m.duration_s);
}

// ---- JSON ----

/// vLLM's percentile word: `99` for whole values, else Python's float text (`99.9`).
pub fn percentile_word(p: f64) -> String {
    if p.is_finite() && p == p.trunc() {
        format!("{}", p as i64)
    } else if p != 0.0 && p.abs() < 1e-4 {
        // Python's `str` of a float below 1e-4 is in exponent form with two exponent digits
        // (`1e-05`, `1.5e-05`); Rust's `{}` would write `0.00001`.
        let sci = format!("{p:e}");
        let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        format!("{mantissa}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.unsigned_abs())
    } else {
        format!("{p}")
    }
}

/// A float that may be infinite, as vLLM writes `request_rate`: a number, or the string `"inf"`.
pub fn number_or_inf(x: f64) -> Value {
    if x.is_infinite() && x > 0.0 {
        Value::from("inf")
    } else {
        Value::from(x)
    }
}

/// A value vLLM takes from an int-typed flag: an integer when whole, else a float.
pub fn int_or_float(x: f64) -> Value {
    if x.is_finite() && x == x.trunc() && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

pub fn secs(us: u64) -> f64 {
    us as f64 / 1e6
}

/// A statistic of `count` values: the number, or `null` without data (docs/metrics.md,
/// "Metrics without data": never 0).
pub fn stat_json(count: usize, v: f64) -> Value {
    if count > 0 && v.is_finite() {
        Value::from(v)
    } else {
        Value::Null
    }
}

/// A rate over a run of `duration_s`: `null` when nothing was measured (no duration).
pub fn rate_json(duration_s: f64, v: f64) -> Value {
    stat_json(usize::from(duration_s > 0.0), v)
}

/// A number under a key vLLM defines (docs/metrics.md, "Metrics without data"): vLLM's type
/// even without data — `0.0`, as vLLM writes for the statistics of an empty set, a run without
/// a time base, or RTFx without audio. Our own keys use [`stat_json`] / [`rate_json`] (`null`).
pub fn vllm_number(has_data: bool, v: f64) -> Value {
    if has_data && v.is_finite() {
        Value::from(v)
    } else {
        Value::from(0.0)
    }
}

/// A rate under a key vLLM defines: [`vllm_number`] with data when there is a duration.
pub fn vllm_rate(duration_s: f64, v: f64) -> Value {
    vllm_number(duration_s > 0.0, v)
}

/// Inserts `mean_<name>_ms`, `median_<name>_ms`, `std_<name>_ms`, `p<P>_<name>_ms` (vLLM order);
/// `null` for a metric without data.
pub fn insert_stats(map: &mut Map<String, Value>, name: &str, s: &Summary) {
    insert_stats_with(map, name, s, stat_json);
}

/// [`insert_stats`] for a metric vLLM defines (TTFT, TPOT, ITL, E2EL, client queue): `0.0`
/// without data, vLLM's type ([`vllm_number`]).
pub fn insert_vllm_stats(map: &mut Map<String, Value>, name: &str, s: &Summary) {
    insert_stats_with(map, name, s, |count, v| vllm_number(count > 0, v));
}

fn insert_stats_with(map: &mut Map<String, Value>, name: &str, s: &Summary, value: fn(usize, f64) -> Value) {
    map.insert(format!("mean_{name}_ms"), value(s.count, s.mean));
    map.insert(format!("median_{name}_ms"), value(s.count, s.median));
    map.insert(format!("std_{name}_ms"), value(s.count, s.std));
    for &(p, v) in &s.percentiles {
        map.insert(format!("p{}_{name}_ms", percentile_word(p)), value(s.count, v));
    }
}

/// Whether vLLM would report `metric` for this run: it must be selected, and the client-queue
/// metrics need `--max-concurrency` (and, for the queue-inclusive E2EL, a finite rate).
pub fn metric_reported(info: &RunInfo, m: &RunMetrics, metric: MetricName) -> bool {
    if !m.config.selected.contains(&metric) {
        return false;
    }
    match metric {
        MetricName::ClientQueueTime => info.max_concurrency.is_some(),
        MetricName::E2elIncludingClientQueue => {
            info.max_concurrency.is_some() && info.request_rate.is_finite()
        }
        _ => true,
    }
}

/// Microseconds as milliseconds.
pub fn us_to_ms(us: u64) -> f64 {
    us as f64 / 1000.0
}

/// Microseconds as milliseconds with two decimals (`12.35`), `-` when absent (tables).
pub fn ms_2dp_or_dash(us: Option<f64>) -> String {
    us.map_or_else(|| "-".into(), |v| format!("{:.2}", v / 1000.0))
}

/// Microseconds as exact milliseconds (`12.345`), empty when absent (CSV cells).
pub fn ms_exact_or_empty(us: Option<u64>) -> String {
    us.map_or_else(String::new, |v| format!("{}.{:03}", v / 1000, v % 1000))
}

/// Microseconds as a label with its unit (`12.35 ms`), `None` when absent.
pub fn ms_label(us: Option<f64>) -> Option<String> {
    us.map(|v| format!("{:.2} ms", v / 1000.0))
}

/// A value with two decimals, `n/a` when absent (summary tables).
pub fn f2_or_na(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"))
}

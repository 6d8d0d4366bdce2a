//! The steady-state section (vllm-bench's `steady_state` key): the window and its metrics in
//! the result JSON, and its console block (or why a run has no window).

use crate::fmt::percentile_word;
use serde_json::{json, Map, Value};
use servebench_core::metrics::{LoadMode, NoSteadyState, SteadyState};

/// The steady state of a run: its window, or why it has none.
pub type Steady = Result<SteadyState, NoSteadyState>;

/// A statistic that has data, else `null` (docs/metrics.md, "Metrics without data").
fn stat(count: usize, v: f64) -> Value {
    if count > 0 {
        json!(v)
    } else {
        Value::Null
    }
}

fn pct_key(p: f64) -> String {
    percentile_word(p)
}

/// The `steady_state` JSON object (vllm-bench's shape; every selected metric and percentile).
pub fn steady_state_json(s: &SteadyState) -> Value {
    let (mode, target) = match s.mode {
        LoadMode::ClosedLoop { target_concurrency } => ("closed_loop", Some(target_concurrency)),
        LoadMode::OpenLoop => ("open_loop", None),
    };
    let mut o = Map::new();
    o.insert(
        "window".into(),
        json!({
            "mode": mode,
            "start_s": s.start_s,
            "end_s": s.end_s,
            "duration_s": s.duration_s,
            "target_concurrency": target,
            "threshold": s.threshold,
            "threshold_abs": s.threshold_abs,
            "reference": s.reference,
            "observed_peak": s.observed_peak,
            "requests_started_in_window": s.requests_started_in_window,
            "requests_completed_in_window": s.requests_completed_in_window,
            "requests_total": s.requests_total,
            "arrival_rate": s.arrival_rate,
            "completion_rate": s.completion_rate,
            "in_flight_mean": s.in_flight_mean,
            "warning": s.warning,
        }),
    );
    o.insert("request_throughput".into(), json!(s.request_throughput));
    o.insert("input_throughput".into(), json!(s.input_throughput));
    o.insert("output_throughput".into(), json!(s.output_throughput));
    o.insert("total_token_throughput".into(), json!(s.total_token_throughput));
    for (m, sum) in &s.metrics {
        let n = m.as_str();
        let c = sum.count;
        o.insert(format!("mean_{n}_ms"), stat(c, sum.mean));
        o.insert(format!("median_{n}_ms"), stat(c, sum.median));
        for &(p, v) in &sum.percentiles {
            o.insert(format!("p{}_{n}_ms", pct_key(p)), stat(c, v));
        }
        o.insert(
            format!("percentiles_{n}_ms"),
            Value::Array(sum.percentiles.iter().map(|&(p, v)| json!([p, stat(c, v)])).collect()),
        );
    }
    Value::Object(o)
}

/// The console block of the steady state: the window and its metrics, or why there is none
/// (its warning is not part of it: it goes to stderr).
pub fn steady_state_block(steady: &Steady) -> String {
    let mut out = format!("{:=^50}\n", " Steady-State Metrics ");
    let row = |out: &mut String, k: &str, v: String| out.push_str(&format!("{k:<40}{v:<10}\n"));
    let s = match steady {
        Ok(s) => s,
        Err(e) => {
            row(&mut out, "Window:", "n/a".into());
            out.push_str(&format!("  no steady state: {}\n", e.reason));
            out.push_str(&"=".repeat(50));
            return out;
        }
    };
    let threshold = match s.mode {
        LoadMode::ClosedLoop { .. } => {
            format!("in flight ≥ {:.2} ({} × {:.2})", s.threshold_abs, s.threshold, s.reference)
        }
        LoadMode::OpenLoop => format!(
            "completions ≥ {:.2}/s ({} × {:.2} arrivals/s)",
            s.threshold_abs, s.threshold, s.reference
        ),
    };
    row(&mut out, "Threshold:", threshold);
    row(
        &mut out,
        "Window (s):",
        format!("{:.2} → {:.2} ({:.2} of the {:.2}-s run)", s.start_s, s.end_s, s.duration_s, s.run_s),
    );
    row(
        &mut out,
        "Arrivals / completions (req/s):",
        format!("{:.2} / {:.2}", s.arrival_rate, s.completion_rate),
    );
    row(&mut out, "Mean in flight:", format!("{:.2}", s.in_flight_mean));
    row(&mut out, "Observed peak concurrency:", s.observed_peak.to_string());
    row(
        &mut out,
        "Requests started in window:",
        format!("{} / {}", s.requests_started_in_window, s.requests_total),
    );
    row(&mut out, "Requests completed in window:", s.requests_completed_in_window.to_string());
    row(&mut out, "Request throughput (req/s):", format!("{:.2}", s.request_throughput));
    // A pooling run generates no output: its block has no output row, as its headline has none.
    if let Some(output) = s.output_throughput {
        row(&mut out, "Output token throughput (tok/s):", format!("{output:.2}"));
    }
    row(&mut out, "Total token throughput (tok/s):", format!("{:.2}", s.total_token_throughput));
    let ms = |count: usize, v: f64| if count > 0 { format!("{v:.2}") } else { "n/a".into() };
    for (m, sum) in &s.metrics {
        let n = m.as_str().to_uppercase();
        row(&mut out, &format!("Mean {n} (ms):"), ms(sum.count, sum.mean));
        row(&mut out, &format!("Median {n} (ms):"), ms(sum.count, sum.median));
        for &(p, v) in &sum.percentiles {
            row(&mut out, &format!("P{} {n} (ms):", pct_key(p)), ms(sum.count, v));
        }
    }
    // Its warning goes to stderr with the run's other warnings (`document.rs`).
    out.push_str(&"=".repeat(50));
    out
}

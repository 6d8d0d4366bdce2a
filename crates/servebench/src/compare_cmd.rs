//! `servebench compare A.json B.json [C…]`: every result against the first (the baseline):
//! values, delta, % change with a direction-aware marker, and a significance test where the
//! data allow one (docs/metrics.md, "Comparing runs"):
//!
//! - both inputs are multi-run documents (`--num-runs`): Welch's t-test on the per-run values of
//!   each metric;
//! - both inputs have per-request data (`<result>.records.jsonl` next to the result, or vLLM's
//!   `--save-detailed` arrays): the Mann–Whitney U test on the per-request values of the latency
//!   metric a statistic belongs to (TTFT, TPOT, ITL, E2EL);
//! - otherwise no test (`-`).

use clap::Args;
use serde_json::{json, Value};
use servebench_core::inference::{mann_whitney_u, welch_t_test, TestResult};
use servebench_core::metrics::{is_completed, RequestTimes};
use servebench_core::BenchError;
use servebench_report::change::{change_percent, format_change};
use servebench_report::result_keys::{better, latency_metric, metric_keys, value_at, Better};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Arguments of `servebench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// Result files (vLLM's JSON, ours, JSONL: the last line, or a `--num-runs` document); the
    /// first is the baseline.
    #[arg(required = true, num_args = 2.., value_name = "RESULT")]
    pub inputs: Vec<PathBuf>,
    /// Significance level of the tests.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// Also write the comparison as JSON to PATH.
    #[arg(long, value_name = "PATH")]
    pub output_json: Option<PathBuf>,
}

/// One input, loaded.
#[derive(Debug)]
pub struct Loaded {
    pub name: String,
    /// Values shown (the mean over runs for a multi-run document).
    pub values: Value,
    /// Per-run results of a multi-run document.
    pub runs: Vec<Value>,
    /// Per-request values (ms) by latency metric, when available.
    pub per_request: HashMap<&'static str, Vec<f64>>,
}

fn last_json_line(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    let whole: Result<Value, _> = serde_json::from_str(&text);
    let v = match whole {
        Ok(v) => v,
        Err(_) => {
            let line = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("");
            serde_json::from_str(line).map_err(|e| {
                BenchError::io(path.display(), format!("not a result JSON or JSONL file ({e})"))
            })?
        }
    };
    Ok(v)
}

fn per_request_from_records(path: &Path) -> anyhow::Result<HashMap<&'static str, Vec<f64>>> {
    let (records, _) = servebench_runner::read_records(path)?;
    let mut out: HashMap<&'static str, Vec<f64>> = HashMap::new();
    for r in records.iter().filter(|r| is_completed(r)) {
        let t = RequestTimes::of(r);
        let ms = |us: u64| us as f64 / 1000.0;
        if let Some(v) = t.ttft_us {
            out.entry("ttft").or_default().push(ms(v));
        }
        if let Some(v) = t.tpot_us {
            out.entry("tpot").or_default().push(v / 1000.0);
        }
        if let Some(v) = t.e2el_us {
            out.entry("e2el").or_default().push(ms(v));
        }
        out.entry("itl").or_default().extend(r.token_events.gaps_us.iter().map(|&g| f64::from(g) / 1000.0));
    }
    Ok(out)
}

/// vLLM's `--save-detailed` arrays (seconds): `ttfts`, `latencies`, `itls`, `output_lens`.
fn per_request_from_arrays(v: &Value) -> HashMap<&'static str, Vec<f64>> {
    let arr = |k: &str| v.get(k).and_then(Value::as_array).cloned().unwrap_or_default();
    let (ttfts, lats, outs) = (arr("ttfts"), arr("latencies"), arr("output_lens"));
    let mut out: HashMap<&'static str, Vec<f64>> = HashMap::new();
    if ttfts.is_empty() {
        return out;
    }
    for (i, t) in ttfts.iter().enumerate() {
        let (Some(ttft), Some(lat)) = (t.as_f64(), lats.get(i).and_then(Value::as_f64)) else { continue };
        if lat <= 0.0 {
            continue; // failed request
        }
        out.entry("ttft").or_default().push(ttft * 1000.0);
        out.entry("e2el").or_default().push(lat * 1000.0);
        if let Some(n) = outs.get(i).and_then(Value::as_f64).filter(|n| *n > 1.0) {
            out.entry("tpot").or_default().push((lat - ttft) * 1000.0 / (n - 1.0));
        }
    }
    for gaps in arr("itls") {
        out.entry("itl")
            .or_default()
            .extend(gaps.as_array().into_iter().flatten().filter_map(Value::as_f64).map(|g| g * 1000.0));
    }
    out
}

/// Loads one input.
pub fn load(path: &Path) -> anyhow::Result<Loaded> {
    let v = last_json_line(path)?;
    let name = path.display().to_string();
    match v.get("servebench_experiment").and_then(Value::as_str) {
        Some("multi_run") => {
            let runs: Vec<Value> = v
                .get("runs")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(|r| r.get("result").cloned()).collect())
                .unwrap_or_default();
            let mut means = serde_json::Map::new();
            if let Some(s) = v.get("summary").and_then(Value::as_object) {
                for (k, a) in s {
                    if let Some(m) = a.get("mean") {
                        insert_path(&mut means, k, m.clone());
                    }
                }
            }
            Ok(Loaded { name, values: Value::Object(means), runs, per_request: HashMap::new() })
        }
        Some(other) => Err(BenchError::config(
            "compare",
            format!("{name} is a {other} document"),
            "compare single results or --num-runs documents (a sweep's points are under `points[i].result`)",
        )
        .into()),
        None => {
            let records = servebench_runner::results::paths::records_beside(
                path,
                v.get("records_file").and_then(Value::as_str),
            );
            let per_request = if records.exists() {
                per_request_from_records(&records)?
            } else {
                per_request_from_arrays(&v)
            };
            Ok(Loaded { name, values: v, runs: Vec::new(), per_request })
        }
    }
}

fn insert_path(o: &mut serde_json::Map<String, Value>, key: &str, v: Value) {
    match key.strip_prefix("steady_state.").map(|rest| ("steady_state", rest)) {
        Some((head, rest)) => {
            let child = o.entry(head.to_owned()).or_insert_with(|| json!({}));
            if let Some(c) = child.as_object_mut() {
                insert_path(c, rest, v);
            }
        }
        None => {
            o.insert(key.to_owned(), v);
        }
    }
}

/// The test for `key` between `a` and `b`, if the data allow one.
pub fn test_for(a: &Loaded, b: &Loaded, key: &str) -> Option<TestResult> {
    if !a.runs.is_empty() && !b.runs.is_empty() {
        let xa: Vec<f64> = a.runs.iter().filter_map(|r| value_at(r, key)).collect();
        let xb: Vec<f64> = b.runs.iter().filter_map(|r| value_at(r, key)).collect();
        return welch_t_test(&xa, &xb);
    }
    let m = latency_metric(key)?;
    mann_whitney_u(a.per_request.get(m)?, b.per_request.get(m)?)
}

/// `+` when the change is an improvement, `-` when a regression, blank otherwise.
pub fn marker(key: &str, delta: f64) -> &'static str {
    match (better(key), delta) {
        (_, d) if d == 0.0 || d.is_nan() => "",
        (Better::Higher, d) if d > 0.0 => "+",
        (Better::Lower, d) if d < 0.0 => "+",
        (Better::Neither, _) => "",
        _ => "-",
    }
}

/// One metric of a comparison (a row of the table and of `--output-json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CompareRow {
    pub metric: String,
    pub a: Option<f64>,
    pub b: Option<f64>,
    /// b − a (finite values only).
    pub delta: Option<f64>,
    /// (b − a) / a × 100; `None` when undefined (a = 0 with b ≠ 0, or a side without data).
    pub change_percent: Option<f64>,
    /// `+` improvement, `-` regression, empty otherwise.
    pub marker: &'static str,
    /// `welch_t` or `mann_whitney_u`, when the data allow a test.
    pub test: Option<String>,
    pub p_value: Option<f64>,
    pub significant: Option<bool>,
}

/// Compares `b` against the baseline `a`: one row per metric key either reports.
pub fn compare(a: &Loaded, b: &Loaded, alpha: f64) -> Vec<CompareRow> {
    // A's keys in A's order, then keys only B reports (A has no data for them).
    let mut keys = metric_keys(&a.values);
    for k in metric_keys(&b.values) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys.into_iter()
        .filter_map(|k| {
            // A metric one side has no data for (null) stays in the table as n/a.
            let (va, vb) = (value_at(&a.values, &k), value_at(&b.values, &k));
            if va.is_none() && vb.is_none() {
                return None;
            }
            let delta = va.zip(vb).map(|(va, vb)| vb - va).filter(|d| d.is_finite());
            let change = va.zip(vb).and_then(|(va, vb)| change_percent(va, vb));
            let test = test_for(a, b, &k);
            Some(CompareRow {
                marker: delta.map_or("", |d| marker(&k, d)),
                metric: k,
                a: va,
                b: vb,
                delta,
                change_percent: change,
                test: test.as_ref().map(|t| t.test.clone()),
                p_value: test.as_ref().map(|t| t.p_value),
                significant: test.as_ref().map(|t| t.significant(alpha)),
            })
        })
        .collect()
}

fn table(a: &Loaded, b: &Loaded, rows: &[CompareRow], alpha: f64) -> String {
    let mut out = format!("{:=^110}\n", " Benchmark Comparison ");
    out.push_str(&format!("A: {}\nB: {}\n", a.name, b.name));
    out.push_str(&format!(
        "{:<34} {:>12} {:>12} {:>12} {:>10} {:>16} {:>9} {:>5}\n",
        "Metric", "A", "B", "Delta", "Change", "Test", "p", "Sig"
    ));
    for r in rows {
        let marker = r.marker;
        let change = match r.change_percent {
            Some(c) => format!("{}{marker}", format_change(Some(c), 2)),
            // "–" then the direction apart, so a regression from 0 still shows.
            None => format!("– {marker}").trim_end().to_owned(),
        };
        let num = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.2}"));
        out.push_str(&format!(
            "{:<34} {:>12} {:>12} {:>12} {:>10} {:>16} {:>9} {:>5}\n",
            r.metric,
            num(r.a),
            num(r.b),
            num(r.delta),
            change,
            r.test.as_deref().unwrap_or("-"),
            r.p_value.map_or("-".into(), |p| format!("{p:.4}")),
            match r.significant {
                Some(true) => "yes",
                Some(false) => "no",
                None => "-",
            }
        ));
    }
    out.push_str(&format!(
        "Change: + improvement, - regression (by direction). Sig: p < {alpha} (welch_t: Welch's t-test on \
         per-run values; mann_whitney_u: Mann-Whitney U on per-request values, two-sided).\n"
    ));
    out
}

/// Runs `servebench compare`.
pub fn compare_cmd(args: &CompareArgs) -> anyhow::Result<u8> {
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        return Err(BenchError::config("--alpha", "must be in (0, 1)", "pass e.g. --alpha 0.05").into());
    }
    let loaded: Vec<Loaded> = args.inputs.iter().map(|p| load(p)).collect::<anyhow::Result<_>>()?;
    let base = &loaded[0];
    let mut all = Vec::new();
    for other in &loaded[1..] {
        let rows = compare(base, other, args.alpha);
        print!("{}", table(base, other, &rows, args.alpha));
        all.push(json!({"a": base.name, "b": other.name, "alpha": args.alpha, "rows": rows}));
    }
    if let Some(p) = &args.output_json {
        servebench_report::write_text(p, &Value::Array(all).to_string())?;
        println!("Comparison: {}", p.display());
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_follow_direction() {
        assert_eq!(marker("p99_ttft_ms", -1.0), "+");
        assert_eq!(marker("p99_ttft_ms", 1.0), "-");
        assert_eq!(marker("request_throughput", 1.0), "+");
        assert_eq!(marker("request_throughput", -1.0), "-");
        assert_eq!(marker("max_concurrent_requests", 5.0), "");
        assert_eq!(marker("duration", 0.0), "");
    }

    /// Issue 15.12: 0 → 0 is "0.00%", x → 0 and 0 → x print no inf/NaN, a null side is n/a.
    #[test]
    fn compare_zero_to_zero_is_zero_percent_never_inf() {
        let load_doc =
            |v: Value| Loaded { name: "x".into(), values: v, runs: vec![], per_request: HashMap::new() };
        let a =
            load_doc(json!({"completed": 0, "failed": 0, "request_throughput": 2.0, "mean_ttft_ms": null,
                                "p99_ttft_ms": 0.0}));
        let b =
            load_doc(json!({"completed": 5, "failed": 0, "request_throughput": 0.0, "mean_ttft_ms": 12.5,
                                "p99_ttft_ms": 3.0}));
        let rows = compare(&a, &b, 0.05);
        let row = |k: &str| rows.iter().find(|r| r.metric == k).unwrap().clone();
        assert_eq!(row("failed").change_percent, Some(0.0));
        assert_eq!(row("completed").change_percent, None);
        assert_eq!(row("request_throughput").change_percent, Some(-100.0));
        assert_eq!(row("p99_ttft_ms").change_percent, None);
        let text = table(&a, &b, &rows, 0.05);
        assert!(!text.contains("inf") && !text.contains("NaN"), "{text}");
        let line = |k: &str| text.lines().find(|l| l.starts_with(&format!("{k} "))).unwrap().to_owned();
        assert!(line("failed").contains(" 0.00%"), "{}", line("failed"));
        // 0 → 5 completed: undefined change, still marked as an improvement, apart from the dash.
        assert!(line("completed").contains(" – +"), "{}", line("completed"));
        // mean_ttft_ms is null in A (no completed request): n/a, not 0.00, and no change.
        assert_eq!(row("mean_ttft_ms").a, None);
        assert_eq!(row("mean_ttft_ms").change_percent, None);
        let l = line("mean_ttft_ms");
        assert!(l.contains("n/a") && l.contains("12.50") && l.contains(" –"), "{l}");
    }

    #[test]
    fn vllm_detailed_arrays_give_per_request_values() {
        // Request 1 failed (latency 0): skipped. TPOT = (0.5 − 0.1) / (5 − 1) s = 100 ms.
        let v = json!({"ttfts": [0.1, 0.0], "latencies": [0.5, 0.0], "output_lens": [5, 0],
                       "itls": [[0.1, 0.1, 0.1, 0.1], []]});
        let m = per_request_from_arrays(&v);
        assert_eq!(m["ttft"], vec![100.0]);
        assert_eq!(m["e2el"], vec![500.0]);
        assert!((m["tpot"][0] - 100.0).abs() < 1e-9);
        assert_eq!(m["itl"].len(), 4);
        assert!(per_request_from_arrays(&json!({"latencies": [1.0]})).is_empty());
    }

    #[test]
    fn multi_run_documents_use_welch() {
        let doc = |vals: &[f64]| {
            let runs: Vec<Value> =
                vals.iter().map(|v| json!({"result": {"request_throughput": v}})).collect();
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            json!({"servebench_experiment": "multi_run", "runs": runs,
                   "summary": {"request_throughput": {"mean": mean}}})
        };
        let dir = tempfile::tempdir().unwrap();
        let (pa, pb, pc) = (dir.path().join("a.json"), dir.path().join("b.json"), dir.path().join("c.json"));
        std::fs::write(&pa, doc(&[10.0, 10.2, 9.9, 10.1]).to_string()).unwrap();
        std::fs::write(&pb, doc(&[8.0, 8.1, 7.9, 8.05]).to_string()).unwrap();
        std::fs::write(&pc, doc(&[10.1, 9.95, 10.05, 10.0]).to_string()).unwrap();
        let (a, b, c) = (load(&pa).unwrap(), load(&pb).unwrap(), load(&pc).unwrap());
        let r = &compare(&a, &b, 0.05)[0];
        assert_eq!((r.test.as_deref(), r.significant, r.marker), (Some("welch_t"), Some(true), "-"));
        let r = &compare(&a, &c, 0.05)[0];
        assert_eq!(r.significant, Some(false));
    }
}

//! `servebench report RECORDS_OR_RESULT... -o report.html [--csv out.csv] [--label NAME...]`:
//! the HTML report (and per-request CSV) of one or more runs, recomputed from their records, or the
//! throughput–latency report of one sweep/search/multi-run document; and
//! the `--html-report` / `--csv` outputs of a benchmark run.

use std::path::{Path, PathBuf};

use serde_json::Value;
use servebench_core::config::parse_goodput;
use servebench_core::metrics::{RunMetrics, Slo};
use servebench_core::{BenchError, RequestRecord};
use servebench_report::html::{
    dataset_stats_report, html_report, is_experiment_json, request_lens, sweep_report, ReportHeader,
    ReportRun, ServerSeries,
};
use servebench_report::{gather_environment, records_csv, runs_csv, write_text, RunInfo};
use servebench_runner::observe::scrape::ServerMetrics;
use servebench_runner::results::paths::records_beside;
use servebench_runner::{read_records, RunOutput};

use crate::cli::ReportArgs;

/// One input of `servebench report`: its records and, when a result JSON was given, that result.
struct Input {
    records_path: PathBuf,
    records: Vec<RequestRecord>,
    result: Option<Value>,
}

/// `servebench report`: reads every input, recomputes metrics from the records and writes the
/// HTML report (and the CSV). Returns the exit code.
pub fn report(args: &ReportArgs) -> anyhow::Result<u8> {
    let goodput = parse_goodput(&args.goodput)?;
    if args.label.len() > args.inputs.len() {
        return Err(BenchError::config(
            "--label",
            format!("{} labels for {} inputs", args.label.len(), args.inputs.len()),
            "pass at most one --label per input, in the same order",
        )
        .into());
    }
    let mut env = gather_environment();
    env.note = Some(
        "Environment of the host that rendered this report: records do not say which host ran the benchmark."
            .into(),
    );
    let experiments: Vec<Value> = args.inputs.iter().filter_map(|p| read_experiment(p)).collect();
    if !experiments.is_empty() {
        return report_experiment(args, &experiments, &goodput);
    }
    let mut runs = Vec::new();
    for (i, path) in args.inputs.iter().enumerate() {
        let input = load_input(path)?;
        let label = args.label.get(i).cloned().unwrap_or_else(|| default_label(path, input.result.as_ref()));
        let mut header = input.result.as_ref().map(header_from_result).unwrap_or_default();
        header.config.insert(0, ("records file".into(), input.records_path.display().to_string()));
        header.environment = Some(env.clone());
        let mut run = ReportRun::new(label, header, input.records, goodput.clone());
        run.server_metrics = input.result.as_ref().and_then(ServerSeries::from_result);
        runs.push(run);
    }
    if let Some(csv) = &args.csv {
        let text = match runs.as_slice() {
            [one] => records_csv(&one.records),
            many => {
                let parts: Vec<(&str, &[RequestRecord])> =
                    many.iter().map(|r| (r.label.as_str(), r.records.as_slice())).collect();
                runs_csv(&parts)
            }
        };
        write_text(csv, &text)?;
        println!("CSV: {}", csv.display());
    }
    write_text(&args.output, &html_report(&runs))?;
    println!("HTML report: {} ({} run(s))", args.output.display(), runs.len());
    Ok(0)
}

/// The experiment document (sweep, search, multi-run JSON) at `path`, when it is one.
fn read_experiment(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    serde_json::from_str::<Value>(&text).ok().filter(is_experiment_json)
}

/// `servebench report SWEEP.json -o report.html`: the throughput–latency report of one experiment
/// document (sweep, `--find-max-rate`, `--slo`, `--num-runs`).
fn report_experiment(args: &ReportArgs, experiments: &[Value], goodput: &[Slo]) -> anyhow::Result<u8> {
    let [doc] = experiments else {
        return Err(BenchError::config(
            "INPUTS",
            format!("{} experiment documents among {} inputs", experiments.len(), args.inputs.len()),
            "pass one sweep/search/multi-run JSON alone (records and results go in a separate report)",
        )
        .into());
    };
    if args.inputs.len() > 1 || args.csv.is_some() {
        return Err(BenchError::config(
            "INPUTS",
            "an experiment document was given with other inputs or --csv",
            "report a sweep/search/multi-run JSON on its own, without --csv (its CSV summary is saved beside it)",
        )
        .into());
    }
    let html = sweep_report(doc, goodput)
        .map_err(|e| BenchError::Dataset { detail: format!("{}: {e}", args.inputs[0].display()) })?;
    write_text(&args.output, &html)?;
    println!("HTML report: {} (experiment)", args.output.display());
    Ok(0)
}

/// Keys by which a single-run result JSON is recognised (vLLM's and ours).
const RESULT_KEYS: [&str; 4] = ["model_id", "completed", "request_throughput", "duration"];

/// Reads a records file (JSONL of request records) or a result JSON, whose records are read from
/// `<result>.records.jsonl` beside it.
fn load_input(path: &Path) -> Result<Input, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    // A sharded run's records file starts with its shard header (docs/scale-out.md).
    let records_file =
        serde_json::from_str::<RequestRecord>(first).is_ok() || servebench_core::shard::is_shard_line(first);
    if text.trim().is_empty() || records_file {
        return read_records_file(path, None);
    }
    // A result file (one JSON document, or JSONL from --append-result: the last line wins).
    let last = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let result = serde_json::from_str::<Value>(&text)
        .or_else(|_| serde_json::from_str::<Value>(last))
        .ok()
        .filter(|v| RESULT_KEYS.iter().any(|k| v.get(k).is_some()))
        .ok_or_else(|| BenchError::Dataset {
            detail: format!(
                "{}: neither a records file (JSONL of request records), a result JSON nor an experiment \
                 (sweep/search/multi-run) JSON",
                path.display()
            ),
        })?;
    let records = records_beside(path, result.get("records_file").and_then(Value::as_str));
    if !records.exists() {
        return Err(BenchError::io(
            records.display(),
            format!(
                "not found: a report is computed from the records file written next to the result \
                 ({} is a result JSON); pass the records file instead",
                path.display()
            ),
        ));
    }
    read_records_file(&records, Some(result))
}

fn read_records_file(path: &Path, result: Option<Value>) -> Result<Input, BenchError> {
    let (records, bad) = read_records(path)?;
    if bad > 0 {
        println!("note: {}: ignored a truncated last line (the run was interrupted?)", path.display());
    }
    Ok(Input { records_path: path.to_path_buf(), records, result })
}

/// The label of an input: the result's `label`, else the file name without `.records.jsonl` /
/// `.json` / `.jsonl`.
fn default_label(path: &Path, result: Option<&Value>) -> String {
    if let Some(l) = result.and_then(|r| r.get("label")).and_then(Value::as_str).filter(|l| !l.is_empty()) {
        return l.to_string();
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for suffix in [".records.jsonl", ".jsonl", ".json"] {
        if let Some(stem) = name.strip_suffix(suffix).filter(|s| !s.is_empty()) {
            return stem.to_string();
        }
    }
    name
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        other => other.to_string(),
    }
}

/// Configuration and client health from a result JSON (its vLLM keys and `client_health`).
fn header_from_result(result: &Value) -> ReportHeader {
    let mut header = ReportHeader::default();
    for (key, name) in [
        ("date", "date"),
        ("model_id", "model"),
        ("tokenizer_id", "tokenizer"),
        ("backend", "backend"),
        ("num_prompts", "prompts"),
        ("request_rate", "request rate (req/s)"),
        ("burstiness", "burstiness"),
        ("max_concurrency", "max concurrency"),
        ("ramp_up_strategy", "ramp-up"),
        ("ramp_up_start_rps", "ramp-up start (req/s)"),
        ("ramp_up_end_rps", "ramp-up end (req/s)"),
    ] {
        if let Some(v) = result.get(key) {
            header.config.push((name.into(), show(v)));
        }
    }
    if let Some(h) = result.get("client_health").and_then(Value::as_object) {
        for (key, name, unit) in [
            ("dispatch_lateness_p50_ms", "dispatch lateness p50", " ms"),
            ("dispatch_lateness_p99_ms", "dispatch lateness p99", " ms"),
            ("hiccup_p99_ms", "event-loop hiccup p99", " ms"),
            ("client_cpu_percent", "client CPU (% of one core)", " %"),
            ("available_cores", "available cores", ""),
            ("peak_rss_bytes", "peak RSS (bytes)", ""),
        ] {
            if let Some(v) = h.get(key).and_then(Value::as_f64) {
                let text = if unit.is_empty() { format!("{v}") } else { format!("{v:.2}{unit}") };
                header.client_health.push((name.into(), text));
            }
        }
        if let Some(w) = h.get("warnings").and_then(Value::as_array) {
            header.warnings.extend(w.iter().filter_map(Value::as_str).map(String::from));
        }
    }
    header
}

/// `--html-report PATH` / `--csv PATH` of a benchmark run: written from the run's records after
/// the result, with the run's dispatch lateness (not stored in records) in the queue chart and the
/// server metrics scraped during the run (`--scrape-metrics`), when any.
pub fn write_run_reports(
    html: Option<&Path>,
    csv: Option<&Path>,
    info: &RunInfo,
    metrics: &RunMetrics,
    out: &RunOutput,
    server: Option<&ServerMetrics>,
) -> anyhow::Result<()> {
    if let Some(p) = csv {
        write_text(p, &records_csv(&out.records))?;
        println!("CSV: {}", p.display());
    }
    if let Some(p) = html {
        let mut header = ReportHeader::from_run_info(info, Some(gather_environment()));
        header.warnings.extend(out.warnings.iter().cloned());
        let label = info.label.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| info.model_id.clone());
        let mut run = ReportRun::new(label, header, out.records.clone(), metrics.config.goodput.clone());
        run.dispatch_lateness_us = Some(out.health.dispatch_lateness_us.clone());
        run.server_metrics = server
            .and_then(|s| serde_json::to_value(s).ok())
            .and_then(|s| ServerSeries::from_result(&serde_json::json!({ "server_metrics": s })));
        write_text(p, &html_report(&[run]))?;
        println!("HTML report: {}", p.display());
    }
    Ok(())
}

/// `--plot-dataset-stats`: the token-length charts of the run's requests, next to the result
/// (`<result>.dataset_stats.html`, the result's extension replaced as vLLM does for its PNG).
pub fn write_dataset_stats(
    result_path: &Path,
    args: &crate::cli::RunArgs,
    info: &RunInfo,
    records: &[RequestRecord],
) -> anyhow::Result<()> {
    let path = dataset_stats_path(result_path);
    let about = vec![
        ("model".to_string(), info.model_id.clone()),
        ("backend".to_string(), info.backend.clone()),
        ("dataset".to_string(), args.dataset_name.clone()),
        ("date".to_string(), servebench_report::info::vllm_date(info.date)),
    ];
    let title = format!("servebench dataset statistics: {}", info.model_id);
    write_text(&path, &dataset_stats_report(&title, &about, &request_lens(records)))?;
    println!("Dataset statistics: {}", path.display());
    Ok(())
}

/// `--plot-timeline`: writes the run's request timeline next to the result file
/// (`<result>.timeline.html`, the result's extension replaced as vLLM does).
pub fn write_timeline(
    result_path: &Path,
    args: &crate::cli::RunArgs,
    info: &RunInfo,
    records: &[RequestRecord],
    thresholds_ms: (f64, f64),
) -> anyhow::Result<()> {
    let path = result_path.with_extension("timeline.html");
    let about = vec![
        ("model".to_string(), info.model_id.clone()),
        ("backend".to_string(), info.backend.clone()),
        ("dataset".to_string(), args.dataset_name.clone()),
        ("date".to_string(), servebench_report::info::vllm_date(info.date)),
        ("ITL thresholds (ms)".to_string(), format!("{}, {}", thresholds_ms.0, thresholds_ms.1)),
    ];
    let title = format!("servebench request timeline: {}", info.model_id);
    let page = servebench_report::html::timeline_report(&title, &about, records, thresholds_ms);
    write_text(&path, &page)?;
    println!("Timeline: {}", path.display());
    Ok(())
}

/// `<result>.dataset_stats.html`: the result path with its extension replaced.
pub fn dataset_stats_path(result_path: &Path) -> PathBuf {
    result_path.with_extension("dataset_stats.html")
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::record::Outcome;

    fn record(i: u64) -> RequestRecord {
        let mut r = RequestRecord::scheduled(i, format!("r{i}"), i * 1000, 10, 4);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(i * 1000 + 10);
        r.first_token_us = Some(i * 1000 + 5000);
        r.last_token_us = Some(i * 1000 + 8000);
        r.done_us = Some(i * 1000 + 8100);
        r.token_event_count = 4;
        r.token_events.gaps_us = vec![1000; 3];
        r
    }

    fn write_records(path: &Path, n: u64) {
        let text: Vec<String> = (0..n).map(|i| serde_json::to_string(&record(i)).unwrap()).collect();
        std::fs::write(path, text.join("\n") + "\n").unwrap();
    }

    #[test]
    fn loads_records_and_results_with_records_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("a.records.jsonl");
        write_records(&rec, 5);
        let input = load_input(&rec).unwrap();
        assert_eq!(input.records.len(), 5);
        assert!(input.result.is_none());
        assert_eq!(default_label(&rec, None), "a");

        let result = dir.path().join("run.json");
        std::fs::write(&result, r#"{"date": "20261129-101010", "label": "mine", "model_id": "m", "request_rate": "inf", "client_health": {"dispatch_lateness_p99_ms": 12.5, "warnings": ["slow"]}}"#).unwrap();
        assert!(load_input(&result).is_err(), "records beside the result are required");
        write_records(&dir.path().join("run.json.records.jsonl"), 3);
        let input = load_input(&result).unwrap();
        assert_eq!(input.records.len(), 3);
        let v = input.result.unwrap();
        assert_eq!(default_label(&result, Some(&v)), "mine");
        let h = header_from_result(&v);
        assert!(h.config.contains(&("request rate (req/s)".into(), "inf".into())));
        assert_eq!(h.client_health, vec![("dispatch lateness p99".into(), "12.50 ms".into())]);
        assert_eq!(h.warnings, vec!["slow".to_string()]);

        let junk = dir.path().join("junk.txt");
        std::fs::write(&junk, "hello\n").unwrap();
        assert!(load_input(&junk).is_err());
    }

    #[test]
    fn report_command_writes_html_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.records.jsonl");
        let b = dir.path().join("b.records.jsonl");
        write_records(&a, 20);
        write_records(&b, 10);
        let args = ReportArgs {
            inputs: vec![a, b],
            output: dir.path().join("out/report.html"),
            csv: Some(dir.path().join("out/records.csv")),
            label: vec!["first".into()],
            goodput: vec!["ttft:10".into()],
        };
        assert_eq!(report(&args).unwrap(), 0);
        let html = std::fs::read_to_string(dir.path().join("out/report.html")).unwrap();
        assert!(html.contains("servebench comparison: first vs b"));
        assert_eq!(html.matches("<svg").count(), 12);
        let csv = std::fs::read_to_string(dir.path().join("out/records.csv")).unwrap();
        assert_eq!(csv.lines().count(), 1 + 30);
        assert!(csv.starts_with("run,index,"));

        let too_many = ReportArgs { label: vec!["x".into(); 3], ..args };
        assert!(report(&too_many).is_err());
    }

    fn args_for(inputs: Vec<PathBuf>, output: PathBuf) -> ReportArgs {
        ReportArgs { inputs, output, csv: None, label: vec![], goodput: vec![] }
    }

    fn code_of(e: &anyhow::Error) -> &'static str {
        e.downcast_ref::<BenchError>().map(|b| b.code().as_str()).unwrap_or("none")
    }

    #[test]
    fn report_of_a_sweep_json_and_of_scraped_server_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let point = |c: u32, tok: f64| {
            serde_json::json!({"label": format!("concurrency {c}"), "result": {"model_id": "m",
                "output_throughput": tok, "request_throughput": tok / 100.0, "median_ttft_ms": 10.0 * f64::from(c),
                "p99_ttft_ms": 30.0 * f64::from(c), "median_e2el_ms": 200.0}})
        };
        let sweep = dir.path().join("s-sweep.json");
        let doc = serde_json::json!({"servebench_experiment": "sweep", "model_id": "m",
            "points": [point(1, 100.0), point(4, 350.0)]});
        std::fs::write(&sweep, doc.to_string()).unwrap();
        let out = dir.path().join("sweep.html");
        let mut args = args_for(vec![sweep.clone()], out.clone());
        args.goodput = vec!["ttft:25".into()];
        assert_eq!(report(&args).unwrap(), 0);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("id=\"sweep-ttft-tok\"") && html.contains("goodput SLO: ttft ≤ 25 ms"));
        // An experiment with other inputs, or of an unknown kind, is refused with a code.
        let rec = dir.path().join("a.records.jsonl");
        write_records(&rec, 3);
        let e = report(&args_for(vec![sweep, rec.clone()], out.clone())).unwrap_err();
        assert_eq!(code_of(&e), "SB101");
        let bogus = dir.path().join("bogus.json");
        std::fs::write(&bogus, r#"{"servebench_experiment": "tournament", "points": []}"#).unwrap();
        assert_eq!(code_of(&report(&args_for(vec![bogus], out.clone())).unwrap_err()), "SB203");
        let unknown = dir.path().join("unknown.json");
        std::fs::write(&unknown, r#"{"hello": "world"}"#).unwrap();
        assert_eq!(code_of(&report(&args_for(vec![unknown], out.clone())).unwrap_err()), "SB203");

        // A result JSON with scraped server metrics gets the server charts.
        let result = dir.path().join("run.json");
        std::fs::write(
            &result,
            r#"{"model_id": "m", "server_metrics": {"samples": [
            {"t_s": 0.0, "running": 1.0, "waiting": 0.0, "kv_cache_usage": 0.1},
            {"t_s": 0.5, "running": 3.0, "waiting": 1.0, "kv_cache_usage": 0.3}]}}"#,
        )
        .unwrap();
        write_records(&dir.path().join("run.json.records.jsonl"), 4);
        assert_eq!(report(&args_for(vec![result], out.clone())).unwrap(), 0);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("id=\"server-requests\"") && html.contains("id=\"server-kv\""));
        assert!(!html.contains("id=\"server-prefix\""), "no prefix-cache counters, no chart");
    }
}

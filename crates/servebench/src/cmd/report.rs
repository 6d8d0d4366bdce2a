//! `servebench report RECORDS_OR_RESULT... -o report.html [--csv out.csv] [--label NAME...]`:
//! the HTML report (and per-request CSV) of one or more runs, recomputed from their records, or the
//! throughput–latency report of one sweep/search/multi-run document; and
//! the `--html-report` / `--csv` outputs of a benchmark run.

use std::path::{Path, PathBuf};

use servebench_core::metrics::{RunMetrics, Slo};
use servebench_core::{BenchError, RequestRecord};
use servebench_report::document::Metrics;
use servebench_report::document::{ExperimentDocument, JsonFile};
use servebench_report::html::{
    dataset_stats_report, html_report, request_lens, sweep_report, RecordSource, ReportHeader, ReportRun,
    ServerSeries,
};
use servebench_report::vllm_arrays::{source_notes, use_result_figures};
use servebench_report::{gather_environment, input_label, records_csv, runs_csv, write_text, RunInfo};
use servebench_runner::results::inputs::load_report_input;
use servebench_runner::RunOutput;

use crate::cli::ReportArgs;

/// SB120 before anything is written: `-o` and `--csv` overwrite no input (a records file
/// replaced by the page could not be reported again) and not each other.
fn check_outputs(args: &ReportArgs, inputs: &[(String, PathBuf)]) -> Result<(), BenchError> {
    let mut outputs = vec![("-o".to_owned(), args.output.clone())];
    outputs.extend(args.csv.iter().map(|c| ("--csv".to_owned(), c.clone())));
    crate::config::path_collisions::check_files(inputs, &outputs)
}

/// `servebench report`: reads every input, recomputes metrics from the records and writes the
/// HTML report (and the CSV). Returns the exit code.
pub fn report(args: &ReportArgs) -> anyhow::Result<u8> {
    let goodput = crate::cli::values::goodput_slos(&args.goodput);
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
    let inputs: Vec<(String, PathBuf)> =
        args.inputs.iter().map(|p| ("an input".to_owned(), p.clone())).collect();
    check_outputs(args, &inputs)?;
    let experiments: Vec<ExperimentDocument> =
        args.inputs.iter().filter_map(|p| read_experiment(p)).collect();
    if !experiments.is_empty() {
        return report_experiment(args, &experiments, &goodput);
    }
    let mut runs = Vec::new();
    let mut read = inputs;
    for (i, path) in args.inputs.iter().enumerate() {
        let input = load_report_input(path)?;
        read.push(("the records file of an input".to_owned(), input.records_path.clone()));
        check_outputs(args, &read)?;
        if input.truncated {
            let p = input.records_path.display();
            errln!("note: {p}: ignored a truncated last line (the run was interrupted?)");
        }
        if let Some(missing) = &input.missing_records {
            errln!("{}", missing_records_note(path, missing));
        }
        if input.appended_results > 1 {
            errln!("{}", appended_results_note(path, input.appended_results, "reported"));
        }
        let unaccounted = (input.unaccounted > 0).then(|| {
            format!(
                "{}: {} requests of the run have no record: the records file does not account for \
                 its run (the process was killed or exited before writing them); figures cover the \
                 {} records only",
                input.records_path.display(),
                input.unaccounted,
                input.records.len()
            )
        });
        if let Some(w) = &unaccounted {
            errln!("warning: {w}");
        }
        let result_label = input.result.as_ref().and_then(|r| r.label.as_deref());
        let label = match args.label.get(i) {
            Some(given) => given.clone(),
            None => distinct_label(input_label(path, result_label), path, &runs),
        };
        let mut header = input.result.as_ref().map(ReportHeader::from_result).unwrap_or_default();
        let what = if input.source == RecordSource::Records { "records file" } else { "result file" };
        header.config.insert(0, (what.into(), input.records_path.display().to_string()));
        header.environment = Some(env.clone());
        header.notes = source_notes(input.source);
        header.warnings.extend(unaccounted);
        let mut run = ReportRun::new(label, header, input.records, goodput.clone());
        // The run's --metric-percentiles, which its session-tree table follows.
        if let Some(p) = input.result.as_ref().and_then(|r| r.percentiles.as_deref()) {
            run = run.with_percentiles(p);
        }
        run.server_metrics = input.result.as_ref().and_then(ServerSeries::from_result);
        run.source = input.source;
        if let (true, Some(result)) = (input.source != RecordSource::Records, &input.result) {
            run.lacks = use_result_figures(&mut run.metrics, &result.metrics);
            if input.source == RecordSource::SummaryOnly {
                run.header.config.extend(result_rows(&result.metrics));
            }
        }
        runs.push(run);
    }
    if let Some(csv) = &args.csv {
        let text = match runs.as_slice() {
            [one] => records_csv(&one.records, one.source.scheduled()),
            many => {
                let parts: Vec<(&str, &[RequestRecord], bool)> = many
                    .iter()
                    .map(|r| (r.label.as_str(), r.records.as_slice(), r.source.scheduled()))
                    .collect();
                runs_csv(&parts)
            }
        };
        write_text(csv, &text)?;
        outln!("CSV: {}", csv.display());
    }
    write_text(&args.output, &html_report(&runs))?;
    outln!("HTML report: {} ({} run(s))", args.output.display(), runs.len());
    Ok(0)
}

/// The latency keys of a result as configuration rows (`mean_ttft_ms` → `109.53`): a result
/// without per-request data shows its own statistics; vLLM's `0.0` placeholders (nothing
/// completed) are "–", no data (docs/metrics.md, "Metrics without data").
fn result_rows(m: &Metrics) -> Vec<(String, String)> {
    let shown = m.clone().vllm_placeholders_as_none();
    m.keys()
        .into_iter()
        .filter(|k| k.latency_metric().is_some())
        .map(|k| {
            let v = shown.get(&k).map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"));
            (k.to_string(), v)
        })
        .collect()
}

/// The experiment document (sweep, search, multi-run JSON) at `path`, when it is one.
fn read_experiment(path: &Path) -> Option<ExperimentDocument> {
    JsonFile::experiment(&std::fs::read_to_string(path).ok()?)
}

/// `servebench report SWEEP.json -o report.html`: the throughput–latency report of one experiment
/// document (sweep, `--find-max-rate`, `--slo`, `--num-runs`).
fn report_experiment(
    args: &ReportArgs,
    experiments: &[ExperimentDocument],
    goodput: &[Slo],
) -> anyhow::Result<u8> {
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
    let html = sweep_report(doc, goodput).map_err(|e| BenchError::RecordsFileMalformed {
        file: args.inputs[0].display().to_string(),
        problem: e.to_string(),
        source: Some(Box::new(e)),
    })?;
    write_text(&args.output, &html)?;
    outln!("HTML report: {} (experiment)", args.output.display());
    Ok(0)
}

/// `--html-report PATH` / `--csv PATH` of a benchmark run: written from the run's records after
/// the result, with the run's dispatch lateness (not stored in records) in the queue chart and the
/// server metrics scraped during the run (`--scrape-metrics`, `--server-metrics-url`) and the GPUs'
/// power (`--gpu-metrics`), when any.
pub fn write_run_reports(
    html: Option<&Path>,
    csv: Option<&Path>,
    info: &RunInfo,
    metrics: &RunMetrics,
    out: &RunOutput,
    server: Option<ServerSeries>,
    validity: Option<servebench_core::validity::Validity>,
) -> anyhow::Result<()> {
    if let Some(p) = csv {
        write_text(p, &records_csv(&out.records, true))?;
        outln!("CSV: {}", p.display());
    }
    if let Some(p) = html {
        let mut header = ReportHeader::from_run_info(info, Some(gather_environment()));
        header.warnings.extend(out.warnings.iter().map(ToString::to_string));
        header.warnings.extend(out.early_stop.as_ref().map(|e| e.console_line()));
        header.validity = validity;
        let label = info.label.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| info.model_id.clone());
        let mut run = ReportRun::new(label, header, out.records.to_vec(), metrics.config.goodput.clone())
            .with_percentiles(&metrics.config.percentiles);
        run.dispatch_lateness_us = Some(out.health.dispatch_lateness_us.clone());
        run.server_metrics = server;
        write_text(p, &html_report(&[run]))?;
        outln!("HTML report: {}", p.display());
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
    let path = crate::config::path_collisions::dataset_stats_path(result_path);
    let about = vec![
        ("model".to_string(), info.model_id.clone()),
        ("backend".to_string(), info.backend.clone()),
        ("dataset".to_string(), args.dataset_name.name.clone()),
        ("date".to_string(), servebench_report::info::vllm_date(info.date)),
    ];
    let title = format!("servebench dataset statistics: {}", info.model_id);
    write_text(&path, &dataset_stats_report(&title, &about, &request_lens(records)))?;
    outln!("Dataset statistics: {}", path.display());
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
    let path = crate::config::path_collisions::timeline_path(result_path);
    let about = vec![
        ("model".to_string(), info.model_id.clone()),
        ("backend".to_string(), info.backend.clone()),
        ("dataset".to_string(), args.dataset_name.name.clone()),
        ("date".to_string(), servebench_report::info::vllm_date(info.date)),
        ("ITL thresholds (ms)".to_string(), format!("{}, {}", thresholds_ms.0, thresholds_ms.1)),
    ];
    let title = format!("servebench request timeline: {}", info.model_id);
    let page = servebench_report::html::timeline_report(&title, &about, records, thresholds_ms);
    write_text(&path, &page)?;
    outln!("Timeline: {}", path.display());
    Ok(())
}

/// The note for a result whose named records file is missing: its per-request figures come
/// from the result's arrays (or its summary keys) instead — fewer charts, no response view.
/// `label` unless an earlier run has it (`report r.json r.json.records.jsonl`: both were `r`, and
/// the report's runs could not be told apart): then the input's file name, and failing that a
/// number.
fn distinct_label(label: String, path: &std::path::Path, runs: &[ReportRun]) -> String {
    let taken = |l: &str| runs.iter().any(|r| r.label == l);
    if !taken(&label) {
        return label;
    }
    let name =
        path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    if !taken(&name) {
        return name;
    }
    (2..).map(|n| format!("{name} ({n})")).find(|l| !taken(l)).unwrap_or(name)
}

/// The note for a result file of several appended runs (`--append-result`): only the last is
/// `used` (it was without a word).
pub(crate) fn appended_results_note(path: &std::path::Path, n: usize, used: &str) -> String {
    format!(
        "note: {} holds {n} results appended one per line (--append-result); only the last is {used} \
         — put each line in a file of its own to see every run",
        path.display()
    )
}

pub(crate) fn missing_records_note(result: &std::path::Path, missing: &std::path::Path) -> String {
    format!(
        "note: {}: its records file {} is missing; using the result's per-request arrays (or its \
         summary keys) instead",
        result.display(),
        missing.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_testkit::records::write_streamed_jsonl;

    #[test]
    fn report_command_writes_html_and_csv() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.records.jsonl");
        let b = dir.path().join("b.records.jsonl");
        write_streamed_jsonl(&a, 20);
        write_streamed_jsonl(&b, 10);
        let args = ReportArgs {
            inputs: vec![a, b],
            output: dir.path().join("out/report.html"),
            csv: Some(dir.path().join("out/records.csv")),
            label: vec!["first".into()],
            goodput: vec![crate::cli::values::goodput("ttft:10").unwrap()],
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
        args.goodput = vec![crate::cli::values::goodput("ttft:25").unwrap()];
        assert_eq!(report(&args).unwrap(), 0);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("id=\"sweep-ttft-tok\"") && html.contains("goodput SLO: ttft ≤ 25 ms"));
        // An experiment with other inputs, or of an unknown kind, is refused with a code.
        let rec = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&rec, 3);
        let e = report(&args_for(vec![sweep, rec.clone()], out.clone())).unwrap_err();
        assert_eq!(code_of(&e), "SB101");
        let bogus = dir.path().join("bogus.json");
        std::fs::write(&bogus, r#"{"servebench_experiment": "tournament", "points": []}"#).unwrap();
        assert_eq!(code_of(&report(&args_for(vec![bogus], out.clone())).unwrap_err()), "SB208");
        let unknown = dir.path().join("unknown.json");
        std::fs::write(&unknown, r#"{"hello": "world"}"#).unwrap();
        assert_eq!(code_of(&report(&args_for(vec![unknown], out.clone())).unwrap_err()), "SB208");

        // A result JSON with scraped server metrics gets the server charts.
        let result = dir.path().join("run.json");
        std::fs::write(
            &result,
            r#"{"model_id": "m", "server_metrics": {"samples": [
            {"t_s": 0.0, "running": 1.0, "waiting": 0.0, "kv_cache_usage": 0.1},
            {"t_s": 0.5, "running": 3.0, "waiting": 1.0, "kv_cache_usage": 0.3}]}}"#,
        )
        .unwrap();
        write_streamed_jsonl(&dir.path().join("run.json.records.jsonl"), 4);
        assert_eq!(report(&args_for(vec![result], out.clone())).unwrap(), 0);
        let html = std::fs::read_to_string(&out).unwrap();
        assert!(html.contains("id=\"server-requests\"") && html.contains("id=\"server-kv\""));
        assert!(!html.contains("id=\"server-prefix\""), "no prefix-cache counters, no chart");
    }

    /// Pins a vLLM summary-only result where nothing completed: its latency keys (vLLM's `0.0`
    /// placeholders) were configuration rows reading `mean_ttft_ms 0.00`; they are "–".
    #[test]
    fn summary_only_result_without_completions_shows_dashes_not_zero() {
        let m: Metrics = serde_json::from_value(serde_json::json!({"completed": 0, "failed": 10,
            "mean_ttft_ms": 0.0, "p99_ttft_ms": 0.0, "mean_e2el_ms": 0.0}))
        .unwrap();
        let rows = result_rows(&m);
        assert_eq!(rows.len(), 3, "{rows:?}");
        assert!(rows.iter().all(|(_, v)| v == "–"), "{rows:?}");
        let m: Metrics =
            serde_json::from_value(serde_json::json!({"completed": 3, "mean_ttft_ms": 12.5})).unwrap();
        assert_eq!(result_rows(&m), vec![("mean_ttft_ms".to_owned(), "12.50".to_owned())]);
    }
}

//! Reading back what runs wrote, for `servebench report` and `compare`: a records file, or a
//! result document (typed, `servebench_report::document`) with the records written beside it.

use std::path::{Path, PathBuf};

use servebench_core::{BenchError, RequestRecord};
use servebench_report::compare::{per_request_from_arrays, per_request_from_records, Loaded};
use servebench_report::document::{find_non_json_number, JsonFile, ResultDocument};
use servebench_report::html::RecordSource;
use servebench_report::vllm_arrays::records_from_arrays;

use super::paths::records_beside;
use crate::records::sink::{read_records, read_records_file};

/// One input of `servebench report`: its records and, when a result JSON was given, that result.
#[derive(Debug, Clone)]
pub struct ReportInput {
    pub records_path: PathBuf,
    pub records: Vec<RequestRecord>,
    /// Whether a truncated last line of the records file was ignored.
    pub truncated: bool,
    pub result: Option<ResultDocument>,
    /// Where `records` come from (a result without records: its arrays, or nothing).
    pub source: RecordSource,
    /// Requests the run sent or planned that have no record (see [`unaccounted_requests`]).
    pub unaccounted: u64,
    /// The records file the result names (`records_file`) when it is missing: the report is
    /// drawn from the result's arrays or summary instead (said on the console).
    pub missing_records: Option<PathBuf>,
    /// Results the file holds one per line (`--append-result`), when more than one: the input
    /// is the last (said on the console). 0 otherwise.
    pub appended_results: usize,
}

/// The results a file appended one per line holds (`--append-result` writes each run's
/// document on a line of its own): lines that are one JSON object each. 0 for a single
/// document, pretty-printed or not.
pub fn appended_results(text: &str) -> usize {
    let n =
        text.lines().map(str::trim).filter(|l| l.len() > 2 && l.starts_with('{') && l.ends_with('}')).count();
    if n > 1 {
        n
    } else {
        0
    }
}

/// The records file a result names (its `records_file` key) when it does not exist: `report`
/// and `compare` fall back to the result's arrays, and say so (they did without a word).
fn named_records_missing(result: &ResultDocument, records: &Path) -> Option<PathBuf> {
    (result.records_file.is_some() && !records.exists()).then(|| records.to_path_buf())
}

/// Reads a records file (JSONL of request records) or a result JSON, whose records are read from
/// `<result>.records.jsonl` beside it (or its `records_file`).
pub fn load_report_input(path: &Path) -> Result<ReportInput, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    if text.trim().is_empty() {
        // An empty report of "1 run" exited 0 (compare refused the same file).
        return Err(BenchError::RecordsFileMalformed {
            file: path.display().to_string(),
            problem: "the file is empty: neither a records file nor a result JSON".into(),
            source: None,
        });
    }
    if starts_records_file(&text) {
        return read_report_records(path, None);
    }
    // A result file (one JSON document, or JSONL from --append-result: the last line wins).
    let result = JsonFile::single_result(&text).ok_or_else(|| BenchError::RecordsFileMalformed {
        file: path.display().to_string(),
        problem: find_non_json_number(&text).map_or_else(
            || {
                "neither a records file (JSONL of request records), a result JSON nor an experiment \
                 (sweep/search/multi-run) JSON"
                    .to_owned()
            },
            |n| format!("not JSON: {n}"),
        ),
        source: None,
    })?;
    refuse_impossible_values(path, &result)?;
    let appended = appended_results(&text);
    drop(text);
    let records = records_beside(path, result.records_file.as_deref());
    if records.exists() {
        return read_report_records(&records, Some(result))
            .map(|i| ReportInput { appended_results: appended, ..i });
    }
    let missing_records = named_records_missing(&result, &records);
    // No records file (vLLM's own result files have none): the per-request arrays, else the
    // summary keys alone; the report says which charts that leaves (docs/reports.md).
    refuse_mismatched_arrays(path, &result)?;
    let (records, source) = match records_from_arrays(&result.detailed) {
        Some(a) => (a.records, RecordSource::DetailedArrays { timed: a.timed }),
        None => (Vec::new(), RecordSource::SummaryOnly),
    };
    // The records are the arrays from here on: not held twice for the rest of the report.
    let mut result = result;
    result.detailed = Default::default();
    Ok(ReportInput {
        records_path: path.to_path_buf(),
        records,
        truncated: false,
        result: Some(result),
        source,
        unaccounted: 0,
        missing_records,
        appended_results: appended,
    })
}

/// A result's per-request arrays of different lengths cannot be lined up request by request
/// (SB208): requests without an entry had been made up (completed with E2EL = TTFT, or failed),
/// and compare's tests ran on them.
fn refuse_mismatched_arrays(path: &Path, result: &ResultDocument) -> Result<(), BenchError> {
    match result.detailed.length_mismatch() {
        None => Ok(()),
        Some(lens) => Err(BenchError::RecordsFileMalformed {
            file: path.display().to_string(),
            problem: format!(
                "its per-request arrays differ in length ({lens}): they cannot be lined up request by request"
            ),
            source: None,
        }),
    }
}

/// SB208 for a result whose summary has a value no run can have ([`Metrics::impossible_value`]).
fn refuse_impossible_values(path: &Path, result: &ResultDocument) -> Result<(), BenchError> {
    match result.metrics.impossible_value() {
        None => Ok(()),
        Some(problem) => Err(BenchError::RecordsFileMalformed {
            file: path.display().to_string(),
            problem: format!("{problem}; no run wrote it"),
            source: None,
        }),
    }
}

/// The records file of a shard given to `servebench merge`: the path itself for a records file
/// (or a path that does not exist yet: merge may wait for it), the `records_file` of a result
/// JSON (a shard's result written with --save-result), else an error naming the file to pass.
pub fn shard_records_path(path: &Path) -> Result<PathBuf, BenchError> {
    let Ok(text) = std::fs::read_to_string(path) else { return Ok(path.to_path_buf()) };
    let Some(result) = (!starts_records_file(&text)).then(|| JsonFile::single_result(&text)).flatten() else {
        return Ok(path.to_path_buf());
    };
    let records = records_beside(path, result.records_file.as_deref());
    if records.exists() {
        return Ok(records);
    }
    Err(BenchError::ShardSet {
        detail: format!(
            "{} is a result JSON, and the records file it names ({}) does not exist: merge reads \
             the shards' records files; pass each shard's .records.jsonl",
            path.display(),
            records.display()
        ),
    })
}

/// Whether `text` is a records file by its first non-blank line: a request record, a shard
/// header (a sharded run's file starts with one, docs/scale-out.md), or a JSON object with a
/// record's keys (`index`, and `outcome` or `intended_us`) that is not a valid record — read as
/// a records file, its error names the line and the problem (an unknown `outcome`, a negative
/// time) instead of "neither a records file, a result JSON nor an experiment".
fn starts_records_file(text: &str) -> bool {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or_default();
    if serde_json::from_str::<RequestRecord>(first).is_ok() || servebench_core::shard::is_shard_line(first) {
        return true;
    }
    let Ok(serde_json::Value::Object(o)) = serde_json::from_str::<serde_json::Value>(first) else {
        return false;
    };
    o.contains_key("index") && (o.contains_key("outcome") || o.contains_key("intended_us"))
}

fn read_report_records(path: &Path, result: Option<ResultDocument>) -> Result<ReportInput, BenchError> {
    let file = read_records_file(path)?;
    let planned = file.shard_header.as_ref().map(|h| h.shard_requests);
    let unaccounted = checked_unaccounted(path, &file.records, planned)?;
    Ok(ReportInput {
        records_path: path.to_path_buf(),
        records: file.records,
        truncated: file.truncated > 0,
        result,
        source: RecordSource::Records,
        unaccounted,
        missing_records: None,
        appended_results: 0,
    })
}

/// [`unaccounted_requests`] of the records file at `path`, and its duplicate index as the error
/// (SB208) that `report` and `compare` give.
fn checked_unaccounted(
    path: &Path,
    records: &[RequestRecord],
    planned: Option<u64>,
) -> Result<u64, BenchError> {
    unaccounted_requests(records, planned).map_err(|d| BenchError::RecordsFileMalformed {
        file: path.display().to_string(),
        problem: format!(
            "request {} has more than one record (records #{} and #{} of the file): the records of \
             several runs concatenated, or a file appended to itself, would be counted twice; pass each \
             run's records file as its own input (servebench report a.records.jsonl b.records.jsonl), \
             or combine the shards of one sharded run with servebench merge",
            d.index,
            d.first + 1,
            d.second + 1
        ),
        source: None,
    })
}

/// A request index with more than one record in one records file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DuplicateRecord {
    pub index: u64,
    /// Positions (0-based, in file order) of its first two records.
    pub first: usize,
    pub second: usize,
}

/// Requests of a run without a record: every request of a run ends as exactly one record
/// (completed, failed or cancelled, also after a second Ctrl-C), so a records file with fewer
/// was cut short (the process was killed, or exited at a third Ctrl-C). Counted against the
/// requests the shard header planned, else against the record indices (a run numbers its
/// requests 0, 1, …: a missing index is a missing record; records missing after the highest
/// index cannot be told from a plain records file). For the same reason an index with two
/// records is not one run's file (runs concatenated, a file appended to itself): the error,
/// naming the first such index.
pub fn unaccounted_requests(records: &[RequestRecord], planned: Option<u64>) -> Result<u64, DuplicateRecord> {
    let mut indices: Vec<(u64, usize)> = records.iter().enumerate().map(|(at, r)| (r.index, at)).collect();
    indices.sort_unstable();
    if let Some(d) = indices
        .windows(2)
        .filter(|p| p[0].0 == p[1].0)
        .map(|p| DuplicateRecord { index: p[0].0, first: p[0].1, second: p[1].1 })
        .min_by_key(|d| d.second)
    {
        return Err(d);
    }
    let present = indices.len() as u64;
    let expected = match planned {
        Some(n) => n,
        None => indices.last().map_or(0, |&(last, _)| last + 1),
    };
    Ok(expected.saturating_sub(present))
}

/// Loads one input of `servebench compare`: a single result (vLLM's JSON, ours, the last line
/// of a JSONL file) with its per-request values (the records beside it, else vLLM's detailed
/// arrays), or a `--num-runs` document. Another experiment document is refused (SB101).
pub fn load_compare_input(path: &Path) -> Result<Loaded, BenchError> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    // A records file: compare reads results (and the records beside them), not records files
    // (SB208's general fix said to pass a records file, the very thing refused).
    if starts_records_file(&text) {
        return Err(BenchError::config(
            "compare input",
            format!("{} is a records file; compare compares result files", path.display()),
            "pass the result JSON its run wrote (its records beside it are read too), or compare \
             records files as runs of one HTML report: servebench report a.records.jsonl b.records.jsonl",
        ));
    }
    let file = JsonFile::parse(&text).map_err(|e| BenchError::RecordsFileMalformed {
        file: path.display().to_string(),
        problem: match find_non_json_number(&text) {
            Some(n) => format!("not JSON: {n}"),
            None => format!("not a result JSON or JSONL file ({e})"),
        },
        source: Some(Box::new(e)),
    })?;
    let name = path.display().to_string();
    match file {
        JsonFile::Experiment(doc) if doc.kind() == Some("multi_run") => Ok(Loaded::multi_run(name, &doc)),
        JsonFile::Experiment(doc) => Err(BenchError::config(
            "compare",
            format!("{name} is a {} document", doc.kind().unwrap_or_default()),
            "compare single results or --num-runs documents (a sweep's points are under `points[i].result`)",
        )),
        // JSON of another kind (`{}`, an array, a records file): refused as `report` refuses it,
        // instead of a comparison whose every row is n/a.
        JsonFile::Result(_) if JsonFile::single_result(&text).is_none() => {
            Err(BenchError::RecordsFileMalformed {
                file: name,
                problem:
                    "not a result JSON (none of model_id, completed, request_throughput, duration) nor a \
                      --num-runs document"
                        .into(),
                source: None,
            })
        }
        JsonFile::Result(doc) => {
            let doc = *doc;
            refuse_impossible_values(path, &doc)?;
            let records = records_beside(path, doc.records_file.as_deref());
            let missing_records = named_records_missing(&doc, &records);
            let per_request = if records.exists() {
                // Two records of one request (runs concatenated) would run compare's tests on
                // requests counted twice: refused, as `report` refuses them.
                let (recs, _) = read_records(&records)?;
                checked_unaccounted(&records, &recs, None)?;
                per_request_from_records(&recs)
            } else {
                refuse_mismatched_arrays(path, &doc)?;
                per_request_from_arrays(&doc.detailed)
            };
            let values = doc.metrics.vllm_placeholders_as_none();
            let appended_results = appended_results(&text);
            Ok(Loaded { name, values, runs: Vec::new(), per_request, missing_records, appended_results })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_report::{input_label, ReportHeader};
    use servebench_testkit::records::write_streamed_jsonl;

    #[test]
    fn loads_records_and_results_with_records_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&rec, 5);
        let input = load_report_input(&rec).unwrap();
        assert_eq!(input.records.len(), 5);
        assert!(input.result.is_none());
        assert_eq!(input_label(&rec, None), "a");

        let result = dir.path().join("run.json");
        std::fs::write(&result, r#"{"date": "20261129-101010", "label": "mine", "model_id": "m", "request_rate": "inf", "client_health": {"dispatch_lateness_p99_ms": 12.5, "warnings": ["slow"]}}"#).unwrap();
        // No records beside it and no per-request arrays: the summary keys alone.
        let summary = load_report_input(&result).unwrap();
        assert_eq!((summary.source, summary.records.len()), (RecordSource::SummaryOnly, 0));
        write_streamed_jsonl(&dir.path().join("run.json.records.jsonl"), 3);
        let input = load_report_input(&result).unwrap();
        assert_eq!((input.source, input.records.len()), (RecordSource::Records, 3));
        let v = input.result.unwrap();
        assert_eq!(input_label(&result, v.label.as_deref()), "mine");
        let h = ReportHeader::from_result(&v);
        assert!(h.config.contains(&("request rate (req/s)".into(), "inf".into())));
        assert_eq!(h.client_health, vec![("dispatch lateness p99".into(), "12.50 ms".into())]);
        assert_eq!(h.warnings, vec!["slow".to_string()]);

        let junk = dir.path().join("junk.txt");
        std::fs::write(&junk, "hello\n").unwrap();
        assert!(load_report_input(&junk).is_err());
    }

    /// Pins `compare` refusing what is not a result (SB208, as `report`): `{}`, an array, a
    /// records file were compared with every row n/a and exit 0.
    #[test]
    fn compare_refuses_json_that_is_not_a_result() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&rec, 2);
        for (name, text) in [("empty.json", "{}"), ("other.json", r#"{"foo": 1}"#), ("array.json", "[1, 2]")]
        {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        // A records file is refused too, with its own fix
        // (`compare_refuses_a_records_file_naming_the_result_to_pass`).
        for name in ["empty.json", "other.json", "array.json"] {
            let e = load_compare_input(&dir.path().join(name)).unwrap_err();
            assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{name}: {e}");
            assert!(e.to_string().contains("not a result JSON"), "{name}: {e}");
        }
        std::fs::write(dir.path().join("r.json"), r#"{"model_id": "m", "completed": 3}"#).unwrap();
        assert!(load_compare_input(&dir.path().join("r.json")).is_ok());
    }

    /// Pins the error of a records file whose first record is invalid: it was "neither a records
    /// file, a result JSON nor an experiment", while the same record on line 4 named the line and
    /// the problem. And a vLLM result holding Python's NaN names the key, not a column.
    #[test]
    fn an_invalid_first_record_and_pythons_nan_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&good, 3);
        let text = std::fs::read_to_string(&good).unwrap();
        for (name, from, to, problem) in [
            ("outcome", r#""outcome":"completed""#, r#""outcome":"weird""#, "unknown variant `weird`"),
            (
                "dispatched",
                r#""dispatched_us":"#,
                r#""dispatched_us":-1000,"x":"#,
                "integer `-1000`, expected u64",
            ),
        ] {
            assert!(text.contains(from), "{from} in {text}");
            let bad = dir.path().join(format!("{name}.jsonl"));
            std::fs::write(&bad, text.replacen(from, to, 1)).unwrap();
            let e = load_report_input(&bad).unwrap_err();
            assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("{}:1: not a request record (", bad.display())), "{msg}");
            assert!(msg.contains(problem), "{msg}");
        }
        let nan = dir.path().join("vnan.json");
        std::fs::write(
            &nan,
            r#"{"model_id": "m", "completed": 3, "std_ttft_ms": NaN, "p99_e2el_ms": Infinity}"#,
        )
        .unwrap();
        for e in [load_report_input(&nan).unwrap_err(), load_compare_input(&nan).unwrap_err()] {
            assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
            assert!(e.to_string().contains("not JSON: `std_ttft_ms` is NaN (line 1)"), "{e}");
        }
    }

    #[test]
    fn records_missing_from_their_run_are_counted() {
        let rec = |i| RequestRecord::scheduled(i, format!("r{i}"), 0, 1, 1);
        let all: Vec<_> = (0..5).map(rec).collect();
        assert_eq!(unaccounted_requests(&all, None), Ok(0));
        let gaps: Vec<_> = [0, 1, 4].into_iter().map(rec).collect();
        assert_eq!(unaccounted_requests(&gaps, None), Ok(2), "indices 2 and 3 have no record");
        assert_eq!(unaccounted_requests(&all, Some(8)), Ok(3), "the shard header planned 8");
        assert_eq!(unaccounted_requests(&[], None), Ok(0));
    }

    /// Pins `report` refusing a records file with two records of one request (two runs'
    /// files concatenated, a file appended to itself): they were counted twice as one run
    /// (40 completed from two runs of 20), while `merge` refused the same data.
    #[test]
    fn concatenated_records_files_are_refused_naming_the_duplicate() {
        let dir = tempfile::tempdir().unwrap();
        let one = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&one, 3);
        let text = std::fs::read_to_string(&one).unwrap();
        let mixed = dir.path().join("mixed.jsonl");
        std::fs::write(&mixed, format!("{text}{text}")).unwrap();
        let e = load_report_input(&mixed).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with(&mixed.display().to_string()), "{msg}");
        assert!(msg.contains("request 0 has more than one record (records #1 and #4"), "{msg}");
        assert!(msg.contains("servebench merge") && msg.contains("as its own input"), "{msg}");
        // The first duplicate in file order is named, whatever its index.
        let rec = |i| RequestRecord::scheduled(i, format!("r{i}"), 0, 1, 1);
        let recs: Vec<_> = [5, 0, 1, 5, 0].into_iter().map(rec).collect();
        assert_eq!(unaccounted_requests(&recs, None), Err(DuplicateRecord { index: 5, first: 0, second: 3 }));
    }

    /// Pins `compare` refusing the records beside a result when they hold two records of one
    /// request, as `report` does: its per-request tests ran on requests counted twice.
    /// Pins compare's refusal of a records file saying what to pass instead: SB208's general fix
    /// said "pass a records file (.records.jsonl) or result JSON", the very thing refused.
    #[test]
    fn compare_refuses_a_records_file_naming_the_result_to_pass() {
        let dir = tempfile::tempdir().unwrap();
        let rec = dir.path().join("a.records.jsonl");
        write_streamed_jsonl(&rec, 3);
        let e = load_compare_input(&rec).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::ConfigInvalid, "{e}");
        let msg = e.to_string();
        assert!(msg.contains("is a records file; compare compares result files"), "{msg}");
        assert!(msg.contains("fix: pass the result JSON its run wrote"), "{msg}");
    }

    #[test]
    fn compare_refuses_a_result_whose_records_beside_it_repeat_a_request() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("run.json");
        std::fs::write(&result, r#"{"model_id": "m", "completed": 3, "duration": 1.0}"#).unwrap();
        let beside = dir.path().join("run.json.records.jsonl");
        write_streamed_jsonl(&beside, 3);
        assert!(load_compare_input(&result).is_ok());
        let text = std::fs::read_to_string(&beside).unwrap();
        std::fs::write(&beside, format!("{text}{text}")).unwrap();
        let e = load_compare_input(&result).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
        let msg = e.to_string();
        assert!(msg.starts_with(&beside.display().to_string()), "{msg}");
        assert!(msg.contains("request 0 has more than one record"), "{msg}");
    }

    #[test]
    fn a_file_servebench_did_not_write_is_sb208_not_a_workload_error() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("other.json");
        std::fs::write(&other, r#"{"hello": "world"}"#).unwrap();
        let e = load_report_input(&other).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
        assert!(e.to_string().starts_with(&format!("{}: neither a records file", other.display())), "{e}");
        let junk = dir.path().join("junk.txt");
        std::fs::write(&junk, "hello\n").unwrap();
        let e = load_compare_input(&junk).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<serde_json::Error>());
        assert!(source.is_some(), "the JSON error is kept: {e:?}");
    }

    /// Pins a summary no run can have being refused by report and compare (SB208 naming the key
    /// and value): a `completed` of −5 was read as 0 and a duration of −3 s divided the rates,
    /// with or without records beside the result; possible values (vLLM's 0.0 of no data, a
    /// whole count written as a float) still load.
    #[test]
    fn a_result_with_an_impossible_value_is_refused_naming_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("r.json");
        let rec = dir.path().join("r.json.records.jsonl");
        let cases = [
            (r#"{"completed": -5, "duration": 10.0}"#, "`completed` is -5: a count"),
            (r#"{"completed": 2.5, "duration": 10.0}"#, "`completed` is 2.5: a count"),
            (r#"{"completed": 5, "duration": -3.0}"#, "`duration` is -3: a duration or rate"),
            (r#"{"completed": 5, "request_throughput": -1.0}"#, "`request_throughput` is -1"),
            (r#"{"completed": 5, "mean_ttft_ms": -0.5}"#, "`mean_ttft_ms` is -0.5: a latency"),
            (r#"{"completed": 5, "max_concurrent_requests": 1e300, "duration": 1}"#, ""),
        ];
        for beside in [false, true] {
            if beside {
                let line = serde_json::to_string(&RequestRecord::scheduled(0, "a".into(), 0, 1, 1)).unwrap();
                std::fs::write(&rec, format!("{line}\n")).unwrap();
            }
            for (doc, says) in cases {
                std::fs::write(&result, doc).unwrap();
                if says.is_empty() {
                    // A huge but whole count is possible; nothing refused.
                    assert!(load_compare_input(&result).is_ok(), "{doc}");
                    continue;
                }
                for e in
                    [load_report_input(&result).err().unwrap(), load_compare_input(&result).err().unwrap()]
                {
                    assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{doc}: {e}");
                    assert!(e.to_string().contains(says), "{doc}: {e}");
                }
            }
        }
        std::fs::remove_file(&rec).unwrap();
        std::fs::write(&result, r#"{"completed": 3.0, "failed": 0, "duration": 0.0, "mean_itl_ms": 0.0}"#)
            .unwrap();
        assert!(load_report_input(&result).is_ok());
        assert!(load_compare_input(&result).is_ok());
    }

    /// Pins per-request arrays of different lengths being refused by report and compare (SB208
    /// naming the lengths): the requests missing from `itls` were made up as completed with
    /// E2EL = TTFT, and compare's tests ran on them.
    #[test]
    fn per_request_arrays_of_different_lengths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("v.json");
        let doc =
            r#"{"completed": 3, "ttfts": [0.1, 0.1, 0.1], "itls": [[0.01], [0.01]], "errors": ["", "", ""]}"#;
        std::fs::write(&result, doc).unwrap();
        for e in [load_report_input(&result).unwrap_err(), load_compare_input(&result).err().unwrap()] {
            assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "{e}");
            assert!(e.to_string().contains("differ in length (ttfts 3, itls 2, errors 3)"), "{e}");
        }
        let even = r#"{"completed": 2, "ttfts": [0.1, 0.1], "itls": [[0.01], null], "errors": ["", ""]}"#;
        std::fs::write(&result, even).unwrap();
        let input = load_report_input(&result).unwrap();
        // Without `latencies`, a request whose `itls` entry is not an array has no latency to
        // rebuild: failed (no made-up E2EL = TTFT).
        let outcomes: Vec<_> = input.records.iter().map(|r| r.outcome).collect();
        assert_eq!(outcomes, [servebench_core::Outcome::Completed, servebench_core::Outcome::Failed]);
    }

    #[test]
    fn compare_inputs_read_records_beside_a_result_and_refuse_a_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let result = dir.path().join("run.json");
        std::fs::write(&result, r#"{"completed": 4, "ttfts": [0.009], "latencies": [0.02]}"#).unwrap();
        // vLLM's arrays without records beside the result, the records when they are there.
        let from_arrays = load_compare_input(&result).unwrap();
        assert_eq!(from_arrays.per_request[&servebench_report::result_keys::LatencyMetric::Ttft], vec![9.0]);
        write_streamed_jsonl(&dir.path().join("run.json.records.jsonl"), 4);
        let loaded = load_compare_input(&result).unwrap();
        assert_eq!(loaded.values.completed, Some(4.0));
        assert_eq!(loaded.per_request[&servebench_report::result_keys::LatencyMetric::Ttft].len(), 4);
        let sweep = dir.path().join("sweep.json");
        std::fs::write(&sweep, r#"{"servebench_experiment": "sweep", "points": []}"#).unwrap();
        let e = load_compare_input(&sweep).unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        std::fs::write(&sweep, "not json\n").unwrap();
        assert!(load_compare_input(&sweep).is_err());
    }
}

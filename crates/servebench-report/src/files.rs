//! Result files: vLLM's default file name, `--save-result` (write), `--append-result` (JSONL)
//! and plain text files (HTML report, CSV).

use std::fs::OpenOptions;
use std::io::Write as _;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use servebench_core::error::{BenchError, Result};

use crate::info::{python_float, python_int_or_float, vllm_date, RunInfo};
use crate::per_request::{PerRequestArrays, WithArrays};

/// vLLM Python's default result file name:
/// `{label or backend}-{rate}qps[-concurrency{C}]-{model basename}-{YYYYMMDD-HHMMSS}.json`, or
/// with a ramp-up `{label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{C}]-…`.
/// The rate prints as a Python float (`10.0qps`, `infqps`), ramp endpoints as Python ints.
///
/// The label and model parts are made safe file-name parts: control characters (a model id from
/// `/v1/models` can hold an escape sequence or a newline) and path separators (`--label a/b`
/// named a directory that does not exist, and the result was lost after the whole run) become
/// `_`, and a part longer than
/// [`MAX_MODEL_PART`] bytes is cut and given a short hash of the whole id, so the file and its
/// siblings (`….records.jsonl`, `….server-metrics.jsonl`) stay within a file system's 255-byte
/// name limit (a 250-character model name lost the result after the whole run).
pub fn default_result_filename(info: &RunInfo) -> String {
    let label = info.label.clone().filter(|l| !l.is_empty()).unwrap_or_else(|| info.backend.clone());
    let label = file_name_part(&label);
    let model = info.model_id.rsplit('/').next().unwrap_or(&info.model_id);
    let model = file_name_part(model);
    let conc = info.max_concurrency.map(|c| format!("-concurrency{c}")).unwrap_or_default();
    let date = vllm_date(info.date);
    match info.ramp_up {
        Some(r) => format!(
            "{label}-ramp-up-{}-{}qps-{}qps{conc}-{model}-{date}.json",
            r.strategy.as_str(),
            python_int_or_float(r.start_rps),
            python_int_or_float(r.end_rps)
        ),
        None => format!("{label}-{}qps{conc}-{model}-{date}.json", python_float(info.request_rate)),
    }
}

/// The longest model part of a default result file name, in bytes.
pub const MAX_MODEL_PART: usize = 96;

/// `text` as part of a file name: control characters and path separators (`/`, `\\`) as `_`; beyond [`MAX_MODEL_PART`] bytes,
/// cut at a character boundary and followed by `~` and 8 hex digits of its FNV-1a hash (distinct
/// long names stay distinct).
pub fn file_name_part(text: &str) -> String {
    let clean: String =
        text.chars().map(|c| if c.is_control() || c == '/' || c == '\\' { '_' } else { c }).collect();
    if clean.len() <= MAX_MODEL_PART {
        return clean;
    }
    let mut cut = MAX_MODEL_PART - 9;
    while !clean.is_char_boundary(cut) {
        cut -= 1;
    }
    let hash = text.bytes().fold(0x811c_9dc5u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{}~{hash:08x}", &clean[..cut])
}

/// The label of a report input: the result's `label` (when a non-empty string), else the file
/// name without `.records.jsonl` / `.jsonl` / `.json`.
pub fn input_label(path: &Path, label: Option<&str>) -> String {
    if let Some(l) = label.filter(|l| !l.is_empty()) {
        return l.to_string();
    }
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for suffix in [".records.jsonl", ".jsonl", ".json"] {
        if let Some(stem) = name.strip_suffix(suffix).filter(|s| !s.is_empty()) {
            // `run.json.records.jsonl` (the records beside `run.json`) is the run `run`.
            let stem = stem.strip_suffix(".json").filter(|s| !s.is_empty()).unwrap_or(stem);
            return stem.to_string();
        }
    }
    name
}

/// Serializes like Python's `json.dump` (separators `", "` and `": "`, one line).
pub fn to_python_json(value: &Value) -> String {
    let mut buf = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, PythonFormatter);
    if value.serialize(&mut ser).is_err() {
        return value.to_string();
    }
    String::from_utf8(buf).unwrap_or_else(|_| value.to_string())
}

/// `json.dump` layout: a space after every `,` and `:`.
struct PythonFormatter;

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        w.write_all(b": ")
    }
}

/// Writes the result (`--save-result`), replacing the file; with `append` (`--append-result`)
/// appends it as one line instead, preceded by a newline when the file is not empty (JSONL, as
/// vLLM does).
pub fn write_result(path: &Path, value: &Value, append: bool) -> Result<()> {
    write_result_with(path, value, &PerRequestArrays::default(), append)
}

/// [`write_result`] of a document whose per-request arrays are held apart: each written in the
/// place of its key's `null` placeholder (`crate::per_request`), never built as JSON values.
pub fn write_result_with(path: &Path, value: &Value, arrays: &PerRequestArrays, append: bool) -> Result<()> {
    let io = |e: std::io::Error| BenchError::io(path.display(), e);
    let mut file = if append {
        OpenOptions::new().create(true).append(true).open(path).map_err(io)?
    } else {
        OpenOptions::new().create(true).write(true).truncate(true).open(path).map_err(io)?
    };
    if append && file.metadata().map_err(io)?.len() > 0 {
        file.write_all(b"\n").map_err(io)?;
    }
    // Serialized straight into the file: a million-request result's text (its per-request
    // arrays) is never held in memory beside its value.
    let mut out = std::io::BufWriter::new(file);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, PythonFormatter);
    WithArrays { value, arrays }.serialize(&mut ser).map_err(|e| BenchError::io(path.display(), e))?;
    out.flush().map_err(io)
}

/// Writes `text` to `path` (replacing it), creating missing parent directories (reports, CSV).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    let io = |e: std::io::Error| BenchError::io(path.display(), e);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    std::fs::write(path, text).map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::info::ClientHealth;
    use servebench_core::schedule::{RampStrategy, RampUp};
    use time::macros::datetime;

    fn info() -> RunInfo {
        RunInfo {
            date: datetime!(2026-11-29 21:13:48 UTC),
            origin_wall: datetime!(2026-11-29 21:13:00 UTC),
            backend: "openai".into(),
            endpoint_type: "openai".into(),
            label: None,
            model_id: "meta-llama/Llama-3.1-8B".into(),
            tokenizer_id: None,
            num_prompts: 10,
            request_rate: 10.0,
            burstiness: 1.0,
            max_concurrency: None,
            ramp_up: None,
            trace_time_scale: None,
            rps_change_events: vec![],
            stages: vec![],
            metadata: vec![],
            client_health: ClientHealth::default(),
        }
    }

    /// Pins a model id that would not fit in a file name (250 characters; the result was lost
    /// after the whole run, "File name too long") or that holds control characters (a
    /// `/v1/models` id with an escape sequence and a newline went into the name).
    #[test]
    fn long_or_control_model_ids_make_safe_file_names() {
        let mut i = info();
        i.model_id = format!("org/{}", "a".repeat(250));
        let name = default_result_filename(&i);
        assert!(name.len() + ".server-metrics.jsonl".len() <= 255, "{} bytes", name.len());
        let part =
            name.strip_prefix("openai-10.0qps-").unwrap().strip_suffix("-20261129-211348.json").unwrap();
        assert_eq!(part.len(), MAX_MODEL_PART);
        assert!(part.starts_with("aaaa") && part.contains('~'), "{part}");
        let mut other = info();
        other.model_id = format!("org/{}b", "a".repeat(250));
        assert_ne!(default_result_filename(&other), name, "distinct long ids, distinct names");
        i.model_id = "m\u{1b}[31mRED\u{1b}[0m\nX".into();
        assert_eq!(default_result_filename(&i), "openai-10.0qps-m_[31mRED_[0m_X-20261129-211348.json");
        // Multi-byte characters are cut at a boundary.
        i.model_id = "é".repeat(200);
        assert!(default_result_filename(&i).len() < 200, "cut without a panic");
    }

    /// Pins a label holding path separators (`--label "a/b c"`): the default name pointed into a
    /// directory that does not exist, and the whole run's result was lost at the end (SB501).
    #[test]
    fn a_label_with_path_separators_stays_one_file_name() {
        let mut i = info();
        i.label = Some("a/b c\\..".into());
        assert_eq!(default_result_filename(&i), "a_b c_..-10.0qps-Llama-3.1-8B-20261129-211348.json");
        i.label = Some("x".repeat(300));
        assert!(default_result_filename(&i).len() < 200, "a long label is cut like a long model id");
    }

    /// Pins the label of a records file beside a result (`run.json.records.jsonl`): `run`, as
    /// docs/reports.md says, not `run.json`.
    #[test]
    fn a_records_file_beside_a_result_is_labelled_by_the_run() {
        assert_eq!(input_label(Path::new("d/run.json.records.jsonl"), None), "run");
        assert_eq!(input_label(Path::new("run.records.jsonl"), None), "run");
        assert_eq!(input_label(Path::new("run.json"), None), "run");
        assert_eq!(input_label(Path::new(".json.records.jsonl"), None), ".json");
    }

    #[test]
    fn file_names_follow_vllm() {
        let mut i = info();
        assert_eq!(default_result_filename(&i), "openai-10.0qps-Llama-3.1-8B-20261129-211348.json");
        i.request_rate = f64::INFINITY;
        i.max_concurrency = Some(64);
        i.label = Some("mine".into());
        assert_eq!(
            default_result_filename(&i),
            "mine-infqps-concurrency64-Llama-3.1-8B-20261129-211348.json"
        );
        i.ramp_up = Some(RampUp { strategy: RampStrategy::Linear, start_rps: 1.0, end_rps: 20.0 });
        assert_eq!(
            default_result_filename(&i),
            "mine-ramp-up-linear-1qps-20qps-concurrency64-Llama-3.1-8B-20261129-211348.json"
        );
    }

    #[test]
    fn python_layout_and_append() {
        let v = serde_json::json!({"a": [1, 2], "b": {"c": null}});
        assert_eq!(to_python_json(&v), r#"{"a": [1, 2], "b": {"c": null}}"#);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("r.json");
        write_result(&p, &v, true).unwrap();
        write_result(&p, &v, true).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(!text.ends_with('\n'));
        write_result(&p, &v, false).unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), to_python_json(&v));
        assert!(write_result(&dir.path().join("no/such/dir.json"), &v, false).is_err());
        let nested = dir.path().join("a/b/report.html");
        write_text(&nested, "<p>x</p>").unwrap();
        assert_eq!(std::fs::read_to_string(&nested).unwrap(), "<p>x</p>");
        assert!(write_text(&p.join("under-a-file.html"), "x").is_err());
    }
}

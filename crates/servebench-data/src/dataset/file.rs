//! Reading dataset files: whole-file checks (missing, empty, not UTF-8), JSON arrays, JSON Lines
//! and Parquet, with every problem reported as [`BenchError::DatasetFile`] naming the file, the
//! line or record at fault, and the fix.

use rayon::prelude::*;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use servebench_core::{BenchError, Result};

use super::problem::Problem;
use std::fmt;
use std::path::{Path, PathBuf};

/// Where in a file a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// The whole file.
    File,
    /// 1-based line (JSON Lines, text; also JSON syntax errors).
    Line(usize),
    /// 0-based element of a JSON array, with the 1-based line it starts on.
    Record { index: usize, line: usize },
    /// 0-based row of a Parquet file.
    Row(usize),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => f.write_str("whole file"),
            Location::Line(l) => write!(f, "line {l}"),
            Location::Record { index, line } => write!(f, "record {index} (line {line})"),
            Location::Row(r) => write!(f, "row {r}"),
        }
    }
}

/// A dataset file being read: the path for messages.
#[derive(Debug, Clone)]
pub struct DataFile {
    pub path: PathBuf,
}

impl DataFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        DataFile { path: path.into() }
    }

    /// An error at `at`.
    pub fn error(&self, at: Location, problem: impl Into<String>, fix: impl Into<String>) -> BenchError {
        BenchError::DatasetFile {
            path: self.path.display().to_string(),
            location: at.to_string(),
            problem: problem.into(),
            fix: fix.into(),
            source: None,
        }
    }

    /// An error at `at` for a [`Problem`] of one cell, its cause kept as the source.
    pub fn error_problem(&self, at: Location, problem: Problem, fix: impl Into<String>) -> BenchError {
        BenchError::DatasetFile {
            path: self.path.display().to_string(),
            location: at.to_string(),
            problem: problem.text,
            fix: fix.into(),
            source: problem.cause,
        }
    }

    /// An error at `at` caused by `cause` (an I/O, serde or Parquet error), kept as its source.
    pub fn error_from(
        &self,
        at: Location,
        problem: impl Into<String>,
        fix: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> BenchError {
        BenchError::DatasetFile {
            path: self.path.display().to_string(),
            location: at.to_string(),
            problem: problem.into(),
            fix: fix.into(),
            source: Some(Box::new(cause)),
        }
    }

    /// The raw bytes; a missing or empty file is an error.
    pub fn read_bytes(&self) -> Result<Vec<u8>> {
        let bytes = std::fs::read(&self.path).map_err(|e| {
            self.error_from(Location::File, format!("cannot be read: {e}"), "check the --dataset-path", e)
        })?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(self.error(Location::File, "the file is empty", "pass a file with records in it"));
        }
        Ok(bytes)
    }

    /// The file as UTF-8 text; invalid UTF-8 is reported with its line.
    pub fn read_text(&self) -> Result<String> {
        let bytes = self.read_bytes()?;
        String::from_utf8(bytes).map(without_bom).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            let line = line_of(e.as_bytes(), at);
            self.error(
                Location::Line(line),
                format!("not valid UTF-8 (byte offset {at})"),
                "re-encode the file as UTF-8 (e.g. iconv -t UTF-8)",
            )
        })
    }
}

/// The UTF-8 byte-order mark.
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

/// `text` without a leading byte-order mark (Windows editors write one; it is not part of the
/// first record), for readers that take a file whole as text.
pub fn without_bom(mut text: String) -> String {
    let marked = text.len() - strip_bom(&text).len();
    text.drain(..marked);
    text
}

/// [`without_bom`] of a borrowed first line (readers that stream a file line by line).
pub fn strip_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// 1-based line of byte `offset` in `bytes`.
pub fn line_of(bytes: &[u8], offset: usize) -> usize {
    1 + memchr_count(&bytes[..offset.min(bytes.len())])
}

fn memchr_count(b: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', b).count()
}

/// File formats a record file can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    JsonArray,
    JsonLines,
    Parquet,
}

impl Format {
    /// The format by extension (`.jsonl`/`.ndjson`, `.parquet`), else by the first non-blank
    /// character of the content (`[` = array, `{` = JSON Lines).
    pub fn detect(path: &Path, head: &[u8]) -> Format {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        match ext.as_str() {
            "jsonl" | "ndjson" => Format::JsonLines,
            "parquet" => Format::Parquet,
            _ if head.starts_with(b"PAR1") => Format::Parquet,
            _ => {
                match head.strip_prefix(UTF8_BOM).unwrap_or(head).iter().find(|c| !c.is_ascii_whitespace()) {
                    Some(b'{') => Format::JsonLines,
                    _ => Format::JsonArray,
                }
            }
        }
    }
}

/// Parses a JSON array file into records of type `T` (in parallel), each with its location.
/// Records may borrow from `text`.
pub fn parse_json_array<'a, T: Deserialize<'a> + Send>(
    file: &DataFile,
    text: &'a str,
) -> Result<Vec<(Location, T)>> {
    let raws: Vec<&'a RawValue> = serde_json::from_str(text).map_err(|e| json_syntax(file, text, &e))?;
    if raws.is_empty() {
        // As for an empty JSON Lines or Parquet file (found by fuzzing: `[]` loaded as no records).
        return Err(file.error(
            Location::File,
            "the JSON array has no records",
            "pass a file with records in it",
        ));
    }
    // Line of every record in one pass over the text (records are in text order).
    let base = text.as_ptr() as usize;
    let bytes = text.as_bytes();
    let mut lines = Vec::with_capacity(raws.len());
    let (mut pos, mut line) = (0usize, 1usize);
    for raw in &raws {
        let offset = (raw.get().as_ptr() as usize).saturating_sub(base).min(bytes.len());
        line += memchr_count(&bytes[pos.min(offset)..offset]);
        pos = offset;
        lines.push(line);
    }
    raws.par_iter()
        .zip(lines.par_iter())
        .enumerate()
        .map(|(index, (raw, &line))| {
            let at = Location::Record { index, line };
            serde_json::from_str::<T>(raw.get()).map(|v| (at, v)).map_err(|e| {
                file.error_from(at, format!("unexpected content: {e}"), "fix or remove this record", e)
            })
        })
        .collect()
}

fn json_syntax(file: &DataFile, text: &str, e: &serde_json::Error) -> BenchError {
    use serde_json::error::Category;
    let (problem, fix) = match e.classify() {
        Category::Eof => (
            format!("the JSON ends early ({e}): the file looks truncated"),
            "download or write the file again",
        ),
        Category::Syntax => (format!("invalid JSON: {e}"), "fix the JSON syntax"),
        Category::Data if text.trim_start().starts_with('{') => (
            format!("expected a JSON array of records: {e}"),
            "pass a JSON array, or name the file *.jsonl if it holds one JSON object per line",
        ),
        _ => (format!("unexpected content: {e}"), "pass a JSON array of records"),
    };
    file.error(Location::Line(e.line().max(1)), problem, fix)
}

/// Parses a JSON Lines file (blank lines skipped) into records of type `T`, in parallel.
/// Records may borrow from `text`.
pub fn parse_json_lines<'a, T: Deserialize<'a> + Send>(
    file: &DataFile,
    text: &'a str,
) -> Result<Vec<(Location, T)>> {
    parse_lines(file, text, None)
}

/// Which malformed lines of a JSON-lines file get the line's expected form in their fix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FormHint<'f> {
    /// Every malformed line.
    Always(&'f str),
    /// Lines that are valid JSON of the wrong shape (a missing field, a wrong type or value).
    WrongShape(&'f str),
}

/// [`parse_json_lines`] for a dataset whose lines have one documented form: a malformed
/// line's fix ends with that form (`hint`).
pub fn parse_json_lines_of_form<'a, T: Deserialize<'a> + Send>(
    file: &DataFile,
    text: &'a str,
    hint: FormHint<'_>,
) -> Result<Vec<(Location, T)>> {
    parse_lines(file, text, Some(hint))
}

fn parse_lines<'a, T: Deserialize<'a> + Send>(
    file: &DataFile,
    text: &'a str,
    hint: Option<FormHint<'_>>,
) -> Result<Vec<(Location, T)>> {
    let lines: Vec<(usize, &'a str)> =
        text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).map(|(i, l)| (i + 1, l)).collect();
    if lines.is_empty() {
        return Err(file.error(Location::File, "the file is empty", "pass a file with records in it"));
    }
    let parsed: Result<Vec<(Location, T)>> = lines
        .par_iter()
        .map(|&(n, line)| {
            serde_json::from_str::<T>(line).map(|v| (Location::Line(n), v)).map_err(|e| {
                let fix = if e.is_eof() {
                    "the line ends early (truncated?): complete or remove it"
                } else if e.is_syntax() {
                    "each line must be one complete JSON object"
                } else {
                    "fix or remove this line"
                };
                let form = match hint {
                    Some(FormHint::Always(form)) => Some(form),
                    Some(FormHint::WrongShape(form)) if e.is_data() => Some(form),
                    _ => None,
                };
                let fix = match form {
                    Some(form) => format!("{fix}: {form}"),
                    None => fix.to_owned(),
                };
                file.error_from(Location::Line(n), format!("{e}"), fix, e)
            })
        })
        .collect();
    parsed.map_err(|e| not_json_lines(file, text, lines[0].1).unwrap_or(e))
}

/// Why a file that failed as JSON Lines is not JSON Lines at all, when it is one JSON document:
/// an array (of records), or an object written over several lines (pretty-printed). Each line's
/// own error ("EOF while parsing an object", "expected a string") would not say so.
fn not_json_lines(file: &DataFile, text: &str, first_line: &str) -> Option<BenchError> {
    let first = first_line.trim_start();
    if first.starts_with('[') {
        return Some(file.error(
            Location::File,
            "the file is a JSON array, not JSON Lines (one JSON object per line)",
            "write one object per line, e.g. jq -c '.[]' FILE > FILE.jsonl",
        ));
    }
    let spread = first.starts_with('{') && serde_json::from_str::<&RawValue>(first).is_err();
    if spread && serde_json::from_str::<&RawValue>(text).is_ok() {
        return Some(file.error(
            Location::File,
            "the file is one JSON object written over several lines (pretty-printed), not JSON Lines",
            "write each record on its own line, e.g. jq -c . FILE > FILE.jsonl",
        ));
    }
    None
}

/// Reads the rows of a Parquet file as JSON objects (column name → value).
pub fn read_parquet_rows(file: &DataFile, limit: Option<usize>) -> Result<Vec<(Location, Value)>> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let f = std::fs::File::open(&file.path).map_err(|e| {
        file.error_from(Location::File, format!("cannot be read: {e}"), "check the --dataset-path", e)
    })?;
    let reader = SerializedFileReader::new(f).map_err(|e| {
        file.error(
            Location::File,
            format!("not a readable Parquet file: {e}"),
            "download the file again (truncated?) or convert it to JSON Lines",
        )
    })?;
    let iter = reader.get_row_iter(None).map_err(|e| {
        file.error(Location::File, format!("cannot read rows: {e}"), "convert the file to JSON Lines")
    })?;
    let mut rows = Vec::new();
    for (i, row) in iter.enumerate() {
        if limit.is_some_and(|l| rows.len() >= l) {
            break;
        }
        let row = row.map_err(|e| {
            file.error(
                Location::Row(i),
                format!("cannot decode: {e}"),
                "convert the file to JSON Lines (codecs supported: snappy, gzip, uncompressed)",
            )
        })?;
        rows.push((Location::Row(i), row.to_json_value()));
    }
    if rows.is_empty() {
        return Err(file.error(Location::File, "the file has no rows", "pass a file with records in it"));
    }
    Ok(rows)
}

/// Reads any record file (JSON array, JSON Lines, Parquet) as JSON values.
pub fn read_records(file: &DataFile) -> Result<Vec<(Location, Value)>> {
    let head = {
        use std::io::Read;
        let mut buf = [0u8; 64];
        let n = std::fs::File::open(&file.path).and_then(|mut f| f.read(&mut buf)).map_err(|e| {
            file.error_from(Location::File, format!("cannot be read: {e}"), "check the --dataset-path", e)
        })?;
        buf[..n].to_vec()
    };
    match Format::detect(&file.path, &head) {
        Format::Parquet => read_parquet_rows(file, None),
        Format::JsonLines => parse_json_lines(file, &file.read_text()?),
        Format::JsonArray => parse_json_array(file, &file.read_text()?),
    }
}

#[cfg(test)]
mod fuzz_regressions {
    use super::*;

    #[test]
    fn empty_json_array_is_an_error_like_an_empty_jsonl_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.data");
        std::fs::write(&path, b"[]\t").unwrap();
        let err = read_records(&DataFile::new(&path)).unwrap_err();
        assert!(err.to_string().contains("no records"), "{err}");
        assert!(err.to_string().contains("input.data"), "{err}");
    }
}

#[cfg(test)]
mod source_tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn dataset_file_errors_keep_the_io_or_serde_error_as_source() {
        let dir = tempfile::tempdir().unwrap();
        let missing = DataFile::new(dir.path().join("absent.jsonl"));
        let err = missing.read_bytes().unwrap_err();
        let io = err.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        assert_eq!(io.map(std::io::Error::kind), Some(std::io::ErrorKind::NotFound), "{err}");
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"a\": 1}\n{\"a\": \n").unwrap();
        let file = DataFile::new(&path);
        let err = parse_json_lines::<Value>(&file, &file.read_text().unwrap()).unwrap_err();
        assert!(err.to_string().contains("line 2"), "{err}");
        assert!(err.source().is_some_and(|s| s.is::<serde_json::Error>()), "{err}");
    }

    /// A file saved with a byte-order mark failed on line 1 with "expected value at line 1
    /// column 1", though every line was a valid record.
    #[test]
    fn a_byte_order_mark_is_not_part_of_the_first_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bom.data");
        std::fs::write(&path, b"\xEF\xBB\xBF{\"a\": 1}\n{\"a\": 2}\n").unwrap();
        let rows = read_records(&DataFile::new(&path)).unwrap();
        assert_eq!(rows.iter().map(|(_, v)| v["a"].as_i64().unwrap()).collect::<Vec<_>>(), [1, 2]);
        std::fs::write(&path, b"\xEF\xBB\xBF[{\"a\": 3}]").unwrap();
        assert_eq!(read_records(&DataFile::new(&path)).unwrap()[0].1["a"], 3);
    }

    /// A pretty-printed object failed as "line 1: EOF while parsing an object … the line ends
    /// early (truncated?)", and an array in a `.jsonl` file as "invalid type: map, expected a
    /// string": neither said the file is one JSON document, not lines.
    #[test]
    fn a_json_document_in_a_lines_file_is_named_as_such() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Line {
            prompt: String,
        }
        let file = DataFile::new("data.jsonl");
        let problem_of = |text: &str| match parse_json_lines::<Line>(&file, text) {
            Err(servebench_core::BenchError::DatasetFile { problem, fix, .. }) => format!("{problem}; {fix}"),
            other => panic!("expected SB204, got {other:?}"),
        };
        let pretty = problem_of("{\n  \"prompt\": \"hi\"\n}\n");
        assert!(pretty.contains("pretty-printed") && pretty.contains("jq -c ."), "{pretty}");
        let array = problem_of("[{\"prompt\": \"hi\"}]\n");
        assert!(array.contains("a JSON array, not JSON Lines") && array.contains("jq -c '.[]'"), "{array}");
        // A line cut short stays that line's error.
        let cut = problem_of("{\"prompt\": \"hi\"}\n{\"prompt\": \n");
        assert!(cut.contains("truncated?"), "{cut}");
    }

    #[test]
    fn a_lines_form_is_named_for_every_bad_line_or_only_for_wrong_shapes() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Line {
            prompt: String,
        }
        let file = DataFile::new("lines.jsonl");
        let form = "each line is {\"prompt\": \"text\"}";
        let fix_of =
            |text: &str, hint: FormHint<'_>| match parse_json_lines_of_form::<Line>(&file, text, hint) {
                Err(servebench_core::BenchError::DatasetFile { fix, .. }) => fix,
                other => panic!("expected SB204, got {other:?}"),
            };
        let wrong_shape = "{\"text\": \"hi\"}\n";
        let not_json = "{\"prompt\": \n";
        assert!(fix_of(wrong_shape, FormHint::WrongShape(form)).ends_with(form));
        assert!(!fix_of(not_json, FormHint::WrongShape(form)).contains(form));
        assert!(fix_of(not_json, FormHint::Always(form)).ends_with(form));
    }
}

//! The server-metrics file: one JSON line per scrape per endpoint (`/metrics` endpoints and GPU
//! sources alike), written as each scrape answers, beside the result
//! (`<result>.server-metrics.jsonl`; schema in docs/metrics.md, "The server-metrics file").

use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The file's name beside a records file `<result>.records.jsonl` (or
/// `<result>.K.records.jsonl`): `<result>[.K].server-metrics.jsonl`.
pub fn series_path_for(records: &Path) -> PathBuf {
    let s = records.to_string_lossy();
    match s.strip_suffix(".records.jsonl") {
        Some(stem) => PathBuf::from(format!("{stem}.server-metrics.jsonl")),
        None => PathBuf::from(format!("{s}.server-metrics.jsonl")),
    }
}

/// A shared line writer; cloning shares the file. Writing errors are kept (the first one) and
/// reported once at the end instead of failing the run.
#[derive(Debug, Clone, Default)]
pub struct SeriesWriter {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    file: Option<std::io::BufWriter<std::fs::File>>,
    path: Option<PathBuf>,
    lines: u64,
    error: Option<String>,
}

impl SeriesWriter {
    /// A writer to `path` (created, truncated).
    pub fn create(path: &Path) -> servebench_core::Result<SeriesWriter> {
        let file =
            std::fs::File::create(path).map_err(|e| servebench_core::BenchError::io(path.display(), e))?;
        let inner = Inner {
            file: Some(std::io::BufWriter::new(file)),
            path: Some(path.to_owned()),
            ..Inner::default()
        };
        Ok(SeriesWriter { inner: Arc::new(Mutex::new(inner)) })
    }

    /// A writer that writes nothing (no `--save-result`).
    pub fn none() -> SeriesWriter {
        SeriesWriter::default()
    }

    /// Whether lines go anywhere (callers skip building them otherwise).
    pub fn enabled(&self) -> bool {
        self.inner.lock().map(|i| i.file.is_some()).unwrap_or(false)
    }

    /// Appends one line.
    pub fn line(&self, v: &Value) {
        let Ok(mut inner) = self.inner.lock() else { return };
        let Some(f) = inner.file.as_mut() else { return };
        let r = serde_json::to_writer(&mut *f, v)
            .map_err(|e| e.to_string())
            .and_then(|()| f.write_all(b"\n").map_err(|e| e.to_string()));
        match r {
            Ok(()) => inner.lines += 1,
            Err(e) => {
                inner.error.get_or_insert(e);
            }
        }
    }

    /// Flushes and closes; returns the path and line count when lines were written, and the
    /// first write error.
    pub fn finish(&self) -> (Option<(PathBuf, u64)>, Option<String>) {
        let Ok(mut inner) = self.inner.lock() else { return (None, None) };
        if let Some(mut f) = inner.file.take() {
            if let Err(e) = f.flush() {
                inner.error.get_or_insert(e.to_string());
            }
        }
        let written = inner.path.clone().filter(|_| inner.lines > 0).map(|p| (p, inner.lines));
        (written, inner.error.clone())
    }
}

/// The line of a failed scrape.
pub fn failed_line(endpoint: &str, source: &str, t_s: f64, error: &str) -> Value {
    json!({"endpoint": endpoint, "source": source, "t_s": t_s, "ok": false, "error": error, "series": []})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_named_after_the_records_file_and_gets_one_line_per_call() {
        assert_eq!(
            series_path_for(Path::new("d/r.json.records.jsonl")),
            PathBuf::from("d/r.json.server-metrics.jsonl")
        );
        assert_eq!(
            series_path_for(Path::new("r.json.2.records.jsonl")),
            PathBuf::from("r.json.2.server-metrics.jsonl")
        );
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.server-metrics.jsonl");
        let w = SeriesWriter::create(&p).unwrap();
        w.line(&failed_line("http://h/metrics", "prometheus", 0.5, "refused"));
        w.clone().line(&json!({"a": 1}));
        let (written, err) = w.finish();
        assert_eq!((written, err), (Some((p.clone(), 2)), None));
        let text = std::fs::read_to_string(&p).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with("{\"endpoint\":\"http://h/metrics\""), "{text}");
        assert!(!SeriesWriter::none().enabled());
    }
}

//! The records file: one JSON line per request, appended and flushed the moment the request
//! ends, so a crash or `kill -9` loses nothing that finished before it.

use servebench_core::shard::{is_shard_line, parse_shard_line, ShardHeader, ShardLine, ShardSummary};
use servebench_core::{BenchError, RequestRecord, Result};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// An append-only JSONL file of [`RequestRecord`]s.
#[derive(Debug)]
pub struct RecordSink {
    path: PathBuf,
    out: BufWriter<File>,
    written: u64,
}

impl RecordSink {
    /// Creates (truncates) the records file, creating its directory if needed.
    pub fn create(path: &Path) -> Result<Self> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| BenchError::io(dir.display(), e))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(path)
            .map_err(|e| BenchError::io(path.display(), e))?;
        Ok(RecordSink { path: path.to_path_buf(), out: BufWriter::new(file), written: 0 })
    }

    /// Appends one record and flushes it to the OS.
    pub fn append(&mut self, record: &RequestRecord) -> Result<()> {
        let io = |e: std::io::Error| BenchError::io(self.path.display(), e);
        serde_json::to_writer(&mut self.out, record).map_err(|e| BenchError::io(self.path.display(), e))?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(|e| BenchError::io(self.path.display(), e))?;
        self.written += 1;
        Ok(())
    }

    /// Writes one non-record line (a shard header, `servebench_core::shard`) and flushes it.
    pub fn write_line(&mut self, line: &str) -> Result<()> {
        let io = |e: std::io::Error| BenchError::io(self.path.display(), e);
        self.out.write_all(line.as_bytes()).map_err(io)?;
        self.out.write_all(b"\n").map_err(io)?;
        self.out.flush().map_err(|e| BenchError::io(self.path.display(), e))
    }

    /// Records written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Reads a records file back. Blank lines and the shard header/summary lines of a sharded run
/// are skipped; a truncated last line (a crash in the middle of a write) is ignored and reported
/// in the second element.
pub fn read_records(path: &Path) -> Result<(Vec<RequestRecord>, usize)> {
    read_records_file(path).map(|f| (f.records, f.truncated))
}

/// A records file with the shard lines of a sharded run (docs/scale-out.md).
#[derive(Debug, Clone, Default)]
pub struct RecordsFile {
    pub records: Vec<RequestRecord>,
    /// 1 if a truncated last line was ignored.
    pub truncated: usize,
    pub shard_header: Option<ShardHeader>,
    pub shard_summary: Option<ShardSummary>,
}

/// Reads a records file, keeping its shard header and summary lines when it has them; one line
/// is in memory at a time (the records, not the file, are what a large run holds at its end).
pub fn read_records_file(path: &Path) -> Result<RecordsFile> {
    let mut records = Vec::new();
    let file = read_records_each(path, |r| records.push(r))?;
    Ok(RecordsFile { records, ..file })
}

/// [`read_records_file`] handing each record to `on_record` as it is read (the returned file's
/// `records` stay empty): a run reads its records back into its compact store this way.
pub fn read_records_each(path: &Path, mut on_record: impl FnMut(RequestRecord)) -> Result<RecordsFile> {
    use std::io::BufRead;
    let io_error = |e: std::io::Error| BenchError::io(path.display(), e);
    let mut reader = std::io::BufReader::new(File::open(path).map_err(io_error)?);
    let mut file = RecordsFile::default();
    // A line that does not parse is an error unless it is the file's last line (a run cut
    // short mid-write): it waits here until the next line, or the end of the file, decides.
    let mut pending: Option<BenchError> = None;
    let mut bytes = Vec::new();
    for n in 0.. {
        bytes.clear();
        if reader.read_until(b'\n', &mut bytes).map_err(io_error)? == 0 {
            break;
        }
        if let Some(e) = pending.take() {
            return Err(e);
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        // Bytes first: a write cut inside a multi-byte character is not UTF-8, and is a cut
        // write as any other when it is the last line.
        let Ok(line) = std::str::from_utf8(&bytes) else {
            pending = Some(BenchError::RecordsFileMalformed {
                file: at(),
                problem: "not UTF-8 text".into(),
                source: None,
            });
            continue;
        };
        let line = line.trim_end_matches(['\n', '\r']);
        if line.trim().is_empty() {
            continue;
        }
        if is_shard_line(line) {
            match parse_shard_line(line) {
                Some(ShardLine::Header(h)) => file.shard_header = Some(h),
                Some(ShardLine::Summary(s)) => file.shard_summary = Some(s),
                None => {
                    pending = Some(BenchError::RecordsFileMalformed {
                        file: at(),
                        problem: "malformed shard header/summary line".into(),
                        source: None,
                    })
                }
            }
            continue;
        }
        match serde_json::from_str::<RequestRecord>(line) {
            Ok(r) => on_record(r),
            Err(e) => {
                // Only JSON cut off (the line ends inside it) can be a write cut short; a whole
                // JSON value that is not a record is an error wherever it is, the last line too.
                let cut = e.is_eof();
                let error = BenchError::RecordsFileMalformed {
                    file: at(),
                    problem: format!("not a request record ({e})"),
                    source: Some(Box::new(e)),
                };
                match cut {
                    true => pending = Some(error),
                    false => return Err(error),
                }
            }
        }
    }
    file.truncated = usize::from(pending.is_some());
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appends_one_line_per_record_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/records.jsonl");
        let mut sink = RecordSink::create(&path).unwrap();
        for i in 0..3 {
            sink.append(&RequestRecord::scheduled(i, format!("r{i}"), i * 10, 5, 7)).unwrap();
            // Flushed per record: the file already holds every line written so far.
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            assert_eq!(lines as u64, i + 1);
        }
        let (recs, bad) = read_records(&path).unwrap();
        assert_eq!((recs.len(), bad), (3, 0));
        assert_eq!(recs[2].intended_us, 20);
    }

    #[test]
    fn truncated_last_line_is_tolerated() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let good = serde_json::to_string(&RequestRecord::scheduled(0, "a".into(), 0, 1, 1)).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"index\":1,\"requ")).unwrap();
        let (recs, bad) = read_records(&path).unwrap();
        assert_eq!((recs.len(), bad), (1, 1));
        std::fs::write(&path, format!("garbage\n{good}\n")).unwrap();
        assert!(read_records(&path).is_err());
        // CRLF line ends, blank lines between records, no line end at the end.
        std::fs::write(&path, format!("{good}\r\n\n{good}")).unwrap();
        assert_eq!(read_records(&path).unwrap().0.len(), 2);
        // A cut line followed by anything, even a blank line, is not the last line: an error.
        std::fs::write(&path, format!("{good}\n{{\"index\":1\n\n")).unwrap();
        assert!(read_records(&path).is_err());
        // Pins a write cut inside a multi-byte character being a cut last line (it was an
        // SB501 "stream did not contain valid UTF-8"); such bytes on another line are an error.
        let cut = &"{\"index\":1,\"error\":{\"message\":\"サ".as_bytes()[..33];
        std::fs::write(&path, [format!("{good}\n").as_bytes(), cut].concat()).unwrap();
        assert_eq!(read_records(&path).unwrap(), (vec![RequestRecord::scheduled(0, "a".into(), 0, 1, 1)], 1));
        std::fs::write(&path, [cut, format!("\n{good}\n").as_bytes()].concat()).unwrap();
        assert!(read_records(&path).is_err());
        // Pins a whole last line that is not a record (it was taken for a cut write and
        // ignored: a file whose only record was invalid reported nothing at all).
        for last in [r#"{"index":1,"outcome":"weird"}"#, "garbage", "[1, 2]"] {
            std::fs::write(&path, format!("{good}\n{last}\n")).unwrap();
            assert!(read_records(&path).is_err(), "{last}");
            std::fs::write(&path, format!("{last}\n")).unwrap();
            assert!(read_records(&path).is_err(), "{last} alone");
        }
    }

    #[test]
    fn a_malformed_line_is_sb208_naming_the_line_with_the_json_error_as_source() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let good = serde_json::to_string(&RequestRecord::scheduled(0, "a".into(), 0, 1, 1)).unwrap();
        std::fs::write(&path, format!("{good}\n{{\"index\": \"x\"}}\n{good}\n")).unwrap();
        let e = read_records_file(&path).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::RecordsFileMalformed, "not SB203: {e}");
        assert!(e.to_string().starts_with(&format!("{}:2: not a request record (", path.display())), "{e}");
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<serde_json::Error>());
        assert!(source.is_some(), "{e:?}");
    }
}

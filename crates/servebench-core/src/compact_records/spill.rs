//! Records beyond a store's in-memory cap ([`super::CompactRecords::spilling_beyond`]): written
//! as sorted runs (records in workload-index order, each prefixed by its length) to an unlinked
//! temporary file, and walked back by merging the runs ([`Merged`]): each run is read through
//! its own window of the file, so a walk holds a window and one decoded record per run, not
//! the records.
//!
//! The file is this process's own scratch space, never a format: it is created unlinked
//! (`tempfile::tempfile`), so it disappears when the last handle closes, even on a crash.

use super::codec;
use crate::file_at::{read_exact_at, write_all_at};
use crate::varint::{push_uint, read_uint};
use crate::RequestRecord;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::sync::{Arc, Mutex};

/// The window each run is read through, divided among the runs of a walk.
const WINDOWS_BYTES: usize = 16 << 20;
/// A run's window: at least this (a record longer than the window widens it).
const MIN_WINDOW: usize = 4 << 10;
/// A run's window: at most this.
const MAX_WINDOW: usize = 64 << 10;

/// The unlinked file the runs are written to; shared by a store and its clones (each run keeps
/// its own byte range, appended under the lock).
#[derive(Debug)]
pub(super) struct SpillFile {
    file: File,
    /// Where the next run starts.
    end: Mutex<u64>,
    /// The first read that failed (a walk that met it stopped early).
    read_failure: Mutex<Option<String>>,
}

/// One run: `count` records in index order in `start..end` of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Run {
    start: u64,
    end: u64,
    count: usize,
}

/// The runs a store has written.
#[derive(Debug, Clone)]
pub(super) struct Spilled {
    file: Arc<SpillFile>,
    runs: Vec<Run>,
}

impl SpillFile {
    fn create() -> std::io::Result<Arc<SpillFile>> {
        Ok(Arc::new(SpillFile {
            file: tempfile::tempfile()?,
            end: Mutex::new(0),
            read_failure: Mutex::new(None),
        }))
    }

    /// Writes `bytes` after everything written so far; their range in the file.
    fn append(&self, bytes: &[u8]) -> std::io::Result<(u64, u64)> {
        let mut end = self.end.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let start = *end;
        write_all_at(&self.file, bytes, start)?;
        *end = start + bytes.len() as u64;
        Ok((start, *end))
    }

    fn note_read_failure(&self, e: &std::io::Error) {
        let mut failure = self.read_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        failure.get_or_insert_with(|| format!("reading spilled records back failed: {e}"));
    }
}

impl Spilled {
    /// Records in the runs.
    pub(super) fn count(&self) -> usize {
        self.runs.iter().map(|r| r.count).sum()
    }

    /// Bytes the runs take on disk.
    pub(super) fn disk_bytes(&self) -> u64 {
        self.runs.iter().map(|r| r.end - r.start).sum()
    }

    /// No runs yet, written to the same file (a selection of this store's records).
    pub(super) fn sharing_file(&self) -> Spilled {
        Spilled { file: self.file.clone(), runs: Vec::new() }
    }

    /// The first failed read of any walk so far.
    pub(super) fn read_failure(&self) -> Option<String> {
        self.file.read_failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

/// Writes `records` (each record's bytes, already in index order) as a new run, to `spilled`'s
/// file (created on the first run).
pub(super) fn write_run<'a>(
    spilled: &mut Option<Spilled>,
    records: impl Iterator<Item = &'a [u8]>,
) -> std::io::Result<()> {
    let mut bytes = Vec::new();
    let mut count = 0;
    for slot in records {
        push_uint(&mut bytes, slot.len() as u64);
        bytes.extend_from_slice(slot);
        count += 1;
    }
    if count == 0 {
        return Ok(());
    }
    let file = match spilled {
        Some(s) => s.file.clone(),
        None => SpillFile::create()?,
    };
    let (start, end) = file.append(&bytes)?;
    let run = Run { start, end, count };
    match spilled {
        Some(s) => s.runs.push(run),
        None => *spilled = Some(Spilled { file, runs: vec![run] }),
    }
    Ok(())
}

/// Reads one run's records in order through a window of the file.
struct RunCursor<'a> {
    file: &'a SpillFile,
    /// The next record's length prefix.
    at: u64,
    end: u64,
    window: Vec<u8>,
    /// Where `window[0]` is in the file.
    window_at: u64,
    window_len: usize,
}

impl<'a> RunCursor<'a> {
    fn new(file: &'a SpillFile, run: Run, window_len: usize) -> Self {
        RunCursor { file, at: run.start, end: run.end, window: Vec::new(), window_at: run.start, window_len }
    }

    /// The window's bytes from the cursor on, at least `need` of them when the run has them.
    fn bytes(&mut self, need: usize) -> std::io::Result<&[u8]> {
        let left = usize::try_from(self.end - self.at).unwrap_or(usize::MAX);
        let need = need.min(left);
        let from = usize::try_from(self.at - self.window_at).unwrap_or(usize::MAX);
        if self.at < self.window_at || from.saturating_add(need) > self.window.len() {
            let len = need.max(self.window_len).min(left);
            self.window.resize(len, 0);
            read_exact_at(&self.file.file, &mut self.window, self.at)?;
            self.window_at = self.at;
        }
        let from = usize::try_from(self.at - self.window_at).unwrap_or(usize::MAX);
        Ok(self.window.get(from..).unwrap_or_default())
    }

    /// The next record (`None` at the run's end, or when a read fails: noted on the file).
    fn next(&mut self, prefix: &str) -> Option<RequestRecord> {
        if self.at >= self.end {
            return None;
        }
        match self.read(prefix) {
            Ok(r) => r,
            Err(e) => {
                self.file.note_read_failure(&e);
                self.at = self.end;
                None
            }
        }
    }

    fn read(&mut self, prefix: &str) -> std::io::Result<Option<RequestRecord>> {
        let mut head = 0;
        let len = read_uint(self.bytes(10)?, &mut head).unwrap_or(u64::MAX);
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        let total = head.saturating_add(len);
        let slot = self.bytes(total)?;
        let record = slot.get(head..total).and_then(|b| codec::decode_with_len(b, prefix)).map(|(r, _)| r);
        // Bytes come only from `write_run` of `encode`d records: `None` means the file does not
        // hold what was written (or this module's bug): noted, and the run's walk ends.
        match record {
            Some(_) => self.at += total as u64,
            None => {
                let at = self.at;
                self.file.note_read_failure(&std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("the record at byte {at} does not decode"),
                ));
                self.at = self.end;
            }
        }
        Ok(record)
    }
}

/// Where a merged walk takes records from: a run on disk, or the in-memory records.
enum Source<'a> {
    Run(RunCursor<'a>),
    Memory { bytes: &'a [u8], starts: std::vec::IntoIter<u64> },
}

impl Source<'_> {
    fn next(&mut self, prefix: &str) -> Option<RequestRecord> {
        match self {
            Source::Run(c) => c.next(prefix),
            Source::Memory { bytes, starts } => {
                let start = usize::try_from(starts.next()?).unwrap_or(usize::MAX);
                let record =
                    codec::decode_with_len(bytes.get(start..).unwrap_or_default(), prefix).map(|(r, _)| r);
                debug_assert!(record.is_some(), "a compact record does not decode");
                record
            }
        }
    }
}

/// Every record of the runs and of the in-memory part, in workload-index order (a k-way merge;
/// among equal indexes, the earlier run first and the in-memory records last).
pub(super) struct Merged<'a> {
    prefix: &'a str,
    sources: Vec<Source<'a>>,
    heads: Vec<Option<RequestRecord>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    remaining: usize,
}

impl<'a> Merged<'a> {
    /// `memory_starts`: the in-memory records' starts in `bytes`, in index order.
    pub(super) fn new(
        spilled: &'a Spilled,
        bytes: &'a [u8],
        memory_starts: Vec<u64>,
        prefix: &'a str,
    ) -> Self {
        let runs = spilled.runs.len().max(1);
        let window = (WINDOWS_BYTES / runs).clamp(MIN_WINDOW, MAX_WINDOW);
        let remaining = spilled.count() + memory_starts.len();
        let mut sources: Vec<Source<'a>> =
            spilled.runs.iter().map(|&run| Source::Run(RunCursor::new(&spilled.file, run, window))).collect();
        sources.push(Source::Memory { bytes, starts: memory_starts.into_iter() });
        let mut merged = Merged { prefix, heads: Vec::new(), heap: BinaryHeap::new(), sources, remaining };
        for s in 0..merged.sources.len() {
            let head = merged.pull(s);
            merged.heads.push(head);
        }
        merged
    }

    /// The next record of source `s`, entered in the heap.
    fn pull(&mut self, s: usize) -> Option<RequestRecord> {
        let record = self.sources.get_mut(s)?.next(self.prefix)?;
        self.heap.push(Reverse((record.index, s)));
        Some(record)
    }
}

impl Iterator for Merged<'_> {
    type Item = RequestRecord;

    fn next(&mut self) -> Option<RequestRecord> {
        let Reverse((_, s)) = self.heap.pop()?;
        let record = self.heads.get_mut(s)?.take()?;
        let head = self.pull(s);
        if let Some(slot) = self.heads.get_mut(s) {
            *slot = head;
        }
        self.remaining = self.remaining.saturating_sub(1);
        Some(record)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Merged<'_> {}

#[cfg(test)]
impl Spilled {
    /// Cuts the file short (a read-back failure, for the tests).
    pub(super) fn truncate_file(&self, len: u64) {
        #[allow(clippy::unwrap_used)]
        self.file.file.set_len(len).unwrap();
    }
}

//! The collector's store of finished requests: every record goes to the records file (if any)
//! the moment it arrives; at most `max_in_memory` are also held in memory during the run, as
//! bytes (`CompactRecords`: about 60 bytes a short request instead of a 650-byte record).
//!
//! Beyond the cap, records live only on disk: in the records file when the run writes one,
//! else in a spill file (same JSONL format) in the system temporary directory, removed at the
//! end. [`RecordStore::finish`] reads them back into the compact store, so the metrics are
//! computed from every record, exactly as without a cap.

use crate::records::sink::{read_records_each, RecordSink};
use servebench_core::{BenchError, CompactRecords, RequestRecord, Result};
use std::path::PathBuf;

/// Default `--max-records-in-memory`.
pub const DEFAULT_MAX_RECORDS_IN_MEMORY: usize = 1_000_000;

/// Records of a run as they arrive.
#[derive(Debug)]
pub struct RecordStore {
    max_in_memory: usize,
    in_memory: CompactRecords,
    sink: Option<RecordSink>,
    /// Records beyond the cap when there is no records file.
    spill: Option<RecordSink>,
    overflowed: u64,
    error: Option<BenchError>,
}

impl RecordStore {
    /// `sink`: the run's records file, if any. `expected`: the run's request count (capacity).
    pub fn new(sink: Option<RecordSink>, max_in_memory: usize, expected: usize) -> Self {
        RecordStore {
            max_in_memory,
            in_memory: CompactRecords::with_capacity(expected.min(max_in_memory)),
            sink,
            spill: None,
            overflowed: 0,
            error: None,
        }
    }

    /// Stores one record. A write error is kept (the first one) and returned by `finish`.
    pub fn push(&mut self, record: RequestRecord) {
        if let Some(s) = self.sink.as_mut() {
            if let Err(e) = s.append(&record) {
                self.error.get_or_insert(e);
            }
        }
        if self.in_memory.len() < self.max_in_memory {
            self.in_memory.push(&record);
            return;
        }
        self.overflowed += 1;
        if self.sink.is_some() {
            return; // the records file holds it
        }
        if self.spill.is_none() {
            match RecordSink::create(&spill_path()) {
                Ok(s) => self.spill = Some(s),
                Err(e) => {
                    self.error.get_or_insert(e);
                    return;
                }
            }
        }
        if let Some(s) = self.spill.as_mut() {
            if let Err(e) = s.append(&record) {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Records that did not fit in memory so far.
    pub fn overflowed(&self) -> u64 {
        self.overflowed
    }

    /// Every record, sorted by workload index; reads the overflow back from disk.
    pub fn finish(self) -> Result<CompactRecords> {
        let RecordStore { mut in_memory, sink, spill, overflowed, error, .. } = self;
        if let Some(e) = error {
            if let Some(s) = &spill {
                let _ = std::fs::remove_file(s.path());
            }
            return Err(e);
        }
        let mut records = if overflowed == 0 {
            in_memory
        } else if let Some(sink) = sink {
            // The records file has every record, in arrival order: use it alone.
            let path = sink.path().to_path_buf();
            drop(sink);
            drop(in_memory);
            let mut all = CompactRecords::default();
            read_back(&path, &mut all)?;
            all
        } else if let Some(spill) = spill {
            let path = spill.path().to_path_buf();
            drop(spill);
            let rest = read_back(&path, &mut in_memory);
            let _ = std::fs::remove_file(&path);
            rest?;
            in_memory
        } else {
            in_memory
        };
        records.sort_by_index();
        records.shrink_to_fit();
        Ok(records)
    }
}

fn read_back(path: &std::path::Path, into: &mut CompactRecords) -> Result<()> {
    let file = read_records_each(path, |r| into.push(&r))?;
    if file.truncated > 0 {
        return Err(BenchError::io(path.display(), "the last record was cut short while reading it back"));
    }
    Ok(())
}

fn spill_path() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("servebench-spill-{}-{n}.records.jsonl", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::metrics::{compute, MetricsConfig};
    use servebench_core::{ErrorKind, Outcome, TokenEvents};

    fn records() -> Vec<RequestRecord> {
        (0..25u64)
            .map(|i| {
                let mut r = RequestRecord::scheduled(i, format!("r{i}"), i * 1_000, 10 + i as u32, 8);
                r.dispatched_us = Some(i * 1_000 + i % 3);
                if i % 7 == 3 {
                    r.fail(ErrorKind::HttpStatus, "503");
                    return r;
                }
                r.outcome = Outcome::Completed;
                r.first_token_us = Some(i * 1_000 + 500 + i * 13);
                r.token_events =
                    TokenEvents { gaps_us: vec![100 + i as u32, 250, 40 * i as u32], tokens: vec![] };
                r.last_token_us = Some(r.first_token_us.unwrap() + 390 + 41 * i);
                r.done_us = r.last_token_us.map(|t| t + 7);
                r.token_event_count = 4;
                r.completion_tokens = Some(4 + (i % 2) as u32);
                r
            })
            .collect()
    }

    /// Arrival order differs from index order, as in a run.
    fn arrival_order() -> Vec<RequestRecord> {
        let mut v = records();
        v.reverse();
        v.swap(3, 17);
        v
    }

    fn store_all(mut store: RecordStore) -> Vec<RequestRecord> {
        for r in arrival_order() {
            store.push(r);
        }
        store.finish().unwrap().to_vec()
    }

    #[test]
    fn capped_run_gives_the_same_records_and_metrics_as_uncapped() {
        let cfg = MetricsConfig { goodput: vec![], ..MetricsConfig::default() };
        let uncapped = store_all(RecordStore::new(None, DEFAULT_MAX_RECORDS_IN_MEMORY, 25));
        assert_eq!(uncapped, records());
        let expected = compute(&uncapped, &cfg);

        // No records file: the overflow goes to a spill file, read back and removed.
        let mut spilled = RecordStore::new(None, 3, 25);
        for r in arrival_order() {
            spilled.push(r);
        }
        assert_eq!(spilled.overflowed(), 22);
        let spill = spilled.spill.as_ref().map(|s| s.path().to_path_buf()).unwrap();
        let got = spilled.finish().unwrap().to_vec();
        assert!(!spill.exists(), "spill file removed");
        assert_eq!(got, uncapped);
        assert_eq!(format!("{:?}", compute(&got, &cfg)), format!("{expected:?}"));

        // With a records file: it is read back whole.
        let dir = tempfile::tempdir().unwrap();
        let sink = RecordSink::create(&dir.path().join("r.jsonl")).unwrap();
        let got = store_all(RecordStore::new(Some(sink), 1, 25));
        assert_eq!(got, uncapped);
        assert_eq!(format!("{:?}", compute(&got, &cfg)), format!("{expected:?}"));

        // Cap zero: nothing in memory at all.
        assert_eq!(store_all(RecordStore::new(None, 0, 25)), uncapped);
    }
}

//! The collector's store of finished requests: every record goes to the records file (if any)
//! the moment it arrives, and to the run's compact store (`CompactRecords`: about 60 bytes a
//! short request instead of a 650-byte record).
//!
//! The compact store holds at most `max_in_memory` records (at least
//! [`servebench_core::compact_records::MIN_SPILL_RUN`]) in memory: then it writes them, sorted
//! by index, as one run to an unlinked temporary file and frees them. The end-of-run
//! computations walk the runs back, merged in index order, so the metrics are computed from
//! every record, exactly as without a cap, and a run's memory does not grow with its records.

use crate::records::sink::RecordSink;
use servebench_core::{BenchError, CompactRecords, RequestRecord, Result};

/// Default `--max-records-in-memory`.
pub const DEFAULT_MAX_RECORDS_IN_MEMORY: usize = 100_000;

/// Records of a run as they arrive.
#[derive(Debug)]
pub struct RecordStore {
    records: CompactRecords,
    sink: Option<RecordSink>,
    error: Option<BenchError>,
}

impl RecordStore {
    /// `sink`: the run's records file, if any. `expected`: the run's request count (capacity).
    pub fn new(sink: Option<RecordSink>, max_in_memory: usize, expected: usize) -> Self {
        let max_in_memory = max_in_memory.max(servebench_core::compact_records::MIN_SPILL_RUN);
        // Also beyond `expected`: a closed loop or a `--duration` run may send more.
        let mut records = CompactRecords::spilling_beyond(max_in_memory);
        records.reserve(expected);
        RecordStore { records, sink, error: None }
    }

    /// Stores one record. A write error is kept (the first one) and returned by `finish`.
    pub fn push(&mut self, record: RequestRecord) {
        if let Some(s) = self.sink.as_mut() {
            if let Err(e) = s.append(&record) {
                self.error.get_or_insert(e);
            }
        }
        self.records.push(&record);
    }

    /// A store that failed before anything was stored (`finish` returns `error`).
    pub fn failed(error: BenchError) -> Self {
        RecordStore { records: CompactRecords::default(), sink: None, error: Some(error) }
    }

    /// Whether the next push writes the records held in memory to disk.
    pub fn next_push_spills(&self) -> bool {
        self.records.next_push_spills()
    }

    /// Records written to the temporary file so far (not held in memory).
    pub fn overflowed(&self) -> u64 {
        self.records.spilled().0 as u64
    }

    /// Every record, walked in index order.
    pub fn finish(self) -> Result<CompactRecords> {
        let RecordStore { mut records, error, .. } = self;
        if let Some(e) = error {
            return Err(e);
        }
        records.sort_by_index();
        records.shrink_to_fit();
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::metrics::{compute, MetricsConfig};
    use servebench_core::{ErrorKind, Outcome, TokenEvents};

    /// `n` records of every shape the metrics read (failed, completed with token gaps).
    fn records(n: u64) -> Vec<RequestRecord> {
        (0..n)
            .map(|i| {
                let mut r = RequestRecord::scheduled(i, format!("r{i}"), i * 1_000, 10 + (i % 50) as u32, 8);
                r.dispatched_us = Some(i * 1_000 + i % 3);
                if i % 7 == 3 {
                    r.fail(ErrorKind::HttpStatus, "503");
                    return r;
                }
                r.outcome = Outcome::Completed;
                r.first_token_us = Some(i * 1_000 + 500 + (i % 97) * 13);
                r.token_events = TokenEvents {
                    gaps_us: vec![100 + (i % 31) as u32, 250, 40 * (i % 11) as u32],
                    tokens: vec![],
                };
                r.last_token_us = Some(r.first_token_us.unwrap() + 390 + 41 * (i % 13));
                r.done_us = r.last_token_us.map(|t| t + 7);
                r.token_event_count = 4;
                r.completion_tokens = Some(4 + (i % 2) as u32);
                r
            })
            .collect()
    }

    /// Arrival order differs from index order, as in a run: each block of 40 ends in reverse,
    /// and a few requests end far later than their neighbours.
    fn arrival_order(n: u64) -> Vec<RequestRecord> {
        let mut v = records(n);
        v.chunks_mut(40).for_each(<[RequestRecord]>::reverse);
        for k in (0..v.len()).step_by(301) {
            let late = v.remove(k);
            v.push(late);
        }
        v
    }

    fn store_all(mut store: RecordStore, n: u64) -> (Vec<RequestRecord>, u64) {
        for r in arrival_order(n) {
            store.push(r);
        }
        let overflowed = store.overflowed();
        (store.finish().unwrap().to_vec(), overflowed)
    }

    #[test]
    fn a_run_capped_in_memory_gives_the_records_and_metrics_of_an_uncapped_one() {
        let n = 5_000;
        let cfg = MetricsConfig { goodput: vec![], ..MetricsConfig::default() };
        let (uncapped, none) =
            store_all(RecordStore::new(None, DEFAULT_MAX_RECORDS_IN_MEMORY, n as usize), n);
        assert_eq!((uncapped.len(), none), (n as usize, 0));
        assert_eq!(uncapped, records(n));
        let expected = format!("{:?}", compute(&uncapped, &cfg));

        // Cap 0: runs of the smallest size on disk, the rest in memory; walked in index order.
        // Told to expect 10 (a closed loop sends more than its workload): it spills all the same.
        let (got, spilled) = store_all(RecordStore::new(None, 0, 10), n);
        assert_eq!(spilled, 4 * servebench_core::compact_records::MIN_SPILL_RUN as u64);
        assert_eq!(got, uncapped);
        // The metrics computed by walking the spilled store itself, not a copy.
        let mut store = RecordStore::new(None, 2_000, n as usize);
        arrival_order(n).into_iter().for_each(|r| store.push(r));
        assert_eq!(store.overflowed(), 4_000);
        let compact = store.finish().unwrap();
        assert!(compact.heap_bytes() < 2_000 * 80, "{} bytes held", compact.heap_bytes());
        assert_eq!(format!("{:?}", compute(&compact, &cfg)), expected);
        assert!(compact.spill_read_failure().is_none() && compact.spill_write_failure().is_none());

        // With a records file: it still gets every record, in arrival order.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let sink = RecordSink::create(&path).unwrap();
        let (got, _) = store_all(RecordStore::new(Some(sink), 1, n as usize), n);
        assert_eq!(got, uncapped);
        let (written, truncated) = crate::records::sink::read_records(&path).unwrap();
        assert_eq!((written, truncated), (arrival_order(n), 0));
    }
}

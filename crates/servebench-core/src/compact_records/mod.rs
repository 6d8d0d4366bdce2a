//! A run's records held in memory as bytes (`codec`): about a tenth of a [`RequestRecord`]'s
//! size for a short request (56 bytes against 568 plus its strings), so a run of a million
//! requests holds its records in about 64 MB instead of 650 (docs/performance.md, "Lazy
//! workload generation"). Every computation walks them through [`RecordSet`], decoding one
//! record at a time. A store made with [`CompactRecords::spilling_beyond`] holds at most a
//! given number of records in memory and writes the others, in sorted runs, to an unlinked
//! temporary file (`spill`): its walks merge them back in index order.

mod codec;
mod set;
mod spill;

pub use set::{Filtered, RecordSet, Selection};

use crate::RequestRecord;

/// The fewest records a run's store spills at a time (`--max-records-in-memory` below it
/// holds this many): a walk then merges at most one run per this many records.
pub const MIN_SPILL_RUN: usize = 1024;

/// Records as bytes, in the order they were pushed until [`CompactRecords::sort_by_index`].
/// Once records have been spilled, a walk gives every record in index order.
#[derive(Debug, Clone, Default)]
pub struct CompactRecords {
    bytes: Vec<u8>,
    /// Where each record held in memory starts in `bytes`, in the records' order.
    starts: Vec<u64>,
    /// What precedes the index in a run's request ids (`bench-a3bc8c99-` of
    /// `bench-a3bc8c99-17`), learnt from the first record: such ids are not stored.
    id_prefix: Option<String>,
    /// The in-memory records are in index order (`sort_by_index` since the last push).
    sorted: bool,
    /// Records held in memory before they are written to disk (`None`: never).
    spill_at: Option<usize>,
    /// The records written to disk.
    spilled: Option<spill::Spilled>,
    /// Why writing to disk failed (the records stay in memory since).
    spill_failure: Option<String>,
}

impl CompactRecords {
    /// An empty store with room for `n` record starts.
    pub fn with_capacity(n: usize) -> Self {
        CompactRecords { starts: Vec::with_capacity(n), ..CompactRecords::default() }
    }

    /// An empty store that holds at most `max_in_memory` records (at least one) in memory:
    /// when it has that many, it writes them, in index order, to an unlinked temporary file
    /// and frees them (each such run is merged back by every walk: a run's store spills at
    /// least [`MIN_SPILL_RUN`] at a time). If writing fails, the records stay in memory
    /// ([`CompactRecords::spill_write_failure`] says why).
    pub fn spilling_beyond(max_in_memory: usize) -> Self {
        CompactRecords { spill_at: Some(max_in_memory.max(1)), ..CompactRecords::default() }
    }

    /// Room for `n` more record starts (no more than the store holds in memory).
    pub fn reserve(&mut self, n: usize) {
        let held = self.spill_at.map_or(n, |at| n.min(at.saturating_sub(self.starts.len())));
        self.starts.reserve(held);
    }

    /// Appends one record.
    pub fn push(&mut self, record: &RequestRecord) {
        let prefix = self.id_prefix.get_or_insert_with(|| {
            let digits = record.index.to_string();
            record.request_id.strip_suffix(digits.as_str()).unwrap_or_default().to_owned()
        });
        self.starts.push(self.bytes.len() as u64);
        codec::encode(record, prefix, &mut self.bytes);
        self.sorted = false;
        self.spill_if_full();
    }

    /// Appends one record's bytes (encoded with this store's id prefix).
    fn push_slot(&mut self, slot: &[u8]) {
        self.starts.push(self.bytes.len() as u64);
        self.bytes.extend_from_slice(slot);
        self.sorted = false;
        self.spill_if_full();
    }

    /// Whether the next push writes the records held in memory to disk.
    pub fn next_push_spills(&self) -> bool {
        self.spill_at.is_some_and(|at| self.starts.len() + 1 >= at)
    }

    fn spill_if_full(&mut self) {
        if self.spill_at.is_some_and(|at| self.starts.len() >= at) {
            self.spill();
        }
    }

    /// Writes the in-memory records to disk as one run, in index order, and frees them.
    fn spill(&mut self) {
        let slots = self.slots_by_index();
        let bytes = &self.bytes;
        let written = spill::write_run(
            &mut self.spilled,
            slots.iter().map(|&(start, end)| bytes.get(start..end).unwrap_or_default()),
        );
        match written {
            Ok(()) => {
                self.bytes.clear();
                self.starts.clear();
                self.sorted = true;
            }
            Err(e) => {
                self.spill_failure = Some(format!("writing records to a temporary file failed: {e}"));
                self.spill_at = None;
            }
        }
    }

    /// The in-memory records' byte ranges, in index order.
    fn slots_by_index(&self) -> Vec<(usize, usize)> {
        let mut by_address: Vec<usize> =
            self.starts.iter().map(|&s| usize::try_from(s).unwrap_or(usize::MAX)).collect();
        by_address.sort_unstable();
        let mut slots: Vec<(usize, usize)> = by_address
            .iter()
            .enumerate()
            .map(|(k, &start)| (start, by_address.get(k + 1).copied().unwrap_or(self.bytes.len())))
            .collect();
        slots.sort_by_key(|&(start, _)| self.index_at(start));
        slots
    }

    /// The workload index of the in-memory record starting at byte `start`.
    fn index_at(&self, start: usize) -> u64 {
        codec::index_of(self.bytes.get(start..).unwrap_or_default()).unwrap_or(u64::MAX)
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.starts.len() + self.spilled.as_ref().map_or(0, spill::Spilled::count)
    }

    /// No records.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes held in memory (the encoded records and their starts), for memory reports and
    /// tests.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.starts.capacity() * std::mem::size_of::<u64>()
    }

    /// Records written to disk so far, and the bytes they take there.
    pub fn spilled(&self) -> (usize, u64) {
        self.spilled.as_ref().map_or((0, 0), |s| (s.count(), s.disk_bytes()))
    }

    /// Why writing records to disk failed (they stayed in memory since; the figures are whole).
    pub fn spill_write_failure(&self) -> Option<&str> {
        self.spill_failure.as_deref()
    }

    /// Why reading spilled records back failed: a walk that met it stopped early, so figures
    /// computed since miss records (the run must not report them).
    pub fn spill_read_failure(&self) -> Option<String> {
        self.spilled.as_ref().and_then(spill::Spilled::read_failure)
    }

    fn slot(&self, i: usize) -> &[u8] {
        let start = usize::try_from(self.starts[i]).unwrap_or(usize::MAX);
        self.bytes.get(start..).unwrap_or_default()
    }

    /// Record `i` (panics when `i >= len()`, as slice indexing does). Once records have been
    /// spilled, `i` counts in index order and the walk is read up to it (past the end: an empty
    /// cancelled record, and a debug assertion).
    pub fn get(&self, i: usize) -> RequestRecord {
        if self.spilled.is_some() {
            return self.iter().nth(i).unwrap_or_else(|| {
                debug_assert!(false, "compact record {i} of {}", self.len());
                RequestRecord::scheduled(u64::MAX, String::new(), 0, 0, 0)
            });
        }
        // Bytes come only from `push`, and every value `encode` writes decodes (the round-trip
        // tests): `None` would be this module's bug, caught by the tests' debug assertion; a
        // release build gets an empty cancelled record rather than a panic.
        codec::decode_with_len(self.slot(i), self.id_prefix.as_deref().unwrap_or_default())
            .map(|(r, _)| r)
            .unwrap_or_else(|| {
                debug_assert!(false, "compact record {i} does not decode");
                RequestRecord::scheduled(u64::MAX, String::new(), 0, 0, 0)
            })
    }

    /// The records `keep` holds for, their bytes copied (the id prefix shared).
    pub fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'static> {
        let prefix = self.id_prefix.as_deref().unwrap_or_default();
        let mut out = CompactRecords {
            id_prefix: self.id_prefix.clone(),
            spill_at: self.spill_at,
            ..CompactRecords::default()
        };
        if let Some(spilled) = &self.spilled {
            // Spilled: walked in index order, and a large selection spills too, into the same
            // file (a failed read of its runs is noted where the store's owner looks).
            out.spilled = Some(spilled.sharing_file());
            self.iter().filter(|r| keep(r)).for_each(|r| out.push(&r));
            out.sorted = true; // pushed in index order
        } else {
            for i in 0..self.starts.len() {
                let slot = self.slot(i);
                let Some((record, len)) = codec::decode_with_len(slot, prefix) else { continue };
                if keep(&record) {
                    out.push_slot(&slot[..len]);
                }
            }
            out.sorted = self.sorted;
        }
        out.shrink_to_fit();
        Selection::Compact(out)
    }

    /// Every record, decoded one at a time: in the store's order, or in index order once
    /// records have been spilled.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RequestRecord> + '_ {
        let prefix = self.id_prefix.as_deref().unwrap_or_default();
        let (held, merged) = match &self.spilled {
            None => (Some((0..self.starts.len()).map(|i| self.get(i))), None),
            Some(spilled) => {
                let starts = match self.sorted {
                    true => self.starts.clone(),
                    false => self.slots_by_index().into_iter().map(|(start, _)| start as u64).collect(),
                };
                (None, Some(spill::Merged::new(spilled, &self.bytes, starts, prefix)))
            }
        };
        Walk { held, merged }
    }

    /// Orders the records by workload index (indices are unique: an unstable sort orders them
    /// as a stable one would). Only the starts move.
    pub fn sort_by_index(&mut self) {
        let mut starts = std::mem::take(&mut self.starts);
        starts.sort_unstable_by_key(|&s| self.index_at(usize::try_from(s).unwrap_or(usize::MAX)));
        self.starts = starts;
        self.sorted = true;
    }

    /// Every record as a [`RequestRecord`] (the size this store avoids: for outputs that need
    /// them all at once).
    pub fn to_vec(&self) -> Vec<RequestRecord> {
        self.iter().collect()
    }

    /// Frees what `push` reserved beyond what is used.
    pub fn shrink_to_fit(&mut self) {
        self.bytes.shrink_to_fit();
        self.starts.shrink_to_fit();
    }
}

/// [`CompactRecords::iter`]: the held records, or the merge of the spilled ones.
struct Walk<H, M> {
    held: Option<H>,
    merged: Option<M>,
}

impl<H, M> Iterator for Walk<H, M>
where
    H: Iterator<Item = RequestRecord>,
    M: Iterator<Item = RequestRecord>,
{
    type Item = RequestRecord;

    fn next(&mut self) -> Option<RequestRecord> {
        match (&mut self.held, &mut self.merged) {
            (Some(h), _) => h.next(),
            (None, Some(m)) => m.next(),
            (None, None) => None,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match (&self.held, &self.merged) {
            (Some(h), _) => h.size_hint(),
            (None, Some(m)) => m.size_hint(),
            (None, None) => (0, Some(0)),
        }
    }
}

impl<H, M> ExactSizeIterator for Walk<H, M>
where
    H: ExactSizeIterator<Item = RequestRecord>,
    M: ExactSizeIterator<Item = RequestRecord>,
{
}

impl From<&[RequestRecord]> for CompactRecords {
    fn from(records: &[RequestRecord]) -> Self {
        let mut c = CompactRecords::with_capacity(records.len());
        records.iter().for_each(|r| c.push(r));
        c
    }
}

impl From<Vec<RequestRecord>> for CompactRecords {
    fn from(records: Vec<RequestRecord>) -> Self {
        CompactRecords::from(records.as_slice())
    }
}

#[cfg(test)]
mod spill_tests;
#[cfg(test)]
mod tests;

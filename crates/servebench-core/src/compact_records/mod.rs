//! A run's records held in memory as bytes (`codec`): about a tenth of a [`RequestRecord`]'s
//! size for a short request (56 bytes against 568 plus its strings), so a run of a million
//! requests holds its records in about 64 MB instead of 650 (docs/performance.md, "Lazy
//! workload generation"). Every computation walks them through [`RecordSet`], decoding one
//! record at a time.

mod codec;
mod set;

pub use set::{Filtered, RecordSet, Selection};

use crate::RequestRecord;

/// Records as bytes, in the order they were pushed until [`CompactRecords::sort_by_index`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompactRecords {
    bytes: Vec<u8>,
    /// Where each record starts in `bytes`, in the records' order.
    starts: Vec<u64>,
    /// What precedes the index in a run's request ids (`bench-a3bc8c99-` of
    /// `bench-a3bc8c99-17`), learnt from the first record: such ids are not stored.
    id_prefix: Option<String>,
}

impl CompactRecords {
    /// An empty store with room for `n` record starts.
    pub fn with_capacity(n: usize) -> Self {
        CompactRecords { bytes: Vec::new(), starts: Vec::with_capacity(n), id_prefix: None }
    }

    /// Appends one record.
    pub fn push(&mut self, record: &RequestRecord) {
        let prefix = self.id_prefix.get_or_insert_with(|| {
            let digits = record.index.to_string();
            record.request_id.strip_suffix(digits.as_str()).unwrap_or_default().to_owned()
        });
        self.starts.push(self.bytes.len() as u64);
        codec::encode(record, prefix, &mut self.bytes);
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// No records.
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Bytes held (the encoded records and their starts), for memory reports and tests.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.starts.capacity() * std::mem::size_of::<u64>()
    }

    fn slot(&self, i: usize) -> &[u8] {
        let start = usize::try_from(self.starts[i]).unwrap_or(usize::MAX);
        self.bytes.get(start..).unwrap_or_default()
    }

    /// Record `i` (panics when `i >= len()`, as slice indexing does).
    pub fn get(&self, i: usize) -> RequestRecord {
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
        let mut out = CompactRecords { id_prefix: self.id_prefix.clone(), ..CompactRecords::default() };
        for i in 0..self.len() {
            let slot = self.slot(i);
            let Some((record, len)) = codec::decode_with_len(slot, prefix) else { continue };
            if keep(&record) {
                out.starts.push(out.bytes.len() as u64);
                out.bytes.extend_from_slice(&slot[..len]);
            }
        }
        out.shrink_to_fit();
        Selection::Compact(out)
    }

    /// Every record, decoded one at a time.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = RequestRecord> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Orders the records by workload index (indices are unique: an unstable sort orders them
    /// as a stable one would). Only the starts move.
    pub fn sort_by_index(&mut self) {
        let bytes = &self.bytes;
        let index_at = |s: &u64| {
            let start = usize::try_from(*s).unwrap_or(usize::MAX);
            codec::index_of(bytes.get(start..).unwrap_or_default()).unwrap_or(u64::MAX)
        };
        self.starts.sort_unstable_by_key(index_at);
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
mod tests;

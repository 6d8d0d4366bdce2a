//! [`RecordSet`]: what every end-of-run computation walks — a slice of records (a records file
//! read back, a test's records) or a run's [`CompactRecords`](super::CompactRecords), decoded
//! one at a time; a computation that needs more than one pass walks the set again.

use super::CompactRecords;
use crate::RequestRecord;
use std::borrow::Borrow;

/// Records a computation can walk, as many times as it needs.
pub trait RecordSet {
    /// A record as the walk gives it: a reference into a slice, or one decoded record.
    type Item<'a>: Borrow<RequestRecord>
    where
        Self: 'a;

    /// Every record, in the set's order (a run's: workload index).
    fn records(&self) -> impl Iterator<Item = Self::Item<'_>> + '_;

    /// The number of records.
    fn record_count(&self) -> usize;
}

impl<R: Borrow<RequestRecord>> RecordSet for [R] {
    type Item<'a>
        = &'a RequestRecord
    where
        R: 'a;

    fn records(&self) -> impl Iterator<Item = &RequestRecord> + '_ {
        self.iter().map(Borrow::borrow)
    }

    fn record_count(&self) -> usize {
        self.len()
    }
}

impl<R: Borrow<RequestRecord>> RecordSet for Vec<R> {
    type Item<'a>
        = &'a RequestRecord
    where
        R: 'a;

    fn records(&self) -> impl Iterator<Item = &RequestRecord> + '_ {
        self.iter().map(Borrow::borrow)
    }

    fn record_count(&self) -> usize {
        self.len()
    }
}

impl<R: Borrow<RequestRecord>, const N: usize> RecordSet for [R; N] {
    type Item<'a>
        = &'a RequestRecord
    where
        R: 'a;

    fn records(&self) -> impl Iterator<Item = &RequestRecord> + '_ {
        self.iter().map(Borrow::borrow)
    }

    fn record_count(&self) -> usize {
        N
    }
}

impl RecordSet for CompactRecords {
    type Item<'a> = RequestRecord;

    fn records(&self) -> impl Iterator<Item = RequestRecord> + '_ {
        self.iter()
    }

    fn record_count(&self) -> usize {
        self.len()
    }
}

/// The records of `set` that `keep` holds for (a group, a window), walked without a copy.
pub struct Filtered<'a, S: ?Sized, F> {
    set: &'a S,
    keep: F,
}

impl<'a, S: RecordSet + ?Sized, F: Fn(&RequestRecord) -> bool> Filtered<'a, S, F> {
    /// The records of `set` for which `keep` is true.
    pub fn new(set: &'a S, keep: F) -> Self {
        Filtered { set, keep }
    }
}

impl<'a, S: RecordSet + ?Sized, F: Fn(&RequestRecord) -> bool> RecordSet for Filtered<'a, S, F> {
    type Item<'b>
        = S::Item<'a>
    where
        Self: 'b;

    fn records(&self) -> impl Iterator<Item = S::Item<'a>> + '_ {
        self.set.records().filter(|r| (self.keep)(r.borrow()))
    }

    fn record_count(&self) -> usize {
        self.set.records().filter(|r| (self.keep)(r.borrow())).count()
    }
}

impl<S: ?Sized, F> std::fmt::Debug for Filtered<'_, S, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Filtered")
    }
}

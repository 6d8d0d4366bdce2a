//! [`RecordSet`]: what every end-of-run computation walks — a slice of records (a records file
//! read back, a test's records) or a run's [`CompactRecords`](super::CompactRecords), decoded
//! one at a time; a computation that needs more than one pass walks the set again.

use super::CompactRecords;
use crate::RequestRecord;
use std::borrow::{Borrow, Cow};

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

    /// The records `keep` holds for, as a set of their own (in the set's order): a group that
    /// is walked many times is then walked alone, not through the whole set.
    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_>;
}

/// Records selected from a set ([`RecordSet::select`]): references into a slice, or the bytes
/// of a run's compact records copied (a group's share of them, not its decoded records).
#[derive(Debug)]
pub enum Selection<'a> {
    Refs(Vec<&'a RequestRecord>),
    Compact(CompactRecords),
}

impl RecordSet for Selection<'_> {
    type Item<'b>
        = Cow<'b, RequestRecord>
    where
        Self: 'b;

    fn records(&self) -> impl Iterator<Item = Cow<'_, RequestRecord>> + '_ {
        let (refs, compact) = match self {
            Selection::Refs(v) => (Some(v.iter().map(|&r| Cow::Borrowed(r))), None),
            Selection::Compact(c) => (None, Some(c.iter().map(Cow::Owned))),
        };
        refs.into_iter().flatten().chain(compact.into_iter().flatten())
    }

    fn record_count(&self) -> usize {
        match self {
            Selection::Refs(v) => v.len(),
            Selection::Compact(c) => c.len(),
        }
    }

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        match self {
            Selection::Refs(v) => Selection::Refs(v.iter().copied().filter(|r| keep(r)).collect()),
            Selection::Compact(c) => c.select(keep),
        }
    }
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

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        Selection::Refs(self.iter().map(Borrow::borrow).filter(|r| keep(r)).collect())
    }
}

impl<R: Borrow<RequestRecord>> RecordSet for Vec<R> {
    type Item<'a>
        = &'a RequestRecord
    where
        R: 'a;

    fn records(&self) -> impl Iterator<Item = &RequestRecord> + '_ {
        self.as_slice().records()
    }

    fn record_count(&self) -> usize {
        self.len()
    }

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        self.as_slice().select(keep)
    }
}

impl<R: Borrow<RequestRecord>, const N: usize> RecordSet for [R; N] {
    type Item<'a>
        = &'a RequestRecord
    where
        R: 'a;

    fn records(&self) -> impl Iterator<Item = &RequestRecord> + '_ {
        self.as_slice().records()
    }

    fn record_count(&self) -> usize {
        N
    }

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        self.as_slice().select(keep)
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

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        CompactRecords::select(self, keep)
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

    fn select(&self, keep: &dyn Fn(&RequestRecord) -> bool) -> Selection<'_> {
        self.set.select(&|r| (self.keep)(r) && keep(r))
    }
}

impl<S: ?Sized, F> std::fmt::Debug for Filtered<'_, S, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Filtered")
    }
}

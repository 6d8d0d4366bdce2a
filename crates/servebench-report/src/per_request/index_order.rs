//! Per-request columns in workload-index order from any [`RecordSet`], without holding the
//! records: a run's set is already in index order; a records file read back is in arrival
//! order, and each record's value is put at its index's rank as the set is walked.

use super::Column;
use servebench_core::{RecordSet, RequestRecord};
use std::borrow::Borrow;

/// Where each record of a set goes in index order.
#[derive(Debug)]
pub struct IndexOrder {
    /// `rank[pos]`: the place of the set's `pos`-th record; `None` when the set is in order.
    rank: Option<Vec<usize>>,
    len: usize,
}

impl IndexOrder {
    /// The order of `records` (one walk; a second list only when they are out of order).
    pub fn of<S: RecordSet + ?Sized>(records: &S) -> IndexOrder {
        let indices: Vec<u64> = records.records().map(|r| r.borrow().index).collect();
        let len = indices.len();
        if indices.windows(2).all(|w| w[0] <= w[1]) {
            return IndexOrder { rank: None, len };
        }
        let mut by_index: Vec<usize> = (0..len).collect();
        by_index.sort_by_key(|&p| indices[p]);
        let mut rank = vec![0; len];
        for (place, pos) in by_index.into_iter().enumerate() {
            rank[pos] = place;
        }
        IndexOrder { rank: Some(rank), len }
    }

    /// The place of the set's `pos`-th record (`None` past the set `of` was given).
    fn place(&self, pos: usize) -> Option<usize> {
        match &self.rank {
            None => (pos < self.len).then_some(pos),
            Some(r) => r.get(pos).copied(),
        }
    }

    /// The number of records of the set `of` was given.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether that set was empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Calls `f(place, record)` for every record of `records` (the set `of` was given), in the
    /// set's order: one walk fills every column of a record at its place.
    pub fn walk<S, F>(&self, records: &S, mut f: F)
    where
        S: RecordSet + ?Sized,
        F: FnMut(usize, &RequestRecord),
    {
        for (pos, r) in records.records().enumerate() {
            if let Some(place) = self.place(pos) {
                f(place, r.borrow());
            }
        }
    }

    /// `f` of every record, in index order.
    pub fn values<S, T, F>(&self, records: &S, f: F) -> Vec<T>
    where
        S: RecordSet + ?Sized,
        T: Default + Clone,
        F: Fn(&RequestRecord) -> T,
    {
        let mut out = vec![T::default(); self.len];
        for (pos, r) in records.records().enumerate() {
            if let Some(slot) = self.place(pos).and_then(|p| out.get_mut(p)) {
                *slot = f(r.borrow());
            }
        }
        out
    }

    /// `gaps(r)` of every record as one [`Column::GapsSeconds`], in index order (two walks: the
    /// lengths, then the gaps into their places).
    pub fn gaps_column<S, F>(&self, records: &S, gaps: F) -> Column
    where
        S: RecordSet + ?Sized,
        F: Fn(&RequestRecord) -> &[u32],
    {
        let lens: Vec<usize> = self.values(records, |r| gaps(r).len());
        self.gaps_column_of_lens(records, &lens, gaps)
    }

    /// [`IndexOrder::gaps_column`] with each record's number of gaps known (in index order).
    pub fn gaps_column_of_lens<S, F>(&self, records: &S, lens: &[usize], gaps: F) -> Column
    where
        S: RecordSet + ?Sized,
        F: Fn(&RequestRecord) -> &[u32],
    {
        let mut ends = Vec::with_capacity(self.len);
        let mut total = 0;
        for n in lens {
            total += n;
            ends.push(total);
        }
        let mut gaps_us = vec![0u32; total];
        for (pos, r) in records.records().enumerate() {
            let Some(place) = self.place(pos) else { continue };
            let start = place.checked_sub(1).and_then(|p| ends.get(p).copied()).unwrap_or(0);
            let g = gaps(r.borrow());
            if let Some(dst) = gaps_us.get_mut(start..start + g.len()) {
                dst.copy_from_slice(g);
            }
        }
        Column::GapsSeconds { ends, gaps_us }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(index: u64, gaps: &[u32]) -> RequestRecord {
        let mut r = RequestRecord::scheduled(index, format!("r{index}"), 0, 1, 1);
        r.token_events.gaps_us = gaps.to_vec();
        r
    }

    #[test]
    fn columns_of_records_in_arrival_order_are_in_index_order() {
        let arrival = vec![rec(2, &[5]), rec(0, &[]), rec(3, &[7, 8]), rec(1, &[1, 2, 3])];
        let mut sorted = arrival.clone();
        sorted.sort_by_key(|r| r.index);
        for set in [&arrival, &sorted] {
            let order = IndexOrder::of(set.as_slice());
            assert_eq!(order.values(set.as_slice(), |r| r.request_id.clone()), ["r0", "r1", "r2", "r3"]);
            let Column::GapsSeconds { ends, gaps_us } =
                order.gaps_column(set.as_slice(), |r| &r.token_events.gaps_us)
            else {
                panic!("gaps")
            };
            assert_eq!((ends, gaps_us), (vec![0, 3, 4, 6], vec![1, 2, 3, 5, 7, 8]));
        }
        let compact = servebench_core::CompactRecords::from(arrival);
        assert_eq!(IndexOrder::of(&compact).values(&compact, |r| r.index), [0, 1, 2, 3]);
    }
}

//! What the dispatcher hands the executor for one request ([`Release`]): its place in the
//! workload, its intended and release times, the gates it passed and its prefill slot.

use tokio::sync::OwnedSemaphorePermit;

/// A prefill slot a request holds until its first token (`--max-prefill-concurrency`): the
/// executor hands the permit to the request, which drops it at its first generated content or
/// when it ends, whichever comes first.
#[derive(Debug)]
pub struct PrefillSlot {
    pub permit: OwnedSemaphorePermit,
    /// How long the request waited for it, µs.
    pub wait_us: u64,
}

/// Per-request facts the dispatcher hands to the executor.
#[derive(Debug)]
pub struct Release {
    /// Index in the workload.
    pub index: usize,
    /// Intended send time (µs from the origin).
    pub intended_us: u64,
    /// When the dispatcher released it (µs from the origin); lateness = released − intended.
    pub released_us: u64,
    /// The concurrency stage it was released in (closed loop); `None` on a schedule.
    pub stage: Option<u32>,
    /// When it passed the concurrency gate (µs from the origin; the release itself without a
    /// gate); `None` while waiting, and for a request that never passed. Gated requests pass
    /// FIFO, so this is non-decreasing in schedule order (`RequestRecord::gate_us`). With a
    /// prefill cap, when it also got its prefill slot.
    pub gate_us: Option<u64>,
    /// Its prefill slot (`--max-prefill-concurrency`), once it has one.
    pub prefill: Option<PrefillSlot>,
}

impl Release {
    /// A release that has passed no gate yet.
    pub fn new(index: usize, intended_us: u64, released_us: u64, stage: Option<u32>) -> Self {
        Release { index, intended_us, released_us, stage, gate_us: None, prefill: None }
    }
}

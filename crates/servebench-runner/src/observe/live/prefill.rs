//! Requests waiting for a prefill slot (`--max-prefill-concurrency`), for the live view: the
//! dashboard's and the progress line's "prefill-waiting". Created only when the run has a
//! prefill cap, so a run without one pays nothing for it (docs/metrics.md, "Live dashboard").

use std::sync::atomic::{AtomicU64, Ordering};

/// How many requests wait for a prefill slot now. Two relaxed atomics, touched only where a
/// request waits for a slot:
///
/// - `at_gate`: requests each waiting for a slot right now (the head of the in-order gate of a
///   scheduled run; each request's own wait in a closed loop or a conversation);
/// - `queued`: releases queued behind the in-order gate's head (scheduled runs). Requests pass
///   the gate in order, so while its head waits for a prefill slot every release behind it
///   waits for that slot too; while the head waits for a concurrency permit, they wait for
///   the permit and are not counted.
#[derive(Debug, Default)]
pub struct PrefillWaiting {
    at_gate: AtomicU64,
    queued: AtomicU64,
}

impl PrefillWaiting {
    /// A request starts waiting for a prefill slot.
    pub fn wait_started(&self) {
        self.at_gate.fetch_add(1, Ordering::Relaxed);
    }

    /// A request stopped waiting for a prefill slot (it got one, or the run stopped).
    pub fn wait_ended(&self) {
        let _ = self.at_gate.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// A release joined the in-order gate's queue.
    pub fn queued(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The in-order gate took a release off its queue.
    pub fn dequeued(&self) {
        let _ = self.queued.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
    }

    /// Requests waiting for a prefill slot now: those waiting at the gate, and, while any
    /// does, the releases queued behind it.
    pub fn now(&self) -> u64 {
        match self.at_gate.load(Ordering::Relaxed) {
            0 => 0,
            n => n + self.queued.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_queue_behind_the_gate_counts_only_while_a_request_waits_for_a_slot() {
        let w = PrefillWaiting::default();
        for _ in 0..3 {
            w.queued();
        }
        // The head waits for a concurrency permit: nobody waits for a prefill slot.
        assert_eq!(w.now(), 0);
        w.wait_started();
        assert_eq!(w.now(), 4);
        w.dequeued();
        w.wait_ended();
        assert_eq!(w.now(), 0);
        // Closed loop / conversations: each request waits on its own.
        w.wait_ended();
        assert_eq!(w.now(), 0, "never below zero");
    }
}

//! Session-tree metrics (agentic replay): per session, its duration, turns and sub-agent
//! branches; per tree depth, the TTFT of the turns at that depth. Definitions in
//! docs/metrics.md §Session trees. Computed from the records alone: a record belongs to a
//! session tree when it carries `agent_depth`; its session is `conversation`.

use crate::compact_records::RecordSet;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::collections::BTreeMap;

use super::request::RequestTimes;
use crate::record::Outcome;
use crate::stats::Summary;

/// TTFT of the completed turns at one tree depth.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DepthTtft {
    pub depth: u32,
    /// Completed turns at this depth with a first token.
    pub turns: usize,
    /// Service TTFT (`first_token − dispatched`), ms.
    pub ttft_ms: Summary,
}

/// The session-tree summary of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionTreeMetrics {
    /// Sessions with at least one record.
    pub sessions: usize,
    /// Sessions whose every turn completed.
    pub completed: usize,
    /// Sessions with at least one failed turn.
    pub failed: usize,
    /// Sessions with no failed turn and at least one cancelled one (the run stopped them).
    pub cancelled: usize,
    /// Turns (records) by outcome: completed + failed + cancelled = every turn.
    pub turns: TurnCounts,
    /// Duration of each completed session (its last turn's end − its first turn's dispatch), ms;
    /// None without a completed session.
    pub duration_ms: Option<Summary>,
    /// Mean turns (records) per session.
    pub turns_per_session: f64,
    /// Tool-result turns (every outcome).
    pub tool_turns: usize,
    /// Mean sub-agent branches (distinct `agent_branch` > 0) per session.
    pub branches_per_session: f64,
    /// TTFT by tree depth, increasing depth; depths without a completed turn are left out.
    pub ttft_by_depth: Vec<DepthTtft>,
}

/// Session-tree turns by how they ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnCounts {
    pub completed: usize,
    pub failed: usize,
    pub cancelled: usize,
}

impl TurnCounts {
    fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Completed => self.completed += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Cancelled => self.cancelled += 1,
        }
    }
}

#[derive(Default)]
struct Acc {
    turns: usize,
    outcomes: TurnCounts,
    all_completed: bool,
    first_dispatch: Option<u64>,
    last_end: Option<u64>,
    branches: std::collections::BTreeSet<u32>,
}

/// The session-tree summary of `records` (None when no record is a session-tree turn).
/// `percentiles` are those of the run (0..=100).
pub fn session_tree_metrics<S: RecordSet + ?Sized>(
    records: &S,
    percentiles: &[f64],
) -> Option<SessionTreeMetrics> {
    let mut sessions: BTreeMap<u64, Acc> = BTreeMap::new();
    let mut by_depth: BTreeMap<u32, Vec<f64>> = BTreeMap::new();
    let mut tool_turns = 0;
    for r in records.records() {
        let r = r.borrow();
        let (Some(depth), Some(session)) = (r.agent_depth, r.conversation) else { continue };
        let acc = sessions.entry(session).or_insert_with(|| Acc { all_completed: true, ..Acc::default() });
        acc.turns += 1;
        acc.outcomes.add(r.outcome);
        acc.all_completed &= r.outcome == Outcome::Completed;
        tool_turns += usize::from(r.agent_tool == Some(true));
        if let Some(b) = r.agent_branch.filter(|&b| b > 0) {
            acc.branches.insert(b);
        }
        if let Some(d) = r.dispatched_us {
            acc.first_dispatch = Some(acc.first_dispatch.map_or(d, |f| f.min(d)));
        }
        if let Some(e) = r.done_us.or(r.last_token_us) {
            acc.last_end = Some(acc.last_end.map_or(e, |l| l.max(e)));
        }
        if r.outcome == Outcome::Completed {
            if let Some(t) = RequestTimes::of(r).ttft_us {
                by_depth.entry(depth).or_default().push(t as f64 / 1000.0);
            }
        }
    }
    if sessions.is_empty() {
        return None;
    }
    let n = sessions.len();
    let durations: Vec<f64> = sessions
        .values()
        .filter(|a| a.all_completed)
        .filter_map(|a| Some(a.last_end?.saturating_sub(a.first_dispatch?) as f64 / 1000.0))
        .collect();
    let mut turns = TurnCounts::default();
    for a in sessions.values() {
        turns.completed += a.outcomes.completed;
        turns.failed += a.outcomes.failed;
        turns.cancelled += a.outcomes.cancelled;
    }
    Some(SessionTreeMetrics {
        sessions: n,
        completed: sessions.values().filter(|a| a.all_completed).count(),
        failed: sessions.values().filter(|a| a.outcomes.failed > 0).count(),
        cancelled: sessions.values().filter(|a| a.outcomes.failed == 0 && a.outcomes.cancelled > 0).count(),
        turns,
        tool_turns,
        duration_ms: (!durations.is_empty()).then(|| Summary::of(&durations, percentiles)),
        turns_per_session: sessions.values().map(|a| a.turns as f64).sum::<f64>() / n as f64,
        branches_per_session: sessions.values().map(|a| a.branches.len() as f64).sum::<f64>() / n as f64,
        ttft_by_depth: by_depth
            .into_iter()
            .map(|(depth, v)| DepthTtft { depth, turns: v.len(), ttft_ms: Summary::of(&v, percentiles) })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::RequestRecord;

    /// A turn of `session` at `depth`/`branch`, dispatched at `d` µs, first token at `f`, done at
    /// `e`; `f = None` for a failed turn.
    fn turn(session: u64, depth: u32, branch: u32, d: u64, f: Option<u64>, e: u64) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, String::new(), d, 10, 5);
        r.conversation = Some(session);
        r.agent_depth = Some(depth);
        r.agent_branch = Some(branch);
        r.dispatched_us = Some(d);
        r.done_us = Some(e);
        match f {
            Some(f) => {
                r.first_token_us = Some(f);
                r.last_token_us = Some(e);
                r.outcome = Outcome::Completed;
            }
            None => r.fail(crate::record::ErrorKind::HttpStatus, "boom"),
        }
        r
    }

    #[test]
    fn session_tree_metrics_match_hand_computed_values() {
        // Session 0: root (0..10 ms, TTFT 2 ms), two branches at depth 1 (TTFT 3 and 5 ms),
        // join at depth 0 (TTFT 4 ms) ending at 50 ms → duration 50 ms, 4 turns, 2 branches.
        // Session 1: one turn 100..130 ms (TTFT 6 ms), then a failed turn: not completed.
        let records = vec![
            turn(0, 0, 0, 0, Some(2_000), 10_000),
            turn(0, 1, 1, 11_000, Some(14_000), 30_000),
            turn(0, 1, 2, 11_000, Some(16_000), 35_000),
            turn(0, 0, 0, 36_000, Some(40_000), 50_000),
            turn(1, 0, 0, 100_000, Some(106_000), 130_000),
            turn(1, 1, 1, 131_000, None, 132_000),
            RequestRecord::scheduled(9, String::new(), 0, 1, 1), // not a session-tree turn
        ];
        let mut records = records;
        records[2].agent_tool = Some(true);
        records[5].agent_tool = Some(true);
        // Session 2: its only turn cancelled (the run stopped before it was sent).
        let mut stopped = turn(2, 0, 0, 200_000, None, 200_000);
        stopped.outcome = Outcome::Cancelled;
        stopped.error = None;
        let m = session_tree_metrics(&records, &[50.0]).unwrap();
        assert_eq!((m.sessions, m.completed, m.failed, m.cancelled), (2, 1, 1, 0));
        assert_eq!(m.turns, TurnCounts { completed: 5, failed: 1, cancelled: 0 });
        assert_eq!(m.tool_turns, 2);
        records.push(stopped);
        let with_stopped = session_tree_metrics(&records, &[50.0]).unwrap();
        assert_eq!(
            (with_stopped.sessions, with_stopped.completed, with_stopped.failed, with_stopped.cancelled),
            (3, 1, 1, 1)
        );
        assert_eq!(with_stopped.turns, TurnCounts { completed: 5, failed: 1, cancelled: 1 });
        let d = m.duration_ms.unwrap();
        assert_eq!((d.count, d.mean), (1, 50.0));
        assert_eq!(m.turns_per_session, 3.0); // (4 + 2) / 2
        assert_eq!(m.branches_per_session, 1.5); // (2 + 1) / 2
        assert_eq!(m.ttft_by_depth.len(), 2);
        let d0 = &m.ttft_by_depth[0];
        assert_eq!((d0.depth, d0.turns), (0, 3));
        assert_eq!(d0.ttft_ms.mean, 4.0); // (2 + 4 + 6) / 3
        let d1 = &m.ttft_by_depth[1];
        assert_eq!((d1.depth, d1.turns, d1.ttft_ms.mean, d1.ttft_ms.median), (1, 2, 4.0, 4.0));
    }

    #[test]
    fn session_tree_metrics_are_none_without_tree_turns_and_duration_null_without_completion() {
        assert!(session_tree_metrics(&[RequestRecord::scheduled(0, String::new(), 0, 1, 1)], &[]).is_none());
        let m = session_tree_metrics(&[turn(3, 0, 0, 0, None, 5)], &[]).unwrap();
        assert_eq!((m.sessions, m.completed), (1, 0));
        assert!(m.duration_ms.is_none());
        assert!(m.ttft_by_depth.is_empty());
    }
}

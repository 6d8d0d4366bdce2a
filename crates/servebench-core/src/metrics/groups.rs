//! Metrics of groups of requests: per turn (multi-turn), per stage (`--stages`), the
//! conversation summary, and how far dispatch lagged the arrival schedule (trace replay).
//!
//! A group's metrics are [`compute`] over the group's records alone, so every throughput divides
//! by the group's own active window (its first dispatch to its last end), not by the whole run.

use serde::{Deserialize, Serialize};

use super::{compute, MetricsConfig, RunMetrics};
use crate::compact_records::RecordSet;
use crate::record::{Outcome, RequestRecord};
use crate::stats::{percentile, Summary};
use std::borrow::Borrow;

/// [`compute`] over the records sharing each value of `key` (records with no key are left
/// out), in increasing key order.
pub fn by_key<S: RecordSet + ?Sized>(
    records: &S,
    cfg: &MetricsConfig,
    key: impl Fn(&RequestRecord) -> Option<u32>,
) -> Vec<(u32, RunMetrics)> {
    let mut keys: Vec<u32> = records.records().filter_map(|r| key(r.borrow())).collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            // Selected once (references into a slice, a run's record bytes copied — a group of a
            // million records cloned doubled the finish's memory), then walked alone by `compute`.
            let group = records.select(&|r| key(r) == Some(k));
            (k, compute(&group, cfg))
        })
        .collect()
}

/// Metrics of each turn index (multi-turn runs).
pub fn by_turn<S: RecordSet + ?Sized>(records: &S, cfg: &MetricsConfig) -> Vec<(u32, RunMetrics)> {
    by_key(records, cfg, |r| r.turn)
}

/// Metrics of each stage (`--stages` runs).
pub fn by_stage<S: RecordSet + ?Sized>(records: &S, cfg: &MetricsConfig) -> Vec<(u32, RunMetrics)> {
    by_key(records, cfg, |r| r.stage)
}

/// Conversations of a multi-turn run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConversationSummary {
    pub conversations: u64,
    /// Conversations whose every turn completed.
    pub completed: u64,
    /// Conversations with a failed turn (the conversation stops there).
    pub failed: u64,
    /// Mean number of completed turns per conversation.
    pub avg_turns_completed: f64,
    /// Mean over conversations with a completed turn of first dispatch → last completed
    /// turn's end (think time included), ms; `None` when no conversation completed a turn.
    pub avg_duration_ms: Option<f64>,
}

/// The conversation summary; `None` when no record belongs to a conversation.
pub fn conversations<S: RecordSet + ?Sized>(records: &S) -> Option<ConversationSummary> {
    use std::collections::BTreeMap;
    #[derive(Default)]
    struct Conv {
        turns: u64,
        completed: u64,
        failed: bool,
        first_dispatch: Option<u64>,
        last_end: Option<u64>,
    }
    let mut convs: BTreeMap<u64, Conv> = BTreeMap::new();
    for r in records.records() {
        let r = r.borrow();
        // Session-tree turns have their own summary (`agentic`): a tree's turn index is no
        // position in a line of turns.
        let (Some(c), None) = (r.conversation, r.agent_depth) else { continue };
        let e = convs.entry(c).or_default();
        e.turns += 1;
        if let Some(d) = r.dispatched_us {
            e.first_dispatch = Some(e.first_dispatch.map_or(d, |f| f.min(d)));
        }
        match r.outcome {
            Outcome::Completed => {
                e.completed += 1;
                if let Some(end) = r.done_us {
                    e.last_end = Some(e.last_end.map_or(end, |l| l.max(end)));
                }
            }
            Outcome::Failed => e.failed = true,
            Outcome::Cancelled => {}
        }
    }
    if convs.is_empty() {
        return None;
    }
    let n = convs.len() as u64;
    let durations: Vec<f64> = convs
        .values()
        .filter_map(|c| Some(c.last_end?.saturating_sub(c.first_dispatch?) as f64 / 1000.0))
        .collect();
    Some(ConversationSummary {
        conversations: n,
        completed: convs.values().filter(|c| c.completed == c.turns).count() as u64,
        failed: convs.values().filter(|c| c.failed).count() as u64,
        avg_turns_completed: convs.values().map(|c| c.completed as f64).sum::<f64>() / n as f64,
        avg_duration_ms: (!durations.is_empty())
            .then(|| durations.iter().sum::<f64>() / durations.len() as f64),
    })
}

/// How far sending lagged the arrival schedule: `dispatched − intended` over every dispatched
/// request (any outcome), ms.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ScheduleLag {
    /// Requests dispatched.
    pub dispatched: u64,
    /// Requests never dispatched (stopped first).
    pub not_dispatched: u64,
    pub lag_ms: Summary,
    /// Requests dispatched more than 10 ms after their intended time.
    pub late_over_10ms: u64,
    /// The largest lag, ms (`None` without dispatched requests).
    pub max_ms: Option<f64>,
}

/// The schedule lag of `records` with the percentiles of `percentiles` (p50 and p99 are
/// always included).
pub fn schedule_lag<S: RecordSet + ?Sized>(records: &S, percentiles: &[f64]) -> ScheduleLag {
    let lags = lags_us(records);
    let mut pct: Vec<f64> = vec![50.0, 99.0];
    pct.extend(percentiles.iter().copied().filter(|p| *p != 50.0 && *p != 99.0));
    let late = lags.iter().filter(|&&l| l > 10_000.0).count() as u64;
    ScheduleLag {
        dispatched: lags.len() as u64,
        not_dispatched: records.record_count() as u64 - lags.len() as u64,
        lag_ms: Summary::of(&lags, &pct).scaled(1.0 / 1000.0),
        late_over_10ms: late,
        max_ms: (!lags.is_empty()).then(|| percentile(&lags, 100.0) / 1000.0),
    }
}

/// `dispatched − intended` of every dispatched request, µs.
fn lags_us<S: RecordSet + ?Sized>(records: &S) -> Vec<f64> {
    records
        .records()
        .filter_map(|r| {
            let r = r.borrow();
            r.dispatched_us.map(|d| d.saturating_sub(r.intended_us) as f64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// A completed request: dispatched at `d`, first token at `d + 10 ms`, done at `end`.
    fn rec(i: u64, intended: u64, d: u64, end: u64, prompt: u32, out: u32) -> RequestRecord {
        let mut r = RequestRecord::scheduled(i, format!("r{i}"), intended, prompt, out);
        r.outcome = Outcome::Completed;
        r.dispatched_us = Some(d);
        r.first_token_us = Some(d + 10_000);
        r.last_token_us = Some(end);
        r.done_us = Some(end);
        r.completion_tokens = Some(out);
        r.token_event_count = out;
        r
    }

    #[test]
    fn conversations_leave_session_tree_turns_to_their_own_summary() {
        let mut a = rec(0, 0, 0, 1_000_000, 100, 10);
        a.conversation = Some(0);
        a.turn = Some(0);
        assert_eq!(conversations(std::slice::from_ref(&a)).map(|c| c.conversations), Some(1));
        a.agent_depth = Some(0);
        assert!(conversations(&[a]).is_none());
    }

    #[test]
    fn each_turn_divides_by_its_own_window() {
        // Turn 0: two requests over [0, 1 s]; turn 1: one request over [3 s, 5 s].
        let mut a = rec(0, 0, 0, 1_000_000, 100, 10);
        a.turn = Some(0);
        let mut b = rec(1, 0, 500_000, 1_000_000, 300, 30);
        b.turn = Some(0);
        let mut c = rec(2, 3_000_000, 3_000_000, 5_000_000, 500, 20);
        c.turn = Some(1);
        let cfg = MetricsConfig::default();
        let turns = by_turn(&[a, b, c], &cfg);
        assert_eq!(turns.len(), 2);
        let (k0, m0) = &turns[0];
        assert_eq!(*k0, 0);
        assert_eq!(m0.duration_s, 1.0);
        assert_eq!(m0.total_input_tokens, 400);
        assert_eq!(m0.input_throughput, 400.0);
        assert_eq!(m0.output_throughput, 40.0);
        assert_eq!(m0.request_throughput, 2.0);
        let (k1, m1) = &turns[1];
        assert_eq!(*k1, 1);
        assert_eq!(m1.duration_s, 2.0);
        assert_eq!(m1.input_throughput, 250.0);
        assert_eq!(m1.output_throughput, 10.0);
    }

    #[test]
    fn stages_group_by_stage_index() {
        let mut a = rec(0, 0, 0, 2_000_000, 10, 4);
        a.stage = Some(1);
        let b = rec(1, 0, 0, 1_000_000, 10, 4);
        let s = by_stage(&[a, b], &MetricsConfig::default());
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].0, 1);
        assert_eq!(s[0].1.completed, 1);
        assert_eq!(s[0].1.duration_s, 2.0);
    }

    #[test]
    fn conversation_summary_by_hand() {
        // Conversation 0: two completed turns, first dispatch 1 ms, last end 9 ms.
        // Conversation 1: turn 0 completed (2 → 4 ms), turn 1 failed, turn 2 never sent.
        let mut r = vec![
            rec(0, 0, 1_000, 3_000, 1, 1),
            rec(1, 0, 6_000, 9_000, 1, 1),
            rec(2, 0, 2_000, 4_000, 1, 1),
            rec(3, 0, 5_000, 6_000, 1, 1),
            RequestRecord::scheduled(4, "r4".into(), 0, 1, 1),
        ];
        r[3].fail(crate::record::ErrorKind::HttpStatus, "HTTP 500");
        for (i, x) in r.iter_mut().enumerate() {
            x.conversation = Some(if i < 2 { 0 } else { 1 });
        }
        let s = conversations(&r).unwrap();
        assert_eq!(s.conversations, 2);
        assert_eq!(s.completed, 1);
        assert_eq!(s.failed, 1);
        assert_eq!(s.avg_turns_completed, 1.5);
        // (9 − 1) and (4 − 2) ms.
        assert_eq!(s.avg_duration_ms, Some(5.0));
        assert!(conversations(&[rec(0, 0, 0, 1, 1, 1)]).is_none());
    }

    #[test]
    fn lag_is_dispatch_minus_intended() {
        let a = rec(0, 1_000, 3_000, 9_000, 1, 1); // 2 ms
        let b = rec(1, 1_000, 15_000, 20_000, 1, 1); // 14 ms
        let c = RequestRecord::scheduled(2, "c".into(), 0, 1, 1);
        let l = schedule_lag(&[a.clone(), b.clone(), c], &[90.0]);
        assert_eq!(l.dispatched, 2);
        assert_eq!(l.not_dispatched, 1);
        assert_eq!(l.late_over_10ms, 1);
        assert_eq!(l.lag_ms.mean, 8.0);
        assert_eq!(l.lag_ms.median, 8.0);
        assert_eq!(l.max_ms, Some(14.0));
        assert_eq!(schedule_lag(&[a, b], &[]).max_ms, Some(14.0));
        assert_eq!(schedule_lag::<[RequestRecord]>(&[], &[]).max_ms, None);
    }
}

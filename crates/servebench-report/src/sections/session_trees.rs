//! Session trees (agentic replay) in the result JSON (`session_trees`) and the console block:
//! sessions and turns by outcome, tool turns, turns and sub-agent branches per session, session
//! duration and TTFT by tree depth (definitions: docs/metrics.md, "Session trees"). Present
//! only for session-tree runs; a figure without data is `null` / "n/a".

use std::fmt::Write as _;

use serde_json::{json, Map, Value};
use servebench_core::metrics::agentic::SessionTreeMetrics;
use servebench_core::stats::Summary;

use crate::fmt::{banner, insert_stats, percentile_word, row_int, row_opt_f2};

/// The session duration summary, or one without data (every figure `null`).
fn duration(m: &SessionTreeMetrics, percentiles: &[f64]) -> Summary {
    m.duration_ms.clone().unwrap_or_else(|| Summary::of(&[], percentiles))
}

/// The `session_trees` object of the result JSON.
pub fn json(m: &SessionTreeMetrics, percentiles: &[f64]) -> Value {
    let mut o = Map::new();
    o.insert("sessions".into(), json!(m.sessions));
    o.insert("completed_sessions".into(), json!(m.completed));
    o.insert("failed_sessions".into(), json!(m.failed));
    o.insert("cancelled_sessions".into(), json!(m.cancelled));
    let t = m.turns;
    o.insert(
        "turns".into(),
        json!({"total": t.completed + t.failed + t.cancelled, "completed": t.completed, "failed": t.failed, "cancelled": t.cancelled}),
    );
    o.insert("tool_turns".into(), json!(m.tool_turns));
    o.insert("turns_per_session".into(), json!(m.turns_per_session));
    o.insert("branches_per_session".into(), json!(m.branches_per_session));
    insert_stats(&mut o, "session_duration", &duration(m, percentiles));
    let depths: Vec<Value> = m
        .ttft_by_depth
        .iter()
        .map(|d| {
            let mut e = Map::new();
            e.insert("depth".into(), json!(d.depth));
            e.insert("turns".into(), json!(d.turns));
            insert_stats(&mut e, "ttft", &d.ttft_ms);
            Value::Object(e)
        })
        .collect();
    o.insert("ttft_by_depth".into(), Value::Array(depths));
    Value::Object(o)
}

/// The console block: one line per figure, one per tree depth.
pub fn console(out: &mut String, m: &SessionTreeMetrics, percentiles: &[f64]) {
    banner(out, "Session trees (agentic replay)", '-');
    row_int(
        out,
        "Sessions (completed/failed/cancelled):",
        format!("{} ({}/{}/{})", m.sessions, m.completed, m.failed, m.cancelled),
    );
    let t = m.turns;
    row_int(
        out,
        "Turns (completed/failed/cancelled):",
        format!("{} ({}/{}/{})", t.completed + t.failed + t.cancelled, t.completed, t.failed, t.cancelled),
    );
    row_int(out, "Tool turns:", m.tool_turns);
    row_opt_f2(out, "Turns per session:", Some(m.turns_per_session));
    row_opt_f2(out, "Sub-agent branches per session:", Some(m.branches_per_session));
    let d = duration(m, percentiles);
    let has = d.count > 0;
    row_opt_f2(out, "Mean session duration (ms):", has.then_some(d.mean));
    row_opt_f2(out, "Median session duration (ms):", has.then_some(d.median));
    for &(p, v) in &d.percentiles {
        row_opt_f2(out, &format!("P{} session duration (ms):", percentile_word(p)), has.then_some(v));
    }
    for dep in &m.ttft_by_depth {
        let s = &dep.ttft_ms;
        let tail =
            s.percentiles.last().map_or(String::new(), |&(p, v)| format!(", p{} {v:.2}", percentile_word(p)));
        let _ = writeln!(
            out,
            "{:<40} mean {:.2}, median {:.2}{tail} ({} turns)",
            format!("TTFT at depth {} (ms):", dep.depth),
            s.mean,
            s.median,
            dep.turns
        );
    }
    if m.ttft_by_depth.is_empty() {
        row_int(out, "TTFT by depth (ms):", "n/a");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::metrics::agentic::{DepthTtft, TurnCounts};

    fn metrics(duration: Option<Summary>) -> SessionTreeMetrics {
        let p = [99.0];
        SessionTreeMetrics {
            sessions: 3,
            completed: 1,
            failed: 1,
            cancelled: 1,
            turns: TurnCounts { completed: 5, failed: 1, cancelled: 2 },
            tool_turns: 2,
            duration_ms: duration,
            turns_per_session: 8.0 / 3.0,
            branches_per_session: 1.0,
            ttft_by_depth: vec![
                DepthTtft { depth: 0, turns: 3, ttft_ms: Summary::of(&[2.0, 4.0, 6.0], &p) },
                DepthTtft { depth: 1, turns: 2, ttft_ms: Summary::of(&[3.0, 5.0], &p) },
            ],
        }
    }

    #[test]
    fn session_tree_json_and_console_snapshot() {
        let m = metrics(Some(Summary::of(&[50.0], &[99.0])));
        let mut out = String::new();
        console(&mut out, &m, &[99.0]);
        insta::assert_snapshot!("session_tree_console", out);
        insta::assert_snapshot!(
            "session_tree_json",
            serde_json::to_string_pretty(&json(&m, &[99.0])).unwrap()
        );
    }

    #[test]
    fn session_duration_without_a_completed_session_is_null_and_n_a() {
        let m = metrics(None);
        let v = json(&m, &[99.0]);
        assert_eq!(v["mean_session_duration_ms"], Value::Null);
        assert_eq!(v["p99_session_duration_ms"], Value::Null);
        assert_eq!(v["turns"]["total"], json!(8));
        let mut out = String::new();
        console(&mut out, &m, &[99.0]);
        assert!(out.contains("Mean session duration (ms):              n/a"), "{out}");
    }
}

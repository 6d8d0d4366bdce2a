//! The "Session trees" section of the HTML report: per run, sessions and turns by outcome, tool
//! turns, turns and branches per session, session duration and TTFT by tree depth
//! (docs/metrics.md, "Session trees"). Only when a run replayed session trees; a figure without
//! data is "–". The percentile rows follow the runs' `--metric-percentiles`
//! ([`ReportRun::percentiles`]).

use std::fmt::Write as _;

use servebench_core::metrics::agentic::SessionTreeMetrics;
use servebench_core::stats::Summary;

use super::svg::{esc, run_color};
use super::ReportRun;
use crate::fmt::percentile_word;

fn fixed(v: Option<f64>) -> String {
    v.filter(|v| v.is_finite()).map_or_else(|| "–".to_owned(), |v| format!("{v:.2}"))
}

fn pct(s: &Summary, p: f64) -> Option<f64> {
    (s.count > 0).then(|| s.percentile(p)).flatten()
}

/// A row: its label and the cell it shows for a run's metrics.
type Cell = Box<dyn Fn(&SessionTreeMetrics) -> String>;

/// The rows, with a duration row per percentile of `percentiles` and two rows plus one per
/// percentile per tree depth up to `max_depth`.
fn rows(max_depth: Option<u32>, percentiles: &[f64]) -> Vec<(String, Cell)> {
    let mut rows: Vec<(String, Cell)> = vec![
        ("sessions".into(), Box::new(|m| m.sessions.to_string())),
        (
            "completed / failed / cancelled sessions".into(),
            Box::new(|m| format!("{} / {} / {}", m.completed, m.failed, m.cancelled)),
        ),
        (
            "turns completed / failed / cancelled".into(),
            Box::new(|m| format!("{} / {} / {}", m.turns.completed, m.turns.failed, m.turns.cancelled)),
        ),
        ("tool turns".into(), Box::new(|m| m.tool_turns.to_string())),
        ("turns per session".into(), Box::new(|m| fixed(Some(m.turns_per_session)))),
        ("sub-agent branches per session".into(), Box::new(|m| fixed(Some(m.branches_per_session)))),
        ("session duration mean (ms)".into(), Box::new(|m| fixed(m.duration_ms.as_ref().map(|d| d.mean)))),
        ("session duration p50 (ms)".into(), Box::new(|m| fixed(m.duration_ms.as_ref().map(|d| d.median)))),
    ];
    for &p in percentiles {
        rows.push((
            format!("session duration p{} (ms)", percentile_word(p)),
            Box::new(move |m: &SessionTreeMetrics| fixed(m.duration_ms.as_ref().and_then(|d| pct(d, p)))),
        ));
    }
    for depth in 0..=max_depth.unwrap_or(0) {
        if max_depth.is_none() {
            break;
        }
        let at = move |m: &SessionTreeMetrics| m.ttft_by_depth.iter().find(|d| d.depth == depth).cloned();
        rows.push((
            format!("TTFT mean at depth {depth} (ms)"),
            Box::new(move |m| fixed(at(m).map(|d| d.ttft_ms.mean))),
        ));
        for &p in percentiles {
            rows.push((
                format!("TTFT p{} at depth {depth} (ms)", percentile_word(p)),
                Box::new(move |m: &SessionTreeMetrics| fixed(at(m).and_then(|d| pct(&d.ttft_ms, p)))),
            ));
        }
        rows.push((
            format!("turns at depth {depth} with a TTFT"),
            Box::new(move |m| at(m).map_or("0".into(), |d| d.turns.to_string())),
        ));
    }
    rows
}

/// Appends the section when a run has session trees.
pub(super) fn section(o: &mut String, runs: &[ReportRun]) {
    if runs.iter().all(|r| r.metrics.session_trees.is_none()) {
        return;
    }
    let max_depth = runs
        .iter()
        .filter_map(|r| r.metrics.session_trees.as_ref())
        .flat_map(|m| m.ttft_by_depth.iter().map(|d| d.depth))
        .max();
    o.push_str(
        "<h2>Session trees</h2>\n<table class=\"summary\" id=\"session-trees\"><thead><tr><th>metric</th>",
    );
    for (i, r) in runs.iter().enumerate() {
        let _ = write!(
            o,
            "<th><span class=\"swatch\" style=\"background:{}\"></span> {}</th>",
            run_color(i),
            esc(&r.label)
        );
    }
    o.push_str("</tr></thead><tbody>\n");
    // Every run's percentiles, in the order first seen (runs of one report may differ).
    let mut percentiles: Vec<f64> = Vec::new();
    for p in runs.iter().flat_map(|r| r.percentiles.iter().copied()) {
        if !percentiles.contains(&p) {
            percentiles.push(p);
        }
    }
    for (label, cell) in rows(max_depth, &percentiles) {
        let _ = write!(o, "<tr><td>{}</td>", esc(&label));
        for r in runs {
            let v = r.metrics.session_trees.as_ref().map_or_else(|| "–".to_owned(), &cell);
            let _ = write!(o, "<td>{}</td>", esc(&v));
        }
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table>\n<p class=\"sub\">Session duration: first dispatch to last byte of sessions whose every turn completed; TTFT by depth: completed turns, from dispatch (docs/metrics.md, \"Session trees\").</p>\n");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::metrics::agentic::{DepthTtft, TurnCounts};

    #[test]
    fn session_tree_html_section_snapshot_and_absent_without_trees() {
        let p = [99.0];
        let m = SessionTreeMetrics {
            sessions: 2,
            completed: 1,
            failed: 1,
            cancelled: 0,
            turns: TurnCounts { completed: 5, failed: 1, cancelled: 0 },
            tool_turns: 2,
            duration_ms: Some(Summary::of(&[50.0], &p)),
            turns_per_session: 3.0,
            branches_per_session: 1.5,
            ttft_by_depth: vec![
                DepthTtft { depth: 0, turns: 3, ttft_ms: Summary::of(&[2.0, 4.0, 6.0], &p) },
                DepthTtft { depth: 1, turns: 2, ttft_ms: Summary::of(&[3.0, 5.0], &p) },
            ],
        };
        let mut run = ReportRun::new("tree", crate::html::tests::header("tree"), Vec::new(), vec![]);
        let mut o = String::new();
        section(&mut o, std::slice::from_ref(&run));
        assert!(o.is_empty());
        run.metrics.session_trees = Some(m);
        section(&mut o, std::slice::from_ref(&run));
        insta::assert_snapshot!("session_tree_html", o);
    }

    #[test]
    fn session_tree_percentile_rows_follow_the_runs_metric_percentiles() {
        let m = |p: &[f64]| SessionTreeMetrics {
            sessions: 4,
            completed: 4,
            failed: 0,
            cancelled: 0,
            turns: TurnCounts { completed: 4, failed: 0, cancelled: 0 },
            tool_turns: 0,
            duration_ms: Some(Summary::of(&[10.0, 20.0, 30.0, 40.0], p)),
            turns_per_session: 1.0,
            branches_per_session: 0.0,
            ttft_by_depth: vec![DepthTtft {
                depth: 0,
                turns: 4,
                ttft_ms: Summary::of(&[1.0, 2.0, 3.0, 4.0], p),
            }],
        };
        let mut run = ReportRun::new("tree", crate::html::tests::header("tree"), Vec::new(), vec![]);
        run.metrics.session_trees = Some(m(&[50.0, 95.0, 99.9]));
        run.percentiles = vec![95.0, 99.9];
        let mut o = String::new();
        section(&mut o, std::slice::from_ref(&run));
        assert!(o.contains("session duration p95 (ms)</td><td>38.50"), "{o}");
        assert!(o.contains("session duration p99.9 (ms)</td><td>39.97"), "{o}");
        assert!(o.contains("TTFT p95 at depth 0 (ms)</td><td>3.85"), "{o}");
        assert!(!o.contains("p99 ("), "no p99 row unless asked: {o}");
        // Without a known --metric-percentiles: its default, p99 ("–" where not computed).
        run.percentiles = crate::html::DEFAULT_RUN_PERCENTILES.to_vec();
        let mut o = String::new();
        section(&mut o, std::slice::from_ref(&run));
        assert!(o.contains("session duration p99 (ms)</td><td>–"), "{o}");
    }
}

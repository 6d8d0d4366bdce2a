//! TTFO (time to first visible output) and the reasoning/content split of token events, in the
//! console's servebench block and as our result keys (`mean_ttfo_ms`, `median_ttfo_ms`,
//! `std_ttfo_ms`, `p<P>_ttfo_ms`, `reasoning_events`, `content_events`,
//! `requests_without_content`). Only written when the run had reasoning or tool-only output
//! or visible content was timed (a pooling run has none).

use std::fmt::Write as _;

use serde_json::{Map, Value};
use servebench_core::metrics::OutputSplit;

use crate::fmt::percentile_word;

fn present(s: &OutputSplit) -> bool {
    s.ttfo.count > 0 || s.reasoning_events > 0 || s.requests_without_content > 0
}

/// Console rows (servebench block).
pub fn console(out: &mut String, s: &OutputSplit) {
    if !present(s) {
        return;
    }
    let row = |out: &mut String, label: &str, v: String| {
        let _ = writeln!(out, "{label:<40} {v:<10}");
    };
    row(out, "Token events (reasoning / content):", format!("{} / {}", s.reasoning_events, s.content_events));
    if s.requests_without_content > 0 {
        row(out, "Requests without visible content:", s.requests_without_content.to_string());
    }
    let ms = |v: f64| if s.ttfo.count > 0 { format!("{v:.2}") } else { "n/a".into() };
    row(out, "Mean TTFO (ms):", ms(s.ttfo.mean));
    row(out, "Median TTFO (ms):", ms(s.ttfo.median));
    for &(p, v) in &s.ttfo.percentiles {
        row(out, &format!("P{} TTFO (ms):", percentile_word(p)), ms(v));
    }
}

/// Result keys.
pub fn json(o: &mut Map<String, Value>, s: &OutputSplit) {
    if !present(s) {
        return;
    }
    crate::fmt::insert_stats(o, "ttfo", &s.ttfo);
    o.insert("reasoning_events".into(), Value::from(s.reasoning_events));
    o.insert("content_events".into(), Value::from(s.content_events));
    o.insert("requests_without_content".into(), Value::from(s.requests_without_content));
}

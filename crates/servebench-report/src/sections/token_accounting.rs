//! Token accounting in the result JSON (`token_accounting`) and in the servebench console
//! block: output tokens from each source side by side, server vs client prompt tokens, and
//! the disagreement warning (definitions: `docs/metrics.md`, "Token accounting").

use std::fmt::Write as _;

use serde_json::{json, Value};
use servebench_core::metrics::{CountDiscrepancy, TokenAccounting, OUTPUT_DISAGREEMENT_WARN};
use servebench_core::TokenSource;

fn source_name(s: Option<TokenSource>, any: bool) -> Value {
    match (s, any) {
        (Some(TokenSource::Usage), _) => "usage".into(),
        (Some(TokenSource::Retokenized), _) => "retokenized".into(),
        (Some(TokenSource::Events), _) => "events".into(),
        (None, true) => "mixed".into(),
        (None, false) => Value::Null,
    }
}

fn pair(d: &CountDiscrepancy) -> Value {
    if d.requests == 0 {
        return Value::Null;
    }
    json!({
        "requests": d.requests,
        "mean_diff": d.mean_diff,
        "mean_abs_diff": d.mean_abs_diff,
        "max_abs_diff": d.max_abs_diff,
        "mean_rel_diff": d.mean_rel_diff,
        "max_rel_diff": d.max_rel_diff,
    })
}

/// The `token_accounting` object of the result JSON. `completed` > 0 tells "mixed" sources
/// from "no completed request".
pub fn json(a: &TokenAccounting, completed: u64) -> Value {
    json!({
        "output_source": source_name(a.output_source, completed > 0),
        "usage_vs_retokenized": pair(&a.usage_vs_retokenized),
        "usage_vs_events": pair(&a.usage_vs_events),
        "retokenized_vs_events": pair(&a.retokenized_vs_events),
        "prompt_server_vs_client": pair(&a.prompt_server_vs_client),
        "disagreement_warn_threshold": OUTPUT_DISAGREEMENT_WARN,
        "warnings": a.warnings(),
    })
}

fn line(out: &mut String, label: &str, d: &CountDiscrepancy) {
    if d.requests == 0 {
        return;
    }
    let v = format!(
        "mean |d| {:.2} ({:.1}%), max {} ({:.1}%), n={}",
        d.mean_abs_diff,
        d.mean_rel_diff * 100.0,
        d.max_abs_diff,
        d.max_rel_diff * 100.0,
        d.requests
    );
    let _ = writeln!(out, "{label:<40} {v:<10}");
}

/// Console lines (only for comparisons some completed request had); the warnings go to stderr
/// (`console::console_warnings`).
pub fn console(out: &mut String, a: &TokenAccounting) {
    line(out, "Output tokens usage vs retokenized:", &a.usage_vs_retokenized);
    line(out, "Output tokens usage vs events:", &a.usage_vs_events);
    line(out, "Output tokens retokenized vs events:", &a.retokenized_vs_events);
    let p = &a.prompt_server_vs_client;
    if p.requests > 0 {
        let v = format!("mean {:+.2}, max |d| {}, n={}", p.mean_diff, p.max_abs_diff, p.requests);
        let _ = writeln!(out, "{:<40} {v:<10}", "Input tokens server - client:");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_console_lines() {
        let a = TokenAccounting {
            output_source: Some(TokenSource::Usage),
            usage_vs_events: CountDiscrepancy {
                requests: 2,
                mean_diff: -2.5,
                mean_abs_diff: 2.5,
                max_abs_diff: 5,
                mean_rel_diff: 0.25,
                max_rel_diff: 0.5,
            },
            prompt_server_vs_client: CountDiscrepancy {
                requests: 2,
                mean_diff: 7.0,
                max_abs_diff: 7,
                ..Default::default()
            },
            ..TokenAccounting::default()
        };
        let j = json(&a, 2);
        assert_eq!(j["output_source"], "usage");
        assert_eq!(j["usage_vs_retokenized"], Value::Null);
        assert_eq!(j["usage_vs_events"]["max_abs_diff"], 5);
        assert_eq!(j["prompt_server_vs_client"]["mean_diff"], 7.0);
        assert_eq!(json(&TokenAccounting::default(), 3)["output_source"], "mixed");
        assert_eq!(json(&TokenAccounting::default(), 0)["output_source"], Value::Null);
        let mut out = String::new();
        console(&mut out, &a);
        assert_eq!(out.lines().count(), 2, "{out}");
        assert!(out.contains("mean |d| 2.50 (25.0%), max 5 (50.0%), n=2"), "{out}");
        assert!(out.contains("Input tokens server - client:            mean +7.00, max |d| 7, n=2"), "{out}");
    }
}

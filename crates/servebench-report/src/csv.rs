//! Per-request CSV: one row per record with its timestamps, both latency views, token counts and
//! outcome, for spreadsheets and dataframes. RFC 4180 quoting; times in milliseconds (µs exact,
//! three decimals) from the run origin; empty cells where a value is unknown. The HTTP phase
//! columns at the end (docs/metrics.md, "HTTP phases") are durations (`dns_ms`, `connect_ms`,
//! `tls_ms`) and times from `dispatched` (`written_ms`, `first_byte_ms`, `last_byte_ms`).

use crate::fmt::ms_exact_or_empty;
use servebench_core::metrics::RequestTimes;
use servebench_core::record::{CancelReason, Outcome, RequestRecord, TokenSource};

/// Column names, in order.
pub const COLUMNS: &[&str] = &[
    "index",
    "request_id",
    "server_request_id",
    "outcome",
    "error_kind",
    "error_message",
    "http_status",
    "intended_ms",
    "dispatched_ms",
    "headers_ms",
    "first_token_ms",
    "last_token_ms",
    "done_ms",
    "queue_ms",
    "ttft_ms",
    "tpot_ms",
    "e2el_ms",
    "response_ttft_ms",
    "response_e2el_ms",
    "prompt_tokens",
    "server_prompt_tokens",
    "cached_prompt_tokens",
    "output_tokens",
    "token_source",
    "expected_output_tokens",
    "token_events",
    "output_chars",
    "finish_reason",
    "attempts",
    "reconnects",
    "conversation",
    "turn",
    "lora",
    "gate_ms",
    "prefill_wait_ms",
    "resent",
    "cancelled_by",
    "connection_reused",
    "dns_ms",
    "connect_ms",
    "tls_ms",
    "written_ms",
    "first_byte_ms",
    "last_byte_ms",
];

/// Quotes a field when it holds a comma, quote, CR or LF (doubling quotes), as RFC 4180 says.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

fn outcome_str(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::Failed => "failed",
        Outcome::Cancelled => "cancelled",
    }
}

fn source_str(s: TokenSource) -> &'static str {
    match s {
        TokenSource::Usage => "usage",
        TokenSource::Retokenized => "retokenized",
        TokenSource::Events => "events",
    }
}

/// One record's cells. `scheduled`: the record carries its scheduled send time (a records
/// file); records rebuilt from vLLM's arrays do not, so their intended time, queue time and
/// response view are empty cells, not the service view again (and a queue of 0).
fn row(r: &RequestRecord, scheduled: bool) -> Vec<String> {
    let t = RequestTimes::of(r);
    let sched = |v: Option<u64>| if scheduled { ms_exact_or_empty(v) } else { String::new() };
    let completed = r.outcome == Outcome::Completed;
    let p = r.phases.unwrap_or_default();
    let phase = |v: Option<u32>| ms_exact_or_empty(v.map(u64::from));
    vec![
        r.index.to_string(),
        r.request_id.clone(),
        opt(r.server_request_id.clone()),
        outcome_str(r.outcome).into(),
        opt(r.error.as_ref().map(|e| e.kind.as_str())),
        opt(r.error.as_ref().map(|e| e.message.clone())),
        opt(r.http_status),
        sched(Some(r.intended_us)),
        ms_exact_or_empty(r.dispatched_us),
        ms_exact_or_empty(r.headers_us),
        ms_exact_or_empty(r.first_token_us),
        ms_exact_or_empty(r.last_token_us),
        ms_exact_or_empty(r.done_us),
        sched(t.queue_us),
        ms_exact_or_empty(t.ttft_us),
        t.tpot_us.map_or_else(String::new, |v| format!("{:.3}", v / 1000.0)),
        ms_exact_or_empty(t.e2el_us),
        sched(t.response_ttft_us),
        sched(t.response_e2el_us),
        r.prompt_tokens.to_string(),
        opt(r.server_prompt_tokens),
        opt(r.cached_prompt_tokens),
        t.output_tokens.to_string(),
        // A request that did not complete has no output count to have a source.
        if completed { source_str(t.output_source).into() } else { String::new() },
        r.expected_output_tokens.to_string(),
        r.token_event_count.to_string(),
        r.output_chars.to_string(),
        opt(r.finish_reason.clone()),
        r.attempts.to_string(),
        r.reconnects.to_string(),
        opt(r.conversation),
        opt(r.turn),
        opt(r.lora.clone()),
        ms_exact_or_empty(r.gate_us),
        ms_exact_or_empty(r.prefill_wait_us),
        r.resent.to_string(),
        opt(r.cancelled_by.map(CancelReason::name)),
        opt(r.phases.map(|p| p.reused)),
        phase(p.dns_us),
        phase(p.connect_us),
        phase(p.tls_us),
        phase(p.written_us),
        phase(p.first_byte_us),
        phase(p.last_byte_us),
    ]
}

fn push_line(out: &mut String, cells: impl IntoIterator<Item = String>) {
    for (i, c) in cells.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&csv_field(&c));
    }
    out.push('\n');
}

/// One header row and one row per record (in the given order), `\n`-terminated; `scheduled` as
/// in `row` (false for records rebuilt from a result's arrays).
pub fn records_csv<S: servebench_core::RecordSet + ?Sized>(records: &S, scheduled: bool) -> String {
    let mut out = String::with_capacity(64 + records.record_count() * 220);
    push_line(&mut out, COLUMNS.iter().map(|c| c.to_string()));
    for r in records.records() {
        push_line(&mut out, row(std::borrow::Borrow::borrow(&r), scheduled));
    }
    out
}

/// Like [`records_csv`] for several runs in one file: a leading `run` column holds each run's
/// label.
pub fn runs_csv(runs: &[(&str, &[RequestRecord], bool)]) -> String {
    let mut out = String::new();
    push_line(&mut out, std::iter::once("run".to_string()).chain(COLUMNS.iter().map(|c| c.to_string())));
    for (label, records, scheduled) in runs {
        for r in *records {
            push_line(&mut out, std::iter::once(label.to_string()).chain(row(r, *scheduled)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::record::ErrorKind;

    fn recs() -> Vec<RequestRecord> {
        let mut a = RequestRecord::scheduled(0, "bench-0".into(), 1_000, 12, 4);
        a.outcome = Outcome::Completed;
        a.dispatched_us = Some(1_500);
        a.first_token_us = Some(51_500);
        a.last_token_us = Some(81_500);
        a.done_us = Some(81_600);
        a.token_event_count = 4;
        a.token_events.gaps_us = vec![10_000; 3];
        a.completion_tokens = Some(4);
        a.finish_reason = Some("length".into());
        a.attempts = 1;
        a.phases = Some(servebench_core::HttpPhases {
            reused: false,
            connect_us: Some(250),
            written_us: Some(40),
            first_byte_us: Some(49_000),
            ..Default::default()
        });
        let mut b = RequestRecord::scheduled(1, "bench-1".into(), 2_000, 12, 4);
        b.dispatched_us = Some(2_000);
        b.http_status = Some(500);
        b.fail(ErrorKind::HttpStatus, "HTTP 500: \"oops\", line1\nline2");
        let c = RequestRecord::scheduled(2, "bench,2".into(), 3_000, 12, 4);
        vec![a, b, c]
    }

    #[test]
    fn one_row_per_record_with_header() {
        let r = recs();
        let text = records_csv(&r, true);
        // The quoted message spans two physical lines; count records by the index column.
        let rows: Vec<&str> = text.lines().filter(|l| l.starts_with(|c: char| c.is_ascii_digit())).collect();
        assert_eq!(rows.len(), r.len());
        assert!(text.starts_with("index,request_id,"));
        let header_cols = text.lines().next().map(|l| l.split(',').count());
        assert_eq!(header_cols, Some(COLUMNS.len()));
        assert!(rows[0].starts_with("0,bench-0,,completed,,,,1.000,1.500,,51.500,81.500,81.600,0.500,50.000,10.000,80.100,50.500,80.600,12,,,4,usage,4,4,0,length,1,0,,,"));
    }

    /// The phase columns: durations and times from `dispatched` in ms, empty when the phase
    /// did not happen or the record has no phases.
    #[test]
    fn http_phase_columns_are_last_and_empty_without_the_phase() {
        let text = records_csv(&recs(), true);
        let rows: Vec<&str> = text.lines().collect();
        assert!(rows[0].ends_with(
            ",cancelled_by,connection_reused,dns_ms,connect_ms,tls_ms,written_ms,first_byte_ms,last_byte_ms"
        ));
        assert!(rows[1].ends_with(",1,0,,,,,,false,,false,,0.250,,0.040,49.000,"), "{}", rows[1]);
        assert!(text.lines().last().unwrap().ends_with(",false,,,,,,,,"), "no phases: empty cells");
    }

    /// The client-side gate, the prefill wait, a resend and why a request was cancelled are
    /// columns too (they were only in the records).
    #[test]
    fn gate_prefill_wait_resent_and_cancel_reason_columns() {
        let mut r = recs();
        r[0].gate_us = Some(1_200);
        r[0].prefill_wait_us = Some(150);
        r[0].resent = true;
        r[2].cancelled_by = Some(CancelReason::ByDesign);
        let text = records_csv(&r, true);
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
        let cells = |line: &str| line.split(',').map(String::from).collect::<Vec<_>>();
        let first = cells(text.lines().nth(1).unwrap());
        assert_eq!(first[col("gate_ms")], "1.200");
        assert_eq!(first[col("prefill_wait_ms")], "0.150");
        assert_eq!(first[col("resent")], "true");
        assert_eq!(first[col("cancelled_by")], "");
        let last = cells(text.lines().last().unwrap());
        assert_eq!(last[col("cancelled_by") + 1], "by_design", "the quoted id shifts split() by one");
    }

    /// Pins the CSV of records rebuilt from vLLM's arrays (no scheduled send time): every row
    /// had `queue_ms` 0.000 and the response view equal to the service view (invented numbers;
    /// the HTML report of the same file says "no data"). Those cells are empty now, and a
    /// request that did not complete has no `token_source`.
    #[test]
    fn records_without_a_schedule_leave_queue_and_response_view_empty() {
        let text = records_csv(&recs(), false);
        let header: Vec<&str> = text.lines().next().unwrap().split(',').collect();
        let col = |name: &str| header.iter().position(|c| *c == name).unwrap();
        let first: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        for name in ["intended_ms", "queue_ms", "response_ttft_ms", "response_e2el_ms"] {
            assert_eq!(first[col(name)], "", "{name}");
        }
        assert_eq!((first[col("ttft_ms")], first[col("e2el_ms")]), ("50.000", "80.100"));
        assert_eq!(first[col("token_source")], "usage");
        let scheduled = records_csv(&recs(), true);
        let last: Vec<&str> = scheduled.lines().last().unwrap().split(',').collect();
        assert_eq!(last[col("token_source") + 1], "", "cancelled: no source (the quoted id shifts by one)");
    }

    #[test]
    fn quotes_commas_quotes_and_newlines() {
        let text = records_csv(&recs(), true);
        assert!(text.contains("\"HTTP 500: \"\"oops\"\", line1\nline2\""));
        assert!(text.contains("\"bench,2\""));
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(csv_field("a\rb"), "\"a\rb\"");
    }

    #[test]
    fn several_runs_get_a_run_column() {
        let r = recs();
        let text = runs_csv(&[("base", &r, true), ("new, v2", &r[..1], true)]);
        assert!(text.starts_with("run,index,"));
        assert!(text.contains("\n\"new, v2\",0,bench-0,"));
        assert_eq!(text.matches("\nbase,").count(), 3);
    }
}

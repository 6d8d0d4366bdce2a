//! Error codes of request failures, by their typed cause (set by the client where the failure
//! happened, never read from the message): a server that cannot apply its chat template
//! (`SB403`) and a server answering in another dialect than `--backend` (`SB404`). In the
//! readiness check they replace "endpoint not ready" (the run stops with the specific code);
//! after a run, failed requests with them give one coded warning each.

use crate::observe::notice::Notice;
use servebench_core::{BenchError, CancelReason, ErrorKind, FailureCause, Outcome, RecordSet, RequestRecord};
use std::borrow::Borrow;

/// The error of a readiness check that gave up after `secs` with `last_error` (of typed
/// `cause`, if any).
pub fn not_ready(secs: f64, last_error: String, cause: Option<FailureCause>, backend: &str) -> BenchError {
    match cause {
        Some(FailureCause::ChatTemplate) => BenchError::ChatTemplate { detail: last_error },
        Some(FailureCause::WrongDialect) => {
            BenchError::WrongDialect { backend: backend.to_owned(), detail: last_error }
        }
        _ => BenchError::EndpointNotReady { secs, last_error },
    }
}

/// Coded warnings for failed requests whose error is a chat-template or wrong-dialect failure.
pub fn warnings<S: RecordSet + ?Sized>(records: &S, backend: &str) -> Vec<Notice> {
    let (mut chat, mut dialect) = (0, 0);
    for r in records.records() {
        let r = r.borrow();
        let cause = r.error.as_ref().filter(|_| r.outcome == Outcome::Failed).and_then(|e| e.cause);
        chat += usize::from(cause == Some(FailureCause::ChatTemplate));
        dialect += usize::from(cause == Some(FailureCause::WrongDialect));
    }
    let mut out = Vec::new();
    if chat > 0 {
        let e =
            BenchError::ChatTemplate { detail: format!("{chat} requests failed with a chat template error") };
        out.push(Notice::coded(&e));
    }
    if dialect > 0 {
        let detail = format!("{dialect} requests got OpenAI-style chunks");
        let e = BenchError::WrongDialect { backend: backend.to_owned(), detail };
        out.push(Notice::coded(&e));
    }
    out
}

/// The fix of a proxy that refused the requests (SB312's).
const PROXY_FIX: &str = "check the proxy variables and credentials (http://user:password@proxy:port), \
     set NO_PROXY for this host, or pass --no-proxy";

/// SB602 when not one of `records` completed (and there was at least one): the message
/// quotes the first failure (lowest index) and names the fix it points to. `context` prefixes
/// the message (e.g. `point c=4: `).
pub fn no_success<S: RecordSet + ?Sized>(records: &S, context: &str) -> Option<BenchError> {
    no_success_with(records, context, RECORDS_FIX)
}

/// [`no_success`] for a point of an experiment (a sweep, a search, `--num-runs`), which writes
/// no records file: the catch-all fix names what an experiment shows instead.
pub fn no_success_in_point<S: RecordSet + ?Sized>(records: &S, context: &str) -> Option<BenchError> {
    no_success_with(records, context, POINT_FIX)
}

/// Whether a run without one successful request failed for a reason that does not depend on
/// the load (its first failure): an HTTP 4xx other than 408 and 429 (a wrong model, adapter,
/// key, route or request), a reply in another protocol (a wrong `--backend` or `--endpoint`),
/// a client certificate or proxy refused. A rate search stops at such a step: a lower rate
/// would fail the same way.
pub fn load_independent<S: RecordSet + ?Sized>(records: &S) -> bool {
    let Some(first) = first_unsuccessful(records) else {
        return false;
    };
    let first = first.borrow();
    let Some(e) = &first.error else { return false };
    if matches!(e.cause, Some(FailureCause::ClientCertificate | FailureCause::Proxy)) {
        return true;
    }
    match (e.kind, first.http_status) {
        (ErrorKind::HttpStatus, Some(s)) => (400..500).contains(&s) && s != 408 && s != 429,
        (ErrorKind::Protocol, _) => true,
        _ => false,
    }
}

/// The catch-all fix of a single run's SB602 (the run wrote its records).
const RECORDS_FIX: &str = "look at the failures in the records file and `error_kinds` in the result";

/// The catch-all fix of an experiment point's SB602 (an experiment writes no records file).
const POINT_FIX: &str = "look at the failure summary printed after the point, and its result's `errors` and \
     `error_kinds` in the experiment document";

/// The request that did not complete with the lowest index.
fn first_unsuccessful<S: RecordSet + ?Sized>(records: &S) -> Option<S::Item<'_>> {
    records.records().filter(|r| r.borrow().outcome != Outcome::Completed).min_by_key(|r| r.borrow().index)
}

fn no_success_with<S: RecordSet + ?Sized>(
    records: &S,
    context: &str,
    catch_all: &'static str,
) -> Option<BenchError> {
    if records.record_count() == 0 || records.records().any(|r| r.borrow().outcome == Outcome::Completed) {
        return None;
    }
    let first = first_unsuccessful(records)?;
    let first: &RequestRecord = first.borrow();
    // A gateway that wants a client certificate, a proxy that refuses: the connection
    // failure's own code and fix (SB310, SB312), not a guess about the request.
    let connection = |c| matches!(c, FailureCause::ClientCertificate | FailureCause::Proxy);
    if let Some(e) = first.error.as_ref().filter(|e| e.cause.is_some_and(connection)) {
        if let Some(coded) = crate::observe::network_notes::permanent_error(e) {
            return Some(coded);
        }
    }
    let (first_text, fix) = match &first.error {
        Some(e) => (e.message.clone(), fix_for(e.kind, first.http_status, e.cause).unwrap_or(catch_all)),
        None => (first.error_entry(), fix_for_cancelled(first.cancelled_by)),
    };
    Some(BenchError::NoSuccess {
        context: context.to_owned(),
        total: records.record_count() as u64,
        first: first_text,
        fix: fix.to_owned(),
    })
}

/// The likely fix for a run whose first request was cancelled (`reason`): a run cancelled by
/// design said "a longer --duration", which it has no part in.
fn fix_for_cancelled(reason: Option<CancelReason>) -> &'static str {
    match reason {
        Some(CancelReason::ByDesign) => {
            "lower --request-cancellation-rate, or raise --request-cancellation-delay above the requests' latency"
        }
        Some(CancelReason::EarlyStop) => "see why the run stopped early (above); raise or drop its limit",
        Some(CancelReason::DependencyFailed) => "look at the failures of the turns the others depend on",
        _ => "let the run finish (a longer --duration)",
    }
}

/// The likely fix for a run whose first failure has `kind` (and `status`, typed `cause`);
/// `None` when nothing more specific than the catch-all applies.
fn fix_for(kind: ErrorKind, status: Option<u16>, cause: Option<FailureCause>) -> Option<&'static str> {
    match cause {
        Some(FailureCause::ClientCertificate) => return Some(servebench_client::transport::FIX_CLIENT_CERT),
        Some(FailureCause::Proxy) => return Some(PROXY_FIX),
        _ => {}
    }
    Some(match (kind, status) {
        (ErrorKind::HttpStatus, Some(404)) => {
            "the server does not serve that model, adapter or route: check --model, --served-model-name \
             and --lora-modules against GET /v1/models, and --endpoint"
        }
        (ErrorKind::HttpStatus, Some(401 | 403)) => "set OPENAI_API_KEY (or pass --header) for the server",
        (ErrorKind::HttpStatus, Some(400 | 422)) => {
            "the server refused the request: check the sampling flags, --backend and --extra-body"
        }
        (ErrorKind::Connect, _) => "check that the server is running and that --base-url is right",
        (ErrorKind::Timeout, _) => "raise --request-timeout, or lower the load",
        (ErrorKind::Stall, _) => {
            "the server went silent mid-request: raise --stall-timeout, or lower the load"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorCode;

    /// Pins SB602's fix for a run whose every request was cancelled by design
    /// (`--request-cancellation-rate 100`): it said "a longer --duration".
    #[test]
    fn every_request_cancelled_by_design_names_the_cancellation_flags() {
        let recs: Vec<RequestRecord> = (0..3u64)
            .map(|i| {
                let mut r = RequestRecord::scheduled(i, format!("r{i}"), 0, 1, 1);
                r.dispatched_us = Some(1);
                r.cancelled_by = Some(CancelReason::ByDesign);
                r
            })
            .collect();
        let e = no_success(&recs, "").unwrap().to_string();
        assert!(e.contains("cancelled: by design (--request-cancellation-rate)"), "{e}");
        assert!(e.contains("fix: lower --request-cancellation-rate") && !e.contains("--duration"), "{e}");
    }

    /// Pins SB602's fix for a point of an experiment whose requests failed with HTTP 500: it
    /// said "look at the failures in the records file", and an experiment writes none.
    #[test]
    fn a_point_without_success_names_what_an_experiment_shows_not_a_records_file() {
        let recs: Vec<RequestRecord> = (0..2u64)
            .map(|i| {
                let mut r = RequestRecord::scheduled(i, format!("r{i}"), 0, 1, 1);
                r.http_status = Some(500);
                r.fail(ErrorKind::HttpStatus, "HTTP 500: boom");
                r
            })
            .collect();
        let single = no_success(&recs, "").unwrap().to_string();
        assert!(single.contains("records file"), "{single}");
        let point = no_success_in_point(&recs, "rate 4.0: ").unwrap().to_string();
        assert!(!point.contains("records file"), "{point}");
        assert!(point.contains("failure summary") && point.contains("`errors`"), "{point}");
    }

    /// Pins which failures a rate search stops at (a lower rate would fail alike): a 404 or a
    /// wrong protocol does not depend on the load; a 500, 429, 503, a timeout do.
    #[test]
    fn load_independent_failures_are_client_errors_and_protocol_errors() {
        let failed = |kind, status| {
            let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
            r.http_status = status;
            r.fail(kind, "x");
            vec![r]
        };
        assert!(load_independent(&failed(ErrorKind::HttpStatus, Some(404))));
        assert!(load_independent(&failed(ErrorKind::HttpStatus, Some(400))));
        assert!(load_independent(&failed(ErrorKind::Protocol, None)));
        for status in [429, 408, 500, 503] {
            assert!(!load_independent(&failed(ErrorKind::HttpStatus, Some(status))), "{status}");
        }
        assert!(!load_independent(&failed(ErrorKind::Timeout, None)));
        assert!(!load_independent(&failed(ErrorKind::Connect, None)));
        assert!(!load_independent::<[RequestRecord]>(&[]));
    }

    #[test]
    fn zero_successful_requests_is_sb602_naming_the_first_failure_and_its_fix() {
        let mut recs = Vec::new();
        for i in [3u64, 1, 2] {
            let mut r = RequestRecord::scheduled(i, format!("r{i}"), 0, 1, 1);
            r.http_status = Some(404);
            r.fail(ErrorKind::HttpStatus, format!("HTTP 404: The model `zz{i}` does not exist."));
            recs.push(r);
        }
        let e = no_success(&recs, "point c=4: ").expect("no success");
        assert_eq!(e.code(), ErrorCode::NoSuccess);
        let line = e.user_line();
        assert!(line.contains("point c=4: none of 3 requests succeeded"), "{line}");
        assert!(line.contains("`zz1`") && line.contains("--lora-modules"), "{line}");
        assert_eq!(line.matches("fix:").count(), 1, "{line}");
        let mut ok = RequestRecord::scheduled(9, "ok".into(), 0, 1, 1);
        ok.outcome = Outcome::Completed;
        recs.push(ok);
        assert!(no_success(&recs, "").is_none(), "one success is enough");
        assert!(no_success::<[RequestRecord]>(&[], "").is_none(), "nothing sent is not judged");
    }

    #[test]
    fn classifies_chat_template_and_wrong_dialect() {
        let msg = "HTTP 400 Bad Request: {\"error\":{\"message\":\"As of transformers v4.44, default chat template is no longer allowed\"}}";
        let chat = Some(FailureCause::ChatTemplate);
        assert_eq!(not_ready(5.0, msg.into(), chat, "openai-chat").code(), ErrorCode::ChatTemplate);
        // The words alone are not the typed cause (the client sets it where it reads the body).
        assert_eq!(not_ready(5.0, msg.into(), None, "openai-chat").code(), ErrorCode::EndpointNotReady);
        let wrong = "wrong dialect: --backend tgi got an OpenAI-style chunk";
        let dialect = Some(FailureCause::WrongDialect);
        assert_eq!(not_ready(5.0, wrong.into(), dialect, "tgi").code(), ErrorCode::WrongDialect);
        // The words alone are not the typed cause.
        assert_eq!(not_ready(5.0, wrong.into(), None, "tgi").code(), ErrorCode::EndpointNotReady);
        assert_eq!(not_ready(5.0, "HTTP 404".into(), None, "tgi").code(), ErrorCode::EndpointNotReady);

        let mut recs = Vec::new();
        for (m, cause) in [(msg, chat), (msg, chat), (wrong, dialect), ("HTTP 500", None)] {
            let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
            r.fail_with(ErrorKind::HttpStatus, cause, m);
            recs.push(r);
        }
        let w = warnings(&recs, "tgi");
        assert_eq!(w.len(), 2);
        assert!(
            w[0].to_string().starts_with("warning[SB403]: ") && w[0].to_string().contains("2 requests"),
            "{}",
            w[0]
        );
        assert!(
            w[1].to_string().starts_with("warning[SB404]: ") && w[1].to_string().contains("1 requests"),
            "{}",
            w[1]
        );
        assert!(warnings(&recs[3..], "tgi").is_empty());
    }
}

//! What a run says about the server's wire behaviour: connection reuse given up (the server
//! closes after every response), redirects followed, responses that did not stream although
//! streaming was asked for, runaway streams (SB405) and requests refused for a content coding
//! (SB306), a redirect (SB307) or a non-HTTP/1.1 answer (SB308). Each is one console line.

use super::notice::{Notice, Severity};
use servebench_client::HttpClient;
use servebench_core::{BenchError, ErrorCode, FailureCause, Outcome, RecordSet, RequestError, RequestRecord};
use std::borrow::Borrow;

/// Notices the client has not said yet: pooling given up, redirects with their final URL.
pub fn client_notices(client: &HttpClient) -> Vec<Notice> {
    [client.take_pooling_notice().map(str::to_owned), client.take_redirect_notice()]
        .into_iter()
        .flatten()
        .map(Notice::note)
        .collect()
}

/// The coded error a request failure stands for (its typed cause): a content coding, a
/// redirect, a non-HTTP/1.1 answer or a runaway stream.
fn coded(e: &RequestError) -> Option<BenchError> {
    let context = "benchmark request".to_owned();
    let detail = e.detail().to_owned();
    match e.cause? {
        FailureCause::ContentCoding => Some(BenchError::ContentCoding { context, detail, source: None }),
        FailureCause::Redirect => Some(BenchError::Redirect { context, detail }),
        FailureCause::NotHttp1 => Some(BenchError::ServerProtocol { context, detail }),
        // The record's line carries SB405's fix; the coded error adds it again.
        FailureCause::RunawayStream => {
            Some(BenchError::RunawayStream { detail: without_fix(&detail).to_owned() })
        }
        FailureCause::ClientCertificate => Some(BenchError::TlsCertificate {
            context,
            detail: certificate_detail(&detail).to_owned(),
            fix: servebench_client::transport::FIX_CLIENT_CERT.to_owned(),
        }),
        FailureCause::Proxy => {
            // The record's message is the proxy failure's own line: `proxy URL: detail`.
            let (proxy, detail) = detail
                .strip_prefix("proxy ")
                .and_then(|rest| rest.split_once(": "))
                .map_or((String::new(), detail.clone()), |(p, d)| (p.to_owned(), d.to_owned()));
            Some(BenchError::Proxy { proxy, detail })
        }
        // Their warnings and readiness errors are failure_codes.rs's (SB403, SB404), SB315 the check's.
        FailureCause::Unreachable(_) | FailureCause::WrongDialect | FailureCause::ChatTemplate => None,
    }
}

/// A certificate failure's detail without the `... failed: ` and `; fix: ...` of its record line.
fn certificate_detail(line: &str) -> &str {
    without_fix(line.split_once("check failed: ").map_or(line, |(_, d)| d))
}

/// A record line without its `; fix: ...` (the coded error has its own).
fn without_fix(line: &str) -> &str {
    line.split_once("; fix: ").map_or(line, |(d, _)| d)
}

/// The coded error a readiness-check failure stands for, if it has one that waiting will not
/// change (SB306-SB308: the check stops at once).
pub fn permanent_error(e: &RequestError) -> Option<BenchError> {
    coded(e).filter(|e| !matches!(e, BenchError::RunawayStream { .. }))
}

/// Run warnings from the records: requests that did not stream although streaming was asked
/// for (`streamed`: the requests asked for a stream), and one coded warning per kind of coded
/// request failure.
pub fn record_warnings<S: RecordSet + ?Sized>(records: &S, streamed: bool) -> Vec<Notice> {
    let mut out = Vec::new();
    if streamed {
        out.extend(unstreamed_warning(records));
        out.extend(held_open_warning(records));
    }
    let mut seen: Vec<(ErrorCode, usize, String)> = Vec::new();
    for r in records.records() {
        let r = r.borrow();
        let Some(e) = r.error.as_ref().filter(|_| r.outcome == Outcome::Failed) else { continue };
        let Some(err) = coded(e) else { continue };
        let code = err.code();
        match seen.iter_mut().find(|(c, _, _)| *c == code) {
            Some(s) => s.1 += 1,
            None => seen.push((code, 1, err.to_string())),
        }
    }
    for (code, n, first) in seen {
        out.push(Notice {
            severity: Severity::Coded(code),
            text: format!("{n} requests failed; first: {first}"),
            said: false,
        });
    }
    out
}

/// "server did not stream" when at least half of the completed requests with more than one
/// output token got their whole answer at once (first token at the end of the response).
fn unstreamed_warning<S: RecordSet + ?Sized>(records: &S) -> Option<Notice> {
    let (mut total, mut whole) = (0usize, 0usize);
    for r in records.records() {
        let r = r.borrow();
        if !(r.outcome == Outcome::Completed && r.output_tokens().0 > 1 && r.first_token_us.is_some()) {
            continue;
        }
        total += 1;
        if r.first_token_us == r.done_us {
            whole += 1;
        }
    }
    (whole > 0 && whole * 2 >= total).then(|| {
        Notice::warning(format!(
            "server did not stream: TTFT equals E2EL for {whole} of {total} completed requests \
             (the answer came as one JSON body or in one read); TTFT, TPOT and ITL describe whole responses"
        ))
    })
}

/// A stream's body ending this long (µs) after its last event counts as held open: a server's
/// terminator follows its last event within a write or two (µs to a few ms).
pub const HELD_OPEN_US: u64 = 100_000;

/// "the body was held open after the stream's last event" when completed streams' bodies ended
/// [`HELD_OPEN_US`] or more after their last event (`[DONE]` or the final event), or not within
/// the drain wait (1 s; the connection is then dropped): each held its connection, and its
/// `--max-concurrency` slot, meanwhile. A server keeping a close-delimited body open, or late
/// with the chunked terminator, caps a closed loop's throughput this way, with nothing in the
/// latencies (they end at the last event) to show it.
fn held_open_warning<S: RecordSet + ?Sized>(records: &S) -> Option<Notice> {
    let (mut total, mut held, mut never) = (0usize, 0usize, 0usize);
    for r in records.records() {
        let r = r.borrow();
        if !(r.outcome == Outcome::Completed && r.first_event_us.is_some() && r.phases.is_some()) {
            continue;
        }
        total += 1;
        match held_after_last_event_us(r) {
            None => never += 1,
            Some(us) => held += usize::from(us >= HELD_OPEN_US),
        }
    }
    (held + never > 0).then(|| {
        Notice::warning(format!(
            "the response body stayed open after the stream's last event for {} of {total} completed streams \
             ({held} ended {} ms or more after it, {never} not within the 1 s drain wait and were dropped): \
             each kept its connection and its concurrency slot meanwhile (the server holds the response open: \
             a close-delimited body, or a late chunked terminator); with --max-concurrency this caps the \
             throughput, not the latencies",
            held + never,
            HELD_OPEN_US / 1000
        ))
    })
}

/// How long after its last event a stream's body ended, µs; `None` when it did not end (the
/// drain wait ran out, or the connection broke).
fn held_after_last_event_us(r: &RequestRecord) -> Option<u64> {
    let last_byte = r.dispatched_us? + u64::from(r.phases?.last_byte_us?);
    Some(last_byte.saturating_sub(r.done_us?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorKind;

    fn rec(first: u64, done: u64, tokens: u32) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 8);
        r.outcome = Outcome::Completed;
        r.first_token_us = Some(first);
        r.done_us = Some(done);
        r.completion_tokens = Some(tokens);
        r
    }

    #[test]
    fn unstreamed_answers_give_one_warning() {
        let whole = vec![rec(50, 50, 8), rec(60, 60, 8), rec(10, 90, 8)];
        let w = record_warnings(&whole, true);
        assert_eq!(w.len(), 1);
        assert!(
            w[0].to_string().starts_with("warning: server did not stream: TTFT equals E2EL for 2 of 3"),
            "{}",
            w[0]
        );
        // Not asked to stream, a streaming server, or one-token answers: no warning.
        assert!(record_warnings(&whole, false).is_empty());
        assert!(record_warnings(&[rec(10, 90, 8), rec(20, 80, 8), rec(30, 30, 8)], true).is_empty());
        assert!(record_warnings(&[rec(30, 30, 1)], true).is_empty());
    }

    /// Pins the warning for streams whose body stayed open after their last event (each held
    /// its concurrency slot for the drain wait), and none when every body ended.
    #[test]
    fn bodies_held_open_after_the_last_event_give_one_warning() {
        // Dispatched at 0, last event (`done`) at 90 µs.
        let stream = |last_byte: Option<u32>| {
            let mut r = rec(10, 90, 8);
            r.dispatched_us = Some(0);
            r.first_event_us = Some(10);
            r.phases = Some(servebench_core::HttpPhases {
                first_byte_us: Some(5),
                last_byte_us: last_byte,
                ..Default::default()
            });
            r
        };
        // Never ended; ended with the last event; ended 0.9 s after it (a hold under the 1 s
        // drain wait, which the first version of this warning missed); ended 99.99 ms after.
        let w = record_warnings(
            &[stream(None), stream(Some(90)), stream(Some(900_090)), stream(Some(100_080))],
            true,
        );
        assert_eq!(w.len(), 1, "{w:?}");
        let text = w[0].to_string();
        assert!(
            text.contains("stayed open after the stream's last event for 2 of 4 completed streams"),
            "{text}"
        );
        assert!(text.contains("(1 ended 100 ms or more after it, 1 not within the 1 s drain wait"), "{text}");
        assert!(text.contains("--max-concurrency"), "{text}");
        assert!(record_warnings(&[stream(Some(90)), stream(Some(100_089))], true).is_empty());
    }

    #[test]
    fn coded_failures_give_one_warning_per_code() {
        let mut recs = Vec::new();
        for (cause, m) in [
            (FailureCause::RunawayStream, "the stream went on past 24 events; fix: check the server"),
            (FailureCause::RunawayStream, "again"),
            (FailureCause::ContentCoding, "the server sent 'compress'"),
        ] {
            let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
            r.fail_with(ErrorKind::RunawayStream, Some(cause), cause.tagged(m));
            recs.push(r);
        }
        // A message that merely looks coded is not: the cause is typed where it happened.
        let mut lookalike = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        lookalike.fail(ErrorKind::ServerError, "[SB308] said the server");
        recs.push(lookalike);
        let w = record_warnings(&recs, false);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].to_string().starts_with("warning[SB405]: 2 requests failed; first: the stream went on"),
            "{}",
            w[0]
        );
        // Pins SB405's fix said once: the record's line carries it, and the coded error added it.
        assert_eq!(w[0].to_string().matches("fix:").count(), 1, "{}", w[0]);
        assert!(w[1].to_string().starts_with("warning[SB306]: 1 requests failed"), "{}", w[1]);
        let error = |cause: Option<FailureCause>, message: &str| RequestError {
            kind: ErrorKind::Protocol,
            message: message.into(),
            cause,
        };
        let not_http1 = FailureCause::NotHttp1.tagged("server speaks HTTP/2 only");
        let e = permanent_error(&error(Some(FailureCause::NotHttp1), &not_http1)).expect("SB308");
        assert_eq!(e.to_string().matches("[SB308]").count(), 0, "{e}");
        assert!(permanent_error(&error(None, "HTTP 503")).is_none());
        assert!(permanent_error(&error(Some(FailureCause::RunawayStream), "[SB405] the stream")).is_none());
    }
}

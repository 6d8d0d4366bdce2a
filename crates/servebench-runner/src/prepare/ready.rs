//! The readiness check (`--ready-check-timeout-sec N`, vLLM's default 0 = no check): the first
//! benchmark request is sent until it completes or N seconds pass. Whatever the server did is
//! named in the error — "connection refused" (SB315) included — with the seconds really waited.
//! A failure that waiting cannot fix (a 4xx, another API dialect) ends the wait at once.

use servebench_client::request::{execute, ExecOptions, RequestTarget};
use servebench_client::transport::HttpClient;
use servebench_core::{BenchError, FailureCause, Outcome, RequestRecord, Requests, Result, RunClock};
use std::time::{Duration, Instant};

/// Pauses between attempts: 200 ms doubling up to 5 s, the last one cut to the deadline.
const FIRST_PAUSE: Duration = Duration::from_millis(200);
const MAX_PAUSE: Duration = Duration::from_secs(5);

/// Waits until a connection to the server can be made, trying until `deadline` (started at
/// `started`). Gives SB315 naming what connecting got and how long it was tried.
pub async fn wait_reachable(client: &HttpClient, started: Instant, deadline: Instant) -> Result<()> {
    let mut pause = FIRST_PAUSE;
    loop {
        match client.check_reachable().await {
            Ok(()) => return Ok(()),
            Err(BenchError::Unreachable { addr, reason, .. }) => {
                let now = Instant::now();
                if now >= deadline {
                    let waited = if deadline > started {
                        format!(" (kept trying for {:.1} s)", started.elapsed().as_secs_f64())
                    } else {
                        String::new() // no readiness check: the first attempt decides
                    };
                    return Err(BenchError::Unreachable { addr, reason, waited });
                }
                tokio::time::sleep(pause.min(deadline - now)).await;
                pause = (pause * 2).min(MAX_PAUSE);
            }
            Err(other) => return Err(other),
        }
    }
}

/// Whether a failed readiness attempt will not get better by waiting: a 4xx other than
/// 408/429 (wrong model name, missing key) or an answer in another API dialect.
pub fn gives_up_at_once(r: &RequestRecord) -> bool {
    let client_error = r.http_status.is_some_and(|s| (400..500).contains(&s) && s != 408 && s != 429);
    client_error || r.error.as_ref().is_some_and(|e| e.cause == Some(FailureCause::WrongDialect))
}

/// What a failed attempt got: the server is unreachable (and why), or a failure.
#[derive(Debug)]
enum Got {
    Unreachable(&'static str),
    Failed { message: String, cause: Option<FailureCause> },
}

/// What a failed attempt got, from its typed cause: "connection refused" for an unreachable
/// server, else the request's error message.
fn what_it_got(r: &RequestRecord) -> Got {
    match &r.error {
        Some(e) => match e.cause {
            Some(FailureCause::Unreachable(reason)) => Got::Unreachable(reason.as_str()),
            cause => Got::Failed { message: e.message.clone(), cause },
        },
        None => Got::Failed { message: "request did not complete".into(), cause: None },
    }
}

/// Sends the first request of `workload` until it completes or `deadline` passes (the wait
/// started at `started`).
pub async fn ready_check(
    client: &HttpClient,
    target: &RequestTarget,
    opts: &ExecOptions,
    workload: &Requests,
    started: Instant,
    deadline: Instant,
) -> Result<RequestRecord> {
    let spec = workload.spec(0).ok_or_else(|| BenchError::dataset("no request to check readiness with"))?;
    let spec = &*spec;
    // The check asks for one token; servers that ignore max_tokens answer more. The runaway
    // bound is for the measured requests (the check has its own timeout).
    let opts = &ExecOptions { runaway_factor: 0, ..opts.clone() };
    let clock = RunClock::start();
    let backend = target.backend.to_string();
    let mut last = Got::Failed { message: "no answer before the deadline".into(), cause: None };
    let mut pause = FIRST_PAUSE;
    loop {
        let record = RequestRecord::scheduled(0, "servebench-ready-check".into(), 0, spec.prompt_tokens, 1);
        let attempt =
            tokio::time::timeout_at(deadline.into(), execute(client, target, spec, record, &clock, opts))
                .await;
        if let Ok(r) = attempt {
            if r.outcome == Outcome::Completed {
                return Ok(r);
            }
            last = what_it_got(&r);
            // Not HTTP/1.1, an undecodable coding, refused redirects (SB306-SB308).
            if let Some(e) = r.error.as_ref().and_then(crate::observe::network_notes::permanent_error) {
                return Err(e);
            }
            // A certificate the client does not trust, a rejected client certificate or a
            // proxy refusing the tunnel (typed by the client, not read from the message).
            if let Some(f) = client.connect_failure().filter(|f| f.is_permanent()) {
                return Err(f.to_error(&format!("readiness check {}", client.origin())));
            }
            if gives_up_at_once(&r) {
                return Err(not_ready(client, started, last, &backend));
            }
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(not_ready(client, started, last, &backend));
        }
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_PAUSE);
    }
}

/// The error of a check that gave up: SB315 when the last attempt could not connect, else the
/// specific code of the last error (failure_codes), with the seconds really waited.
fn not_ready(client: &HttpClient, started: Instant, last: Got, backend: &str) -> BenchError {
    let secs = started.elapsed().as_secs_f64();
    match last {
        Got::Unreachable(reason) => BenchError::Unreachable {
            addr: client.host_port(),
            reason: reason.to_owned(),
            waited: format!(" (kept trying for {secs:.1} s)"),
        },
        Got::Failed { message, cause } => {
            crate::prepare::failure_codes::not_ready(secs, message, cause, backend)
        }
    }
}

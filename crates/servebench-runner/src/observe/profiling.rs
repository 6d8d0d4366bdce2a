//! Control-plane calls around the measured phase: vLLM's profiler (`--profile`,
//! `--profile-batch-threshold`, `--profile-duration`) and `/reset_prefix_cache`. Every call
//! carries the run's headers and API key (vllm-bench sends none on the threshold poll and the
//! cache reset).

use servebench_client::transport::HttpClient;
use servebench_core::{BenchError, Result};
pub use servebench_report::sections::server::ProfileOutcome;
use std::time::{Duration, Instant};

use crate::observe::scrape::{fetch_metrics_text, parse_sample};
use tokio_util::sync::CancellationToken;

/// How often the batch-threshold mode polls `/metrics` (as vllm-bench).
pub const THRESHOLD_POLL: Duration = Duration::from_millis(500);

/// POSTs an empty body to `endpoint`; a non-2xx status is an error.
pub async fn post_control(client: &HttpClient, headers: &http::HeaderMap, endpoint: &str) -> Result<()> {
    let r = client.request_raw(http::Method::POST, endpoint, headers, None).await?;
    if (200..300).contains(&r.status) {
        Ok(())
    } else {
        Err(BenchError::HttpStatus {
            context: format!("POST {}", client.shown_url(&r.path)),
            status: r.status,
            body: r.snippet(),
        })
    }
}

/// `--reset-prefix-cache`: POST `/reset_prefix_cache`. vLLM serves it only with
/// `VLLM_SERVER_DEV_MODE=1`; the error says so.
pub async fn reset_prefix_cache(client: &HttpClient, headers: &http::HeaderMap) -> Result<()> {
    post_control(client, headers, "/reset_prefix_cache").await.map_err(|e| match e {
        BenchError::HttpStatus { context, status, body } => BenchError::HttpStatus {
            context: format!("{context} (vLLM serves it only with VLLM_SERVER_DEV_MODE=1)"),
            status,
            body,
        },
        other => other,
    })
}

/// Profiler options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProfileOptions {
    /// Start only once `vllm:num_requests_running ≥ N`, then profile for `duration`.
    pub batch_threshold: Option<u64>,
    pub duration: Duration,
}

/// Runs the profiler for one measured phase: started at once (immediate mode) or when the
/// batch threshold is reached, stopped when `stop` fires (the phase ended) or, in threshold
/// mode, after `duration`.
pub async fn profile_until(
    client: HttpClient,
    headers: http::HeaderMap,
    opts: ProfileOptions,
    stop: CancellationToken,
) -> ProfileOutcome {
    let t0 = Instant::now();
    let mut out = ProfileOutcome::default();
    if let Some(n) = opts.batch_threshold {
        // Why the threshold could not be read, when the latest poll failed: said with the warning.
        let mut poll_error: Option<String> = None;
        loop {
            if stop.is_cancelled() {
                let why =
                    poll_error.map(|e| format!(" (the last /metrics poll failed: {e})")).unwrap_or_default();
                out.warnings.push(format!(
                    "profiling never started: vllm:num_requests_running did not reach {n} during the run{why}"
                ));
                return out;
            }
            // A poll in flight when the run ends is abandoned (it held the end for its timeout).
            let polled = tokio::select! {
                r = fetch_metrics_text(&client, &headers) => r,
                _ = stop.cancelled() => continue,
            };
            let running = match polled {
                Ok(text) => {
                    poll_error = None;
                    parse_sample(&text, 0.0).ok().and_then(|s| s.running)
                }
                Err(e) => {
                    poll_error = Some(e.to_string());
                    None
                }
            };
            if running.is_some_and(|r| r >= n as f64) {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(THRESHOLD_POLL) => {}
                _ = stop.cancelled() => {}
            }
        }
    }
    if let Err(e) = post_control(&client, &headers, "/start_profile").await {
        out.warnings.push(format!("profiling did not start: {e}"));
        return out;
    }
    out.started_at_s = Some(t0.elapsed().as_secs_f64());
    match opts.batch_threshold {
        Some(_) => {
            tokio::select! {
                _ = tokio::time::sleep(opts.duration) => {}
                _ = stop.cancelled() => {}
            }
        }
        None => stop.cancelled().await,
    }
    match post_control(&client, &headers, "/stop_profile").await {
        Ok(()) => out.stopped_at_s = Some(t0.elapsed().as_secs_f64()),
        Err(e) => out.warnings.push(format!("profiling did not stop: {e}")),
    }
    out
}

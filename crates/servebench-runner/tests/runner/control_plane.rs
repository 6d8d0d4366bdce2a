//! Control-plane calls of experiments (`/reset_prefix_cache`, `/start_profile`, `/stop_profile`,
//! `/metrics` polls) carry the run's headers and API key, and errors keep the status.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use axum::http::{HeaderMap, StatusCode};
use axum::routing::{get, post};
use axum::Router;
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_runner::observe::profiling::{profile_until, reset_prefix_cache, ProfileOptions};
use servebench_runner::observe::scrape::scrape_until;
use servebench_runner::CancellationToken;
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn auth(h: &HeaderMap) -> Option<String> {
    h.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_owned)
}

async fn server(seen: Seen, reset_status: StatusCode) -> String {
    let (s1, s2, s3, s4) = (seen.clone(), seen.clone(), seen.clone(), seen);
    let app = Router::new()
        .route(
            "/reset_prefix_cache",
            post(move |h: HeaderMap| async move {
                s1.lock().unwrap().push(("reset".into(), auth(&h)));
                reset_status
            }),
        )
        .route(
            "/start_profile",
            post(move |h: HeaderMap| async move { s2.lock().unwrap().push(("start".into(), auth(&h))) }),
        )
        .route(
            "/stop_profile",
            post(move |h: HeaderMap| async move { s3.lock().unwrap().push(("stop".into(), auth(&h))) }),
        )
        .route(
            "/metrics",
            get(move |h: HeaderMap| async move {
                s4.lock().unwrap().push(("metrics".into(), auth(&h)));
                "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 5\n\
                 vllm:num_requests_waiting{model_name=\"m\"} 1\n"
            }),
        );
    servebench_testkit::axum_server::serve(app).await
}

fn client(base: &str) -> (HttpClient, http::HeaderMap) {
    let c = HttpClient::new(ClientOptions { base_url: base.into(), ..ClientOptions::default() }).unwrap();
    let mut h = http::HeaderMap::new();
    h.insert(http::header::AUTHORIZATION, "Bearer sk-test".parse().unwrap());
    (c, h)
}

#[tokio::test]
async fn every_control_call_carries_the_users_key() {
    let seen: Seen = Arc::default();
    let base = server(seen.clone(), StatusCode::OK).await;
    let (c, h) = client(&base);
    reset_prefix_cache(&c, &h).await.unwrap();

    let signal = CancellationToken::new();
    let stop = signal.clone();
    let opts = ProfileOptions { batch_threshold: Some(4), duration: Duration::from_millis(50) };
    let profile = tokio::spawn(profile_until(c.clone(), h.clone(), opts, signal.clone()));
    let scrape = tokio::spawn(scrape_until(c.clone(), h.clone(), Duration::from_millis(20), signal));
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.cancel();
    let outcome = profile.await.unwrap();
    let series = scrape.await.unwrap();
    assert!(outcome.started_at_s.is_some() && outcome.stopped_at_s.is_some(), "{outcome:?}");
    // Threshold mode stops after --profile-duration, before the run ends.
    assert!(outcome.stopped_at_s.unwrap() - outcome.started_at_s.unwrap() < 0.25);
    assert!(series.samples.len() >= 3);
    assert_eq!(series.derived.mean_running, Some(5.0));
    assert_eq!(series.derived.mean_queue_depth, Some(1.0));

    let seen = seen.lock().unwrap();
    for kind in ["reset", "start", "stop", "metrics"] {
        assert!(seen.iter().any(|(k, _)| k == kind), "no {kind} call: {seen:?}");
    }
    assert!(seen.iter().all(|(_, a)| a.as_deref() == Some("Bearer sk-test")), "{seen:?}");
}

/// A `/metrics` that cannot be read left the threshold's warning saying only that the running
/// count "did not reach N", as if the server had been idle: the poll's error is said with it.
#[tokio::test]
async fn a_threshold_never_read_says_why_the_metrics_poll_failed() {
    let port = servebench_testkit::net::closed_port();
    let (c, h) = client(&format!("http://127.0.0.1:{port}"));
    let signal = CancellationToken::new();
    let opts = ProfileOptions { batch_threshold: Some(4), duration: Duration::from_millis(50) };
    let profile = tokio::spawn(profile_until(c, h, opts, signal.clone()));
    tokio::time::sleep(Duration::from_millis(100)).await;
    signal.cancel();
    let outcome = profile.await.unwrap();
    assert_eq!(outcome.started_at_s, None);
    let warning = outcome.warnings.join(" | ");
    assert!(
        warning.contains("did not reach 4") && warning.contains("the last /metrics poll failed"),
        "{warning}"
    );
}

#[tokio::test]
async fn a_refused_cache_reset_is_an_error_naming_dev_mode() {
    let base = server(Arc::default(), StatusCode::NOT_FOUND).await;
    let (c, h) = client(&base);
    let e = reset_prefix_cache(&c, &h).await.unwrap_err();
    let text = e.to_string();
    assert!(text.contains("404") && text.contains("VLLM_SERVER_DEV_MODE=1"), "{text}");
    assert!(!text.contains("sk-test"));
}

/// The measured phase waits on `before_start` for the first `/metrics` answer, so the counters'
/// baseline is read before any measured request is sent (a delta then covers them all).
#[tokio::test]
async fn the_baseline_scrape_answers_before_the_measured_phase_starts() {
    use servebench_runner::observe::observer::RunObserver;
    use servebench_runner::observe::server_side::{ServerSide, ServerSideOptions};
    struct Quiet;
    impl RunObserver for Quiet {
        fn message(&self, _: &str) {}
    }
    let seen: Seen = Arc::default();
    let base = server(seen.clone(), StatusCode::OK).await;
    let (c, h) = client(&base);
    let options =
        ServerSideOptions { scrape_interval: Some(Duration::from_secs(3600)), ..Default::default() };
    let side = ServerSide::arm(&c, &h, &options);
    let observer = side.observer(Arc::new(Quiet));
    assert!(seen.lock().unwrap().is_empty(), "nothing is scraped before the phase");
    let baseline = observer.before_start().expect("scraping gives a baseline to wait for");
    baseline.cancelled().await;
    assert_eq!(seen.lock().unwrap().iter().filter(|(k, _)| k == "metrics").count(), 1);
    observer.started(1);
    observer.finished();
    let out = side.finish().await;
    // The baseline and the final sample.
    assert_eq!(out.server.unwrap().samples.len(), 2);

    // Without scraping there is nothing to wait for.
    let side = ServerSide::arm(&c, &h, &ServerSideOptions::default());
    let token = side.observer(Arc::new(Quiet)).before_start().unwrap();
    assert!(token.is_cancelled());
}

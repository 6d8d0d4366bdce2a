//! Timing and ground truth. Bounds are loose (ratios, "not before the deadline"); no test
//! depends on how fast this machine is.

use std::time::Duration;

use crate::common::*;
use serde_json::json;

fn median_gap(times: &[std::time::Instant]) -> Duration {
    let mut gaps: Vec<Duration> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    gaps[gaps.len() / 2]
}

#[tokio::test]
async fn event_spacing_follows_fixed_timing() {
    let ttft = Duration::from_millis(40);
    let itl = Duration::from_millis(10);
    let cfg = config().with_fixed_timing_ms(40.0, 10.0).unwrap().with_ground_truth(true);
    let sim = start(cfg).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let body =
        json!({"model": MODEL, "prompt": "time me", "max_tokens": 20, "ignore_eos": true, "stream": true});
    // Spacing is checked loosely (median gap within 50% of itl) and, since a starved test
    // machine can delay a whole run, on the best of three attempts. The ground-truth guarantees
    // below (never before a deadline, client after server) hold on every attempt.
    let mut spacing_ok = Vec::new();
    for attempt in 0..3 {
        let id = format!("t-{attempt}");
        let r = c.post("/v1/completions", &[("x-request-id", &id)], body.to_string().as_bytes()).await;
        assert_eq!(r.chunks.len(), 20);
        let first = r.chunks[0].0 - r.sent;
        assert!(first >= ttft, "first chunk after {first:?}");

        let truth = sim.take_ground_truth();
        assert_eq!(truth.len(), 1);
        let t = &truth[0];
        assert_eq!(t.request_id, id);
        assert_eq!(t.endpoint, "/v1/completions");
        assert!(t.stream);
        assert_eq!(t.events.len(), 20);
        assert_eq!(t.completion_tokens, 20);
        assert!(t.done.is_some());
        for (i, e) in t.events.iter().enumerate() {
            assert_eq!(e.tokens, 1);
            let deadline = t.received + ttft + itl * i as u32;
            assert!(e.at >= deadline, "event {i} sent before its deadline");
        }
        for (i, (at, _)) in r.chunks.iter().enumerate() {
            assert!(*at >= t.events[i].at, "client saw event {i} before the server sent it");
        }
        let client_gap = median_gap(&r.chunks.iter().map(|c| c.0).collect::<Vec<_>>());
        let server_gap = median_gap(&t.events.iter().map(|e| e.at).collect::<Vec<_>>());
        let near = |g: Duration| g > itl / 2 && g < itl * 3 / 2;
        spacing_ok.push((near(client_gap) && near(server_gap), client_gap, server_gap));
        if near(client_gap) && near(server_gap) {
            break;
        }
    }
    assert!(spacing_ok.iter().any(|a| a.0), "median gaps (client, server) far from itl: {spacing_ok:?}");
    assert!(sim.ground_truth().is_empty());
    sim.shutdown().await;
}

#[tokio::test]
async fn non_streaming_waits_for_the_whole_generation() {
    let cfg = config().with_fixed_timing_ms(10.0, 5.0).unwrap().with_ground_truth(true);
    let sim = start(cfg).await;
    let mut c = Conn::connect(sim.local_addr()).await;
    let r =
        c.post_json("/v1/completions", &json!({"prompt": "x", "max_tokens": 9, "ignore_eos": true})).await;
    assert_eq!(r.status, 200);
    let t = &sim.ground_truth()[0];
    assert!(!t.stream);
    assert_eq!(t.events.len(), 1);
    assert_eq!(t.events[0].tokens, 9);
    assert!(t.events[0].at >= t.received + Duration::from_millis(10 + 8 * 5));
    sim.shutdown().await;
}

#[tokio::test]
async fn many_concurrent_streams_complete() {
    let cfg = config().with_fixed_timing_ms(5.0, 2.0).unwrap().with_ground_truth(true);
    let sim = start(cfg).await;
    let addr = sim.local_addr();
    let futs: Vec<_> = (0..64)
        .map(|i| async move {
            let mut c = Conn::connect(addr).await;
            let body = json!({"model": MODEL, "prompt": format!("p{i}"), "max_tokens": 25, "ignore_eos": true,
                              "stream": true, "stream_options": {"include_usage": true}});
            let id = format!("c-{i}");
            let r = c.post("/v1/completions", &[("x-request-id", &id)], body.to_string().as_bytes()).await;
            r.sse_json().last().unwrap()["usage"]["completion_tokens"].as_u64().unwrap()
        })
        .collect();
    let counts = join_all(futs).await;
    assert!(counts.iter().all(|&n| n == 25));
    let truth = sim.ground_truth();
    assert_eq!(truth.len(), 64);
    assert!(truth.iter().all(|t| t.events.len() == 25 && t.done.is_some()));
    sim.shutdown().await;
}

#[tokio::test]
async fn shutdown_lets_in_flight_streams_finish() {
    let sim = start(config().with_fixed_timing_ms(5.0, 5.0).unwrap()).await;
    let addr = sim.local_addr();
    let mut c = Conn::connect(addr).await;
    let body = json!({"prompt": "x", "max_tokens": 10, "ignore_eos": true, "stream": true}).to_string();
    let sent = c.send_post("/v1/completions", body.as_bytes()).await;
    let head = c.read_head(sent).await;
    assert_eq!(head.status, 200);
    // The stream is in flight: shut down concurrently; the stream still completes.
    let shutdown = tokio::spawn(sim.shutdown());
    let r = c.read_body(head).await;
    assert_eq!(r.sse_json().len(), 10);
    shutdown.await.unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "listener closed");
}

use super::*;
use servebench_core::metrics::{compute, MetricsConfig};
use servebench_core::TokenEvents;

use servebench_testkit::prom_text;

fn completed(index: u64, dispatched: u64, first: u64, gaps: &[u32], done: u64, tokens: u32) -> RequestRecord {
    let mut r = RequestRecord::scheduled(index, format!("r{index}"), 0, 10, tokens);
    r.outcome = Outcome::Completed;
    r.dispatched_us = Some(dispatched);
    r.first_token_us = Some(first);
    r.last_token_us = Some(first + gaps.iter().map(|&g| u64::from(g)).sum::<u64>());
    r.done_us = Some(done);
    r.token_events = TokenEvents { gaps_us: gaps.to_vec(), tokens: vec![] };
    r.token_event_count = gaps.len() as u32 + 1;
    r.completion_tokens = Some(tokens);
    r
}

#[test]
fn histogram_buckets_are_le_and_cumulative() {
    let h = AtomicHistogram::new(&[10, 100]);
    for v in [0, 10, 11, 100, 101, 5_000] {
        h.observe(v);
    }
    assert_eq!(h.count(), 6);
    assert_eq!(h.sum_us(), 5_222);
    assert_eq!(h.cumulative(), vec![(Some(0.00001), 2), (Some(0.0001), 4), (None, 6)]);
}

#[test]
fn counts_outcomes_kinds_tokens_and_in_flight() {
    let m = LiveMetrics::new();
    m.begin(4);
    for lateness in [5, 20, 3_000] {
        m.request_sent(lateness);
    }
    // TTFT 2 ms and 30 ms; E2EL 10 ms and 60 ms; ITL gaps 1 ms, 2 ms, 4 ms.
    let a = completed(0, 1_000, 3_000, &[1_000, 2_000], 11_000, 3);
    let b = completed(1, 0, 30_000, &[4_000], 60_000, 7);
    let mut c = RequestRecord::scheduled(2, "r2".into(), 0, 10, 5);
    c.fail(ErrorKind::Timeout, "stalled");
    let mut d = RequestRecord::scheduled(3, "r3".into(), 0, 10, 5);
    d.outcome = Outcome::Cancelled;
    for r in [&a, &b, &c] {
        m.request_ended(r);
        m.sent_request_ended();
    }
    m.request_ended(&d);
    let s = m.snapshot();
    assert_eq!((s.scheduled, s.sent, s.completed, s.failed, s.cancelled, s.in_flight), (4, 3, 2, 1, 1, 0));
    assert_eq!(m.output_tokens(), 10);
    assert_eq!(m.failed_of(ErrorKind::Timeout), 1);

    let exp = prom_text::parse(&m.render_prometheus()).unwrap();
    assert_eq!(exp.get("servebench_requests_completed_total", &[]), Some(2.0));
    assert_eq!(exp.get("servebench_requests_failed_total", &[("kind", "timeout")]), Some(1.0));
    assert_eq!(exp.sum("servebench_requests_failed_total"), 1.0);
    assert_eq!(exp.get("servebench_requests_cancelled_total", &[]), Some(1.0));
    assert_eq!(exp.get("servebench_output_tokens_total", &[]), Some(10.0));
    assert_eq!(exp.get("servebench_ttft_seconds_count", &[]), Some(2.0));
    assert_eq!(exp.get("servebench_ttft_seconds_sum", &[]), Some(0.032));
    assert_eq!(exp.get("servebench_ttft_seconds_bucket", &[("le", "0.0025")]), Some(1.0));
    assert_eq!(exp.get("servebench_ttft_seconds_bucket", &[("le", "0.025")]), Some(1.0));
    assert_eq!(exp.get("servebench_ttft_seconds_bucket", &[("le", "0.05")]), Some(2.0));
    assert_eq!(exp.get("servebench_e2el_seconds_sum", &[]), Some(0.07));
    assert_eq!(exp.get("servebench_itl_seconds_count", &[]), Some(3.0));
    assert_eq!(exp.get("servebench_itl_seconds_bucket", &[("le", "0.002")]), Some(2.0));
    assert_eq!(exp.get("servebench_dispatch_lateness_seconds_bucket", &[("le", "0.00001")]), Some(1.0));
    assert_eq!(exp.get("servebench_dispatch_lateness_seconds_count", &[]), Some(3.0));
    assert_eq!(exp.types["servebench_e2el_seconds"], "histogram");
    assert_eq!(exp.get("servebench_requests_waiting_for_prefill", &[]), None, "no prefill cap, no series");

    // The same records through the run's metrics: the counters agree.
    let run = compute(&[a, b, c, d], &MetricsConfig::default());
    assert_eq!(run.total_output_tokens, m.output_tokens());
    assert_eq!((run.completed, run.failed, run.cancelled), (2, 1, 1));
}

#[test]
fn rates_use_the_last_window_of_samples() {
    let m = LiveMetrics::new();
    m.begin(10);
    // Rate = (ended now − ended at the oldest sample at most 5 s old) / time since that sample.
    m.samples.lock().unwrap().extend([(0, 0, 0), (4_000_000, 10, 100), (8_000_000, 20, 300)]);
    let (rps, tps) = m.rates(9_000_000, 30, 700);
    assert!((rps - 20.0 / 5.0).abs() < 1e-9, "{rps}");
    assert!((tps - 600.0 / 5.0).abs() < 1e-9, "{tps}");
    // Just past 5 s, the 4 s sample is out of the window: the 8 s one is used.
    let (rps, tps) = m.rates(10_000_000, 30, 700);
    assert!((rps - 10.0 / 2.0).abs() < 1e-9, "{rps}");
    assert!((tps - 400.0 / 2.0).abs() < 1e-9, "{tps}");
    // No sample yet: the average since the start.
    let fresh = LiveMetrics::new();
    assert_eq!(fresh.rates(2_000_000, 4, 10), (2.0, 5.0));
    assert_eq!(fresh.rates(0, 4, 10), (0.0, 0.0));
}

/// The progress line's req/s used to count every ended request: after Ctrl-C, the burst of
/// cancelled requests showed as throughput. Only completed requests count.
#[test]
fn request_rate_counts_completed_requests_not_cancelled_or_failed() {
    let m = LiveMetrics::new();
    m.begin(8);
    std::thread::sleep(std::time::Duration::from_millis(2));
    m.request_ended(&completed(0, 0, 1_000, &[], 2_000, 1));
    let mut failed = RequestRecord::scheduled(1, "r1".into(), 0, 10, 5);
    failed.fail(ErrorKind::Timeout, "stalled");
    m.request_ended(&failed);
    for i in 2..8 {
        let mut c = RequestRecord::scheduled(i, format!("r{i}"), 0, 10, 5);
        c.outcome = Outcome::Cancelled;
        m.request_ended(&c);
    }
    let s = m.snapshot();
    assert_eq!((s.completed, s.failed, s.cancelled), (1, 1, 6));
    // No sample yet: the rate is completed / elapsed, so rate × elapsed is the completed count.
    assert!(s.elapsed_s > 0.0);
    assert!((s.requests_per_s * s.elapsed_s - 1.0).abs() < 1e-9, "{s:?}");
}

#[test]
fn parser_rejects_malformed_expositions() {
    assert!(prom_text::parse("x 1\n").is_err(), "sample without TYPE");
    assert!(prom_text::parse("# TYPE x counter\nx -1\n").is_err());
    assert!(prom_text::parse("# TYPE x counter\nx 1").is_err(), "no final newline");
    let bad_hist = "# TYPE h histogram\nh_bucket{le=\"1\"} 3\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n";
    assert!(prom_text::parse(bad_hist).is_err());
    let ok_hist = "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n";
    assert!(prom_text::parse(ok_hist).is_ok());
}

/// With a prefill cap the requests waiting for a prefill slot are exported too (the dashboard
/// and the progress line showed them; `--metrics-port` did not).
#[test]
fn the_prefill_wait_is_a_gauge_on_the_metrics_endpoint_with_a_prefill_cap() {
    let m = LiveMetrics::new();
    let waiting = m.track_prefill();
    waiting.wait_started();
    waiting.wait_started();
    waiting.wait_ended();
    let exp = prom_text::parse(&m.render_prometheus()).unwrap();
    assert_eq!(exp.get("servebench_requests_waiting_for_prefill", &[]), Some(1.0));
    assert_eq!(exp.types["servebench_requests_waiting_for_prefill"], "gauge");
}

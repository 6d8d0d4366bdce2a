//! `--stages` / `--duration` and LoRA against the in-process simulator: nothing is issued after
//! the end, stages are tagged and counted on their own, the end either drains or cancels the
//! requests in flight, and each request sends its (deterministic) adapter as the model.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_client::backend::BackendKind;
use servebench_core::metrics::groups::by_stage;
use servebench_core::metrics::MetricsConfig;
use servebench_core::schedule::RateConfig;
use servebench_core::Outcome;
use servebench_runner::config::load_options::Stage;
use servebench_runner::config::load_options::{LoraAssignment, LoraConfig};
use servebench_runner::load::stages::staged_schedule;
use servebench_sim::SimConfig;
use std::time::Duration;

async fn sim(ttft_ms: f64, itl_ms: f64, loras: &[&str]) -> servebench_sim::SimHandle {
    let tok = servebench_data::tokenizer::load_tokenizer(crate::common::TOKENIZER).unwrap();
    let mut cfg = SimConfig::new("base", tok).with_fixed_timing_ms(ttft_ms, itl_ms).unwrap();
    cfg.lora_modules = loras.iter().map(|s| s.to_string()).collect();
    servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stages_then_duration_stop_issuing_and_report_per_stage() {
    let sim = sim(5.0, 2.0, &[]).await;
    let stages = vec![Stage::at_rate(20.0, 0.5), Stage::at_rate(60.0, 0.5)];
    let mut cfg = crate::common::config(sim.base_url(), "base", BackendKind::Completions, 7);
    cfg.rate = RateConfig { request_rate: f64::INFINITY, burstiness: 1.0, ramp_up: None };
    cfg.load.stages = stages.clone();
    // The duration cuts the second stage short.
    cfg.load.duration = Some(Duration::from_millis(800));
    let records = crate::common::run(cfg.clone()).await;
    let schedule = staged_schedule(&stages, 1.0, cfg.seed);
    let expected: Vec<_> = schedule.offsets_us.iter().filter(|&&o| o < 800_000).collect();
    assert_eq!(records.len(), expected.len());
    assert!(records.len() > 10);
    for (r, &&o) in records.iter().zip(&expected) {
        assert_eq!(r.intended_us, o);
        assert!(r.intended_us < 800_000, "nothing is scheduled after the end");
        // Drained: everything sent finishes.
        assert_eq!(r.outcome, Outcome::Completed);
        assert_eq!(r.prompt_tokens, records[(r.index % 7) as usize].prompt_tokens, "prompts are reused");
    }
    let per_stage = by_stage(&records, &MetricsConfig::default());
    assert_eq!(per_stage.len(), 2);
    let n0 =
        schedule.stage.iter().zip(&schedule.offsets_us).filter(|(s, o)| **s == 0 && **o < 800_000).count();
    assert_eq!(per_stage[0].1.completed as usize, n0);
    assert_eq!(per_stage[1].1.completed as usize, records.len() - n0);
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_end_cancels_in_flight_requests_when_asked() {
    // Each request streams for about 2 s; the run ends at 0.4 s.
    let sim = sim(10.0, 50.0, &[]).await;
    let mut cfg = crate::common::config(sim.base_url(), "base", BackendKind::Completions, 5);
    if let servebench_runner::DatasetSpec::Random(r) = &mut cfg.dataset {
        r.output_len = 40;
    }
    cfg.rate = RateConfig { request_rate: 20.0, burstiness: f64::INFINITY, ramp_up: None };
    cfg.load.duration = Some(Duration::from_millis(400));
    cfg.load.cancel_at_end = true;
    let records = crate::common::run(cfg).await;
    // Constant gaps of 50 ms: arrivals at 50, 100, ..., 350 ms.
    assert_eq!(records.len(), 7);
    for r in &records {
        assert_eq!(r.outcome, Outcome::Cancelled, "record {}", r.index);
        let done = r.done_us.unwrap();
        assert!(done >= 400_000, "cancelled at the end, not before: {done}");
        assert!(done < 1_500_000, "cancelled at the end, not after the stream: {done}");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lora_adapters_are_sent_as_the_model_deterministically() {
    let sim = sim(5.0, 1.0, &["sql", "chat"]).await;
    let lora = LoraConfig { modules: vec!["sql".into(), "chat".into()], assignment: LoraAssignment::Random };
    let mut cfg = crate::common::config(sim.base_url(), "base", BackendKind::Completions, 24);
    cfg.load.lora = Some(lora.clone());
    let a = crate::common::run(cfg.clone()).await;
    let b = crate::common::run(cfg.clone()).await;
    let expected = lora.names(24, cfg.seed);
    for (i, r) in a.iter().enumerate() {
        // The simulator answers only models it serves: completed = the adapter name was sent.
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
        assert_eq!(r.lora.as_deref(), Some(expected[i]));
        assert_eq!(r.lora, b[i].lora, "same seed, same assignment");
    }
    assert!(expected.contains(&"sql") && expected.contains(&"chat"));
    // An adapter the server does not serve fails (404), so the field really is the adapter.
    cfg.load.lora =
        Some(LoraConfig { modules: vec!["unknown".into()], assignment: LoraAssignment::RoundRobin });
    let c = crate::common::run(cfg).await;
    assert!(c.iter().all(|r| r.outcome == Outcome::Failed && r.http_status == Some(404)));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_with_an_infinite_rate_stops_the_gated_workload_at_the_end() {
    // Two in flight, each about 80 ms: far fewer than 60 requests fit in 0.5 s.
    let sim = sim(20.0, 10.0, &[]).await;
    let mut cfg = crate::common::config(sim.base_url(), "base", BackendKind::Completions, 60);
    cfg.max_concurrency = Some(2);
    cfg.load.duration = Some(Duration::from_millis(500));
    let records = crate::common::run(cfg).await;
    assert_eq!(records.len(), 60);
    let completed = records.iter().filter(|r| r.outcome == Outcome::Completed).count();
    let never_sent =
        records.iter().filter(|r| r.outcome == Outcome::Cancelled && r.dispatched_us.is_none()).count();
    assert!(completed >= 2, "{completed}");
    assert_eq!(completed + never_sent, 60, "drained: what was sent finished, the rest was never sent");
    for r in records.iter().filter(|r| r.dispatched_us.is_some()) {
        assert!(r.dispatched_us.unwrap() < 600_000, "issued after the end: {:?}", r.dispatched_us);
    }
    sim.shutdown().await;
}

/// Most requests in flight at once among `records` (from their dispatch and end times).
fn peak_in_flight(records: &[&servebench_core::RequestRecord]) -> usize {
    let mut events: Vec<(u64, i32)> = Vec::new();
    for r in records {
        if let (Some(d), Some(e)) = (r.dispatched_us, r.done_us) {
            events.push((d, 1));
            events.push((e, -1));
        }
    }
    // Ends before starts at the same instant: a slot freed and refilled is not two in flight.
    events.sort_by_key(|&(t, delta)| (t, delta));
    let (mut now, mut peak) = (0i32, 0i32);
    for (_, delta) in events {
        now += delta;
        peak = peak.max(now);
    }
    peak as usize
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_stages_hold_each_limit_in_a_closed_loop() {
    // About 15 ms per request: 2 then 6 in flight for 0.4 s each, prompts cycled.
    let sim = sim(5.0, 2.0, &[]).await;
    let mut cfg = crate::common::config(sim.base_url(), "base", BackendKind::Completions, 5);
    cfg.load.stages = vec![Stage::at_concurrency(2, 0.4), Stage::at_concurrency(6, 0.4)];
    let records = crate::common::run(cfg).await;
    assert!(records.iter().all(|r| r.outcome == Outcome::Completed), "drained");
    let indices: Vec<u64> = records.iter().map(|r| r.index).collect();
    assert_eq!(indices, (0..records.len() as u64).collect::<Vec<_>>(), "one record per request sent");
    assert!(records.len() > 10, "more requests than the 5 prompts: they are cycled");
    assert_eq!(records[7].prompt_tokens, records[2].prompt_tokens, "request i sends prompt i mod 5");
    let stage = |k| records.iter().filter(|r| r.stage == Some(k)).collect::<Vec<_>>();
    let (s0, s1) = (stage(0), stage(1));
    assert_eq!(s0.len() + s1.len(), records.len());
    // A request belongs to the stage it was released in; the write that follows may land a
    // little later on a loaded machine, so the stage bounds pin the release (intended) time.
    assert!(s0.iter().all(|r| r.intended_us < 400_000));
    assert!(s1.iter().all(|r| (400_000..800_000).contains(&r.intended_us)));
    assert!(records.iter().all(|r| r.dispatched_us.unwrap() >= r.intended_us), "sent after release");
    assert!(
        peak_in_flight(&s0) <= 2 && peak_in_flight(&s1) <= 6,
        "{} {}",
        peak_in_flight(&s0),
        peak_in_flight(&s1)
    );
    assert!(peak_in_flight(&s1) > 2, "the limit was raised");
    assert!(s1.len() > s0.len(), "{} vs {}", s1.len(), s0.len());
    let per_stage = by_stage(&records, &MetricsConfig::default());
    assert_eq!(per_stage.len(), 2);
    sim.shutdown().await;
}

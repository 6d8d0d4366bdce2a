//! Session-tree replay against the engine simulator (prefix caching on): a session whose plan
//! turn forks three concurrent sub-agents (one with a tool turn) that a summary turn joins. The
//! records must show the join dispatched after every branch ended, the branches overlapping in
//! time, each branch's prompt extending its parent's context (by count, and by the server's
//! cached prefix), and the per-session metrics computed from them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use servebench_client::backend::{BackendKind, TargetConfig};
use servebench_client::request::{ExecOptions, RequestTarget};
use servebench_client::transport::{ClientOptions, HttpClient};
use servebench_core::metrics::agentic::session_tree_metrics;
use servebench_core::{Outcome, RequestRecord, RunClock};
use servebench_data::agentic::{load, AgenticFormat, LoadOptions};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::load::agentic::{
    materialize, run_trees, TreeControls, TreeLoop, TreeRun, TreeWorkload,
};
use servebench_runner::CancellationToken;
use servebench_sim::{EngineConfig, SimConfig};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const FIXTURE: &str = "../servebench-data/tests/data/agentic/fork_join.jsonl";

async fn replay(base_url: String, work: Arc<TreeWorkload>, controls: TreeControls) -> Vec<RequestRecord> {
    let client = HttpClient::new(ClientOptions { base_url, ..ClientOptions::default() }).unwrap();
    let target = TargetConfig {
        backend: BackendKind::Chat,
        model: "tree".into(),
        ignore_eos: true,
        ..TargetConfig::default()
    };
    let run = TreeRun {
        target: Arc::new(RequestTarget::new(&client, &target).unwrap()),
        client,
        opts: Arc::new(ExecOptions::default()),
        clock: RunClock::start(),
        request_id_prefix: "a-".into(),
        concurrency: 8,
        tokenizer: Some(crate::common::cl100k()),
        keep_text: false,
        controls,
        live: None,
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stats = run_trees(run, work, tx, CancellationToken::new(), CancellationToken::new()).await;
    assert_eq!(stats.not_released, 0);
    let mut out = Vec::new();
    while let Some(r) = rx.recv().await {
        out.push(r);
    }
    out.sort_by_key(|r| r.index);
    out
}

async fn engine_sim() -> servebench_sim::SimHandle {
    let mut engine = EngineConfig::h100_8b();
    engine.jitter = 0.0;
    engine.block_size = 16;
    let cfg = SimConfig::new("tree", crate::common::cl100k()).with_engine(engine);
    servebench_sim::start(cfg, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

fn workload() -> Arc<TreeWorkload> {
    let opts = LoadOptions { format: Some(AgenticFormat::Servebench), default_output_tokens: 16 };
    let sessions = load(Path::new(FIXTURE), &opts).unwrap();
    let random = RandomDatasetConfig { seed: 3, ..RandomDatasetConfig::default() };
    Arc::new(materialize(sessions, &random, crate::common::cl100k().as_ref()).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_tree_branches_overlap_join_waits_and_prompts_extend_the_parent() {
    let sim = engine_sim().await;
    let work = workload();
    let controls =
        TreeControls { speedup: 1.0, max_idle: None, start_gap_cap: None, mode: TreeLoop::Closed(2) };
    let recs = replay(sim.base_url(), work.clone(), controls).await;
    assert_eq!(recs.len(), work.turns());
    for r in &recs {
        assert_eq!(r.outcome, Outcome::Completed, "{:?}", r.error);
    }
    // Session 0: plan(0), a1(1), a2(2, tool), b1(3), c1(4), sum(5, joins a2, b1, c1).
    let s0: Vec<&RequestRecord> = recs.iter().filter(|r| r.conversation == Some(0)).collect();
    let by_turn = |t: u32| *s0.iter().find(|r| r.turn == Some(t)).unwrap();
    let (plan, a1, a2, b1, c1, sum) =
        (by_turn(0), by_turn(1), by_turn(2), by_turn(3), by_turn(4), by_turn(5));
    let end = |r: &RequestRecord| r.done_us.unwrap();
    let sent = |r: &RequestRecord| r.dispatched_us.unwrap();
    // The join waits for every branch, plus its 5 ms think time.
    for b in [a2, b1, c1] {
        assert!(sent(sum) >= end(b) + 5_000, "join sent before branch {:?} ended", b.turn);
    }
    // The three branches start after the plan and overlap in time.
    for b in [a1, b1, c1] {
        assert!(sent(b) >= end(plan));
    }
    let latest_start = [a1, b1, c1].iter().map(|r| sent(r)).max().unwrap();
    let earliest_end = [a1, b1, c1].iter().map(|r| end(r)).min().unwrap();
    assert!(latest_start < earliest_end, "the sub-agents did not run concurrently");
    // The tool turn waits for its 20 ms tool time after a1.
    assert!(sent(a2) >= end(a1) + 20_000);
    // Each branch's prompt extends its parent's: parent prompt + parent reply + new input.
    let new = |t: usize| work.inputs[0][t].1;
    let reply = |r: &RequestRecord| r.output_tokens().0;
    assert_eq!(plan.prompt_tokens, new(0));
    for (r, t) in [(a1, 1), (b1, 3), (c1, 4), (sum, 5)] {
        assert_eq!(r.prompt_tokens, plan.prompt_tokens + reply(plan) + new(t), "turn {t}");
    }
    assert_eq!(a2.prompt_tokens, a1.prompt_tokens + reply(a1) + new(2));
    // The server found the parent's prefix cached for every turn that extends it.
    for r in [a1, a2, b1, c1, sum] {
        assert!(
            r.cached_prompt_tokens.unwrap() >= 16 * (plan.prompt_tokens / 16).saturating_sub(1),
            "{:?}",
            r.turn
        );
    }
    assert_eq!(plan.cached_prompt_tokens.unwrap_or(0), 0);
    // Depth and branch tags.
    assert_eq!(
        [plan, a1, a2, b1, c1, sum].map(|r| (r.agent_depth.unwrap(), r.agent_branch.unwrap())),
        [(0, 0), (1, 1), (1, 1), (1, 2), (1, 3), (0, 0)]
    );
    // Per-session metrics from these records, checked against the records themselves.
    let m = session_tree_metrics(&recs, &[50.0]).unwrap();
    for r in &recs {
        eprintln!(
            "turn s{:?}/{:?} depth {:?} sent {:?} done {:?} prompt {} cached {:?}",
            r.conversation,
            r.turn,
            r.agent_depth,
            r.dispatched_us,
            r.done_us,
            r.prompt_tokens,
            r.cached_prompt_tokens
        );
    }
    eprintln!("{m:?}");
    assert_eq!((m.sessions, m.completed), (2, 2));
    assert_eq!(m.turns_per_session, 4.0); // (6 + 2) / 2
    assert_eq!(m.branches_per_session, 1.5); // (3 + 0) / 2
    let dur0 = (end(sum) - sent(plan)) as f64 / 1000.0;
    let s1: Vec<&RequestRecord> = recs.iter().filter(|r| r.conversation == Some(1)).collect();
    let dur1 = (s1.iter().map(|r| end(r)).max().unwrap() - s1.iter().map(|r| sent(r)).min().unwrap()) as f64
        / 1000.0;
    assert!((m.duration_ms.as_ref().unwrap().mean - (dur0 + dur1) / 2.0).abs() < 1e-9);
    let per_depth: Vec<u32> = m.ttft_by_depth.iter().map(|d| d.turns as u32).collect();
    assert_eq!(per_depth, vec![4, 4]); // depth 0: plan, sum, q, q2; depth 1: a1, a2, b1, c1
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_session_trees_start_on_their_recorded_times_scaled_by_the_speedup() {
    let sim = engine_sim().await;
    let work = workload();
    // Session 1 is recorded 500 ms after session 0; at speed-up 5 it starts 100 ms in.
    let controls = TreeControls {
        speedup: 5.0,
        max_idle: Some(Duration::from_millis(1)),
        start_gap_cap: None,
        mode: TreeLoop::Open,
    };
    let recs = replay(sim.base_url(), work, controls).await;
    let first =
        |s: u64| recs.iter().filter(|r| r.conversation == Some(s)).map(|r| r.intended_us).min().unwrap();
    assert_eq!(first(0), 0);
    assert_eq!(first(1), 100_000);
    // The idle-gap cap (1 ms) replaces the recorded 10 ms think time of session 1's second turn.
    let s1: Vec<&RequestRecord> = recs.iter().filter(|r| r.conversation == Some(1)).collect();
    let (q, q2) = (s1[0], s1[1]);
    assert_eq!(q2.intended_us, q.done_us.unwrap() + 1_000);
    sim.shutdown().await;
}

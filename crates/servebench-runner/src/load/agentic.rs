//! Session-tree replay (agentic sessions, docs/workloads.md §Session trees): sessions whose
//! turns branch into sub-agents that run concurrently and join back.
//!
//! A turn is sent once every turn it depends on has ended, then its think/tool time (divided
//! by the speed-up, capped by the idle-gap cap). Its chat history is its context parent's
//! history (the parent's own history, its new input and the reply actually received) followed
//! by its own new input, so a sub-agent shares its parent's prefix up to the fork and grows its
//! own history. Every turn of a session carries the same `X-Session-ID`. A failed turn stops
//! the turns that depend on it (recorded as cancelled, never sent); other branches go on.
//! Sessions start on their recorded times (open loop) or N at a time (closed loop); the
//! request-concurrency gate applies to every turn. Only the chat backend is supported (SB217).

use crate::config::load_options::AgenticConfig;
use crate::load::dispatch::DispatchStats;
use crate::load::session::{push_message, SESSION_HEADER};
use crate::observe::live::LiveMetrics;
use http::{HeaderName, HeaderValue};
use servebench_client::backend::BackendKind;
use servebench_client::request::{execute_prepared, ExecOptions, PreparedBody, RequestTarget};
use servebench_client::transport::HttpClient;
use servebench_core::{
    BenchError, CancelReason, Outcome, Prompt, RequestRecord, RequestSpec, Result, RunClock, TextTokenizer,
    Workload,
};
use servebench_data::agentic::{AgentSession, AgentTurn, LoadOptions, TurnInput};
use servebench_data::random::{generate_random, RandomDatasetConfig};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, Semaphore};
use tokio::task::{JoinError, JoinSet};
use tokio_util::sync::CancellationToken;

/// Refuses backends that cannot carry a message history (SB217).
pub fn check_backend(backend: BackendKind) -> Result<()> {
    if backend == BackendKind::Chat {
        Ok(())
    } else {
        Err(BenchError::AgenticBackendUnsupported { backend: backend.to_string() })
    }
}

/// Sessions with the new input of every turn as text and its token count.
#[derive(Debug, Clone)]
pub struct TreeWorkload {
    pub sessions: Vec<AgentSession>,
    /// `inputs[s][t]`: the new input of turn `t` of session `s`.
    pub inputs: Vec<Vec<(Arc<str>, u32)>>,
    /// Index of the first request of each session (turns are numbered in session order).
    pub first: Vec<usize>,
}

impl TreeWorkload {
    /// Number of turns of every session.
    pub fn turns(&self) -> usize {
        self.inputs.iter().map(Vec::len).sum()
    }
}

fn mix(mut x: u64) -> u64 {
    x = (x ^ (x >> 33)).wrapping_mul(0xff51_afd7_ed55_8ccd);
    x = (x ^ (x >> 33)).wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Gives every turn its new input: the exact text of text turns; for token-count turns, a
/// window of that many tokens of one seeded random token pool (its start hashed from session,
/// turn and seed, so unrelated turns do not share prefixes), decoded and recounted.
pub fn materialize(
    sessions: Vec<AgentSession>,
    random: &RandomDatasetConfig,
    tok: &dyn TextTokenizer,
) -> Result<TreeWorkload> {
    let longest = sessions
        .iter()
        .flat_map(|s| &s.turns)
        .filter_map(|t| match t.input {
            TurnInput::Tokens(n) => Some(n as usize),
            TurnInput::Text(_) => None,
        })
        .max();
    let pool: Vec<u32> = match longest {
        Some(n) => {
            let c = RandomDatasetConfig {
                num_prompts: 1,
                input_len: n + 4096,
                prefix_len: 0,
                range_ratio_input: 0.0,
                prompt_token_ids: false,
                ..random.clone()
            };
            let w = generate_random(&c, tok)?;
            let text = w.requests.first().and_then(|r| r.prompt.text()).unwrap_or_default().to_string();
            tok.encode(&text, false)?
        }
        None => Vec::new(),
    };
    let mut inputs = Vec::with_capacity(sessions.len());
    let mut first = Vec::with_capacity(sessions.len());
    let mut next = 0;
    for (s, session) in sessions.iter().enumerate() {
        first.push(next);
        next += session.turns.len();
        let mut v = Vec::with_capacity(session.turns.len());
        for (t, turn) in session.turns.iter().enumerate() {
            let text = match &turn.input {
                TurnInput::Text(x) => x.clone(),
                TurnInput::Tokens(n) => {
                    let n = (*n as usize).min(pool.len());
                    let room = (pool.len() - n + 1) as u64;
                    let at = (mix(random.seed ^ mix(((s as u64) << 32) | t as u64)) % room) as usize;
                    tok.decode(&pool[at..at + n], true)?
                }
            };
            let count = u32::try_from(tok.count(&text)?).unwrap_or(u32::MAX);
            v.push((Arc::from(text), count));
        }
        inputs.push(v);
    }
    Ok(TreeWorkload { sessions, inputs, first })
}

/// Loads, samples (seeded by `seed`) and materializes the sessions of `cfg` (blocking: call
/// off the runtime). `random` gives the token pool of token-count inputs.
pub fn build(
    cfg: &AgenticConfig,
    random: &RandomDatasetConfig,
    tok: &dyn TextTokenizer,
) -> Result<TreeWorkload> {
    let opts = LoadOptions { format: cfg.format, default_output_tokens: cfg.default_output_tokens };
    let mut sessions = servebench_data::agentic::load(&cfg.path, &opts)?;
    if let Some(n) = cfg.sessions {
        sessions = servebench_data::agentic::sample(sessions, n, random.seed);
    }
    materialize(sessions, random, tok)
}

/// One request per turn (index = the turn's request index, its new input as the prompt): what
/// the run's workload statistics, readiness check and dry run see.
pub fn workload_of(work: &TreeWorkload) -> Workload {
    let mut requests = Vec::with_capacity(work.turns());
    for (s, session) in work.sessions.iter().enumerate() {
        for (t, turn) in session.turns.iter().enumerate() {
            let (text, tokens) = &work.inputs[s][t];
            let index = (work.first[s] + t) as u64;
            requests.push(RequestSpec::new(index, Prompt::Text(text.clone()), *tokens, turn.output_tokens));
        }
    }
    Workload::new(requests)
}

impl TreeControls {
    /// The controls of a run's configuration.
    pub fn of(cfg: &AgenticConfig) -> TreeControls {
        TreeControls {
            speedup: cfg.speedup,
            max_idle: cfg.max_idle,
            start_gap_cap: cfg.start_gap_cap,
            mode: cfg.closed_loop.map_or(TreeLoop::Open, TreeLoop::Closed),
        }
    }
}

/// How sessions start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TreeLoop {
    /// Each session at its recorded start (relative to the earliest), divided by the speed-up.
    Open,
    /// `n` sessions at a time: a session starts when one ends.
    Closed(usize),
}

/// Replay controls.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TreeControls {
    /// Recorded times (session starts, think/tool times) are divided by this (> 0).
    pub speedup: f64,
    /// Cap on one think/tool time after the speed-up (None: uncapped).
    pub max_idle: Option<Duration>,
    /// Cap on each pause between consecutive session starts after the speed-up (open loop;
    /// None: uncapped).
    pub start_gap_cap: Option<Duration>,
    pub mode: TreeLoop,
}

impl TreeControls {
    /// A recorded session start as replayed: `start / speedup` (never capped).
    pub fn scaled(&self, recorded_us: u64) -> Duration {
        Duration::from_secs_f64(recorded_us as f64 / 1e6 / self.speedup.max(f64::MIN_POSITIVE))
    }

    /// The replayed start offsets of sessions recorded at `starts_us` (any order), from the
    /// earliest: each pause between consecutive starts is divided by the speed-up, then capped
    /// at `start_gap_cap`.
    pub fn start_offsets(&self, starts_us: &[u64]) -> Vec<Duration> {
        let mut order: Vec<usize> = (0..starts_us.len()).collect();
        order.sort_by_key(|&s| starts_us[s]);
        let mut offsets = vec![Duration::ZERO; starts_us.len()];
        let mut at = Duration::ZERO;
        for pair in order.windows(2) {
            let pause = self.scaled(starts_us[pair[1]] - starts_us[pair[0]]);
            at += self.start_gap_cap.map_or(pause, |cap| pause.min(cap));
            offsets[pair[1]] = at;
        }
        offsets
    }

    /// A recorded think/tool time as replayed: `min(gap / speedup, max_idle)`.
    pub fn gap(&self, recorded_us: u64) -> Duration {
        let d = self.scaled(recorded_us);
        self.max_idle.map_or(d, |cap| d.min(cap))
    }
}

/// Everything running session trees needs.
#[derive(Debug, Clone)]
pub struct TreeRun {
    pub client: HttpClient,
    pub target: Arc<RequestTarget>,
    pub opts: Arc<ExecOptions>,
    pub clock: RunClock,
    pub request_id_prefix: String,
    /// Requests in flight at most.
    pub concurrency: usize,
    /// Counts received replies for the history (None: the reply's output-token count).
    pub tokenizer: Option<Arc<dyn TextTokenizer>>,
    pub keep_text: bool,
    pub controls: TreeControls,
    pub live: Option<Arc<LiveMetrics>>,
}

struct Shared {
    run: TreeRun,
    work: Arc<TreeWorkload>,
    gate: Arc<Semaphore>,
    sink: mpsc::UnboundedSender<RequestRecord>,
    release: CancellationToken,
    cancel: CancellationToken,
}

/// Runs the sessions; every turn yields exactly one record on `sink`.
pub async fn run_trees(
    run: TreeRun,
    work: Arc<TreeWorkload>,
    sink: mpsc::UnboundedSender<RequestRecord>,
    release: CancellationToken,
    cancel: CancellationToken,
) -> DispatchStats {
    let gate = Arc::new(Semaphore::new(run.concurrency.max(1)));
    let mode = run.controls.mode;
    let sh = Arc::new(Shared { run, work, gate, sink, release, cancel });
    let n = sh.work.sessions.len();
    let mut stats = DispatchStats { lateness_us: Vec::with_capacity(n), not_released: 0 };
    let started: Vec<bool> = match mode {
        TreeLoop::Open => open_loop(&sh, &mut stats).await,
        TreeLoop::Closed(k) => closed_loop(&sh, k.max(1)).await,
    };
    for (s, done) in started.iter().enumerate() {
        if !done {
            stats.not_released += sh.work.inputs[s].len();
            let at = sh.run.clock.now_us();
            for t in 0..sh.work.inputs[s].len() {
                let _ = sh.sink.send(turn_record(&sh, s, t, at, 0));
            }
        }
    }
    stats
}

async fn open_loop(sh: &Arc<Shared>, stats: &mut DispatchStats) -> Vec<bool> {
    let n = sh.work.sessions.len();
    let starts: Vec<u64> = sh.work.sessions.iter().map(|s| s.start_us).collect();
    let offsets = sh.run.controls.start_offsets(&starts);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&s| offsets[s]);
    let mut started = vec![false; n];
    let mut tasks = JoinSet::new();
    for s in order {
        let offset = offsets[s];
        let due_us = u64::try_from(offset.as_micros()).unwrap_or(u64::MAX);
        let due = sh.run.clock.instant_at(due_us);
        tokio::select! {
            _ = tokio::time::sleep_until(due.into()) => {}
            _ = sh.release.cancelled() => {}
        }
        if sh.release.is_cancelled() {
            break;
        }
        let now = sh.run.clock.now_us();
        stats.lateness_us.push(now.saturating_sub(due_us));
        started[s] = true;
        let sh = sh.clone();
        tasks.spawn(async move { session(&sh, s, due_us).await });
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
    started
}

async fn closed_loop(sh: &Arc<Shared>, k: usize) -> Vec<bool> {
    let n = sh.work.sessions.len();
    let next = Arc::new(AtomicUsize::new(0));
    let started: Arc<std::sync::Mutex<Vec<bool>>> = Arc::new(std::sync::Mutex::new(vec![false; n]));
    let mut tasks = JoinSet::new();
    for _ in 0..k.min(n) {
        let (sh, next, started) = (sh.clone(), next.clone(), started.clone());
        tasks.spawn(async move {
            loop {
                if sh.release.is_cancelled() {
                    break;
                }
                let s = next.fetch_add(1, Ordering::Relaxed);
                if s >= n {
                    break;
                }
                if let Ok(mut v) = started.lock() {
                    v[s] = true;
                }
                session(&sh, s, sh.run.clock.now_us()).await;
            }
        });
    }
    while tasks.join_next().await.is_some() {}
    let v = started.lock().map(|v| v.clone()).unwrap_or_default();
    v
}

fn turn_record(sh: &Shared, s: usize, t: usize, intended: u64, base_tokens: u32) -> RequestRecord {
    let turn = &sh.work.sessions[s].turns[t];
    let idx = sh.work.first[s] + t;
    let mut r = RequestRecord::scheduled(
        idx as u64,
        format!("{}{idx}", sh.run.request_id_prefix),
        intended,
        base_tokens.saturating_add(sh.work.inputs[s][t].1),
        turn.output_tokens,
    );
    r.conversation = Some(s as u64);
    r.turn = Some(t as u32);
    r.agent_depth = Some(turn.depth);
    r.agent_branch = Some(turn.branch);
    r.agent_tool = Some(turn.tool);
    r
}

/// The history a turn leaves to the turns that extend it: the message array so far (without
/// its closing bracket) and its token count.
#[derive(Clone)]
struct History {
    json: String,
    tokens: u32,
}

/// What a turn task returns: its index, record, and (when it completed) the history it leaves.
type TurnDone = (usize, RequestRecord, Option<History>);

async fn session(sh: &Arc<Shared>, s: usize, start_us: u64) {
    let turns = &sh.work.sessions[s].turns;
    let n = turns.len();
    let mut waiting: Vec<usize> = turns.iter().map(|t| t.after.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, t) in turns.iter().enumerate() {
        for &a in &t.after {
            dependents[a].push(i);
        }
    }
    let mut histories: Vec<Option<History>> = vec![None; n];
    let mut last_end: Vec<u64> = vec![start_us; n];
    let mut sent = vec![false; n];
    let mut failed = vec![false; n];
    let header = HeaderValue::from_str(&format!("{}s{s}", sh.run.request_id_prefix)).ok();
    let mut tasks: JoinSet<TurnDone> = JoinSet::new();
    // Which turn each task sends: a task that panics leaves only its id.
    let mut turn_of_task: HashMap<tokio::task::Id, usize> = HashMap::new();
    let spawn = |tasks: &mut JoinSet<TurnDone>, t: usize, ready_us: u64, base: Option<History>| {
        let (sh, header) = (sh.clone(), header.clone());
        tasks.spawn(async move { send_turn(&sh, s, t, ready_us, base, header).await }).id()
    };
    for t in (0..n).filter(|&t| waiting[t] == 0) {
        sent[t] = true;
        turn_of_task.insert(spawn(&mut tasks, t, start_us, None), t);
    }
    while let Some(joined) = tasks.join_next_with_id().await {
        let lost = |t: usize, e: &JoinError| lost_turn(sh, s, t, last_end[t], e);
        let Some((t, rec, history)) = joined_turn(joined, &turn_of_task, lost) else { continue };
        let end = rec.done_us.unwrap_or_else(|| sh.run.clock.now_us());
        failed[t] = rec.outcome == Outcome::Failed;
        let _ = sh.sink.send(rec);
        let Some(h) = history else { continue };
        histories[t] = Some(h);
        for &d in &dependents[t] {
            waiting[d] -= 1;
            last_end[d] = last_end[d].max(end);
            if waiting[d] == 0 && !sh.release.is_cancelled() {
                sent[d] = true;
                let base = turns[d].context.and_then(|c| histories[c].clone());
                turn_of_task.insert(spawn(&mut tasks, d, last_end[d], base), d);
            }
        }
    }
    // Turns never sent: a turn they depend on failed (`dependency_failed`), or the run stopped
    // (the collector records the stop's reason).
    let blocked = blocked_by_failure(turns, &sent, &failed);
    for t in (0..n).filter(|&t| !sent[t]) {
        let base = turns[t].context.and_then(|c| histories[c].as_ref()).map_or(0, |h| h.tokens);
        let mut rec = turn_record(sh, s, t, last_end[t], base);
        if blocked[t] {
            rec.cancelled_by = Some(CancelReason::DependencyFailed);
        }
        let _ = sh.sink.send(rec);
    }
}

/// What a turn's task left: its own result, or (a panic, an abort) its turn with the failed
/// record `lost` makes of it — a panicking turn's record was dropped and the turn vanished.
fn joined_turn(
    joined: Result<(tokio::task::Id, TurnDone), JoinError>,
    turn_of_task: &HashMap<tokio::task::Id, usize>,
    lost: impl Fn(usize, &JoinError) -> RequestRecord,
) -> Option<TurnDone> {
    match joined {
        Ok((_, done)) => Some(done),
        Err(e) => turn_of_task.get(&e.id()).map(|&t| (t, lost(t, &e), None)),
    }
}

/// The record of turn `t`, whose task ended without returning one (`e`: how).
fn lost_turn(sh: &Shared, s: usize, t: usize, ready_us: u64, e: &tokio::task::JoinError) -> RequestRecord {
    let mut rec = turn_record(sh, s, t, ready_us, 0);
    crate::load::delivery::fail_lost(&mut rec, if e.is_panic() { "it panicked" } else { "it was aborted" });
    rec
}

/// The turns never sent because a turn they depend on — directly or through other unsent
/// turns — failed (`failed[t]`: turn `t` was sent and failed).
fn blocked_by_failure(turns: &[AgentTurn], sent: &[bool], failed: &[bool]) -> Vec<bool> {
    let mut blocked = vec![false; turns.len()];
    // A fixpoint over the graph: a session has few turns, and the graph's depth bounds the passes.
    let mut changed = true;
    while changed {
        changed = false;
        for (t, turn) in turns.iter().enumerate() {
            if !sent[t] && !blocked[t] && turn.after.iter().any(|&a| failed[a] || blocked[a]) {
                blocked[t] = true;
                changed = true;
            }
        }
    }
    blocked
}

async fn send_turn(
    sh: &Shared,
    s: usize,
    t: usize,
    ready_us: u64,
    base: Option<History>,
    header: Option<HeaderValue>,
) -> TurnDone {
    let turn = &sh.work.sessions[s].turns[t];
    let (text, new_tokens) = &sh.work.inputs[s][t];
    let base = base.unwrap_or(History { json: String::from("["), tokens: 0 });
    let gap = if turn.after.is_empty() { Duration::ZERO } else { sh.run.controls.gap(turn.delay_us) };
    let intended = ready_us + u64::try_from(gap.as_micros()).unwrap_or(u64::MAX);
    let record = turn_record(sh, s, t, intended, base.tokens);
    if !gap.is_zero() {
        tokio::select! {
            _ = tokio::time::sleep_until(sh.run.clock.instant_at(intended).into()) => {}
            _ = sh.release.cancelled() => {}
        }
    }
    let permit = tokio::select! {
        p = sh.gate.clone().acquire_owned() => p.ok(),
        _ = sh.release.cancelled() => None,
    };
    if permit.is_none() || sh.release.is_cancelled() {
        return (t, record, None);
    }
    let mut messages = base.json.clone();
    push_message(&mut messages, "user", text);
    let spec =
        RequestSpec::new(record.index, Prompt::Text(text.clone()), record.prompt_tokens, turn.output_tokens);
    let mut record = record;
    let body = match sh.run.target.body_template().build_messages(&format!("{messages}]"), turn.output_tokens)
    {
        Ok(b) => b,
        Err(e) => {
            record.fail(servebench_core::ErrorKind::Protocol, e.to_string());
            return (t, record, None);
        }
    };
    let headers = header.iter().map(|v| (HeaderName::from_static(SESSION_HEADER), v.clone())).collect();
    let prepared = PreparedBody { body, headers };
    if let Some(live) = &sh.run.live {
        live.request_sent(sh.run.clock.now_us().saturating_sub(intended));
    }
    let opts = ExecOptions { keep_text: true, ..ExecOptions::clone(&sh.run.opts) };
    let stop = sh.cancel.clone();
    let mut rec = execute_prepared(
        &sh.run.client,
        &sh.run.target,
        &spec,
        &prepared,
        record,
        &sh.run.clock,
        &opts,
        async move { stop.cancelled().await },
    )
    .await;
    if let Some(live) = &sh.run.live {
        live.sent_request_ended();
    }
    drop(permit);
    let reply = if sh.run.keep_text { rec.generated_text.clone() } else { rec.generated_text.take() };
    if rec.outcome != Outcome::Completed {
        return (t, rec, None);
    }
    let reply_tokens = match (&sh.run.tokenizer, &reply) {
        (Some(tok), Some(r)) => tok.count(r).ok().and_then(|n| u32::try_from(n).ok()),
        _ => None,
    }
    .unwrap_or_else(|| rec.output_tokens().0);
    push_message(&mut messages, "assistant", reply.as_deref().unwrap_or_default());
    let tokens = base.tokens.saturating_add(*new_tokens).saturating_add(reply_tokens);
    (t, rec, Some(History { json: messages, tokens }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Pins a session tree's turn whose task panics: it ends as the failed record `lost` makes
    /// (its dependents are then blocked by a failure); its record was dropped and the turn vanished.
    #[tokio::test]
    async fn a_turn_whose_task_panics_is_recorded_failed() {
        let mut tasks: JoinSet<TurnDone> = JoinSet::new();
        let mut turn_of_task = HashMap::new();
        let ok = RequestRecord::scheduled(7, "r7".into(), 0, 1, 1);
        turn_of_task.insert(tasks.spawn(async move { (0, ok, None) }).id(), 0);
        turn_of_task.insert(tasks.spawn(async { panic!("turn 1 broke") }).id(), 1);
        let lost = |t: usize, e: &JoinError| {
            let mut r = RequestRecord::scheduled(7 + t as u64, "lost".into(), 0, 1, 1);
            crate::load::delivery::fail_lost(&mut r, if e.is_panic() { "it panicked" } else { "aborted" });
            r
        };
        let mut got = Vec::new();
        while let Some(joined) = tasks.join_next_with_id().await {
            got.extend(joined_turn(joined, &turn_of_task, lost));
        }
        got.sort_by_key(|d| d.0);
        assert_eq!(got.iter().map(|d| (d.0, d.1.index)).collect::<Vec<_>>(), [(0, 7), (1, 8)]);
        assert_eq!(got[1].1.outcome, Outcome::Failed);
        assert!(got[1].1.error.as_ref().unwrap().message.contains("it panicked"));
    }

    #[test]
    fn replayed_gaps_are_divided_by_the_speedup_then_capped() {
        let c = TreeControls {
            speedup: 2.0,
            max_idle: Some(Duration::from_millis(300)),
            start_gap_cap: None,
            mode: TreeLoop::Open,
        };
        assert_eq!(c.gap(400_000), Duration::from_millis(200));
        assert_eq!(c.gap(1_000_000), Duration::from_millis(300));
        let c = TreeControls { speedup: 1.0, max_idle: None, start_gap_cap: None, mode: TreeLoop::Closed(2) };
        assert_eq!(c.gap(5_000_000), Duration::from_secs(5));
    }

    #[test]
    fn session_start_pauses_are_divided_by_the_speedup_then_capped_one_by_one() {
        let ms = Duration::from_millis;
        // Recorded starts (any order): 10 s, 0 s, 10.4 s, 70 s; speed-up 2.
        let starts = [10_000_000, 0, 10_400_000, 70_000_000];
        let c = TreeControls { speedup: 2.0, max_idle: None, start_gap_cap: None, mode: TreeLoop::Open };
        assert_eq!(c.start_offsets(&starts), [ms(5_000), ms(0), ms(5_200), ms(35_000)]);
        // Capped at 1 s: pauses 5 s, 0.2 s, 29.8 s become 1 s, 0.2 s, 1 s.
        let c = TreeControls { start_gap_cap: Some(ms(1_000)), ..c };
        assert_eq!(c.start_offsets(&starts), [ms(1_000), ms(0), ms(1_200), ms(2_200)]);
        assert!(c.start_offsets(&[]).is_empty());
    }

    /// A turn after `after`, with nothing else that matters here.
    fn turn_after(after: &[usize]) -> AgentTurn {
        AgentTurn {
            id: String::new(),
            context: after.first().copied(),
            after: after.to_vec(),
            depth: 0,
            branch: 0,
            input: TurnInput::Tokens(1),
            output_tokens: 1,
            delay_us: 0,
            tool: false,
        }
    }

    #[test]
    fn turns_behind_a_failed_turn_are_blocked_and_turns_behind_a_stop_are_not() {
        // 0 → {1, 2}; 1 → 3; {2, 3} → 4; 5 is a second root.
        let turns: Vec<AgentTurn> =
            [&[][..], &[0], &[0], &[1], &[2, 3], &[]].iter().map(|a| turn_after(a)).collect();
        // 1 failed: 3 (its child) and 4 (a join through 3) never ran because of it.
        let sent = [true, true, true, false, false, true];
        let failed = [false, true, false, false, false, false];
        assert_eq!(blocked_by_failure(&turns, &sent, &failed), [false, false, false, true, true, false]);
        // Nothing failed: the unsent turns were stopped by the run, not by a dependency.
        let sent = [true, true, false, false, false, false];
        assert_eq!(blocked_by_failure(&turns, &sent, &[false; 6]), [false; 6]);
    }

    #[test]
    fn only_the_chat_backend_replays_session_trees() {
        assert!(check_backend(BackendKind::Chat).is_ok());
        let e = check_backend(BackendKind::Completions).unwrap_err();
        assert_eq!(e.code(), servebench_core::ErrorCode::AgenticBackendUnsupported);
    }
}

//! servebench's additions to vLLM's console block, short by default: the load mode and what it
//! means, what did not complete, input tokens as counted by the client and by the server, the
//! reasoning split, the schedule-anchored figures where they mean something, and the client's
//! health in one line. Each addition has a one-line caption (an indented line) saying what it
//! means in this run's load mode. `--verbose` adds the full detail (`console::detail_block`);
//! the result JSON always has all of it.

use std::fmt::Write as _;

use servebench_core::metrics::RunMetrics;

use crate::fmt::{banner, row_int, stats_section, WIDTH};
use crate::info::{LoadStage, RunInfo};

/// How the run offered its load, from its rate, concurrency cap and ramp-up.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum LoadRegime {
    /// A finite rate (or a ramp): requests are sent on a schedule whatever the server does;
    /// `cap` is `--max-concurrency` when given.
    OpenLoop { cap: Option<u64> },
    /// An infinite rate with a concurrency cap: each completion releases the next request.
    ClosedLoop { cap: u64 },
    /// An infinite rate without a cap: every request is sent at once.
    Burst,
    /// A trace replayed on its own timestamps (scaled by `time_scale`); `cap` is
    /// `--max-concurrency` when given.
    TraceReplay { time_scale: f64, cap: Option<u64> },
    /// Rate stages (`--stages RATE:SECONDS,…`): an open loop whose rate steps; `cap` is
    /// `--max-concurrency` when given.
    RateStages { stages: usize, cap: Option<u64> },
    /// Concurrency stages (`--stages c=N:SECONDS,…`): a closed loop whose cap steps.
    ConcurrencyStages { stages: usize },
}

impl LoadRegime {
    pub fn of(info: &RunInfo) -> Self {
        if let Some(time_scale) = info.trace_time_scale {
            return LoadRegime::TraceReplay { time_scale, cap: info.max_concurrency };
        }
        // Stages set the load; the run's own rate is then infinite (a `--duration` at a finite
        // rate, one stage in a shard header, stays the open loop it is).
        let stages = info.stages.len();
        match info.stages.first() {
            Some(LoadStage::Rate(_)) if !info.request_rate.is_finite() => {
                return LoadRegime::RateStages { stages, cap: info.max_concurrency }
            }
            Some(LoadStage::Concurrency(_)) => return LoadRegime::ConcurrencyStages { stages },
            _ => {}
        }
        match (info.request_rate.is_finite() || info.ramp_up.is_some(), info.max_concurrency) {
            (true, cap) => LoadRegime::OpenLoop { cap },
            (false, Some(cap)) => LoadRegime::ClosedLoop { cap },
            (false, None) => LoadRegime::Burst,
        }
    }

    /// The load-mode row's value; `requests` is how many the run had (sent or not: a trace or
    /// dataset can hold fewer than `--num-prompts`).
    pub fn describe(self, info: &RunInfo, requests: u64) -> String {
        let rate = match &info.ramp_up {
            Some(r) => format!("ramp {} → {} req/s", r.start_rps, r.end_rps),
            None => format!("{} req/s", crate::info::python_int_or_float(info.request_rate)),
        };
        match self {
            LoadRegime::OpenLoop { cap: None } => format!("open loop, {rate}"),
            LoadRegime::OpenLoop { cap: Some(c) } => format!("open loop, {rate}, ≤ {c} in flight"),
            LoadRegime::ClosedLoop { cap } => format!("closed loop, {cap} in flight"),
            LoadRegime::Burst => format!("burst, all {requests} at t=0"),
            LoadRegime::RateStages { stages, cap } => {
                let cap = cap.map(|c| format!(", ≤ {c} in flight")).unwrap_or_default();
                format!("open loop in {stages} {}, {} req/s{cap}", plural(stages), stage_steps(info))
            }
            LoadRegime::ConcurrencyStages { stages } => {
                format!("closed loop in {stages} {}, {} in flight", plural(stages), stage_steps(info))
            }
            LoadRegime::TraceReplay { time_scale, cap } => {
                let scale = if time_scale == 1.0 {
                    String::new()
                } else {
                    format!(" × {}", crate::info::python_int_or_float(time_scale))
                };
                let cap = cap.map(|c| format!(", ≤ {c} in flight")).unwrap_or_default();
                format!("trace replay at the trace's timestamps{scale}{cap}")
            }
        }
    }

    /// What the load mode means, one line.
    pub fn caption(self) -> &'static str {
        match self {
            LoadRegime::OpenLoop { cap: None } => {
                "requests leave on a fixed schedule, whatever the server does"
            }
            LoadRegime::OpenLoop { cap: Some(_) } => {
                "requests leave on a schedule; one due while the cap is full waits in the client queue"
            }
            LoadRegime::ClosedLoop { .. } => "rate inf with a cap: each completion releases the next request",
            LoadRegime::Burst => "rate inf, no cap: the server gets every request at once",
            LoadRegime::RateStages { .. } => {
                "requests leave on each stage's schedule, whatever the server does (--stages)"
            }
            LoadRegime::ConcurrencyStages { .. } => {
                "each completion releases the next request; the cap steps at each stage (--stages c=N)"
            }
            LoadRegime::TraceReplay { .. } => {
                "requests leave when the trace says, whatever the server does (--no-self-timed: use --request-rate)"
            }
        }
    }

    /// Whether the schedule-anchored figures (from each request's intended send time) say
    /// something the vLLM block does not: only when requests have a schedule. With an infinite
    /// rate every request is due at t = 0, so they measure the client's own queue (closed loop)
    /// or repeat TTFT/E2EL (burst).
    pub fn schedule_meaningful(self) -> bool {
        matches!(
            self,
            LoadRegime::OpenLoop { .. } | LoadRegime::TraceReplay { .. } | LoadRegime::RateStages { .. }
        )
    }
}

fn plural(stages: usize) -> &'static str {
    if stages == 1 {
        "stage"
    } else {
        "stages"
    }
}

/// The stages' rates or caps, in order: `1.5 → 2`.
fn stage_steps(info: &RunInfo) -> String {
    let step = |s: &LoadStage| match *s {
        LoadStage::Rate(r) => crate::info::python_int_or_float(r),
        LoadStage::Concurrency(c) => c.to_string(),
    };
    info.stages.iter().map(step).collect::<Vec<_>>().join(" → ")
}

fn caption(out: &mut String, text: &str) {
    let _ = writeln!(out, "  {text}");
}

/// The default additions block (after vLLM's block).
pub fn console(out: &mut String, info: &RunInfo, m: &RunMetrics) {
    banner(out, " servebench additions ", '=');
    let regime = LoadRegime::of(info);
    match &m.session_trees {
        // Session trees set their own timing: no rate, no burst (docs/workloads.md).
        Some(t) => {
            let turns = t.turns.completed + t.turns.failed + t.turns.cancelled;
            let cap = info.max_concurrency.map(|c| format!(", ≤ {c} in flight")).unwrap_or_default();
            row_int(
                out,
                "Load mode:",
                format!("session-tree replay, {} sessions, {turns} turns{cap}", t.sessions),
            );
            caption(out, "each turn leaves once the turns it depends on ended, after its think/tool time");
        }
        None => {
            let requests = m.completed + m.failed + m.cancelled;
            row_int(out, "Load mode:", regime.describe(info, requests));
            caption(out, regime.caption());
        }
    }
    outcomes(out, m);
    input_tokens(out, info, m);
    // TTFO equals TTFT unless the server sent reasoning or tool-only output.
    let split = &m.output_split;
    if split.reasoning_events > 0 || split.requests_without_content > 0 {
        crate::sections::output_split::console(out, split);
        caption(out, "TTFO: to the first visible content; reasoning and tool-call events do not count");
    }
    schedule_anchored(out, regime, m);
    if let Some(w) = &m.prefill_wait {
        banner(out, "Prefill-slot wait (--max-prefill-concurrency)", '-');
        caption(
            out,
            "time waiting for a prefill slot; in queue time and the schedule-anchored view, not in TTFT",
        );
        stats_section_rows(out, "Prefill Wait", w);
    }
    if let Some(t) = &m.session_trees {
        crate::sections::session_trees::console(out, t, &m.config.percentiles);
    }
    client_health(out, info);
    let _ = writeln!(out, "More with --verbose; the result JSON always has all of it.");
    let _ = writeln!(out, "{}", "=".repeat(WIDTH));
}

/// Cancelled and failed requests by kind (vLLM counts only successes and failures).
fn outcomes(out: &mut String, m: &RunMetrics) {
    row_int(out, "Cancelled requests:", m.cancelled);
    if let Some(d) = &m.designed_cancellation {
        row_int(
            out,
            "Cancelled by design:",
            format!(
                "{} of {} chosen ({} completed first, {} failed)",
                d.cancelled, d.selected, d.completed, d.failed
            ),
        );
        caption(
            out,
            "--request-cancellation-rate: abandoned on purpose, counted in Cancelled, not in latencies",
        );
    }
    for &(k, n) in m.failures_by_kind.iter().filter(|(_, n)| *n > 0) {
        row_int(out, &format!("Failed ({}):", k.as_str()), n);
    }
    if m.failures_unclassified > 0 {
        row_int(out, "Failed (unclassified):", m.failures_unclassified);
    }
}

/// Input tokens as the client counted them (vLLM's "Total input tokens" row above) beside the
/// server's `usage.prompt_tokens`, when the server reported it.
fn input_tokens(out: &mut String, info: &RunInfo, m: &RunMetrics) {
    // A pooling block's input row already is the server's count.
    if m.server_input_tokens_reported == 0 || crate::sections::pooling::is_pooling_backend(&info.backend) {
        return;
    }
    let mut v = format!("{} / {}", m.total_input_tokens, m.server_total_input_tokens);
    if m.server_input_tokens_reported < m.completed {
        // The sums cover different requests: say so rather than invite a comparison.
        v.push_str(&format!(" (server: {} of {} requests)", m.server_input_tokens_reported, m.completed));
    }
    row_int(out, "Input tokens client / server:", v);
    if info.backend.contains("chat") {
        caption(out, "client-counted prompt text, as vLLM's row above; server: usage.prompt_tokens, chat template included");
    } else {
        caption(out, "client-counted with the tokenizer, as vLLM's row above; server: usage.prompt_tokens");
    }
}

/// Response TTFT/E2EL and queue time from each request's intended send time, where they mean
/// something; else one line naming the client queue and where the figures are.
fn schedule_anchored(out: &mut String, regime: LoadRegime, m: &RunMetrics) {
    if regime.schedule_meaningful() {
        banner(out, "Schedule-anchored (client queue included)", '-');
        caption(
            out,
            match regime {
                LoadRegime::OpenLoop { cap: Some(_) } | LoadRegime::TraceReplay { cap: Some(_), .. } => {
                    "from each request's scheduled send time: the wait in the client for a free slot counts"
                }
                _ => "from each request's scheduled send time: any delay in sending it counts",
            },
        );
        stats_section_rows(out, "Response TTFT", &m.response_ttft);
        stats_section_rows(out, "Response E2EL", &m.response_e2el);
        stats_section_rows(out, "Queue Time", &m.queue_time);
        return;
    }
    if let LoadRegime::ClosedLoop { .. } = regime {
        if m.queue_time.count > 0 {
            row_int(out, "Mean client queue (ms):", format!("{:.2}", m.queue_time.mean));
            caption(out, "rate inf: all requests are due at t=0, so this is the batch waiting for a slot");
        }
    }
}

/// A stats section's rows without its banner.
fn stats_section_rows(out: &mut String, short: &str, s: &servebench_core::stats::Summary) {
    let mut section = String::new();
    stats_section(&mut section, "", short, s);
    for line in section.lines().skip(1) {
        let _ = writeln!(out, "{line}");
    }
}

/// The client's health in one line; its warnings go to stderr (`console::console_warnings`).
fn client_health(out: &mut String, info: &RunInfo) {
    let h = &info.client_health;
    let ms = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{:.2} ms", v / 1000.0));
    let cpu = h.client_cpu_percent.map_or_else(|| "n/a".to_owned(), |c| format!("{c:.0}% of a core"));
    if h.dispatch_lateness_p99_us.is_none() && h.hiccup_p99_us.is_none() && h.client_cpu_percent.is_none() {
        row_int(out, "Client health:", "not measured");
        return;
    }
    let verdict = if h.warnings().is_empty() { "ok" } else { "see warnings on stderr" };
    row_int(
        out,
        "Client health:",
        format!(
            "{verdict}: lateness p99 {}, hiccup p99 {}, CPU {cpu}",
            ms(h.dispatch_lateness_p99_us),
            ms(h.hiccup_p99_us)
        ),
    );
}

/// What the steady-state window means in this run's load mode, one line (under its banner).
pub fn steady_state_caption(mode: &servebench_core::metrics::LoadMode) -> &'static str {
    match mode {
        servebench_core::metrics::LoadMode::ClosedLoop { .. } => {
            "closed loop: the part of the run with the cap full, without the start and the drain"
        }
        servebench_core::metrics::LoadMode::OpenLoop => {
            "open loop: the part of the run where completions kept up with arrivals"
        }
    }
}

//! The run validity verdict (docs/metrics.md, "Run validity"): whether a run's figures can be
//! trusted, from checks the run already makes. Each rule has an id, its threshold(s) and a
//! level; the verdict is the worst level of the rules that fired. Pure: the runner fills
//! [`ValidityInputs`] from what it measured.

use serde::{Deserialize, Serialize};

/// Client CPU above this share of the available cores (percent): the client may be the
/// bottleneck (`client_cpu`).
pub const CLIENT_CPU_WARN_PERCENT: f64 = 90.0;
/// Time the client's threads were runnable but waiting for a CPU, percent of the available
/// cores, above which other work on the host starved the client (`client_cpu_wait`).
pub const CLIENT_CPU_WAIT_WARN_PERCENT: f64 = 20.0;
/// Event-loop hiccup p99 (ms) above which timestamps may be late (`event_loop_hiccup`), and
/// above which they are too late to trust.
pub const HICCUP_P99_WARN_MS: f64 = 5.0;
pub const HICCUP_P99_INVALID_MS: f64 = 50.0;
/// Dispatch lateness p99 (ms) above which the client did not send on schedule
/// (`dispatch_lateness`), and above which the schedule asked was not the one run.
pub const DISPATCH_LATENESS_WARN_MS: f64 = 10.0;
pub const DISPATCH_LATENESS_INVALID_MS: f64 = 100.0;
/// Achieved send rate as a percent of the offered one (open loop), below which the client did
/// not send the load asked for (`send_rate`), and below which the figures describe another load.
pub const SEND_RATE_WARN_PERCENT: f64 = 95.0;
pub const SEND_RATE_INVALID_PERCENT: f64 = 80.0;
/// Failed share of sent requests (percent) above which the run warns, and is invalid.
pub const FAILURES_WARN_PERCENT: f64 = 1.0;
pub const FAILURES_INVALID_PERCENT: f64 = 10.0;
/// Completed requests per `--max-concurrency` slot below which the concurrency asked was
/// barely held (warn), and below 1 never reached (invalid).
pub const REQUESTS_PER_SLOT_WARN: f64 = 4.0;
pub const REQUESTS_PER_SLOT_INVALID: f64 = 1.0;
/// Fewest successful server `/metrics` scrapes for a delta over the run.
pub const MIN_SERVER_SCRAPES: f64 = 2.0;

/// How far a run's figures can be trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Ok,
    Warn,
    Invalid,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Invalid => "invalid",
        }
    }
}

/// What the rules are checked against; `None` where the run did not measure it (the rule is
/// then not checked, and says why in `not_checked`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ValidityInputs {
    /// Client CPU, percent of one core, and the cores available.
    pub client_cpu_percent: Option<f64>,
    pub available_cores: Option<f64>,
    /// Run-queue wait of the client's threads (runnable, no CPU), percent of one core.
    pub client_cpu_wait_percent: Option<f64>,
    pub hiccup_p99_ms: Option<f64>,
    /// `None` when the load has no schedule to be late for (closed loop, unpaced).
    pub dispatch_lateness_p99_ms: Option<f64>,
    /// Achieved and offered send rates (req/s) of a paced open loop, `None` otherwise
    /// ([`send_rates`]).
    pub send_rates: Option<(f64, f64)>,
    /// `None` when no steady state was looked for; `Some(Err(reason))` when none was found.
    pub steady_state: Option<Result<(), String>>,
    /// Successful scrapes of the server's `/metrics`, when scraping was asked for.
    pub server_scrapes: Option<u64>,
    /// Mean relative |usage − retokenized| over the requests with both, and the warning bound
    /// (`TokenAccounting`); `None` without such requests.
    pub token_mismatch: Option<(f64, f64)>,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub max_concurrency: Option<u64>,
    pub early_stop: bool,
    pub interrupted: bool,
}

/// One rule's outcome: what was measured against which threshold, and the level it gives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuleCheck {
    pub id: String,
    pub level: Level,
    pub measured: f64,
    /// The threshold crossed, or the lowest one when none was.
    pub threshold: f64,
    /// What the comparison means, in words (`p99 12.40 ms > 10 ms`).
    pub detail: String,
}

/// The result's `validity` block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub verdict: Level,
    /// The rules checked, in the table's order.
    pub rules: Vec<RuleCheck>,
    /// Rules that did not apply to this run, `id: why`.
    pub not_checked: Vec<String>,
}

/// `measured` against a warn and an invalid bound (either may be absent); `above`: the rule
/// fires when `measured` is above the bound, else when below.
struct Bounds {
    warn: Option<f64>,
    invalid: Option<f64>,
    above: bool,
}

impl Bounds {
    fn above(warn: f64, invalid: Option<f64>) -> Self {
        Bounds { warn: Some(warn), invalid, above: true }
    }
    fn below(warn: Option<f64>, invalid: Option<f64>) -> Self {
        Bounds { warn, invalid, above: false }
    }
    fn crosses(&self, v: f64, bound: f64) -> bool {
        if self.above {
            v > bound
        } else {
            v < bound
        }
    }
    /// The level and the threshold that gave it (the warn bound, else the invalid one, when
    /// none was crossed).
    fn judge(&self, v: f64) -> (Level, f64) {
        if let Some(b) = self.invalid.filter(|&b| self.crosses(v, b)) {
            return (Level::Invalid, b);
        }
        match self.warn {
            Some(b) if self.crosses(v, b) => (Level::Warn, b),
            Some(b) => (Level::Ok, b),
            None => (Level::Ok, self.invalid.unwrap_or(f64::NAN)),
        }
    }
}

fn check(id: &str, v: f64, b: Bounds, detail: impl Fn(f64) -> String) -> RuleCheck {
    let (level, threshold) = b.judge(v);
    RuleCheck { id: id.to_owned(), level, measured: v, threshold, detail: detail(threshold) }
}

impl Validity {
    /// Checks every rule that applies to `i`.
    pub fn of(i: &ValidityInputs) -> Validity {
        let mut rules = Vec::new();
        let mut not_checked = Vec::new();
        let mut skip = |id: &str, why: &str| not_checked.push(format!("{id}: {why}"));
        let cmp = |above: bool, level_hit: bool| match (above, level_hit) {
            (true, true) => ">",
            (true, false) => "<=",
            (false, true) => "<",
            (false, false) => ">=",
        };
        match (i.client_cpu_percent, i.available_cores.filter(|c| *c > 0.0)) {
            (Some(cpu), Some(cores)) => {
                let share = cpu / cores;
                rules.push(check("client_cpu", share, Bounds::above(CLIENT_CPU_WARN_PERCENT, None), |t| {
                    format!("client CPU {share:.0}% of {cores} cores {} {t:.0}%", cmp(true, share > t))
                }));
            }
            _ => skip("client_cpu", "client CPU not measured (measured phase too short)"),
        }
        match (i.client_cpu_wait_percent, i.available_cores.filter(|c| *c > 0.0)) {
            (Some(wait), Some(cores)) => {
                let share = wait / cores;
                let b = Bounds::above(CLIENT_CPU_WAIT_WARN_PERCENT, None);
                rules.push(check("client_cpu_wait", share, b, |t| {
                    format!(
                        "client waited for a CPU {share:.0}% of the time on {cores} cores {} {t:.0}%",
                        cmp(true, share > t)
                    )
                }));
            }
            _ => skip("client_cpu_wait", "run-queue wait not measured (not Linux, or phase too short)"),
        }
        match i.hiccup_p99_ms {
            Some(v) => {
                let b = Bounds::above(HICCUP_P99_WARN_MS, Some(HICCUP_P99_INVALID_MS));
                rules.push(check("event_loop_hiccup", v, b, |t| {
                    format!("hiccup p99 {v:.2} ms {} {t} ms", cmp(true, v > t))
                }));
            }
            None => skip("event_loop_hiccup", "no hiccup samples"),
        }
        match i.dispatch_lateness_p99_ms {
            Some(v) => {
                let b = Bounds::above(DISPATCH_LATENESS_WARN_MS, Some(DISPATCH_LATENESS_INVALID_MS));
                rules.push(check("dispatch_lateness", v, b, |t| {
                    format!("dispatch lateness p99 {v:.2} ms {} {t} ms", cmp(true, v > t))
                }));
            }
            None => skip("dispatch_lateness", "no schedule to be late for (closed loop or unpaced)"),
        }
        match i.send_rates.filter(|(_, offered)| *offered > 0.0) {
            Some((achieved, offered)) => {
                let pct = achieved / offered * 100.0;
                let b = Bounds::below(Some(SEND_RATE_WARN_PERCENT), Some(SEND_RATE_INVALID_PERCENT));
                rules.push(check("send_rate", pct, b, |t| {
                    format!(
                        "sent {achieved:.1} req/s of {offered:.1} offered ({pct:.1}% {} {t}%)",
                        cmp(false, pct < t)
                    )
                }));
            }
            None => skip("send_rate", "no schedule to keep up with (closed loop or unpaced)"),
        }
        match &i.steady_state {
            Some(Ok(())) => rules.push(steady_rule(None)),
            Some(Err(reason)) => rules.push(steady_rule(Some(reason))),
            None => skip("steady_state", "no steady state looked for"),
        }
        match i.server_scrapes {
            Some(n) => {
                let v = n as f64;
                rules.push(check("server_metrics", v, Bounds::below(Some(MIN_SERVER_SCRAPES), None), |t| {
                    format!("{n} successful /metrics scrapes {} {t}", cmp(false, v < t))
                }));
            }
            None => skip("server_metrics", "not asked for (--scrape-metrics)"),
        }
        match i.token_mismatch {
            Some((v, bound)) => {
                let pct = v * 100.0;
                rules.push(check("token_count_mismatch", pct, Bounds::above(bound * 100.0, None), |t| {
                    format!("usage vs client tokenizer mean {pct:.1}% {} {t:.0}%", cmp(true, pct > t))
                }));
            }
            None => skip("token_count_mismatch", "no request with both usage and a retokenized count"),
        }
        rules.extend(load_rules(i, &mut skip));
        let verdict = rules.iter().map(|r| r.level).max().unwrap_or(Level::Ok);
        Validity { verdict, rules, not_checked }
    }

    /// The rules that fired (warn or invalid).
    pub fn fired(&self) -> impl Iterator<Item = &RuleCheck> {
        self.rules.iter().filter(|r| r.level != Level::Ok)
    }

    /// The console's last line: `Run validity: ok (9 rules checked)`, or the verdict with every
    /// rule that fired.
    pub fn console_line(&self) -> String {
        let fired: Vec<String> = self.fired().map(|r| format!("{} ({})", r.id, r.detail)).collect();
        match self.verdict {
            Level::Ok => format!("Run validity: ok ({} rules checked)", self.rules.len()),
            Level::Warn => format!("Run validity: warn: {}", fired.join("; ")),
            Level::Invalid => format!("Run validity: INVALID: {}", fired.join("; ")),
        }
    }
}

/// Achieved and offered send rates (req/s) of the requests sent, each `(intended_us,
/// dispatched_us)` from the run origin: the offered rate is their number over the last intended
/// time, the achieved one their number over the last time one was written. `None` without a
/// request sent or when the last intended time is 0 (nothing paced).
pub fn send_rates(sent: impl IntoIterator<Item = (u64, u64)>) -> Option<(f64, f64)> {
    let (mut n, mut last_intended, mut last_sent) = (0u64, 0u64, 0u64);
    for (intended, dispatched) in sent {
        n += 1;
        last_intended = last_intended.max(intended);
        last_sent = last_sent.max(dispatched);
    }
    if n == 0 || last_intended == 0 {
        return None;
    }
    let rate = |end_us: u64| n as f64 * 1e6 / end_us.max(1) as f64;
    Some((rate(last_sent.max(last_intended)), rate(last_intended)))
}

fn steady_rule(absent: Option<&String>) -> RuleCheck {
    let (level, measured, detail) = match absent {
        None => (Level::Ok, 1.0, "steady-state window found".to_owned()),
        Some(reason) => (Level::Warn, 0.0, format!("no steady-state window: {}", short_reason(reason))),
    };
    RuleCheck { id: "steady_state".into(), level, measured, threshold: 1.0, detail }
}

/// The first clause of a reason (before `;` or `:`), for the one-line verdict.
fn short_reason(reason: &str) -> &str {
    reason.split([';', ':']).next().unwrap_or(reason).trim()
}

/// The rules about the load as run: failures, completed requests per concurrency slot, early
/// stop and interruption.
fn load_rules(i: &ValidityInputs, skip: &mut impl FnMut(&str, &str)) -> Vec<RuleCheck> {
    let mut rules = Vec::new();
    if i.sent > 0 {
        let pct = i.failed as f64 * 100.0 / i.sent as f64;
        let b = Bounds::above(FAILURES_WARN_PERCENT, Some(FAILURES_INVALID_PERCENT));
        rules.push(check("failures", pct, b, |t| {
            format!("{} of {} sent failed ({pct:.1}%, threshold {t}%)", i.failed, i.sent)
        }));
    } else {
        skip("failures", "no request was sent");
    }
    match i.max_concurrency.filter(|c| *c > 0) {
        Some(c) => {
            let per_slot = i.completed as f64 / c as f64;
            let b = Bounds::below(Some(REQUESTS_PER_SLOT_WARN), Some(REQUESTS_PER_SLOT_INVALID));
            rules.push(check("too_few_requests", per_slot, b, |t| {
                format!(
                    "{} completed for --max-concurrency {c}: {per_slot:.2} per slot {} {t}",
                    i.completed,
                    if per_slot < t { "<" } else { ">=" }
                )
            }));
        }
        None => skip("too_few_requests", "no --max-concurrency"),
    }
    let flag = |id: &str, on: bool, what: &str| RuleCheck {
        id: id.to_owned(),
        level: if on { Level::Invalid } else { Level::Ok },
        measured: f64::from(u8::from(on)),
        threshold: 0.0,
        detail: if on { what.to_owned() } else { format!("not {what}") },
    };
    rules.push(flag(
        "early_stop",
        i.early_stop,
        "stopped early (--detect-saturation/--max-error-rate/--max-errors)",
    ));
    rules.push(flag("interrupted", i.interrupted, "interrupted (Ctrl-C/SIGTERM)"));
    rules
}

#[cfg(test)]
mod tests;

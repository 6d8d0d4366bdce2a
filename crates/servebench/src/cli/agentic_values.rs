//! Typed values of the session-tree flags (`--dataset-name agentic`), parsed when the command
//! line is read; a bad value is SB218 (docs/workloads.md §Session trees).

use servebench_core::BenchError;
use std::time::Duration;

fn agentic_bad(flag: &str, problem: String, fix: &str) -> BenchError {
    BenchError::AgenticControlInvalid { flag: flag.into(), problem, fix: fix.into() }
}

/// `--agentic-format`: `servebench`, `dag` (`dag_jsonl`) or `weka` (SB218).
pub fn agentic_format(text: &str) -> Result<servebench_data::agentic::AgenticFormat, BenchError> {
    text.trim().parse().map_err(|()| {
        agentic_bad(
            "--agentic-format",
            format!("unknown format '{text}'"),
            "pass servebench, dag or weka (or omit it: the format is told from the file)",
        )
    })
}

/// `--replay-speedup X`: a finite factor > 0 (SB218).
pub fn replay_speedup(text: &str) -> Result<f64, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(agentic_bad(
            "--replay-speedup",
            format!("'{text}' is not a factor > 0"),
            "pass e.g. 10 to replay ten times faster, 1 for the recorded times",
        )),
    }
}

/// `--inter-turn-delay-cap-seconds S`: finite seconds ≥ 0 (SB218).
pub fn inter_turn_delay_cap(text: &str) -> Result<Duration, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=1e9).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(agentic_bad(
            "--inter-turn-delay-cap-seconds",
            format!("'{text}' is not a number of seconds ≥ 0"),
            "pass the longest think/tool time to replay, in seconds, e.g. 2",
        )),
    }
}

/// `--max-idle-gap-cap-seconds S`: finite seconds > 0 (SB218; AIPerf's name, > 0 as there).
pub fn max_idle_gap_cap(text: &str) -> Result<Duration, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= 1e9 => Ok(Duration::from_secs_f64(s)),
        _ => Err(agentic_bad(
            "--max-idle-gap-cap-seconds",
            format!("'{text}' is not a number of seconds > 0"),
            "pass the longest pause between session starts to replay, in seconds, e.g. 5",
        )),
    }
}

/// `--agentic-sessions N` / `--agentic-concurrency N`: an integer ≥ 1 (SB218).
fn agentic_count(flag: &str, text: &str, fix: &str) -> Result<usize, BenchError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(agentic_bad(flag, format!("'{text}' is not an integer ≥ 1"), fix)),
    }
}

/// `--agentic-sessions N`.
pub fn agentic_sessions(text: &str) -> Result<usize, BenchError> {
    agentic_count("--agentic-sessions", text, "pass how many sessions to sample, e.g. 20")
}

/// `--agentic-concurrency N`.
pub fn agentic_concurrency(text: &str) -> Result<usize, BenchError> {
    agentic_count(
        "--agentic-concurrency",
        text,
        "pass how many sessions run at once in a closed loop, e.g. 8",
    )
}

/// `--agentic-loop`: `open` (recorded session starts) or `closed` (N sessions at a time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgenticLoop {
    Open,
    Closed,
}

/// `--agentic-loop open|closed` (SB218).
pub fn agentic_loop(text: &str) -> Result<AgenticLoop, BenchError> {
    match text.trim() {
        "open" => Ok(AgenticLoop::Open),
        "closed" => Ok(AgenticLoop::Closed),
        _ => Err(agentic_bad(
            "--agentic-loop",
            format!("unknown mode '{text}'"),
            "pass open (sessions on their recorded starts) or closed (N sessions at a time)",
        )),
    }
}

//! The Weka / SemiAnalysis Claude Code session traces (kv-cache-tester format, as AIPerf and
//! inference-perf read it; behaviour, not code, followed): one JSON object per session —
//! `{"id", "requests": [...]}` — as a whole file or one per line. `requests` interleaves API
//! calls (`"type": "n"` or `"s"`, with `t` s, `in` and `out` tokens, `stop`, `think_time` s,
//! `api_time` s) and sub-agents (`"type": "subagent"` with their own `requests`).
//!
//! - The top-level calls are the main agent's turns. `in` is the whole prompt, so a turn
//!   extends the previous one's history when `in ≥` that turn's `in + out` (its new input is
//!   the difference); otherwise the context was compacted and the turn starts fresh.
//! - A turn after a call that stopped with `tool_use` is a tool turn.
//! - A sub-agent is a branch one level down, after the main turn before it, with its own fresh
//!   history (Claude Code sub-agents start a new context); consecutive sub-agents run
//!   concurrently and the next main turn waits for all of them.
//! - Delay: `think_time`, else the recorded gap `t − (previous t + api_time)` when `api_time`
//!   is known, else 0. The session starts at its first call's `t`.

use super::{invalid, malformed, AgentSession, AgentTurn, TurnInput};
use serde_json::Value;
use servebench_core::Result;

/// Parses the Weka session objects of `path` (a single object, or one per line).
pub fn parse(path: &str, text: &str) -> Result<Vec<AgentSession>> {
    let objects: Vec<(String, Value)> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![("file".into(), v)],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(n, l)| {
                let at = format!("line {}", n + 1);
                serde_json::from_str(l)
                    .map(|v| (at.clone(), v))
                    .map_err(|e| malformed(path, &at, e.to_string()))
            })
            .collect::<Result<_>>()?,
    };
    objects.iter().map(|(at, v)| session(path, at, v)).collect()
}

struct Call {
    t: f64,
    input: u32,
    out: u32,
    stop_tool: bool,
    think: Option<f64>,
    api: Option<f64>,
}

fn call(path: &str, at: &str, v: &Value) -> Result<Call> {
    let num = |k: &str| v.get(k).and_then(Value::as_f64);
    let count = |k: &str| v.get(k).and_then(Value::as_u64).and_then(|n| u32::try_from(n).ok());
    let (Some(t), Some(input), Some(out)) = (num("t"), count("in"), count("out")) else {
        return Err(malformed(path, at, "a call needs numeric 't', 'in' and 'out'"));
    };
    if input == 0 || !t.is_finite() {
        return Err(malformed(path, at, "a call needs 'in' > 0 and a finite 't'"));
    }
    Ok(Call {
        t,
        input,
        out: out.max(1),
        stop_tool: v.get("stop").and_then(Value::as_str) == Some("tool_use"),
        think: num("think_time"),
        api: num("api_time"),
    })
}

fn secs_us(s: f64) -> u64 {
    if s.is_finite() && s > 0.0 {
        (s * 1e6).round() as u64
    } else {
        0
    }
}

/// Appends call `c` of one agent: `prev` is the agent's previous call (its history), `before`
/// the call just before it in time (its delay and tool flag), `after` the turns it waits for
/// besides `prev`.
fn push_call(
    s: &mut AgentSession,
    c: &Call,
    prev: Option<(usize, &Call)>,
    before: Option<&Call>,
    mut after: Vec<usize>,
    (depth, branch): (u32, u32),
) -> usize {
    let (context, new) = match prev.filter(|(_, p)| c.input >= p.input + p.out) {
        Some((i, p)) => (Some(i), c.input - p.input - p.out),
        None => (None, c.input),
    };
    let delay_us = match (c.think, before) {
        (Some(th), _) => secs_us(th),
        (None, Some(p)) => p.api.map_or(0, |a| secs_us(c.t - p.t - a)),
        (None, None) => 0,
    };
    after.extend(prev.map(|(i, _)| i));
    after.sort_unstable();
    after.dedup();
    let me = s.turns.len();
    s.turns.push(AgentTurn {
        id: format!("{}#{me}", s.id),
        context,
        after,
        depth,
        branch,
        // A turn that adds nothing to its history still sends one token of new input.
        input: TurnInput::Tokens(new.max(1)),
        output_tokens: c.out,
        delay_us,
        tool: before.is_some_and(|p| p.stop_tool),
    });
    me
}

fn session(path: &str, at: &str, v: &Value) -> Result<AgentSession> {
    let id = v.get("id").and_then(Value::as_str).unwrap_or(at).to_string();
    let reqs = v
        .get("requests")
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(path, at, "no 'requests' list"))?;
    let mut s = AgentSession { id: id.clone(), start_us: 0, turns: Vec::new() };
    let mut main_prev: Option<(usize, Call)> = None;
    let mut joined: Vec<usize> = Vec::new();
    let mut branch = 0;
    let mut first_t: Option<f64> = None;
    for (n, r) in reqs.iter().enumerate() {
        let rat = format!("{at}, request {n}");
        match r.get("type").and_then(Value::as_str) {
            Some("n" | "s") => {
                let c = call(path, &rat, r)?;
                first_t.get_or_insert(c.t);
                let after = std::mem::take(&mut joined);
                let prev = main_prev.as_ref().map(|(i, p)| (*i, p));
                let me = push_call(&mut s, &c, prev, prev.map(|(_, p)| p), after, (0, 0));
                main_prev = Some((me, c));
            }
            Some("subagent") => {
                branch += 1;
                let inner = r.get("requests").and_then(Value::as_array).cloned().unwrap_or_default();
                let calls: Vec<Call> = inner
                    .iter()
                    .enumerate()
                    .map(|(k, x)| call(path, &format!("{rat}, inner {k}"), x))
                    .collect::<Result<_>>()?;
                let Some(first) = calls.first() else { continue };
                first_t.get_or_insert(first.t);
                let mut prev: Option<(usize, &Call)> = None;
                for c in &calls {
                    let after = match prev {
                        None => main_prev.iter().map(|(i, _)| *i).collect(),
                        Some(_) => Vec::new(),
                    };
                    let before = prev.map(|(_, p)| p).or(main_prev.as_ref().map(|(_, p)| p));
                    let me = push_call(&mut s, c, prev, before, after, (1, branch));
                    joined.push(me);
                    prev = Some((me, c));
                }
            }
            _ => return Err(malformed(path, &rat, "'type' must be \"n\", \"s\" or \"subagent\"")),
        }
    }
    if s.turns.is_empty() {
        return Err(invalid(path, &id, "no API call"));
    }
    s.start_us = secs_us(first_t.unwrap_or(0.0));
    Ok(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::ErrorCode;

    const FIXTURE: &str = include_str!("../../tests/data/agentic/weka_session.json");

    #[test]
    fn weka_main_turns_grow_history_and_subagents_branch_and_join() {
        let s = parse("f", FIXTURE).unwrap();
        assert_eq!(s.len(), 1);
        let s = &s[0];
        assert_eq!((s.id.as_str(), s.start_us), ("cc-1", 2_000_000));
        let t = &s.turns;
        assert_eq!(t.len(), 6);
        // main#0: 1000 in, 50 out. main#1 (tool turn): 1200 in → 150 new on main#0's history.
        assert_eq!((t[0].context, t[0].input.clone()), (None, TurnInput::Tokens(1000)));
        assert_eq!((t[1].context, t[1].input.clone(), t[1].tool), (Some(0), TurnInput::Tokens(150), true));
        // think_time 0.5 s; api_time-derived gap for main#1: 3.0 − (2.0 + 0.8) = 0.2 s.
        assert_eq!(t[1].delay_us, 200_000);
        // Two concurrent sub-agents after main#1, fresh histories; the second has two calls.
        assert_eq!((t[2].depth, t[2].branch, t[2].context, t[2].after.clone()), (1, 1, None, vec![1]));
        assert_eq!((t[3].branch, t[3].after.clone()), (2, vec![1]));
        assert_eq!((t[4].branch, t[4].context, t[4].input.clone()), (2, Some(3), TurnInput::Tokens(100)));
        // main#2 joins both sub-agents and extends main#1 (1200 + 40 ≤ 1500).
        assert_eq!((t[5].context, t[5].after.clone(), t[5].delay_us), (Some(1), vec![1, 2, 3, 4], 500_000));
        assert_eq!(t[5].input, TurnInput::Tokens(260));
    }

    #[test]
    fn weka_compaction_starts_fresh_and_bad_calls_are_coded() {
        let text = r#"{"id":"x","requests":[{"t":0,"type":"n","in":500,"out":10},{"t":1,"type":"n","in":100,"out":10}]}"#;
        let s = parse("f", text).unwrap();
        assert_eq!((s[0].turns[1].context, s[0].turns[1].input.clone()), (None, TurnInput::Tokens(100)));
        let bad = r#"{"id":"x","requests":[{"t":0,"type":"n","out":10}]}"#;
        assert_eq!(parse("f", bad).unwrap_err().code(), ErrorCode::AgenticTraceMalformed);
        let kind = r#"{"id":"x","requests":[{"t":0,"type":"q","in":1,"out":1}]}"#;
        assert_eq!(parse("f", kind).unwrap_err().code(), ErrorCode::AgenticTraceMalformed);
        assert_eq!(
            parse("f", r#"{"id":"x","requests":[]}"#).unwrap_err().code(),
            ErrorCode::AgenticGraphInvalid
        );
    }
}

//! AIPerf's `dag_jsonl` format (behaviour, not code, followed): one conversation per line,
//! `{"session_id", "turns": [{"messages", "max_tokens", "delay", "forks", "spawns", …}]}`.
//!
//! - Turns of a conversation accumulate: each extends the previous turn's history.
//! - `forks` (after a turn): child conversations that inherit the turn's history. A bare id
//!   (or `{"child", "background": false}`) ends the parent there; `background: true` lets the
//!   parent go on. Forks are never joined.
//! - `spawns` (after a turn): child conversations with a fresh history; the parent's turn
//!   `join_at` (default the next one) waits for every turn of them (`{"children", "join_at"}`).
//! - `delay` is ms before the turn; `timestamp` (ms) on a root's first turn is its start.
//! - Conversations no other references are the sessions (roots).
//!
//! A turn's new input is the text of its `messages` (string contents, or the `text` parts of
//! a parts list, joined by newlines); a turn carrying a `tool` message is a tool turn. Not
//! replayed (SB215): orchestrator conversations, `rounds`, `pre_session_spawns`,
//! `context_mode`.

use super::{invalid, malformed, ms_to_us, AgentSession, AgentTurn, TurnInput};
use serde_json::Value;
use servebench_core::Result;
use std::collections::{HashMap, HashSet};

struct Conv {
    id: String,
    line: usize,
    turns: Vec<Value>,
}

/// A child reference of a turn: child ids, whether they inherit the history, and the turn
/// index of the parent that joins them (None: never joined).
struct Children {
    ids: Vec<String>,
    inherit: bool,
    join_at: Option<usize>,
    ends_parent: bool,
}

/// Parses the `dag_jsonl` text of `path`; `default_out` is the output length of a turn
/// without `max_tokens`.
pub fn parse(path: &str, text: &str, default_out: u32) -> Result<Vec<AgentSession>> {
    let mut convs = Vec::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", n + 1);
        let v: Value = serde_json::from_str(raw).map_err(|e| malformed(path, &at, e.to_string()))?;
        for key in ["orchestrator", "rounds", "pre_session_spawns", "context_mode"] {
            if v.get(key).is_some_and(|x| !x.is_null() && x != &Value::Bool(false)) {
                return Err(malformed(path, &at, format!("'{key}' is not replayed by servebench")));
            }
        }
        let id = v["session_id"].as_str().filter(|s| !s.is_empty());
        let turns = v["turns"].as_array().filter(|t| !t.is_empty());
        let (Some(id), Some(turns)) = (id, turns) else {
            return Err(malformed(path, &at, "needs a non-empty 'session_id' and 'turns'"));
        };
        convs.push(Conv { id: id.to_string(), line: n + 1, turns: turns.clone() });
    }
    let by_id: HashMap<&str, usize> = convs.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let mut referenced = HashSet::new();
    for c in &convs {
        for (k, t) in c.turns.iter().enumerate() {
            for ch in children(path, c, k, t)? {
                for id in ch.ids {
                    if !by_id.contains_key(id.as_str()) {
                        return Err(invalid(
                            path,
                            &c.id,
                            format!("turn {k} names unknown conversation '{id}'"),
                        ));
                    }
                    if !referenced.insert(id.clone()) {
                        return Err(invalid(path, &c.id, format!("conversation '{id}' is a child twice")));
                    }
                }
            }
        }
    }
    let mut b = Builder { path, convs: &convs, by_id: &by_id, default_out, visited: HashSet::new() };
    let mut sessions = Vec::new();
    for c in convs.iter().filter(|c| !referenced.contains(&c.id)) {
        let mut s = AgentSession { id: c.id.clone(), start_us: 0, turns: Vec::new() };
        if let Some(ts) = c.turns[0].get("timestamp").and_then(Value::as_f64) {
            s.start_us =
                ms_to_us(ts).ok_or_else(|| malformed(path, format!("line {}", c.line), "bad timestamp"))?;
        }
        let mut next_branch = 1;
        b.add(&mut s, &c.id, None, None, 0, 0, &mut next_branch)?;
        sessions.push(s);
    }
    if let Some(c) = convs.iter().find(|c| !b.visited.contains(&c.id)) {
        return Err(invalid(path, &c.id, "unreachable from any root conversation (a fork/spawn cycle)"));
    }
    Ok(sessions)
}

fn children(path: &str, c: &Conv, k: usize, t: &Value) -> Result<Vec<Children>> {
    let at = || format!("line {}, turn {k}", c.line);
    let mut out = Vec::new();
    for f in t.get("forks").and_then(Value::as_array).into_iter().flatten() {
        let (child, background) = match f {
            Value::String(s) => (s.clone(), false),
            Value::Object(o) => (
                o.get("child").and_then(Value::as_str).unwrap_or_default().to_string(),
                o.get("background").and_then(Value::as_bool).unwrap_or(false),
            ),
            _ => return Err(malformed(path, at(), "a fork is an id or {\"child\", \"background\"}")),
        };
        if child.is_empty() {
            return Err(malformed(path, at(), "a fork without a child id"));
        }
        out.push(Children { ids: vec![child], inherit: true, join_at: None, ends_parent: !background });
    }
    for s in t.get("spawns").and_then(Value::as_array).into_iter().flatten() {
        let (ids, join_at) = match s {
            Value::String(id) => (vec![id.clone()], k + 1),
            Value::Object(o) => {
                let ids: Vec<String> = o
                    .get("children")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(|x| x.as_str().map(str::to_string)).collect())
                    .unwrap_or_default();
                let j = o.get("join_at").and_then(Value::as_u64).map_or(k + 1, |j| j as usize);
                (ids, j)
            }
            _ => return Err(malformed(path, at(), "a spawn is an id or {\"children\", \"join_at\"}")),
        };
        if ids.is_empty() || join_at <= k {
            return Err(malformed(path, at(), "a spawn needs children and a join_at after its turn"));
        }
        // A spawn on the last turn is never joined (AIPerf: fire-and-forget at the end).
        let join_at = (join_at < c.turns.len()).then_some(join_at);
        out.push(Children { ids, inherit: false, join_at, ends_parent: false });
    }
    Ok(out)
}

struct Builder<'a> {
    path: &'a str,
    convs: &'a [Conv],
    by_id: &'a HashMap<&'a str, usize>,
    default_out: u32,
    visited: HashSet<String>,
}

impl Builder<'_> {
    /// Adds conversation `id` (its turns, then recursively its children) and returns the
    /// indices of every turn it added.
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        s: &mut AgentSession,
        id: &str,
        context: Option<usize>,
        dep: Option<usize>,
        depth: u32,
        branch: u32,
        next_branch: &mut u32,
    ) -> Result<Vec<usize>> {
        self.visited.insert(id.to_string());
        let c = &self.convs[self.by_id[id]];
        let mut added = Vec::new();
        let mut pending: HashMap<usize, Vec<usize>> = HashMap::new();
        let (mut ctx, mut prev) = (context, dep);
        for (k, t) in c.turns.iter().enumerate() {
            let at = format!("line {}, turn {k}", c.line);
            let (input, tool) =
                turn_text(t).ok_or_else(|| malformed(self.path, &at, "a turn needs messages with text"))?;
            let out = match t.get("max_tokens") {
                None | Some(Value::Null) => self.default_out,
                Some(v) => v
                    .as_u64()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| malformed(self.path, &at, "max_tokens must be > 0"))?
                    as u32,
            };
            let delay = t.get("delay").and_then(Value::as_f64).unwrap_or(0.0);
            let delay_us =
                ms_to_us(delay).ok_or_else(|| malformed(self.path, &at, "delay must be ≥ 0 ms"))?;
            let mut after: Vec<usize> =
                prev.into_iter().chain(pending.remove(&k).into_iter().flatten()).collect();
            after.sort_unstable();
            after.dedup();
            let me = s.turns.len();
            s.turns.push(AgentTurn {
                id: format!("{id}#{k}"),
                context: ctx,
                after,
                depth,
                branch,
                input: TurnInput::Text(input),
                output_tokens: out,
                delay_us,
                tool,
            });
            added.push(me);
            let mut ended = false;
            for ch in children(self.path, c, k, t)? {
                for child in &ch.ids {
                    let b = *next_branch;
                    *next_branch += 1;
                    let inherit = ch.inherit.then_some(me);
                    let sub = self.add(s, child, inherit, Some(me), depth + 1, b, next_branch)?;
                    if let Some(j) = ch.join_at {
                        pending.entry(j).or_default().extend(sub.iter().copied());
                    }
                    added.extend(sub);
                }
                ended |= ch.ends_parent;
            }
            if ended && k + 1 < c.turns.len() {
                return Err(invalid(
                    self.path,
                    id,
                    format!("turn {k} forks without background but more turns follow"),
                ));
            }
            (ctx, prev) = (Some(me), Some(me));
        }
        Ok(added)
    }
}

/// The text of a turn's messages and whether one of them is a tool result.
fn turn_text(t: &Value) -> Option<(String, bool)> {
    let msgs = t.get("messages")?.as_array()?;
    let mut parts = Vec::new();
    let mut tool = false;
    for m in msgs {
        tool |= m.get("role").and_then(Value::as_str) == Some("tool");
        match m.get("content") {
            Some(Value::String(s)) => parts.push(s.clone()),
            Some(Value::Array(a)) => parts
                .extend(a.iter().filter_map(|p| p.get("text").and_then(Value::as_str).map(str::to_string))),
            _ => {}
        }
    }
    let text = parts.join("\n");
    (!text.is_empty()).then_some((text, tool))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::ErrorCode;

    const FIXTURE: &str = include_str!("../../tests/data/agentic/dag_spawn_fork.jsonl");

    #[test]
    fn dag_spawns_join_at_the_next_turn_and_forks_inherit_history() {
        let s = parse("f", FIXTURE, 32).unwrap();
        assert_eq!(s.len(), 1, "children are not sessions");
        let t = &s[0].turns;
        let ids: Vec<&str> = t.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(ids, ["root#0", "w1#0", "w1#1", "w2#0", "root#1", "f#0"]);
        assert_eq!(s[0].start_us, 17_000);
        // Spawned workers: fresh history, after the spawning turn, one level down.
        assert_eq!((t[1].context, t[1].after.clone(), t[1].depth, t[1].branch), (None, vec![0], 1, 1));
        assert_eq!((t[2].context, t[2].delay_us, t[2].tool), (Some(1), 250_000, true));
        assert_eq!((t[3].context, t[3].branch), (None, 2));
        // root#1 extends root#0 and joins both workers entirely.
        assert_eq!((t[4].context, t[4].after.clone()), (Some(0), vec![0, 1, 2, 3]));
        assert_eq!(t[4].output_tokens, 32, "default output length");
        // The fork inherits root#1's history.
        assert_eq!((t[5].context, t[5].depth, t[5].branch), (Some(4), 1, 3));
        assert_eq!(t[0].input, TurnInput::Text("plan the change\nsecond part".into()));
    }

    #[test]
    fn dag_refuses_unknown_children_double_references_cycles_and_orchestrators() {
        let t = |extra: &str| format!("{{\"messages\":[{{\"role\":\"user\",\"content\":\"x\"}}]{extra}}}");
        let conv = |id: &str, turns: &[String]| {
            format!("{{\"session_id\":\"{id}\",\"turns\":[{}]}}", turns.join(","))
        };
        let unknown = conv("a", &[t(",\"spawns\":[\"zz\"]"), t("")]);
        assert_eq!(parse("f", &unknown, 8).unwrap_err().code(), ErrorCode::AgenticGraphInvalid);
        let twice =
            [conv("a", &[t(",\"spawns\":[\"b\"]"), t(",\"spawns\":[\"b\"]"), t("")]), conv("b", &[t("")])];
        assert_eq!(parse("f", &twice.join("\n"), 8).unwrap_err().code(), ErrorCode::AgenticGraphInvalid);
        let cycle = [conv("a", &[t(",\"forks\":[\"b\"]")]), conv("b", &[t(",\"forks\":[\"a\"]")])];
        assert_eq!(parse("f", &cycle.join("\n"), 8).unwrap_err().code(), ErrorCode::AgenticGraphInvalid);
        let orch = "{\"session_id\":\"o\",\"turns\":[],\"orchestrator\":true,\"spawns\":[\"a\"]}";
        assert_eq!(parse("f", orch, 8).unwrap_err().code(), ErrorCode::AgenticTraceMalformed);
        let after_fork = conv("a", &[t(",\"forks\":[\"b\"]"), t("")]) + "\n" + &conv("b", &[t("")]);
        assert_eq!(parse("f", &after_fork, 8).unwrap_err().code(), ErrorCode::AgenticGraphInvalid);
    }
}

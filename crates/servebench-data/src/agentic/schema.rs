//! servebench's session-tree JSONL: one turn per line (docs/workloads.md §Session trees).
//!
//! ```json
//! {"session": "s1", "id": "plan", "input_tokens": 800, "output_tokens": 120, "start_ms": 0}
//! {"session": "s1", "id": "a1", "parent": "plan", "agent": "explore-1", "input_tokens": 60, "output_tokens": 80}
//! {"session": "s1", "id": "a2", "parent": "a1", "tool": true, "delay_ms": 350, "input_tokens": 400, "output_tokens": 40}
//! {"session": "s1", "id": "b1", "parent": "plan", "agent": "explore-2", "text": "look at src/", "output_tokens": 80}
//! {"session": "s1", "id": "sum", "parent": "plan", "join": ["a2", "b1"], "input_tokens": 300, "output_tokens": 200}
//! ```
//!
//! `parent` names the turn whose history this one extends (and waits for); `join` the further
//! turns it waits for; `agent` the agent the turn belongs to (default: its parent's, `main` for
//! a root). The first turn of an agent whose parent belongs to another agent starts a sub-agent
//! one level deeper. `fresh: true` waits for the parent without taking its history.

use super::{invalid, malformed, ms_to_us, AgentSession, AgentTurn, TurnInput};
use servebench_core::Result;
use std::collections::HashMap;

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Line {
    session: String,
    id: String,
    #[serde(default)]
    parent: Option<String>,
    #[serde(default)]
    join: Vec<String>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(default)]
    fresh: bool,
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    text: Option<String>,
    output_tokens: u32,
    #[serde(default)]
    delay_ms: f64,
    #[serde(default)]
    tool: bool,
    #[serde(default)]
    start_ms: Option<f64>,
}

#[derive(Default)]
struct Building {
    session: Option<AgentSession>,
    ids: HashMap<String, usize>,
    /// Agent name → (depth, branch) and the agent of each turn.
    agents: HashMap<String, (u32, u32)>,
    agent_of: Vec<String>,
    start: Option<u64>,
}

/// Parses the JSONL text of `path`.
pub fn parse(path: &str, text: &str) -> Result<Vec<AgentSession>> {
    let mut order: Vec<String> = Vec::new();
    let mut building: HashMap<String, Building> = HashMap::new();
    for (n, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let at = format!("line {}", n + 1);
        let line: Line = serde_json::from_str(raw).map_err(|e| malformed(path, &at, e.to_string()))?;
        let b = building.entry(line.session.clone()).or_insert_with(|| {
            order.push(line.session.clone());
            Building::default()
        });
        add(path, &at, b, line)?;
    }
    Ok(order
        .into_iter()
        .filter_map(|id| {
            let b = building.remove(&id)?;
            let mut s = b.session?;
            s.start_us = b.start.unwrap_or(0);
            Some(s)
        })
        .collect())
}

fn add(path: &str, at: &str, b: &mut Building, line: Line) -> Result<()> {
    let session = b.session.get_or_insert_with(|| AgentSession {
        id: line.session.clone(),
        start_us: 0,
        turns: Vec::new(),
    });
    let find = |id: &str| {
        b.ids.get(id).copied().ok_or_else(|| {
            invalid(
                path,
                &line.session,
                format!("{at}: turn '{}' depends on '{id}', no earlier turn", line.id),
            )
        })
    };
    let parent = line.parent.as_deref().map(find).transpose()?;
    let mut after: Vec<usize> = parent.into_iter().collect();
    for j in &line.join {
        after.push(find(j)?);
    }
    after.sort_unstable();
    after.dedup();
    if b.ids.contains_key(&line.id) {
        return Err(invalid(path, &line.session, format!("{at}: duplicate turn id '{}'", line.id)));
    }
    let input = match (line.input_tokens, line.text) {
        (Some(n), None) if n > 0 => TurnInput::Tokens(n),
        (None, Some(t)) if !t.is_empty() => TurnInput::Text(t),
        _ => return Err(malformed(path, at, "give exactly one of input_tokens (> 0) and text (non-empty)")),
    };
    if line.output_tokens == 0 {
        return Err(malformed(path, at, "output_tokens must be > 0"));
    }
    let delay_us =
        ms_to_us(line.delay_ms).ok_or_else(|| malformed(path, at, "delay_ms must be a number ≥ 0"))?;
    if let Some(s) = line.start_ms {
        let s = ms_to_us(s).ok_or_else(|| malformed(path, at, "start_ms must be a number ≥ 0"))?;
        b.start = Some(b.start.map_or(s, |x| x.min(s)));
    }
    let parent_agent = parent.map(|p| b.agent_of[p].clone());
    let agent = line.agent.or_else(|| parent_agent.clone()).unwrap_or_else(|| "main".into());
    let next_branch = b.agents.values().map(|&(_, br)| br + 1).max().unwrap_or(0);
    let (depth, branch) = *b.agents.entry(agent.clone()).or_insert_with(|| match parent {
        Some(p) if parent_agent.as_deref() != Some(agent.as_str()) => {
            (session.turns[p].depth + 1, next_branch.max(1))
        }
        Some(p) => (session.turns[p].depth, session.turns[p].branch),
        None => (0, 0),
    });
    b.ids.insert(line.id.clone(), session.turns.len());
    b.agent_of.push(agent);
    session.turns.push(AgentTurn {
        id: line.id,
        context: if line.fresh { None } else { parent },
        after,
        depth,
        branch,
        input,
        output_tokens: line.output_tokens,
        delay_us,
        tool: line.tool,
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use servebench_core::ErrorCode;

    const FORK_JOIN: &str = include_str!("../../tests/data/agentic/fork_join.jsonl");

    #[test]
    fn servebench_schema_builds_a_fork_join_tree() {
        let s = parse("f", FORK_JOIN).unwrap();
        assert_eq!(s.len(), 2);
        let t = &s[0].turns;
        assert_eq!(s[0].start_us, 0);
        assert_eq!(s[1].start_us, 500_000);
        // plan → a1 → a2 (tool) ; plan → b1 ; plan → c1 ; sum joins a2, b1, c1.
        let ids: Vec<&str> = t.iter().map(|x| x.id.as_str()).collect();
        assert_eq!(ids, ["plan", "a1", "a2", "b1", "c1", "sum"]);
        assert_eq!((t[0].depth, t[0].branch, t[0].context), (0, 0, None));
        assert_eq!((t[1].depth, t[1].branch, t[1].context), (1, 1, Some(0)));
        assert_eq!(
            (t[2].depth, t[2].branch, t[2].context, t[2].tool, t[2].delay_us),
            (1, 1, Some(1), true, 20_000)
        );
        assert_eq!((t[3].depth, t[3].branch), (1, 2));
        assert_eq!((t[4].depth, t[4].branch), (1, 3));
        assert_eq!((t[5].depth, t[5].branch, t[5].context), (0, 0, Some(0)));
        assert_eq!(t[5].after, vec![0, 2, 3, 4]);
        assert_eq!(
            t[3].input,
            TurnInput::Text("List the files under src/ and say which parse input.".into())
        );
        assert_eq!(s[0].branches(), 3);
    }

    #[test]
    fn servebench_schema_refuses_forward_references_duplicates_and_bad_inputs() {
        let e = parse(
            "f",
            "{\"session\":\"s\",\"id\":\"a\",\"parent\":\"b\",\"input_tokens\":1,\"output_tokens\":1}",
        )
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::AgenticGraphInvalid);
        let dup = "{\"session\":\"s\",\"id\":\"a\",\"input_tokens\":1,\"output_tokens\":1}\n";
        assert_eq!(parse("f", &dup.repeat(2)).unwrap_err().code(), ErrorCode::AgenticGraphInvalid);
        let both = "{\"session\":\"s\",\"id\":\"a\",\"input_tokens\":1,\"text\":\"x\",\"output_tokens\":1}";
        assert_eq!(parse("f", both).unwrap_err().code(), ErrorCode::AgenticTraceMalformed);
        assert_eq!(parse("f", "{\"session\":1}").unwrap_err().code(), ErrorCode::AgenticTraceMalformed);
        let neg = "{\"session\":\"s\",\"id\":\"a\",\"input_tokens\":1,\"output_tokens\":1,\"delay_ms\":-1}";
        assert!(parse("f", neg).unwrap_err().to_string().contains("line 1"));
    }
}

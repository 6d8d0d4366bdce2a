//! Session trees (agentic replay): sessions whose turns branch into sub-agents that run
//! concurrently and join back. The model ([`AgentSession`]) and its loaders: servebench's own
//! JSONL ([`schema`]), AIPerf's `dag_jsonl` fork/spawn format ([`dag`]) and the Weka /
//! SemiAnalysis Claude Code session traces ([`weka`]). docs/workloads.md §Session trees.
//!
//! A turn is sent once every turn it depends on (`after`) has ended, plus its delay (think or
//! tool time). Its prompt is its context parent's history (the parent's prompt and the reply
//! actually received) followed by its own new input, so a sub-agent's requests share the
//! parent's prefix up to the fork and then grow their own history.

pub mod dag;
pub mod schema;
pub mod weka;

use servebench_core::{BenchError, Result};

/// The new input of a turn: a token count (synthetic text of that length is generated) or
/// the exact text.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    Tokens(u32),
    Text(String),
}

/// One turn (one request) of a session tree.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentTurn {
    /// The id in the source file (diagnostics, records' request id).
    pub id: String,
    /// The turn whose history (its prompt + its reply) this turn's prompt extends; None = a
    /// fresh context (a root turn, or a sub-agent spawned without the parent's context).
    pub context: Option<usize>,
    /// Turns (earlier in `turns`) that must end before this one is sent; holds `context` too.
    pub after: Vec<usize>,
    /// Tree depth: 0 for the main agent, the forking turn's depth + 1 for a sub-agent.
    pub depth: u32,
    /// Branch in the session: 0 for the main agent, 1.. for each sub-agent.
    pub branch: u32,
    pub input: TurnInput,
    /// Output tokens asked for (`max_tokens`).
    pub output_tokens: u32,
    /// Think/tool time between the end of the last turn in `after` and this turn, µs.
    pub delay_us: u64,
    /// A tool-result turn (its input is the tool's output, its delay the tool's run time).
    pub tool: bool,
}

/// One session: its recorded start and its turns, each after the turns it depends on.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSession {
    pub id: String,
    /// Recorded start offset of the session, µs (open-loop replay).
    pub start_us: u64,
    pub turns: Vec<AgentTurn>,
}

impl AgentSession {
    /// Number of sub-agent branches.
    pub fn branches(&self) -> u32 {
        self.turns.iter().map(|t| t.branch).max().unwrap_or(0)
    }
}

/// The formats [`load`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgenticFormat {
    /// servebench's own JSONL, one turn per line ([`schema`]).
    Servebench,
    /// AIPerf `dag_jsonl`: one conversation per line with `forks`/`spawns` ([`dag`]).
    Dag,
    /// Weka / SemiAnalysis Claude Code traces: one session object per line or file ([`weka`]).
    Weka,
}

impl AgenticFormat {
    pub fn name(self) -> &'static str {
        match self {
            AgenticFormat::Servebench => "servebench",
            AgenticFormat::Dag => "dag",
            AgenticFormat::Weka => "weka",
        }
    }
}

impl std::str::FromStr for AgenticFormat {
    type Err = ();

    /// `servebench`, `dag` (also `dag_jsonl`) or `weka`.
    fn from_str(s: &str) -> std::result::Result<Self, ()> {
        match s {
            "servebench" => Ok(AgenticFormat::Servebench),
            "dag" | "dag_jsonl" | "dag-jsonl" => Ok(AgenticFormat::Dag),
            "weka" => Ok(AgenticFormat::Weka),
            _ => Err(()),
        }
    }
}

/// The format of a trace's text, told by the keys of its first JSON object: `requests`
/// (weka), `turns` (dag), `session` with `id` (servebench). None when none matches.
pub fn detect(text: &str) -> Option<AgenticFormat> {
    let first = text.lines().find(|l| !l.trim().is_empty())?;
    let value: serde_json::Value = serde_json::from_str(first)
        .or_else(|_| {
            serde_json::Deserializer::from_str(text).into_iter().next().unwrap_or(Ok(serde_json::Value::Null))
        })
        .ok()?;
    let o = value.as_object()?;
    if o.contains_key("requests") {
        Some(AgenticFormat::Weka)
    } else if o.contains_key("turns") {
        Some(AgenticFormat::Dag)
    } else if o.contains_key("session") && o.contains_key("id") {
        Some(AgenticFormat::Servebench)
    } else {
        None
    }
}

/// Options of loading.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// None: told from the file ([`detect`]).
    pub format: Option<AgenticFormat>,
    /// Output tokens of a turn whose source gives none (`dag` turns without `max_tokens`).
    pub default_output_tokens: u32,
}

/// Reads the sessions of `path`.
pub fn load(path: &std::path::Path, opts: &LoadOptions) -> Result<Vec<AgentSession>> {
    let text = std::fs::read_to_string(path).map_err(|e| BenchError::io(path.display(), e))?;
    let text = crate::dataset::file::without_bom(text);
    let p = path.display().to_string();
    let format = match opts.format {
        Some(f) => f,
        None => detect(&text).ok_or_else(|| {
            malformed(&p, "line 1", "cannot tell the format (no `requests`, `turns` or `session`+`id` key); pass --agentic-format servebench|dag|weka")
        })?,
    };
    let sessions = match format {
        AgenticFormat::Servebench => schema::parse(&p, &text)?,
        AgenticFormat::Dag => dag::parse(&p, &text, opts.default_output_tokens)?,
        AgenticFormat::Weka => weka::parse(&p, &text)?,
    };
    if sessions.is_empty() {
        return Err(malformed(&p, "file", "no session"));
    }
    Ok(sessions)
}

/// A seeded subset of `n` of the sessions (all when `n >= len`), kept in file order.
pub fn sample(sessions: Vec<AgentSession>, n: usize, seed: u64) -> Vec<AgentSession> {
    if n >= sessions.len() {
        return sessions;
    }
    // Rank each session by a seeded hash of its index; keep the n smallest.
    let key = |i: usize| splitmix(seed ^ splitmix(i as u64));
    let mut idx: Vec<usize> = (0..sessions.len()).collect();
    idx.sort_by_key(|&i| key(i));
    let mut keep = vec![false; sessions.len()];
    for &i in &idx[..n] {
        keep[i] = true;
    }
    sessions.into_iter().zip(keep).filter(|(_, k)| *k).map(|(s, _)| s).collect()
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

pub(crate) fn malformed(path: &str, location: impl Into<String>, problem: impl Into<String>) -> BenchError {
    BenchError::AgenticTraceMalformed {
        path: path.into(),
        location: location.into(),
        problem: problem.into(),
    }
}

pub(crate) fn invalid(path: &str, session: &str, problem: impl Into<String>) -> BenchError {
    BenchError::AgenticGraphInvalid { path: path.into(), session: session.into(), problem: problem.into() }
}

/// Milliseconds (finite, ≥ 0) to µs.
pub(crate) fn ms_to_us(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| (ms * 1000.0).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(id: &str) -> AgentSession {
        AgentSession { id: id.into(), start_us: 0, turns: Vec::new() }
    }

    #[test]
    fn session_sampling_is_seeded_sized_and_in_file_order() {
        let all: Vec<AgentSession> = (0..20).map(|i| s(&i.to_string())).collect();
        let a = sample(all.clone(), 5, 7);
        assert_eq!(a.len(), 5);
        assert_eq!(a, sample(all.clone(), 5, 7));
        assert_ne!(a, sample(all.clone(), 5, 8));
        let ids: Vec<usize> = a.iter().map(|x| x.id.parse().unwrap_or(0)).collect();
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(sample(all.clone(), 50, 1).len(), 20);
    }

    #[test]
    fn trace_formats_are_detected_from_their_first_object() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/agentic");
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap_or_default();
        assert_eq!(detect(&read("fork_join.jsonl")), Some(AgenticFormat::Servebench));
        assert_eq!(detect(&read("dag_spawn_fork.jsonl")), Some(AgenticFormat::Dag));
        assert_eq!(detect(&read("weka_session.json")), Some(AgenticFormat::Weka));
        // A byte-order mark before the first object: the same sessions (it failed as "cannot
        // tell the format").
        let marked = tempfile::tempdir().unwrap();
        let path = marked.path().join("fork_join.jsonl");
        std::fs::write(&path, format!("\u{feff}{}", read("fork_join.jsonl"))).unwrap();
        let opts = LoadOptions { format: None, default_output_tokens: 8 };
        assert_eq!(load(&path, &opts).unwrap(), load(&dir.join("fork_join.jsonl"), &opts).unwrap());
        assert_eq!(detect("{\"prompt\": 1}"), None);
        assert_eq!(detect("not json"), None);
        assert_eq!("dag_jsonl".parse(), Ok(AgenticFormat::Dag));
        assert!("csv".parse::<AgenticFormat>().is_err());
    }
}

//! The synthetic 100,000-conversation ShareGPT file of the data crate's `sharegpt_load` bench and
//! example (written at start into a temporary directory; nothing big is committed): prompts of 2–400
//! words, replies of 2–500 words (some too short or too long for vLLM's filter), one
//! conversation in 50 with a single message. Seeded: the same file on every machine.

use rand::{Rng, SeedableRng};
use std::io::Write;
use std::path::Path;

/// Conversations in the file.
pub const CONVERSATIONS: usize = 100_000;

const WORDS: &[&str] = &[
    "the",
    "model",
    "server",
    "request",
    "token",
    "latency",
    "explain",
    "how",
    "why",
    "what",
    "cache",
    "prefix",
    "batch",
    "queue",
    "stream",
    "memory",
    "kernel",
    "attention",
    "layer",
    "weights",
    "please",
    "could",
    "you",
    "write",
    "a",
    "short",
    "program",
    "in",
    "Rust",
    "that",
    "reads",
    "file",
    "and",
    "prints",
    "lines",
    "numbers",
    "between",
    "one",
    "hundred",
    "thousand",
    "because",
    "faster",
    "slower",
    "graph",
    "network",
    "performance",
    "benchmark",
    "results",
    "table",
    "summary",
    "question",
    "answer",
];

fn text(r: &mut impl Rng, words: usize) -> String {
    let mut s = String::with_capacity(words * 7);
    for i in 0..words {
        if i > 0 {
            s.push(if i % 17 == 0 { '\n' } else { ' ' });
        }
        s.push_str(WORDS[r.random_range(0..WORDS.len())]);
        if i % 11 == 10 {
            s.push(',');
        }
    }
    s.push('.');
    s
}

/// Writes the file to `path`.
pub fn write_file(path: &Path) -> std::io::Result<()> {
    let mut r = rand_chacha::ChaCha8Rng::seed_from_u64(42);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    out.write_all(b"[\n")?;
    for i in 0..CONVERSATIONS {
        let n = r.random_range(2..400);
        let prompt = text(&mut r, n);
        let mut conv = vec![serde_json::json!({"from": "human", "value": prompt})];
        if i % 50 != 0 {
            let n = r.random_range(2..500);
            conv.push(serde_json::json!({"from": "gpt", "value": text(&mut r, n)}));
        }
        let entry = serde_json::json!({"id": format!("c{i}"), "conversations": conv});
        if i > 0 {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut out, &entry)?;
    }
    out.write_all(b"\n]\n")?;
    out.flush()
}

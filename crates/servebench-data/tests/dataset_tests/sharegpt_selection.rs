//! Pins which conversations the `sharegpt` dataset selects, in which order, with which token
//! counts: the loader (borrowed parse of the first two messages, chunked parallel tokenizing)
//! against a plain reference written from vLLM's description (read every record whole, drop
//! conversations with fewer than two messages, shuffle, walk in order applying
//! `is_valid_sequence`, oversample), on a generated file with every kind of record: escapes,
//! `\u` escapes and surrogate pairs, non-ASCII text, one-message and many-message
//! conversations, prompts and replies too short or too long for the filter. The digests were
//! computed with the loader as it was before the borrowed parse (commit 9af5ac9), and again when
//! the shuffle and the oversampling became Python's (`random.shuffle`, `random.choice`), as vLLM's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use servebench_core::{TextTokenizer, Workload};
use servebench_data::dataset::py_random::PyRandom;
use servebench_data::dataset::sharegpt::{generate_sharegpt, ShareGptConfig};
use servebench_data::dataset::Sampling;
use servebench_data::{load_tokenizer, HfTokenizer, HubEnv};
use std::path::{Path, PathBuf};

const CONVERSATIONS: usize = 1_500;

const WORDS: &[&str] = &[
    "the",
    "server",
    "token",
    "cache",
    "why",
    "Rust",
    "a",
    "prints",
    "numbers",
    "é",
    "naïve",
    "日本語",
    "😀",
    "🚀x",
    "\"quoted\"",
    "back\\slash",
    "tab\there",
    "line\nbreak",
    "<|endoftext|>",
    "{json}",
    "x=1;",
    "42",
    "3.14",
    "  ",
    "\r\n",
    "\u{7}",
    "ünïcødé",
    "Ω",
    "»«",
];

/// A JSON string literal for `s`, escaped the way Python's `json.dump` does by default
/// (`ensure_ascii`: every non-ASCII character as `\uXXXX`, surrogate pairs beyond the BMP).
fn ascii_literal(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() && !c.is_ascii_control() => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{u:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

fn words(r: &mut ChaCha8Rng, n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        if i > 0 {
            s.push(' ');
        }
        s.push_str(WORDS[r.random_range(0..WORDS.len())]);
    }
    s
}

/// A text of a length that exercises the filter: mostly ordinary, some tiny, some very long.
fn text(r: &mut ChaCha8Rng, long_words: usize) -> String {
    match r.random_range(0..20) {
        0 => String::new(),
        1 => "Hi".to_string(),
        2 => words(r, 2),
        3 => words(r, long_words),
        _ => {
            let n = r.random_range(3..300);
            words(r, n)
        }
    }
}

fn literal(r: &mut ChaCha8Rng, s: &str) -> String {
    if r.random_bool(0.5) {
        ascii_literal(s)
    } else {
        serde_json::to_string(s).unwrap()
    }
}

/// The records of the generated file, each a JSON object on one line.
fn records() -> Vec<String> {
    let mut r = ChaCha8Rng::seed_from_u64(20_261_201);
    (0..CONVERSATIONS)
        .map(|i| {
            let messages = match r.random_range(0..10) {
                0 => 0,
                1 => 1,
                2..=6 => 2,
                _ => r.random_range(3..7),
            };
            let conv: Vec<String> = (0..messages)
                .map(|m| {
                    let value = text(&mut r, if m == 0 { 1_600 } else { 2_600 });
                    let from = if m % 2 == 0 { "human" } else { "gpt" };
                    let value = literal(&mut r, &value);
                    match r.random_range(0..3) {
                        0 => format!(r#"{{"from": "{from}", "value": {value}}}"#),
                        1 => format!(r#"{{"value":{value},"from":"{from}","extra":[1,{{"a":null}}]}}"#),
                        _ => format!(r#"{{ "value" : {value} }}"#),
                    }
                })
                .collect();
            format!(r#"{{"id": "c{i}", "conversations": [{}], "lang": "en"}}"#, conv.join(", "))
        })
        .collect()
}

fn write_files(dir: &Path) -> (PathBuf, PathBuf) {
    let recs = records();
    let array = dir.join("generated.json");
    // Records over several lines in an indented array, as ShareGPT files are written.
    let body: Vec<String> =
        recs.iter().map(|r| format!("  {}", r.replacen(", \"conv", ",\n   \"conv", 1))).collect();
    std::fs::write(&array, format!("[\n{}\n]\n", body.join(",\n"))).unwrap();
    let lines = dir.join("generated.jsonl");
    std::fs::write(&lines, recs.join("\n") + "\n").unwrap();
    (array, lines)
}

/// vLLM's sharegpt sampling, written out plainly: (prompt, prompt tokens, output tokens).
fn reference(
    path: &Path,
    fixed_output: Option<usize>,
    s: &Sampling,
    tok: &dyn TextTokenizer,
) -> Vec<(String, u32, u32)> {
    let text = std::fs::read_to_string(path).unwrap();
    let records: Vec<serde_json::Value> = if path.extension().is_some_and(|e| e == "jsonl") {
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
    } else {
        serde_json::from_str(&text).unwrap()
    };
    let mut conversations: Vec<(String, String)> = records
        .iter()
        .filter_map(|rec| {
            let conv = rec["conversations"].as_array().unwrap();
            (conv.len() >= 2).then(|| {
                (
                    conv[0]["value"].as_str().unwrap().to_string(),
                    conv[1]["value"].as_str().unwrap().to_string(),
                )
            })
        })
        .collect();
    // `random.seed(seed); random.shuffle(...)`: Python's generator (checked against CPython
    // in its own tests).
    if s.shuffle {
        PyRandom::seed(s.seed).shuffle(&mut conversations);
    }
    let mut out: Vec<(String, u32, u32)> = Vec::new();
    for (prompt, reply) in conversations {
        if out.len() == s.num_prompts {
            break;
        }
        let prompt_len = tok.encode(&prompt, true).unwrap().len();
        let output_len = fixed_output.unwrap_or_else(|| tok.encode(&reply, true).unwrap().len());
        let too_short = prompt_len < 4 || (fixed_output.is_none() && output_len < 4);
        let too_long = prompt_len > 1024 || prompt_len + output_len > 2048;
        if !too_short && !too_long {
            out.push((prompt, prompt_len as u32, output_len as u32));
        }
    }
    if s.oversample && !out.is_empty() && out.len() < s.num_prompts {
        // `random.seed(seed)`, then `random.choice(samples)` per missing request.
        let mut r = PyRandom::seed(s.seed);
        let have = out.len();
        for _ in have..s.num_prompts {
            let pick = out[r.below(have)].clone();
            out.push(pick);
        }
    }
    out
}

fn selection(w: &Workload) -> Vec<(String, u32, u32)> {
    w.requests
        .iter()
        .map(|r| (r.prompt.text().unwrap().to_string(), r.prompt_tokens, r.expected_output_tokens))
        .collect()
}

/// FNV-1a over the selection, in order.
fn digest(sel: &[(String, u32, u32)]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (prompt, p, o) in sel {
        for &b in prompt.as_bytes().iter().chain(&p.to_le_bytes()).chain(&o.to_le_bytes()) {
            h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

fn smollm2() -> HfTokenizer {
    HfTokenizer::from_file(&servebench_testkit::fixtures::smollm2_tokenizer(), "smollm2").unwrap()
}

#[test]
fn selection_equals_the_reference_and_is_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let (array, lines) = write_files(dir.path());
    let smol = smollm2();
    let cl100k = load_tokenizer("cl100k_base").unwrap();
    let env = HubEnv { offline: true, ..HubEnv::default() };
    let base = Sampling { num_prompts: 100, seed: 0, shuffle: true, oversample: true };
    // (file, tokenizer, fixed output length, sampling, pinned digest)
    type Case<'a> = (&'a Path, &'a dyn TextTokenizer, Option<usize>, Sampling, u64);
    let cases: Vec<Case<'_>> = vec![
        (&array, &smol, None, base, 0x67ee_dde5_7dbf_0c1c),
        (&lines, &smol, None, base, 0x67ee_dde5_7dbf_0c1c),
        (&array, &smol, None, Sampling { num_prompts: 5_000, ..base }, 0x67b7_3ff3_3493_e06a),
        (
            &array,
            cl100k.as_ref(),
            Some(300),
            Sampling { num_prompts: 500, seed: 3, ..base },
            0x6afe_018a_b1c2_e72e,
        ),
        (
            &array,
            cl100k.as_ref(),
            None,
            Sampling { num_prompts: 200, shuffle: false, ..base },
            0xd5ea_fa55_537c_de86,
        ),
        (
            &lines,
            &smol,
            Some(1_900),
            Sampling { num_prompts: 10_000, seed: 7, oversample: false, ..base },
            0xd8f1_cabe_3a2b_0bfd,
        ),
    ];
    let mut failures = Vec::new();
    for (i, (path, tok, fixed, s, pinned)) in cases.into_iter().enumerate() {
        let cfg = ShareGptConfig { path: Some(path.to_path_buf()), output_len: fixed };
        let got = selection(&generate_sharegpt(&cfg, &s, tok, &env).unwrap());
        let want = reference(path, fixed, &s, tok);
        assert_eq!(got.len(), want.len(), "case {i}: request count");
        for (j, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "case {i}: request {j}");
        }
        if digest(&got) != pinned {
            failures.push(format!("case {i}: digest {:#018x}, pinned {pinned:#018x}", digest(&got)));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

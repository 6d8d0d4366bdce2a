//! The built-in tiktoken encodings from servebench's packed tables (`data/tiktoken/`, see its
//! README): each encoding's BPE table, special tokens and split pattern, built into a
//! [`CoreBPE`]. `tiktoken-rs`'s own constructors embed the same tables as 7 MB of base64 text;
//! not calling them keeps that text out of the binary.
//!
//! The special tokens and split patterns are the encodings' definitions as OpenAI publishes
//! them; the tests check every encoding against `tiktoken-rs`'s.

use rustc_hash::FxHashMap;
use servebench_core::{BenchError, Result};
use tiktoken_rs::{CoreBPE, Rank};

const CL100K_TABLE: &[u8] = include_bytes!("../../data/tiktoken/cl100k_base.sbtk.zst");
const O200K_TABLE: &[u8] = include_bytes!("../../data/tiktoken/o200k_base.sbtk.zst");
const P50K_TABLE: &[u8] = include_bytes!("../../data/tiktoken/p50k_base.sbtk.zst");
const R50K_TABLE: &[u8] = include_bytes!("../../data/tiktoken/r50k_base.sbtk.zst");

/// The packed form's first bytes.
const MAGIC: &[u8] = b"SBTK1\n";

/// The split pattern of r50k_base and p50k_base (GPT-2's).
const GPT2_PATTERN: &str = r"'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s";
/// The split pattern of cl100k_base.
const CL100K_PATTERN: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

const ENDOFTEXT: &str = "<|endoftext|>";
const FIM_PREFIX: &str = "<|fim_prefix|>";
const FIM_MIDDLE: &str = "<|fim_middle|>";
const FIM_SUFFIX: &str = "<|fim_suffix|>";
const ENDOFPROMPT: &str = "<|endofprompt|>";

/// The special tokens of `name` (a built-in encoding), with their ids.
fn special_tokens(name: &str) -> Vec<(String, Rank)> {
    let named = |list: &[(&str, Rank)]| list.iter().map(|(s, id)| ((*s).to_owned(), *id)).collect();
    match name {
        "r50k_base" | "gpt2" | "p50k_base" => named(&[(ENDOFTEXT, 50256)]),
        "p50k_edit" => {
            named(&[(ENDOFTEXT, 50256), (FIM_PREFIX, 50281), (FIM_MIDDLE, 50282), (FIM_SUFFIX, 50283)])
        }
        "cl100k_base" => named(&[
            (ENDOFTEXT, 100257),
            (FIM_PREFIX, 100258),
            (FIM_MIDDLE, 100259),
            (FIM_SUFFIX, 100260),
            (ENDOFPROMPT, 100276),
        ]),
        "o200k_base" => named(&[(ENDOFTEXT, 199999), (ENDOFPROMPT, 200018)]),
        "o200k_harmony" => harmony_special_tokens(),
        _ => Vec::new(),
    }
}

/// o200k_harmony's special tokens (gpt-oss): named ones, the rest of 200000–201087 reserved.
fn harmony_special_tokens() -> Vec<(String, Rank)> {
    let named: [(&str, Rank); 9] = [
        ("<|startoftext|>", 199998),
        (ENDOFTEXT, 199999),
        ("<|return|>", 200002),
        ("<|constrain|>", 200003),
        ("<|channel|>", 200005),
        ("<|start|>", 200006),
        ("<|end|>", 200007),
        ("<|message|>", 200008),
        ("<|call|>", 200012),
    ];
    let mut tokens: Vec<(String, Rank)> = named.iter().map(|(s, id)| ((*s).to_owned(), *id)).collect();
    let taken: Vec<Rank> = tokens.iter().map(|t| t.1).collect();
    tokens.extend(
        (200000..=201087).filter(|id| !taken.contains(id)).map(|id| (format!("<|reserved_{id}|>"), id)),
    );
    tokens
}

/// The packed table and split pattern of `name`, or `None` if it is not a built-in encoding.
fn table_and_pattern(name: &str) -> Option<(&'static [u8], &'static str)> {
    Some(match name {
        "cl100k_base" => (CL100K_TABLE, CL100K_PATTERN),
        "o200k_base" | "o200k_harmony" => (O200K_TABLE, tiktoken_rs::O200K_BASE_PAT_STR),
        "p50k_base" | "p50k_edit" => (P50K_TABLE, GPT2_PATTERN),
        "r50k_base" | "gpt2" => (R50K_TABLE, GPT2_PATTERN),
        _ => return None,
    })
}

/// The built-in encoding `name` built from the packed tables; `None` for an unknown name.
pub fn core_bpe(name: &str) -> Option<Result<CoreBPE>> {
    let (packed, pattern) = table_and_pattern(name)?;
    Some(build(packed, pattern, special_tokens(name)).map_err(|why| {
        BenchError::tokenizer_load(
            format!("built-in encoding {name}"),
            format!("its packed table is damaged: {why}"),
        )
    }))
}

fn build(
    packed: &[u8],
    pattern: &str,
    specials: Vec<(String, Rank)>,
) -> std::result::Result<CoreBPE, String> {
    let raw = zstd::decode_all(packed).map_err(|e| e.to_string())?;
    let encoder = unpack(&raw)?;
    let specials: FxHashMap<String, Rank> = specials.into_iter().collect();
    CoreBPE::new(encoder, specials, pattern).map_err(|e| e.to_string())
}

/// The token → rank map of a decompressed table (format: data/tiktoken/README.md).
fn unpack(raw: &[u8]) -> std::result::Result<FxHashMap<Vec<u8>, Rank>, String> {
    let mut rest = raw.strip_prefix(MAGIC).ok_or("not a packed tiktoken table")?;
    let mut encoder = FxHashMap::default();
    let mut next: u64 = 0;
    while !rest.is_empty() {
        let (gap, after) = varint(rest).ok_or("truncated rank")?;
        let (&len, after) = after.split_first().ok_or("truncated length")?;
        let token = after.get(..usize::from(len)).ok_or("truncated token")?;
        let rank = next.checked_add(gap).ok_or("rank overflow")?;
        encoder.insert(token.to_vec(), Rank::try_from(rank).map_err(|_| "rank overflow")?);
        next = rank + 1;
        rest = &after[usize::from(len)..];
    }
    Ok(encoder)
}

/// A LEB128 varint at the start of `bytes` and what follows it.
fn varint(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, &bytes[i + 1..]));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// tiktoken-rs's own construction of `name` (its embedded text tables): the reference.
    fn reference(name: &str) -> CoreBPE {
        match name {
            "cl100k_base" => tiktoken_rs::cl100k_base(),
            "o200k_base" => tiktoken_rs::o200k_base(),
            "o200k_harmony" => tiktoken_rs::o200k_harmony(),
            "p50k_base" => tiktoken_rs::p50k_base(),
            "p50k_edit" => tiktoken_rs::p50k_edit(),
            _ => tiktoken_rs::r50k_base(),
        }
        .unwrap()
    }

    const SAMPLES: &[&str] = &[
        "Hello, world! It's 2026-12-05 and we're benchmarking LLM servers.",
        "  leading spaces\n\n\ttabs and\r\nCRLF lines   ",
        "Ünïcödé — 東京 🚀 numbers 1234567 and 3.14159; code: fn main() { println!(\"hi\"); }",
        "<|endoftext|> special text is ordinary here <|fim_prefix|>",
        "I'LL SAY IT'S THEIR'S, they've you're we'd",
    ];

    #[test]
    fn every_builtin_encoding_decodes_every_id_and_encodes_samples_as_tiktoken_rs() {
        for name in
            ["cl100k_base", "o200k_base", "o200k_harmony", "p50k_base", "p50k_edit", "r50k_base", "gpt2"]
        {
            let ours = core_bpe(name).unwrap().unwrap();
            let theirs = reference(name);
            let top = if name.starts_with("o200k") { 201_100 } else { 100_300 };
            for id in 0..top {
                assert_eq!(ours.decode_bytes(&[id]).ok(), theirs.decode_bytes(&[id]).ok(), "{name} id {id}");
            }
            for text in SAMPLES {
                assert_eq!(ours.encode_ordinary(text), theirs.encode_ordinary(text), "{name}: {text}");
                assert_eq!(
                    ours.encode_with_special_tokens(text),
                    theirs.encode_with_special_tokens(text),
                    "{name}"
                );
            }
            let mut a = ours.special_tokens().into_iter().collect::<Vec<_>>();
            let mut b = theirs.special_tokens().into_iter().collect::<Vec<_>>();
            a.sort();
            b.sort();
            assert_eq!(a, b, "{name}");
        }
        assert!(core_bpe("bert").is_none());
    }

    #[test]
    fn damaged_tables_are_errors_not_panics() {
        assert!(unpack(b"nope").is_err());
        assert!(unpack(b"SBTK1\n\x00\x05ab").is_err(), "a token shorter than its length");
        assert!(unpack(b"SBTK1\n\x80").is_err(), "a truncated varint");
        assert!(build(b"not zstd", GPT2_PATTERN, Vec::new()).is_err());
        assert_eq!(unpack(b"SBTK1\n\x00\x01a\x02\x01b").unwrap().get(&b"b"[..]), Some(&3));
    }
}

//! The `sharegpt` dataset: the first human message of each conversation as the prompt, the
//! first reply's length (or `--sharegpt-output-len`) as the output length, filtered as vLLM
//! does (prompt ≥ 4 and ≤ 1024 tokens, output ≥ 4 unless fixed, prompt + output ≤ 2048).

use super::file::{parse_json_array, parse_json_lines, DataFile, Format};
use super::json_string::JsonStringLiteral;
use super::{collect_samples, finish, hub, shuffle_source, Sample, Sampling};
use crate::tokenizer::HubEnv;
use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;
use servebench_core::{Result, TextTokenizer, Workload};
use std::fmt;
use std::marker::PhantomData;
use std::path::PathBuf;

/// The Hub dataset downloaded when no `--dataset-path` is given.
pub const SHAREGPT_REPO: &str = "anon8231489123/ShareGPT_Vicuna_unfiltered";
/// Its file.
pub const SHAREGPT_FILE: &str = "ShareGPT_V3_unfiltered_cleaned_split.json";

/// vLLM's validity limits (`is_valid_sequence` defaults).
pub const MIN_LEN: usize = 4;
pub const MAX_PROMPT_LEN: usize = 1024;
pub const MAX_TOTAL_LEN: usize = 2048;

/// Options of the sharegpt dataset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGptConfig {
    /// `--dataset-path`; None = the Hub file (cache, else download).
    pub path: Option<PathBuf>,
    /// `--sharegpt-output-len` (also `--output-len`): fixed output length.
    pub output_len: Option<usize>,
}

/// One record of the file as the loader reads it: only the `value` of each message is looked
/// at, and only the first two are kept.
#[derive(Debug, Deserialize)]
struct Entry<'a> {
    #[serde(borrow)]
    conversations: FirstTwoMessages<'a>,
}

/// The `value`s of a conversation's first two messages, as written in the file. Every message
/// must be an object with a string `value` (as when whole conversations were read); later
/// messages are checked and dropped.
#[derive(Debug, Default)]
struct FirstTwoMessages<'a> {
    prompt: Option<JsonStringLiteral<'a>>,
    reply: Option<JsonStringLiteral<'a>>,
}

#[derive(Debug, Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    value: JsonStringLiteral<'a>,
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstTwoMessages<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct MessagesVisitor<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for MessagesVisitor<'a> {
            type Value = FirstTwoMessages<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a sequence")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
                let prompt = seq.next_element::<Message<'a>>()?.map(|m| m.value);
                let reply = match prompt {
                    Some(_) => seq.next_element::<Message<'a>>()?.map(|m| m.value),
                    None => None,
                };
                if reply.is_some() {
                    while seq.next_element::<Message<'a>>()?.is_some() {}
                }
                Ok(FirstTwoMessages { prompt, reply })
            }
        }
        d.deserialize_seq(MessagesVisitor(PhantomData))
    }
}

/// A conversation with a prompt and a reply (vLLM skips those with fewer than two messages),
/// decoded only when it is tokenized.
#[derive(Debug)]
struct Conversation<'a> {
    prompt: JsonStringLiteral<'a>,
    reply: JsonStringLiteral<'a>,
}

/// Reads the records of `text`: JSON array (ShareGPT's format) or JSON Lines of the same
/// objects.
fn read_entries<'a>(file: &DataFile, text: &'a str) -> Result<Vec<Entry<'a>>> {
    match Format::detect(&file.path, text.as_bytes()) {
        Format::JsonLines => {
            Ok(parse_json_lines::<Entry<'a>>(file, text)?.into_iter().map(|(_, e)| e).collect())
        }
        _ => match serde_json::from_str::<Vec<Entry<'a>>>(text) {
            // One sequential pass over the file; nothing is copied.
            Ok(entries) if !entries.is_empty() => Ok(entries),
            // The record-by-record reader, for its error naming the record and line (or the
            // empty-array error).
            _ => Ok(parse_json_array::<Entry<'a>>(file, text)
                .map_err(with_hint)?
                .into_iter()
                .map(|(_, e)| e)
                .collect()),
        },
    }
}

fn with_hint(e: servebench_core::BenchError) -> servebench_core::BenchError {
    match e {
        servebench_core::BenchError::DatasetFile { path, location, problem, fix, source }
            if problem.contains("missing field") =>
        {
            servebench_core::BenchError::DatasetFile {
                path,
                location,
                problem,
                source,
                fix: format!(
                    "{fix}; each record needs \"conversations\": [{{\"from\": ..., \"value\": ...}}, ...]"
                ),
            }
        }
        other => other,
    }
}

/// Builds the sharegpt workload.
pub fn generate_sharegpt(
    cfg: &ShareGptConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
    env: &HubEnv,
) -> Result<Workload> {
    let path = match &cfg.path {
        Some(p) => p.clone(),
        None => hub::dataset_file(SHAREGPT_REPO, SHAREGPT_FILE, env)?,
    };
    let file = DataFile::new(path);
    let text = file.read_text()?;
    let mut conversations: Vec<Conversation<'_>> = read_entries(&file, &text)?
        .into_iter()
        .filter_map(|e| match e.conversations {
            FirstTwoMessages { prompt: Some(prompt), reply: Some(reply) } => {
                Some(Conversation { prompt, reply })
            }
            _ => None,
        })
        .collect();
    if conversations.is_empty() && is_one_object(&text) {
        // `{"conversations": []}`: the whole file is one record, where ShareGPT is an array.
        return Err(file.error(
            super::file::Location::File,
            "a JSON object where an array is expected (ShareGPT is a JSON array of records), \
             and its one record has no conversation with two or more messages",
            "pass a JSON array [{\"conversations\": [{\"from\": ..., \"value\": ...}, ...]}, ...] \
             (or JSON Lines, one such object per line)",
        ));
    }
    if conversations.is_empty() {
        return Err(file.error(
            super::file::Location::File,
            "no conversation has two or more messages",
            "pass a ShareGPT file whose conversations have a prompt and a reply",
        ));
    }
    shuffle_source(&mut conversations, sampling);
    let samples =
        collect_samples(&conversations, sampling.num_prompts, |c| sample_of(c, cfg.output_len, tok))?;
    Ok(finish(samples, sampling))
}

/// True when the whole text is one JSON object (not an array, not several lines of records).
fn is_one_object(text: &str) -> bool {
    let text = text.trim_start_matches('\u{feff}').trim();
    text.starts_with('{') && serde_json::from_str::<&serde_json::value::RawValue>(text).is_ok()
}

fn sample_of(
    c: &Conversation<'_>,
    fixed_output: Option<usize>,
    tok: &dyn TextTokenizer,
) -> Result<Option<Sample>> {
    let prompt = c.prompt.decode()?;
    let prompt_len = tok.encode(&prompt, true)?.len();
    if !(MIN_LEN..=MAX_PROMPT_LEN).contains(&prompt_len) {
        return Ok(None); // invalid whatever the reply: do not tokenize it
    }
    let output_len = match fixed_output {
        Some(n) => n,
        None => tok.encode(&c.reply.decode()?, true)?.len(),
    };
    if !is_valid(prompt_len, output_len, fixed_output.is_some()) {
        return Ok(None);
    }
    Ok(Some(Sample::text(prompt.as_ref(), prompt_len, output_len)))
}

/// vLLM's `is_valid_sequence` with its defaults.
pub fn is_valid(prompt_len: usize, output_len: usize, skip_min_output: bool) -> bool {
    let too_short = prompt_len < MIN_LEN || (!skip_min_output && output_len < MIN_LEN);
    let too_long = prompt_len > MAX_PROMPT_LEN || prompt_len + output_len > MAX_TOTAL_LEN;
    !(too_short || too_long)
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorCode;

    fn load(content: &str) -> Result<Workload> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.json");
        std::fs::write(&path, content).unwrap();
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let cfg = ShareGptConfig { path: Some(path), output_len: None };
        let env = HubEnv { offline: true, ..HubEnv::default() };
        generate_sharegpt(&cfg, &Sampling { num_prompts: 3, ..Sampling::default() }, tok.as_ref(), &env)
    }

    const PROMPT: &str = r#"{"from": "human", "value": "Tell me about the moon please"}"#;
    const REPLY: &str = r#"{"from": "gpt", "value": "It orbits the Earth every month."}"#;

    #[test]
    fn escaped_values_are_decoded_and_later_messages_skipped() {
        let conv = format!(
            r#"[{{"conversations": [{{"value": "Tell me \"why\"\nthe sky\u0020is blue \ud83d\ude00"}}, {REPLY}, {PROMPT}, {REPLY}]}}]"#
        );
        let w = load(&conv).unwrap();
        assert_eq!(w.requests[0].prompt.text(), Some("Tell me \"why\"\nthe sky is blue 😀"));
    }

    #[test]
    fn every_message_is_still_checked() {
        // A later message of the wrong shape is an error naming the record, as when whole
        // conversations were read.
        for bad in [r#"{"value": 7}"#, r#"{"from": "gpt"}"#, r#""text""#, r#"{"value": "\ud800 lone"}"#] {
            let text = format!("[\n{{\"conversations\": [{PROMPT}, {REPLY}]}},\n{{\"conversations\": [{PROMPT}, {REPLY}, {bad}]}}\n]");
            let err = load(&text).unwrap_err();
            assert_eq!(err.code(), ErrorCode::DatasetFile, "{bad}: {err}");
            assert!(err.to_string().contains("record 1 (line 3)"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_lone_surrogate_in_a_prompt_is_an_error_at_load() {
        let text = format!(r#"[{{"conversations": [{{"value": "bad \udc00 here"}}, {REPLY}]}}]"#);
        let err = load(&text).unwrap_err();
        assert_eq!(err.code(), ErrorCode::DatasetFile, "{err}");
        assert!(err.to_string().contains("surrogate"), "{err}");
    }

    /// Pins the error of a ShareGPT file that is one JSON object (`{"conversations": []}`): it
    /// used to say only "no conversation has two or more messages"; docs/datasets.md lists "a
    /// JSON object where an array is expected" as its own error.
    #[test]
    fn a_json_object_where_an_array_is_expected_says_so() {
        for text in [r#"{"conversations": []}"#, "\u{feff}{\"conversations\": [{\"value\": \"one\"}]}\n"] {
            let err = load(text).unwrap_err();
            assert_eq!(err.code(), ErrorCode::DatasetFile, "{err}");
            assert!(err.to_string().contains("a JSON object where an array is expected"), "{err}");
        }
        // JSON Lines whose records have no usable conversation keep their own error.
        let err = load("{\"conversations\": []}\n{\"conversations\": []}\n").unwrap_err();
        assert!(err.to_string().contains("no conversation has two or more messages"), "{err}");
    }

    #[test]
    fn an_empty_array_is_still_an_error() {
        let err = load("[]").unwrap_err();
        assert!(err.to_string().contains("no records"), "{err}");
    }
}

//! Loading a BPE `tokenizer.json` without the `tokenizers` crate's buffering: its model
//! deserializer reads the whole `model` object into an untagged buffer, then into a JSON value,
//! then into the model (and the merges through another untagged buffer), which peaks at about
//! 46 MB of heap for a 3.5 MB file (SmolLM2's 49k vocabulary; docs/performance.md, "Memory of
//! the tokenizer load"). Here the document is read once: the model's vocabulary and merges
//! stream into the vectors the BPE builder takes, and every other section goes through the
//! crate's own deserializers. The tokenizer is then assembled exactly as the crate's
//! `Tokenizer` deserializer does it (builder, then the added tokens added against the model).
//!
//! Anything this path does not read exactly as the crate would (another model type, no `type`,
//! an unknown version, merges of mixed forms, any parse error) comes back as
//! `Outcome::NotMine` with its bytes, and the caller loads the file the crate's way, with the
//! crate's own error messages; a model the builders refuse is `Outcome::Invalid` with the
//! builders' error (the crate's loader fails the same file with it).

use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokenizers::models::bpe::{BpeBuilder, Vocab};
use tokenizers::{
    AddedToken, DecoderWrapper, ModelWrapper, NormalizerWrapper, PaddingParams, PostProcessorWrapper,
    PreTokenizerWrapper, TokenizerBuilder, TruncationParams,
};

/// The top-level sections of a `tokenizer.json`, the model left unparsed.
#[derive(Deserialize)]
struct Document<'a> {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    truncation: Option<TruncationParams>,
    #[serde(default)]
    padding: Option<PaddingParams>,
    #[serde(default)]
    added_tokens: Vec<TokenWithId>,
    #[serde(default)]
    normalizer: Option<NormalizerWrapper>,
    #[serde(default)]
    pre_tokenizer: Option<PreTokenizerWrapper>,
    #[serde(default)]
    post_processor: Option<PostProcessorWrapper>,
    #[serde(default)]
    decoder: Option<DecoderWrapper>,
    #[serde(borrow)]
    model: &'a RawValue,
}

/// An entry of `added_tokens` (the id is checked by the crate only to warn; it is not used).
#[derive(Deserialize)]
struct TokenWithId {
    #[allow(dead_code)]
    id: u32,
    #[serde(flatten)]
    token: AddedToken,
}

/// A `"type": "BPE"` model, with the options the crate's BPE deserializer reads.
#[derive(Deserialize)]
struct BpeModel {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    dropout: Option<f32>,
    #[serde(default)]
    unk_token: Option<String>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
    #[serde(default)]
    end_of_word_suffix: Option<String>,
    #[serde(default)]
    fuse_unk: Option<bool>,
    #[serde(default)]
    byte_fallback: Option<bool>,
    #[serde(default)]
    ignore_merges: Option<bool>,
    vocab: Vocab,
    merges: MergeList,
}

/// A tokenizer this path loaded, with its model's largest token id (taken from the parsed
/// vocabulary: asking the built model for it clones the whole vocabulary).
pub(super) struct Loaded {
    pub(super) tokenizer: tokenizers::Tokenizer,
    pub(super) model_max_id: Option<u32>,
}

/// What [`load`] made of a file.
pub(super) enum Outcome {
    Loaded(Box<Loaded>),
    /// Not a file this path reads: its bytes, given back for the crate's loader.
    NotMine(Vec<u8>),
    /// Parsed, but the model or tokenizer could not be built: the builders' own error (the
    /// crate's loader fails the same file with it).
    Invalid(tokenizers::Error),
}

/// The tokenizer in `bytes` if it is a BPE `tokenizer.json` this path reads exactly as the
/// `tokenizers` crate does. The file's bytes are freed before the model is built (they and
/// the model are the two large parts).
pub(super) fn load(bytes: Vec<u8>) -> Outcome {
    let Some((model, parts)) = parse(&bytes) else { return Outcome::NotMine(bytes) };
    let model_max_id = model.vocab.values().copied().max();
    drop(bytes);
    match assemble(model, parts) {
        Ok(tokenizer) => Outcome::Loaded(Box::new(Loaded { tokenizer, model_max_id })),
        Err(e) => Outcome::Invalid(e),
    }
}

/// Every section but the model, parsed.
struct Sections {
    truncation: Option<TruncationParams>,
    padding: Option<PaddingParams>,
    added: Vec<AddedToken>,
    normalizer: Option<NormalizerWrapper>,
    pre_tokenizer: Option<PreTokenizerWrapper>,
    post_processor: Option<PostProcessorWrapper>,
    decoder: Option<DecoderWrapper>,
}

fn parse(bytes: &[u8]) -> Option<(BpeModel, Sections)> {
    let doc: Document<'_> = serde_json::from_slice(bytes).ok()?;
    if doc.version.as_deref().is_some_and(|v| v != "1.0") {
        return None;
    }
    let model: BpeModel = serde_json::from_str(doc.model.get()).ok()?;
    if model.kind != "BPE" {
        return None;
    }
    let sections = Sections {
        truncation: doc.truncation,
        padding: doc.padding,
        added: doc.added_tokens.into_iter().map(|t| t.token).collect(),
        normalizer: doc.normalizer,
        pre_tokenizer: doc.pre_tokenizer,
        post_processor: doc.post_processor,
        decoder: doc.decoder,
    };
    Some((model, sections))
}

/// The tokenizer as the crate's deserializer assembles it: the builder with every section,
/// then the added tokens added against the model.
fn assemble(model: BpeModel, s: Sections) -> tokenizers::Result<tokenizers::Tokenizer> {
    let bpe = bpe_of(model)?;
    let mut tokenizer = TokenizerBuilder::<
        ModelWrapper,
        NormalizerWrapper,
        PreTokenizerWrapper,
        PostProcessorWrapper,
        DecoderWrapper,
    >::new()
    .with_model(ModelWrapper::BPE(bpe))
    .with_truncation(s.truncation)
    .with_padding(s.padding)
    .with_normalizer(s.normalizer)
    .with_pre_tokenizer(s.pre_tokenizer)
    .with_post_processor(s.post_processor)
    .with_decoder(s.decoder)
    .build()?;
    tokenizer.add_tokens(&s.added);
    Ok(tokenizer.into())
}

fn bpe_of(m: BpeModel) -> tokenizers::Result<tokenizers::models::bpe::BPE> {
    let mut b = BpeBuilder::new();
    if let Some(x) = m.dropout {
        b = b.dropout(x);
    }
    if let Some(x) = m.unk_token {
        b = b.unk_token(x);
    }
    if let Some(x) = m.continuing_subword_prefix {
        b = b.continuing_subword_prefix(x);
    }
    if let Some(x) = m.end_of_word_suffix {
        b = b.end_of_word_suffix(x);
    }
    if let Some(x) = m.fuse_unk {
        b = b.fuse_unk(x);
    }
    if let Some(x) = m.byte_fallback {
        b = b.byte_fallback(x);
    }
    if let Some(x) = m.ignore_merges {
        b = b.ignore_merges(x);
    }
    b.vocab_and_merges(m.vocab, m.merges.0).build()
}

/// `merges`: every element a `[left, right]` pair, or every element a `"left right"` line (the
/// older form; lines starting `#version` skipped, any other line must split on ' ' into two).
struct MergeList(Vec<(String, String)>);

impl<'de> Deserialize<'de> for MergeList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_seq(MergeListVisitor)
    }
}

struct MergeListVisitor;

impl<'de> Visitor<'de> for MergeListVisitor {
    type Value = MergeList;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of merges")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<MergeList, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        let mut legacy: Option<bool> = None;
        while let Some(merge) = seq.next_element::<Merge>()? {
            let is_line = matches!(merge, Merge::Line(_));
            if *legacy.get_or_insert(is_line) != is_line {
                return Err(de::Error::custom("merges of both forms"));
            }
            match merge {
                Merge::Pair(a, b) => out.push((a, b)),
                Merge::Line(line) if line.starts_with("#version") => {}
                Merge::Line(line) => {
                    let mut parts = line.split(' ');
                    match (parts.next(), parts.next(), parts.next()) {
                        (Some(a), Some(b), None) => out.push((a.to_owned(), b.to_owned())),
                        _ => return Err(de::Error::custom("a merge line is not two parts")),
                    }
                }
            }
        }
        Ok(MergeList(out))
    }
}

/// One merge, in either form.
enum Merge {
    Pair(String, String),
    Line(String),
}

impl<'de> Deserialize<'de> for Merge {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(MergeVisitor)
    }
}

struct MergeVisitor;

impl<'de> Visitor<'de> for MergeVisitor {
    type Value = Merge;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a [left, right] pair or a \"left right\" line")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Merge, E> {
        Ok(Merge::Line(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Merge, E> {
        Ok(Merge::Line(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Merge, A::Error> {
        let a: String = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let b: String = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(1, &self))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(3, &self));
        }
        Ok(Merge::Pair(a, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_testkit::fixtures::smollm2_tokenizer;
    use tokenizers::Model as _;

    fn crate_way(bytes: &[u8]) -> tokenizers::Tokenizer {
        tokenizers::Tokenizer::from_bytes(bytes).unwrap()
    }

    fn fast(bytes: &[u8]) -> Option<tokenizers::Tokenizer> {
        match load(bytes.to_vec()) {
            Outcome::Loaded(l) => Some(l.tokenizer),
            _ => None,
        }
    }

    fn same(bytes: &[u8]) {
        let fast = fast(bytes).expect("the BPE path reads it");
        let slow = crate_way(bytes);
        assert_eq!(fast.to_string(false).unwrap(), slow.to_string(false).unwrap());
        for text in
            ["Hello, world!", "  spaces\tand\nlines ", "日本語のテキスト", "<|endoftext|>x<|im_start|>", ""]
        {
            for special in [false, true] {
                let (f, s) =
                    (fast.encode_fast(text, special).unwrap(), slow.encode_fast(text, special).unwrap());
                assert_eq!(f.get_ids(), s.get_ids(), "{text:?}");
            }
        }
        let ids: Vec<u32> = (0..2000).step_by(7).collect();
        assert_eq!(fast.decode(&ids, false).unwrap(), slow.decode(&ids, false).unwrap());
    }

    fn fixture() -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(smollm2_tokenizer()).unwrap()).unwrap()
    }

    #[test]
    fn a_real_bpe_file_loads_to_the_same_tokenizer_as_the_crates_loader() {
        let bytes = std::fs::read(smollm2_tokenizer()).unwrap();
        same(&bytes);
        let Outcome::Loaded(loaded) = load(bytes) else { panic!("not loaded") };
        let by_clone = loaded.tokenizer.get_model().get_vocab().into_values().max();
        assert_eq!(loaded.model_max_id, by_clone);
    }

    #[test]
    fn merges_as_lines_and_every_bpe_option_load_as_the_crate_loads_them() {
        let mut doc = fixture();
        let m = &mut doc["model"];
        let lines: Vec<serde_json::Value> = m["merges"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| format!("{} {}", p[0].as_str().unwrap(), p[1].as_str().unwrap()).into())
            .collect();
        m["merges"] = std::iter::once("#version: 0.2".into()).chain(lines).collect();
        m["unk_token"] = "<|endoftext|>".into();
        m["dropout"] = serde_json::Value::Null;
        m["fuse_unk"] = true.into();
        m["byte_fallback"] = true.into();
        m["ignore_merges"] = true.into();
        m["end_of_word_suffix"] = serde_json::Value::Null;
        doc["truncation"] = serde_json::json!({"max_length": 8, "stride": 0, "strategy": "LongestFirst", "direction": "Right"});
        same(&serde_json::to_vec(&doc).unwrap());
    }

    #[test]
    fn anything_else_is_left_to_the_crate() {
        let mut doc = fixture();
        doc["version"] = "2.0".into();
        assert!(fast(&serde_json::to_vec(&doc).unwrap()).is_none());
        let mut doc = fixture();
        doc["model"].as_object_mut().unwrap().remove("type");
        assert!(fast(&serde_json::to_vec(&doc).unwrap()).is_none(), "untyped (legacy) models");
        let mut doc = fixture();
        doc["model"]["merges"].as_array_mut().unwrap().push("a b".into());
        assert!(fast(&serde_json::to_vec(&doc).unwrap()).is_none(), "mixed merge forms");
        let word_level = br#"{"version":"1.0","added_tokens":[],"model":{"type":"WordLevel","vocab":{"a":0,"[UNK]":1},"unk_token":"[UNK]"}}"#;
        assert!(fast(word_level).is_none());
        assert!(crate_way(word_level).get_vocab_size(true) == 2);
        assert!(fast(b"{not json").is_none());
        // A refused file comes back whole, for the crate's loader.
        assert!(matches!(load(word_level.to_vec()), Outcome::NotMine(b) if b == word_level));
        // A merge of a token the vocabulary lacks: the builder's error, as the crate gives it.
        let mut doc = fixture();
        doc["model"]["merges"].as_array_mut().unwrap().push(serde_json::json!(["nope", "zz"]));
        let bytes = serde_json::to_vec(&doc).unwrap();
        let Outcome::Invalid(e) = load(bytes.clone()) else { panic!("not refused") };
        let crate_err = tokenizers::Tokenizer::from_bytes(&bytes).err().unwrap();
        assert!(crate_err.to_string().contains(&e.to_string()), "{crate_err} / {e}");
    }
}

//! Which dataset to build, and building it.

use super::burstgpt::{generate_burstgpt, BurstGptConfig};
use super::custom::{generate_custom, CustomConfig};
use super::custom_audio::{generate_custom_audio, CustomAudioConfig};
use super::custom_image::{generate_custom_image, CustomImageConfig};
use super::hf::{generate_hf, HfConfig};
use super::prefix_repetition::{generate_prefix_repetition, PrefixRepetitionConfig};
use super::random_mm::{generate_random_mm, RandomMmConfig};
use super::random_rerank::{generate_random_rerank, RandomRerankConfig};
use super::sharegpt::{generate_sharegpt, ShareGptConfig};
use super::sonnet::{generate_sonnet, SonnetConfig};
use super::spec_bench::{generate_spec_bench, SpecBenchConfig};
use super::speed_bench::{generate_speed_bench, SpeedBenchConfig};
use super::Sampling;
use crate::tokenizer::HubEnv;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};

/// A dataset other than `random`, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetKind {
    ShareGpt(ShareGptConfig),
    Sonnet(SonnetConfig),
    Custom(CustomConfig),
    PrefixRepetition(PrefixRepetitionConfig),
    RandomMm(RandomMmConfig),
    RandomRerank(RandomRerankConfig),
    SpeedBench(SpeedBenchConfig),
    Hf(HfConfig),
    CustomImage(CustomImageConfig),
    CustomAudio(CustomAudioConfig),
    SpecBench(SpecBenchConfig),
    BurstGpt(BurstGptConfig),
}

impl DatasetKind {
    /// The `--dataset-name` of this dataset.
    pub fn name(&self) -> &'static str {
        match self {
            DatasetKind::ShareGpt(_) => "sharegpt",
            DatasetKind::Sonnet(_) => "sonnet",
            DatasetKind::Custom(_) => "custom",
            DatasetKind::PrefixRepetition(_) => "prefix_repetition",
            DatasetKind::RandomMm(_) => "random-mm",
            DatasetKind::RandomRerank(_) => "random-rerank",
            DatasetKind::SpeedBench(_) => "speed-bench",
            DatasetKind::Hf(_) => "hf",
            DatasetKind::CustomImage(_) => "custom_image",
            DatasetKind::CustomAudio(_) => "custom_audio",
            DatasetKind::SpecBench(_) => "spec_bench",
            DatasetKind::BurstGpt(_) => "burstgpt",
        }
    }

    /// Whether `--enable-multimodal-chat` applies (the datasets vLLM applies it to: random-mm,
    /// custom_image, custom_audio, sharegpt, hf).
    pub fn takes_multimodal_chat(&self) -> bool {
        matches!(
            self,
            DatasetKind::RandomMm(_)
                | DatasetKind::CustomImage(_)
                | DatasetKind::CustomAudio(_)
                | DatasetKind::ShareGpt(_)
                | DatasetKind::Hf(_)
        )
    }
}

/// A dataset and how to sample it.
#[derive(Debug, Clone, PartialEq)]
pub struct DatasetRequest {
    pub kind: DatasetKind,
    pub sampling: Sampling,
    /// `--enable-multimodal-chat`: build each request's whole chat `messages` now
    /// ([`super::to_chat_messages`]). Only the datasets of [`DatasetKind::takes_multimodal_chat`].
    pub multimodal_chat: bool,
}

impl DatasetRequest {
    /// `kind` sampled by `sampling`, prompts sent as they are.
    pub fn new(kind: DatasetKind, sampling: Sampling) -> Self {
        DatasetRequest { kind, sampling, multimodal_chat: false }
    }
}

/// Builds the workload (blocking: file I/O, possibly a download, tokenizing on rayon).
pub fn build_dataset(req: &DatasetRequest, tok: &dyn TextTokenizer, env: &HubEnv) -> Result<Workload> {
    let s = &req.sampling;
    let mut workload = match &req.kind {
        DatasetKind::ShareGpt(c) => generate_sharegpt(c, s, tok, env),
        DatasetKind::Sonnet(c) => generate_sonnet(c, s, tok),
        DatasetKind::Custom(c) => generate_custom(c, s, tok),
        DatasetKind::PrefixRepetition(c) => generate_prefix_repetition(c, s, tok),
        DatasetKind::RandomMm(c) => generate_random_mm(c, tok),
        DatasetKind::RandomRerank(c) => generate_random_rerank(c, tok),
        DatasetKind::SpeedBench(c) => generate_speed_bench(c, s, tok, env),
        DatasetKind::Hf(c) => generate_hf(c, s, tok, env),
        DatasetKind::CustomImage(c) => generate_custom_image(c, s, tok),
        DatasetKind::CustomAudio(c) => generate_custom_audio(c, s, tok),
        DatasetKind::SpecBench(c) => generate_spec_bench(c, s, tok),
        DatasetKind::BurstGpt(c) => generate_burstgpt(c, s, tok),
    }?;
    // A source with no valid entry would otherwise reach the runner as an empty workload and be
    // reported as a --max-model-len problem (found by fuzzing).
    if workload.is_empty() && s.num_prompts > 0 {
        return Err(BenchError::Dataset {
            detail: format!(
                "the {} dataset gave no request: no entry of its source is valid (empty, or every \
                 entry too short or too long for the dataset's length filters); fix: pass a source \
                 with valid entries, or a fixed output length (--output-len) when replies are short",
                req.kind.name()
            ),
            source: None,
        });
    }
    if req.multimodal_chat {
        super::to_chat_messages(&mut workload)?;
    }
    Ok(workload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::Sampling;

    #[test]
    fn dataset_without_a_valid_entry_is_an_error_not_an_empty_workload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.json");
        // The fuzzer's input: one conversation whose reply is 3 tokens (sharegpt needs 4).
        let text = r#"[{"conversations":[{"from":"human","value":"Tell me a story about a cat please"},{"from":"gpt","value":"Once uponp"}]}]"#;
        std::fs::write(&path, text).unwrap();
        let req = DatasetRequest::new(
            DatasetKind::ShareGpt(ShareGptConfig { path: Some(path.clone()), output_len: None }),
            Sampling { num_prompts: 2, ..Sampling::default() },
        );
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let env = HubEnv { offline: true, ..HubEnv::default() };
        let err = build_dataset(&req, tok.as_ref(), &env).unwrap_err();
        assert!(matches!(err, BenchError::Dataset { .. }), "{err:?}");
        assert!(err.to_string().contains("sharegpt dataset gave no request"), "{err}");
        // With a fixed output length the same entry is valid and oversampled to 2 requests.
        let req = DatasetRequest {
            kind: DatasetKind::ShareGpt(ShareGptConfig { path: Some(path), output_len: Some(8) }),
            ..req
        };
        assert_eq!(build_dataset(&req, tok.as_ref(), &env).unwrap().len(), 2);
    }
}

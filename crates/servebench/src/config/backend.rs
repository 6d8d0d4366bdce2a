//! Checks specific to the backend families (docs/backends.md), run before any network traffic:
//! pooling backends take no sampling flags (SB112); token-id prompts and multimodal datasets
//! need a backend whose body can carry them (SB111, SB110); `--random-batch-size` > 1 batches
//! the random dataset for pooling backends only.

use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;

/// The sampling and generation flags that were given, by name.
fn sampling_flags_given(args: &RunArgs) -> Vec<&'static str> {
    let mut out = Vec::new();
    let given = [
        ("--temperature", args.temperature.is_some()),
        ("--top-p", args.top_p.is_some()),
        ("--top-k", args.top_k.is_some()),
        ("--min-p", args.min_p.is_some()),
        ("--frequency-penalty", args.frequency_penalty.is_some()),
        ("--presence-penalty", args.presence_penalty.is_some()),
        ("--repetition-penalty", args.repetition_penalty.is_some()),
        ("--logprobs", args.logprobs.is_some()),
        ("--ignore-eos", args.ignore_eos),
    ];
    for (name, set) in given {
        if set {
            out.push(name);
        }
    }
    out
}

/// Validates the flags that depend on the backend family.
pub fn check_backend_flags(args: &RunArgs, backend: BackendKind) -> Result<()> {
    if backend.is_pooling() {
        let flags = sampling_flags_given(args);
        if !flags.is_empty() {
            return Err(BenchError::PoolingSampling {
                backend: backend.to_string(),
                flags: flags.join(", "),
            });
        }
    }
    let openai_family = matches!(backend, BackendKind::Completions | BackendKind::Chat | BackendKind::Audio)
        || backend.is_pooling()
        || backend == BackendKind::Responses;
    check_audio(args, backend)?;
    if args.prompt_token_ids && openai_family && !backend.takes_token_ids() {
        return Err(BenchError::ContentTypeUnsupported {
            backend: backend.to_string(),
            content: "token-id prompts (--prompt-token-ids)".into(),
            fix: "drop --prompt-token-ids, or use --backend openai, vllm, openai-embeddings or vllm-pooling"
                .into(),
        });
    }
    let multimodal = matches!(args.dataset_name.kind, DatasetName::RandomMm | DatasetName::CustomImage);
    if multimodal && openai_family && !backend.takes_multimodal() {
        return Err(BenchError::MultimodalUnsupported {
            backend: backend.to_string(),
            detail: format!(" (dataset {})", args.dataset_name),
        });
    }
    let batch = args.dataset.random_batch_size;
    if batch > 1 && args.dataset_name.kind == DatasetName::Random {
        if !backend.is_pooling() {
            return Err(BenchError::config(
                "--random-batch-size",
                format!("batches of {batch} prompts need a pooling backend (got {backend})"),
                "use --backend openai-embeddings, vllm-pooling or vllm-rerank, or drop --random-batch-size",
            ));
        }
        if args.prompt_token_ids {
            return Err(BenchError::ContentTypeUnsupported {
                backend: backend.to_string(),
                content: "batched token-id prompts (--random-batch-size with --prompt-token-ids)".into(),
                fix: "drop --prompt-token-ids or use --random-batch-size 1".into(),
            });
        }
        if backend.is_pooling() && backend.takes_messages() {
            return Err(BenchError::ContentTypeUnsupported {
                backend: backend.to_string(),
                content: "batched prompts (one chat conversation per request)".into(),
                fix: "use --backend openai-embeddings for batched inputs, or --random-batch-size 1".into(),
            });
        }
    }
    Ok(())
}

/// The datasets whose requests carry audio (`custom_audio`; `hf` with an ASR set).
fn audio_dataset(name: DatasetName) -> bool {
    matches!(name, DatasetName::CustomAudio | DatasetName::Hf)
}

/// `openai-audio` uploads each request's audio: a dataset without audio has nothing to send
/// (SB111); `custom_audio` needs a backend that sends audio (SB110).
fn check_audio(args: &RunArgs, backend: BackendKind) -> Result<()> {
    let name = &args.dataset_name;
    if backend == BackendKind::Audio && !audio_dataset(name.kind) {
        return Err(BenchError::ContentTypeUnsupported {
            backend: backend.to_string(),
            content: format!("requests without audio (--dataset-name {name})"),
            fix: "use --dataset-name custom_audio (a JSONL of prompts and WAV files)".into(),
        });
    }
    if name.kind == DatasetName::CustomAudio && !matches!(backend, BackendKind::Audio | BackendKind::Chat) {
        return Err(BenchError::MultimodalUnsupported {
            backend: backend.to_string(),
            detail: " (custom_audio sends audio: use --backend openai-audio or openai-chat)".into(),
        });
    }
    Ok(())
}

/// Prompts per request for the random dataset (`--random-batch-size`, pooling backends only;
/// random-rerank batches inside the dataset).
pub fn batch_size(args: &RunArgs, backend: BackendKind) -> usize {
    if backend.is_pooling() && args.dataset_name.kind == DatasetName::Random {
        args.dataset.random_batch_size.max(1) as usize
    } else {
        1
    }
}

/// `--percentile-metrics` default: vLLM reports only `e2el` for pooling backends.
pub fn default_percentile_metrics(backend: BackendKind) -> &'static str {
    if backend.is_pooling() {
        "e2el"
    } else {
        "ttft,tpot,itl"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn args(extra: &[&str]) -> RunArgs {
        let mut v = vec!["servebench"];
        v.extend_from_slice(extra);
        crate::cli::Cli::try_parse_from(v).map(|c| c.run).unwrap_or_else(|e| panic!("{e}"))
    }

    fn code(extra: &[&str], backend: &str) -> Option<&'static str> {
        let b: BackendKind = backend.parse().unwrap();
        check_backend_flags(&args(extra), b).err().map(|e| e.code().as_str())
    }

    #[test]
    fn pooling_backends_refuse_sampling_flags() {
        assert_eq!(code(&["--temperature", "0.5"], "openai-embeddings"), Some("SB112"));
        assert_eq!(code(&["--ignore-eos"], "vllm-rerank"), Some("SB112"));
        assert_eq!(code(&["--logprobs", "1"], "vllm-pooling"), Some("SB112"));
        assert_eq!(code(&["--temperature", "0.5"], "openai-responses"), None);
        assert_eq!(code(&[], "openai-embeddings-chat"), None);
    }

    #[test]
    fn content_types_and_multimodal() {
        assert_eq!(code(&["--prompt-token-ids"], "openai-responses"), Some("SB111"));
        assert_eq!(code(&["--prompt-token-ids"], "vllm-rerank"), Some("SB111"));
        assert_eq!(code(&["--prompt-token-ids"], "openai-embeddings"), None);
        assert_eq!(code(&["--dataset-name", "random-mm"], "openai-embeddings"), Some("SB110"));
        assert_eq!(code(&["--dataset-name", "random-mm"], "openai"), Some("SB110"));
        assert_eq!(code(&["--dataset-name", "random-mm"], "openai-embeddings-chat"), None);
        for b in ["openai-embeddings-clip", "openai-embeddings-vlm2vec", "infinity-embeddings-clip"] {
            assert_eq!(code(&["--dataset-name", "random-mm"], b), None, "{b}");
        }
        assert_eq!(code(&["--dataset-name", "random-mm"], "infinity-embeddings"), Some("SB110"));
        assert_eq!(code(&["--prompt-token-ids"], "infinity-embeddings"), Some("SB111"));
        assert_eq!(code(&["--temperature", "0.5"], "infinity-embeddings-clip"), Some("SB112"));
    }

    #[test]
    fn openai_audio_needs_a_dataset_with_audio() {
        assert_eq!(code(&[], "openai-audio"), Some("SB111"));
        assert_eq!(code(&["--dataset-name", "custom_audio"], "openai-audio"), None);
        assert_eq!(code(&["--dataset-name", "custom_audio"], "openai-chat"), None);
        assert_eq!(code(&["--dataset-name", "custom_audio"], "openai"), Some("SB110"));
        assert_eq!(code(&["--dataset-name", "random-mm"], "openai-audio"), Some("SB111"));
    }

    #[test]
    fn batch_size_is_for_pooling_only() {
        assert_eq!(code(&["--random-batch-size", "4"], "openai-chat"), Some("SB101"));
        assert_eq!(
            code(&["--random-batch-size", "4", "--prompt-token-ids"], "openai-embeddings"),
            Some("SB111")
        );
        assert_eq!(code(&["--random-batch-size", "4"], "openai-embeddings"), None);
        let b = BackendKind::Embeddings;
        assert_eq!(batch_size(&args(&["--random-batch-size", "4"]), b), 4);
        assert_eq!(batch_size(&args(&["--random-batch-size", "4"]), BackendKind::Chat), 1);
        assert_eq!(default_percentile_metrics(b), "e2el");
    }
}

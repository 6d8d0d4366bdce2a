//! The dataset flags validated into a `DatasetRequest` (the flags: `crate::cli::dataset`).

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};
use servebench_data::dataset::burstgpt::BurstGptConfig;
use servebench_data::dataset::custom::CustomConfig;
use servebench_data::dataset::custom_audio::CustomAudioConfig;
use servebench_data::dataset::custom_image::CustomImageConfig;
use servebench_data::dataset::hf::{HfConfig, HfSource};
use servebench_data::dataset::prefix_repetition::PrefixRepetitionConfig;
use servebench_data::dataset::random_mm::{self, RandomMmConfig};
use servebench_data::dataset::random_rerank::RandomRerankConfig;
use servebench_data::dataset::sharegpt::ShareGptConfig;
use servebench_data::dataset::sonnet::SonnetConfig;
use servebench_data::dataset::spec_bench::SpecBenchConfig;
use servebench_data::dataset::speed_bench::SpeedBenchConfig;
use servebench_data::dataset::{DatasetKind, DatasetRequest, Sampling};
use servebench_data::random::RandomDatasetConfig;
use std::path::PathBuf;

/// The datasets `--enable-multimodal-chat` applies to (as in vLLM).
const MULTIMODAL_CHAT_DATASETS: &[DatasetName] = &[
    DatasetName::RandomMm,
    DatasetName::CustomImage,
    DatasetName::CustomAudio,
    DatasetName::Sharegpt,
    DatasetName::Hf,
];

fn positive(flag: &str, v: u32) -> Result<usize> {
    if v == 0 {
        return Err(BenchError::config(flag, "must be at least 1", "pass a positive number"));
    }
    Ok(v as usize)
}

/// The flag a length came from: `--input-len`/`--output-len` override the random dataset's own
/// flags, so an error names the one the user gave.
pub(crate) fn length_flag(overridden: bool, general: &'static str, random: &'static str) -> &'static str {
    if overridden {
        general
    } else {
        random
    }
}

/// An optional per-dataset output length (`--sharegpt-output-len`, `--hf-output-len`): at least 1
/// when given (0 made every request fail with `max_tokens` 0).
fn optional_positive(flag: &str, v: Option<u32>) -> Result<Option<usize>> {
    v.map(|v| positive(flag, v)).transpose()
}

fn required_path(args: &RunArgs, what: &str) -> Result<PathBuf> {
    args.dataset.dataset_path.clone().ok_or_else(|| {
        BenchError::config(
            "--dataset-path",
            format!("the {} dataset needs a file", args.dataset_name),
            format!("pass --dataset-path {what}"),
        )
    })
}

/// The dataset request for a `--dataset-name` other than `random` (None for `random`).
/// `backend_takes_images` gates random-mm (images travel only in chat-style content).
pub fn dataset_request(args: &RunArgs, backend_takes_images: bool) -> Result<Option<DatasetRequest>> {
    let d = &args.dataset;
    let sampling = Sampling {
        num_prompts: args.num_prompts as usize,
        seed: args.seed,
        shuffle: !args.disable_shuffle,
        oversample: !d.no_oversample,
    };
    let Some(kind) = dataset_kind(args, backend_takes_images)? else { return Ok(None) };
    Ok(Some(DatasetRequest { kind, sampling, multimodal_chat: d.enable_multimodal_chat }))
}

/// The dataset `--dataset-name` names, with its flags (None for `random` and the trace).
fn dataset_kind(args: &RunArgs, backend_takes_images: bool) -> Result<Option<DatasetKind>> {
    let d = &args.dataset;
    let output_override = args.output_len.map(|o| o as usize);
    Ok(Some(match args.dataset_name.kind {
        DatasetName::Random | DatasetName::TimedTrace | DatasetName::Agentic => return Ok(None),
        DatasetName::Sharegpt => DatasetKind::ShareGpt(ShareGptConfig {
            path: d.dataset_path.clone(),
            output_len: optional_positive("--sharegpt-output-len", d.sharegpt_output_len)?
                .or(output_override),
        }),
        DatasetName::Sonnet => DatasetKind::Sonnet(sonnet_config(args)?),
        DatasetName::Custom => DatasetKind::Custom(CustomConfig {
            path: required_path(args, "/path/to/prompts.jsonl")?,
            output_len: custom_output_len(output_override, d.custom_output_len)?,
            template: prompt_template(args, !super::vllm_flags::skips_chat_template(args), true),
        }),
        DatasetName::CustomImage => {
            DatasetKind::CustomImage(custom_image_config(args, backend_takes_images)?)
        }
        DatasetName::CustomAudio => DatasetKind::CustomAudio(CustomAudioConfig {
            path: required_path(args, "/path/to/audio.jsonl")?,
            output_len: custom_output_len(output_override, d.custom_output_len)?,
            chat_part: args.backend.kind == BackendKind::Chat,
        }),
        DatasetName::PrefixRepetition => DatasetKind::PrefixRepetition(prefix_repetition_config(args)?),
        DatasetName::RandomMm => DatasetKind::RandomMm(random_mm_config(args, backend_takes_images)?),
        DatasetName::RandomRerank => DatasetKind::RandomRerank(random_rerank_config(args)?),
        DatasetName::SpeedBench => DatasetKind::SpeedBench(speed_bench_config(args)?),
        DatasetName::Burstgpt => {
            DatasetKind::BurstGpt(BurstGptConfig { path: required_path(args, "/path/to/BurstGPT.csv")? })
        }
        DatasetName::SpecBench => DatasetKind::SpecBench(SpecBenchConfig {
            path: required_path(args, "/path/to/question.jsonl (Spec-Bench)")?,
            category: d.spec_bench_category.clone(),
            output_len: output_override
                .unwrap_or(positive("--spec-bench-output-len", d.spec_bench_output_len)?),
            // vLLM's get_samples passes neither --skip-chat-template nor the kwargs here.
            template: prompt_template(args, true, false),
        }),
        DatasetName::Hf => DatasetKind::Hf(hf_config(args, output_override)?),
    }))
}

fn sonnet_config(args: &RunArgs) -> Result<SonnetConfig> {
    let d = &args.dataset;
    Ok(SonnetConfig {
        path: d.dataset_path.clone(),
        input_len: positive("--sonnet-input-len", d.sonnet_input_len)?,
        output_len: positive("--sonnet-output-len", d.sonnet_output_len)?,
        prefix_len: d.sonnet_prefix_len as usize,
        // As vLLM: lengths count the prompt rendered with the chat template; openai-chat sends
        // the bare prompt as the user turn. --skip-chat-template: the bare prompt throughout.
        template: servebench_data::dataset::chat_render::PromptTemplate {
            render: !d.skip_chat_template,
            kwargs: None,
            chat_messages: args.backend.kind == BackendKind::Chat,
        },
    })
}

fn custom_image_config(args: &RunArgs, backend_takes_images: bool) -> Result<CustomImageConfig> {
    if !backend_takes_images {
        return Err(BenchError::MultimodalUnsupported {
            backend: args.backend.name.clone(),
            detail: " (custom_image sends images as chat content parts; use --backend openai-chat or openai-embeddings-chat)".into(),
        });
    }
    let d = &args.dataset;
    Ok(CustomImageConfig {
        path: required_path(args, "/path/to/images.jsonl")?,
        output_len: custom_output_len(args.output_len.map(|o| o as usize), d.custom_output_len)?,
        ensure_client_side_data: d.custom_ensure_client_side_data,
    })
}

fn prefix_repetition_config(args: &RunArgs) -> Result<PrefixRepetitionConfig> {
    let d = &args.dataset;
    Ok(PrefixRepetitionConfig {
        prefix_len: d.prefix_repetition_prefix_len as usize,
        suffix_len: d.prefix_repetition_suffix_len as usize,
        num_prefixes: positive("--prefix-repetition-num-prefixes", d.prefix_repetition_num_prefixes)?,
        output_len: args
            .output_len
            .map(|o| o as usize)
            .unwrap_or(positive("--prefix-repetition-output-len", d.prefix_repetition_output_len)?),
    })
}

fn random_rerank_config(args: &RunArgs) -> Result<RandomRerankConfig> {
    let d = &args.dataset;
    Ok(RandomRerankConfig {
        num_prompts: args.num_prompts as usize,
        input_len: positive("--random-input-len", args.input_len.unwrap_or(args.random_input_len))?,
        range_ratio: args.random_range_ratio.input,
        batch_size: positive("--random-batch-size", d.random_batch_size)?,
        no_reranker: d.no_reranker,
        seed: args.seed,
    })
}

fn speed_bench_config(args: &RunArgs) -> Result<SpeedBenchConfig> {
    let d = &args.dataset;
    Ok(SpeedBenchConfig {
        path: d.dataset_path.clone(),
        subset: d.speed_bench_dataset_subset.0.to_owned(),
        category: d.speed_bench_category.clone(),
        output_len: args
            .output_len
            .map(|o| o as usize)
            .unwrap_or(positive("--speed-bench-output-len", d.speed_bench_output_len)?),
        max_input_len: d
            .speed_bench_max_input_len
            .map(|n| positive("--speed-bench-max-input-len", n))
            .transpose()?,
        template: prompt_template(args, !super::vllm_flags::skips_chat_template(args), true),
    })
}

/// `--custom-output-len` (custom, custom_image): fixed, or None for -1 (each line's own).
fn custom_output_len(output_override: Option<usize>, flag: i64) -> Result<Option<usize>> {
    match (output_override, flag) {
        (Some(o), _) => Ok(Some(o)),
        (None, -1) => Ok(None),
        (None, n) if n > 0 && n <= i64::from(u32::MAX) => Ok(Some(n as usize)),
        (None, n) if n > 0 => Err(BenchError::config(
            "--custom-output-len",
            format!("{n} is above the largest output length ({})", u32::MAX),
            format!("pass a length of at most {}", u32::MAX),
        )),
        (None, n) => Err(BenchError::config(
            "--custom-output-len",
            format!("{n} is not a length"),
            "pass a positive length, or -1 for each line's output_tokens",
        )),
    }
}

/// `--enable-multimodal-chat` and `--custom-ensure-client-side-data` apply to some datasets and
/// backends only; elsewhere they are refused rather than silently ignored.
pub fn check_chat_media_flags(args: &RunArgs, backend: BackendKind) -> Result<()> {
    let d = &args.dataset;
    let name = &args.dataset_name;
    let special = if args.workload.multi_turn {
        Some("multi-turn conversations")
    } else if args.is_trace() {
        Some("trace replay")
    } else {
        None
    };
    if d.enable_multimodal_chat {
        if let Some(what) =
            special.or((!MULTIMODAL_CHAT_DATASETS.contains(&name.kind)).then_some("this dataset"))
        {
            return Err(BenchError::config(
                "--enable-multimodal-chat",
                format!("{what} (--dataset-name {name}) has no multimodal chat form"),
                "use it with random-mm, custom_image, custom_audio, sharegpt or hf, or drop it",
            ));
        }
        if !backend.takes_messages() {
            return Err(BenchError::config(
                "--enable-multimodal-chat",
                format!("it builds chat messages, and --backend {backend} sends no chat messages"),
                "use --backend openai-chat (or openai-embeddings-chat), or drop --enable-multimodal-chat",
            ));
        }
    }
    if d.custom_ensure_client_side_data && (special.is_some() || name.kind != DatasetName::CustomImage) {
        return Err(BenchError::config(
            "--custom-ensure-client-side-data",
            format!("it loads the images of the custom_image dataset, and --dataset-name is {name}"),
            "use it with --dataset-name custom_image, or drop it",
        ));
    }
    Ok(())
}

/// How a prompt dataset renders its prompts with the chat template: `render` as vLLM decides
/// for the dataset, `--chat-template-kwargs` when vLLM passes them (`with_kwargs`).
fn prompt_template(
    args: &RunArgs,
    render: bool,
    with_kwargs: bool,
) -> servebench_data::dataset::chat_render::PromptTemplate {
    let kwargs = if render && with_kwargs { super::vllm_flags::chat_template_kwargs_map(args) } else { None };
    servebench_data::dataset::chat_render::PromptTemplate {
        render,
        kwargs,
        chat_messages: render && args.backend.kind == BackendKind::Chat,
    }
}

/// The ids vLLM picks an hf parser by: `--dataset-path`, then `--hf-name`.
pub fn hf_dataset_ids(args: &RunArgs) -> Vec<String> {
    let d = &args.dataset;
    let path = d.dataset_path.as_ref().map(|p| p.to_string_lossy().into_owned());
    path.into_iter().chain(d.hf_name.clone()).collect()
}

fn hf_config(args: &RunArgs, output_override: Option<usize>) -> Result<HfConfig> {
    let d = &args.dataset;
    let path = d.dataset_path.clone().or_else(|| d.hf_name.as_ref().map(PathBuf::from)).ok_or_else(|| {
        BenchError::config(
            "--dataset-path",
            "the hf dataset needs a local file or a Hub dataset id",
            "pass --dataset-path /path/to/data.{json,jsonl,parquet} or --dataset-path org/name",
        )
    })?;
    let local = path;
    let path = local.to_string_lossy().into_owned();
    let source = if local.exists() {
        if let Some(flag) = [("--hf-subset", &d.hf_subset), ("--hf-split", &d.hf_split)]
            .iter()
            .find_map(|(f, v)| v.as_ref().map(|_| *f))
        {
            return Err(BenchError::config(
                flag,
                "applies to Hub datasets, and --dataset-path is a local file (one split)",
                format!("drop {flag}, or pass the Hub dataset id as --dataset-path"),
            ));
        }
        HfSource::File(local)
    } else if servebench_data::tokenizer::hub::looks_like_model_id(&path) {
        HfSource::Hub {
            dataset: path,
            subset: d.hf_subset.clone(),
            split: d.hf_split.clone(),
            whole_split: d.no_stream,
        }
    } else {
        return Err(BenchError::config(
            "--dataset-path",
            format!("'{path}' is neither an existing file nor a Hub dataset id (org/name)"),
            "check the path",
        ));
    };
    Ok(HfConfig {
        source,
        text_column: d.hf_text_column.clone(),
        output_len: optional_positive("--hf-output-len", d.hf_output_len)?.or(output_override),
        dataset_ids: hf_dataset_ids(args),
        chat: servebench_data::dataset::hf_chat::ChatParserOptions {
            skip_chat_template: super::vllm_flags::skips_chat_template(args),
            blazedit_distance: (args.hf_parsers.blazedit_min_distance, args.hf_parsers.blazedit_max_distance),
            chat_messages: args.backend.kind == BackendKind::Chat,
        },
        bfcl_categories: args.hf_parsers.bfcl_categories.clone().map(|c| c.0).unwrap_or_default(),
        asr: servebench_data::dataset::hf_asr::AsrOptions {
            len_sec: (args.hf_parsers.asr_min_audio_len_sec, args.hf_parsers.asr_max_audio_len_sec),
            tokenizer_name: args.tokenizer.clone().or_else(|| args.model.clone()).unwrap_or_default(),
        },
    })
}

fn random_mm_config(args: &RunArgs, backend_takes_images: bool) -> Result<RandomMmConfig> {
    let d = &args.dataset;
    if !backend_takes_images {
        return Err(BenchError::MultimodalUnsupported {
            backend: args.backend.name.clone(),
            detail: "random-mm sends images as chat content parts; use --backend openai-chat (or openai-embeddings-chat)".into(),
        });
    }
    let buckets = d.random_mm_bucket_config.0.clone();
    random_mm::check_buckets(&buckets)?;
    let limits = d.random_mm_limit_mm_per_prompt;
    let r = d.random_mm_num_mm_items_range_ratio;
    if !(0.0..=1.0).contains(&r) {
        return Err(BenchError::config(
            "--random-mm-num-mm-items-range-ratio",
            format!("{r} is outside [0, 1]"),
            "pass a ratio in [0, 1]",
        ));
    }
    let ratio = args.random_range_ratio;
    Ok(RandomMmConfig {
        text: RandomDatasetConfig {
            num_prompts: args.num_prompts as usize,
            input_len: positive(
                length_flag(args.input_len.is_some(), "--input-len", "--random-input-len"),
                args.input_len.unwrap_or(args.random_input_len),
            )?,
            output_len: positive(
                length_flag(args.output_len.is_some(), "--output-len", "--random-output-len"),
                args.output_len.unwrap_or(args.random_output_len),
            )?,
            prefix_len: args.random_prefix_len as usize,
            range_ratio_input: ratio.input,
            range_ratio_output: ratio.output,
            prompt_token_ids: false,
            seed: args.seed,
            ..RandomDatasetConfig::default()
        },
        base_items: d.random_mm_base_items_per_request as usize,
        items_range_ratio: r,
        limit_image: limits.image,
        limit_video: limits.video,
        buckets,
    })
}

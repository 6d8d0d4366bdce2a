//! The checks of vLLM's dataset-specific parser flags (the flags: `crate::cli::hf_parser_flags`).

use crate::cli::values::DatasetName;
use crate::cli::RunArgs;
use servebench_client::backend::BackendKind;
use servebench_core::{BenchError, Result};

/// Whether this run reads a Blazedit dataset (vLLM picks the parser by --dataset-path or --hf-name).
fn is_blazedit(args: &RunArgs) -> bool {
    args.dataset_name.kind == DatasetName::Hf
        && super::dataset::hf_dataset_ids(args).iter().any(|id| {
            servebench_data::dataset::hf_parsers::parser_for(id)
                == Some(servebench_data::dataset::hf_parsers::HfParser::Blazedit)
        })
}

/// The hf parser this run reads with (by --dataset-path or --hf-name), if any.
fn hf_parser(args: &RunArgs) -> Option<servebench_data::dataset::hf_parsers::HfParser> {
    (args.dataset_name.kind == DatasetName::Hf)
        .then(|| {
            super::dataset::hf_dataset_ids(args)
                .iter()
                .find_map(|id| servebench_data::dataset::hf_parsers::parser_for(id))
        })
        .flatten()
}

fn is_spec_bench(args: &RunArgs) -> bool {
    args.dataset_name.kind == DatasetName::SpecBench
}

/// Refuses a non-default value of a parser flag that cannot apply to this run (SB113), and
/// values out of range (SB101).
pub fn check(args: &RunArgs) -> Result<()> {
    check_spec_bench_flags(args)?;
    check_ranges(args)?;
    check_blazedit_and_bfcl_apply(args)?;
    check_parser_backend(args)?;
    check_asr_applies(args)
}

/// `--spec-bench-*` at a non-default value need the spec_bench dataset (SB113).
fn check_spec_bench_flags(args: &RunArgs) -> Result<()> {
    let d = &args.dataset;
    let spec_given = [
        ("--spec-bench-category", d.spec_bench_category.is_some()),
        ("--spec-bench-output-len", d.spec_bench_output_len != 256),
    ];
    if let Some((flag, _)) = spec_given.iter().find(|(_, given)| *given).filter(|_| !is_spec_bench(args)) {
        return Err(BenchError::not_applicable(
            *flag,
            "the spec_bench dataset",
            format!("--dataset-name is {}", args.dataset_name),
            "pass --dataset-name spec_bench --dataset-path question.jsonl, or drop the flag",
        ));
    }
    Ok(())
}

/// The Blazedit distances in [0, 1] (min ≤ max) and the ASR lengths a range of seconds (SB101).
fn check_ranges(args: &RunArgs) -> Result<()> {
    let p = &args.hf_parsers;
    let (lo, hi) = (p.blazedit_min_distance, p.blazedit_max_distance);
    for (flag, v) in [("--blazedit-min-distance", lo), ("--blazedit-max-distance", hi)] {
        if !(0.0..=1.0).contains(&v) {
            return Err(BenchError::config(
                flag,
                format!("{v} is outside [0, 1]"),
                "pass a distance in [0, 1]",
            ));
        }
    }
    if lo > hi {
        return Err(BenchError::config(
            "--blazedit-min-distance",
            format!("{lo} is above --blazedit-max-distance {hi}"),
            "pass a minimum <= the maximum",
        ));
    }
    let (amin, amax) = (p.asr_min_audio_len_sec, p.asr_max_audio_len_sec);
    if amin.is_nan() || amin < 0.0 || amax.is_nan() || amax < amin {
        return Err(BenchError::config(
            "--asr-min-audio-len-sec/--asr-max-audio-len-sec",
            format!("[{amin}, {amax}] is not a range of seconds"),
            "pass 0 <= min <= max (max may be inf)",
        ));
    }
    Ok(())
}

/// A non-default Blazedit distance or `--bfcl-categories` needs that parser (SB113).
fn check_blazedit_and_bfcl_apply(args: &RunArgs) -> Result<()> {
    let p = &args.hf_parsers;
    let (lo, hi) = (p.blazedit_min_distance, p.blazedit_max_distance);
    let blazedit = [("--blazedit-min-distance", lo != 0.0), ("--blazedit-max-distance", hi != 1.0)];
    if let Some((flag, _)) = blazedit.iter().find(|b| b.1).filter(|_| !is_blazedit(args)) {
        return Err(BenchError::not_applicable(
            *flag,
            "the Blazedit parser of --dataset-name hf (vdaita/edit_5k_char, vdaita/edit_10k_char)",
            "this run does not use it",
            "pass --dataset-name hf --dataset-path vdaita/edit_5k_char (or --hf-name with a local file), or drop the flag",
        ));
    }
    let bfcl = hf_parser(args) == Some(servebench_data::dataset::hf_parsers::HfParser::Bfcl);
    if p.bfcl_categories.is_some() && !bfcl {
        return Err(BenchError::not_applicable(
            "--bfcl-categories",
            "the BFCL parser of --dataset-name hf (gorilla-llm/Berkeley-Function-Calling-Leaderboard)",
            "this run does not use it",
            "pass --dataset-name hf --dataset-path gorilla-llm/Berkeley-Function-Calling-Leaderboard \
             (or --hf-name with a local directory), or drop the flag",
        ));
    }
    Ok(())
}

/// The backend must carry what the hf parser sends: images, audio, BFCL's tools (SB110/SB111).
fn check_parser_backend(args: &RunArgs) -> Result<()> {
    let bfcl = hf_parser(args) == Some(servebench_data::dataset::hf_parsers::HfParser::Bfcl);
    let image_parser = hf_parser(args).filter(|p| {
        servebench_data::dataset::hf_image::is_image_parser(*p)
            || *p == servebench_data::dataset::hf_parsers::HfParser::MultiModalConversation
    });
    if let Some(parser) = image_parser {
        if !args.backend.kind.takes_multimodal() {
            return Err(BenchError::MultimodalUnsupported {
                backend: args.backend.name.clone(),
                detail: format!(
                    " (vLLM's {} sends an image with every request; use --backend openai-chat or an \
                     image embeddings backend)",
                    parser.name()
                ),
            });
        }
    }
    if args.backend.kind == BackendKind::Audio
        && args.dataset_name.kind == DatasetName::Hf
        && hf_parser(args) != Some(servebench_data::dataset::hf_parsers::HfParser::Asr)
    {
        return Err(BenchError::ContentTypeUnsupported {
            backend: args.backend.name.clone(),
            content: "requests without audio (this hf dataset is not one of vLLM's ASR sets)".into(),
            fix: "use --dataset-name custom_audio".into(),
        });
    }
    if bfcl && args.backend.kind != BackendKind::Chat {
        return Err(BenchError::ContentTypeUnsupported {
            backend: args.backend.name.clone(),
            content: "BFCL's tool-calling chat requests (per-request tools)".into(),
            fix: "use --backend openai-chat, as vLLM requires for BFCL".into(),
        });
    }
    Ok(())
}

/// Non-default ASR lengths need an ASR set (SB113); an ASR set needs `openai-audio` (SB110).
fn check_asr_applies(args: &RunArgs) -> Result<()> {
    let p = &args.hf_parsers;
    let (amin, amax) = (p.asr_min_audio_len_sec, p.asr_max_audio_len_sec);
    let asr = hf_parser(args) == Some(servebench_data::dataset::hf_parsers::HfParser::Asr);
    let given =
        [("--asr-min-audio-len-sec", amin != 0.0), ("--asr-max-audio-len-sec", amax != f64::INFINITY)];
    if let Some((flag, _)) = given.iter().find(|g| g.1).filter(|_| !asr) {
        return Err(BenchError::not_applicable(
            *flag,
            "the ASR parser of --dataset-name hf (openslr/librispeech_asr, facebook/voxpopuli, …)",
            "this run does not use it",
            "pass --dataset-name hf --dataset-path openslr/librispeech_asr (or --hf-name with a local file), or drop the flag",
        ));
    }
    if asr && args.backend.kind != BackendKind::Audio {
        return Err(BenchError::MultimodalUnsupported {
            backend: args.backend.name.clone(),
            detail: " (vLLM's ASR sets are transcribed: use --backend openai-audio)".into(),
        });
    }
    Ok(())
}

//! Flags of vLLM's dataset-specific parsers (vLLM 0.33): `--spec-bench-*` (the spec_bench
//! dataset) and the options of its Hugging Face parsers (`--bfcl-categories`,
//! `--blazedit-*-distance`, `--asr-*-audio-len-sec`). At their vLLM defaults they are always
//! accepted; another value is checked (`config::hf_parsers`) and refused with SB113 where it cannot apply (the
//! Blazedit distances apply to the Blazedit parser, `--bfcl-categories` to the BFCL parser, the
//! ASR lengths to the ASR parser). BFCL needs `--backend openai-chat` (SB111), as in vLLM.

use clap::Args;

/// Options of vLLM's Hugging Face dataset parsers.
#[derive(Debug, Clone, Args)]
pub struct HfParserArgs {
    /// hf, BFCL (gorilla-llm/Berkeley-Function-Calling-Leaderboard): comma-separated categories.
    #[arg(long, value_parser = crate::cli::values::bfcl_categories, help_heading = "Dataset")]
    pub bfcl_categories: Option<crate::cli::values::Categories>,
    /// hf, Blazedit (vdaita/edit_5k_char, vdaita/edit_10k_char): smallest edit distance kept, in
    /// [0, 1].
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub blazedit_min_distance: f64,
    /// hf, Blazedit: largest edit distance kept, in [0, 1].
    #[arg(long, default_value_t = 1.0, help_heading = "Dataset")]
    pub blazedit_max_distance: f64,
    /// hf, ASR sets (openai-audio): shortest audio kept, in seconds.
    #[arg(long, default_value_t = 0.0, help_heading = "Dataset")]
    pub asr_min_audio_len_sec: f64,
    /// hf, ASR sets (openai-audio): longest audio kept, in seconds.
    #[arg(long, default_value = "inf", help_heading = "Dataset")]
    pub asr_max_audio_len_sec: f64,
}

//! vLLM's dataset-specific parsers of `--dataset-name hf` (vLLM 0.33), chosen by the dataset
//! id (`--dataset-path`, or `--hf-name` with a local file). Each parser has its own prompt text,
//! output lengths and filtering; a registered id whose parser servebench does not have yet is
//! refused (SB114) rather than read with the generic loader, which would send other prompts.

use servebench_core::{BenchError, Result};

/// A dataset-specific parser of vLLM's hf dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HfParser {
    Conversation,
    MultiModalConversation,
    VisionArena,
    Mmvu,
    InstructCoder,
    MtBench,
    HumanEval,
    Gsm8k,
    Blazedit,
    Aimo,
    NextEditPrediction,
    Asr,
    MlPerf,
    MmStar,
    Bfcl,
}

/// Dataset ids → parser, as vLLM 0.33 registers them.
const REGISTRY: &[(&str, HfParser)] = &[
    ("Aeala/ShareGPT_Vicuna_unfiltered", HfParser::Conversation),
    ("lmms-lab/LLaVA-OneVision-Data", HfParser::MultiModalConversation),
    ("lmarena-ai/VisionArena-Chat", HfParser::VisionArena),
    ("lmarena-ai/vision-arena-bench-v0.1", HfParser::VisionArena),
    ("yale-nlp/MMVU", HfParser::Mmvu),
    ("likaixin/InstructCoder", HfParser::InstructCoder),
    ("philschmid/mt-bench", HfParser::MtBench),
    ("openai/openai_humaneval", HfParser::HumanEval),
    ("openai/gsm8k", HfParser::Gsm8k),
    ("vdaita/edit_5k_char", HfParser::Blazedit),
    ("vdaita/edit_10k_char", HfParser::Blazedit),
    ("AI-MO/aimo-validation-aime", HfParser::Aimo),
    ("AI-MO/NuminaMath-1.5", HfParser::Aimo),
    ("AI-MO/NuminaMath-CoT", HfParser::Aimo),
    ("zed-industries/zeta", HfParser::NextEditPrediction),
    ("openslr/librispeech_asr", HfParser::Asr),
    ("facebook/voxpopuli", HfParser::Asr),
    ("LIUM/tedlium", HfParser::Asr),
    ("edinburghcstr/ami", HfParser::Asr),
    ("speechcolab/gigaspeech", HfParser::Asr),
    ("kensho/spgispeech", HfParser::Asr),
    ("mgoin/mlperf-inference-llama2-data", HfParser::MlPerf),
    ("mgoin/mlperf-inference-llama3.1-data", HfParser::MlPerf),
    ("Lin-Chen/MMStar", HfParser::MmStar),
    ("gorilla-llm/Berkeley-Function-Calling-Leaderboard", HfParser::Bfcl),
];

impl HfParser {
    /// vLLM's class name of the parser (used in messages).
    pub fn name(self) -> &'static str {
        match self {
            HfParser::Conversation => "ConversationDataset",
            HfParser::MultiModalConversation => "MultiModalConversationDataset",
            HfParser::VisionArena => "VisionArenaDataset",
            HfParser::Mmvu => "MMVUDataset",
            HfParser::InstructCoder => "InstructCoderDataset",
            HfParser::MtBench => "MTBenchDataset",
            HfParser::HumanEval => "HumanEvalDataset",
            HfParser::Gsm8k => "GSM8KDataset",
            HfParser::Blazedit => "BlazeditDataset",
            HfParser::Aimo => "AIMODataset",
            HfParser::NextEditPrediction => "NextEditPredictionDataset",
            HfParser::Asr => "ASRDataset",
            HfParser::MlPerf => "MLPerfDataset",
            HfParser::MmStar => "MMStarDataset",
            HfParser::Bfcl => "BFCLDataset",
        }
    }

    /// Whether servebench has this parser.
    pub fn implemented(self) -> bool {
        matches!(
            self,
            HfParser::Aimo
                | HfParser::Conversation
                | HfParser::NextEditPrediction
                | HfParser::InstructCoder
                | HfParser::MtBench
                | HfParser::HumanEval
                | HfParser::Gsm8k
                | HfParser::Blazedit
                | HfParser::Bfcl
                | HfParser::VisionArena
                | HfParser::MmStar
                | HfParser::MultiModalConversation
                | HfParser::Asr
                | HfParser::MlPerf
                | HfParser::Mmvu
        )
    }

    /// The split vLLM forces for this parser (it ignores --hf-split), if any.
    pub fn forced_split(self) -> Option<&'static str> {
        match self {
            HfParser::Conversation | HfParser::MultiModalConversation => None,
            HfParser::HumanEval | HfParser::Gsm8k => Some("test"),
            HfParser::MmStar => Some("val"),
            HfParser::Mmvu => Some("validation"),
            _ => Some("train"),
        }
    }
}

/// The parser vLLM uses for `id` (exact match, as vLLM's lookup is).
pub fn parser_for(id: &str) -> Option<HfParser> {
    REGISTRY.iter().find(|(i, _)| *i == id).map(|(_, p)| *p)
}

/// The dataset ids vLLM registers for a parser.
pub fn ids_of(parser: HfParser) -> impl Iterator<Item = &'static str> {
    REGISTRY.iter().filter(move |(_, p)| *p == parser).map(|(i, _)| *i)
}

/// The first of `ids` that names a registered parser, with that parser. Errors (SB114) when
/// the parser is not implemented.
pub fn resolve(ids: &[String]) -> Result<Option<(String, HfParser)>> {
    let Some((id, parser)) = ids.iter().find_map(|i| parser_for(i).map(|p| (i.clone(), p))) else {
        return Ok(None);
    };
    if !parser.implemented() {
        return Err(BenchError::HfParserMissing { dataset: id, parser: parser.name().to_string() });
    }
    Ok(Some((id, parser)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorCode;

    #[test]
    fn every_vllm_parser_id_is_registered() {
        for id in [
            "Aeala/ShareGPT_Vicuna_unfiltered",
            "AI-MO/NuminaMath-CoT",
            "vdaita/edit_10k_char",
            "LIUM/tedlium",
        ] {
            assert!(parser_for(id).is_some(), "{id}");
        }
        assert_eq!(parser_for("ai-mo/numinamath-cot"), None, "vLLM matches ids exactly");
        assert_eq!(ids_of(HfParser::Aimo).count(), 3);
    }

    #[test]
    fn every_parser_of_vllm_0_33_is_built_and_sb114_names_a_missing_one() {
        for (id, p) in REGISTRY {
            assert!(p.implemented(), "{id}");
        }
        assert!(resolve(&["local.jsonl".into(), "yale-nlp/MMVU".into()]).unwrap().is_some());
        // The SB114 refusal stays for parsers of newer vLLM versions.
        let err =
            BenchError::HfParserMissing { dataset: "yale-nlp/MMVU".into(), parser: "MMVUDataset".into() };
        assert_eq!(err.code(), ErrorCode::HfParserMissing);
        let line = err.to_string();
        assert!(line.contains("yale-nlp/MMVU") && line.contains("MMVUDataset"), "{line}");
        assert_eq!(resolve(&["org/other".into()]).unwrap(), None);
    }
}

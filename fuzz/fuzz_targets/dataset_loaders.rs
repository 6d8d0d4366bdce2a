//! Dataset loaders end to end: a `sharegpt` or `custom` file with the fuzz input as content,
//! loaded with a real tokenizer (built-in `cl100k_base`, no network), and the `hf` column
//! detection and row extraction on arbitrary JSON rows. Any input must give a workload or a
//! coded error, never panic; a workload has the requested number of requests (through
//! `build_dataset`, as a run builds it).
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_core::TextTokenizer;
use servebench_data::dataset::custom::CustomConfig;
use servebench_data::dataset::hf::{detect_columns, extract};
use servebench_data::dataset::sharegpt::ShareGptConfig;
use servebench_data::dataset::{build_dataset, DatasetKind, DatasetRequest, Sampling};
use servebench_data::tokenizer::{load_tokenizer_with, HubEnv};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

fn offline() -> HubEnv {
    HubEnv { offline: true, ..HubEnv::default() }
}

fn tokenizer() -> &'static Arc<dyn TextTokenizer> {
    static TOK: OnceLock<Arc<dyn TextTokenizer>> = OnceLock::new();
    TOK.get_or_init(|| load_tokenizer_with("cl100k_base", &offline()).expect("built-in tokenizer"))
}

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("servebench-fuzz-loaders-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, content)) = data.split_first() else { return };
    let sampling =
        Sampling { num_prompts: usize::from(ctl >> 4) + 1, seed: 1, shuffle: ctl & 8 != 0, oversample: true };
    let fixed_output = (ctl & 4 != 0).then_some(16);
    let workload = match ctl % 4 {
        0 | 1 => {
            let ext = if ctl % 4 == 0 { "json" } else { "jsonl" };
            let path = dir().join(format!("sharegpt.{ext}"));
            std::fs::write(&path, content).expect("write the input file");
            let kind = DatasetKind::ShareGpt(ShareGptConfig { path: Some(path), output_len: fixed_output });
            build_dataset(&DatasetRequest::new(kind, sampling), tokenizer().as_ref(), &offline())
        }
        2 => {
            let path = dir().join("custom.jsonl");
            std::fs::write(&path, content).expect("write the input file");
            let kind = DatasetKind::Custom(CustomConfig {
                path,
                output_len: fixed_output,
                template: Default::default(),
            });
            build_dataset(&DatasetRequest::new(kind, sampling), tokenizer().as_ref(), &offline())
        }
        _ => {
            let Ok(rows) = serde_json::from_slice::<Vec<serde_json::Value>>(content) else { return };
            let Some(first) = rows.first() else { return };
            let column = (ctl & 4 != 0).then_some("text");
            if let Ok(cols) = detect_columns(first, column) {
                for row in &rows {
                    let _ = extract(row, &cols);
                }
            }
            return;
        }
    };
    if let Ok(w) = workload {
        assert_eq!(w.len(), sampling.num_prompts, "workload size");
    }
});

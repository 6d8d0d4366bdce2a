//! Dataset file loaders: any file content (JSON array, JSON Lines, Parquet — chosen by the
//! file's extension and its first bytes, as for `--dataset-path`) must load or give a coded
//! `DatasetFile` error naming the file, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_core::BenchError;
use servebench_data::dataset::file::{read_records, DataFile};
use std::path::PathBuf;
use std::sync::OnceLock;

fn dir() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("servebench-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, content)) = data.split_first() else { return };
    let ext = ["json", "jsonl", "parquet", "data"][usize::from(which % 4)];
    let path = dir().join(format!("input.{ext}"));
    std::fs::write(&path, content).expect("write the input file");
    match read_records(&DataFile::new(&path)) {
        Ok(rows) => assert!(!rows.is_empty(), "an empty file loaded"),
        Err(BenchError::DatasetFile { path: p, .. }) => assert!(p.ends_with(ext)),
        Err(e) => panic!("not a dataset-file error: {e:?}"),
    }
});

//! Writing a single run's result: where it goes (`--result-filename`, else vLLM's default name
//! with the shard tag), and the records file (and the server-metrics file) moved beside it
//! first, under its final name.

use super::assemble::RunResults;
use super::paths::{records_file_key, records_path_for_doc, shard_file_name};
use crate::config::OutputConfig;
use crate::observe::series_file::series_path_for;
use servebench_core::shard::ShardSpec;
use servebench_core::{BenchError, Result};
use servebench_report::{default_result_filename, write_result_with};
use std::path::{Path, PathBuf};

/// Where the result goes (or would go): `--result-filename` or vLLM's default name.
pub fn result_path(output: &OutputConfig, results: &RunResults, shard: Option<ShardSpec>) -> PathBuf {
    output.result_dir.clone().unwrap_or_default().join(match &output.result_filename {
        Some(f) => f.clone(),
        None => shard_file_name(&default_result_filename(&results.info), shard),
    })
}

/// Writes the result document at `result_path`, with the records file (`records_file`, written
/// under the provisional name `provisional`) moved beside it first; returns where the records
/// file is.
pub fn save_result(
    results: &RunResults,
    output: &OutputConfig,
    result_path: &Path,
    provisional: &Path,
    records_file: Option<PathBuf>,
) -> Result<Option<PathBuf>> {
    let mut records_file = records_file;
    // The records file is in place (its final name) before the result that names it.
    let final_records = records_path_for_doc(result_path, output.append_result);
    if records_file.as_deref() == Some(provisional) && provisional != final_records {
        std::fs::rename(provisional, &final_records)
            .map_err(|e| BenchError::io(final_records.display(), e))?;
        records_file = Some(final_records.clone());
    }
    let key = records_file.as_ref().map(|r| records_file_key(result_path, r));
    let mut doc = results.document(output.save_detailed, key);
    if let Some((written, _)) = &results.server_side.series_file {
        // The server-metrics file follows the records file to its final name.
        let final_series = series_path_for(&final_records);
        let series = if *written != final_series && std::fs::rename(written, &final_series).is_ok() {
            final_series
        } else {
            written.clone()
        };
        let name = records_file_key(result_path, &series);
        if let Some(m) = doc.server.server_metrics.as_mut() {
            m.series_file = Some(name.clone());
        }
        if let Some(t) = doc.server.gpu_telemetry.as_mut() {
            t.series_file = Some(name);
        }
    }
    // The per-request arrays are written from their columns, never built as JSON values.
    let (value, arrays) = doc.into_parts();
    write_result_with(result_path, &output.with_config(value), &arrays, output.append_result)?;
    Ok(records_file)
}

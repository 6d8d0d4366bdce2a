//! servebench-report: the console result block, the result JSON (vLLM's keys and units plus
//! servebench's), vLLM's default result file name and result-file writing, the per-request CSV and
//! the self-contained HTML report with charts; and the typed reader of result documents
//! (`document`) with what `report`, `compare` and `merge` compute from them.

pub mod change;
pub mod console;
pub mod csv;
pub mod document;
pub mod env;
pub mod files;
pub mod fmt;
pub mod html;
pub mod info;
pub mod json;
pub mod per_request;
pub mod result_keys;
pub mod sections;
pub mod server_summary;
pub mod vllm_arrays;
pub mod written;

pub use console::{console_block, console_block_with, console_warnings, Detail};
pub use csv::{records_csv, runs_csv};
pub use env::{gather_environment, Environment};
pub use files::{
    default_result_filename, file_name_part, input_label, to_python_json, write_result, write_result_with,
    write_text,
};
pub use html::{html_report, ReportHeader, ReportRun};
pub use info::{ClientHealth, ReceiveTimesHealth, RunInfo, TimeSliceHealth};
pub use json::{result_json, result_object};
/// `compare` (a section like the others; kept at its old path for callers).
pub use sections::compare;

#[cfg(test)]
mod null_policy_tests;

//! servebench-report: the console result block, the result JSON (vLLM's keys and units plus
//! servebench's), vLLM's default result file name and result-file writing.

pub mod console;
pub mod files;
pub mod info;
pub mod json;

pub use console::console_block;
pub use files::{default_result_filename, to_python_json, write_result};
pub use info::{ClientHealth, RunInfo};
pub use json::result_json;

//! Request records for tests, built with named steps instead of positional helpers
//! ([`RecordBuilder`] lives in `servebench-core` behind its `test-util` feature, so core's own
//! tests use the same builder).
//!
//! ```
//! use servebench_testkit::records::RecordBuilder;
//! let r = RecordBuilder::new(0).sent_at(1_000).stream(101_000, &[10_000, 20_000]).done_at(131_000).usage(3).completed();
//! assert_eq!(r.token_event_count, 3);
//! ```

pub use servebench_core::record_builder::RecordBuilder;
use servebench_core::RequestRecord;

/// A completed streamed request `i` of a steady run: intended at `i` ms, sent 10 µs later, 4
/// token events 1 ms apart from 5 ms after it, done at 8.1 ms, 4 output tokens expected.
pub fn streamed(i: u64) -> RequestRecord {
    RecordBuilder::new(i)
        .intended_at(i * 1000)
        .sent_at(i * 1000 + 10)
        .stream(i * 1000 + 5000, &[1000; 3])
        .done_at(i * 1000 + 8100)
        .with(|r| r.expected_output_tokens = 4)
        .completed()
}

/// Writes [`streamed`] requests `0..n` to `path` as a records file (JSON lines).
pub fn write_streamed_jsonl(path: &std::path::Path, n: u64) {
    let text: Vec<String> =
        (0..n).map(|i| serde_json::to_string(&streamed(i)).expect("record JSON")).collect();
    std::fs::write(path, text.join("\n") + "\n").expect("write the records file");
}

//! Request records for tests, built with named steps instead of positional helpers.
//!
//! ```
//! use servebench_testkit::records::RecordBuilder;
//! let r = RecordBuilder::new(0).sent_at(1_000).stream(101_000, &[10_000, 20_000]).done_at(131_000).usage(3).completed();
//! assert_eq!(r.token_event_count, 3);
//! ```

use servebench_core::{ErrorKind, Outcome, RequestRecord};

/// Builds one [`RequestRecord`]. Times are µs from the run origin, as in the record.
#[derive(Debug, Clone)]
pub struct RecordBuilder {
    r: RequestRecord,
}

impl RecordBuilder {
    /// Request `index` (id `req-INDEX`), intended at 0, 10 prompt tokens, 10 expected output
    /// tokens, not sent yet.
    pub fn new(index: u64) -> Self {
        RecordBuilder { r: RequestRecord::scheduled(index, format!("req-{index}"), 0, 10, 10) }
    }

    /// The schedule's intended send time.
    pub fn intended_at(mut self, us: u64) -> Self {
        self.r.intended_us = us;
        self
    }

    /// Prompt tokens as the client counted them.
    pub fn prompt_tokens(mut self, n: u32) -> Self {
        self.r.prompt_tokens = n;
        self
    }

    /// Sent at `us` (one attempt).
    pub fn sent_at(mut self, us: u64) -> Self {
        self.r.dispatched_us = Some(us);
        self.r.attempts = self.r.attempts.max(1);
        self
    }

    /// A stream whose first token event arrived at `first_us` (the head 1 ms before), then one
    /// event after each gap.
    pub fn stream(mut self, first_us: u64, gaps_us: &[u32]) -> Self {
        self.r.headers_us = Some(first_us.saturating_sub(1_000));
        self.r.first_event_us = Some(first_us);
        self.r.first_token_us = Some(first_us);
        self.r.token_events.gaps_us = gaps_us.to_vec();
        self.r.last_token_us = Some(first_us + gaps_us.iter().map(|&g| u64::from(g)).sum::<u64>());
        self.r.token_event_count = u32::try_from(gaps_us.len()).unwrap_or(u32::MAX - 1) + 1;
        self
    }

    /// Tokens carried by each event (with [`RecordBuilder::stream`]).
    pub fn event_tokens(mut self, tokens: &[u32]) -> Self {
        self.r.token_events.tokens = tokens.to_vec();
        self
    }

    /// The response ended at `us`.
    pub fn done_at(mut self, us: u64) -> Self {
        self.r.done_us = Some(us);
        self
    }

    /// The server's output-token `usage`.
    pub fn usage(mut self, completion_tokens: u32) -> Self {
        self.r.completion_tokens = Some(completion_tokens);
        self
    }

    /// The server's prompt-token `usage` and its cached part.
    pub fn prompt_usage(mut self, prompt_tokens: u32, cached: Option<u32>) -> Self {
        self.r.server_prompt_tokens = Some(prompt_tokens);
        self.r.cached_prompt_tokens = cached;
        self
    }

    /// The generated text.
    pub fn text(mut self, text: &str) -> Self {
        self.r.generated_text = Some(text.to_owned());
        self
    }

    /// Any other field.
    pub fn with(mut self, f: impl FnOnce(&mut RequestRecord)) -> Self {
        f(&mut self.r);
        self
    }

    /// Ends as completed.
    pub fn completed(mut self) -> RequestRecord {
        self.r.outcome = Outcome::Completed;
        self.r
    }

    /// Ends as failed with `kind`.
    pub fn failed(mut self, kind: ErrorKind, message: &str) -> RequestRecord {
        self.r.fail(kind, message);
        self.r
    }

    /// Ends as cancelled.
    pub fn cancelled(mut self) -> RequestRecord {
        self.r.outcome = Outcome::Cancelled;
        self.r
    }
}

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

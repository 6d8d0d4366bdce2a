//! Pure logic of servebench: configuration model, arrival schedules, request records, metrics,
//! statistics and the result schema. No network, no files: plain functions over plain data,
//! tested on hand-computed inputs.

pub mod clock;
pub mod compact_records;
pub mod early_stop;
pub mod error;
pub mod file_at;
pub mod flag_values;
pub mod inference;
pub mod merge;
pub mod metrics;
pub mod prom;
pub mod record;
#[cfg(any(test, feature = "test-util"))]
pub mod record_builder;
pub mod requests;
pub mod schedule;
pub mod secret;
pub mod shard;
pub mod stats;
pub mod text;
pub mod tokenizer;
pub mod validity;
pub mod varint;
pub mod workload;

pub use clock::RunClock;
pub use compact_records::{CompactRecords, Filtered, RecordSet, Selection};
pub use error::{errors_markdown, BenchError, ErrorCode, Result};
pub use record::{
    CancelReason, ErrorKind, FailureCause, HttpPhases, Outcome, RequestError, RequestRecord, TokenEvents,
    TokenSource, UnreachableReason,
};
pub use requests::{LazyRequests, RequestSource, Requests, SpecMeta, SpecRef};
pub use tokenizer::{ChatRender, ChatTemplate, TextTokenizer};
pub use workload::{AudioClip, BodyOverrides, ChatMessages, Prompt, RequestSpec, RerankPayload, Workload};

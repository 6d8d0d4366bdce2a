//! Ground truth: what the simulator sent and when, per request, on the monotonic clock the
//! client uses too (same host). Off by default; recording costs one `Instant::now()` and one
//! `Vec` push per event, and one mutex lock per request at its end.

use std::io::Write;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use servebench_core::{BenchError, Result, RunClock};

/// One token event as the simulator sent it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TruthEvent {
    /// When the event's bytes were handed to the connection (hyper writes them to the socket in
    /// the same poll).
    pub at: Instant,
    /// Completion tokens the event carried (summed over choices).
    pub tokens: u32,
}

/// What the simulator did for one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundTruth {
    /// The request's `x-request-id` header, or the id the simulator generated.
    pub request_id: String,
    /// The API path (`/v1/completions`, `/v1/chat/completions`).
    pub endpoint: &'static str,
    /// Whether the response was streamed.
    pub stream: bool,
    /// When the request body had been read completely (the timing origin of this request).
    pub received: Instant,
    /// Token events in order. A non-streamed response has one event carrying every token.
    pub events: Vec<TruthEvent>,
    /// When the last bytes of the response (usage chunk, `[DONE]`) were handed over; `None` if
    /// the client went away first.
    pub done: Option<Instant>,
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u32,
    /// `usage.completion_tokens` as planned.
    pub completion_tokens: u32,
    /// Of the completion tokens, those sent as reasoning (before the content); 0 without
    /// `--sim-reasoning-tokens`.
    pub reasoning_tokens: u32,
}

impl GroundTruth {
    /// One JSON line with times as µs offsets from `clock`'s origin:
    /// `{"request_id","endpoint","stream","received_us","event_us":[…],"event_tokens":[…],
    /// "done_us","prompt_tokens","completion_tokens"}`.
    pub fn to_json_line(&self, clock: &RunClock) -> String {
        #[derive(Serialize)]
        struct Line<'a> {
            request_id: &'a str,
            endpoint: &'a str,
            stream: bool,
            received_us: u64,
            event_us: Vec<u64>,
            event_tokens: Vec<u32>,
            done_us: Option<u64>,
            prompt_tokens: u32,
            completion_tokens: u32,
            #[serde(skip_serializing_if = "is_zero")]
            reasoning_tokens: u32,
            /// Wall-clock time of the clock's origin (µs since the Unix epoch), to align these
            /// times with another process's records.
            origin_unix_us: u64,
        }
        let line = Line {
            request_id: &self.request_id,
            endpoint: self.endpoint,
            stream: self.stream,
            received_us: clock.offset_us(self.received),
            event_us: self.events.iter().map(|e| clock.offset_us(e.at)).collect(),
            event_tokens: self.events.iter().map(|e| e.tokens).collect(),
            done_us: self.done.map(|d| clock.offset_us(d)),
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            reasoning_tokens: self.reasoning_tokens,
            origin_unix_us: clock.wall_anchor_unix_us(),
        };
        serde_json::to_string(&line).unwrap_or_default()
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Writes `records` as JSON lines (see [`GroundTruth::to_json_line`]) to `path`.
pub fn write_ground_truth_jsonl(
    records: &[GroundTruth],
    clock: &RunClock,
    path: &std::path::Path,
) -> Result<()> {
    let file = std::fs::File::create(path).map_err(|e| BenchError::io(path.display(), e))?;
    let mut w = std::io::BufWriter::new(file);
    for r in records {
        writeln!(w, "{}", r.to_json_line(clock)).map_err(|e| BenchError::io(path.display(), e))?;
    }
    w.flush().map_err(|e| BenchError::io(path.display(), e))
}

/// The shared log the server appends to.
#[derive(Debug, Default)]
pub(crate) struct GroundTruthLog {
    records: Mutex<Vec<GroundTruth>>,
}

impl GroundTruthLog {
    fn lock(&self) -> MutexGuard<'_, Vec<GroundTruth>> {
        self.records.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn push(&self, r: GroundTruth) {
        self.lock().push(r);
    }

    pub(crate) fn snapshot(&self) -> Vec<GroundTruth> {
        self.lock().clone()
    }

    pub(crate) fn take(&self) -> Vec<GroundTruth> {
        std::mem::take(&mut *self.lock())
    }
}

/// Collects one request's events and appends them to the log when finished or dropped (a client
/// that disconnects mid-stream still leaves a record, with `done: None`).
#[derive(Debug)]
pub(crate) struct TruthRecorder {
    record: Option<GroundTruth>,
    log: Arc<GroundTruthLog>,
}

impl TruthRecorder {
    pub(crate) fn new(log: Arc<GroundTruthLog>, record: GroundTruth) -> Self {
        TruthRecorder { record: Some(record), log }
    }

    pub(crate) fn event(&mut self, at: Instant, tokens: u32) {
        if let Some(r) = self.record.as_mut() {
            r.events.push(TruthEvent { at, tokens });
        }
    }

    pub(crate) fn finish(&mut self, at: Instant) {
        if let Some(mut r) = self.record.take() {
            r.done = Some(at);
            self.log.push(r);
        }
    }
}

impl Drop for TruthRecorder {
    fn drop(&mut self) {
        if let Some(r) = self.record.take() {
            self.log.push(r);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(id: &str, at: Instant) -> GroundTruth {
        GroundTruth {
            request_id: id.into(),
            endpoint: "/v1/completions",
            stream: true,
            received: at,
            events: Vec::new(),
            done: None,
            prompt_tokens: 3,
            completion_tokens: 2,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn recorder_pushes_on_finish_and_on_drop() {
        let log = Arc::new(GroundTruthLog::default());
        let t0 = Instant::now();
        let mut r = TruthRecorder::new(log.clone(), rec("a", t0));
        r.event(t0, 1);
        r.event(t0, 1);
        r.finish(t0);
        drop(TruthRecorder::new(log.clone(), rec("b", t0)));
        let all = log.take();
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].events.len(), 2);
        assert!(all[0].done.is_some());
        assert!(all[1].done.is_none());
        assert!(log.snapshot().is_empty());
    }

    #[test]
    fn json_line_uses_offsets() {
        let clock = RunClock::start();
        let mut r = rec("x", clock.instant_at(1000));
        r.events.push(TruthEvent { at: clock.instant_at(1500), tokens: 1 });
        r.done = Some(clock.instant_at(1500));
        let v: serde_json::Value = serde_json::from_str(&r.to_json_line(&clock)).unwrap();
        assert_eq!(v["received_us"], 1000);
        assert_eq!(v["event_us"][0], 1500);
        assert_eq!(v["done_us"], 1500);
        assert_eq!(v["request_id"], "x");
    }
}

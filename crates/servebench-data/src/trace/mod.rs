//! Timestamped trace replay (`--dataset-name timed_trace`): Mooncake-style JSONL, one request
//! per line, `{"timestamp": ms, "input_length": n, "output_length": n, "hash_ids": [..]}`
//! (field names remappable with the `--timed-trace-label-*` flags).
//!
//! Prompts are token ids. Each hash id expands to a block of exactly `chunk_size` token ids
//! that is a pure function of `(hash id, seed, tokenizer vocabulary)`: requests sharing leading
//! hash ids share a token prefix, on every run and every machine (no process randomness). The
//! last block is cut so the prompt has exactly `input_length` tokens; when the hash ids cover
//! fewer tokens than `input_length`, the rest is filled with tokens unique to the row (vLLM
//! sends a shorter prompt instead). Arrival offsets are `(timestamp − first timestamp) ×
//! multiplier`, in trace order (timestamps must not decrease).

mod reread;

use std::path::PathBuf;
use std::sync::Arc;

use reread::{Fate, Keep, Mark, RowFile, MARK_EVERY};

use rayon::prelude::*;
use serde_json::Value;
use servebench_core::{BenchError, Prompt, RequestSource, RequestSpec, Result, TextTokenizer, Workload};

/// Names of the trace fields (`--timed-trace-label-*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLabels {
    pub timestamp: String,
    pub input_length: String,
    pub output_length: String,
    pub hash_ids: String,
}

impl Default for TraceLabels {
    fn default() -> Self {
        TraceLabels {
            timestamp: "timestamp".into(),
            input_length: "input_length".into(),
            output_length: "output_length".into(),
            hash_ids: "hash_ids".into(),
        }
    }
}

/// What to replay and how.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    pub path: PathBuf,
    pub labels: TraceLabels,
    /// Tokens per hash id (`--timed-trace-chunk-hash-size`, vLLM default 16).
    pub chunk_size: u32,
    /// Scale of trace time (`--timed-trace-sec-multiplier`): 0.5 replays twice as fast.
    pub sec_multiplier: f64,
    /// Replay at most this many rows (the first ones).
    pub num_prompts: usize,
    pub seed: u64,
    /// Rows whose `input_length + output_length` exceed this are dropped.
    pub max_model_len: Option<u32>,
    /// Send on the trace's timestamps (`--self-timed`, the default); otherwise the run's
    /// `--request-rate` schedule is used.
    pub self_timed: bool,
    /// The run's end in replay time (`--duration`, ms): rows due after it are never sent, so
    /// the span bound does not apply to them. `None` without a `--duration`.
    pub replay_end_ms: Option<f64>,
}

/// One request of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceRow {
    pub timestamp_ms: f64,
    pub input_length: u32,
    pub output_length: u32,
    pub hash_ids: Vec<u64>,
}

/// A trace turned into a workload and its arrival offsets (one per request).
#[derive(Debug, Clone)]
pub struct TraceWorkload {
    pub workload: Workload,
    pub offsets_us: Vec<u64>,
    /// Rows dropped by `max_model_len`.
    pub filtered_out: usize,
}

fn dataset_err(detail: String) -> BenchError {
    BenchError::dataset(detail)
}

fn field_u64(v: &Value, name: &str, line: usize) -> Result<u64> {
    let f = v.get(name).ok_or_else(|| {
        dataset_err(format!(
            "trace line {line}: no field '{name}'; fix: check the file or remap the name with --timed-trace-label-*"
        ))
    })?;
    f.as_u64().or_else(|| f.as_f64().filter(|x| *x >= 0.0 && x.fract() == 0.0).map(|x| x as u64)).ok_or_else(
        || {
            dataset_err(format!(
                "trace line {line}: '{name}' is not a non-negative integer; fix: check the file"
            ))
        },
    )
}

/// The longest replay a trace may ask for: 7 days between its first and last rows, after
/// `--timed-trace-sec-multiplier` (docs/datasets.md). A timestamp beyond it is a unit mix-up or
/// a corrupt row (`18446744073709551615`, `1e300`), which used to make the run wait forever.
pub const MAX_TRACE_SPAN_MS: f64 = 7.0 * 24.0 * 3600.0 * 1000.0;

/// The timestamps seen so far: they must not decrease, and the replay they ask for (times the
/// multiplier) must stay within [`MAX_TRACE_SPAN_MS`] for the rows that are sent (`end_ms`: the
/// run's end in replay time, after which rows are not sent).
#[derive(Debug, Clone, Copy)]
struct TraceClock {
    first: Option<f64>,
    last: f64,
    multiplier: f64,
    end_ms: Option<f64>,
}

impl TraceClock {
    fn new(multiplier: f64) -> Self {
        TraceClock { first: None, last: f64::NEG_INFINITY, multiplier, end_ms: None }
    }

    /// Checks `ts`; the span bound only when the row is sent (`replayed`: within
    /// `--num-prompts`, and before the run's end).
    fn check(&mut self, ts: f64, line_no: usize, replayed: bool) -> Result<()> {
        if !ts.is_finite() || ts < self.last {
            return Err(dataset_err(format!(
                "trace line {line_no}: timestamp {ts} is before the previous one; fix: sort the trace by timestamp"
            )));
        }
        let first = *self.first.get_or_insert(ts);
        let span = (ts - first) * self.multiplier;
        let sent = replayed && self.end_ms.is_none_or(|end| span < end);
        if sent && (span.is_nan() || span > MAX_TRACE_SPAN_MS) {
            return Err(dataset_err(format!(
                "trace line {line_no}: timestamp {ts} is {} days after the first row's ({first}){}, \
                 beyond the longest replay (7 days); fix: check that timestamps are milliseconds \
                 and the row is not corrupt",
                (ts - first) / 86_400_000.0,
                if self.multiplier == 1.0 {
                    String::new()
                } else {
                    format!(" × --timed-trace-sec-multiplier {}", self.multiplier)
                },
            )));
        }
        self.last = ts;
        Ok(())
    }
}

/// Parses JSONL trace text (pure). Empty lines are skipped; timestamps must not decrease nor
/// span more than [`MAX_TRACE_SPAN_MS`].
pub fn parse_trace(text: &str, labels: &TraceLabels) -> Result<Vec<TraceRow>> {
    let mut rows = Vec::new();
    let mut clock = TraceClock::new(1.0);
    for (i, line) in text.lines().enumerate() {
        if let Some(row) = parse_line(line, i + 1, labels, &mut clock, true)? {
            rows.push(row);
        }
    }
    Ok(rows)
}

/// A length field: a positive integer that fits a `u32` (0 used to be sent as an empty prompt
/// or `max_tokens` 1, larger values were lowered to `u32::MAX`).
fn field_len(v: &Value, name: &str, line: usize) -> Result<u32> {
    let n = field_u64(v, name, line)?;
    if n == 0 {
        return Err(dataset_err(format!(
            "trace line {line}: '{name}' is 0; fix: give every row a length of at least 1 token (or remove the row)"
        )));
    }
    u32::try_from(n).map_err(|_| {
        dataset_err(format!(
            "trace line {line}: '{name}' is {n}, above the largest length ({}); fix: check the row",
            u32::MAX
        ))
    })
}

/// One line of a trace (`None` for an empty line); `clock` holds the timestamps seen before.
/// One row; `replayed` when it is sent (within `--num-prompts`): the rules of a sent row (no
/// 0-token lengths, the span bound) apply to it only — a row past the replayed ones is checked
/// for its shape alone, as before they existed.
fn parse_line(
    line: &str,
    line_no: usize,
    labels: &TraceLabels,
    clock: &mut TraceClock,
    replayed: bool,
) -> Result<Option<TraceRow>> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let v: Value = serde_json::from_str(line).map_err(|e| {
        dataset_err(format!("trace line {line_no} is not JSON ({e}); fix: one JSON object per line"))
    })?;
    let ts = v.get(&labels.timestamp).and_then(Value::as_f64).ok_or_else(|| {
        dataset_err(format!(
            "trace line {line_no}: no numeric '{}' (ms); fix: remap with --timed-trace-label-timestamp",
            labels.timestamp
        ))
    })?;
    clock.check(ts, line_no, replayed)?;
    let len = |name: &str| match replayed {
        true => field_len(&v, name, line_no),
        false => field_u64(&v, name, line_no).map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
    };
    let input = len(&labels.input_length)?;
    let output = len(&labels.output_length)?;
    let hash_ids = match v.get(&labels.hash_ids) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|h| {
                h.as_u64().ok_or_else(|| {
                    dataset_err(format!(
                        "trace line {line_no}: hash id {h} is not a non-negative integer; fix: check the file"
                    ))
                })
            })
            .collect::<Result<Vec<u64>>>()?,
        Some(_) => {
            return Err(dataset_err(format!(
                "trace line {line_no}: '{}' is not an array; fix: remap with --timed-trace-label-hash-ids",
                labels.hash_ids
            )))
        }
    };
    Ok(Some(TraceRow { timestamp_ms: ts, input_length: input, output_length: output, hash_ids }))
}

/// Arrival offsets of `rows` (pure): `(timestamp − first) × multiplier`, in µs.
pub fn trace_offsets_us(rows: &[TraceRow], sec_multiplier: f64) -> Vec<u64> {
    let first = rows.first().map_or(0.0, |r| r.timestamp_ms);
    let mut prev = 0;
    rows.iter()
        .map(|r| {
            let us = (r.timestamp_ms - first) * sec_multiplier * 1000.0;
            let us = if us.is_finite() && us > 0.0 { us.round() as u64 } else { 0 };
            prev = us.max(prev);
            prev
        })
        .collect()
}

const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(GOLDEN);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Token ids a trace prompt may use: every id whose text (special tokens skipped) is non-empty.
pub fn allowed_token_ids(tok: &dyn TextTokenizer) -> Vec<u32> {
    (0..tok.vocab_size())
        .into_par_iter()
        .filter(|&id| tok.decode(&[id], true).is_ok_and(|t| !t.is_empty()))
        .collect()
}

/// Expands hash ids and rows into token ids (pure given the allowed ids).
#[derive(Debug, Clone)]
pub struct BlockTokens {
    allowed: Arc<[u32]>,
    chunk_size: u32,
    seed: u64,
}

impl BlockTokens {
    pub fn new(allowed: Arc<[u32]>, chunk_size: u32, seed: u64) -> Self {
        BlockTokens { allowed, chunk_size: chunk_size.max(1), seed }
    }

    fn pick(&self, x: u64) -> u32 {
        self.allowed[(mix(x) % self.allowed.len() as u64) as usize]
    }

    /// Token `j` of the block of `hash_id`.
    fn block_token(&self, hash_id: u64, j: u64) -> u32 {
        let base = mix(self.seed ^ 0x7472_6163_655f_6964) ^ mix(hash_id.wrapping_mul(GOLDEN));
        self.pick(base.wrapping_add(j.wrapping_mul(GOLDEN)))
    }

    /// The block of `hash_id`: exactly `chunk_size` ids.
    pub fn block(&self, hash_id: u64) -> Vec<u32> {
        (0..u64::from(self.chunk_size)).map(|j| self.block_token(hash_id, j)).collect()
    }

    /// The prompt of row `row_index`: its hash blocks, cut or filled to `input_length`.
    pub fn prompt(&self, row: &TraceRow, row_index: u64) -> Vec<u32> {
        self.prompt_of(row.input_length, row.hash_ids.iter().copied(), row_index)
    }

    /// [`BlockTokens::prompt`] from a row's input length and hash ids.
    pub fn prompt_of(
        &self,
        input_length: u32,
        hash_ids: impl Iterator<Item = u64>,
        row_index: u64,
    ) -> Vec<u32> {
        let n = input_length as usize;
        let mut ids = Vec::with_capacity(n);
        'blocks: for h in hash_ids {
            for j in 0..u64::from(self.chunk_size) {
                if ids.len() == n {
                    break 'blocks;
                }
                ids.push(self.block_token(h, j));
            }
        }
        let fill = mix(self.seed ^ 0x756e_6971_7565) ^ mix(row_index.wrapping_add(1).wrapping_mul(GOLDEN));
        let mut k = 0u64;
        while ids.len() < n {
            ids.push(self.pick(fill.wrapping_add(k.wrapping_mul(GOLDEN))));
            k += 1;
        }
        ids
    }
}

/// Reads, filters and expands a trace into a workload with its arrival offsets: every prompt
/// held in memory ([`prepare_trace`] builds them on demand instead).
pub fn build_trace_workload(cfg: &TraceConfig, tok: &dyn TextTokenizer) -> Result<TraceWorkload> {
    let prepared = prepare_trace(cfg, tok)?;
    let src = &prepared.source;
    let requests = (0..src.len()).into_par_iter().map(|i| src.build(i)).collect();
    Ok(TraceWorkload {
        workload: Workload::new(requests),
        offsets_us: prepared.offsets_us,
        filtered_out: prepared.filtered_out,
    })
}

/// A trace read and filtered, its prompts not built: the requests come from `source`.
#[derive(Debug)]
pub struct PreparedTrace {
    pub source: Arc<TraceSource>,
    pub offsets_us: Vec<u64>,
    /// Rows dropped by `max_model_len`.
    pub filtered_out: usize,
}

/// Streams the trace file (one line in memory at a time; every line is checked, as before),
/// keeping of the first `num_prompts` rows that fit `max_model_len` their lengths, a mark every
/// 256 rows (where its line starts: the hash ids are read again from the file when a
/// prompt is built, `reread`), and the arrival offsets.
pub fn prepare_trace(cfg: &TraceConfig, tok: &dyn TextTokenizer) -> Result<PreparedTrace> {
    let read = read_trace(cfg)?;
    let allowed: Arc<[u32]> = allowed_token_ids(tok).into();
    if allowed.is_empty() {
        return Err(dataset_err(format!(
            "tokenizer {} has no usable token ids; fix: pass another --tokenizer",
            tok.name()
        )));
    }
    let blocks = BlockTokens::new(allowed, cfg.chunk_size, cfg.seed);
    Ok(PreparedTrace {
        source: Arc::new(TraceSource { rows: read.rows, blocks, file: read.file }),
        offsets_us: read.offsets_us,
        filtered_out: read.filtered_out,
    })
}

/// A trace file read through once: its kept rows' lengths, the file with its marks, the
/// arrival offsets.
struct ReadTrace {
    rows: TraceRows,
    file: RowFile,
    offsets_us: Vec<u64>,
    filtered_out: usize,
}

fn read_trace(cfg: &TraceConfig) -> Result<ReadTrace> {
    // Unreadable (missing, a directory, no permission): the dataset error every other file
    // dataset gives (SB204, naming --dataset-path).
    let data_file = crate::dataset::file::DataFile::new(&cfg.path);
    let unreadable = |e: std::io::Error| {
        let problem = format!("cannot be read: {e}");
        data_file.error_from(crate::dataset::file::Location::File, problem, "check the --dataset-path", e)
    };
    let file = std::fs::File::open(&cfg.path).map_err(unreadable)?;
    let keep =
        Keep { labels: cfg.labels.clone(), num_prompts: cfg.num_prompts, max_model_len: cfg.max_model_len };
    let mut rows = TraceRows::default();
    let mut marks = Vec::new();
    let mut offsets = OffsetsFrom::new(cfg.sec_multiplier);
    let (mut seen, mut filtered_out) = (0usize, 0usize);
    // The replay's span is bounded only when the timestamps are replayed: a rate-driven replay
    // (--no-self-timed) sends the rows on the --request-rate schedule, whatever they say.
    let mut clock = TraceClock::new(if cfg.self_timed { cfg.sec_multiplier } else { 0.0 });
    clock.end_ms = cfg.replay_end_ms;
    let mut reader = std::io::BufReader::new(file.try_clone().map_err(unreadable)?);
    let (mut at, mut line) = (0u64, Vec::new());
    for i in 0.. {
        line.clear();
        let n = std::io::BufRead::read_until(&mut reader, b'\n', &mut line).map_err(unreadable)?;
        if n == 0 {
            break;
        }
        let line_at = at;
        at += n as u64;
        let text = line_text(&line).map_err(unreadable)?;
        // A byte-order mark (Windows editors write one) is not part of the first row.
        let text = if i == 0 { crate::dataset::file::strip_bom(text) } else { text };
        let replayed = seen < cfg.num_prompts;
        let Some(row) = parse_line(text, i + 1, &cfg.labels, &mut clock, replayed)? else { continue };
        let fate = keep.fate(seen, &row);
        seen += 1;
        match fate {
            Fate::Past => continue,
            Fate::TooLong => {
                filtered_out += 1;
                continue;
            }
            Fate::Kept => {}
        }
        if rows.len() % MARK_EVERY == 0 {
            marks.push(Mark { at: line_at, line: i, seen: seen - 1 });
        }
        offsets.push(row.timestamp_ms);
        rows.push(&row);
    }
    if rows.input.is_empty() {
        return Err(dataset_err(format!(
            "trace {} has no request to replay{}; fix: check the file",
            cfg.path.display(),
            if filtered_out > 0 { " after --max-model-len filtering" } else { "" }
        )));
    }
    rows.shrink();
    Ok(ReadTrace { rows, file: RowFile::new(file, keep, marks), offsets_us: offsets.out, filtered_out })
}

/// A line read with its end (`\n`, `\r\n`) as text, as `BufRead::lines` gives it.
fn line_text(line: &[u8]) -> std::io::Result<&str> {
    let line = line.strip_suffix(b"\n").map_or(line, |l| l.strip_suffix(b"\r").unwrap_or(l));
    std::str::from_utf8(line).map_err(|_| {
        std::io::Error::new(std::io::ErrorKind::InvalidData, "stream did not contain valid UTF-8")
    })
}

/// [`trace_offsets_us`] one row at a time.
struct OffsetsFrom {
    multiplier: f64,
    first: Option<f64>,
    prev: u64,
    out: Vec<u64>,
}

impl OffsetsFrom {
    fn new(multiplier: f64) -> Self {
        OffsetsFrom { multiplier, first: None, prev: 0, out: Vec::new() }
    }

    fn push(&mut self, timestamp_ms: f64) {
        let first = *self.first.get_or_insert(timestamp_ms);
        let us = (timestamp_ms - first) * self.multiplier * 1000.0;
        let us = if us.is_finite() && us > 0.0 { us.round() as u64 } else { 0 };
        self.prev = us.max(self.prev);
        self.out.push(self.prev);
    }
}

/// The kept rows' lengths (their hash ids are read again from the file, `reread`).
#[derive(Debug, Default)]
struct TraceRows {
    input: Vec<u32>,
    output: Vec<u32>,
}

impl TraceRows {
    fn len(&self) -> usize {
        self.input.len()
    }

    fn push(&mut self, row: &TraceRow) {
        self.input.push(row.input_length);
        self.output.push(row.output_length);
    }

    fn shrink(&mut self) {
        self.input.shrink_to_fit();
        self.output.shrink_to_fit();
    }
}

/// The requests of a trace, built on demand: request `i` is kept row `i`'s prompt (token ids)
/// with its lengths, as [`build_trace_workload`] builds it.
#[derive(Debug)]
pub struct TraceSource {
    rows: TraceRows,
    blocks: BlockTokens,
    file: RowFile,
}

impl RequestSource for TraceSource {
    fn len(&self) -> usize {
        self.rows.len()
    }

    fn lengths(&self, i: usize) -> (u32, u32) {
        let input = self.rows.input.get(i).copied().unwrap_or(0);
        (input, self.rows.output.get(i).copied().unwrap_or(0).max(1))
    }

    fn build(&self, i: usize) -> RequestSpec {
        let (input, output) = self.lengths(i);
        let checked = (input, self.rows.output.get(i).copied().unwrap_or(0));
        let hash_ids = self.file.hash_ids(i, checked).unwrap_or_default();
        let ids = self.blocks.prompt_of(input, hash_ids.into_iter(), i as u64);
        RequestSpec::new(i as u64, Prompt::TokenIds(ids.into()), input, output)
    }

    fn failure(&self) -> Option<String> {
        self.file
            .failure()
            .map(|why| format!("trace replay: {why}; its prompt was built from the lengths checked before"))
    }
}

#[cfg(test)]
mod reread_tests;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn blocks() -> BlockTokens {
        BlockTokens::new((100..1100u32).collect::<Vec<_>>().into(), 4, 7)
    }

    #[test]
    fn parses_rows_with_remapped_labels() {
        let labels = TraceLabels { timestamp: "t".into(), hash_ids: "h".into(), ..TraceLabels::default() };
        let text = "{\"t\": 0, \"input_length\": 8, \"output_length\": 2, \"h\": [1, 2]}\n\n\
                    {\"t\": 1500.5, \"input_length\": 3, \"output_length\": 1}\n";
        let rows = parse_trace(text, &labels).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].hash_ids, vec![1, 2]);
        assert!(rows[1].hash_ids.is_empty());
        assert_eq!(trace_offsets_us(&rows, 1.0), vec![0, 1_500_500]);
        assert_eq!(trace_offsets_us(&rows, 0.5), vec![0, 750_250]);
    }

    #[test]
    fn rejects_bad_rows() {
        let l = TraceLabels::default();
        assert!(parse_trace("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1}\n{\"timestamp\": 4, \"input_length\": 1, \"output_length\": 1}", &l).is_err());
        assert!(parse_trace("{\"input_length\": 1, \"output_length\": 1}", &l).is_err());
        assert!(parse_trace("{\"timestamp\": 1, \"input_length\": -1, \"output_length\": 1}", &l).is_err());
        assert!(parse_trace("not json", &l).is_err());
    }

    #[test]
    fn shared_hash_ids_give_shared_prefixes() {
        let b = blocks();
        let row =
            |h: Vec<u64>, n| TraceRow { timestamp_ms: 0.0, input_length: n, output_length: 1, hash_ids: h };
        let a = b.prompt(&row(vec![1, 2, 3], 12), 0);
        let c = b.prompt(&row(vec![1, 2, 9], 12), 1);
        assert_eq!(a.len(), 12);
        assert_eq!(a[..8], c[..8]);
        assert_ne!(a[8..], c[8..]);
        // Exactly chunk-size tokens per hash id; the last block is cut to the input length.
        assert_eq!(a[..4], b.block(1)[..]);
        assert_eq!(b.prompt(&row(vec![1, 2, 3], 6), 0), a[..6]);
        // Too few hash ids: the rest is unique to the row.
        let d = b.prompt(&row(vec![1], 10), 2);
        let e = b.prompt(&row(vec![1], 10), 3);
        assert_eq!(d[..4], e[..4]);
        assert_ne!(d[4..], e[4..]);
    }

    /// `block(42)` with ids 100..1100, chunk 4, seed 7 (printed once, then pinned).
    const PINNED_42: [u32; 4] = [379, 499, 261, 380];

    #[test]
    fn blocks_are_pure_functions_of_hash_and_seed() {
        // Pinned values: the same hash id and seed give the same tokens on every machine.
        let b = blocks();
        assert_eq!(b.block(42), blocks().block(42));
        assert_ne!(b.block(42), BlockTokens::new((100..1100u32).collect::<Vec<_>>().into(), 4, 8).block(42));
        assert_ne!(b.block(42), b.block(43));
        assert_eq!(b.block(42), PINNED_42);
    }
}

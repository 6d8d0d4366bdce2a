//! A trace's hash ids, read again from its file when a prompt is built: preparation streams
//! the file once (every line checked) and keeps, besides each kept row's lengths, only a mark
//! every [`MARK_EVERY`] kept rows (where its line starts); building row `i` reads forward from
//! the nearest mark at or before it, or from a cursor already there (the dispatcher's builder
//! asks in order, so a cursor reads each line once). The file stays open for the run: a trace
//! replaced by renaming is not seen; one rewritten in place while the run reads it gives
//! prompts of the new rows (cut or filled to the lengths checked before), and the run says so.

use std::fs::File;
use std::sync::Mutex;

use super::{parse_line, TraceClock, TraceLabels};

/// Kept rows between two marks.
pub(super) const MARK_EVERY: usize = 256;
/// Cursors kept open (the builder's, those of prompts built out of order, and one per thread
/// of an eager build: a thread that finds none near its row starts again from a mark).
const CURSORS: usize = 16;
/// Bytes read at a time.
const READ_BYTES: usize = 64 << 10;

/// Where kept row `k × MARK_EVERY` is: its line's first byte, its 0-based line number and the
/// non-empty rows before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Mark {
    pub at: u64,
    pub line: usize,
    pub seen: usize,
}

/// Which rows are kept: the first `num_prompts` non-empty rows that fit `max_model_len`.
#[derive(Debug, Clone)]
pub(super) struct Keep {
    pub labels: TraceLabels,
    pub num_prompts: usize,
    pub max_model_len: Option<u32>,
}

/// What becomes of a non-empty row ([`Keep::fate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fate {
    Kept,
    /// Over `max_model_len`: dropped.
    TooLong,
    /// Past the first `num_prompts` rows: not replayed.
    Past,
}

impl Keep {
    /// The fate of a non-empty row that has `seen` non-empty rows before it: the one rule of
    /// preparation's pass and of every cursor reading the file again.
    pub(super) fn fate(&self, seen: usize, row: &super::TraceRow) -> Fate {
        let fits = self.max_model_len.is_none_or(|limit| {
            u64::from(row.input_length) + u64::from(row.output_length) <= u64::from(limit)
        });
        match (seen < self.num_prompts, fits) {
            (false, _) => Fate::Past,
            (true, false) => Fate::TooLong,
            (true, true) => Fate::Kept,
        }
    }
}

/// The trace file, its marks, and cursors reading it.
#[derive(Debug)]
pub(super) struct RowFile {
    file: File,
    keep: Keep,
    marks: Vec<Mark>,
    cursors: Mutex<Vec<Cursor>>,
    /// The first row that did not read back as it was checked.
    failure: Mutex<Option<String>>,
}

/// A position in the file: the next kept row and where its search starts.
#[derive(Debug)]
struct Cursor {
    next_row: usize,
    at: u64,
    line: usize,
    seen: usize,
    buf: Vec<u8>,
    /// Where `buf[0]` is in the file.
    buf_at: u64,
}

impl RowFile {
    pub(super) fn new(file: File, keep: Keep, mut marks: Vec<Mark>) -> Self {
        marks.shrink_to_fit();
        RowFile { file, keep, marks, cursors: Mutex::new(Vec::new()), failure: Mutex::new(None) }
    }

    /// Bytes held for the marks.
    #[cfg(test)]
    pub(super) fn marks(&self) -> &[Mark] {
        &self.marks
    }

    /// The hash ids of kept row `row`, whose lengths were checked as `lengths` (`None` when it
    /// does not read back as it was: noted, see [`RowFile::failure`]).
    pub(super) fn hash_ids(&self, row: usize, lengths: (u32, u32)) -> Option<Vec<u64>> {
        let mut cursor = self.cursor_for(row);
        let got = cursor.as_mut().map_err(|e| e.to_string()).and_then(|c| c.read_row(self, row));
        // A cursor whose read failed may stand past the line it could not use: not kept.
        if let (Ok(c), true) = (cursor, got.is_ok()) {
            let mut pool = self.cursors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if pool.len() < CURSORS {
                pool.push(c);
            }
        }
        match got {
            Ok(r) if (r.input_length, r.output_length) == lengths => Some(r.hash_ids),
            Ok(r) => {
                self.note(format!(
                    "row {} reads back with lengths {} / {} (checked as {} / {}): the file changed during the run",
                    row + 1,
                    r.input_length,
                    r.output_length,
                    lengths.0,
                    lengths.1
                ));
                Some(r.hash_ids)
            }
            Err(e) => {
                self.note(format!("row {} could not be read back ({e})", row + 1));
                None
            }
        }
    }

    /// Why a prompt was not built from its row as checked (the first such row).
    pub(super) fn failure(&self) -> Option<String> {
        self.failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    fn note(&self, why: String) {
        let mut failure = self.failure.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        failure.get_or_insert(why);
    }

    /// A cursor at or before `row` within a mark's distance, else one moved to the mark.
    fn cursor_for(&self, row: usize) -> std::io::Result<Cursor> {
        let mark_no = row / MARK_EVERY;
        let taken = {
            let mut pool = self.cursors.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let near = pool
                .iter()
                .enumerate()
                .filter(|(_, c)| c.next_row <= row && row - c.next_row < MARK_EVERY)
                .min_by_key(|(_, c)| row - c.next_row)
                .map(|(k, _)| k);
            near.map(|k| pool.swap_remove(k)).or_else(|| pool.pop())
        };
        let mut cursor = taken.unwrap_or_else(Cursor::empty);
        if !(cursor.next_row <= row && row - cursor.next_row < MARK_EVERY) {
            let mark = self.marks.get(mark_no).copied().ok_or_else(|| {
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("no row {} in the trace", row + 1))
            })?;
            cursor.move_to(mark, mark_no * MARK_EVERY);
        }
        Ok(cursor)
    }
}

impl Cursor {
    fn empty() -> Self {
        Cursor { next_row: usize::MAX, at: 0, line: 0, seen: 0, buf: Vec::new(), buf_at: 0 }
    }

    fn move_to(&mut self, mark: Mark, row: usize) {
        (self.next_row, self.at, self.line, self.seen) = (row, mark.at, mark.line, mark.seen);
    }

    /// Reads on to kept row `row` (at or after the cursor) and parses it.
    fn read_row(&mut self, file: &RowFile, row: usize) -> Result<super::TraceRow, String> {
        let keep = &file.keep;
        loop {
            let line_no = self.line + 1;
            let Some(line) = self.next_line(&file.file).map_err(|e| e.to_string())? else {
                return Err(format!("the file ends before row {}", row + 1));
            };
            // Split and checked as preparation did (`line_text`, as `BufRead::lines`).
            let text = super::line_text(&line).map_err(|e| format!("line {line_no}: {e}"))?;
            let text = if line_no == 1 { crate::dataset::file::strip_bom(text) } else { text };
            let mut clock = TraceClock::new(0.0);
            let parsed =
                parse_line(text, line_no, &keep.labels, &mut clock, true).map_err(|e| e.to_string())?;
            let Some(parsed) = parsed else { continue };
            let fate = keep.fate(self.seen, &parsed);
            self.seen += 1;
            match fate {
                Fate::Past => return Err(format!("the file has no row {} to replay", row + 1)),
                Fate::TooLong => continue,
                Fate::Kept => {}
            }
            let this = self.next_row;
            self.next_row += 1;
            if this == row {
                return Ok(parsed);
            }
        }
    }

    /// The line at the cursor with its `\n` (none after the last line), the cursor moved past
    /// it; `None` at the end of the file.
    fn next_line(&mut self, file: &File) -> std::io::Result<Option<Vec<u8>>> {
        let mut want = READ_BYTES;
        loop {
            let from = self.at.checked_sub(self.buf_at).and_then(|d| usize::try_from(d).ok());
            let held = from.and_then(|f| self.buf.get(f..));
            if let Some(rest) = held {
                if let Some(nl) = rest.iter().position(|&b| b == b'\n') {
                    let line = rest.get(..=nl).unwrap_or_default().to_vec();
                    self.at += nl as u64 + 1;
                    self.line += 1;
                    return Ok(Some(line));
                }
                want = want.max(rest.len() * 2);
            }
            let got = self.fill(file, want)?;
            if got == 0 || self.buf.len() < want {
                // The end of the file: what is left is the last line (no newline after it).
                let from = usize::try_from(self.at - self.buf_at).unwrap_or(usize::MAX);
                let rest = self.buf.get(from..).unwrap_or_default();
                if rest.contains(&b'\n') {
                    continue;
                }
                if rest.is_empty() {
                    return Ok(None);
                }
                let line = rest.to_vec();
                self.at += rest.len() as u64;
                self.line += 1;
                return Ok(Some(line));
            }
        }
    }

    /// Reads up to `want` bytes from the cursor into the buffer; how many.
    fn fill(&mut self, file: &File, want: usize) -> std::io::Result<usize> {
        self.buf.resize(want, 0);
        let got = servebench_core::file_at::read_up_to(file, &mut self.buf, self.at)?;
        self.buf.truncate(got);
        self.buf_at = self.at;
        Ok(got)
    }
}

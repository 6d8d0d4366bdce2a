//! A streaming reader of CSV records, RFC 4180 as pandas reads it: fields separated by commas; a
//! field that starts with `"` is quoted (it may hold commas, line breaks, and `""` for a quote);
//! unquoted fields are trimmed; CRLF line ends; blank lines are skipped; a leading UTF-8 BOM is
//! dropped. Records are read one at a time from a [`BufRead`], so a 2-million-row BurstGPT file
//! is never held whole (reading the file into one string and splitting it into records first
//! took 686 MB for a 153 MB file).

use std::io::BufRead;

/// One record: the line it starts on (1-based) and its fields.
pub type Record = (usize, Vec<String>);

/// Why a record could not be read.
#[derive(Debug)]
pub enum CsvError {
    /// A quoted field is never closed; the line its record starts on.
    UnclosedQuote(usize),
    /// Invalid UTF-8: the line, and the byte offset in the file.
    Utf8 { line: usize, offset: u64 },
    /// The file could not be read.
    Io(std::io::Error),
}

/// The records of a CSV input, in order (see the module documentation).
#[derive(Debug)]
pub struct CsvRecords<R> {
    input: R,
    /// The bytes of the line being read (reused).
    buf: Vec<u8>,
    /// Lines read so far.
    line: usize,
    /// Bytes read so far.
    offset: u64,
    done: bool,
}

impl<R: BufRead> CsvRecords<R> {
    pub fn new(input: R) -> Self {
        CsvRecords { input, buf: Vec::new(), line: 0, offset: 0, done: false }
    }

    /// The next line as text, `None` at the end of the input.
    fn next_line(&mut self) -> Result<Option<&str>, CsvError> {
        self.buf.clear();
        let n = self.input.read_until(b'\n', &mut self.buf).map_err(CsvError::Io)?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        let text = std::str::from_utf8(&self.buf)
            .map_err(|e| CsvError::Utf8 { line: self.line, offset: self.offset + e.valid_up_to() as u64 })?;
        self.offset += n as u64;
        Ok(Some(if self.line == 1 { super::file::strip_bom(text) } else { text }))
    }

    fn read_record(&mut self) -> Result<Option<Record>, CsvError> {
        let mut record = RecordState::new(self.line + 1);
        loop {
            let at = self.line + 1;
            let Some(line) = self.next_line()? else {
                return record.finish();
            };
            if record.blank && !record.in_quotes {
                record.start = at;
            }
            if record.push_line(line) {
                return Ok(Some((record.start, record.fields)));
            }
        }
    }
}

impl<R: BufRead> Iterator for CsvRecords<R> {
    type Item = Result<Record, CsvError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let next = self.read_record().transpose();
        self.done = !matches!(next, Some(Ok(_)));
        next
    }
}

/// A record being read, across the lines a quoted field spans.
struct RecordState {
    start: usize,
    fields: Vec<String>,
    field: String,
    quoted: bool,
    in_quotes: bool,
    blank: bool,
}

impl RecordState {
    fn new(start: usize) -> Self {
        RecordState {
            start,
            fields: Vec::new(),
            field: String::new(),
            quoted: false,
            in_quotes: false,
            blank: true,
        }
    }

    fn end_field(&mut self) {
        let f = std::mem::take(&mut self.field);
        self.fields.push(if self.quoted { f } else { f.trim().to_string() });
        self.quoted = false;
    }

    /// Reads one line into the record; true when it completed a record (a blank line completes
    /// none and is skipped).
    fn push_line(&mut self, line: &str) -> bool {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            if self.in_quotes {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        self.field.push('"');
                    }
                    '"' => self.in_quotes = false,
                    _ => self.field.push(c),
                }
                continue;
            }
            match c {
                '"' if self.field.trim().is_empty() && !self.quoted => {
                    self.field.clear();
                    (self.quoted, self.in_quotes, self.blank) = (true, true, false);
                }
                ',' => {
                    self.end_field();
                    self.blank = false;
                }
                '\n' => {
                    if !self.blank || !self.field.trim().is_empty() {
                        self.end_field();
                        return true;
                    }
                    self.field.clear();
                    self.quoted = false;
                }
                '\r' if chars.peek() == Some(&'\n') => {}
                _ => {
                    self.blank &= c.is_whitespace();
                    self.field.push(c);
                }
            }
        }
        false
    }

    /// The record at the end of the input (a last line without its line end), if any.
    fn finish(mut self) -> Result<Option<Record>, CsvError> {
        if self.in_quotes {
            return Err(CsvError::UnclosedQuote(self.start));
        }
        if !self.blank || !self.field.trim().is_empty() {
            self.end_field();
            return Ok(Some((self.start, self.fields)));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str) -> Result<Vec<Record>, CsvError> {
        CsvRecords::new(text.as_bytes()).collect()
    }

    fn fields(rows: &[Record]) -> Vec<(usize, Vec<&str>)> {
        rows.iter().map(|(l, f)| (*l, f.iter().map(String::as_str).collect())).collect()
    }

    #[test]
    fn reads_quoted_fields_across_lines_and_skips_blank_lines() {
        let text = "\u{feff}a, b ,\"c\"\r\n\r\n  \n1,\"x, \"\"y\"\"\nz\",3\n4,5,6";
        let rows = records(text).unwrap();
        assert_eq!(
            fields(&rows),
            [(1, vec!["a", "b", "c"]), (4, vec!["1", "x, \"y\"\nz", "3"]), (6, vec!["4", "5", "6"])]
        );
    }

    #[test]
    fn an_unclosed_quote_names_the_line_its_record_starts_on() {
        match records("h\n\n\"open\nmore\n") {
            Err(CsvError::UnclosedQuote(3)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn invalid_utf8_names_its_line_and_offset() {
        let bytes = b"h\nok\n\xff\n";
        match CsvRecords::new(&bytes[..]).collect::<Result<Vec<_>, _>>() {
            Err(CsvError::Utf8 { line: 3, offset: 5 }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn empty_and_blank_inputs_have_no_records() {
        assert!(records("").unwrap().is_empty());
        assert!(records("\n \r\n").unwrap().is_empty());
    }
}

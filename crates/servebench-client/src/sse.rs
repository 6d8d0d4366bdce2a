//! Incremental Server-Sent Events framing over raw body bytes.
//!
//! The framer follows the WHATWG event-stream rules that matter for LLM servers:
//! lines end with LF, CRLF or a lone CR (a CRLF split across two frames is one line end);
//! `data:` with or without the single leading space; several `data` lines joined with `\n`;
//! `:` comment lines (keep-alives, counted); `event:` names; `id:`/`retry:` ignored; a leading
//! UTF-8 BOM stripped. It works on bytes and validates UTF-8 once per complete event, so a
//! multibyte character split across frames is never corrupted. Scanning resumes where the last
//! scan stopped, so an event that arrives in many small pieces costs linear time, and one
//! event is bounded in size so a misbehaving server cannot exhaust memory.
//!
//! Usage on the hot path (pull style, no allocation per event beyond the reused buffers):
//!
//! ```
//! use servebench_client::sse::SseFramer;
//! let mut f = SseFramer::new();
//! f.push(b"data: {\"a\":1}\n\ndata: [DO");
//! while let Some(ev) = f.next_event().unwrap() {
//!     assert_eq!(ev.data, "{\"a\":1}");
//! }
//! f.push(b"NE]\n");
//! f.finish(); // end of body: the last event may lack its blank line
//! assert_eq!(f.next_event().unwrap().map(|e| e.data.to_owned()), Some("[DONE]".to_owned()));
//! ```

use std::fmt;

/// Default bound on one event (data plus the current line): 1 MiB.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A complete event, borrowed from the framer until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The `event:` name, if the event had one.
    pub event: Option<&'a str>,
    /// The data lines joined with `\n`.
    pub data: &'a str,
}

/// An owned event (for tests and non-hot-path users).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnedSseEvent {
    pub event: Option<String>,
    pub data: String,
}

impl From<SseEvent<'_>> for OwnedSseEvent {
    fn from(e: SseEvent<'_>) -> Self {
        OwnedSseEvent { event: e.event.map(str::to_owned), data: e.data.to_owned() }
    }
}

/// Why framing failed. After an error the framer stays failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseError {
    /// One event (or one line) exceeded the configured bound.
    EventTooLarge { limit: usize },
    /// An event's data or name was not valid UTF-8.
    InvalidUtf8,
}

impl fmt::Display for SseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SseError::EventTooLarge { limit } => write!(f, "SSE event larger than {limit} bytes"),
            SseError::InvalidUtf8 => f.write_str("SSE event is not valid UTF-8"),
        }
    }
}

impl std::error::Error for SseError {}

/// Incremental SSE framer. See the module documentation.
#[derive(Debug)]
pub struct SseFramer {
    /// Received bytes not yet consumed; `buf[line_start..]` is the current, incomplete line.
    buf: Vec<u8>,
    /// Start of the current line in `buf`.
    line_start: usize,
    /// Bytes of `buf` before this were already searched for a line end.
    scan: usize,
    /// The previous line ended with a CR that was the last byte seen: skip one leading LF.
    skip_lf: bool,
    /// Still at the very start of the stream (a BOM may follow).
    at_start: bool,
    /// Data of the event being built (lines joined with `\n`).
    data: Vec<u8>,
    /// Whether any `data` field was seen in the event being built.
    has_data: bool,
    /// The `event` field of the event being built.
    event: Vec<u8>,
    has_event: bool,
    /// The event that `next_event` returned last; its buffers are cleared on the next call.
    dispatched: bool,
    /// End of input: the remaining bytes form a last line, the pending event is dispatched.
    eof: bool,
    eof_done: bool,
    failed: Option<SseError>,
    max_event_bytes: usize,
    comments: u64,
    events: u64,
    /// The first [`HEAD_BYTES`] bytes pushed (to say what a body that is not SSE began with).
    head: Vec<u8>,
}

/// Bytes of the start of a stream kept for messages ([`SseFramer::head`]).
pub const HEAD_BYTES: usize = 64;

impl Default for SseFramer {
    fn default() -> Self {
        Self::new()
    }
}

impl SseFramer {
    /// A framer with the default event bound ([`DEFAULT_MAX_EVENT_BYTES`]).
    pub fn new() -> Self {
        Self::with_max_event_bytes(DEFAULT_MAX_EVENT_BYTES)
    }

    /// A framer that fails with [`SseError::EventTooLarge`] when one event exceeds `max` bytes.
    pub fn with_max_event_bytes(max: usize) -> Self {
        // Buffers start empty and grow to the largest frame/event seen: one framer lives per
        // in-flight stream, and LLM events are a few hundred bytes.
        SseFramer {
            buf: Vec::new(),
            line_start: 0,
            scan: 0,
            skip_lf: false,
            at_start: true,
            data: Vec::new(),
            has_data: false,
            event: Vec::new(),
            has_event: false,
            dispatched: false,
            eof: false,
            eof_done: false,
            failed: None,
            max_event_bytes: max.max(1),
            comments: 0,
            events: 0,
            head: Vec::new(),
        }
    }

    /// The first bytes pushed (at most [`HEAD_BYTES`]).
    pub fn head(&self) -> &[u8] {
        &self.head
    }

    /// Whether bytes arrived but not one event or comment could be read from them: the body is
    /// not server-sent events at all (a JSON answer, an HTML page).
    pub fn not_sse(&self) -> bool {
        self.events == 0 && self.comments == 0 && !self.head.is_empty()
    }

    /// Number of `:` comment lines seen (server keep-alives).
    pub fn comments(&self) -> u64 {
        self.comments
    }

    /// Number of events dispatched so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Appends received bytes. Call [`next_event`](Self::next_event) until it returns `None`
    /// before pushing more (pushing without draining is allowed, just buffers more).
    pub fn push(&mut self, bytes: &[u8]) {
        if self.eof || bytes.is_empty() {
            return;
        }
        if self.head.len() < HEAD_BYTES {
            let room = HEAD_BYTES - self.head.len();
            self.head.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        self.compact();
        self.buf.extend_from_slice(bytes);
    }

    /// Marks the end of the input: the bytes after the last line end form a final line, and a
    /// pending event is dispatched even without its terminating blank line (lenient: some
    /// servers end with `data: [DONE]\n`).
    pub fn finish(&mut self) {
        self.eof = true;
    }

    /// Feeds `bytes` and returns every event completed by them (owned; convenience for tests
    /// and cold paths).
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<OwnedSseEvent>, SseError> {
        self.push(bytes);
        self.drain()
    }

    /// [`finish`](Self::finish) and return the remaining events (owned).
    pub fn finish_owned(&mut self) -> Result<Vec<OwnedSseEvent>, SseError> {
        self.finish();
        self.drain()
    }

    fn drain(&mut self) -> Result<Vec<OwnedSseEvent>, SseError> {
        let mut out = Vec::new();
        while let Some(e) = self.next_event()? {
            out.push(e.into());
        }
        Ok(out)
    }

    /// Drops consumed bytes from the front of the buffer (cheaply: usually everything was
    /// consumed; otherwise only the incomplete line is moved).
    fn compact(&mut self) {
        if self.line_start == 0 {
            return;
        }
        if self.line_start >= self.buf.len() {
            self.buf.clear();
        } else {
            self.buf.drain(..self.line_start);
        }
        self.scan = self.scan.saturating_sub(self.line_start);
        self.line_start = 0;
    }

    /// The next complete event, or `None` when more input is needed (or, after `finish`, when
    /// the stream is exhausted).
    pub fn next_event(&mut self) -> Result<Option<SseEvent<'_>>, SseError> {
        if let Some(e) = self.failed {
            return Err(e);
        }
        if self.dispatched {
            self.data.clear();
            self.event.clear();
            self.has_data = false;
            self.has_event = false;
            self.dispatched = false;
        }
        match self.advance() {
            Ok(true) => {}
            Ok(false) => return Ok(None),
            Err(e) => {
                self.failed = Some(e);
                return Err(e);
            }
        }
        self.dispatched = true;
        self.events += 1;
        let data = std::str::from_utf8(&self.data).map_err(|_| SseError::InvalidUtf8);
        let event = if self.has_event {
            Some(std::str::from_utf8(&self.event).map_err(|_| SseError::InvalidUtf8))
        } else {
            None
        };
        let (data, event) = match (data, event.transpose()) {
            (Ok(d), Ok(e)) => (d, e),
            _ => {
                self.failed = Some(SseError::InvalidUtf8);
                return Err(SseError::InvalidUtf8);
            }
        };
        Ok(Some(SseEvent { event, data }))
    }

    /// Processes lines until an event is ready to dispatch (`true`) or input runs out.
    fn advance(&mut self) -> Result<bool, SseError> {
        loop {
            if self.skip_lf && self.line_start < self.buf.len() {
                if self.buf[self.line_start] == b'\n' {
                    self.line_start += 1;
                    self.scan = self.scan.max(self.line_start);
                }
                self.skip_lf = false;
            }
            if self.at_start {
                let avail = &self.buf[self.line_start..];
                if avail.len() < BOM.len() && BOM.starts_with(avail) && !self.eof {
                    return Ok(false); // could still become a BOM
                }
                if avail.starts_with(BOM) {
                    self.line_start += BOM.len();
                    self.scan = self.scan.max(self.line_start);
                }
                if !avail.is_empty() || self.eof {
                    self.at_start = false;
                }
            }
            let from = self.scan.max(self.line_start);
            let found = memchr::memchr2(b'\n', b'\r', &self.buf[from..]).map(|i| from + i);
            let (line_end, next) = match found {
                Some(i) => {
                    let next = if self.buf[i] == b'\r' {
                        match self.buf.get(i + 1) {
                            Some(b'\n') => i + 2,
                            Some(_) => i + 1,
                            None => {
                                self.skip_lf = true;
                                i + 1
                            }
                        }
                    } else {
                        i + 1
                    };
                    (i, next)
                }
                None => {
                    self.scan = self.buf.len();
                    let pending = self.buf.len() - self.line_start;
                    if pending + self.data.len() > self.max_event_bytes {
                        return Err(SseError::EventTooLarge { limit: self.max_event_bytes });
                    }
                    if !self.eof {
                        return Ok(false);
                    }
                    if self.eof_done {
                        return Ok(false);
                    }
                    self.eof_done = true;
                    if pending > 0 {
                        let (s, e) = (self.line_start, self.buf.len());
                        self.line_start = e;
                        self.scan = e;
                        self.process_line(s, e)?;
                    }
                    return Ok(self.has_data);
                }
            };
            let start = self.line_start;
            // The same bound as on an incomplete line above, so that whether a long line fails
            // never depends on where the network cut the bytes (found by fuzzing).
            if line_end - start + self.data.len() > self.max_event_bytes {
                return Err(SseError::EventTooLarge { limit: self.max_event_bytes });
            }
            self.line_start = next;
            self.scan = next;
            if line_end == start {
                // Blank line: dispatch if any data was seen, else reset the event name.
                if self.has_data {
                    return Ok(true);
                }
                self.event.clear();
                self.has_event = false;
                continue;
            }
            self.process_line(start, line_end)?;
        }
    }

    fn process_line(&mut self, start: usize, end: usize) -> Result<(), SseError> {
        let line = &self.buf[start..end];
        if line[0] == b':' {
            self.comments += 1;
            return Ok(());
        }
        let (name, value) = match memchr::memchr(b':', line) {
            Some(c) => {
                let v = &line[c + 1..];
                (&line[..c], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &line[line.len()..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.has_data = true;
                if self.data.len() + value.len() > self.max_event_bytes {
                    return Err(SseError::EventTooLarge { limit: self.max_event_bytes });
                }
                self.data.extend_from_slice(value);
            }
            b"event" => {
                self.event.clear();
                self.event.extend_from_slice(value);
                self.has_event = true;
            }
            _ => {} // id, retry and unknown fields are ignored
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ev(data: &str) -> OwnedSseEvent {
        OwnedSseEvent { event: None, data: data.into() }
    }

    fn all(bytes: &[u8]) -> Vec<OwnedSseEvent> {
        let mut f = SseFramer::new();
        let mut v = f.feed(bytes).unwrap();
        v.extend(f.finish_owned().unwrap());
        v
    }

    #[test]
    fn basic_lf_and_done() {
        let v = all(b"data: {\"x\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(v, vec![ev("{\"x\":1}"), ev("[DONE]")]);
    }

    #[test]
    fn crlf_and_lone_cr() {
        assert_eq!(all(b"data: a\r\n\r\ndata: b\r\rdata:c\n\n"), vec![ev("a"), ev("b"), ev("c")]);
    }

    #[test]
    fn crlf_split_across_frames_is_one_line_end() {
        let mut f = SseFramer::new();
        assert!(f.feed(b"data: a\r").unwrap().is_empty());
        // The LF completes the CRLF; only the next CR/LF is the blank line.
        assert!(f.feed(b"\n").unwrap().is_empty());
        assert_eq!(f.feed(b"\r\n").unwrap(), vec![ev("a")]);
        let mut f = SseFramer::new();
        assert!(f.feed(b"data: a\r\n\r").unwrap().len() == 1);
        assert!(f.feed(b"\ndata: b\n\n").unwrap() == vec![ev("b")]);
    }

    #[test]
    fn data_without_space_multiline_and_fields() {
        let v = all(b"event: delta\nid: 7\nretry: 10\ndata:one\ndata:  two\ndata\n\n");
        assert_eq!(v, vec![OwnedSseEvent { event: Some("delta".into()), data: "one\n two\n".into() }]);
    }

    #[test]
    fn comments_are_counted_not_dispatched() {
        let mut f = SseFramer::new();
        let v = f.feed(b": ping\n\n:\n\ndata: x\n\n").unwrap();
        assert_eq!(v, vec![ev("x")]);
        assert_eq!(f.comments(), 2);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_name_resets() {
        assert_eq!(all(b"event: foo\n\ndata: x\n\n"), vec![ev("x")]);
    }

    #[test]
    fn finish_dispatches_unterminated_event() {
        assert_eq!(all(b"data: a\n\ndata: [DONE]\n"), vec![ev("a"), ev("[DONE]")]);
        assert_eq!(all(b"data: [DONE]"), vec![ev("[DONE]")]);
        assert_eq!(all(b"data: a\n\n"), vec![ev("a")]);
        assert!(all(b"").is_empty());
    }

    #[test]
    fn bom_is_stripped_even_when_split() {
        let mut f = SseFramer::new();
        assert!(f.feed(b"\xEF").unwrap().is_empty());
        assert!(f.feed(b"\xBB\xBFdata: a\n").unwrap().is_empty());
        assert_eq!(f.feed(b"\n").unwrap(), vec![ev("a")]);
    }

    #[test]
    fn utf8_split_across_frames() {
        let s = "data: héllo 世界 🦀\n\n".as_bytes();
        let mut f = SseFramer::new();
        let mut out = Vec::new();
        for b in s {
            out.extend(f.feed(std::slice::from_ref(b)).unwrap());
        }
        assert_eq!(out, vec![ev("héllo 世界 🦀")]);
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut f = SseFramer::new();
        assert_eq!(f.feed(b"data: \xFF\n\n"), Err(SseError::InvalidUtf8));
        assert!(f.next_event().is_err());
    }

    #[test]
    fn event_size_is_bounded() {
        let mut f = SseFramer::with_max_event_bytes(16);
        assert!(f.feed(b"data: 0123456789").unwrap().is_empty());
        assert_eq!(f.feed(b"abcdefgh"), Err(SseError::EventTooLarge { limit: 16 }));
        let mut f = SseFramer::with_max_event_bytes(16);
        assert_eq!(
            f.feed(b"data: 0123456789\ndata: 0123456789\n"),
            Err(SseError::EventTooLarge { limit: 16 })
        );
        // Small events keep flowing under the bound.
        let mut f = SseFramer::with_max_event_bytes(16);
        for _ in 0..1000 {
            assert_eq!(f.feed(b"data: 0123456789\n\n").unwrap().len(), 1);
        }
    }

    #[test]
    fn long_line_bound_does_not_depend_on_chunk_boundaries() {
        // Fuzzing found: a long line of an ignored field (or comment, or `event:`) failed the
        // bound when it arrived in pieces but passed when it arrived whole with its line end.
        let stream = b"x-field: 0123456789abcdef\n\ndata: ok\n\n";
        let mut whole = SseFramer::with_max_event_bytes(8);
        assert_eq!(whole.feed(stream), Err(SseError::EventTooLarge { limit: 8 }));
        let mut pieces = SseFramer::with_max_event_bytes(8);
        assert_eq!(pieces.feed(&stream[..12]), Err(SseError::EventTooLarge { limit: 8 }));
        // Lines within the bound pass either way.
        let mut f = SseFramer::with_max_event_bytes(8);
        assert_eq!(f.feed(b": ping\ndata: ok\n\n").unwrap(), vec![ev("ok")]);
    }

    #[test]
    fn many_small_pieces_are_linear() {
        // 200 KB event in 1-byte pieces: the scan resumes, so this finishes quickly.
        let mut f = SseFramer::new();
        let big = vec![b'x'; 200_000];
        f.push(b"data: ");
        for b in &big {
            f.push(std::slice::from_ref(b));
            assert!(f.next_event().unwrap().is_none());
        }
        let v = f.feed(b"\n\n").unwrap();
        assert_eq!(v[0].data.len(), 200_000);
    }

    fn stream_strategy() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just("data: ".to_string()),
            Just("data:".to_string()),
            Just("event: e".to_string()),
            Just(": ka".to_string()),
            Just("id: 1".to_string()),
            Just("\n".to_string()),
            Just("\r\n".to_string()),
            Just("\r".to_string()),
            Just("{\"t\":\"é世🦀\"}".to_string()),
            Just("[DONE]".to_string()),
            "[a-z ]{0,8}".prop_map(|s| s),
            Just("ü".to_string()),
        ];
        proptest::collection::vec(piece, 0..40).prop_map(|v| v.concat().into_bytes())
    }

    proptest! {
        #[test]
        fn any_split_yields_same_events(stream in stream_strategy(), cuts in proptest::collection::vec(any::<usize>(), 0..12)) {
            let whole = all(&stream);
            let mut points: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
            points.sort_unstable();
            let mut f = SseFramer::new();
            let mut got = Vec::new();
            let mut prev = 0;
            for p in points {
                got.extend(f.feed(&stream[prev..p]).unwrap());
                prev = p;
            }
            got.extend(f.feed(&stream[prev..]).unwrap());
            got.extend(f.finish_owned().unwrap());
            prop_assert_eq!(got, whole);
        }
    }
}

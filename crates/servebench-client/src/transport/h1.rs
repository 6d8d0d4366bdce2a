//! HTTP/1.1 message codec, pure (no I/O): request serialisation, response-head parsing and
//! body decoding (`Content-Length`, `chunked`, read-until-close).
//!
//! Why our own rather than hyper's client dispatcher: on the hot path every SSE event is one
//! small chunk. hyper hands each chunk to the body through a channel as a freshly allocated
//! `Bytes`; here the decoder works in place on the connection's read buffer and the caller
//! gets a borrowed slice, so a streamed event costs one socket read and no allocation. The
//! decoder is a small state machine tested on every split of its input (see the tests).

use http::header::{HeaderMap, HeaderName, HeaderValue, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use http::{Request, StatusCode};

use super::error::{BodyError, HeadParseError};
use super::limits::{MAX_HEADERS, MAX_HEAD_BYTES, MAX_LINE_BYTES};

/// Appends the request head (request line, headers, `content-length`) to `out`.
/// A caller-supplied `content-length`/`transfer-encoding` is replaced by the body's length.
pub(crate) fn write_request_head(req: &Request<bytes::Bytes>, out: &mut Vec<u8>) {
    out.extend_from_slice(req.method().as_str().as_bytes());
    out.push(b' ');
    // Absolute-form (through an `http` proxy): scheme and authority first.
    if let (Some(scheme), Some(authority)) = (req.uri().scheme_str(), req.uri().authority()) {
        out.extend_from_slice(scheme.as_bytes());
        out.extend_from_slice(b"://");
        out.extend_from_slice(authority.as_str().as_bytes());
    }
    let target = req.uri().path_and_query().map(|p| p.as_str()).unwrap_or("/");
    out.extend_from_slice(target.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for (name, value) in req.headers() {
        if name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    let body_len = req.body().len();
    if body_len > 0 || !matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
        out.extend_from_slice(b"content-length: ");
        out.extend_from_slice(body_len.to_string().as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// A parsed response head.
#[derive(Debug)]
pub(crate) struct ResponseHead {
    pub status: StatusCode,
    pub headers: HeaderMap,
    /// How the body is delimited.
    pub body: BodyDecoder,
    /// The connection cannot carry another request after this response.
    pub close: bool,
    /// What the server said of keeping the connection (`Keep-Alive: timeout=5, max=100`).
    pub keep_alive: KeepAlive,
}

/// The server's `Keep-Alive` parameters (RFC 2068 §19.7.1.1, as servers still send them): how
/// long it keeps an idle connection open, and how many requests it takes on one. Absent or
/// unreadable parameters are `None` (no limit known).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct KeepAlive {
    pub timeout: Option<std::time::Duration>,
    pub max: Option<u32>,
}

impl KeepAlive {
    /// The parameters of every `Keep-Alive` header in `headers` (the last value of each wins).
    pub(crate) fn of(headers: &HeaderMap) -> KeepAlive {
        let mut k = KeepAlive::default();
        let params =
            headers.get_all("keep-alive").iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(','));
        for param in params {
            let Some((name, value)) = param.split_once('=') else { continue };
            let value = value.trim().trim_matches('"');
            match name.trim().to_ascii_lowercase().as_str() {
                "timeout" => {
                    if let Ok(s) = value.parse::<u64>() {
                        k.timeout = Some(std::time::Duration::from_secs(s));
                    }
                }
                "max" => {
                    if let Ok(n) = value.parse::<u32>() {
                        k.max = Some(n);
                    }
                }
                _ => {}
            }
        }
        k
    }
}

/// The outcome of [`parse_head`].
#[derive(Debug)]
pub(crate) enum HeadParse {
    /// A complete head of `len` bytes (an interim 1xx head is reported as `Interim`).
    Complete { head: Box<ResponseHead>, len: usize },
    /// A 1xx interim response of `len` bytes, to be skipped.
    Interim { len: usize },
    /// More bytes are needed.
    Partial,
}

/// Parses a response head at the start of `buf`. `head_request`: the request was `HEAD`.
pub(crate) fn parse_head(buf: &[u8], head_request: bool) -> Result<HeadParse, HeadParseError> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut slots);
    // RFC 9112 §5.2: a user agent accepts obs-fold continuation lines (unfolded below).
    let parsed = httparse::ParserConfig::default()
        .allow_obsolete_multiline_headers_in_responses(true)
        .parse_response(&mut resp, buf);
    let len = match parsed {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            if buf.len() > MAX_HEAD_BYTES {
                return Err(HeadParseError::TooLarge);
            }
            return Ok(HeadParse::Partial);
        }
        Err(e) => return Err(refused_answer(buf).map_or(HeadParseError::Syntax(e), HeadParseError::NotHttp1)),
    };
    let code = resp.code.unwrap_or(0);
    let status = StatusCode::from_u16(code).map_err(|_| HeadParseError::Status(code))?;
    if status.is_informational() && code != 101 {
        return Ok(HeadParse::Interim { len });
    }
    let http10 = resp.version == Some(0);
    let mut headers = HeaderMap::with_capacity(resp.headers.len());
    for h in resp.headers.iter() {
        let name = HeaderName::from_bytes(h.name.as_bytes())
            .map_err(|_| HeadParseError::HeaderName(h.name.to_owned()))?;
        let value = if h.value.iter().any(|&b| b == b'\r' || b == b'\n') {
            unfold(h.value)
        } else {
            HeaderValue::from_bytes(h.value)
        };
        let value = value.map_err(|_| HeadParseError::HeaderValue(h.name.to_owned()))?;
        headers.append(name, value);
    }
    let tokens = |name: HeaderName| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty())
            .collect()
    };
    let connection = tokens(CONNECTION);
    let mut close = if http10 {
        !connection.iter().any(|t| t == "keep-alive")
    } else {
        connection.iter().any(|t| t == "close")
    };
    let body = if head_request || code == 204 || code == 304 || code == 101 {
        BodyDecoder::Length(0)
    } else if let Some(last) = tokens(TRANSFER_ENCODING).last() {
        // `gzip, chunked` is gzip inside chunks: no event could be read from it undecoded.
        let codings = tokens(TRANSFER_ENCODING);
        if codings.iter().any(|t| t != "chunked" && t != "identity") {
            return Err(HeadParseError::TransferCoding(codings.join(", ")));
        }
        if last == "chunked" {
            BodyDecoder::chunked()
        } else {
            close = true;
            BodyDecoder::UntilClose
        }
    } else if headers.contains_key(CONTENT_LENGTH) {
        BodyDecoder::Length(content_length(&headers)?)
    } else {
        close = true;
        BodyDecoder::UntilClose
    };
    let keep_alive = KeepAlive::of(&headers);
    Ok(HeadParse::Complete { head: Box::new(ResponseHead { status, headers, body, close, keep_alive }), len })
}

/// The body length of a response with `Content-Length`. Repeated identical values, in one
/// header ("12, 12") or on several header lines, are allowed; differing ones are an error
/// (RFC 9112 §6.3: the response cannot be framed, and the connection is not reused).
fn content_length(headers: &HeaderMap) -> Result<u64, HeadParseError> {
    let values: Vec<&str> =
        headers.get_all(CONTENT_LENGTH).iter().map(|v| v.to_str().unwrap_or("")).collect();
    let text = values.join(", ");
    let mut parts = values.iter().flat_map(|v| v.split(',')).map(str::trim);
    let first = parts.next().unwrap_or("");
    let n: u64 = first.parse().map_err(|_| HeadParseError::ContentLength(text.clone()))?;
    if parts.any(|p| p != first) {
        return Err(HeadParseError::ConflictingLength(text));
    }
    Ok(n)
}

/// An obs-fold header value: each line break with the whitespace around it becomes one space.
fn unfold(raw: &[u8]) -> Result<HeaderValue, http::header::InvalidHeaderValue> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\r' || raw[i] == b'\n' {
            while out.last().is_some_and(|b: &u8| *b == b' ' || *b == b'\t') {
                out.pop();
            }
            while i < raw.len() && matches!(raw[i], b'\r' | b'\n' | b' ' | b'\t') {
                i += 1;
            }
            out.push(b' ');
            continue;
        }
        out.push(raw[i]);
        i += 1;
    }
    HeaderValue::from_bytes(&out)
}

/// The first bytes of `buf`, escaped for a one-line message.
pub(crate) fn escaped_start(buf: &[u8]) -> String {
    let shown: String =
        buf.iter().take(32).flat_map(|&b| std::ascii::escape_default(b)).map(char::from).collect();
    if buf.len() > 32 {
        format!("{shown}...")
    } else {
        shown
    }
}

/// Names an answer that is not an HTTP/1.x response head: an HTTP/2 frame or status line, or
/// some other protocol (`None` when it looks like a malformed HTTP/1.x head). SB308.
fn refused_answer(buf: &[u8]) -> Option<String> {
    // An HTTP/2 frame header: 24-bit length, type (4 SETTINGS, 7 GOAWAY), flags, stream 0.
    let h2_frame = buf.len() >= 4 && buf[0] == 0 && matches!(buf[3], 0x04 | 0x07);
    if h2_frame || buf.starts_with(b"HTTP/2") || buf.starts_with(b"PRI * HTTP/2") {
        return Some(format!(
            "server speaks HTTP/2 only: it answered the HTTP/1.1 request with HTTP/2 \
             (first bytes: \"{}\"); servebench speaks HTTP/1.1",
            escaped_start(buf)
        ));
    }
    if buf.starts_with(b"HTTP/1.") {
        return None;
    }
    let tls = buf.first() == Some(&0x15) || buf.first() == Some(&0x16);
    let hint = if tls { " (a TLS record: use https://)" } else { "" };
    Some(format!("server did not answer with HTTP{hint}: first bytes \"{}\"", escaped_start(buf)))
}

/// Where the chunked decoder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunked {
    /// Expecting a chunk-size line.
    Size,
    /// Inside chunk data with this many bytes left.
    Data(u64),
    /// Expecting the CRLF after chunk data.
    DataEnd,
    /// After the last chunk: trailer lines until an empty line.
    Trailers,
}

/// Body decoder state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyDecoder {
    /// `Content-Length`: bytes left.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked(ChunkedState),
    /// Delimited by the end of the connection.
    UntilClose,
    /// The body ended.
    Done,
}

/// Opaque chunked-decoder state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChunkedState(Chunked);

/// One decoding step over buffered bytes; offsets are relative to the input slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Body data at `input[start..start + len]`; `consumed` bytes of input are used up.
    Data { start: usize, len: usize, consumed: usize },
    /// The input holds no complete data or control element: read more (after dropping
    /// `consumed` bytes).
    NeedMore { consumed: usize },
    /// The body ended after `consumed` bytes.
    End { consumed: usize },
}

fn line_end(input: &[u8]) -> Result<Option<(usize, usize)>, BodyError> {
    match memchr::memchr(b'\n', input) {
        Some(i) => {
            let content = if i > 0 && input[i - 1] == b'\r' { i - 1 } else { i };
            Ok(Some((content, i + 1)))
        }
        None if input.len() > MAX_LINE_BYTES => Err(BodyError::LineTooLong),
        None => Ok(None),
    }
}

fn parse_chunk_size(line: &[u8]) -> Result<u64, BodyError> {
    let digits_end = line.iter().position(|b| !b.is_ascii_hexdigit()).unwrap_or(line.len());
    let rest = &line[digits_end..];
    let rest_ok = rest.is_empty() || matches!(rest[0], b';' | b' ' | b'\t');
    if digits_end == 0 || !rest_ok {
        return Err(BodyError::ChunkSize(String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned()));
    }
    if digits_end > 15 {
        return Err(BodyError::ChunkTooLarge);
    }
    let mut n = 0u64;
    for &b in &line[..digits_end] {
        let d = (b as char).to_digit(16).unwrap_or(0);
        n = n * 16 + u64::from(d);
    }
    Ok(n)
}

impl BodyDecoder {
    pub(crate) fn chunked() -> Self {
        BodyDecoder::Chunked(ChunkedState(Chunked::Size))
    }

    /// Whether the body ended.
    pub(crate) fn is_done(&self) -> bool {
        *self == BodyDecoder::Done
    }

    /// Decodes from `input` (bytes buffered after the head): the next piece of data, a
    /// request for more input, or the end. Errors are protocol violations.
    pub(crate) fn decode(&mut self, input: &[u8]) -> Result<Step, BodyError> {
        match self {
            BodyDecoder::Done => Ok(Step::End { consumed: 0 }),
            BodyDecoder::Length(0) => {
                *self = BodyDecoder::Done;
                Ok(Step::End { consumed: 0 })
            }
            BodyDecoder::Length(left) => {
                if input.is_empty() {
                    return Ok(Step::NeedMore { consumed: 0 });
                }
                let len = usize::try_from(*left).unwrap_or(usize::MAX).min(input.len());
                *left -= len as u64;
                Ok(Step::Data { start: 0, len, consumed: len })
            }
            BodyDecoder::UntilClose => {
                if input.is_empty() {
                    return Ok(Step::NeedMore { consumed: 0 });
                }
                Ok(Step::Data { start: 0, len: input.len(), consumed: input.len() })
            }
            BodyDecoder::Chunked(state) => {
                let mut pos = 0;
                loop {
                    let rest = &input[pos..];
                    match state.0 {
                        Chunked::Size => match line_end(rest)? {
                            None => return Ok(Step::NeedMore { consumed: pos }),
                            Some((content, next)) => {
                                let n = parse_chunk_size(&rest[..content])?;
                                pos += next;
                                state.0 = if n == 0 { Chunked::Trailers } else { Chunked::Data(n) };
                            }
                        },
                        Chunked::Data(left) => {
                            if rest.is_empty() {
                                return Ok(Step::NeedMore { consumed: pos });
                            }
                            let len = usize::try_from(left).unwrap_or(usize::MAX).min(rest.len());
                            let left = left - len as u64;
                            state.0 = if left == 0 { Chunked::DataEnd } else { Chunked::Data(left) };
                            return Ok(Step::Data { start: pos, len, consumed: pos + len });
                        }
                        Chunked::DataEnd => match rest {
                            [] | [b'\r'] => return Ok(Step::NeedMore { consumed: pos }),
                            [b'\r', b'\n', ..] => {
                                pos += 2;
                                state.0 = Chunked::Size;
                            }
                            [b'\n', ..] => {
                                pos += 1;
                                state.0 = Chunked::Size;
                            }
                            _ => return Err(BodyError::ChunkEnd),
                        },
                        Chunked::Trailers => match line_end(rest)? {
                            None => return Ok(Step::NeedMore { consumed: pos }),
                            Some((content, next)) => {
                                pos += next;
                                if content == 0 {
                                    *self = BodyDecoder::Done;
                                    return Ok(Step::End { consumed: pos });
                                }
                            }
                        },
                    }
                }
            }
        }
    }

    /// The connection reached end-of-file: whether that ends the body cleanly.
    pub(crate) fn on_eof(&mut self) -> Result<(), BodyError> {
        match self {
            BodyDecoder::UntilClose | BodyDecoder::Done | BodyDecoder::Length(0) => {
                *self = BodyDecoder::Done;
                Ok(())
            }
            _ => Err(BodyError::Truncated),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn keep_alive_parameters_are_read_as_servers_send_them() {
        let mut h = HeaderMap::new();
        assert_eq!(KeepAlive::of(&h), KeepAlive::default());
        h.insert("keep-alive", HeaderValue::from_static("timeout=5, max=100"));
        assert_eq!(
            KeepAlive::of(&h),
            KeepAlive { timeout: Some(std::time::Duration::from_secs(5)), max: Some(100) }
        );
        h.insert("keep-alive", HeaderValue::from_static(" Timeout = \"2\" ,foo=bar, max=x"));
        assert_eq!(
            KeepAlive::of(&h),
            KeepAlive { timeout: Some(std::time::Duration::from_secs(2)), max: None }
        );
        h.insert("keep-alive", HeaderValue::from_static("timeout=-1, max"));
        assert_eq!(KeepAlive::of(&h), KeepAlive::default());
    }

    /// Decodes `input` fed in pieces at `splits`, the way the connection does (unconsumed
    /// bytes stay buffered); returns the body and whether it ended.
    fn decode_split(
        mut dec: BodyDecoder,
        input: &[u8],
        splits: &[usize],
    ) -> Result<(Vec<u8>, bool), BodyError> {
        let mut buf: Vec<u8> = Vec::new();
        let mut out = Vec::new();
        let mut fed = 0;
        let mut cuts: Vec<usize> = splits.iter().copied().filter(|&s| s > 0 && s < input.len()).collect();
        cuts.sort_unstable();
        cuts.push(input.len());
        for cut in cuts {
            if cut <= fed {
                continue;
            }
            buf.extend_from_slice(&input[fed..cut]);
            fed = cut;
            loop {
                match dec.decode(&buf)? {
                    Step::Data { start, len, consumed } => {
                        out.extend_from_slice(&buf[start..start + len]);
                        buf.drain(..consumed);
                    }
                    Step::NeedMore { consumed } => {
                        buf.drain(..consumed);
                        break;
                    }
                    Step::End { consumed } => {
                        buf.drain(..consumed);
                        return Ok((out, buf.is_empty()));
                    }
                }
            }
        }
        Ok((out, false))
    }

    fn chunked_encode(parts: &[Vec<u8>], crlf: bool, ext: bool) -> Vec<u8> {
        let nl: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let mut v = Vec::new();
        for p in parts.iter().filter(|p| !p.is_empty()) {
            v.extend_from_slice(format!("{:X}", p.len()).as_bytes());
            if ext {
                v.extend_from_slice(b";name=val");
            }
            v.extend_from_slice(nl);
            v.extend_from_slice(p);
            v.extend_from_slice(nl);
        }
        v.extend_from_slice(b"0");
        v.extend_from_slice(nl);
        if ext {
            v.extend_from_slice(b"x-trailer: 1");
            v.extend_from_slice(nl);
        }
        v.extend_from_slice(nl);
        v
    }

    #[test]
    fn decodes_chunked_sse_body() {
        let body = b"1b\r\ndata: {\"x\":1}\n\ndata: [DONE]\r\n0\r\n\r\n";
        let (out, clean) = decode_split(BodyDecoder::chunked(), body, &[]).unwrap();
        assert_eq!(out, b"data: {\"x\":1}\n\ndata: [DONE]");
        assert!(clean);
    }

    #[test]
    fn rejects_bad_chunks() {
        for bad in [&b"zz\r\nabc"[..], b"3\r\nabcXY", b"\r\n", b"3x\r\nabc\r\n"] {
            assert!(decode_split(BodyDecoder::chunked(), bad, &[]).is_err(), "{bad:?}");
        }
        let long = [b'1'; 20];
        assert!(decode_split(BodyDecoder::chunked(), &[&long[..], b"\r\n"].concat(), &[]).is_err());
        let huge_line = vec![b'a'; MAX_LINE_BYTES + 10];
        assert!(decode_split(BodyDecoder::chunked(), &huge_line, &[]).is_err());
    }

    #[test]
    fn length_and_until_close() {
        let (out, clean) = decode_split(BodyDecoder::Length(5), b"hello", &[2]).unwrap();
        assert_eq!(out, b"hello");
        assert!(clean);
        // Extra bytes after a Content-Length body stay unconsumed (the connection is not reused).
        let (out, clean) = decode_split(BodyDecoder::Length(3), b"abcdef", &[]).unwrap();
        assert_eq!(out, b"abc");
        assert!(!clean);
        let mut d = BodyDecoder::UntilClose;
        assert_eq!(d.decode(b"xy").unwrap(), Step::Data { start: 0, len: 2, consumed: 2 });
        d.on_eof().unwrap();
        assert!(d.is_done());
        let mut d = BodyDecoder::Length(4);
        assert!(d.on_eof().is_err());
        let mut d = BodyDecoder::chunked();
        assert!(d.on_eof().is_err());
    }

    #[test]
    fn parses_heads() {
        let h =
            b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\nrest";
        let HeadParse::Complete { head, len } = parse_head(h, false).unwrap() else { panic!() };
        assert_eq!(head.status, 200);
        assert_eq!(&h[len..], b"rest");
        assert_eq!(head.body, BodyDecoder::chunked());
        assert!(!head.close);
        let h = b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: Close\r\n\r\n";
        let HeadParse::Complete { head, .. } = parse_head(h, false).unwrap() else { panic!() };
        assert_eq!(head.body, BodyDecoder::Length(7));
        assert!(head.close);
        let h = b"HTTP/1.0 200 OK\r\ncontent-length: 2\r\n\r\n";
        let HeadParse::Complete { head, .. } = parse_head(h, false).unwrap() else { panic!() };
        assert!(head.close, "HTTP/1.0 without keep-alive closes");
        let h = b"HTTP/1.1 200 OK\r\n\r\n";
        let HeadParse::Complete { head, .. } = parse_head(h, false).unwrap() else { panic!() };
        assert_eq!(head.body, BodyDecoder::UntilClose);
        assert!(head.close);
        let h = b"HTTP/1.1 204 No Content\r\ncontent-length: 9\r\n\r\n";
        let HeadParse::Complete { head, .. } = parse_head(h, false).unwrap() else { panic!() };
        assert_eq!(head.body, BodyDecoder::Length(0));
        assert!(matches!(
            parse_head(b"HTTP/1.1 100 Continue\r\n\r\n", false).unwrap(),
            HeadParse::Interim { len: 25 }
        ));
        assert!(matches!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-le", false).unwrap(), HeadParse::Partial));
        assert!(parse_head(b"garbage\r\n\r\n", false).is_err());
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 1, 2\r\n\r\n", false).is_err());
        // The same conflict on two header lines (either order), and agreeing ones.
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 90\r\ncontent-length: 5\r\n\r\n", false).is_err()
        );
        assert!(
            parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-length: 90\r\n\r\n", false).is_err()
        );
        let h = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\ncontent-length: 4\r\n\r\n";
        let HeadParse::Complete { head, .. } = parse_head(h, false).unwrap() else { panic!() };
        assert!(matches!(head.body, BodyDecoder::Length(4)));
        assert!(parse_head(b"HTTP/1.1 200 OK\r\ncontent-length: x\r\n\r\n", false).is_err());
        let h = b"HTTP/1.1 200 OK\r\ncontent-length: 3, 3\r\n\r\n";
        assert!(matches!(parse_head(h, false).unwrap(), HeadParse::Complete { .. }));
        // A transfer coding other than chunked is named, not read as events.
        let e =
            parse_head(b"HTTP/1.1 200 OK\r\ntransfer-encoding: gzip, chunked\r\n\r\n", false).unwrap_err();
        assert_eq!(e, HeadParseError::TransferCoding("gzip, chunked".into()));
        let h = b"HTTP/1.1 200 OK\r\ntransfer-encoding: identity, chunked\r\n\r\n";
        assert!(matches!(parse_head(h, false).unwrap(), HeadParse::Complete { .. }));
    }

    #[test]
    fn lenient_heads_obs_fold_and_no_reason_phrase() {
        let h = b"HTTP/1.1 200\r\ncontent-length: 2\r\nx-folded: a\r\n  b\r\n\tc\r\n\r\nok";
        let HeadParse::Complete { head, len } = parse_head(h, false).unwrap() else { panic!() };
        assert_eq!(head.status, 200);
        assert_eq!(head.headers["x-folded"], "a b c");
        assert_eq!(&h[len..], b"ok");
        assert_eq!(head.body, BodyDecoder::Length(2));
    }

    #[test]
    fn http2_and_non_http_answers_are_named() {
        // SETTINGS frame then GOAWAY, as an HTTP/2-only server answers an HTTP/1.1 request.
        let h2 = b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64\x00\x00\x08\x07\x00\x00\x00\x00\x00";
        let not_http1 = |buf: &[u8]| match parse_head(buf, false) {
            Err(HeadParseError::NotHttp1(detail)) => detail,
            other => panic!("{other:?}"),
        };
        let e = not_http1(h2);
        assert!(e.starts_with("server speaks HTTP/2 only"), "{e}");
        assert!(e.contains("\\x00\\x00\\x06\\x04"), "{e}");
        let e = not_http1(b"SSH-2.0-OpenSSH_9.6\r\n");
        assert!(e.starts_with("server did not answer with HTTP: first bytes \"SSH-2.0"), "{e}");
        assert!(!e.contains('\n'));
        let e = not_http1(b"\x15\x03\x01\x00\x02\x02\x46");
        assert!(e.contains("use https://"), "{e}");
        let e = parse_head(b"HTTP/1.1 abc\r\n\r\n", false).unwrap_err();
        assert!(matches!(e, HeadParseError::Syntax(_)), "{e:?}");
        let e = e.to_string();
        assert!(e.starts_with("invalid response head"), "{e}");
    }

    #[test]
    fn serialises_requests() {
        let req = Request::post("/v1/completions?x=1")
            .header("host", "h:1")
            .header("content-length", "999")
            .body(bytes::Bytes::from_static(b"{}"))
            .unwrap();
        let mut out = Vec::new();
        write_request_head(&req, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "POST /v1/completions?x=1 HTTP/1.1\r\nhost: h:1\r\ncontent-length: 2\r\n\r\n"
        );
        let req = Request::get("/v1/models").body(bytes::Bytes::new()).unwrap();
        let mut out = Vec::new();
        write_request_head(&req, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "GET /v1/models HTTP/1.1\r\n\r\n");
    }

    proptest! {
        /// Any split of a chunked body into reads yields the same data and a clean end.
        #[test]
        fn chunked_any_split(
            parts in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 0..8),
            splits in proptest::collection::vec(0usize..400, 0..12),
            crlf in any::<bool>(),
            ext in any::<bool>(),
        ) {
            let encoded = chunked_encode(&parts, crlf, ext);
            let (out, clean) = decode_split(BodyDecoder::chunked(), &encoded, &splits).unwrap();
            prop_assert_eq!(out, parts.concat());
            prop_assert!(clean);
        }

        /// The decoder never panics on arbitrary bytes.
        #[test]
        fn chunked_arbitrary_bytes(input in proptest::collection::vec(any::<u8>(), 0..200), splits in proptest::collection::vec(0usize..200, 0..6)) {
            let _ = decode_split(BodyDecoder::chunked(), &input, &splits);
            let _ = parse_head(&input, false);
        }
    }
}

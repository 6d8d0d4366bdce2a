//! Content codings (`Content-Encoding`): incremental decoding of compressed response bodies.
//!
//! Every request says `Accept-Encoding: identity`, so servers answer uncompressed and the hot
//! path never comes here (no decoder, no copy). A gateway that compresses anyway gets its bytes
//! decoded as they arrive: each piece of body data is pushed through the decoder and whatever
//! it can decode now is handed on with the arrival time of the compressed bytes, so a gzip
//! stream flushed per event still gives per-event timing. The decoders are the maintained
//! crates (`flate2`, `brotli-decompressor`, `zstd`).

use std::io::Write;

use http::header::{HeaderMap, CONTENT_ENCODING};

/// What the client asks for on every request.
pub(crate) const ACCEPT_IDENTITY: http::HeaderValue = http::HeaderValue::from_static("identity");

/// Output buffer size handed to the brotli decoder.
const BROTLI_BUF: usize = 4096;

enum Inner {
    Gzip(flate2::write::MultiGzDecoder<Vec<u8>>),
    Zlib(flate2::write::ZlibDecoder<Vec<u8>>),
    RawDeflate(flate2::write::DeflateDecoder<Vec<u8>>),
    /// `deflate` before its first two bytes told zlib from raw deflate: the bytes so far.
    DeflatePending(Vec<u8>),
    Brotli(Box<brotli_decompressor::DecompressorWriter<Vec<u8>>>),
    Zstd(zstd::stream::write::Decoder<'static, Vec<u8>>),
}

/// An incremental decoder of one response body's content coding.
pub(crate) struct BodyDecoder {
    coding: &'static str,
    inner: Inner,
}

impl std::fmt::Debug for BodyDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyDecoder").field("coding", &self.coding).finish()
    }
}

/// Why a body cannot be decoded: an unknown coding or corrupt compressed data (SB306; a
/// request record's message gets the `[SB306]` tag from its typed cause).
#[derive(Debug, thiserror::Error)]
pub(crate) enum CodingError {
    /// A coding (or a chain of codings) servebench does not decode; the text as sent, cut to
    /// 40 printable characters.
    #[error(
        "the server sent Content-Encoding '{0}', which servebench cannot decode \
         (it decodes gzip, deflate, br and zstd, and asks for identity)"
    )]
    Unknown(String),
    /// The zstd decoder could not be created.
    #[error("zstd decoder: {0}")]
    Decoder(#[source] std::io::Error),
    /// The compressed bytes are corrupt.
    #[error("the {coding} response body could not be decoded: {source}")]
    Corrupt { coding: &'static str, source: std::io::Error },
}

impl CodingError {
    /// The coded error of a control call (SB306), this error its source.
    pub(crate) fn into_error(self, context: String) -> servebench_core::BenchError {
        servebench_core::BenchError::ContentCoding {
            context,
            detail: self.to_string(),
            source: Some(Box::new(self)),
        }
    }
}

fn unknown(coding: &str) -> CodingError {
    CodingError::Unknown(coding.chars().filter(|c| !c.is_control()).take(40).collect())
}

/// A zlib stream starts with CMF/FLG: compression method 8 and a header checksum.
fn is_zlib_header(b0: u8, b1: u8) -> bool {
    b0 & 0x0f == 8 && (u16::from(b0) << 8 | u16::from(b1)) % 31 == 0
}

impl BodyDecoder {
    /// The decoder for a response's `Content-Encoding`: `Ok(None)` when the body is not coded
    /// (no header or `identity`), an error naming an unknown coding or a chain of codings.
    pub(crate) fn for_headers(headers: &HeaderMap) -> Result<Option<BodyDecoder>, CodingError> {
        let Some(v) = headers.get(CONTENT_ENCODING) else { return Ok(None) };
        Self::for_value(v.as_bytes())
    }

    fn for_value(v: &[u8]) -> Result<Option<BodyDecoder>, CodingError> {
        let text = String::from_utf8_lossy(v);
        let codings: Vec<String> = text
            .split(',')
            .map(|t| t.trim().to_ascii_lowercase())
            .filter(|t| !t.is_empty() && t != "identity")
            .collect();
        let coding = match codings.as_slice() {
            [] => return Ok(None),
            [one] => one.as_str(),
            _ => return Err(unknown(text.trim())),
        };
        let (coding, inner) = match coding {
            "gzip" | "x-gzip" => ("gzip", Inner::Gzip(flate2::write::MultiGzDecoder::new(Vec::new()))),
            "deflate" => ("deflate", Inner::DeflatePending(Vec::new())),
            "br" => (
                "br",
                Inner::Brotli(Box::new(brotli_decompressor::DecompressorWriter::new(Vec::new(), BROTLI_BUF))),
            ),
            "zstd" => {
                let d = zstd::stream::write::Decoder::new(Vec::new()).map_err(CodingError::Decoder)?;
                ("zstd", Inner::Zstd(d))
            }
            other => return Err(unknown(other)),
        };
        Ok(Some(BodyDecoder { coding, inner }))
    }

    fn corrupt(&self, source: std::io::Error) -> CodingError {
        CodingError::Corrupt { coding: self.coding, source }
    }

    /// Decodes `input` (the next compressed bytes): returns everything decodable so far.
    pub(crate) fn push(&mut self, input: &[u8]) -> Result<&[u8], CodingError> {
        if let Inner::DeflatePending(held) = &mut self.inner {
            held.extend_from_slice(input);
            if held.len() < 2 {
                return Ok(&[]);
            }
            let held = std::mem::take(held);
            self.inner = if is_zlib_header(held[0], held[1]) {
                Inner::Zlib(flate2::write::ZlibDecoder::new(Vec::new()))
            } else {
                Inner::RawDeflate(flate2::write::DeflateDecoder::new(Vec::new()))
            };
            return self.push(&held);
        }
        let r = match &mut self.inner {
            Inner::Gzip(d) => push_into(d, input, |d| d.get_mut()),
            Inner::Zlib(d) => push_into(d, input, |d| d.get_mut()),
            Inner::RawDeflate(d) => push_into(d, input, |d| d.get_mut()),
            Inner::Brotli(d) => push_into(d.as_mut(), input, |d| d.get_mut()),
            Inner::Zstd(d) => push_into(d, input, |d| d.get_mut()),
            Inner::DeflatePending(_) => Ok(()),
        };
        r.map_err(|e| self.corrupt(e))?;
        Ok(self.output())
    }

    /// The end of the body: flushes what is left (normally nothing).
    pub(crate) fn finish(&mut self) -> Result<&[u8], CodingError> {
        if let Inner::DeflatePending(held) = &mut self.inner {
            if held.is_empty() {
                return Ok(&[]);
            }
            let held = std::mem::take(held);
            self.inner = Inner::RawDeflate(flate2::write::DeflateDecoder::new(Vec::new()));
            return self.push(&held);
        }
        let r = match &mut self.inner {
            Inner::Gzip(d) => finish_into(d, |d| d.get_mut(), |d| d.try_finish()),
            Inner::Zlib(d) => finish_into(d, |d| d.get_mut(), |d| d.try_finish()),
            Inner::RawDeflate(d) => finish_into(d, |d| d.get_mut(), |d| d.try_finish()),
            Inner::Brotli(d) => {
                d.get_mut().clear();
                Ok(())
            }
            Inner::Zstd(d) => {
                d.get_mut().clear();
                Ok(())
            }
            Inner::DeflatePending(_) => Ok(()),
        };
        r.map_err(|e| self.corrupt(e))?;
        Ok(self.output())
    }

    fn output(&self) -> &[u8] {
        match &self.inner {
            Inner::Gzip(d) => d.get_ref(),
            Inner::Zlib(d) => d.get_ref(),
            Inner::RawDeflate(d) => d.get_ref(),
            Inner::Brotli(d) => d.get_ref(),
            Inner::Zstd(d) => d.get_ref(),
            Inner::DeflatePending(_) => &[],
        }
    }
}

/// Writes `input` through the decoder `d` (after emptying its output) and flushes, so every
/// byte it can decode now is in its output.
fn push_into<D: Write>(d: &mut D, input: &[u8], out: impl Fn(&mut D) -> &mut Vec<u8>) -> std::io::Result<()> {
    out(d).clear();
    d.write_all(input)?;
    d.flush()
}

/// Empties the decoder's output, then finishes the stream into it.
fn finish_into<D>(
    d: &mut D,
    out: impl Fn(&mut D) -> &mut Vec<u8>,
    finish: impl Fn(&mut D) -> std::io::Result<()>,
) -> std::io::Result<()> {
    out(d).clear();
    finish(d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn decode_all(coding: &str, data: &[u8], piece: usize) -> Vec<u8> {
        let mut d = BodyDecoder::for_value(coding.as_bytes()).unwrap().unwrap();
        let mut out = Vec::new();
        for p in data.chunks(piece.max(1)) {
            out.extend_from_slice(d.push(p).unwrap());
        }
        out.extend_from_slice(d.finish().unwrap());
        out
    }

    /// A brotli stream holding `data` in one uncompressed meta-block (RFC 7932 §9.2: WBITS 16,
    /// ISLAST 0, MNIBBLES 4, MLEN − 1, ISUNCOMPRESSED 1, then an empty last meta-block). No
    /// brotli encoder is a dependency; the decoder is what is tested.
    pub(crate) fn brotli_stored(data: &[u8]) -> Vec<u8> {
        let m = u32::try_from(data.len() - 1).unwrap();
        assert!(m < 1 << 16);
        let bits = (m << 4) | (1 << 20);
        let mut v = bits.to_le_bytes()[..3].to_vec();
        v.extend_from_slice(data);
        v.push(0x03);
        v
    }

    const TEXT: &[u8] = b"data: {\"choices\":[{\"text\":\"hello\"}]}\n\ndata: [DONE]\n\n";

    #[test]
    fn decodes_every_coding_in_any_split() {
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(TEXT).unwrap();
            e.finish().unwrap()
        };
        let zl = {
            let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(TEXT).unwrap();
            e.finish().unwrap()
        };
        let raw = {
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(TEXT).unwrap();
            e.finish().unwrap()
        };
        let zs = zstd::stream::encode_all(TEXT, 3).unwrap();
        let br = brotli_stored(TEXT);
        for piece in [1, 2, 3, 7, 1000] {
            assert_eq!(decode_all("br", &br, piece), TEXT, "br/{piece}");
            assert_eq!(decode_all("gzip", &gz, piece), TEXT, "gzip/{piece}");
            assert_eq!(decode_all("deflate", &zl, piece), TEXT, "zlib/{piece}");
            assert_eq!(decode_all("deflate", &raw, piece), TEXT, "raw deflate/{piece}");
            assert_eq!(decode_all("zstd", &zs, piece), TEXT, "zstd/{piece}");
        }
    }

    #[test]
    fn identity_and_unknown_codings() {
        assert!(BodyDecoder::for_value(b"identity").unwrap().is_none());
        assert!(BodyDecoder::for_value(b"").unwrap().is_none());
        let e = BodyDecoder::for_value(b"compress").unwrap_err();
        assert_eq!(
            e.to_string(),
            "the server sent Content-Encoding 'compress', which servebench cannot decode \
             (it decodes gzip, deflate, br and zstd, and asks for identity)"
        );
        let e = BodyDecoder::for_value(b"gzip, br").unwrap_err();
        assert!(matches!(&e, CodingError::Unknown(c) if c == "gzip, br"), "{e}");
        let mut d = BodyDecoder::for_value(b"gzip").unwrap().unwrap();
        let e = d.push(b"definitely not gzip").unwrap_err();
        assert!(e.to_string().starts_with("the gzip response body could not be decoded: "), "{e}");
        // The decoder's own error is kept as the source.
        let source = std::error::Error::source(&e).and_then(|s| s.downcast_ref::<std::io::Error>());
        assert!(source.is_some(), "{e:?}");
    }
}

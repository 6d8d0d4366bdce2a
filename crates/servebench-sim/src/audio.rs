//! Audio: the duration of an audio clip (from a WAV header), the prompt-token rule for audio,
//! and `/v1/audio/transcriptions` requests as vLLM's server takes them (multipart/form-data:
//! `file`, `model`, `language`, `prompt`, `response_format`, `stream`, `max_completion_tokens`,
//! `stream_include_usage`, `stream_continuous_usage_stats`, `ignore_eos`).

use servebench_core::TextTokenizer;

use crate::hash::Fnv;
use crate::prompt::PromptInfo;
use crate::protocol::{ApiError, GenerationFields, StreamOptions};

/// Prompt tokens per second of audio (an audio encoder at 25 frames per second after pooling,
/// as Qwen2-Audio's; Whisper's encoder runs at 50 before its decoder sees it).
pub(crate) const AUDIO_TOKENS_PER_SECOND: f64 = 25.0;

/// Duration assumed for audio whose length cannot be read (not a PCM WAV), in seconds.
pub(crate) const DEFAULT_AUDIO_SECONDS: f64 = 10.0;

/// The duration of a RIFF/WAVE clip from its `fmt ` and `data` chunks (`None` for anything
/// else).
pub(crate) fn wav_seconds(b: &[u8]) -> Option<f64> {
    if b.len() < 12 || &b[0..4] != b"RIFF" || &b[8..12] != b"WAVE" {
        return None;
    }
    let (mut at, mut byte_rate) = (12usize, None);
    while at + 8 <= b.len() {
        let id = &b[at..at + 4];
        let size = u32::from_le_bytes(b[at + 4..at + 8].try_into().ok()?) as usize;
        let body = at + 8;
        if id == b"fmt " && body + 12 <= b.len() {
            byte_rate = Some(u32::from_le_bytes(b[body + 8..body + 12].try_into().ok()?));
        }
        if id == b"data" {
            let rate = f64::from(byte_rate.filter(|&r| r > 0)?);
            // A streamed WAV may declare a size larger than the file (or 0xFFFFFFFF).
            let len = size.min(b.len().saturating_sub(body));
            return Some(len as f64 / rate);
        }
        at = body + size + (size & 1);
    }
    None
}

/// Prompt tokens of an audio clip of `seconds` (at least 1).
pub(crate) fn audio_tokens(seconds: f64) -> u32 {
    ((seconds.max(0.0) * AUDIO_TOKENS_PER_SECOND).ceil() as u32).max(1)
}

/// The seconds of an audio clip: read from a WAV header, else the default.
pub(crate) fn clip_seconds(bytes: &[u8]) -> f64 {
    wav_seconds(bytes).unwrap_or(DEFAULT_AUDIO_SECONDS)
}

/// One part of a multipart/form-data body.
struct FormPart<'a> {
    name: String,
    data: &'a [u8],
}

/// The boundary of a `multipart/form-data; boundary=…` content type.
fn boundary(content_type: &str) -> Option<String> {
    let (mime, params) = content_type.split_once(';')?;
    if !mime.trim().eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params.split(';').find_map(|p| {
        let (k, v) = p.trim().split_once('=')?;
        k.trim().eq_ignore_ascii_case("boundary").then(|| v.trim().trim_matches('"').to_owned())
    })
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?.windows(needle.len()).position(|w| w == needle).map(|p| p + from)
}

/// Splits a multipart body into its named parts.
fn parse_form<'a>(body: &'a [u8], boundary: &str) -> Result<Vec<FormPart<'a>>, ApiError> {
    let bad = || ApiError::bad_request("malformed multipart/form-data body");
    let delim = format!("--{boundary}");
    let mut parts = Vec::new();
    let mut at = find(body, delim.as_bytes(), 0).ok_or_else(bad)? + delim.len();
    loop {
        if body.get(at..at + 2) == Some(b"--") {
            return Ok(parts);
        }
        let head_start = at + 2; // CRLF after the delimiter
        let head_end = find(body, b"\r\n\r\n", head_start).ok_or_else(bad)?;
        let head = String::from_utf8_lossy(&body[head_start..head_end]);
        let next = find(body, format!("\r\n{delim}").as_bytes(), head_end + 4).ok_or_else(bad)?;
        let name = head
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("content-disposition"))
            .and_then(|l| {
                l.split(';')
                    .find_map(|p| p.trim().strip_prefix("name=").map(|n| n.trim_matches('"').to_owned()))
            })
            .unwrap_or_default();
        parts.push(FormPart { name, data: &body[head_end + 4..next] });
        at = next + 2 + delim.len();
    }
}

/// A parsed transcription request.
pub(crate) struct Transcription {
    pub prompt: PromptInfo,
    pub fields: GenerationFields,
    pub max_tokens: Option<i64>,
    pub seconds: f64,
    /// `response_format` is `text`: the answer is plain text.
    pub text_format: bool,
}

/// Parses a `/v1/audio/transcriptions` form: the audio counts [`audio_tokens`], a `prompt`
/// field its tokens.
pub(crate) fn parse(
    body: &[u8],
    content_type: Option<&str>,
    tok: &dyn TextTokenizer,
) -> Result<Transcription, ApiError> {
    let b = content_type
        .and_then(boundary)
        .ok_or_else(|| ApiError::bad_request("Content-Type must be multipart/form-data with a boundary"))?;
    let parts = parse_form(body, &b)?;
    let field = |n: &str| {
        parts.iter().find(|p| p.name == n).map(|p| String::from_utf8_lossy(p.data).trim().to_owned())
    };
    let flag = |n: &str| field(n).map(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let file = parts
        .iter()
        .find(|p| p.name == "file")
        .ok_or_else(|| ApiError::bad_request("Field required: file"))?;
    if file.data.is_empty() {
        return Err(ApiError::bad_request("The audio file is empty"));
    }
    let seconds = clip_seconds(file.data);
    let text_ids = match field("prompt") {
        Some(p) if !p.is_empty() => {
            tok.encode(&p, false).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        _ => Vec::new(),
    };
    let tokens = audio_tokens(seconds) + text_ids.len() as u32;
    let hash = Fnv::new(7).bytes(file.data).bytes(field("prompt").unwrap_or_default().as_bytes()).finish();
    let prompt = PromptInfo { tokens, hash, ids: text_ids };
    let max_tokens = field("max_completion_tokens").and_then(|v| v.parse().ok());
    let include = flag("stream_include_usage").unwrap_or(false);
    let continuous = flag("stream_continuous_usage_stats").unwrap_or(false);
    let stream_options = (include || continuous)
        .then_some(StreamOptions { include_usage: Some(include), continuous_usage_stats: Some(continuous) });
    let fields = GenerationFields {
        model: field("model"),
        stream: flag("stream"),
        ignore_eos: flag("ignore_eos"),
        stream_options,
        ..GenerationFields::default()
    };
    let text_format = field("response_format").is_some_and(|f| f == "text");
    Ok(Transcription { prompt, fields, max_tokens, seconds, text_format })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::NullTok;

    /// A PCM WAV of `secs` seconds at 16 kHz mono 16-bit.
    pub(crate) fn wav(secs: f64) -> Vec<u8> {
        let n = (secs * 16_000.0) as u32 * 2;
        let mut b = Vec::new();
        b.extend_from_slice(b"RIFF");
        b.extend_from_slice(&(36 + n).to_le_bytes());
        b.extend_from_slice(b"WAVEfmt ");
        b.extend_from_slice(&16u32.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16_000u32.to_le_bytes());
        b.extend_from_slice(&32_000u32.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(b"data");
        b.extend_from_slice(&n.to_le_bytes());
        b.resize(b.len() + n as usize, 0);
        b
    }

    #[test]
    fn wav_duration_and_tokens() {
        assert_eq!(wav_seconds(&wav(2.0)), Some(2.0));
        assert_eq!(wav_seconds(b"ID3 not a wav"), None);
        assert_eq!(audio_tokens(2.0), 50);
        assert_eq!(audio_tokens(0.01), 1);
        assert_eq!(clip_seconds(b"xx"), DEFAULT_AUDIO_SECONDS);
    }

    #[test]
    fn multipart_form() {
        let mut body = Vec::new();
        for (name, value) in [
            ("model", "m"),
            ("stream", "True"),
            ("max_completion_tokens", "7"),
            ("stream_include_usage", "true"),
        ] {
            body.extend_from_slice(
                format!("--XyZ\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n")
                    .as_bytes(),
            );
        }
        body.extend_from_slice(
            b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\nContent-Type: audio/wav\r\n\r\n",
        );
        body.extend_from_slice(&wav(1.0));
        body.extend_from_slice(b"\r\n--XyZ--\r\n");
        let t = parse(&body, Some("multipart/form-data; boundary=XyZ"), &NullTok).unwrap();
        assert_eq!(t.seconds, 1.0);
        assert_eq!(t.prompt.tokens, 25);
        assert_eq!(t.max_tokens, Some(7));
        assert_eq!(t.fields.stream, Some(true));
        assert_eq!(t.fields.stream_options.as_ref().and_then(|o| o.include_usage), Some(true));
        assert!(parse(&body, Some("application/json"), &NullTok).is_err());
    }
}

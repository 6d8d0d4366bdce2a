//! Multimodal content parts: how many prompt tokens an image or an audio clip counts.
//!
//! - **Images** (`image_url` parts, Anthropic `image` blocks): the size is read from the image
//!   header of a `data:` URL (PNG, JPEG, GIF) and counted as a Qwen2-VL-style vision encoder
//!   does: one token per 28 × 28 pixel patch, `ceil(w / 28) · ceil(h / 28)`, at least 4 and at
//!   most 16 384. References (`http(s)://`, `file://`) are not fetched, and images whose size
//!   cannot be read count [`DEFAULT_IMAGE_TOKENS`] (a 448 × 448 image).
//! - **Audio** (`input_audio` parts with base64 `data`, `audio_url` parts): the duration is read
//!   from a WAV header and counted at 25 tokens per second (`audio::audio_tokens`); references
//!   and other formats count `audio::DEFAULT_AUDIO_SECONDS`.
//! - **Video** (`video_url` parts): never fetched or decoded; every clip counts
//!   [`DEFAULT_VIDEO_TOKENS`] — what a Qwen2-VL-style encoder makes of 32 frames of 448 × 448
//!   (frames merged in pairs, 256 tokens per merged pair: 16 × 256), its cache key the URL.

use base64::Engine;
use serde_json::Value;

use crate::audio::{audio_tokens, clip_seconds, DEFAULT_AUDIO_SECONDS};
use crate::hash::Fnv;
use crate::protocol::{ApiError, ContentPart};

/// Pixels per side of one vision token (14-pixel patches merged 2 × 2).
pub(crate) const IMAGE_PATCH: u32 = 28;

/// Tokens of an image whose size is unknown (a 448 × 448 image).
pub(crate) const DEFAULT_IMAGE_TOKENS: u32 = 256;

/// Tokens of every video clip: 32 frames of 448 × 448, merged in pairs (16 × 256).
pub(crate) const DEFAULT_VIDEO_TOKENS: u32 = 16 * DEFAULT_IMAGE_TOKENS;

const MIN_IMAGE_TOKENS: u32 = 4;
const MAX_IMAGE_TOKENS: u32 = 16_384;

/// The prompt tokens and a content hash of one media part (`None` for text parts).
pub(crate) fn part_tokens(p: &ContentPart) -> Result<Option<(u32, u64)>, ApiError> {
    match p.kind.as_str() {
        "text" | "input_text" => Ok(None),
        "image_url" | "image" | "input_image" => {
            let url = url_of(p.image_url.as_ref()).ok_or_else(|| missing(&p.kind, "image_url.url"))?;
            Ok(Some((image_tokens(url), hash(url))))
        }
        "input_audio" => {
            let data = p
                .input_audio
                .as_ref()
                .and_then(|a| a.get("data"))
                .and_then(Value::as_str)
                .ok_or_else(|| missing(&p.kind, "input_audio.data"))?;
            let bytes = base64::engine::general_purpose::STANDARD.decode(data.trim()).ok();
            let seconds = bytes.as_deref().map_or(DEFAULT_AUDIO_SECONDS, clip_seconds);
            Ok(Some((audio_tokens(seconds), hash(data))))
        }
        "audio_url" => {
            let url = url_of(p.audio_url.as_ref()).ok_or_else(|| missing(&p.kind, "audio_url.url"))?;
            let seconds = data_url_bytes(url).as_deref().map_or(DEFAULT_AUDIO_SECONDS, clip_seconds);
            Ok(Some((audio_tokens(seconds), hash(url))))
        }
        "video_url" => {
            let url = url_of(p.video_url.as_ref()).ok_or_else(|| missing(&p.kind, "video_url.url"))?;
            Ok(Some((DEFAULT_VIDEO_TOKENS, hash(url))))
        }
        other => Err(ApiError::bad_request(format!(
            "content part of type '{other}' is not supported: this simulated model takes text, image_url, \
             input_audio, audio_url and video_url parts"
        ))),
    }
}

fn missing(kind: &str, field: &str) -> ApiError {
    ApiError::bad_request(format!("content part of type '{kind}' needs '{field}'"))
}

fn hash(s: &str) -> u64 {
    Fnv::new(0x3d1a).bytes(s.as_bytes()).finish()
}

/// `{"url": "..."}` or a plain string.
fn url_of(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::String(s) => Some(s),
        o => o.get("url").and_then(Value::as_str),
    }
}

/// The bytes of a base64 `data:` URL.
fn data_url_bytes(url: &str) -> Option<Vec<u8>> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    if !meta.ends_with(";base64") {
        return None;
    }
    base64::engine::general_purpose::STANDARD.decode(data.trim()).ok()
}

/// Tokens of the image at `url` (see the module docs).
pub(crate) fn image_tokens(url: &str) -> u32 {
    match data_url_bytes(url).as_deref().and_then(image_size) {
        Some((w, h)) => (w.div_ceil(IMAGE_PATCH).saturating_mul(h.div_ceil(IMAGE_PATCH)))
            .clamp(MIN_IMAGE_TOKENS, MAX_IMAGE_TOKENS),
        None => DEFAULT_IMAGE_TOKENS,
    }
}

/// Width and height from a PNG, GIF or JPEG header.
pub(crate) fn image_size(b: &[u8]) -> Option<(u32, u32)> {
    let be32 = |i: usize| Some(u32::from_be_bytes(b.get(i..i + 4)?.try_into().ok()?));
    let be16 = |i: usize| Some(u32::from(u16::from_be_bytes(b.get(i..i + 2)?.try_into().ok()?)));
    if b.starts_with(b"\x89PNG\r\n\x1a\n") {
        return Some((be32(16)?, be32(20)?));
    }
    if b.starts_with(b"GIF8") {
        let le16 = |i: usize| Some(u32::from(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?)));
        return Some((le16(6)?, le16(8)?));
    }
    if !b.starts_with(&[0xFF, 0xD8]) {
        return None;
    }
    // JPEG: walk the segments to a start-of-frame marker.
    let mut at = 2;
    while at + 4 <= b.len() {
        if b[at] != 0xFF {
            return None;
        }
        let marker = b[at + 1];
        if marker == 0xFF {
            at += 1;
            continue;
        }
        let len = be16(at + 2)? as usize;
        let sof = matches!(marker, 0xC0..=0xCF) && !matches!(marker, 0xC4 | 0xC8 | 0xCC);
        if sof {
            return Some((be16(at + 7)?, be16(at + 5)?));
        }
        at += 2 + len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 2, 0, 0, 0]);
        b
    }

    fn jpeg(w: u16, h: u16) -> Vec<u8> {
        let mut b = vec![0xFF, 0xD8, 0xFF, 0xE0, 0, 4, 0, 0, 0xFF, 0xC0, 0, 11, 8];
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&[3, 1, 0x22, 0]);
        b
    }

    fn data_url(mime: &str, b: &[u8]) -> String {
        format!("data:{mime};base64,{}", base64::engine::general_purpose::STANDARD.encode(b))
    }

    #[test]
    fn image_sizes_and_tokens() {
        assert_eq!(image_size(&png(640, 480)), Some((640, 480)));
        assert_eq!(image_size(&jpeg(300, 200)), Some((300, 200)));
        assert_eq!(image_tokens(&data_url("image/png", &png(280, 56))), 20);
        assert_eq!(image_tokens(&data_url("image/jpeg", &jpeg(300, 200))), 11 * 8);
        assert_eq!(image_tokens(&data_url("image/png", &png(10, 10))), MIN_IMAGE_TOKENS);
        assert_eq!(image_tokens("https://example.com/cat.png"), DEFAULT_IMAGE_TOKENS);
        assert_eq!(image_tokens("file:///tmp/cat.png"), DEFAULT_IMAGE_TOKENS);
    }

    #[test]
    fn media_parts_cost_their_token_counts_and_text_parts_none() {
        let part = |v: Value| serde_json::from_value::<ContentPart>(v).unwrap();
        let p = part(serde_json::json!({"type": "image_url", "image_url": {"url": "http://x/y.png"}}));
        assert_eq!(part_tokens(&p).unwrap().map(|t| t.0), Some(DEFAULT_IMAGE_TOKENS));
        let p = part(serde_json::json!({"type": "audio_url", "audio_url": {"url": "https://x/a.mp3"}}));
        assert_eq!(part_tokens(&p).unwrap().map(|t| t.0), Some(250));
        let p = part(serde_json::json!({"type": "text", "text": "hi"}));
        assert_eq!(part_tokens(&p).unwrap(), None);
        let p = part(serde_json::json!({"type": "video_url", "video_url": {"url": "file:///v/a.mp4"}}));
        assert_eq!(part_tokens(&p).unwrap().map(|t| t.0), Some(4096), "32 frames of 448 x 448");
        let p = part(serde_json::json!({"type": "video_url"}));
        assert_eq!(part_tokens(&p).unwrap_err().status, 400, "a video part needs its URL");
        let p = part(serde_json::json!({"type": "input_video"}));
        assert_eq!(part_tokens(&p).unwrap_err().status, 400);
        let p = part(serde_json::json!({"type": "image_url"}));
        assert!(part_tokens(&p).is_err());
    }
}

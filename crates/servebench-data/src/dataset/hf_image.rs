//! vLLM's image and video hf parsers (vLLM 0.33): VisionArena, MMStar and MMVU. Each row becomes
//! the text of a chat message followed by one image part, as vLLM's `process_image` builds it
//! (MMVU: one video part, as its `process_video`); output length
//! 128 (or `--hf-output-len` / `--output-len`); no row is filtered; `prompt_tokens` counts the
//! text (special tokens included, as vLLM's `tokenizer.encode`).
//!
//! - **VisionArena** (`lmarena-ai/VisionArena-Chat`: text `conversation[0][0].content`;
//!   `lmarena-ai/vision-arena-bench-v0.1`: `turns[0][0].content`): image `images[0]`.
//! - **MMStar** (`Lin-Chen/MMStar`): text = `question` up to its first "Options:", trimmed;
//!   image `image`.
//! - **MMVU** (`yale-nlp/MMVU`): text = `question`, a space, and the `choices` as `K.V` joined
//!   by spaces; video `video`, a URL into the dataset repo that vLLM points at its local snapshot
//!   (`https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/…` → the snapshot directory):
//!   servebench points it at the directory of a local `--dataset-path` file and keeps the URL
//!   for a Hub source (the server fetches it); a video that is not a URL is sent as `file://`.
//!
//! An image is a Hub image cell — `{"bytes": …, "path": …}` with the bytes base64 (as a Parquet
//! file's binary column reads) or a list of byte values — or a string: a URL (`http(s)://`,
//! `file://`, `data:`) sent as it is, or a local path sent as a `file://` URL (vLLM prepends
//! `file://`). Image bytes are decoded and re-encoded as an RGB JPEG of quality 75, sent as
//! `data:image/jpeg;base64,…`, as vLLM's `process_image` does (`jpeg.rs`).

use super::file::{DataFile, Location};
use super::hf_parsers::HfParser;
use super::media::MediaResolver;
use super::problem::Problem;
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use base64::Engine as _;
use serde_json::Value;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// vLLM's default output length of the image parsers.
pub const DEFAULT_OUTPUT_LEN: usize = 128;

/// Whether `parser` is one of these.
pub fn is_image_parser(parser: HfParser) -> bool {
    matches!(parser, HfParser::VisionArena | HfParser::MmStar | HfParser::Mmvu)
}

/// The repo URL prefix of MMVU's videos.
pub const MMVU_REMOTE_ROOT: &str = "https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main";

/// MMVU's text: the question, then every choice as `K.V`.
fn mmvu_text(row: &Value) -> std::result::Result<String, String> {
    let q = text_at(row, &["question"], "column 'question'")?;
    let choices = at(row, &["choices"], "column 'choices'")?
        .as_object()
        .ok_or("column 'choices' is not an object")?
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => format!("{k}.{s}"),
            other => format!("{k}.{other}"),
        })
        .collect::<Vec<_>>();
    Ok(format!("{q} {}", choices.join(" ")))
}

/// The `video_url` part of an MMVU video reference (see the module docs).
pub fn video_part(reference: &str, local_root: Option<&std::path::Path>) -> Arc<str> {
    let url = match (reference.strip_prefix(MMVU_REMOTE_ROOT), local_root) {
        (Some(rest), Some(root)) => {
            let path = root.join(rest.trim_start_matches('/'));
            super::media::file_url(&std::path::absolute(&path).unwrap_or(path))
        }
        _ if ["http://", "https://", "file://"].iter().any(|p| reference.starts_with(p)) => {
            reference.to_string()
        }
        _ => format!("file://{reference}"),
    };
    let url = Value::from(url).to_string();
    Arc::from(format!(r#"{{"type":"video_url","video_url":{{"url":{url}}}}}"#))
}

fn at<'a>(v: &'a Value, path: &[&str], what: &str) -> std::result::Result<&'a Value, String> {
    let mut cur = v;
    for p in path {
        cur = match p.parse::<usize>() {
            Ok(i) => cur.get(i),
            Err(_) => cur.get(*p),
        }
        .ok_or_else(|| format!("{what} is missing"))?;
    }
    Ok(cur)
}

fn text_at(v: &Value, path: &[&str], what: &str) -> std::result::Result<String, String> {
    at(v, path, what)?.as_str().map(str::to_string).ok_or_else(|| format!("{what} is not text"))
}

/// The text and image cell of a row.
pub fn text_and_image<'a>(
    parser: HfParser,
    id: &str,
    row: &'a Value,
) -> std::result::Result<(String, &'a Value), String> {
    match parser {
        HfParser::VisionArena if id == "lmarena-ai/vision-arena-bench-v0.1" => Ok((
            text_at(row, &["turns", "0", "0", "content"], "turns[0][0].content")?,
            at(row, &["images", "0"], "images[0]")?,
        )),
        HfParser::VisionArena => Ok((
            text_at(row, &["conversation", "0", "0", "content"], "conversation[0][0].content")?,
            at(row, &["images", "0"], "images[0]")?,
        )),
        HfParser::Mmvu => Ok((mmvu_text(row)?, at(row, &["video"], "column 'video'")?)),
        HfParser::MmStar => {
            let q = text_at(row, &["question"], "column 'question'")?;
            let text = q.split("Options:").next().unwrap_or("").trim().to_string();
            Ok((text, at(row, &["image"], "column 'image'")?))
        }
        other => Err(format!("{} is not an image parser", other.name())),
    }
}

/// The URL sent for an image cell.
pub fn image_url(cell: &Value, media: &MediaResolver) -> std::result::Result<Arc<str>, Problem> {
    let bytes = match cell {
        Value::String(s) => return media.url(s).map_err(|p| p.problem),
        Value::Object(o) => match o.get("bytes") {
            Some(Value::String(b64)) => base64::engine::general_purpose::STANDARD
                .decode(b64.trim())
                .map_err(|e| Problem::caused("image bytes are not base64", e))?,
            Some(Value::Array(a)) => a
                .iter()
                .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect::<Option<Vec<u8>>>()
                .ok_or("image bytes are not a list of byte values")?,
            _ => match o.get("path").and_then(Value::as_str) {
                Some(p) if !p.is_empty() => return media.url(p).map_err(|p| p.problem),
                _ => return Err("an image cell without bytes or path".into()),
            },
        },
        _ => return Err("an image is neither a {bytes, path} cell nor a path or URL".into()),
    };
    // As vLLM's process_image: decoded, converted to RGB, re-encoded as a quality-75 JPEG.
    let jpeg = super::jpeg::reencode_as_jpeg(&bytes)?;
    let b64 = base64::engine::general_purpose::STANDARD.encode(&jpeg);
    Ok(Arc::from(format!("data:image/jpeg;base64,{b64}")))
}

/// The `image_url` content part of `url`.
pub fn image_part(url: &str) -> Arc<str> {
    let url = Value::from(url).to_string();
    Arc::from(format!(r#"{{"type":"image_url","image_url":{{"url":{url}}}}}"#))
}

/// Which parser reads the rows: the parser, the dataset id it was chosen by, and the directory
/// of a local source (MMVU's videos are found there).
#[derive(Debug, Clone, Copy)]
pub struct Reader<'a> {
    pub parser: HfParser,
    pub id: &'a str,
    pub local_root: Option<&'a std::path::Path>,
}

/// Builds the workload of an image parser.
pub fn generate(
    reader: Reader<'_>,
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let Reader { parser, id, local_root } = reader;
    for (at, row) in &rows {
        text_and_image(parser, id, row)
            .map_err(|p| file.error(*at, p, format!("fix the row ({} reads it)", parser.name())))?;
    }
    shuffle_source(&mut rows, sampling);
    let media = MediaResolver::new(false);
    let output = output_len.unwrap_or(DEFAULT_OUTPUT_LEN);
    let samples = collect_samples(&rows, sampling.num_prompts, |(at, row)| {
        let (text, cell) = text_and_image(parser, id, row).map_err(BenchError::dataset)?;
        let part = if parser == HfParser::Mmvu {
            let reference =
                cell.as_str().ok_or_else(|| file.error(*at, "column 'video' is not text", "fix the row"))?;
            video_part(reference, local_root)
        } else {
            let url =
                image_url(cell, &media).map_err(|p| file.error_problem(*at, p, "fix the row's image"))?;
            image_part(&url)
        };
        let prompt_len = tok.encode(&text, true)?.len();
        let mut s = Sample::text(text, prompt_len, output);
        s.multimodal = Some(vec![part].into());
        Ok(Some(s))
    })?;
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mmstar_keeps_the_question_before_its_options() {
        let row = json!({"question": "Which animal is shown?\nOptions: A: cat, B: dog", "image": "/x.png"});
        let (text, cell) = text_and_image(HfParser::MmStar, "Lin-Chen/MMStar", &row).unwrap();
        assert_eq!(text, "Which animal is shown?");
        assert_eq!(cell, "/x.png");
    }

    #[test]
    fn mmvu_joins_the_choices_and_points_the_video_at_the_local_snapshot() {
        let row = json!({"question": "What happens next?", "choices": {"A": "It falls", "B": "It rises"},
            "video": format!("{MMVU_REMOTE_ROOT}/videos/Physics/1.mp4")});
        let (text, cell) = text_and_image(HfParser::Mmvu, "yale-nlp/MMVU", &row).unwrap();
        assert_eq!(text, "What happens next? A.It falls B.It rises");
        let p = video_part(cell.as_str().unwrap(), Some(std::path::Path::new("/data/mmvu")));
        assert_eq!(
            &*p,
            r#"{"type":"video_url","video_url":{"url":"file:///data/mmvu/videos/Physics/1.mp4"}}"#
        );
        let remote = video_part(cell.as_str().unwrap(), None);
        assert!(remote.contains("https://huggingface.co/datasets/yale-nlp/MMVU/resolve/main/videos"));
        assert!(video_part("clips/a.mp4", None).contains("file://clips/a.mp4"), "vLLM prefixes file://");
    }

    #[test]
    fn image_cells_go_out_as_vllm_sends_them_rgb_jpeg_data_urls() {
        // A real 56×28 RGBA PNG (what a Hub image cell holds), base64 or a list of bytes.
        let img =
            image::RgbaImage::from_fn(56, 28, |x, y| image::Rgba([(x * 4) as u8, (y * 8) as u8, 9, 77]));
        let mut png = std::io::Cursor::new(Vec::new());
        image::DynamicImage::ImageRgba8(img).write_to(&mut png, image::ImageFormat::Png).unwrap();
        let png = png.into_inner();
        let b64 = base64::engine::general_purpose::STANDARD.encode(&png);
        let media = MediaResolver::new(false);
        let url = image_url(&json!({"bytes": b64, "path": "a.png"}), &media).unwrap();
        let payload = url.strip_prefix("data:image/jpeg;base64,").expect("a JPEG data URL, as vLLM sends");
        let jpeg = base64::engine::general_purpose::STANDARD.decode(payload).unwrap();
        let back = image::load_from_memory(&jpeg).unwrap();
        assert_eq!((back.width(), back.height(), back.color()), (56, 28, image::ColorType::Rgb8));
        let list: Vec<u8> = png.clone();
        assert_eq!(image_url(&json!({"bytes": list}), &media).unwrap(), url);
        // URLs are sent as they are; bytes that are no image are a one-line problem.
        assert_eq!(
            &*image_url(&json!("https://example.invalid/a.jpg"), &media).unwrap(),
            "https://example.invalid/a.jpg"
        );
        assert!(image_url(&json!({"bytes": "AAAA"}), &media).unwrap_err().text.contains("cannot be decoded"));
        assert!(image_url(&json!(3), &media).is_err());
    }
}

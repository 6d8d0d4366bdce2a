//! The `custom_image` dataset (vLLM's `CustomImageDataset`): a JSON Lines file, one request per
//! line, in one of two forms:
//!
//! - `{"prompt": "text", "image_files": ["/a.png", "https://…/b.jpg"]}`: the images follow the
//!   text, in that order (`image_files` may be one string, or absent for a text-only line);
//! - `{"content": [{"type": "text", "text": "Compare "}, {"type": "image", "image": "/a.png"},
//!   {"type": "image_url", "image_url": {"url": "/b.png", "detail": "low"}}]}`: interleaved
//!   OpenAI content parts, sent in that order (`image` is shorthand for an `image_url` part;
//!   `image_url` may be a URL string; other keys of a part are kept).
//!
//! `output_tokens` per line as in `custom` (`--custom-output-len`, -1 = per line). Image
//! references are resolved by [`super::media`]: by default the server loads them (`file://`
//! URLs for local paths); `--custom-ensure-client-side-data` loads them here and sends base64
//! data URLs. `prompt_tokens` counts the text only (the content form: its text parts joined).
//! Content-form lines are sent as pre-built chat messages; prompt + images lines as a text part
//! then image parts (pre-built too with `--enable-multimodal-chat`). Chat backends only.

use super::custom::check_line_output_tokens;
use super::file::{parse_json_lines_of_form, DataFile, FormHint, Location};
use super::media::{MediaProblem, MediaResolver};
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use serde::Deserialize;
use serde_json::{Map, Value};
use servebench_core::{ChatMessages, Result, TextTokenizer, Workload};
use std::path::PathBuf;
use std::sync::Arc;

/// Options of the custom_image dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomImageConfig {
    /// `--dataset-path` (a `.jsonl` file).
    pub path: PathBuf,
    /// `--custom-output-len`: a fixed output length, or None (-1) for each line's
    /// `output_tokens`.
    pub output_len: Option<usize>,
    /// `--custom-ensure-client-side-data`: load images here and send them as data URLs.
    pub ensure_client_side_data: bool,
}

/// `image_files`: one reference or a list.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum Images {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    image_files: Option<Images>,
    #[serde(default)]
    content: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "super::custom::whole_number")]
    output_tokens: Option<i64>,
}

const FORMS: &str = "each line is {\"prompt\": \"text\", \"image_files\": [\"/path.png\"]} or \
                     {\"content\": [{\"type\": \"text\", \"text\": \"…\"}, {\"type\": \"image\", \"image\": \"/path.png\"}]}";

/// One line as it is sent: text and parts, or interleaved content.
enum Request {
    TextThenImages { text: String, images: Vec<String> },
    Content(Vec<Part>),
}

/// A content part of the content form.
enum Part {
    Text(String, Map<String, Value>),
    /// An image reference and the `image_url` object's other keys (`detail`).
    Image(String, Map<String, Value>),
}

fn parse_part(v: &Value) -> std::result::Result<Part, String> {
    let bad = || "a content part must be an object of type 'text', 'image', or 'image_url'".to_string();
    let obj = v.as_object().ok_or_else(bad)?;
    let string_of = |key: &str| -> std::result::Result<String, String> {
        obj.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("a '{key}' part needs a string '{key}' value"))
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("text") => Ok(Part::Text(string_of("text")?, obj.clone())),
        Some("image") => Ok(Part::Image(string_of("image")?, Map::new())),
        Some("image_url") => match obj.get("image_url") {
            Some(Value::String(u)) => Ok(Part::Image(u.clone(), Map::new())),
            Some(Value::Object(o)) => {
                let url = o
                    .get("url")
                    .and_then(Value::as_str)
                    .ok_or("an 'image_url' object needs a string 'url'")?;
                let mut rest = o.clone();
                rest.remove("url");
                Ok(Part::Image(url.to_string(), rest))
            }
            _ => Err("an 'image_url' part needs a URL string or an object with 'url'".into()),
        },
        _ => Err(bad()),
    }
}

fn request_of(line: Line) -> std::result::Result<Request, String> {
    match (line.prompt, line.content) {
        (Some(text), None) => {
            let images = match line.image_files {
                None => Vec::new(),
                Some(Images::One(s)) => vec![s],
                Some(Images::Many(v)) => v,
            };
            Ok(Request::TextThenImages { text, images })
        }
        (None, Some(parts)) if line.image_files.is_none() => {
            Ok(Request::Content(parts.iter().map(parse_part).collect::<std::result::Result<_, _>>()?))
        }
        (None, None) => Err("the line has neither 'prompt' nor 'content'".into()),
        _ => Err("give either 'prompt' (with 'image_files') or 'content', not both".into()),
    }
}

fn image_part(url: &str, mut rest: Map<String, Value>) -> Value {
    rest.insert("url".into(), Value::String(url.to_string()));
    let mut part = Map::new();
    part.insert("type".into(), Value::String("image_url".into()));
    part.insert("image_url".into(), Value::Object(rest));
    Value::Object(part)
}

/// Builds the custom_image workload (image references resolved in parallel, each once).
pub fn generate_custom_image(
    cfg: &CustomImageConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let file = DataFile::new(&cfg.path);
    let text = file.read_text()?;
    let lines: Vec<(Location, Line)> = parse_json_lines_of_form(&file, &text, FormHint::Always(FORMS))?;
    let mut requests = Vec::with_capacity(lines.len());
    for (at, line) in lines {
        if cfg.output_len.is_none() {
            check_line_output_tokens(&file, at, line.output_tokens)?;
        }
        let output = cfg.output_len.unwrap_or_else(|| line.output_tokens.unwrap_or(1).max(1) as usize);
        let request = request_of(line).map_err(|p| file.error(at, p, FORMS))?;
        requests.push((at, request, output));
    }
    shuffle_source(&mut requests, sampling);
    let media = MediaResolver::new(cfg.ensure_client_side_data);
    let at_line = |at: Location, p: MediaProblem| file.error_problem(at, p.problem, p.fix);
    let json = |v: &Value| {
        serde_json::to_string(v)
            .map(Arc::<str>::from)
            .map_err(|e| file.error(Location::File, e.to_string(), "report this"))
    };
    let samples = collect_samples(&requests, sampling.num_prompts, |(at, request, output)| {
        let sample = match request {
            Request::TextThenImages { text, images } => {
                let parts = images
                    .iter()
                    .map(|r| media.image_part(r).map_err(|p| at_line(*at, p)))
                    .collect::<Result<Vec<Arc<str>>>>()?;
                let mut s = Sample::text(text.as_str(), tok.encode(text, true)?.len(), *output);
                s.multimodal = (!parts.is_empty()).then(|| Arc::from(parts));
                s
            }
            Request::Content(parts) => {
                let mut text = String::new();
                let mut out = Vec::with_capacity(parts.len());
                let mut images = 0u32;
                for part in parts {
                    match part {
                        Part::Text(t, obj) => {
                            text.push_str(t);
                            out.push(json(&Value::Object(obj.clone()))?);
                        }
                        Part::Image(r, rest) => {
                            let url = media.url(r).map_err(|p| at_line(*at, p))?;
                            out.push(json(&image_part(&url, rest.clone()))?);
                            images = images.saturating_add(1);
                        }
                    }
                }
                let prompt_len = tok.encode(&text, true)?.len();
                let mut s = Sample::text(text, prompt_len, *output);
                s.messages = Some(ChatMessages::user_content(&out, images));
                s
            }
        };
        Ok(Some(sample))
    })?;
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::media::file_url;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    fn tok() -> Arc<dyn TextTokenizer> {
        crate::load_tokenizer("cl100k_base").unwrap()
    }

    fn build(lines: &[Value], client_side: bool, dir: &std::path::Path) -> Result<Workload> {
        let path = dir.join("images.jsonl");
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&path, text.join("\n")).unwrap();
        let cfg = CustomImageConfig { path, output_len: Some(32), ensure_client_side_data: client_side };
        let sampling = Sampling { num_prompts: lines.len(), shuffle: false, ..Sampling::default() };
        generate_custom_image(&cfg, &sampling, tok().as_ref())
    }

    fn parts(spec: &servebench_core::RequestSpec) -> Vec<Value> {
        spec.multimodal.iter().flat_map(|p| p.iter()).map(|p| serde_json::from_str(p).unwrap()).collect()
    }

    fn content(spec: &servebench_core::RequestSpec) -> Value {
        let v: Value = serde_json::from_str(&spec.messages.as_ref().unwrap().json).unwrap();
        assert_eq!(v[0]["role"], "user");
        v[0]["content"].clone()
    }

    #[test]
    fn image_files_follow_the_text_and_content_keeps_its_order() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (dir.path().join("a.png"), dir.path().join("b.png"), dir.path().join("c.png"));
        let w = build(
            &[
                serde_json::json!({"prompt": "Compare the first two charts.", "image_files": [a, b]}),
                serde_json::json!({"content": [
                    {"type": "text", "text": "Compare "},
                    {"type": "image", "image": c},
                    {"type": "text", "text": " with "},
                    {"type": "image_url", "image_url": {"url": "https://x.test/d.png", "detail": "low"}}
                ]}),
                serde_json::json!({"prompt": "just text", "image_files": "data:image/png;base64,Zm9v"}),
            ],
            false,
            dir.path(),
        )
        .unwrap();
        let urls: Vec<Value> = parts(&w.requests[0]).iter().map(|p| p["image_url"]["url"].clone()).collect();
        assert_eq!(urls, [Value::from(file_url(&a)), Value::from(file_url(&b))]);
        assert_eq!(w.requests[0].prompt.text(), Some("Compare the first two charts."));
        assert!(w.requests[0].messages.is_none());
        assert_eq!(w.requests[0].expected_output_tokens, 32);
        let second = &w.requests[1];
        assert!(second.multimodal.is_none());
        assert_eq!(second.prompt.text(), Some("Compare  with "));
        assert_eq!(second.prompt_tokens as usize, tok().encode("Compare  with ", true).unwrap().len());
        assert_eq!(
            content(second),
            serde_json::json!([
                {"type": "text", "text": "Compare "},
                {"type": "image_url", "image_url": {"url": file_url(&c)}},
                {"type": "text", "text": " with "},
                {"type": "image_url", "image_url": {"url": "https://x.test/d.png", "detail": "low"}}
            ])
        );
        assert_eq!(second.media_items(), 2);
        assert_eq!(parts(&w.requests[2])[0]["image_url"]["url"], "data:image/png;base64,Zm9v");
    }

    #[test]
    fn client_side_data_encodes_local_images() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("chart b.png");
        std::fs::write(&a, PNG).unwrap();
        let w = build(
            &[serde_json::json!({"prompt": "p", "image_files": [a.to_str().unwrap(), file_url(&a), "data:image/png;base64,Zm9v"]})],
            true,
            dir.path(),
        )
        .unwrap();
        let urls: Vec<String> = parts(&w.requests[0])
            .iter()
            .map(|p| p["image_url"]["url"].as_str().unwrap().to_string())
            .collect();
        assert!(urls[0].starts_with("data:image/png;base64,"), "{}", urls[0]);
        assert_eq!(urls[0], urls[1]);
        assert_eq!(urls[2], "data:image/png;base64,Zm9v");
        let text = dir.path().join("not_an_image.png");
        std::fs::write(&text, "not an image").unwrap();
        let e = build(&[serde_json::json!({"prompt": "p", "image_files": [text]})], true, dir.path())
            .unwrap_err();
        assert_eq!(e.code().as_str(), "SB204");
        assert!(e.to_string().contains("line 1") && e.to_string().contains("is not an image"), "{e}");
    }

    #[test]
    fn malformed_lines_are_coded_errors_naming_the_line() {
        let dir = tempfile::tempdir().unwrap();
        for (line, needle) in [
            (
                serde_json::json!({"content": [{"type": "audio", "audio": "x.wav"}]}),
                "type 'text', 'image', or 'image_url'",
            ),
            (serde_json::json!({"image_files": ["a.png"]}), "neither 'prompt' nor 'content'"),
            (serde_json::json!({"prompt": "p", "content": []}), "not both"),
            (
                serde_json::json!({"content": [{"type": "image_url", "image_url": {"detail": "low"}}]}),
                "'url'",
            ),
            (serde_json::json!({"prompt": 3}), "invalid type"),
        ] {
            let e = build(&[serde_json::json!({"prompt": "ok"}), line], false, dir.path()).unwrap_err();
            assert_eq!(e.code().as_str(), "SB204", "{e}");
            assert!(e.to_string().contains("line 2") && e.to_string().contains(needle), "{e}");
        }
    }
}

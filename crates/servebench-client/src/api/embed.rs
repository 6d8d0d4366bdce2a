//! The request bodies of vLLM's multimodal embedding backends (`vllm bench serve`, vLLM 0.33),
//! all sent to `POST /v1/embeddings` and answered with one JSON body (docs/backends.md):
//!
//! - `openai-embeddings-clip`: `{model, messages, truncate_prompt_tokens: -1}`, the
//!   embeddings-chat body, except that a request with images sends an **empty** text part
//!   before them (CLIP embeds the image alone); a text-only request sends its text;
//! - `openai-embeddings-vlm2vec`: the same body with the images **first**, then the text
//!   "Represent the given image." (requests at an even index) or "Represent the given image
//!   with the following question: PROMPT" (odd index); a text-only request sends its text;
//! - `infinity-embeddings`: `{model, input}` — the text, or the list of texts of a batch
//!   (Infinity's API takes text; images need `infinity-embeddings-clip`);
//! - `infinity-embeddings-clip`: a text-only request as `infinity-embeddings`; a request with
//!   one image `{model, input: <image URL>, modality: "image"}` (the URL as the dataset built
//!   it: a data URL, an http(s) URL or a `file://` URL).
//!
//! Pre-built chat `messages` (`--enable-multimodal-chat`, `custom_image` lines with interleaved
//! `content`) are sent as they are by the chat-shaped bodies, as vLLM sends a prompt that is
//! already a list of messages; the Infinity bodies cannot carry them.

use std::collections::HashMap;

use serde_json::value::RawValue;
use servebench_core::{BenchError, Prompt, RequestSpec, Result};

use super::{write_json, write_prompt};

/// Which multimodal embedding body (`crate::backend::BackendKind` maps onto it in `pooling.rs`;
/// this module depends on no other of the crate).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmbedKind {
    Clip,
    Vlm2Vec,
    Infinity,
    InfinityClip,
}

impl EmbedKind {
    /// The `--backend` name.
    pub fn name(self) -> &'static str {
        match self {
            EmbedKind::Clip => "openai-embeddings-clip",
            EmbedKind::Vlm2Vec => "openai-embeddings-vlm2vec",
            EmbedKind::Infinity => "infinity-embeddings",
            EmbedKind::InfinityClip => "infinity-embeddings-clip",
        }
    }
}

/// vLLM's VLM2Vec text of an image-only request.
pub const VLM2VEC_IMAGE_ONLY: &str = "Represent the given image.";

/// vLLM's VLM2Vec text before the prompt of a text-and-image request.
pub const VLM2VEC_WITH_QUESTION: &str = "Represent the given image with the following question: ";

fn content_error(backend: EmbedKind, content: &str, fix: &str) -> BenchError {
    BenchError::ContentTypeUnsupported {
        backend: backend.name().into(),
        content: content.into(),
        fix: fix.into(),
    }
}

fn text(backend: EmbedKind, prompt: &Prompt) -> Result<&str> {
    match prompt {
        Prompt::Text(t) => Ok(t),
        Prompt::TokenIds(_) => Err(content_error(
            backend,
            "token-id prompts",
            "drop --prompt-token-ids, or use openai-embeddings or vllm-pooling",
        )),
        Prompt::Batch(_) => Err(content_error(
            backend,
            "batched prompts (one chat conversation per request)",
            "use --random-batch-size 1, or openai-embeddings / infinity-embeddings for batches",
        )),
    }
}

fn text_part(out: &mut Vec<u8>, text: &str) -> Result<()> {
    out.extend_from_slice(br#"{"type":"text","text":"#);
    write_json(out, text)?;
    out.push(b'}');
    Ok(())
}

/// Writes the `messages` value of a CLIP or VLM2Vec embeddings body.
pub(crate) fn write_messages(backend: EmbedKind, spec: &RequestSpec, out: &mut Vec<u8>) -> Result<()> {
    if let Some(m) = &spec.messages {
        out.extend_from_slice(m.json.as_bytes());
        return Ok(());
    }
    let prompt = text(backend, &spec.prompt)?;
    let parts: &[std::sync::Arc<str>] = spec.multimodal.as_deref().unwrap_or(&[]);
    out.extend_from_slice(br#"[{"role":"user","content":["#);
    if parts.is_empty() {
        text_part(out, prompt)?;
    } else if backend == EmbedKind::Vlm2Vec {
        for p in parts {
            out.extend_from_slice(p.as_bytes());
            out.push(b',');
        }
        if spec.index.is_multiple_of(2) {
            text_part(out, VLM2VEC_IMAGE_ONLY)?;
        } else {
            text_part(out, &format!("{VLM2VEC_WITH_QUESTION}{prompt}"))?;
        }
    } else {
        // CLIP: the images alone, after an empty text part.
        text_part(out, "")?;
        for p in parts {
            out.push(b',');
            out.extend_from_slice(p.as_bytes());
        }
    }
    out.extend_from_slice(b"]}]");
    Ok(())
}

/// A content part's type and the raw JSON of its URL (`{"type": T, T: {"url": U}}`).
fn part_url(part: &str) -> Option<(String, &str)> {
    let top: HashMap<&str, &RawValue> = serde_json::from_str(part).ok()?;
    let kind: String = serde_json::from_str(top.get("type")?.get()).ok()?;
    let inner: HashMap<&str, &RawValue> = serde_json::from_str(top.get(kind.as_str())?.get()).ok()?;
    let url = inner.get("url")?.get();
    url.starts_with('"').then_some((kind, url))
}

/// Writes the `input` value of an Infinity body, and `,"modality":…` after it for a media
/// request unless `--extra-body` sets `modality` (`modality_given`).
pub(crate) fn write_infinity_input(
    backend: EmbedKind,
    spec: &RequestSpec,
    modality_given: bool,
    out: &mut Vec<u8>,
) -> Result<()> {
    if spec.messages.is_some() {
        return Err(content_error(
            backend,
            "pre-built chat messages (--enable-multimodal-chat, custom_image `content` lines)",
            "use openai-embeddings-clip, or give the image with `prompt` and `image_files`",
        ));
    }
    let parts: &[std::sync::Arc<str>] = spec.multimodal.as_deref().unwrap_or(&[]);
    match parts {
        [] => write_prompt(out, &spec.prompt),
        [part] if backend == EmbedKind::InfinityClip => {
            let (kind, url) = part_url(part).ok_or_else(|| {
                content_error(backend, "a media part without a URL", "send image_url parts with a `url`")
            })?;
            out.extend_from_slice(url.as_bytes());
            if !modality_given {
                // vLLM: the part type before its first underscore ("image_url" → "image").
                let modality = kind.split('_').next().unwrap_or(&kind);
                out.extend_from_slice(br#","modality":"#);
                write_json(out, modality)?;
            }
            Ok(())
        }
        [_] => Err(BenchError::MultimodalUnsupported {
            backend: backend.name().into(),
            detail: " (Infinity's text embeddings take no images; use --backend infinity-embeddings-clip)"
                .into(),
        }),
        _ => Err(content_error(
            backend,
            "several images in one request (Infinity embeds one input of one modality)",
            "use one image per request (--random-mm-base-items-per-request 1, one image_files entry)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendKind, TargetConfig};
    use crate::body::BodyTemplate;
    use serde_json::{json, Value};
    use std::sync::Arc;

    const IMAGE: &str = r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}"#;

    fn cfg() -> TargetConfig {
        TargetConfig { model: "m".into(), ..TargetConfig::default() }
    }

    fn spec(index: u64, prompt: &str, images: usize) -> RequestSpec {
        let mut s = RequestSpec::new(index, Prompt::Text(Arc::from(prompt)), 3, 0);
        if images > 0 {
            s.multimodal = Some(vec![Arc::<str>::from(IMAGE); images].into());
        }
        s
    }

    fn body(kind: BackendKind, cfg: &TargetConfig, s: &RequestSpec) -> Value {
        let t = BodyTemplate::new(kind, cfg).unwrap();
        serde_json::from_slice(&t.build_spec(s).unwrap()).unwrap()
    }

    fn image() -> Value {
        serde_json::from_str(IMAGE).unwrap()
    }

    #[test]
    fn clip_sends_an_empty_text_part_before_the_images_as_vllm_does() {
        let b = body(BackendKind::EmbeddingsClip, &cfg(), &spec(0, "a cat", 1));
        assert_eq!(
            b,
            json!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":""},image()]}],
                "truncate_prompt_tokens":-1})
        );
        let b = body(BackendKind::EmbeddingsClip, &cfg(), &spec(0, "a cat", 0));
        assert_eq!(b["messages"][0]["content"], json!([{"type":"text","text":"a cat"}]));
    }

    #[test]
    fn vlm2vec_puts_images_first_and_alternates_vllms_texts_by_index() {
        let even = body(BackendKind::EmbeddingsVlm2Vec, &cfg(), &spec(4, "what?", 1));
        assert_eq!(
            even,
            json!({"model":"m","messages":[{"role":"user","content":[image(),
                {"type":"text","text":"Represent the given image."}]}],"truncate_prompt_tokens":-1})
        );
        let odd = body(BackendKind::EmbeddingsVlm2Vec, &cfg(), &spec(5, "what?", 1));
        assert_eq!(
            odd["messages"][0]["content"][1]["text"],
            "Represent the given image with the following question: what?"
        );
        let text_only = body(BackendKind::EmbeddingsVlm2Vec, &cfg(), &spec(5, "what?", 0));
        assert_eq!(text_only["messages"][0]["content"], json!([{"type":"text","text":"what?"}]));
    }

    #[test]
    fn infinity_bodies_like_vllm() {
        let b = body(BackendKind::Infinity, &cfg(), &spec(0, "hello", 0));
        assert_eq!(b, json!({"model":"m","input":"hello"}));
        let batch: Arc<[Arc<str>]> = vec![Arc::from("x"), Arc::from("y")].into();
        let b = body(BackendKind::Infinity, &cfg(), &RequestSpec::new(0, Prompt::Batch(batch), 2, 0));
        assert_eq!(b["input"], json!(["x", "y"]));
        let b = body(BackendKind::InfinityClip, &cfg(), &spec(0, "a cat", 1));
        assert_eq!(b, json!({"model":"m","input":"data:image/png;base64,AAAA","modality":"image"}));
        let b = body(BackendKind::InfinityClip, &cfg(), &spec(0, "a cat", 0));
        assert_eq!(b, json!({"model":"m","input":"a cat"}));
        // --extra-body wins, without a duplicate key.
        let mut c = cfg();
        c.extra_body.insert("modality".into(), "audio".into());
        let t = BodyTemplate::new(BackendKind::InfinityClip, &c).unwrap();
        let raw = t.build_spec(&spec(0, "", 1)).unwrap();
        assert_eq!(String::from_utf8_lossy(&raw).matches("modality").count(), 1);
        assert_eq!(serde_json::from_slice::<Value>(&raw).unwrap()["modality"], "audio");
    }

    #[test]
    fn infinity_refuses_what_its_api_cannot_carry() {
        let e = BodyTemplate::new(BackendKind::Infinity, &cfg()).unwrap().build_spec(&spec(0, "x", 1));
        assert_eq!(e.unwrap_err().code().as_str(), "SB110");
        let e = BodyTemplate::new(BackendKind::InfinityClip, &cfg()).unwrap().build_spec(&spec(0, "x", 2));
        assert_eq!(e.unwrap_err().code().as_str(), "SB111");
        let ids = RequestSpec::new(0, Prompt::TokenIds(Arc::from(vec![1u32])), 1, 0);
        let e = BodyTemplate::new(BackendKind::EmbeddingsClip, &cfg()).unwrap().build_spec(&ids);
        assert_eq!(e.unwrap_err().code().as_str(), "SB111");
    }
}

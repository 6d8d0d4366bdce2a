//! Request bodies of the Responses API and the pooling APIs (embeddings, embeddings-chat,
//! pooling, rerank), laid out as `vllm bench serve` sends them (docs/backends.md):
//!
//! - `openai-responses` → `{model, input, max_output_tokens, stream: true, store: false}`
//!   (+ `ignore_eos` when set), then sampling and `--extra-body`;
//! - `openai-embeddings` → `{model, input}` where `input` is the text, the token ids, or the list
//!   of texts of a batch (`--random-batch-size`);
//! - `openai-embeddings-chat` → `{model, messages: [{role: user, content: [{type: text, …},
//!   <multimodal parts>]}]}`;
//! - `vllm-pooling` → `{model, input, truncate_prompt_tokens: -1}`;
//! - `vllm-rerank` → `{model, query, documents, truncate_prompt_tokens: -1}`.
//!
//! `--extra-body` is laid over every body (it wins). Pooling bodies take no sampling parameters
//! (rejected before the run with SB112).

use std::sync::Arc;

use bytes::Bytes;
use servebench_core::{BenchError, Prompt, RequestSpec, Result};

use crate::backend::{write_json, write_prompt, BackendKind, TargetConfig};

/// One body field of an extended body.
#[derive(Debug, Clone)]
enum ExtSlot {
    Fixed(String),
    /// `input` (text, token ids or a batch of texts).
    Input,
    /// Chat-style `messages` of one user turn.
    Messages,
    /// `max_output_tokens`.
    MaxOutputTokens,
    /// Rerank `query`.
    Query,
    /// Rerank `documents`.
    Documents,
    /// Infinity `input` (and `modality` for an image; `body_embed.rs`).
    InfinityInput,
}

/// The resolved field list of a Responses or pooling body.
#[derive(Debug, Clone)]
pub struct ExtBody {
    backend: BackendKind,
    fields: Vec<(String, ExtSlot)>,
    /// `--extra-body` sets `modality` (Infinity bodies then write none of their own).
    modality_given: bool,
    /// The multipart form of `openai-audio` (`body_audio.rs`).
    audio: Option<crate::body_audio::AudioForm>,
}

fn json(v: &impl serde::Serialize) -> Result<String> {
    serde_json::to_string(v).map_err(|e| BenchError::config("--extra-body", e.to_string(), "pass valid JSON"))
}

impl BackendKind {
    /// Pooling backends answer with one JSON body and generate no tokens.
    pub fn is_pooling(self) -> bool {
        matches!(
            self,
            BackendKind::Embeddings
                | BackendKind::EmbeddingsChat
                | BackendKind::EmbeddingsClip
                | BackendKind::EmbeddingsVlm2Vec
                | BackendKind::Infinity
                | BackendKind::InfinityClip
                | BackendKind::Pooling
                | BackendKind::Rerank
        )
    }

    /// Whether the backend's body can carry token-id prompts.
    pub fn takes_token_ids(self) -> bool {
        matches!(self, BackendKind::Completions | BackendKind::Embeddings | BackendKind::Pooling)
    }

    /// Whether the backend's body can carry multimodal content parts (images).
    pub fn takes_multimodal(self) -> bool {
        self.takes_messages() || self == BackendKind::InfinityClip
    }

    /// Whether the backend's body has chat `messages` (pre-built ones can be sent as they are).
    pub fn takes_messages(self) -> bool {
        matches!(
            self,
            BackendKind::Chat
                | BackendKind::EmbeddingsChat
                | BackendKind::EmbeddingsClip
                | BackendKind::EmbeddingsVlm2Vec
        )
    }
}

impl ExtBody {
    /// The field list for `backend`, or `None` for completions/chat (built by `BodyTemplate`).
    pub fn new(backend: BackendKind, cfg: &TargetConfig) -> Result<Option<Self>> {
        let model = ExtSlot::Fixed(json(&cfg.model)?);
        let mut fields: Vec<(String, ExtSlot)> = vec![("model".into(), model)];
        let minus_one = || ExtSlot::Fixed("-1".into());
        match backend {
            BackendKind::Responses => {
                fields.push(("input".into(), ExtSlot::Input));
                fields.push(("max_output_tokens".into(), ExtSlot::MaxOutputTokens));
                fields.push(("stream".into(), ExtSlot::Fixed("true".into())));
                fields.push(("store".into(), ExtSlot::Fixed("false".into())));
                if cfg.ignore_eos {
                    fields.push(("ignore_eos".into(), ExtSlot::Fixed("true".into())));
                }
            }
            BackendKind::Embeddings => fields.push(("input".into(), ExtSlot::Input)),
            BackendKind::EmbeddingsChat => fields.push(("messages".into(), ExtSlot::Messages)),
            BackendKind::EmbeddingsClip | BackendKind::EmbeddingsVlm2Vec => {
                fields.push(("messages".into(), ExtSlot::Messages));
                fields.push(("truncate_prompt_tokens".into(), minus_one()));
            }
            BackendKind::Infinity | BackendKind::InfinityClip => {
                fields.push(("input".into(), ExtSlot::InfinityInput));
            }
            BackendKind::Audio => {
                let over = cfg.sampling.iter().chain(cfg.extra_body.iter());
                let audio = Some(crate::body_audio::AudioForm::new(&cfg.model, cfg.ignore_eos, over)?);
                return Ok(Some(ExtBody { backend, fields: Vec::new(), modality_given: false, audio }));
            }
            BackendKind::Pooling => {
                fields.push(("input".into(), ExtSlot::Input));
                fields.push(("truncate_prompt_tokens".into(), minus_one()));
            }
            BackendKind::Rerank => {
                fields.push(("query".into(), ExtSlot::Query));
                fields.push(("documents".into(), ExtSlot::Documents));
                fields.push(("truncate_prompt_tokens".into(), minus_one()));
            }
            _ => return Ok(None),
        }
        let sampling = if backend.is_pooling() { None } else { Some(cfg.sampling.iter()) };
        for (k, v) in sampling.into_iter().flatten().chain(cfg.extra_body.iter()) {
            let value = ExtSlot::Fixed(json(v)?);
            match fields.iter_mut().find(|(key, _)| key == k) {
                Some(f) => f.1 = value,
                None => fields.push((k.clone(), value)),
            }
        }
        let modality_given = cfg.extra_body.contains_key("modality");
        let fields = fields.into_iter().map(|(k, v)| Ok((json(&k)?, v))).collect::<Result<Vec<_>>>()?;
        Ok(Some(ExtBody { backend, fields, modality_given, audio: None }))
    }

    /// Whether the response is expected as SSE (Responses with `stream` not overridden).
    pub fn streams(&self) -> bool {
        if let Some(a) = &self.audio {
            return a.streams();
        }
        self.backend == BackendKind::Responses
            && !self
                .fields
                .iter()
                .any(|(k, v)| k == "\"stream\"" && matches!(v, ExtSlot::Fixed(s) if s == "false"))
    }

    fn content_error(&self, content: &str, fix: &str) -> BenchError {
        BenchError::ContentTypeUnsupported {
            backend: self.backend.to_string(),
            content: content.into(),
            fix: fix.into(),
        }
    }

    fn text<'a>(&self, prompt: &'a Prompt) -> Result<&'a Arc<str>> {
        match prompt {
            Prompt::Text(t) => Ok(t),
            Prompt::TokenIds(_) => Err(self.content_error(
                "token-id prompts",
                "drop --prompt-token-ids, or use openai, openai-embeddings or vllm-pooling",
            )),
            Prompt::Batch(_) => Err(self.content_error(
                "batched prompts",
                "use --random-batch-size 1, or openai-embeddings, vllm-pooling or vllm-rerank",
            )),
        }
    }

    /// Serializes the body of `spec`.
    pub fn build(&self, spec: &RequestSpec) -> Result<Bytes> {
        if let Some(a) = &self.audio {
            return a.build(spec);
        }
        let media = spec.multimodal.as_ref().is_some_and(|p| !p.is_empty()) || spec.messages.is_some();
        if media && !self.backend.takes_multimodal() {
            return Err(BenchError::MultimodalUnsupported {
                backend: self.backend.to_string(),
                detail: String::new(),
            });
        }
        let mut out: Vec<u8> = Vec::with_capacity(256 + prompt_len(&spec.prompt));
        out.push(b'{');
        for (i, (key, slot)) in self.fields.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(key.as_bytes());
            out.push(b':');
            match slot {
                ExtSlot::Fixed(s) => out.extend_from_slice(s.as_bytes()),
                ExtSlot::MaxOutputTokens => {
                    out.extend_from_slice(spec.expected_output_tokens.to_string().as_bytes())
                }
                ExtSlot::Input => {
                    if self.backend == BackendKind::Responses {
                        let text = self.text(&spec.prompt)?;
                        write_json(&mut out, &**text)?;
                    } else {
                        write_prompt(&mut out, &spec.prompt)?;
                    }
                }
                ExtSlot::InfinityInput => crate::body_embed::write_infinity_input(
                    embed_kind(self.backend),
                    spec,
                    self.modality_given,
                    &mut out,
                )?,
                ExtSlot::Messages if self.backend != BackendKind::EmbeddingsChat => {
                    crate::body_embed::write_messages(embed_kind(self.backend), spec, &mut out)?
                }
                ExtSlot::Messages => match &spec.messages {
                    Some(m) => out.extend_from_slice(m.json.as_bytes()),
                    None => {
                        let text = self.text(&spec.prompt)?;
                        out.extend_from_slice(br#"[{"role":"user","content":[{"type":"text","text":"#);
                        write_json(&mut out, &**text)?;
                        out.push(b'}');
                        for part in spec.multimodal.iter().flat_map(|p| p.iter()) {
                            out.push(b',');
                            out.extend_from_slice(part.as_bytes());
                        }
                        out.extend_from_slice(b"]}]");
                    }
                },
                ExtSlot::Query => {
                    let (query, _) = self.rerank_parts(spec)?;
                    write_json(&mut out, &*query)?;
                }
                ExtSlot::Documents => {
                    let (_, docs) = self.rerank_parts(spec)?;
                    write_json(&mut out, &*docs)?;
                }
            }
        }
        out.push(b'}');
        Ok(Bytes::from(out))
    }

    /// The query and documents of a rerank request: the dataset's rerank payload when it has
    /// one; else a batch's first text is the query and the others the documents; else the single
    /// prompt is both the query and the one document.
    fn rerank_parts(&self, spec: &RequestSpec) -> Result<(Arc<str>, Vec<Arc<str>>)> {
        if let Some(r) = &spec.rerank {
            return Ok((r.query.clone(), r.documents.to_vec()));
        }
        match &spec.prompt {
            Prompt::Batch(texts) if texts.len() > 1 => Ok((texts[0].clone(), texts[1..].to_vec())),
            Prompt::Batch(texts) if texts.len() == 1 => Ok((texts[0].clone(), vec![texts[0].clone()])),
            other => {
                let t = self.text(other)?;
                Ok((t.clone(), vec![t.clone()]))
            }
        }
    }
}

/// The multimodal embedding body of `backend` (`body_embed.rs`).
fn embed_kind(backend: BackendKind) -> crate::body_embed::EmbedKind {
    use crate::body_embed::EmbedKind;
    match backend {
        BackendKind::EmbeddingsVlm2Vec => EmbedKind::Vlm2Vec,
        BackendKind::Infinity => EmbedKind::Infinity,
        BackendKind::InfinityClip => EmbedKind::InfinityClip,
        _ => EmbedKind::Clip,
    }
}

fn prompt_len(p: &Prompt) -> usize {
    match p {
        Prompt::Text(t) => t.len() + t.len() / 8,
        Prompt::TokenIds(ids) => ids.len() * 7,
        Prompt::Batch(texts) => texts.iter().map(|t| t.len() + t.len() / 8 + 4).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::BodyTemplate;
    use serde_json::{json as j, Value};
    use servebench_core::RerankPayload;

    fn cfg() -> TargetConfig {
        TargetConfig { model: "m".into(), ..TargetConfig::default() }
    }

    fn body(kind: BackendKind, cfg: &TargetConfig, spec: &RequestSpec) -> Value {
        let t = BodyTemplate::new(kind, cfg).unwrap();
        serde_json::from_slice(&t.build_spec(spec).unwrap()).unwrap()
    }

    fn text(s: &str) -> RequestSpec {
        RequestSpec::new(0, Prompt::Text(Arc::from(s)), 3, 7)
    }

    #[test]
    fn responses_body_like_vllm() {
        let mut c = cfg();
        c.ignore_eos = true;
        c.sampling.insert("temperature".into(), 0.5.into());
        let b = body(BackendKind::Responses, &c, &text("hi"));
        assert_eq!(
            b,
            j!({"model":"m","input":"hi","max_output_tokens":7,"stream":true,"store":false,
                "ignore_eos":true,"temperature":0.5})
        );
        assert!(BodyTemplate::new(BackendKind::Responses, &c).unwrap().streams());
        c.extra_body.insert("stream".into(), false.into());
        assert!(!BodyTemplate::new(BackendKind::Responses, &c).unwrap().streams());
        let t = BodyTemplate::new(BackendKind::Responses, &cfg()).unwrap();
        let ids = RequestSpec::new(0, Prompt::TokenIds(Arc::from(vec![1u32])), 1, 1);
        let e = t.build_spec(&ids).unwrap_err();
        assert_eq!(e.code().as_str(), "SB111");
    }

    #[test]
    fn pooling_bodies_like_vllm() {
        let b = body(BackendKind::Embeddings, &cfg(), &text("a"));
        assert_eq!(b, j!({"model":"m","input":"a"}));
        let ids = RequestSpec::new(0, Prompt::TokenIds(Arc::from(vec![5u32, 6])), 2, 0);
        assert_eq!(body(BackendKind::Embeddings, &cfg(), &ids)["input"], j!([5, 6]));
        let batch: Arc<[Arc<str>]> = vec![Arc::from("x"), Arc::from("y\"")].into();
        let batch = RequestSpec::new(0, Prompt::Batch(batch), 2, 0);
        assert_eq!(body(BackendKind::Embeddings, &cfg(), &batch)["input"], j!(["x", "y\""]));
        assert_eq!(
            body(BackendKind::Pooling, &cfg(), &text("a")),
            j!({"model":"m","input":"a","truncate_prompt_tokens":-1})
        );
        assert_eq!(
            body(BackendKind::EmbeddingsChat, &cfg(), &text("a")),
            j!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]})
        );
        // Rerank: a batch is [query, documents…]; a single prompt is query and document.
        assert_eq!(
            body(BackendKind::Rerank, &cfg(), &batch),
            j!({"model":"m","query":"x","documents":["y\""],"truncate_prompt_tokens":-1})
        );
        assert_eq!(body(BackendKind::Rerank, &cfg(), &text("q"))["documents"], j!(["q"]));
        let mut r = text("ignored");
        r.rerank =
            Some(Arc::new(RerankPayload { query: Arc::from("q"), documents: vec![Arc::from("d1")].into() }));
        let b = body(BackendKind::Rerank, &cfg(), &r);
        assert_eq!((b["query"].clone(), b["documents"].clone()), (j!("q"), j!(["d1"])));
    }

    #[test]
    fn pooling_ignores_sampling_but_takes_extra_body() {
        let mut c = cfg();
        c.sampling.insert("temperature".into(), 0.5.into());
        c.extra_body.insert("truncate_prompt_tokens".into(), 8.into());
        c.extra_body.insert("dimensions".into(), 4.into());
        let b = body(BackendKind::Pooling, &c, &text("a"));
        assert_eq!(b, j!({"model":"m","input":"a","truncate_prompt_tokens":8,"dimensions":4}));
        assert!(!BodyTemplate::new(BackendKind::Pooling, &c).unwrap().streams());
    }

    #[test]
    fn multimodal_parts_only_where_the_api_takes_them() {
        let mut s = text("a");
        s.multimodal = Some(vec![Arc::from(r#"{"type":"image_url","image_url":{"url":"u"}}"#)].into());
        let b = body(BackendKind::EmbeddingsChat, &cfg(), &s);
        assert_eq!(b["messages"][0]["content"][1]["type"], "image_url");
        for kind in [BackendKind::Embeddings, BackendKind::Responses, BackendKind::Rerank] {
            let e = BodyTemplate::new(kind, &cfg()).unwrap().build_spec(&s).unwrap_err();
            assert_eq!(e.code().as_str(), "SB110", "{kind}");
        }
    }
}

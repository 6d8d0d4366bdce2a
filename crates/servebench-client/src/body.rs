//! Request bodies: the field list of the backend's API family (`api`) with
//! `--extra-body` laid on top (it wins over everything, including `stream`), resolved once per
//! run ([`BodyTemplate`]). Per request only the slots are written — prompt, messages, output
//! length, rerank payload — straight into the output buffer: the prompt is escaped once, never
//! copied into an intermediate JSON tree.

use std::sync::Arc;

use bytes::Bytes;
use servebench_core::{BenchError, ChatMessages, Prompt, RequestSpec, Result};

use crate::api::{self, write_json, write_prompt, BodyShape, Slot};
use crate::backend::{BackendKind, TargetConfig};

/// The resolved request bodies of a run.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    backend: BackendKind,
    encoding: Encoding,
}

#[derive(Debug, Clone)]
enum Encoding {
    Json(JsonBody),
    Multipart(api::audio::AudioForm),
}

/// A JSON body's fields: `(pre-escaped JSON key, slot)` in output order.
#[derive(Debug, Clone)]
struct JsonBody {
    fields: Vec<(String, Slot)>,
    /// Bytes of the fixed parts (a capacity hint).
    fixed_len: usize,
    /// `--extra-body` sets `modality` (Infinity bodies then write none of their own).
    modality_given: bool,
}

impl BodyTemplate {
    /// Builds the bodies of `backend` from `cfg`.
    pub fn new(backend: BackendKind, cfg: &TargetConfig) -> Result<Self> {
        let encoding = match api::body_shape(backend, cfg)? {
            BodyShape::Multipart(form) => Encoding::Multipart(form),
            BodyShape::Json(mut fields) => {
                api::lay_over(&mut fields, &cfg.extra_body)?;
                let mut out = Vec::with_capacity(fields.len());
                let mut fixed_len = 2;
                for (k, v) in fields {
                    let key = api::to_json(&k)?;
                    fixed_len += key.len() + 2 + if let Slot::Fixed(s) = &v { s.len() } else { 64 };
                    out.push((key, v));
                }
                let modality_given = cfg.extra_body.contains_key("modality");
                Encoding::Json(JsonBody { fields: out, fixed_len, modality_given })
            }
        };
        Ok(BodyTemplate { backend, encoding })
    }

    /// Whether the body asks for a streamed response (`stream` not overridden to false; pooling
    /// bodies never stream).
    pub fn streams(&self) -> bool {
        match &self.encoding {
            Encoding::Multipart(form) => form.streams(),
            Encoding::Json(_) if self.backend.is_pooling() => false,
            Encoding::Json(j) => !j
                .fields
                .iter()
                .any(|(k, v)| k == "\"stream\"" && matches!(v, Slot::Fixed(s) if s == "false")),
        }
    }

    /// Serializes the body of one workload request (its prompt, multimodal parts or pre-built
    /// messages, rerank payload, per-request overrides and output length).
    pub fn build_spec(&self, spec: &RequestSpec) -> Result<Bytes> {
        match &self.encoding {
            Encoding::Multipart(form) => form.build(spec),
            Encoding::Json(j) => j.build(self.backend, spec),
        }
    }

    /// Serializes the body of a request of `prompt` asking for `max_tokens`.
    pub fn build(&self, prompt: &Prompt, max_tokens: u32) -> Result<Bytes> {
        self.build_spec(&RequestSpec::new(0, prompt.clone(), 0, max_tokens))
    }

    /// Serializes a chat body whose `messages` is `messages_json`, a pre-serialized JSON array
    /// (a multi-turn history), asking for `max_tokens`. Refused (SB111) by bodies without
    /// `messages`.
    pub fn build_messages(&self, messages_json: &str, max_tokens: u32) -> Result<Bytes> {
        let mut spec = RequestSpec::new(0, Prompt::Text(Arc::from("")), 0, max_tokens);
        spec.messages = Some(ChatMessages { json: Arc::from(messages_json), media_items: 0 });
        self.build_spec(&spec)
    }
}

impl JsonBody {
    fn build(&self, backend: BackendKind, spec: &RequestSpec) -> Result<Bytes> {
        if !self.fields.iter().any(|(_, s)| s.takes_media()) {
            let images = spec.multimodal.as_ref().is_some_and(|p| !p.is_empty())
                || spec.messages.as_ref().is_some_and(|m| m.media_items > 0);
            if images {
                return Err(BenchError::MultimodalUnsupported {
                    backend: backend.to_string(),
                    detail: String::new(),
                });
            }
            if spec.messages.is_some() {
                return Err(BenchError::ContentTypeUnsupported {
                    backend: backend.to_string(),
                    content: "chat messages (a conversation history or pre-built messages)".into(),
                    fix: "use --backend openai-chat".into(),
                });
            }
        }
        let overrides = spec.overrides.as_deref().filter(|o| !o.json.is_empty());
        let replaced: Vec<String> = overrides
            .map(|o| o.keys.iter().map(api::to_json).collect::<Result<_>>())
            .transpose()?
            .unwrap_or_default();
        let extra = overrides.map_or(0, |o| o.json.len() + 1)
            + spec.messages.as_ref().map_or(0, |m| m.json.len())
            + spec.multimodal.iter().flat_map(|p| p.iter()).map(|p| p.len() + 1).sum::<usize>()
            + prompt_len(&spec.prompt);
        let mut out: Vec<u8> = Vec::with_capacity(self.fixed_len + extra);
        out.push(b'{');
        let mut first = true;
        for (key, slot) in self.fields.iter().filter(|(k, _)| !replaced.contains(k)) {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(key.as_bytes());
            out.push(b':');
            self.write_slot(backend, slot, spec, &mut out)?;
        }
        if let Some(o) = overrides {
            if !first {
                out.push(b',');
            }
            out.extend_from_slice(o.json.as_bytes());
        }
        out.push(b'}');
        Ok(Bytes::from(out))
    }

    fn write_slot(
        &self,
        backend: BackendKind,
        slot: &Slot,
        spec: &RequestSpec,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        match slot {
            Slot::Fixed(s) => out.extend_from_slice(s.as_bytes()),
            Slot::MaxTokens => out.extend_from_slice(spec.expected_output_tokens.to_string().as_bytes()),
            Slot::MaxTokensIn(before, after) => {
                out.extend_from_slice(before.as_bytes());
                out.extend_from_slice(spec.expected_output_tokens.to_string().as_bytes());
                out.extend_from_slice(after.as_bytes());
            }
            Slot::Prompt => write_prompt(out, &spec.prompt)?,
            Slot::TextPrompt => write_json(out, &**text_only(backend, &spec.prompt)?)?,
            Slot::Messages => match &spec.messages {
                Some(m) => out.extend_from_slice(m.json.as_bytes()),
                None => {
                    let text = text_only(backend, &spec.prompt)?;
                    out.extend_from_slice(br#"[{"role":"user","content":[{"type":"text","text":"#);
                    write_json(out, &**text)?;
                    out.push(b'}');
                    for part in spec.multimodal.iter().flat_map(|p| p.iter()) {
                        out.push(b',');
                        out.extend_from_slice(part.as_bytes());
                    }
                    out.extend_from_slice(b"]}]");
                }
            },
            Slot::EmbedMessages(kind) => api::write_embed_messages(*kind, spec, out)?,
            Slot::InfinityInput(kind) => api::write_infinity_input(*kind, spec, self.modality_given, out)?,
            Slot::Query => write_json(out, &*rerank_parts(backend, spec)?.0)?,
            Slot::Documents => write_json(out, &*rerank_parts(backend, spec)?.1)?,
        }
        Ok(())
    }
}

/// The text of a field that takes one text prompt (SB111 for token ids or a batch).
fn text_only(backend: BackendKind, prompt: &Prompt) -> Result<&Arc<str>> {
    let refuse = |content: &str, fix: &str| BenchError::ContentTypeUnsupported {
        backend: backend.to_string(),
        content: content.into(),
        fix: fix.into(),
    };
    match prompt {
        Prompt::Text(t) => Ok(t),
        Prompt::TokenIds(_) => Err(refuse(
            "token-id prompts",
            "drop --prompt-token-ids, or use openai, llama.cpp, openai-embeddings or vllm-pooling",
        )),
        Prompt::Batch(_) => Err(refuse(
            "batched prompts",
            "use --random-batch-size 1, or openai-embeddings, vllm-pooling or vllm-rerank",
        )),
    }
}

/// The query and documents of a rerank request: the dataset's rerank payload when it has one;
/// else a batch's first text is the query and the others the documents; else the single prompt
/// is both the query and the one document.
fn rerank_parts(backend: BackendKind, spec: &RequestSpec) -> Result<(Arc<str>, Vec<Arc<str>>)> {
    if let Some(r) = &spec.rerank {
        return Ok((r.query.clone(), r.documents.to_vec()));
    }
    match &spec.prompt {
        Prompt::Batch(texts) if texts.len() > 1 => Ok((texts[0].clone(), texts[1..].to_vec())),
        Prompt::Batch(texts) if texts.len() == 1 => Ok((texts[0].clone(), vec![texts[0].clone()])),
        other => {
            let t = text_only(backend, other)?;
            Ok((t.clone(), vec![t.clone()]))
        }
    }
}

/// A capacity hint for the escaped prompt.
fn prompt_len(p: &Prompt) -> usize {
    match p {
        Prompt::Text(t) => t.len() + t.len() / 8 + 16,
        Prompt::TokenIds(ids) => ids.len() * 7,
        Prompt::Batch(texts) => texts.iter().map(|t| t.len() + t.len() / 8 + 16).sum(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json as j, Value};
    use servebench_core::RerankPayload;

    fn cfg() -> TargetConfig {
        TargetConfig { model: "m".into(), ..TargetConfig::default() }
    }

    fn body(kind: BackendKind, cfg: &TargetConfig, p: Prompt) -> Value {
        let t = BodyTemplate::new(kind, cfg).unwrap();
        serde_json::from_slice(&t.build(&p, 7).unwrap()).unwrap()
    }

    fn spec_body(kind: BackendKind, cfg: &TargetConfig, spec: &RequestSpec) -> Value {
        let t = BodyTemplate::new(kind, cfg).unwrap();
        serde_json::from_slice(&t.build_spec(spec).unwrap()).unwrap()
    }

    fn text(s: &str) -> RequestSpec {
        RequestSpec::new(0, Prompt::Text(Arc::from(s)), 3, 7)
    }

    #[test]
    fn completions_body_like_vllm() {
        let b = body(BackendKind::Completions, &cfg(), Prompt::Text(Arc::from("hi \"x\"\n")));
        assert_eq!(
            b,
            serde_json::json!({"model":"m","prompt":"hi \"x\"\n","max_tokens":7,"stream":true,
                "stream_options":{"include_usage":true},"logprobs":null})
        );
        let mut c = cfg();
        c.ignore_eos = true;
        c.logprobs = Some(2);
        let b = body(BackendKind::Completions, &c, Prompt::TokenIds(Arc::from(vec![1u32, 2, 3])));
        assert_eq!(b["prompt"], serde_json::json!([1, 2, 3]));
        assert_eq!(b["ignore_eos"], true);
        assert_eq!(b["logprobs"], 2);
    }

    #[test]
    fn chat_body_like_vllm() {
        let b = body(BackendKind::Chat, &cfg(), Prompt::Text(Arc::from("hello")));
        assert_eq!(
            b,
            serde_json::json!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hello"}]}],
                "max_completion_tokens":7,"stream":true,"stream_options":{"include_usage":true}})
        );
        let t = BodyTemplate::new(BackendKind::Chat, &cfg()).unwrap();
        assert!(t.build(&Prompt::TokenIds(Arc::from(vec![1u32])), 1).is_err());
    }

    #[test]
    fn extra_body_wins_over_everything() {
        let mut c = cfg();
        c.sampling.insert("temperature".into(), 0.5.into());
        c.sampling.insert("max_tokens".into(), 3.into());
        c.extra_body.insert("temperature".into(), 0.0.into());
        c.extra_body.insert("stream".into(), false.into());
        c.extra_body.insert("model".into(), "other".into());
        let t = BodyTemplate::new(BackendKind::Completions, &c).unwrap();
        assert!(!t.streams());
        let raw = t.build(&Prompt::Text(Arc::from("p")), 7).unwrap();
        let b: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(b["temperature"], 0.0);
        assert_eq!(b["max_tokens"], 3);
        assert_eq!(b["stream"], false);
        assert_eq!(b["model"], "other");
        // No duplicate keys.
        assert_eq!(String::from_utf8_lossy(&raw).matches("\"stream\"").count(), 1);
        assert!(BodyTemplate::new(BackendKind::Completions, &cfg()).unwrap().streams());
    }

    #[test]
    fn responses_body_like_vllm() {
        let mut c = cfg();
        c.ignore_eos = true;
        c.sampling.insert("temperature".into(), 0.5.into());
        let b = spec_body(BackendKind::Responses, &c, &text("hi"));
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
        let b = spec_body(BackendKind::Embeddings, &cfg(), &text("a"));
        assert_eq!(b, j!({"model":"m","input":"a"}));
        let ids = RequestSpec::new(0, Prompt::TokenIds(Arc::from(vec![5u32, 6])), 2, 0);
        assert_eq!(spec_body(BackendKind::Embeddings, &cfg(), &ids)["input"], j!([5, 6]));
        let batch: Arc<[Arc<str>]> = vec![Arc::from("x"), Arc::from("y\"")].into();
        let batch = RequestSpec::new(0, Prompt::Batch(batch), 2, 0);
        assert_eq!(spec_body(BackendKind::Embeddings, &cfg(), &batch)["input"], j!(["x", "y\""]));
        assert_eq!(
            spec_body(BackendKind::Pooling, &cfg(), &text("a")),
            j!({"model":"m","input":"a","truncate_prompt_tokens":-1})
        );
        assert_eq!(
            spec_body(BackendKind::EmbeddingsChat, &cfg(), &text("a")),
            j!({"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]})
        );
        // Rerank: a batch is [query, documents…]; a single prompt is query and document.
        assert_eq!(
            spec_body(BackendKind::Rerank, &cfg(), &batch),
            j!({"model":"m","query":"x","documents":["y\""],"truncate_prompt_tokens":-1})
        );
        assert_eq!(spec_body(BackendKind::Rerank, &cfg(), &text("q"))["documents"], j!(["q"]));
        let mut r = text("ignored");
        r.rerank =
            Some(Arc::new(RerankPayload { query: Arc::from("q"), documents: vec![Arc::from("d1")].into() }));
        let b = spec_body(BackendKind::Rerank, &cfg(), &r);
        assert_eq!((b["query"].clone(), b["documents"].clone()), (j!("q"), j!(["d1"])));
    }

    #[test]
    fn pooling_ignores_sampling_but_takes_extra_body() {
        let mut c = cfg();
        c.sampling.insert("temperature".into(), 0.5.into());
        c.extra_body.insert("truncate_prompt_tokens".into(), 8.into());
        c.extra_body.insert("dimensions".into(), 4.into());
        let b = spec_body(BackendKind::Pooling, &c, &text("a"));
        assert_eq!(b, j!({"model":"m","input":"a","truncate_prompt_tokens":8,"dimensions":4}));
        assert!(!BodyTemplate::new(BackendKind::Pooling, &c).unwrap().streams());
    }

    #[test]
    fn multimodal_parts_only_where_the_api_takes_them() {
        let mut s = text("a");
        s.multimodal = Some(vec![Arc::from(r#"{"type":"image_url","image_url":{"url":"u"}}"#)].into());
        let b = spec_body(BackendKind::EmbeddingsChat, &cfg(), &s);
        assert_eq!(b["messages"][0]["content"][1]["type"], "image_url");
        for kind in [BackendKind::Embeddings, BackendKind::Responses, BackendKind::Rerank] {
            let e = BodyTemplate::new(kind, &cfg()).unwrap().build_spec(&s).unwrap_err();
            assert_eq!(e.code().as_str(), "SB110", "{kind}");
        }
    }
}

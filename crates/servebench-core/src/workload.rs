//! The workload: what each request sends. Built once before the run; prompt text and token ids
//! are shared (`Arc`) so that handing a request to the runner never copies a prompt.

use std::sync::Arc;

/// The prompt of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Prompt {
    /// Text sent as `prompt` (completions) or as the user message (chat).
    Text(Arc<str>),
    /// Token ids sent as `prompt: [ids]` (completions only; `--prompt-token-ids`).
    TokenIds(Arc<[u32]>),
    /// Several texts sent in one request as `input: [..]` (pooling backends with
    /// `--random-batch-size` > 1).
    Batch(Arc<[Arc<str>]>),
}

impl Prompt {
    /// The text of the prompt, if it is text.
    pub fn text(&self) -> Option<&str> {
        match self {
            Prompt::Text(t) => Some(t),
            Prompt::TokenIds(_) | Prompt::Batch(_) => None,
        }
    }
}

/// One request of the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestSpec {
    /// Position in the workload (0-based).
    pub index: u64,
    pub prompt: Prompt,
    /// Prompt length in tokens as the client tokenizer counts it, special tokens (BOS) included.
    pub prompt_tokens: u32,
    /// Output tokens to ask for (`max_tokens` / `max_completion_tokens`).
    pub expected_output_tokens: u32,
    /// Multimodal content parts (chat only), each a pre-serialized JSON object such as
    /// `{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,..."}}`, sent after the
    /// text part. `None` for text-only requests.
    pub multimodal: Option<Arc<[Arc<str>]>>,
    /// A rerank request (`random-rerank` dataset): the query and its documents.
    pub rerank: Option<Arc<RerankPayload>>,
    /// The whole chat `messages` array, built before the run (`--enable-multimodal-chat`, and
    /// `custom_image` rows with interleaved `content`). Chat-style backends send it as it is;
    /// `prompt` then holds the message's text (for counting and `/tokenize` verification) and
    /// `multimodal` is `None` (the parts are inside).
    pub messages: Option<ChatMessages>,
    /// The request's audio clip (`custom_audio`, the ASR sets): uploaded as a file by
    /// `openai-audio`, sent as an `input_audio` part by the chat backends.
    pub audio: Option<Arc<AudioClip>>,
    /// Fields laid over this request's body, replacing fields of the same name (vLLM's
    /// per-request overrides: BFCL's `tools` and `tool_choice`; they win over `--extra-body`).
    pub overrides: Option<Arc<BodyOverrides>>,
}

/// Per-request body fields, serialized once: `"key":value` pairs joined by commas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyOverrides {
    /// The field names.
    pub keys: Vec<String>,
    /// `"k1":v1,"k2":v2` (values are JSON).
    pub json: String,
}

impl BodyOverrides {
    /// Overrides from `(name, JSON value)` pairs.
    pub fn new(fields: Vec<(String, String)>) -> Self {
        let json = fields
            .iter()
            .map(|(k, v)| format!("{}:{v}", serde_json::Value::from(k.as_str())))
            .collect::<Vec<_>>()
            .join(",");
        BodyOverrides { keys: fields.into_iter().map(|(k, _)| k).collect(), json }
    }
}

/// An audio clip as it is sent: a 16-bit PCM WAV file (vLLM re-encodes every clip so), with
/// its duration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AudioClip {
    /// The whole WAV file.
    pub wav: Arc<[u8]>,
    /// Sample frames (samples per channel).
    pub frames: u64,
    /// Samples per second.
    pub sample_rate: u32,
}

impl AudioClip {
    /// Duration in seconds (`frames / sample_rate`; 0 for a rate of 0).
    pub fn seconds(&self) -> f64 {
        if self.sample_rate == 0 {
            return 0.0;
        }
        self.frames as f64 / f64::from(self.sample_rate)
    }
}

impl RequestSpec {
    /// A text-or-token-id request without multimodal parts or rerank payload.
    pub fn new(index: u64, prompt: Prompt, prompt_tokens: u32, expected_output_tokens: u32) -> Self {
        RequestSpec {
            index,
            prompt,
            prompt_tokens,
            expected_output_tokens,
            multimodal: None,
            rerank: None,
            messages: None,
            audio: None,
            overrides: None,
        }
    }

    /// Multimodal items the request carries (parts, or media inside pre-built messages).
    pub fn media_items(&self) -> usize {
        match &self.messages {
            Some(m) => m.media_items as usize,
            None => self.multimodal.as_ref().map_or(0, |p| p.len()),
        }
    }

    /// Replaces the prompt text (`/tokenize` verification rewrites prompts). With pre-built
    /// messages the text is replaced inside them too, which works when the text is the one text
    /// part of the message; otherwise nothing changes and `false` is returned.
    pub fn replace_text(&mut self, text: Arc<str>) -> bool {
        if let Some(m) = &self.messages {
            let Some(old) = self.prompt.text() else { return false };
            let (Ok(old_part), Ok(new_part)) = (text_part(old), text_part(&text)) else { return false };
            if m.json.matches(old_part.as_str()).count() != 1 {
                return false;
            }
            let json = m.json.replacen(old_part.as_str(), &new_part, 1);
            self.messages = Some(ChatMessages { json: Arc::from(json), media_items: m.media_items });
        }
        self.prompt = Prompt::Text(text);
        true
    }
}

/// A chat `messages` array serialized once, before the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessages {
    /// The JSON array, written into the body as it is.
    pub json: Arc<str>,
    /// Media parts (images) inside it.
    pub media_items: u32,
}

impl ChatMessages {
    /// One user message whose content is the text part then `parts` (pre-serialized content
    /// objects), as the chat backends lay out a prompt with multimodal parts:
    /// `[{"role":"user","content":[{"type":"text","text":…},…parts]}]`.
    pub fn user_turn(text: &str, parts: &[Arc<str>]) -> serde_json::Result<ChatMessages> {
        let mut json =
            String::with_capacity(text.len() + parts.iter().map(|p| p.len() + 1).sum::<usize>() + 64);
        json.push_str(r#"[{"role":"user","content":["#);
        json.push_str(&text_part(text)?);
        json.push('}');
        for p in parts {
            json.push(',');
            json.push_str(p);
        }
        json.push_str("]}]");
        Ok(ChatMessages {
            json: Arc::from(json),
            media_items: u32::try_from(parts.len()).unwrap_or(u32::MAX),
        })
    }

    /// One user message whose content is exactly `parts` (interleaved text and media, in the
    /// order given): `[{"role":"user","content":[…parts]}]`.
    pub fn user_content(parts: &[Arc<str>], media_items: u32) -> ChatMessages {
        let mut json = String::from(r#"[{"role":"user","content":["#);
        json.push_str(&parts.join(","));
        json.push_str("]}]");
        ChatMessages { json: Arc::from(json), media_items }
    }
}

/// `{"type":"text","text":<text>` (without the closing brace: the part is matched by prefix).
fn text_part(text: &str) -> serde_json::Result<String> {
    Ok(format!(r#"{{"type":"text","text":{}"#, serde_json::to_string(text)?))
}

/// The body of one rerank request: a query scored against documents (`/v1/rerank`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RerankPayload {
    pub query: Arc<str>,
    pub documents: Arc<[Arc<str>]>,
}

/// The whole workload of a run, in send order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workload {
    pub requests: Vec<RequestSpec>,
    /// Of `requests`, how many repeat an earlier prompt drawn again at random to reach
    /// `--num-prompts` (the dataset had fewer usable prompts; vLLM oversamples the same way).
    /// 0 when none were.
    pub resampled: usize,
}

impl Workload {
    /// The workload of `requests`, none of them resampled.
    pub fn new(requests: Vec<RequestSpec>) -> Self {
        Workload { requests, resampled: 0 }
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Total prompt tokens over the workload.
    pub fn total_prompt_tokens(&self) -> u64 {
        self.requests.iter().map(|r| u64::from(r.prompt_tokens)).sum()
    }

    /// Total expected output tokens over the workload.
    pub fn total_expected_output_tokens(&self) -> u64 {
        self.requests.iter().map(|r| u64::from(r.expected_output_tokens)).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image() -> Arc<str> {
        Arc::from(r#"{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}"#)
    }

    #[test]
    fn user_turn_is_the_chat_layout_of_text_and_parts() {
        let m = ChatMessages::user_turn("say \"hi\"", &[image(), image()]).unwrap();
        let v: serde_json::Value = serde_json::from_str(&m.json).unwrap();
        assert_eq!(
            v,
            serde_json::json!([{"role": "user", "content": [
                {"type": "text", "text": "say \"hi\""},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
            ]}])
        );
        assert_eq!(m.media_items, 2);
        let c = ChatMessages::user_content(&[Arc::from(r#"{"type":"text","text":"a"}"#), image()], 1);
        let v: serde_json::Value = serde_json::from_str(&c.json).unwrap();
        assert_eq!(v[0]["content"][1]["type"], "image_url");
        assert_eq!(v[0]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn replace_text_rewrites_the_text_part_of_prebuilt_messages() {
        let mut s = RequestSpec::new(0, Prompt::Text(Arc::from("old")), 2, 4);
        s.messages = Some(ChatMessages::user_turn("old", &[image()]).unwrap());
        assert!(s.replace_text(Arc::from("new \"text\"")));
        assert_eq!(s.prompt.text(), Some("new \"text\""));
        let m = s.messages.as_ref().unwrap();
        let v: serde_json::Value = serde_json::from_str(&m.json).unwrap();
        assert_eq!(v[0]["content"][0]["text"], "new \"text\"");
        assert_eq!((s.media_items(), m.media_items), (1, 1));
        // Interleaved content: the prompt is the parts' text joined, which no part holds.
        let mut t = RequestSpec::new(0, Prompt::Text(Arc::from("a b")), 2, 4);
        let parts = [
            Arc::from(r#"{"type":"text","text":"a "}"#),
            image(),
            Arc::from(r#"{"type":"text","text":"b"}"#),
        ];
        t.messages = Some(ChatMessages::user_content(&parts, 1));
        let before = t.clone();
        assert!(!t.replace_text(Arc::from("c")));
        assert_eq!(t, before);
        // Without messages the prompt is simply replaced.
        let mut u = RequestSpec::new(0, Prompt::Text(Arc::from("x")), 1, 1);
        assert!(u.replace_text(Arc::from("y")));
        assert_eq!((u.prompt.text(), u.media_items()), (Some("y"), 0));
    }
}

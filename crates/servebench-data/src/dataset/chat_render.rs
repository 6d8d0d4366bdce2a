//! Rendering a dataset's prompt with the tokenizer's chat template, where vLLM 0.33's benchmark
//! client does (its `tokenizer.apply_chat_template(…, tokenize=False)`): the `custom`,
//! `spec_bench` and `speed_bench` datasets and the hf parsers InstructCoder, MT-Bench,
//! HumanEval, GSM8K and Blazedit unless `--skip-chat-template`; MLPerf always; BFCL for its
//! prompt length. The rendered text is what a completions backend sends and what
//! `prompt_tokens` counts (with the tokenizer's special tokens, as vLLM's `tokenizer(text)`).

use super::Sample;
use serde_json::{json, Map, Value};
use servebench_core::{BenchError, ChatMessages, ChatRender, Result, TextTokenizer};
use std::sync::Arc;

/// How a prompt dataset (`custom`, `spec_bench`, `speed_bench`) renders its prompts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PromptTemplate {
    /// Render each prompt as `[{"role": "user", "content": prompt}]` with the chat template
    /// (vLLM: unless `--skip-chat-template`; spec_bench always).
    pub render: bool,
    /// `--chat-template-kwargs`, passed to the rendering where vLLM passes them.
    pub kwargs: Option<Map<String, Value>>,
    /// The backend sends chat messages (`openai-chat`): a rendered prompt keeps its
    /// un-rendered user turn as the request's messages (the server renders its template once).
    pub chat_messages: bool,
}

impl PromptTemplate {
    /// The sample of `prompt`: rendered or not, `prompt_tokens` counting what is rendered.
    pub fn sample(
        &self,
        tok: &dyn TextTokenizer,
        prompt: &str,
        output_len: usize,
        needed_for: impl FnOnce() -> String,
    ) -> Result<Sample> {
        if !self.render {
            return Ok(Sample::text(prompt, tok.encode(prompt, true)?.len(), output_len));
        }
        let turn = user_turn(prompt);
        let rendered = render_for_generation(tok, &turn, self.kwargs.as_ref(), needed_for)?;
        let mut s = Sample::text(rendered.as_str(), tok.encode(&rendered, true)?.len(), output_len);
        if self.chat_messages {
            s.messages = Some(chat_messages(&turn)?);
        }
        Ok(s)
    }
}

/// `[{"role": "user", "content": prompt}]`: the conversation vLLM renders around one prompt.
pub fn user_turn(prompt: &str) -> Value {
    json!([{"role": "user", "content": prompt}])
}

/// Refuses (SB206) a tokenizer without a chat template when the workload needs one;
/// `needed_for` says what needs it.
pub fn require_template(tok: &dyn TextTokenizer, needed_for: impl FnOnce() -> String) -> Result<()> {
    if tok.chat_template().is_some() {
        return Ok(());
    }
    Err(BenchError::ChatTemplateMissing { tokenizer: tok.name().to_string(), needed_for: needed_for() })
}

/// `messages` rendered with the tokenizer's template (SB206 without one, SB207 when it fails).
pub fn render(
    tok: &dyn TextTokenizer,
    messages: &Value,
    opts: &ChatRender<'_>,
    needed_for: impl FnOnce() -> String,
) -> Result<String> {
    let Some(template) = tok.chat_template() else {
        return Err(BenchError::ChatTemplateMissing {
            tokenizer: tok.name().to_string(),
            needed_for: needed_for(),
        });
    };
    template.render(messages, opts)
}

/// [`render`] with vLLM's `add_generation_prompt=True`.
pub fn render_for_generation(
    tok: &dyn TextTokenizer,
    messages: &Value,
    kwargs: Option<&serde_json::Map<String, Value>>,
    needed_for: impl FnOnce() -> String,
) -> Result<String> {
    render(tok, messages, &ChatRender { add_generation_prompt: true, tools: None, kwargs }, needed_for)
}

/// A conversation as the pre-built chat `messages` of a request.
pub fn chat_messages(messages: &Value) -> Result<ChatMessages> {
    let json = serde_json::to_string(messages).map_err(|e| BenchError::dataset_from("chat messages", e))?;
    Ok(ChatMessages { json: Arc::from(json), media_items: 0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::ErrorCode;

    #[test]
    fn prompt_template_renders_with_kwargs_and_keeps_the_turn_for_chat() {
        let p = servebench_testkit::fixtures::smollm2_dir();
        let tok = crate::load_tokenizer(p.to_str().unwrap()).unwrap();
        let plain = PromptTemplate::default().sample(tok.as_ref(), "Hi", 5, String::new).unwrap();
        assert_eq!((&*plain.prompt, plain.prompt_len, plain.output_len), ("Hi", 1, 5));
        let t = PromptTemplate { render: true, kwargs: None, chat_messages: true };
        let s = t.sample(tok.as_ref(), "Hi", 5, String::new).unwrap();
        let want = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n";
        assert_eq!(&*s.prompt, want);
        assert_eq!(s.prompt_len as usize, tok.encode(want, true).unwrap().len());
        let m: Value = serde_json::from_str(&s.messages.unwrap().json).unwrap();
        assert_eq!(m, json!([{"role": "user", "content": "Hi"}]));
        // --chat-template-kwargs reach the template (SmolLM2's ignores unknown variables, so a
        // template of our own shows them).
        let dir = tempfile::tempdir().unwrap();
        std::fs::copy(p.join("tokenizer.json"), dir.path().join("tokenizer.json")).unwrap();
        std::fs::write(
            dir.path().join("chat_template.jinja"),
            "{{ messages[0].content }}{% if enable_thinking is defined and not enable_thinking %} /no_think{% endif %}",
        )
        .unwrap();
        let tok = crate::load_tokenizer(dir.path().to_str().unwrap()).unwrap();
        let mut kwargs = Map::new();
        kwargs.insert("enable_thinking".into(), Value::Bool(false));
        let t = PromptTemplate { render: true, kwargs: Some(kwargs), chat_messages: false };
        assert_eq!(&*t.sample(tok.as_ref(), "Hi", 5, String::new).unwrap().prompt, "Hi /no_think");
    }

    #[test]
    fn a_tokenizer_without_a_template_is_sb206_naming_what_needs_it() {
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let err = render_for_generation(tok.as_ref(), &user_turn("x"), None, || "the custom dataset".into())
            .unwrap_err();
        assert_eq!(err.code(), ErrorCode::ChatTemplateMissing);
        let line = err.to_string();
        assert!(line.contains("cl100k_base") && line.contains("the custom dataset"), "{line}");
    }
}

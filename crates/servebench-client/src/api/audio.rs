//! The request body of `openai-audio` (`POST /v1/audio/transcriptions`), laid out as vLLM 0.33's
//! `vllm bench serve` sends it: a `multipart/form-data` upload whose first part is the audio
//! file (`file`, filename `audio.wav`, `Content-Type: audio/wav`: the clip as a 16-bit PCM WAV),
//! then the text fields in vLLM's order — `model`, `max_completion_tokens`, `stream` (`True`),
//! `language` (`en`), `stream_include_usage` (`True`), `stream_continuous_usage_stats`
//! (`True`), `ignore_eos` (`True`, when set) — then the sampling flags and `--extra-body`, each
//! replacing a field of the same name. Values are written as Python's `str()` writes them
//! (vLLM sends `str(value)`): `True`/`False`, `None`, numbers and strings as they are; objects
//! and arrays, which Python would write as its own repr, as JSON. The prompt is not sent (vLLM
//! sends none). The answer is a chat-shaped event stream (`transcription.chunk`), parsed as the
//! chat backend's.

use bytes::Bytes;
use serde_json::Value;
use servebench_core::{BenchError, RequestSpec, Result};

/// The form boundary (constant per build; 40 characters that no WAV sample run reproduces in
/// practice).
pub const BOUNDARY: &str = "servebench-form-9f3c2a7e5b1d4e0a8c6b2d4f";

/// The `Content-Type` of every `openai-audio` request.
pub const CONTENT_TYPE: &str = "multipart/form-data; boundary=servebench-form-9f3c2a7e5b1d4e0a8c6b2d4f";

/// One text field's value.
#[derive(Debug, Clone)]
enum FormValue {
    Fixed(String),
    /// The request's output length.
    MaxTokens,
}

/// The fields of the form, resolved once per run.
#[derive(Debug, Clone)]
pub struct AudioForm {
    fields: Vec<(String, FormValue)>,
}

/// A JSON value as Python's `str()` writes it.
fn python_str(v: &Value) -> String {
    match v {
        Value::Bool(true) => "True".into(),
        Value::Bool(false) => "False".into(),
        Value::Null => "None".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

/// A form field name with `"`, CR and LF escaped as browsers escape them.
fn field_name(name: &str) -> String {
    name.replace('"', "%22").replace('\r', "%0D").replace('\n', "%0A")
}

impl AudioForm {
    /// The form fields of a run: the model, `ignore_eos`, and the sampling and `--extra-body`
    /// fields (in that order; a later field replaces an earlier one of its name).
    pub fn new<'a>(
        model: &str,
        ignore_eos: bool,
        fields_over: impl IntoIterator<Item = (&'a String, &'a Value)>,
    ) -> Result<Self> {
        let t = || FormValue::Fixed("True".into());
        let mut fields: Vec<(String, FormValue)> = vec![
            ("model".into(), FormValue::Fixed(model.to_string())),
            ("max_completion_tokens".into(), FormValue::MaxTokens),
            ("stream".into(), t()),
            ("language".into(), FormValue::Fixed("en".into())),
            ("stream_include_usage".into(), t()),
            ("stream_continuous_usage_stats".into(), t()),
        ];
        if ignore_eos {
            fields.push(("ignore_eos".into(), t()));
        }
        for (k, v) in fields_over {
            let value = FormValue::Fixed(python_str(v));
            match fields.iter_mut().find(|(key, _)| key == k) {
                Some(f) => f.1 = value,
                None => fields.push((k.clone(), value)),
            }
        }
        Ok(AudioForm { fields })
    }

    /// Whether the answer is expected as an event stream (`stream` not set false).
    pub fn streams(&self) -> bool {
        !self.fields.iter().any(|(k, v)| {
            k == "stream" && matches!(v, FormValue::Fixed(s) if s.eq_ignore_ascii_case("false"))
        })
    }

    /// The multipart body of `spec`, whose audio clip is the uploaded file.
    pub fn build(&self, spec: &RequestSpec) -> Result<Bytes> {
        let Some(audio) = spec.audio.as_ref() else {
            return Err(BenchError::ContentTypeUnsupported {
                backend: "openai-audio".into(),
                content: "requests without audio".into(),
                fix: "use --dataset-name custom_audio (or an ASR dataset of --dataset-name hf)".into(),
            });
        };
        let mut out: Vec<u8> = Vec::with_capacity(audio.wav.len() + 160 * (self.fields.len() + 2));
        out.extend_from_slice(b"--");
        out.extend_from_slice(BOUNDARY.as_bytes());
        out.extend_from_slice(
            b"\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
              Content-Type: audio/wav\r\n\r\n",
        );
        out.extend_from_slice(&audio.wav);
        out.extend_from_slice(b"\r\n");
        for (name, value) in &self.fields {
            out.extend_from_slice(b"--");
            out.extend_from_slice(BOUNDARY.as_bytes());
            out.extend_from_slice(b"\r\nContent-Disposition: form-data; name=\"");
            out.extend_from_slice(field_name(name).as_bytes());
            out.extend_from_slice(b"\"\r\n\r\n");
            match value {
                FormValue::Fixed(s) => out.extend_from_slice(s.as_bytes()),
                FormValue::MaxTokens => {
                    out.extend_from_slice(spec.expected_output_tokens.to_string().as_bytes())
                }
            }
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"--");
        out.extend_from_slice(BOUNDARY.as_bytes());
        out.extend_from_slice(b"--\r\n");
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{BackendKind, TargetConfig};
    use crate::body::BodyTemplate;
    use servebench_core::{AudioClip, Prompt};
    use std::sync::Arc;

    fn spec_with_audio() -> RequestSpec {
        let mut s = RequestSpec::new(0, Prompt::Text(Arc::from("Transcribe.")), 3, 9);
        s.audio =
            Some(Arc::new(AudioClip { wav: Arc::from(&b"RIFF-wav-bytes"[..]), frames: 8, sample_rate: 4 }));
        s
    }

    #[test]
    fn audio_form_is_laid_out_as_vllm_sends_it() {
        let mut cfg = TargetConfig { model: "whisper".into(), ignore_eos: true, ..TargetConfig::default() };
        cfg.extra_body.insert("temperature".into(), serde_json::json!(0.0));
        cfg.extra_body.insert("language".into(), serde_json::json!("de"));
        let t = BodyTemplate::new(BackendKind::Audio, &cfg).unwrap();
        let body = t.build_spec(&spec_with_audio()).unwrap();
        let b = BOUNDARY;
        let field = |n: &str, v: &str| {
            format!("--{b}\r\nContent-Disposition: form-data; name=\"{n}\"\r\n\r\n{v}\r\n")
        };
        let want = [
            format!(
                "--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"audio.wav\"\r\n\
                 Content-Type: audio/wav\r\n\r\nRIFF-wav-bytes\r\n"
            ),
            field("model", "whisper"),
            field("max_completion_tokens", "9"),
            field("stream", "True"),
            field("language", "de"),
            field("stream_include_usage", "True"),
            field("stream_continuous_usage_stats", "True"),
            field("ignore_eos", "True"),
            field("temperature", "0.0"),
            format!("--{b}--\r\n"),
        ]
        .concat();
        assert_eq!(String::from_utf8_lossy(&body), want);
        assert!(t.streams());
        assert!(CONTENT_TYPE.ends_with(BOUNDARY));
    }

    #[test]
    fn audio_backend_refuses_requests_without_audio() {
        let t = BodyTemplate::new(BackendKind::Audio, &TargetConfig::default()).unwrap();
        let e = t.build_spec(&RequestSpec::new(0, Prompt::Text(Arc::from("x")), 1, 1)).unwrap_err();
        assert_eq!(e.code().as_str(), "SB111");
        let mut cfg = TargetConfig::default();
        cfg.extra_body.insert("stream".into(), false.into());
        assert!(!BodyTemplate::new(BackendKind::Audio, &cfg).unwrap().streams());
    }
}

//! The `custom_audio` dataset (vLLM's `CustomAudioDataset`): a JSON Lines file, one request per
//! line, `{"prompt": "Transcribe the audio.", "audio": "/path/to/clip.wav", "output_tokens": N}`
//! (`prompt` optional, default empty; `output_tokens` optional). As vLLM: the lines are shuffled
//! (seeded, unless `--disable-shuffle`), the output length is `--custom-output-len` (default
//! 256) or, with -1, each line's `output_tokens`; `prompt_tokens` counts the prompt text —
//! rendered with the tokenizer's chat template when it has one and the clip is uploaded
//! (`openai-audio`), as vLLM renders it there.
//!
//! The audio is read here (a relative path from the current directory, as vLLM's `soundfile`
//! opens it), decoded (FLAC, MP3, OGG/Vorbis or WAV, [`super::audio_decode`]) and sent as vLLM
//! sends it: re-encoded as a 16-bit PCM WAV of the same rate and channels. With
//! `--backend openai-audio` it is the uploaded file of a transcription request (the prompt is
//! not sent, as in vLLM); with `--backend openai-chat` it follows the text as an
//! `{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav"}}` part (vLLM
//! builds that part with `--enable-multimodal-chat`; without the flag its chat request cannot
//! be serialized, so servebench sends the part either way). Each distinct file is read once.

use super::chat_render::PromptTemplate;
use super::custom::check_line_output_tokens;
use super::file::{parse_json_lines_of_form, DataFile, FormHint, Location};
use super::{collect_samples, finish, shuffle_source, Sampling};
use base64::Engine as _;
use serde::Deserialize;
use servebench_core::{AudioClip, Result, TextTokenizer, Workload};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Options of the custom_audio dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomAudioConfig {
    /// `--dataset-path` (a `.jsonl` file).
    pub path: PathBuf,
    /// `--custom-output-len`: a fixed output length, or None (-1) for each line's
    /// `output_tokens`.
    pub output_len: Option<usize>,
    /// Send the audio as an `input_audio` chat part (`--backend openai-chat`) instead of as the
    /// uploaded file of a transcription request.
    pub chat_part: bool,
}

#[derive(Debug, Deserialize)]
struct Line {
    #[serde(default)]
    prompt: Option<String>,
    audio: String,
    #[serde(default, deserialize_with = "super::custom::whole_number")]
    output_tokens: Option<i64>,
}

const FORM: &str = "each line is {\"prompt\": \"text\", \"audio\": \"/path/to/clip.wav\"}";

/// The `input_audio` chat part of a clip.
pub fn input_audio_part(clip: &AudioClip) -> Arc<str> {
    let data = base64::engine::general_purpose::STANDARD.encode(&clip.wav);
    Arc::from(format!(r#"{{"type":"input_audio","input_audio":{{"data":"{data}","format":"wav"}}}}"#))
}

/// Builds the custom_audio workload.
pub fn generate_custom_audio(
    cfg: &CustomAudioConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let file = DataFile::new(&cfg.path);
    let text = file.read_text()?;
    let mut lines: Vec<(Location, Line)> = parse_json_lines_of_form(&file, &text, FormHint::Always(FORM))?;
    if cfg.output_len.is_none() {
        for (at, l) in &lines {
            check_line_output_tokens(&file, *at, l.output_tokens)?;
        }
    }
    shuffle_source(&mut lines, sampling);
    // Read each file the samples may use once (every line when oversampling could need it).
    let wanted = lines.len().min(sampling.num_prompts.max(1));
    let mut clips: HashMap<&str, (Arc<AudioClip>, Option<Arc<str>>)> = HashMap::new();
    for (at, l) in &lines[..wanted] {
        if clips.contains_key(l.audio.as_str()) {
            continue;
        }
        let bytes = std::fs::read(&l.audio).map_err(|e| {
            file.error(
                *at,
                format!("audio file '{}': {e}", l.audio),
                "fix the path (relative paths are read from the current directory)",
            )
        })?;
        let clip = super::audio_decode::decode_clip(bytes).map_err(|p| {
            file.error(
                *at,
                format!("audio file '{}': {p}", l.audio),
                "give a FLAC, MP3, OGG/Vorbis or WAV file (ffmpeg -i in.m4a out.flac converts others)",
            )
        })?;
        let part = cfg.chat_part.then(|| input_audio_part(&clip));
        clips.insert(l.audio.as_str(), (Arc::new(clip), part));
    }
    let samples = collect_samples(&lines[..wanted], sampling.num_prompts, |(_, l)| {
        let prompt = l.prompt.as_deref().unwrap_or("");
        let output = cfg.output_len.unwrap_or_else(|| l.output_tokens.unwrap_or(1).max(1) as usize);
        // As vLLM: for a transcription request a tokenizer with a chat template renders the
        // prompt around the user turn (the prompt is not sent; it is what prompt_tokens counts).
        let template =
            PromptTemplate { render: !cfg.chat_part && tok.chat_template().is_some(), ..Default::default() };
        let mut s = template.sample(tok, prompt, output, String::new)?;
        if let Some((clip, part)) = clips.get(l.audio.as_str()) {
            match part {
                Some(p) => s.multimodal = Some(vec![p.clone()].into()),
                None => s.audio = Some(clip.clone()),
            }
        }
        Ok(Some(s))
    })?;
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::wav::tone_wav;

    fn setup(dir: &std::path::Path) -> PathBuf {
        std::fs::write(dir.join("a.wav"), tone_wav(1.0, 16_000)).unwrap();
        std::fs::write(dir.join("b.wav"), tone_wav(2.0, 8_000)).unwrap();
        let a = dir.join("a.wav");
        let b = dir.join("b.wav");
        let lines = [
            serde_json::json!({"prompt": "Transcribe the audio.", "audio": a, "output_tokens": 20}),
            serde_json::json!({"audio": b, "output_tokens": 30}),
        ];
        let path = dir.join("audio.jsonl");
        std::fs::write(&path, lines.map(|l| l.to_string()).join("\n")).unwrap();
        path
    }

    #[test]
    fn custom_audio_lines_become_requests_with_their_clips() {
        let dir = tempfile::tempdir().unwrap();
        let tok = crate::load_tokenizer("gpt2").unwrap();
        let cfg = CustomAudioConfig { path: setup(dir.path()), output_len: None, chat_part: false };
        let s = Sampling { num_prompts: 3, shuffle: false, ..Sampling::default() };
        let w = generate_custom_audio(&cfg, &s, tok.as_ref()).unwrap();
        assert_eq!(w.len(), 3, "oversampled to --num-prompts");
        let r = &w.requests;
        assert_eq!((r[0].prompt.text(), r[0].expected_output_tokens), (Some("Transcribe the audio."), 20));
        assert_eq!(r[0].audio.as_ref().unwrap().seconds(), 1.0);
        assert_eq!((r[1].prompt.text(), r[1].expected_output_tokens, r[1].prompt_tokens), (Some(""), 30, 0));
        assert_eq!(r[1].audio.as_ref().unwrap().seconds(), 2.0);
        assert!(r[0].multimodal.is_none());
        // --custom-output-len fixes the length; the chat form carries an input_audio part.
        let cfg = CustomAudioConfig { output_len: Some(7), chat_part: true, ..cfg };
        let w = generate_custom_audio(&cfg, &s, tok.as_ref()).unwrap();
        let part: serde_json::Value =
            serde_json::from_str(&w.requests[0].multimodal.as_ref().unwrap()[0]).unwrap();
        assert_eq!(part["type"], "input_audio");
        assert_eq!(part["input_audio"]["format"], "wav");
        let wav = base64::engine::general_purpose::STANDARD
            .decode(part["input_audio"]["data"].as_str().unwrap())
            .unwrap();
        assert_eq!(wav, tone_wav(1.0, 16_000));
        assert!(w.requests[0].audio.is_none());
        assert_eq!(w.requests[0].expected_output_tokens, 7);
    }

    #[test]
    fn custom_audio_flac_mp3_and_ogg_files_are_decoded_and_sent_as_16bit_wav() {
        let dir = tempfile::tempdir().unwrap();
        let tok = crate::load_tokenizer("gpt2").unwrap();
        let fixtures = servebench_testkit::fixtures::fixture("audio");
        let names = ["saw-16k-mono-s16.flac", "tone-16k-mono.mp3", "tone-22k05-stereo.ogg"];
        let lines: Vec<String> =
            names.iter().map(|n| serde_json::json!({"audio": fixtures.join(n)}).to_string()).collect();
        let path = dir.path().join("audio.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let cfg = CustomAudioConfig { path, output_len: Some(8), chat_part: false };
        let s = Sampling { num_prompts: 3, shuffle: false, ..Sampling::default() };
        let w = generate_custom_audio(&cfg, &s, tok.as_ref()).unwrap();
        let got: Vec<(f64, u32, &[u8])> = w
            .requests
            .iter()
            .map(|r| r.audio.as_ref().unwrap())
            .map(|c| (c.seconds(), c.sample_rate, &c.wav[..4]))
            .collect();
        assert_eq!(got, [(1.5, 16_000, &b"RIFF"[..]), (1.0, 16_000, b"RIFF"), (1.0, 22_050, b"RIFF")]);
    }

    #[test]
    fn custom_audio_errors_name_the_line_and_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let tok = crate::load_tokenizer("gpt2").unwrap();
        let path = dir.path().join("bad.jsonl");
        std::fs::write(&path, "{\"prompt\": \"x\", \"audio\": \"missing.wav\"}\n").unwrap();
        let cfg = CustomAudioConfig { path: path.clone(), output_len: Some(4), chat_part: false };
        let e = generate_custom_audio(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert_eq!(e.code().as_str(), "SB204");
        assert!(e.to_string().contains("missing.wav") && e.to_string().contains("line 1"), "{e}");
        std::fs::write(dir.path().join("x.flac"), b"fLaC\0\0\0\0\0\0\0\0").unwrap();
        let flac = dir.path().join("x.flac");
        std::fs::write(&path, serde_json::json!({"audio": flac}).to_string()).unwrap();
        let e = generate_custom_audio(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(e.to_string().contains("FLAC"), "{e}");
        std::fs::write(&path, "{\"prompt\": \"no audio\"}\n").unwrap();
        let e = generate_custom_audio(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(e.to_string().contains("audio"), "{e}");
        let cfg = CustomAudioConfig { output_len: None, ..cfg };
        std::fs::write(&path, serde_json::json!({"audio": flac}).to_string()).unwrap();
        let e = generate_custom_audio(&cfg, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(e.to_string().contains("output_tokens"), "{e}");
    }
}

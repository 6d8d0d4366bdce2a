//! vLLM's ASR parser (vLLM 0.33; openslr/librispeech_asr, facebook/voxpopuli, LIUM/tedlium,
//! edinburghcstr/ami, speechcolab/gigaspeech, kensho/spgispeech): transcription requests for
//! `--backend openai-audio`. As vLLM:
//!
//! - every row's `audio` is one request's clip: a Hub audio cell `{"bytes", "path"}` (bytes
//!   base64, as a Parquet audio column reads, or a list of byte values), a decoded cell
//!   `{"array": [samples], "sampling_rate": N}`, `{"path": P}`, or a path string;
//! - rows whose clip is shorter than `--asr-min-audio-len-sec` or longer than
//!   `--asr-max-audio-len-sec` are skipped;
//! - the prompt is Whisper's `<|startoftranscript|><|en|><|transcribe|><|notimestamps|>` when
//!   the tokenizer's name contains `openai`, Cohere's control tokens when it contains `cohere`,
//!   else empty; `prompt_tokens` is its token count (the prompt itself is not sent by
//!   `openai-audio`);
//! - the output length is 1024, or `--hf-output-len` / `--output-len`.
//!
//! The clip is decoded (FLAC — what LibriSpeech's Parquet files hold —, MP3, OGG/Vorbis or WAV)
//! and sent as a 16-bit PCM WAV of the same rate and channels ([`super::audio_decode`]), as
//! vLLM's `soundfile` read and `openai-audio` re-encoding do; its duration is the decoded
//! samples'. Differs from vLLM: a path cell is decoded and re-encoded too (vLLM uploads that
//! file as it is, under its own name).

use super::audio_decode::decode_clip;
use super::file::{DataFile, Location};
use super::problem::Problem;
use super::wav::pcm16_wav;
use super::{collect_samples, finish, shuffle_source, Sample, Sampling};
use base64::Engine as _;
use serde_json::Value;
use servebench_core::{AudioClip, BenchError, Result, TextTokenizer, Workload};
use std::sync::Arc;

/// vLLM's default output length of ASR requests.
pub const DEFAULT_OUTPUT_LEN: usize = 1024;

/// Whisper's decoder prompt.
pub const WHISPER_PROMPT: &str = "<|startoftranscript|><|en|><|transcribe|><|notimestamps|>";

/// Cohere's ASR decoder prompt.
pub const COHERE_PROMPT: &str = "<|startofcontext|><|startoftranscript|><|emo:undefined|><|en|><|en|><|pnc|><|noitn|><|notimestamp|><|nodiarize|>";

/// Options of the ASR parser.
#[derive(Debug, Clone, PartialEq)]
pub struct AsrOptions {
    /// `--asr-min-audio-len-sec`, `--asr-max-audio-len-sec`.
    pub len_sec: (f64, f64),
    /// The tokenizer's name (`--tokenizer`, else the model), which picks the prompt.
    pub tokenizer_name: String,
}

impl Default for AsrOptions {
    fn default() -> Self {
        AsrOptions { len_sec: (0.0, f64::INFINITY), tokenizer_name: String::new() }
    }
}

/// The decoder prompt vLLM uses for a tokenizer of this name.
pub fn prompt_for(tokenizer_name: &str) -> &'static str {
    if tokenizer_name.contains("openai") {
        WHISPER_PROMPT
    } else if tokenizer_name.to_lowercase().contains("cohere") {
        COHERE_PROMPT
    } else {
        ""
    }
}

fn bytes_of(v: &Value) -> std::result::Result<Vec<u8>, Problem> {
    match v {
        Value::String(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64.trim())
            .map_err(|e| Problem::caused("audio bytes are not base64", e)),
        Value::Array(a) => a
            .iter()
            .map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| "audio bytes are not a list of byte values".into()),
        _ => Err("audio bytes are neither base64 text nor a list of bytes".into()),
    }
}

fn read_path(p: &str) -> std::result::Result<AudioClip, Problem> {
    let bytes = std::fs::read(p).map_err(|e| Problem::caused(format_args!("audio file '{p}'"), e))?;
    decode_clip(bytes).map_err(|e| Problem::caused(format_args!("audio file '{p}'"), e))
}

/// The clip of a row's `audio` cell; the problem keeps the I/O, base64 or decoder error.
pub fn clip_of(cell: &Value) -> std::result::Result<AudioClip, Problem> {
    match cell {
        Value::String(p) => read_path(p),
        Value::Object(o) => {
            if let (Some(Value::Array(samples)), Some(rate)) =
                (o.get("array"), o.get("sampling_rate").and_then(Value::as_u64))
            {
                let rate = u32::try_from(rate).map_err(|_| Problem::new("sampling_rate out of range"))?;
                let pcm: Vec<u8> = samples
                    .iter()
                    .map(|x| {
                        x.as_f64()
                            .map(|x| ((x * 32767.0).round().clamp(-32768.0, 32767.0) as i16).to_le_bytes())
                    })
                    .collect::<Option<Vec<[u8; 2]>>>()
                    .ok_or("the audio array holds something else than numbers")?
                    .concat();
                return Ok(AudioClip {
                    wav: Arc::from(pcm16_wav(&pcm, 1, rate)),
                    frames: samples.len() as u64,
                    sample_rate: rate,
                });
            }
            match (o.get("bytes").filter(|b| !b.is_null()), o.get("path").and_then(Value::as_str)) {
                (Some(b), _) => decode_clip(bytes_of(b)?).map_err(|e| Problem::caused("audio bytes", e)),
                (None, Some(p)) if !p.is_empty() => read_path(p),
                _ => Err("ASR samples must provide decoded audio arrays, embedded audio bytes, or a local audio path".into()),
            }
        }
        _ => Err("the audio cell is neither an audio object nor a path".into()),
    }
}

/// Builds the ASR workload.
pub fn generate(
    file: &DataFile,
    mut rows: Vec<(Location, Value)>,
    output_len: Option<usize>,
    opts: &AsrOptions,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    for (at, row) in &rows {
        if row.get("audio").is_none() {
            return Err(file.error(*at, "column 'audio' is missing", "fix the row (ASRDataset reads it)"));
        }
    }
    shuffle_source(&mut rows, sampling);
    let prompt = prompt_for(&opts.tokenizer_name);
    let prompt_len = tok.encode(prompt, true)?.len();
    let output = output_len.unwrap_or(DEFAULT_OUTPUT_LEN);
    let (lo, hi) = opts.len_sec;
    let samples = collect_samples(&rows, sampling.num_prompts, |(at, row)| {
        let cell = row.get("audio").unwrap_or(&Value::Null);
        let clip = clip_of(cell).map_err(|p| {
            file.error_problem(*at, p, "give FLAC, MP3, OGG/Vorbis or WAV audio (bytes or a readable path)")
        })?;
        let secs = clip.seconds();
        if secs < lo || secs > hi {
            return Ok(None);
        }
        let mut s = Sample::text(prompt, prompt_len, output);
        s.audio = Some(Arc::new(clip));
        Ok(Some(s))
    })?;
    if samples.is_empty() {
        return Err(BenchError::Dataset {
            detail: format!(
                "no audio clip of {} is within --asr-min-audio-len-sec {lo} and --asr-max-audio-len-sec {hi}; \
                 fix: widen the range",
                file.path.display()
            ),
            source: None,
        });
    }
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn asr_prompt_follows_the_tokenizer_name_as_vllm() {
        assert_eq!(prompt_for("openai/whisper-large-v3"), WHISPER_PROMPT);
        assert_eq!(prompt_for("CohereLabs/cohere-transcribe"), COHERE_PROMPT);
        assert_eq!(prompt_for("Qwen/Qwen2-Audio-7B"), "");
    }

    #[test]
    fn audio_cells_of_every_hub_shape_become_clips() {
        let wav = super::super::wav::tone_wav(0.5, 8_000);
        let b64 = base64::engine::general_purpose::STANDARD.encode(&wav);
        let c = clip_of(&json!({"bytes": b64, "path": "a.wav"})).unwrap();
        assert_eq!((c.seconds(), &c.wav[..]), (0.5, &wav[..]));
        let c = clip_of(&json!({"bytes": wav.clone(), "path": null})).unwrap();
        assert_eq!(c.seconds(), 0.5);
        let c = clip_of(&json!({"array": [0.0, 0.5, -1.0, 1.0], "sampling_rate": 4})).unwrap();
        assert_eq!((c.frames, c.seconds()), (4, 1.0));
        assert_eq!(&c.wav[44..], &[0, 0, 0, 64, 1, 128, 255, 127]);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.wav");
        std::fs::write(&p, &wav).unwrap();
        assert_eq!(clip_of(&json!(p)).unwrap().seconds(), 0.5);
        assert_eq!(clip_of(&json!({"path": p, "bytes": null})).unwrap().seconds(), 0.5);
        // A FLAC header without any frame is named, not a panic.
        let e = clip_of(&json!({"bytes": "ZkxhQwAAAAAAAAAA"})).unwrap_err();
        assert!(e.text.starts_with("audio bytes: ") && e.text.contains("FLAC"), "{e}");
        assert!(
            e.cause
                .as_ref()
                .is_some_and(|c| c.downcast_ref::<super::super::audio_decode::AudioError>().is_some()),
            "{e:?}"
        );
        assert!(clip_of(&json!(3)).is_err());
    }
}

//! Decoding a dataset's audio clip into the clip vLLM sends.
//!
//! vLLM 0.33 reads every clip with `soundfile` (libsndfile: WAV, FLAC, OGG/Vorbis, MP3) into
//! float samples at the clip's own rate and channels, and `openai-audio` writes them again with
//! `soundfile.write(..., format="WAV")`: a 16-bit PCM WAV (libsndfile's default WAV subtype)
//! of the same sample rate and channel count — nothing is resampled or down-mixed. The request's
//! audio duration (RTFx) is that WAV's `frames / sample_rate`.
//!
//! servebench decodes with `symphonia` (FLAC, MP3, OGG/Vorbis, WAV; the container is found from
//! the bytes, not the file name) and writes the same 16-bit PCM WAV ([`super::wav::pcm16_wav`]).
//! Samples become 16-bit as before: integer samples keep their top 16 bits (16-bit input is sent
//! unchanged), float samples are scaled by 32767, rounded and clipped (libsndfile's float to
//! 16-bit rule). The frame count is the decoded samples' (gapless: the encoder's delay and
//! padding frames of MP3/Vorbis are trimmed, as libsndfile does), never a header's claim.

use super::wav::pcm16_wav;
use servebench_core::AudioClip;
use std::io::Cursor;
use std::sync::Arc;
use symphonia::core::audio::GenericAudioBufferRef;
use symphonia::core::codecs::audio::AudioDecoderOptions;
use symphonia::core::errors::Error as SymphoniaError;
use symphonia::core::formats::probe::Hint;
use symphonia::core::formats::{FormatOptions, TrackType};
use symphonia::core::io::{MediaSourceStream, MediaSourceStreamOptions};
use symphonia::core::meta::MetadataOptions;

/// Why a clip could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum AudioError {
    /// The bytes are not a container servebench reads.
    #[error("not audio servebench decodes ({what}; it reads FLAC, MP3, OGG/Vorbis and WAV): {source}")]
    Unrecognised {
        /// What the first bytes look like.
        what: &'static str,
        #[source]
        source: SymphoniaError,
    },
    /// The container holds no audio track, or its codec is not one servebench decodes.
    #[error("the file holds no audio track servebench decodes ({detail})")]
    NoTrack { detail: String },
    /// The stream is damaged.
    #[error("the audio is corrupt after {frames} decoded frames: {source}")]
    Corrupt {
        frames: u64,
        #[source]
        source: SymphoniaError,
    },
    /// Decoding gave no sample, or no sample rate.
    #[error("the audio holds no samples")]
    Empty,
}

/// What the first bytes of a file look like (for messages).
fn sniff(bytes: &[u8]) -> &'static str {
    match bytes.get(0..4) {
        Some(b"fLaC") => "a FLAC header",
        Some(b"OggS") => "an OGG header",
        Some(b"RIFF") => "a RIFF header",
        Some([b'I', b'D', b'3', _]) => "an MP3 file with an ID3 tag",
        Some([0xFF, b, _, _]) if b & 0xE0 == 0xE0 => "an MPEG audio frame",
        Some(_) => "unknown bytes",
        None => "fewer than 4 bytes",
    }
}

/// Appends a decoded buffer's samples, interleaved, as 16-bit values (see the module docs).
/// (`copy_to_vec_interleaved` replaces its vector's contents, hence the scratch vectors.)
fn push_samples(buf: &GenericAudioBufferRef<'_>, out: &mut Vec<i16>) {
    match buf {
        GenericAudioBufferRef::S16(_) => {
            let mut s: Vec<i16> = Vec::new();
            buf.copy_to_vec_interleaved(&mut s);
            out.extend_from_slice(&s);
        }
        GenericAudioBufferRef::F32(_) | GenericAudioBufferRef::F64(_) => {
            let mut f: Vec<f64> = Vec::new();
            buf.copy_to_vec_interleaved(&mut f);
            out.extend(f.into_iter().map(|x| (x * 32767.0).round().clamp(-32768.0, 32767.0) as i16));
        }
        _ => {
            // Every integer width converts to i32 with its value in the top bits.
            let mut w: Vec<i32> = Vec::new();
            buf.copy_to_vec_interleaved(&mut w);
            out.extend(w.into_iter().map(|x| (x >> 16) as i16));
        }
    }
}

/// Decodes a clip (FLAC, MP3, OGG/Vorbis or WAV bytes) into the 16-bit PCM WAV vLLM sends.
pub fn decode_clip(bytes: Vec<u8>) -> Result<AudioClip, AudioError> {
    let what = sniff(&bytes);
    let mss = MediaSourceStream::new(Box::new(Cursor::new(bytes)), MediaSourceStreamOptions::default());
    let mut reader = symphonia::default::get_probe()
        .probe(&Hint::new(), mss, FormatOptions::default(), MetadataOptions::default())
        .map_err(|source| AudioError::Unrecognised { what, source })?;
    let track = reader
        .default_track(TrackType::Audio)
        .ok_or_else(|| AudioError::NoTrack { detail: "no audio track".into() })?;
    let track_id = track.id;
    let params = track
        .codec_params
        .as_ref()
        .and_then(|p| p.audio())
        .ok_or_else(|| AudioError::NoTrack { detail: "the track has no audio codec parameters".into() })?
        .clone();
    let mut decoder = symphonia::default::get_codecs()
        .make_audio_decoder(&params, &AudioDecoderOptions::default())
        .map_err(|e| AudioError::NoTrack { detail: e.to_string() })?;
    let (mut samples, mut channels, mut rate) = (Vec::<i16>::new(), 0usize, 0u32);
    let corrupt = |samples: &Vec<i16>, channels: usize, source| AudioError::Corrupt {
        frames: (samples.len() / channels.max(1)) as u64,
        source,
    };
    loop {
        let packet = match reader.next_packet() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(SymphoniaError::IoError(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(corrupt(&samples, channels, e)),
        };
        if packet.track_id != track_id {
            continue;
        }
        let buf = decoder.decode(&packet).map_err(|e| corrupt(&samples, channels, e))?;
        if buf.frames() == 0 {
            continue;
        }
        channels = buf.spec().channels().count();
        rate = buf.spec().rate();
        push_samples(&buf, &mut samples);
    }
    if samples.is_empty() || channels == 0 || rate == 0 {
        return Err(AudioError::Empty);
    }
    let channels16 = u16::try_from(channels)
        .map_err(|_| AudioError::NoTrack { detail: format!("{channels} channels") })?;
    let frames = (samples.len() / channels) as u64;
    let pcm: Vec<u8> = samples.iter().flat_map(|s| s.to_le_bytes()).collect();
    Ok(AudioClip { wav: Arc::from(pcm16_wav(&pcm, channels16, rate)), frames, sample_rate: rate })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::wav::tone_wav;

    fn fixture(name: &str) -> Vec<u8> {
        let p = servebench_testkit::fixtures::fixture(&format!("audio/{name}"));
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// The fixture generator's integer sawtooth (scripts/gen-audio-fixtures.py).
    fn saw(frames: i64, step: i64, period: i64, scale: i64) -> Vec<i64> {
        (0..frames).map(|i| ((i * step) % period - period / 2) * scale).collect()
    }

    fn pcm(clip: &AudioClip) -> Vec<i16> {
        clip.wav[44..].chunks_exact(2).map(|s| i16::from_le_bytes([s[0], s[1]])).collect()
    }

    fn header(clip: &AudioClip) -> (u16, u32, u16) {
        let w = &clip.wav;
        (
            u16::from_le_bytes([w[22], w[23]]),
            u32::from_le_bytes([w[24], w[25], w[26], w[27]]),
            u16::from_le_bytes([w[34], w[35]]),
        )
    }

    #[test]
    fn flac_16_bit_is_sent_as_the_same_samples_in_a_16bit_wav() {
        let clip = decode_clip(fixture("saw-16k-mono-s16.flac")).unwrap();
        assert_eq!((clip.frames, clip.sample_rate, clip.seconds()), (24_000, 16_000, 1.5));
        assert_eq!(header(&clip), (1, 16_000, 16));
        let want: Vec<i16> = saw(24_000, 97, 4001, 4).into_iter().map(|s| s as i16).collect();
        assert_eq!(pcm(&clip), want, "FLAC is lossless: every sample is the encoded one");
    }

    #[test]
    fn flac_24_bit_stereo_keeps_its_channels_rate_and_top_16_bits() {
        let clip = decode_clip(fixture("saw-44k1-stereo-s24.flac")).unwrap();
        assert_eq!((clip.frames, clip.sample_rate), (4_410, 44_100));
        assert_eq!(header(&clip), (2, 44_100, 16), "not down-mixed, not resampled");
        // The 24-bit samples are the generator's values (left, right = -left); 16-bit output
        // keeps their top 16 bits (an arithmetic shift by 8).
        let left = saw(4_410, 89, 3001, 1000);
        let want: Vec<i16> = left.iter().flat_map(|&l| [(l >> 8) as i16, ((-l) >> 8) as i16]).collect();
        assert_eq!(pcm(&clip), want);
    }

    #[test]
    fn mp3_is_decoded_gapless_to_its_exact_duration() {
        let clip = decode_clip(fixture("tone-16k-mono.mp3")).unwrap();
        // libsndfile (vLLM's soundfile) reports 16,000 frames for this file too.
        assert_eq!((clip.frames, clip.sample_rate, clip.seconds()), (16_000, 16_000, 1.0));
        assert_eq!(header(&clip), (1, 16_000, 16));
        // A 0.25-amplitude tone: peaks near 0.25 · 32767, nothing clipped.
        let peak = pcm(&clip).iter().map(|s| s.unsigned_abs()).max().unwrap();
        assert!((7_000..=9_500).contains(&peak), "peak {peak}");
    }

    #[test]
    fn ogg_vorbis_stereo_is_decoded_to_its_exact_duration() {
        let clip = decode_clip(fixture("tone-22k05-stereo.ogg")).unwrap();
        assert_eq!((clip.frames, clip.sample_rate, clip.seconds()), (22_050, 22_050, 1.0));
        assert_eq!(header(&clip), (2, 22_050, 16));
        let peak = pcm(&clip).iter().map(|s| s.unsigned_abs()).max().unwrap();
        assert!((7_000..=9_500).contains(&peak), "peak {peak}");
    }

    #[test]
    fn wav_16_bit_round_trips_unchanged() {
        let wav = tone_wav(0.5, 8_000);
        let clip = decode_clip(wav.clone()).unwrap();
        assert_eq!(&clip.wav[..], &wav[..]);
        assert_eq!((clip.frames, clip.seconds()), (4_000, 0.5));
    }

    #[test]
    fn float_and_24_bit_wav_are_rewritten_as_16_bit_pcm() {
        // Stereo float32, two frames: (1.0, -1.0), (0.5, 0.0).
        let mut b = b"RIFF\x34\0\0\0WAVEfmt \x10\0\0\0\x03\0\x02\0\x44\xac\0\0".to_vec();
        b.extend_from_slice(&(44_100u32 * 8).to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&32u16.to_le_bytes());
        b.extend_from_slice(b"data\x10\0\0\0");
        for x in [1.0f32, -1.0, 0.5, 0.0] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        let clip = decode_clip(b).unwrap();
        assert_eq!((clip.frames, clip.sample_rate), (2, 44_100));
        assert_eq!(pcm(&clip), vec![32767, -32767, 16384, 0]);
        assert_eq!(header(&clip), (2, 44_100, 16), "channels kept");
        // 24-bit PCM keeps the top 16 bits.
        let mut b = b"RIFF\x27\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0".to_vec();
        b.extend_from_slice(&(16_000u32 * 3).to_le_bytes());
        b.extend_from_slice(&3u16.to_le_bytes());
        b.extend_from_slice(&24u16.to_le_bytes());
        b.extend_from_slice(b"data\x03\0\0\0\x00\x34\x12");
        assert_eq!(pcm(&decode_clip(b).unwrap()), vec![0x1234]);
    }

    #[test]
    fn truncated_flac_is_an_error_naming_it_and_garbage_is_unrecognised() {
        let flac = fixture("saw-16k-mono-s16.flac");
        // Only the stream header: a FLAC without frames is an error naming what it looked like.
        let err = decode_clip(flac[..42].to_vec()).unwrap_err();
        assert!(err.to_string().contains("a FLAC header"), "{err}");
        // A file cut in the middle: its duration is what decodes, not the header's claim.
        let half = decode_clip(flac[..flac.len() / 2].to_vec()).unwrap();
        assert!(half.frames > 0 && half.frames < 24_000, "{}", half.frames);
        let err = decode_clip(b"this is not audio at all, just text".to_vec()).unwrap_err();
        assert!(matches!(err, AudioError::Unrecognised { .. }), "{err:?}");
        assert!(err.to_string().contains("FLAC, MP3, OGG/Vorbis and WAV"), "{err}");
        let err = decode_clip(Vec::new()).unwrap_err();
        assert!(err.to_string().contains("fewer than 4 bytes"), "{err}");
    }
}

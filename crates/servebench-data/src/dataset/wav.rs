//! WAV audio as vLLM's audio requests carry it: vLLM decodes every clip with `soundfile` and
//! writes it again as a 16-bit PCM WAV before sending it. servebench reads RIFF/WAVE files
//! (PCM 8/16/24/32-bit, IEEE float 32/64-bit, plain or `WAVE_FORMAT_EXTENSIBLE`, any number of
//! channels) and writes the canonical 44-byte-header 16-bit PCM WAV of the same samples
//! (16-bit input: the same sample bytes; wider input: the top 16 bits; float: scaled by
//! 32767 and clipped). Other containers (FLAC, MP3, OGG) are not decoded: the caller names the
//! file and asks for a WAV conversion.

use servebench_core::AudioClip;
use std::sync::Arc;

/// The sample encoding of a `fmt ` chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Pcm(u16),
    Float(u16),
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The parsed `fmt ` chunk: encoding, channels, sample rate.
fn format(fmt: &[u8]) -> Result<(Encoding, u16, u32), String> {
    let short = || "the `fmt ` chunk is shorter than 16 bytes".to_string();
    let mut tag = u16_at(fmt, 0).ok_or_else(short)?;
    let channels = u16_at(fmt, 2).ok_or_else(short)?;
    let rate = u32_at(fmt, 4).ok_or_else(short)?;
    let bits = u16_at(fmt, 14).ok_or_else(short)?;
    if tag == 0xFFFE {
        // WAVE_FORMAT_EXTENSIBLE: the sub-format GUID starts with the format tag.
        tag = u16_at(fmt, 24).ok_or("a WAVE_FORMAT_EXTENSIBLE `fmt ` chunk without its sub-format")?;
    }
    let enc = match (tag, bits) {
        (1, 8 | 16 | 24 | 32) => Encoding::Pcm(bits),
        (3, 32 | 64) => Encoding::Float(bits),
        _ => return Err(format!("WAV sample format {tag} with {bits} bits is not read (PCM or float only)")),
    };
    if channels == 0 || rate == 0 {
        return Err(format!("WAV with {channels} channels at {rate} Hz"));
    }
    Ok((enc, channels, rate))
}

fn to_i16(enc: Encoding, s: &[u8]) -> i16 {
    let clip = |x: f64| (x * 32767.0).round().clamp(-32768.0, 32767.0) as i16;
    match enc {
        Encoding::Pcm(8) => (i16::from(s[0]) - 128) << 8,
        Encoding::Pcm(16) => i16::from_le_bytes([s[0], s[1]]),
        Encoding::Pcm(24) => i16::from_le_bytes([s[1], s[2]]),
        Encoding::Pcm(_) => i16::from_le_bytes([s[2], s[3]]),
        Encoding::Float(32) => clip(f64::from(f32::from_le_bytes([s[0], s[1], s[2], s[3]]))),
        Encoding::Float(_) => clip(f64::from_le_bytes([s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]])),
    }
}

/// The canonical 16-bit PCM WAV of `samples` (interleaved).
pub fn pcm16_wav(samples: &[u8], channels: u16, rate: u32) -> Vec<u8> {
    let data_len = u32::try_from(samples.len()).unwrap_or(u32::MAX);
    let mut b = Vec::with_capacity(44 + samples.len());
    b.extend_from_slice(b"RIFF");
    b.extend_from_slice(&(36u32.saturating_add(data_len)).to_le_bytes());
    b.extend_from_slice(b"WAVEfmt ");
    b.extend_from_slice(&16u32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&channels.to_le_bytes());
    b.extend_from_slice(&rate.to_le_bytes());
    b.extend_from_slice(&(rate.saturating_mul(u32::from(channels) * 2)).to_le_bytes());
    b.extend_from_slice(&(channels * 2).to_le_bytes());
    b.extend_from_slice(&16u16.to_le_bytes());
    b.extend_from_slice(b"data");
    b.extend_from_slice(&data_len.to_le_bytes());
    b.extend_from_slice(samples);
    b
}

/// Reads a WAV file into the clip vLLM would send (see the module docs).
pub fn read_wav(bytes: &[u8]) -> Result<AudioClip, String> {
    if bytes.len() < 12 || &bytes[0..4] != b"RIFF" || &bytes[8..12] != b"WAVE" {
        let what = match bytes.get(0..4) {
            Some(b"fLaC") => "a FLAC file",
            Some(b"OggS") => "an OGG file",
            Some([b'I', b'D', b'3', _]) => "an MP3 file",
            _ => "not a RIFF/WAVE file",
        };
        return Err(format!("{what}: only WAV audio is read"));
    }
    let (mut at, mut fmt) = (12usize, None);
    while at + 8 <= bytes.len() {
        let id = &bytes[at..at + 4];
        let size = u32_at(bytes, at + 4).unwrap_or(0) as usize;
        let body = at + 8;
        let end = body.saturating_add(size).min(bytes.len());
        if id == b"fmt " {
            fmt = Some(format(&bytes[body..end])?);
        } else if id == b"data" {
            let (enc, channels, rate) = fmt.ok_or("the `data` chunk comes before the `fmt ` chunk")?;
            let width = match enc {
                Encoding::Pcm(b) | Encoding::Float(b) => usize::from(b / 8),
            };
            let frame = width * usize::from(channels);
            let data = &bytes[body..end];
            let frames = data.len() / frame;
            let samples: Vec<u8> = if enc == Encoding::Pcm(16) {
                data[..frames * frame].to_vec()
            } else {
                data[..frames * frame]
                    .chunks_exact(width)
                    .flat_map(|s| to_i16(enc, s).to_le_bytes())
                    .collect()
            };
            return Ok(AudioClip {
                wav: Arc::from(pcm16_wav(&samples, channels, rate)),
                frames: frames as u64,
                sample_rate: rate,
            });
        }
        at = body.saturating_add(size).saturating_add(size & 1);
    }
    Err("no `data` chunk (the WAV file holds no samples)".into())
}

/// A 16-bit PCM mono WAV of `seconds` of a 440 Hz tone at `rate` Hz (tests and examples).
pub fn tone_wav(seconds: f64, rate: u32) -> Vec<u8> {
    let n = (seconds * f64::from(rate)).round() as usize;
    let samples: Vec<u8> = (0..n)
        .flat_map(|i| {
            let t = i as f64 / f64::from(rate);
            (((t * 440.0 * std::f64::consts::TAU).sin() * 8000.0) as i16).to_le_bytes()
        })
        .collect();
    pcm16_wav(&samples, 1, rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcm16_wav_is_sent_with_the_same_samples_and_its_duration() {
        let wav = tone_wav(2.5, 16_000);
        let clip = read_wav(&wav).unwrap();
        assert_eq!(&clip.wav[..], &wav[..]);
        assert_eq!((clip.frames, clip.sample_rate), (40_000, 16_000));
        assert_eq!(clip.seconds(), 2.5);
    }

    #[test]
    fn float_and_wide_pcm_are_rewritten_as_16_bit_pcm() {
        // Stereo float32, two frames: (1.0, -1.0), (0.5, 0.0); an extra chunk before `fmt `.
        let mut b = b"RIFF\0\0\0\0WAVELIST\x02\0\0\0abfmt \x10\0\0\0\x03\0\x02\0\x44\xac\0\0".to_vec();
        b.extend_from_slice(&(44_100u32 * 8).to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&32u16.to_le_bytes());
        b.extend_from_slice(b"data\x10\0\0\0");
        for x in [1.0f32, -1.0, 0.5, 0.0] {
            b.extend_from_slice(&x.to_le_bytes());
        }
        let clip = read_wav(&b).unwrap();
        assert_eq!((clip.frames, clip.sample_rate), (2, 44_100));
        let data: Vec<i16> = clip.wav[44..].chunks(2).map(|s| i16::from_le_bytes([s[0], s[1]])).collect();
        assert_eq!(data, vec![32767, -32767, 16384, 0]);
        assert_eq!(u16::from_le_bytes([clip.wav[22], clip.wav[23]]), 2, "channels kept");
        // 24-bit PCM keeps the top 16 bits.
        let mut b = b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x80\x3e\0\0".to_vec();
        b.extend_from_slice(&(16_000u32 * 3).to_le_bytes());
        b.extend_from_slice(&3u16.to_le_bytes());
        b.extend_from_slice(&24u16.to_le_bytes());
        b.extend_from_slice(b"data\x03\0\0\0\x00\x34\x12");
        let clip = read_wav(&b).unwrap();
        assert_eq!(&clip.wav[44..], &0x1234i16.to_le_bytes());
    }

    #[test]
    fn other_containers_are_named() {
        assert!(read_wav(b"fLaC\0\0\0\0\0\0\0\0").unwrap_err().contains("FLAC"));
        assert!(read_wav(b"ID3\x04 mp3 data").unwrap_err().contains("MP3"));
        assert!(read_wav(b"RIFF\0\0\0\0WAVEfmt \x10\0\0\0\x01\0").unwrap_err().contains("shorter"));
        assert!(read_wav(b"RIFF\0\0\0\0WAVE").unwrap_err().contains("no `data`"));
    }
}

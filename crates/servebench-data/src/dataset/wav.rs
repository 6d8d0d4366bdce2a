//! The WAV file vLLM's audio requests carry: vLLM decodes every clip with `soundfile` and writes
//! it again as a 16-bit PCM WAV before sending it; servebench writes the canonical
//! 44-byte-header 16-bit PCM WAV of the decoded samples ([`super::audio_decode`] decodes).

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
    fn pcm16_wav_has_the_canonical_44_byte_header() {
        let wav = pcm16_wav(&[1, 0, 2, 0, 3, 0, 4, 0], 2, 22_050);
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(u32::from_le_bytes([wav[4], wav[5], wav[6], wav[7]]), 36 + 8);
        assert_eq!(&wav[8..16], b"WAVEfmt ");
        assert_eq!(u16::from_le_bytes([wav[20], wav[21]]), 1, "PCM");
        assert_eq!(u16::from_le_bytes([wav[22], wav[23]]), 2, "channels");
        assert_eq!(u32::from_le_bytes([wav[24], wav[25], wav[26], wav[27]]), 22_050);
        assert_eq!(u32::from_le_bytes([wav[28], wav[29], wav[30], wav[31]]), 22_050 * 4, "byte rate");
        assert_eq!(u16::from_le_bytes([wav[32], wav[33]]), 4, "block align");
        assert_eq!(u16::from_le_bytes([wav[34], wav[35]]), 16, "bits");
        assert_eq!(&wav[36..40], b"data");
        assert_eq!(u32::from_le_bytes([wav[40], wav[41], wav[42], wav[43]]), 8);
        assert_eq!(wav.len(), 52);
        assert_eq!(tone_wav(2.5, 16_000).len(), 44 + 80_000);
    }
}

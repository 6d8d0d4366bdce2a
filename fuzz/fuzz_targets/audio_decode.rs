//! Audio decoding: any bytes (a dataset's audio cell) decode to a clip or fail with an error,
//! never a panic; a decoded clip is a well-formed 16-bit WAV whose length matches its frames.
#![no_main]

use libfuzzer_sys::fuzz_target;
use servebench_data::dataset::audio_decode::decode_clip;

fuzz_target!(|data: &[u8]| {
    if let Ok(clip) = decode_clip(data.to_vec()) {
        let channels = u16::from_le_bytes([clip.wav[22], clip.wav[23]]) as u64;
        assert_eq!(clip.wav.len() as u64, 44 + clip.frames * channels * 2);
        assert!(clip.sample_rate > 0 && clip.frames > 0);
    }
});

#!/usr/bin/env python3
"""Writes the audio fixtures of fixtures/audio/ and the FLAC cells of the LibriSpeech fixture.

Run once with a Python that has `soundfile` (libsndfile 1.2) and `numpy`; the outputs are
committed. Every sample is computed here (integer sawtooth waves and sine tones): nothing is
taken from a recording. Generated for servebench, public domain.
"""
import base64
import io
import json
import pathlib

import numpy as np
import soundfile as sf

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fixtures" / "audio"


def saw(frames, step, period, scale):
    i = np.arange(frames, dtype=np.int64)
    return (((i * step) % period) - period // 2) * scale


def tone(seconds, rate, hz, channels):
    t = np.arange(int(round(seconds * rate))) / rate
    x = 0.25 * np.sin(2 * np.pi * hz * t)
    return np.stack([x] * channels, axis=1) if channels > 1 else x


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    # Lossless: the decoded samples are exactly these (tests recompute them).
    mono = saw(24_000, 97, 4001, 4).astype(np.int16)
    sf.write(OUT / "saw-16k-mono-s16.flac", mono, 16_000, format="FLAC", subtype="PCM_16")
    left = saw(4_410, 89, 3001, 1000)
    right = -left
    stereo = (np.stack([left, right], axis=1) << 8).astype(np.int32)
    sf.write(OUT / "saw-44k1-stereo-s24.flac", stereo, 44_100, format="FLAC", subtype="PCM_24")
    # Lossy: durations and shapes are pinned, samples only roughly.
    sf.write(OUT / "tone-16k-mono.mp3", tone(1.0, 16_000, 440, 1), 16_000, format="MP3")
    sf.write(OUT / "tone-22k05-stereo.ogg", tone(1.0, 22_050, 330, 2), 22_050, format="OGG", subtype="VORBIS")
    # The LibriSpeech rows hold FLAC audio cells, as the Hub's Parquet files do: the same
    # samples the earlier WAV cells held, losslessly re-encoded.
    asr = ROOT / "fixtures" / "datasets" / "hf" / "openslr" / "librispeech_asr" / "train.jsonl"
    rows = [json.loads(line) for line in asr.read_text().splitlines() if line.strip()]
    for row in rows:
        cell = row["audio"]
        raw = base64.b64decode(cell["bytes"])
        if raw[:4] == b"fLaC":
            continue
        data, rate = sf.read(io.BytesIO(raw), dtype="int16")
        buf = io.BytesIO()
        sf.write(buf, data, rate, format="FLAC", subtype="PCM_16")
        name = cell["path"].rsplit(".", 1)[0] + ".flac"
        row["file"] = name
        row["audio"] = {"bytes": base64.b64encode(buf.getvalue()).decode(), "path": name}
    asr.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()

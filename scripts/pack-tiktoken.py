#!/usr/bin/env python3
"""Packs OpenAI's tiktoken BPE tables (`<name>.tiktoken`: base64 token, space, rank per line)
into the compact form servebench embeds (crates/servebench-data/data/tiktoken/*.sbtk.zst):

    b"SBTK1\\n", then per token in rank order: varint(rank - previous rank - 1), u8 length, bytes

compressed with zstd -19. Usage: scripts/pack-tiktoken.py ASSETS_DIR OUT_DIR, where ASSETS_DIR
holds cl100k_base/o200k_base/p50k_base/r50k_base.tiktoken (e.g. the `assets/` folder of the
tiktoken-rs crate in ~/.cargo/registry/src). Needs the `zstd` command.
"""
import base64
import pathlib
import subprocess
import sys

NAMES = ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"]


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def pack(text: str) -> bytes:
    out = bytearray(b"SBTK1\n")
    previous = -1
    for line in text.splitlines():
        if not line.strip():
            continue
        token_b64, rank_text = line.split()
        rank, token = int(rank_text), base64.b64decode(token_b64)
        if rank <= previous or not 0 < len(token) < 256:
            sys.exit(f"unexpected entry: {line!r}")
        out += varint(rank - previous - 1) + bytes([len(token)]) + token
        previous = rank
    return bytes(out)


def main() -> None:
    assets, out_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in NAMES:
        raw = out_dir / f"{name}.sbtk"
        raw.write_bytes(pack((assets / f"{name}.tiktoken").read_text()))
        subprocess.run(["zstd", "-19", "-q", "-f", "--rm", str(raw), "-o", f"{raw}.zst"], check=True)
        print(f"{name}: {(out_dir / f'{name}.sbtk.zst').stat().st_size} bytes")


if __name__ == "__main__":
    main()

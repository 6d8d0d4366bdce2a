#!/usr/bin/env python3
"""Where a binary's bytes go: its symbols grouped by crate, with the section totals.

    scripts/size-by-crate.py BINARY [--top N] [--owner first|generic] [--section text|rodata|all]
                             [--symbols CRATE] [--by-feature] [--json]

BINARY must keep its symbol table (not stripped): `cargo build --profile release-syms` builds
the release binary with symbols (scripts/size-report.sh does it and calls this). Reads
`nm -S --size-sort -C BINARY` and `size -A BINARY` (binutils).

Attribution: a Rust symbol belongs to the first crate in its demangled path, after trait-impl
brackets (`<serde_json::Value as core::fmt::Debug>::fmt` is serde_json's). With
`--owner generic` a generic function of core/alloc/std instantiated over another crate's type
(`core::ptr::drop_in_place<tokio::...>`) is charged to that crate instead; by default it stays
in core/alloc/std. C symbols are grouped by their library's prefix (ring, mimalloc, zstd, libc
...), the rest is `(other C/asm)`. Bytes of a section no symbol covers (string literals,
panic locations, jump tables, the embedded data of `include_bytes!` without a symbol) are
`(no symbol)`.

`--by-feature` sums the crates into servebench's user-facing features (FEATURES below; a crate
not listed is "other"), with the built-in tiktoken tables (`include_bytes!` data, no symbol)
carved out of `(no symbol)` by their file sizes.
"""

from __future__ import annotations

import argparse
import collections
import json
import pathlib
import re
import subprocess
import sys

# nm's type letters: code, read-only data, data, bss.
KINDS = {"t": "text", "w": "text", "r": "rodata", "d": "data", "b": "bss", "v": "data"}

# C and assembly symbols, by prefix, to the library they come from.
C_PREFIXES = [
    ("ring_core_", "ring (C/asm)"),
    ("ring_", "ring (C/asm)"),
    ("GFp_", "ring (C/asm)"),
    ("_mi_", "mimalloc (C)"),
    ("mi_", "mimalloc (C)"),
    ("ZSTD", "zstd (C)"),
    ("HUF_", "zstd (C)"),
    ("FSE_", "zstd (C)"),
    ("HIST_", "zstd (C)"),
    ("ZDICT", "zstd (C)"),
    ("POOL_", "zstd (C)"),
    ("COVER_", "zstd (C)"),
    ("ERR_getErrorString", "zstd (C)"),
    ("XXH", "zstd (C)"),
    ("ecp_nistz256_", "ring (C/asm)"),
    ("p256_", "ring (C/asm)"),
    ("p384_", "ring (C/asm)"),
    ("x25519_", "ring (C/asm)"),
    ("fe_", "ring (C/asm)"),
    ("ge_", "ring (C/asm)"),
    ("aes_", "ring (C/asm)"),
    ("gcm_", "ring (C/asm)"),
    ("ChaCha20_", "ring (C/asm)"),
    ("chacha20_", "ring (C/asm)"),
    ("sha256_", "ring (C/asm)"),
    ("sha512_", "ring (C/asm)"),
    ("bn_", "ring (C/asm)"),
    ("LIMBS_", "ring (C/asm)"),
    ("LIMB_", "ring (C/asm)"),
    ("CRYPTO_", "ring (C/asm)"),
    ("OPENSSL_", "ring (C/asm)"),
    ("table_select", "ring (C/asm)"),
    ("nistz", "ring (C/asm)"),
    ("mul4x_", "ring (C/asm)"),
    ("mulx4x_", "ring (C/asm)"),
    ("_aesni_", "ring (C/asm)"),
    ("_vpaes_", "ring (C/asm)"),
    ("fiat_", "ring (C/asm)"),
    ("chacha_", "ring (C/asm)"),
    ("poly_hash", "ring (C/asm)"),
    ("fe4_", "ring (C/asm)"),
    ("elem_", "ring (C/asm)"),
    ("__ecp_", "ring (C/asm)"),
    ("ML_default", "zstd (C)"),
    ("LL_default", "zstd (C)"),
    ("OF_default", "zstd (C)"),
    ("heap_main", "mimalloc (C)"),
    ("theap_main", "mimalloc (C)"),
    ("subproc_main", "mimalloc (C)"),
    ("out_buf", "mimalloc (C)"),
    ("__rust_", "rust runtime"),
    ("rust_", "rust runtime"),
    ("__rdl_", "rust runtime"),
    ("__rg_", "rust runtime"),
    ("_ZN", "(undemangled Rust)"),
]

# servebench's features and the crates that exist for them (for --by-feature). Shared plumbing
# (std, tokio, hyper, serde, our own crates) is listed too, so "other" stays small.
FEATURES = {
    "tokenizers (tokenizer.json, tiktoken code, regex engines)": [
        "tokenizers", "tiktoken_rs", "fancy_regex", "regex", "regex_automata", "regex_syntax",
        "aho_corasick", "spm_precompiled", "unicode_normalization_alignments",
        "unicode_segmentation", "unicode_categories", "esaxx_rs", "monostate", "dary_heap",
        "rayon_cond", "bstr", "bit_set", "bit_vec", "rustc_hash", "regex_lite"],
    "chat templates (minijinja)": ["minijinja", "minijinja_contrib", "memo_map", "self_cell"],
    "parquet datasets": ["parquet", "thrift", "snap", "twox_hash", "half", "num_bigint",
                         "num_integer", "num_traits", "seq_macro", "ordered_float", "paste"],
    "dataset images (decode, JPEG re-encode)": [
        "image", "zune_jpeg", "zune_core", "zune_inflate", "image_webp", "png", "gif", "tiff",
        "weezl", "fdeflate", "jpeg_encoder", "moxcms", "pxfm", "color_quant", "fax", "quick_error",
        "byteorder_lite", "bytemuck"],
    "dataset audio (symphonia)": ["symphonia", "symphonia_core", "symphonia_metadata",
                                  "symphonia_format_ogg", "symphonia_bundle_mp3",
                                  "symphonia_bundle_flac", "symphonia_codec_vorbis",
                                  "symphonia_codec_pcm", "symphonia_format_riff",
                                  "symphonia_common", "symphonia_utils_xiph"],
    "TLS (rustls, ring, root certificates)": [
        "rustls", "ring", "ring (C/asm)", "webpki", "rustls_webpki", "webpki_roots",
        "rustls_pki_types", "rustls_native_certs", "tokio_rustls", "untrusted", "rcgen", "pem",
        "yasna", "openssl_probe", "subtle", "zeroize"],
    "OpenTelemetry export (--otlp)": ["opentelemetry", "opentelemetry_sdk", "opentelemetry_otlp",
                                      "opentelemetry_proto", "opentelemetry_http", "prost", "h2",
                                      "tracing", "tracing_core", "httpdate"],
    "Hugging Face Hub download (hf-hub, ureq)": ["hf_hub", "ureq", "socks", "console",
                                                  "unit_prefix", "number_prefix", "dirs",
                                                  "dirs_sys", "idna", "url", "icu_normalizer",
                                                  "icu_collections", "icu_properties",
                                                  "utf8_iter", "utf16_iter", "percent_encoding",
                                                  "form_urlencoded", "idna_adapter"],
    "live dashboard (--tui)": ["ratatui", "crossterm", "cassowary", "unicode_truncate",
                               "unicode_width", "lru", "compact_str", "strum", "instability",
                               "signal_hook", "signal_hook_mio", "itertools", "castaway"],
    "progress bar (indicatif)": ["indicatif"],
    "command line (clap)": ["clap", "clap_builder", "clap_lex", "anstream", "anstyle",
                            "anstyle_parse", "anstyle_query", "strsim", "terminal_size"],
    "config files (TOML)": ["toml_edit", "toml_parser", "toml_writer", "toml_datetime", "winnow"],
    "compression (zstd, gzip, brotli)": ["zstd", "zstd (C)", "zstd_safe", "flate2",
                                         "miniz_oxide", "crc32fast", "brotli_decompressor",
                                         "simd_adler32", "adler2", "alloc_no_stdlib",
                                         "alloc_stdlib"],
    "simulator (--sim)": ["servebench_sim", "axum", "matchit", "statrs", "rand_distr"],
    "HTML report and summaries": ["servebench_report"],
    "servebench's own crates (client, runner, data, CLI)": [
        "servebench", "servebench_runner", "servebench_client", "servebench_data",
        "servebench_core"],
    "async runtime and HTTP/1 (tokio, hyper)": [
        "tokio", "tokio_util", "mio", "hyper", "hyper_util", "http", "http_body",
        "http_body_util", "httparse", "bytes", "futures", "futures_util", "futures_core",
        "futures_channel", "futures_task", "futures_sink", "want", "slab", "ipnet", "socket2",
        "signal_hook_registry", "atomic_waker", "try_lock", "tower_service", "pin_project_lite"],
    "serde, JSON, time, hashing, rayon, rand": [
        "serde", "serde_core", "serde_json", "itoa", "ryu", "zmij", "time", "chrono", "sha2",
        "hex", "base64", "rayon", "rayon_core", "crossbeam_epoch", "crossbeam_deque",
        "crossbeam_utils", "rand", "rand_core", "rand_chacha", "getrandom", "uuid", "ahash",
        "foldhash", "indexmap", "smallvec", "memchr", "once_cell", "parking_lot",
        "parking_lot_core", "anyhow", "thiserror", "libc", "rustix", "either", "utf_types",
        "cpufeatures", "lock_api"],
    "Rust standard library and runtime": [
        "core", "alloc", "std", "hashbrown", "rust runtime", "mimalloc (C)", "std_detect",
        "panic_unwind", "unwind", "compiler_builtins", "rustc_demangle", "addr2line", "gimli",
        "object", "rust", "(undemangled Rust)"],
}
TIKTOKEN_FEATURE = "built-in tiktoken tables (zstd, data)"
TIKTOKEN_DIR = "crates/servebench-data/data/tiktoken"

STD = {"core", "alloc", "std", "std_detect", "panic_unwind", "unwind", "compiler_builtins",
       "hashbrown", "rustc_demangle", "addr2line", "gimli", "miniz_oxide", "object", "adler2"}
IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
PATH = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)::")
# A path that starts a type argument: after `<`, `(`, `[`, `&`, `*`, `,` or a space.
ARG_PATH = re.compile(r"(?<=[<(\[&*, ])([A-Za-z_][A-Za-z0-9_]*)::")
HASH = re.compile(r"::h[0-9a-f]{16}$")


def impl_parts(name: str) -> tuple[str, str | None] | None:
    """`<Self as Trait>::f` -> (Self, Trait); `<Self>::f` -> (Self, None); else None."""
    if not name.startswith("<"):
        return None
    depth = 0
    for i, ch in enumerate(name):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
            if depth == 0:
                inner = name[1:i]
                break
    else:
        return None
    depth = 0
    for i in range(len(inner)):
        ch = inner[i]
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        elif depth == 0 and inner.startswith(" as ", i):
            return inner[:i], inner[i + 4:]
    return inner, None


def path_crate(s: str) -> str | None:
    """The crate of a demangled Rust path: its first `ident::` after leading `&`, `*const`, `dyn`."""
    s = s.lstrip("<&*([ ")
    for prefix in ("const ", "mut ", "dyn ", "impl "):
        while s.startswith(prefix):
            s = s[len(prefix):].lstrip("<&*([ ")
    m = PATH.match(s)
    return m.group(1) if m else None


def first_crate(name: str) -> str | None:
    """The crate of a symbol: of its path, or for a trait impl `<Self as Trait>::f`, of Self, or
    of Trait when Self is a type parameter or a primitive (`<F as clap_builder::...>`)."""
    parts = impl_parts(name)
    if parts is None:
        return path_crate(name)
    self_ty, trait = parts
    crate = path_crate(self_ty)
    if crate is None and trait is not None:
        crate = path_crate(trait)
    if crate is None:
        crate = "core"  # an inherent method of a primitive: `<str>::to_lowercase`
    return crate


def generic_owner(name: str, crate: str) -> str:
    """For a core/alloc/std symbol, the first non-std crate named in it (its type arguments)."""
    if crate not in STD:
        return crate
    for m in ARG_PATH.finditer(name):
        c = m.group(1)
        if c not in STD:
            return c
    return crate


def classify(name: str, owner: str) -> str:
    name = HASH.sub("", name)
    crate = first_crate(name)
    if crate is not None:
        if crate.startswith("_") or crate in ("vtable", "anon"):
            crate = None
    if crate is not None:
        return generic_owner(name, crate) if owner == "generic" else crate
    for prefix, lib in C_PREFIXES:
        if name.startswith(prefix):
            return lib
    if name.startswith("anon.") or name.startswith(".L"):
        return "(no symbol)"
    return "(other C/asm)"


def sections(binary: str) -> dict[str, int]:
    out = subprocess.run(["size", "-A", binary], check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0].startswith(".") and parts[1].isdigit():
            res[parts[0]] = int(parts[1])
    return res


def symbols(binary: str):
    out = subprocess.run(["nm", "-S", "--size-sort", "-C", binary], check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 4:
            continue
        _, size, kind, name = parts
        k = KINDS.get(kind.lower())
        if k is None:
            continue
        yield k, int(size, 16), name


def by_feature(table):
    """The crate table summed into FEATURES; the tiktoken tables carved out of (no symbol)."""
    owner = {crate: feat for feat, crates in FEATURES.items() for crate in crates}
    out: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for crate, c in table.items():
        if crate == "(no symbol)":
            out["(no symbol: string literals, tables, panic locations)"].update(c)
        else:
            out[owner.get(crate, "other")].update(c)
    root = pathlib.Path(__file__).resolve().parent.parent / TIKTOKEN_DIR
    data = sum(f.stat().st_size for f in root.glob("*.zst")) if root.is_dir() else 0
    if data:
        out[TIKTOKEN_FEATURE]["rodata"] += data
        out["(no symbol: string literals, tables, panic locations)"]["rodata"] -= data
    return out


def mb(n: int) -> str:
    return f"{n / 1e6:.2f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("binary")
    ap.add_argument("--top", type=int, default=30, help="crates to list (the rest summed)")
    ap.add_argument("--owner", choices=["first", "generic"], default="first")
    ap.add_argument("--section", choices=["text", "rodata", "all"], default="all",
                    help="sort by this section's bytes (all: text + rodata)")
    ap.add_argument("--symbols", metavar="CRATE", help="list CRATE's largest symbols instead")
    ap.add_argument("--by-feature", action="store_true",
                    help="sum the crates into servebench's features (see FEATURES)")
    ap.add_argument("--json", action="store_true", help="print the table as JSON")
    a = ap.parse_args()

    secs = sections(a.binary)
    if not any(True for _ in symbols(a.binary)):
        print(f"{a.binary}: no symbols (stripped?); build it with --profile release-syms",
              file=sys.stderr)
        return 2
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    per_sym: list[tuple[int, str, str]] = []
    for kind, size, name in symbols(a.binary):
        crate = classify(name, a.owner)
        table[crate][kind] += size
        if a.symbols and crate == a.symbols:
            per_sym.append((size, kind, name))

    if a.symbols:
        for size, kind, name in sorted(per_sym, reverse=True)[: a.top]:
            print(f"{size:>10}  {kind:<6}  {name[:160]}")
        return 0

    covered = collections.Counter()
    for c in table.values():
        covered.update(c)
    for kind, sec in (("text", ".text"), ("rodata", ".rodata")):
        gap = secs.get(sec, 0) - covered[kind]
        if gap > 0:
            table["(no symbol)"][kind] += gap

    if a.by_feature:
        table = by_feature(table)

    def key(item):
        c = item[1]
        return c["text"] + c["rodata"] if a.section == "all" else c[a.section]

    rows = sorted(table.items(), key=key, reverse=True)
    if a.json:
        print(json.dumps({"sections": secs,
                          "crates": {k: dict(v) for k, v in rows}}, indent=1))
        return 0
    total_file = sum(v for k, v in secs.items() if not k.startswith(".debug") and k != ".comment")
    print(f"sections (size -A, MB): .text {mb(secs.get('.text', 0))}  .rodata "
          f"{mb(secs.get('.rodata', 0))}  .eh_frame {mb(secs.get('.eh_frame', 0))}  "
          f".data.rel.ro {mb(secs.get('.data.rel.ro', 0))}  "
          f"(all loaded sections {mb(total_file)})")
    w = 56 if a.by_feature else 28
    print(f"{'feature' if a.by_feature else 'crate':<{w}} {'.text MB':>9} {'.rodata MB':>11} "
          f"{'data MB':>8} {'sum MB':>8}")
    shown = rows[: a.top]
    rest = collections.Counter()
    for _, c in rows[a.top:]:
        rest.update(c)
    for name, c in shown + ([(f"({len(rows) - a.top} more)", rest)] if rest else []):
        s = c["text"] + c["rodata"] + c["data"]
        print(f"{name:<{w}} {mb(c['text']):>9} {mb(c['rodata']):>11} {mb(c['data']):>8} {mb(s):>8}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

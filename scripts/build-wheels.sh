#!/usr/bin/env bash
# Wheels to publish, cross-compiled on one x86-64 Linux machine without containers: maturin builds
# the `servebench` binary for each target and packs it (bindings = "bin", pyproject.toml). zig
# is the C compiler and linker of the glibc targets, which lets a wheel built on a recent
# distribution claim manylinux2014 (glibc 2.17); musl targets are static. docs/install.md,
# "Building wheels to publish", says how each was checked.
#
#   scripts/build-wheels.sh                         # the three below, into target/wheels
#   TARGETS="aarch64-unknown-linux-gnu" scripts/build-wheels.sh
#   VERIFY=1 scripts/build-wheels.sh                # also run each wheel's binary (--sim)
#   SKIP_BUILD=1 VERIFY=1 OUT=DIR scripts/build-wheels.sh   # only run the wheels already in DIR
#
# TARGETS (default: all three):
#   x86_64-unknown-linux-gnu    manylinux2014   (zig)
#   x86_64-unknown-linux-musl   musllinux_1_2   (musl-gcc from musl-tools, or zig)
#   aarch64-unknown-linux-gnu   manylinux2014   (zig); also aarch64-unknown-linux-musl
# Each is a release build (fat LTO: about 11 CPU-minutes). Needs the Rust targets
# (`rustup target add …`) and, in a build venv made here, maturin and ziglang from PyPI.
# VERIFY=1 runs each binary: natively, or under qemu-aarch64-static (Debian: qemu-user-static).
set -euo pipefail
cd "$(dirname "$0")/.."
MATURIN_VERSION=1.16.0
ZIG_VERSION=0.17.1
TARGETS="${TARGETS:-x86_64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-gnu}"
OUT="${OUT:-${CARGO_TARGET_DIR:-target}/wheels}"
venv="${BUILD_VENV:-${CARGO_TARGET_DIR:-target}/wheel-build-venv}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [[ "${SKIP_BUILD:-0}" == 1 ]]; then
  TARGETS=""
elif [[ ! -x "$venv/bin/maturin" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "maturin==$MATURIN_VERSION" "ziglang==$ZIG_VERSION"
fi
export PATH="$venv/bin:$PATH"
mkdir -p "$OUT"

for target in $TARGETS; do
  case "$target" in
    *-linux-gnu) tag=manylinux2014; zig=(--zig) ;;
    x86_64-unknown-linux-musl) tag=musllinux_1_2; zig=() ;;
    *-linux-musl) tag=musllinux_1_2; zig=(--zig) ;;
    *) echo "build-wheels: unknown target $target" >&2; exit 2 ;;
  esac
  echo "build-wheels: $target ($tag)"
  maturin build --release --locked --target "$target" --compatibility "$tag" "${zig[@]}" \
    --out "$OUT"
done
ls -l "$OUT"/servebench-*.whl

if [[ "${VERIFY:-0}" == 1 ]]; then
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  for whl in "$OUT"/servebench-*.whl; do
    rm -rf "$work/x" && mkdir "$work/x"
    python3 -m zipfile -e "$whl" "$work/x"
    bin="$(find "$work/x" -path '*.data/scripts/servebench')"
    chmod +x "$bin"
    case "$whl" in
      # glibc aarch64: qemu needs the aarch64 C library (Debian: libc6-arm64-cross).
      *manylinux*aarch64*) run=(qemu-aarch64-static -L "${AARCH64_SYSROOT:-/usr/aarch64-linux-gnu}" "$bin") ;;
      *aarch64*) run=(qemu-aarch64-static "$bin") ;;
      *) run=("$bin") ;;
    esac
    echo "build-wheels: $(basename "$whl"): $(file -b "$bin" | cut -d, -f1-2)"
    (cd "$work" && "${run[@]}" --sim --num-prompts 20 --max-concurrency 4 | tail -n 2)
  done
fi

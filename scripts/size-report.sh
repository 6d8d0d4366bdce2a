#!/usr/bin/env bash
# Binary size report: builds the release binary with its symbols (profile `release-syms`: the
# release profile, fat LTO, not stripped), then prints its stripped size, its sections
# (`size -A`) and which crates its code and read-only data belong to (scripts/size-by-crate.py).
# docs/performance.md, "Binary size and start-up", has the figures and how to read them.
#
#   scripts/size-report.sh                     # glibc x86-64 (about 11 CPU-minutes: fat LTO)
#   TARGET=x86_64-unknown-linux-musl scripts/size-report.sh
#   BIN=path/to/unstripped scripts/size-report.sh   # no build: report on that binary
#   TOP=50 OWNER=generic scripts/size-report.sh     # more rows; std generics charged to their crate
#
# Needs binutils (nm, size, strip) and python3. CARGO_TARGET_DIR is honoured.
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir="${CARGO_TARGET_DIR:-target}"
TOP="${TOP:-30}"
OWNER="${OWNER:-first}"

if [[ -z "${BIN:-}" ]]; then
  args=(build --locked --profile release-syms -p servebench)
  if [[ -n "${TARGET:-}" ]]; then
    args+=(--target "$TARGET")
    BIN="$target_dir/$TARGET/release-syms/servebench"
  else
    BIN="$target_dir/release-syms/servebench"
  fi
  cargo "${args[@]}"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
strip -o "$work/stripped" "$BIN"
bytes() { stat -c %s "$1"; }
echo "binary:   $BIN"
echo "size:     $(bytes "$BIN") bytes with symbols, $(bytes "$work/stripped") bytes stripped" \
  "($(python3 -c "print(f'{$(bytes "$work/stripped")/1e6:.2f}')") MB)"
echo "linking:  $(file -b "$BIN" | cut -d, -f1-4)"
echo
size -A "$work/stripped" | awk 'NR>2 && $2>65536 {printf "  %-22s %9.2f MB\n", $1, $2/1e6}'
echo
python3 scripts/size-by-crate.py "$BIN" --top "$TOP" --owner "$OWNER"

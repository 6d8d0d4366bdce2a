#!/usr/bin/env bash
# Runs every cargo-fuzz target for a bounded time (docs/fuzzing.md).
#
#   FUZZ_SECONDS=30 (default) per target; FUZZ_TARGETS="sse_framing chunk_parse" to pick some;
#   FUZZ_SANITIZER=none (default; the project has no unsafe code) or address;
#   FUZZ_JOBS=1 parallel fuzzing processes per target.
# A crash stops the script with a non-zero exit; the input is saved under
# fuzz/artifacts/TARGET/ (reproduce: cargo +nightly fuzz run TARGET fuzz/artifacts/TARGET/crash-…).
# Corpora grow in fuzz/corpus/TARGET/ (ignored by git) and are reused by later runs.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-30}"
sanitizer="${FUZZ_SANITIZER:-none}"
jobs="${FUZZ_JOBS:-1}"

# cargo-fuzz needs a nightly compiler: the installed nightly toolchain, else the default one
# with RUSTC_BOOTSTRAP=1 (stable compilers accept the nightly-only flags that way).
if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  toolchain=(+nightly)
else
  echo "fuzz.sh: no nightly toolchain; using the default one with RUSTC_BOOTSTRAP=1" >&2
  export RUSTC_BOOTSTRAP=1
  toolchain=()
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz" >&2
  cargo install cargo-fuzz --locked
fi

# Several processes per target only when asked (they log to fuzz/fuzz-N.log).
parallel=()
if [ "$jobs" -gt 1 ]; then parallel=(-jobs="$jobs" -workers="$jobs"); fi
build=(cargo "${toolchain[@]}" fuzz build --debug-assertions -s "$sanitizer")
if [ -n "${FUZZ_TARGETS:-}" ]; then
  targets="$FUZZ_TARGETS"
  for t in $targets; do "${build[@]}" "$t"; done
else
  targets="$(cargo "${toolchain[@]}" fuzz list)"
  "${build[@]}"
fi
for t in $targets; do
  mkdir -p "corpus/$t"
  seeds=()
  [ -d "seeds/$t" ] && seeds=("seeds/$t")
  echo "== fuzzing $t for ${seconds}s"
  log="$(mktemp)"
  status=0
  cargo "${toolchain[@]}" fuzz run --debug-assertions -s "$sanitizer" "$t" "corpus/$t" "${seeds[@]}" -- \
    -max_total_time="$seconds" "${parallel[@]}" -max_len=65536 -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 >"$log" 2>&1 || status=$?
  grep -E '^(stat::number_of_executed_units|stat::new_units_added|#[0-9]+ +DONE)' "$log" || true
  if [ "$status" -ne 0 ]; then
    tail -n 40 "$log" >&2
    echo "fuzz.sh: $t failed (exit $status); the input is in fuzz/artifacts/$t/" >&2
    exit 1
  fi
  rm -f "$log"
done
echo "fuzz.sh: every target ran ${seconds}s without a failure"

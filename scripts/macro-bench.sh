#!/usr/bin/env bash
# Macro-benchmark: client measurement error against the simulator's ground truth.
#
# Starts `servebench sim` as a separate process in fixed mode (TTFT 50 ms, ITL 10 ms) and runs
# the client at 1, 100, 500 and 1,000 concurrent streams, 100 output tokens each, with the
# connection pool warmed first (--preconnect) and cold. Prints measured − truth for mean TTFT,
# mean and p99 ITL, plus client CPU seconds, CPU µs per SSE event and peak RSS.
#
# Usage: scripts/macro-bench.sh [CONCURRENCIES...]   (default: 1 100 500 1000)
# Env:   REQS_PER_STREAM (default 3), PORT (default 18471), OUT (default target/macro-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
LEVELS=("${@:-1 100 500 1000}")
read -r -a LEVELS <<< "${LEVELS[*]}"
REQS_PER_STREAM="${REQS_PER_STREAM:-3}"
PORT="${PORT:-18471}"
OUT="${OUT:-target/macro-bench}"
TTFT_MS=50
ITL_MS=10
mkdir -p "$OUT"
cargo build --release --quiet
BIN=target/release/servebench
ulimit -n 65536 2>/dev/null || true

"$BIN" sim --port "$PORT" --sim-ttft-ms "$TTFT_MS" --sim-itl-ms "$ITL_MS" --sim-tokenizer cl100k_base \
  > "$OUT/sim.log" 2>&1 &
SIM_PID=$!
trap 'kill $SIM_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

run_level() { # concurrency pool(warm|cold)
  local c=$1 pool=$2 n pre=0
  n=$(( c * REQS_PER_STREAM )); (( n < 200 )) && n=200
  [[ $pool == warm ]] && pre=$c
  "$BIN" --base-url "http://127.0.0.1:$PORT" --model servebench-sim --tokenizer cl100k_base \
    --num-prompts "$n" --max-concurrency "$c" --random-input-len 32 --random-output-len 100 \
    --ready-check-timeout-sec 10 --preconnect "$pre" --disable-tqdm --percentile-metrics ttft,tpot,itl,e2el \
    --save-result --result-dir "$OUT" --result-filename "c$c-$pool.json" > "$OUT/c$c-$pool.log" 2>&1
}

for c in "${LEVELS[@]}"; do
  run_level "$c" warm
  run_level "$c" cold
done

python3 - "$OUT" "$TTFT_MS" "$ITL_MS" "${LEVELS[@]}" <<'PY'
import json, sys
out, ttft, itl = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
levels = sys.argv[4:]
print(f"{'streams':>8} {'pool':>5} {'reqs':>6} {'TTFT err':>9} {'ITL err':>8} {'p99 ITL err':>11} "
      f"{'CPU s':>6} {'CPU µs/ev':>9} {'RSS MB':>7} {'failed':>6}")
for c in levels:
    for pool in ("warm", "cold"):
        r = json.load(open(f"{out}/c{c}-{pool}.json"))
        events = 0
        with open(f"{out}/c{c}-{pool}.json.records.jsonl") as f:
            for line in f:
                events += json.loads(line).get("token_event_count", 0) + 2  # + usage and [DONE]
        h = r.get("client_health", {})
        cpu = h.get("client_cpu_seconds") or 0.0
        rss = (h.get("peak_rss_bytes") or 0) / 1e6
        print(f"{c:>8} {pool:>5} {r['completed']+r['failed']:>6} {r['mean_ttft_ms']-ttft:>+9.2f} "
              f"{r['mean_itl_ms']-itl:>+8.3f} {r['p99_itl_ms']-itl:>+11.3f} {cpu:>6.2f} "
              f"{(cpu*1e6/events if events else 0):>9.2f} {rss:>7.1f} {r['failed']:>6}")
PY

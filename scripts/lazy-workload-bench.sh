#!/usr/bin/env bash
# Workload memory against --num-prompts (issue 27 item 1; docs/performance.md, "Lazy workload
# generation"): peak RSS (GNU time's "Maximum resident set size") and wall time of
#   1. --dry-run, random, 10,000 prompts x 8,192 tokens (SmolLM2 tokenizer fixture);
#   2. --dry-run, random, 100,000 prompts x 1,024 tokens;
#   3. 2,000 random requests (1,024 in, 64 out) against a standalone simulator, 64 streams
#      (requests/s, the client's CPU seconds and the measured phase's peak RSS from the result);
#   4. --dry-run of a synthetic 1,000,000-row Mooncake trace (written to OUT, never committed);
#   5. (case `replay`, not in the default CASES) a replay of the first REPLAY_ROWS rows (default
#      100,000) of a short-request variant of it (input 128-1,024 tokens, 1 output token;
#      written to OUT) against the simulator, REPLAY_SPEED times faster than its timestamps
#      (default 2.5: about 4,800 requests/s): peak RSS, wall time, achieved rate, completions.
# Each case runs REPEATS times per binary; give two binaries to compare them in one run.
#
# Usage: scripts/lazy-workload-bench.sh BIN [BIN2]
# Env:   REPEATS (default 3), OUT (default /tmp/lazy-bench), PORT (default 18491),
#        CASES (default "dry10k dry100k sim trace"), TRACE_PROMPTS (rows replayed, default all
#        1,000,000; the eager code before issue 27 needs about 33 GB for all of them)
set -euo pipefail
cd "$(dirname "$0")/.."
(( $# >= 1 )) || { echo "usage: $0 BIN [BIN2]" >&2; exit 2; }
BINS=("$@")
REPEATS="${REPEATS:-3}"
OUT="${OUT:-/tmp/lazy-bench}"
PORT="${PORT:-18491}"
CASES="${CASES:-dry10k dry100k sim trace}"
TOK=fixtures/tokenizers/smollm2-135m/tokenizer.json
mkdir -p "$OUT"

# A Mooncake-like trace of 1,000,000 rows in OUT/NAME (written once, never committed): about 1.9
# requests/ms, input MIN_IN-MAX_IN tokens in BLOCK-token hash blocks, the first up to MAX_SHARED
# blocks drawn from a small shared set (prefix reuse), output 1-MAX_OUT tokens.
mooncake_file() { # NAME MIN_IN MAX_IN BLOCK MAX_SHARED MAX_OUT
  local f="$OUT/$1"
  [[ -s $f ]] || python3 - "$f" "${@:2}" <<'EOF'
import random, sys
path, (lo, hi, block, max_shared, max_out) = sys.argv[1], map(int, sys.argv[2:])
rnd = random.Random(27)
with open(path, "w") as f:
    t = 0
    nxt = 10_000_000
    for i in range(1_000_000):
        t += rnd.randint(0, 1)
        n = rnd.randint(lo, hi)
        blocks = (n + block - 1) // block
        shared = rnd.randint(0, min(blocks, max_shared))
        ids = [rnd.randint(0, 200) * 8 + k for k in range(shared)]
        ids += range(nxt, nxt + blocks - shared)
        nxt += blocks - shared
        out = rnd.randint(1, max_out) if max_out > 1 else 1
        f.write('{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%s]}\n'
                % (t, n, out, ", ".join(map(str, ids))))
EOF
  echo "$f"
}

# The trace of the `trace` case: input 500-16,000 tokens, 512-token blocks, output 1-600.
trace_file() { mooncake_file mooncake-1m.jsonl 500 16000 512 4 600; }

# The replay variant: the same arrival process, short prompts sharing some 128-token blocks, one
# output token: the client's per-request cost and memory, not the simulator's generation, bound
# the run.
short_trace_file() { mooncake_file mooncake-short-1m.jsonl 128 1024 128 2 1; }

# Runs a command under GNU time; prints "peak_rss_mib wall_s".
measure() {
  local log="$OUT/time.log"
  /usr/bin/time -v "$@" > "$OUT/stdout.log" 2> "$log" || { tail -5 "$log" >&2; return 1; }
  awk -F': ' '/Maximum resident/ {rss=$2/1024} /Elapsed \(wall/ {split($2,a,":"); w=a[1]*60+a[2]} END {printf "%.1f %.2f\n", rss, w}' "$log"
}

start_sim() {
  "$1" sim --port "$PORT" --sim-model m --sim-ttft-ms 5 --sim-itl-ms 1 > "$OUT/sim.log" 2>&1 &
  SIM_PID=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$PORT/v1/models" > /dev/null && return; sleep 0.1; done
  echo "simulator did not start" >&2; exit 1
}

stop_sim() { kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; }

for bin in "${BINS[@]}"; do
  echo "== $bin ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))"
  for case in $CASES; do
    for r in $(seq "$REPEATS"); do
      case $case in
        dry10k) echo "dry10k  #$r rss_mib wall_s: $(measure "$bin" --dry-run --model m --tokenizer "$TOK" \
                  --dataset-name random --random-input-len 8192 --num-prompts 10000)" ;;
        dry100k) echo "dry100k #$r rss_mib wall_s: $(measure "$bin" --dry-run --model m --tokenizer "$TOK" \
                  --dataset-name random --random-input-len 1024 --num-prompts 100000)" ;;
        sim)
          start_sim "$bin"
          res="$OUT/sim-$r.json"
          m=$(measure "$bin" --base-url "http://127.0.0.1:$PORT" --model m --tokenizer "$TOK" \
                --dataset-name random --random-input-len 1024 --random-output-len 64 --num-prompts 2000 \
                --max-concurrency 64 --save-result --result-filename "$res")
          stop_sim
          echo "sim     #$r rss_mib wall_s: $m; $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); h=d.get('client_health') or {}; print('req/s %.1f client_cpu_s %s run_peak_rss_mib %s' % (d['request_throughput'], h.get('client_cpu_seconds'), (h.get('peak_rss_bytes') or 0)//1048576))" "$res")" ;;
        trace)
          f=$(trace_file)
          echo "trace-dry #$r rss_mib wall_s: $(measure "$bin" --dry-run --model m --tokenizer "$TOK" --backend openai \
                  --dataset-name timed_trace --dataset-path "$f" --timed-trace-chunk-hash-size 512 --num-prompts "${TRACE_PROMPTS:-1000000}")" ;;
        replay)
          f=$(short_trace_file)
          start_sim "$bin"
          res="$OUT/replay-$r.json"
          m=$(measure "$bin" --base-url "http://127.0.0.1:$PORT" --model m --tokenizer "$TOK" --backend openai \
                --dataset-name timed_trace --dataset-path "$f" --timed-trace-chunk-hash-size 128 \
                --timed-trace-sec-multiplier "$(python3 -c "print(1 / ${REPLAY_SPEED:-2.5})")" \
                --num-prompts "${REPLAY_ROWS:-100000}" --skip-tokenize-verification --disable-tqdm \
                --save-result --result-filename "$res")
          stop_sim
          echo "replay  #$r rss_mib wall_s: $m; $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); h=d.get('client_health') or {}; print('completed %d failed %d req/s %.1f lateness_p99_ms %s client_cpu_s %s run_peak_rss_mib %.1f max_in_flight %s' % (d['completed'], d.get('failed', 0), d['request_throughput'], h.get('dispatch_lateness_p99_ms'), h.get('client_cpu_seconds'), (h.get('peak_rss_bytes') or 0) / 1048576, d.get('max_concurrent_requests')))" "$res")" ;;
      esac
    done
  done
done

#!/usr/bin/env bash
# Macro-benchmark: client measurement error against the simulator's ground truth.
#
# Starts `servebench sim` as a separate process in fixed mode (TTFT 50 ms, ITL 10 ms) and runs
# the client at 1, 100, 500 and 1,000 concurrent streams, 100 output tokens each, with the
# connection pool warmed first (--preconnect) and cold. The simulator logs when it sent every
# event (--ground-truth); the table compares the client's measurements with that log, request
# by request: measured − truth for mean TTFT, mean and p99 ITL (truth = what the simulator
# actually sent, so its own timer lateness is not charged to the client), and, for reference,
# measured − nominal (50 ms / 10 ms). Plus client CPU seconds, CPU µs per SSE event and the
# client's peak RSS during the measured phase.
#
# With two or more CPUs the client runs on one CPU and the simulator on another (--pin-cpu), as
# if on two hosts; PIN=0 lets them share all CPUs (each then preempts the other).
#
# Opt-in heavy cases (CASE=...; issue 27 items 3 and 4, docs/performance.md "Ceilings"):
#   CASE=rate     request-rate ceiling: 1-token requests at --request-rate RATES (default
#                 "5000 10000 20000") for RATE_SECONDS (3) each, REPEATS (3) interleaved rounds;
#                 schedule lateness, achieved vs offered rate, client and simulator CPU per
#                 request, the validity verdict. Simulator TTFT 1 ms.
#   CASE=streams  10,000 concurrent streams: `servebench calibrate --levels STREAM_LEVELS`
#                 (default 10000) with ITL 100 ms, 20 tokens (the simulator's truth compared
#                 request by request), plus open connections and ephemeral ports in use.
# Client and simulator run in sessions of their own (setsid): with kernel autogroup
# scheduling, a process shares its CPU share with its session's builds, and nice does not
# help across sessions. The load average is logged before each run.
#
#                 CAP=N adds --max-concurrency N; BIN2 runs a second client right after BIN.
# Usage: scripts/macro-bench.sh [CONCURRENCIES...]   (default: 1 100 500 1000)
# Env:   REQS_PER_STREAM (default 3), PORT (default 18471), OUT (default target/macro-bench),
#        PIN (default 1), BIN (the client binary; default: build the release one, in
#        CARGO_TARGET_DIR or target), SIM_BIN (the simulator's binary; default BIN). Give both to
#        compare two clients against one simulator.
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
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet -p servebench
  BIN="${CARGO_TARGET_DIR:-target}/release/servebench"
fi
SIM_BIN="${SIM_BIN:-$BIN}"
ulimit -n 65536 2>/dev/null || true
SIM_PIN=(); CLIENT_PIN=()
read -r -a CPUS <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
if [[ ${PIN:-1} == 1 ]] && (( ${#CPUS[@]} >= 2 )); then
  CLIENT_PIN=(--pin-cpu "${CPUS[0]}"); SIM_PIN=(--pin-cpu "${CPUS[1]}")
  echo "client on CPU ${CPUS[0]}, simulator on CPU ${CPUS[1]} (PIN=0 to share)"
fi

if [[ ${CASE:-accuracy} != accuracy ]]; then
  # shellcheck source=scripts/macro-bench-ceiling.sh
  source "$(dirname "$0")/macro-bench-ceiling.sh"
  exit 0
fi

"$SIM_BIN" sim "${SIM_PIN[@]}" --port "$PORT" --sim-ttft-ms "$TTFT_MS" --sim-itl-ms "$ITL_MS" --sim-tokenizer cl100k_base \
  --ground-truth "$OUT/truth.jsonl" > "$OUT/sim.log" 2>&1 &
SIM_PID=$!
trap 'kill $SIM_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

run_level() { # concurrency pool(warm|cold)
  local c=$1 pool=$2 n pre=0
  n=$(( c * REQS_PER_STREAM )); (( n < 50 )) && n=50
  [[ $pool == warm ]] && pre=$c
  "$BIN" "${CLIENT_PIN[@]}" --base-url "http://127.0.0.1:$PORT" --model servebench-sim --tokenizer cl100k_base \
    --num-prompts "$n" --max-concurrency "$c" --random-input-len 32 --random-output-len 100 \
    --ready-check-timeout-sec 10 --preconnect "$pre" --disable-tqdm --percentile-metrics ttft,tpot,itl,e2el \
    --request-id-prefix "c$c-$pool-" \
    --save-result --result-dir "$OUT" --result-filename "c$c-$pool.json" > "$OUT/c$c-$pool.log" 2>&1
}

for c in "${LEVELS[@]}"; do
  run_level "$c" warm
  run_level "$c" cold
done

kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; trap - EXIT

python3 - "$OUT" "$TTFT_MS" "$ITL_MS" "${LEVELS[@]}" <<'PY'
import json, sys
out, ttft_nom, itl_nom = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
levels = sys.argv[4:]

def pct(v, p):
    v = sorted(v)
    if not v: return 0.0
    h = (len(v) - 1) * p / 100.0
    lo = int(h); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (h - lo)

def mean(v): return sum(v) / len(v) if v else 0.0

truth = {}
with open(f"{out}/truth.jsonl") as f:
    for line in f:
        t = json.loads(line)
        truth[t["request_id"]] = t

print(f"{'streams':>7} {'pool':>4} {'reqs':>5} | {'TTFT err':>8} {'ITL err':>8} {'p99 ITL err':>11} "
      f"| {'vs nominal: TTFT':>16} {'p99 ITL':>8} | {'req delay':>9} {'recv delay':>10} {'p99':>6} "
      f"| {'CPU s':>6} {'µs/event':>8} {'RSS MB':>6} {'failed':>6}")
for c in levels:
    for pool in ("warm", "cold"):
        r = json.load(open(f"{out}/c{c}-{pool}.json"))
        m_ttft, t_ttft, m_itl, t_itl, delay, req_delay = [], [], [], [], [], []
        origin = r.get("run_origin_unix_us")
        events = 0
        with open(f"{out}/c{c}-{pool}.json.records.jsonl") as f:
            for line in f:
                rec = json.loads(line)
                events += rec.get("token_event_count", 0) + 2  # + usage chunk and [DONE]
                t = truth.get(rec["request_id"])
                if rec["outcome"] != "completed" or t is None or not t["event_us"]:
                    continue
                m_ttft.append((rec["first_token_us"] - rec["dispatched_us"]) / 1000)
                t_ttft.append((t["event_us"][0] - t["received_us"]) / 1000)
                if origin is not None and "origin_unix_us" in t:
                    # Request delay: from the client's dispatch to the simulator's handler
                    # (wall-clock aligned): the simulator's own intake queue, part of TTFT err.
                    req_delay.append(((t["origin_unix_us"] + t["received_us"]) - (origin + rec["dispatched_us"])) / 1000)
                gaps = rec.get("token_events", {}).get("gaps_us", [])
                tg = [b - a for a, b in zip(t["event_us"], t["event_us"][1:])]
                if len(gaps) == len(tg):
                    m_itl += [g / 1000 for g in gaps]
                    t_itl += [g / 1000 for g in tg]
                    if origin is not None and "origin_unix_us" in t:
                        # Receive delay: when the client timestamped each event minus when the
                        # simulator sent it, on one wall-clock time line.
                        at = origin + rec["first_token_us"]
                        for i, sent in enumerate(t["event_us"]):
                            if i > 0:
                                at += gaps[i - 1]
                            delay.append((at - (t["origin_unix_us"] + sent)) / 1000)
        h = r.get("client_health", {})
        cpu = h.get("client_cpu_seconds") or 0.0
        rss = (h.get("peak_rss_bytes") or 0) / 2**20
        print(f"{c:>7} {pool:>4} {r['completed'] + r['failed']:>5} | "
              f"{mean(m_ttft) - mean(t_ttft):>+8.3f} {mean(m_itl) - mean(t_itl):>+8.3f} "
              f"{pct(m_itl, 99) - pct(t_itl, 99):>+11.3f} | "
              f"{r['mean_ttft_ms'] - ttft_nom:>+16.2f} {r['p99_itl_ms'] - itl_nom:>+8.2f} | "
              f"{mean(req_delay):>9.3f} {mean(delay):>10.3f} {pct(delay, 99):>6.2f} | "
              f"{cpu:>6.2f} {(cpu * 1e6 / events if events else 0):>8.2f} {rss:>6.1f} {r['failed']:>6}")
print("errors in ms; truth = the simulator's own send times (--ground-truth); nominal = 50 ms / 10 ms;")
print("req delay = simulator handler start − client dispatch; recv delay = client timestamp of an event −")
print("simulator send time (both wall-clock aligned, ± a few µs)")
PY

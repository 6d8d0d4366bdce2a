#!/usr/bin/env bash
# The live dashboard's cost on the hot path (docs/performance.md, "Live dashboard").
#
# One standalone simulator (fixed mode: TTFT 50 ms, ITL 10 ms, --ground-truth) and the same
# client run with and without --tui, alternating, REPEATS times each. Both runs are inside a
# tmux window of 120×40 (a real terminal: the dashboard really draws once a second; without
# --tui the same terminal shows the progress bar, servebench's default on a terminal). Per run:
# client CPU µs per SSE event and CPU seconds of the client runtime's threads and peak RSS of
# the measured phase (client_health, as scripts/macro-bench.sh computes them), CPU seconds and
# max RSS of the whole process (time(1): every thread, the dashboard's `sb-tui` included, and
# start-up), and the client's error against the simulator's own send times (mean TTFT, mean
# and p99 ITL). The load average is logged before every run (the machine may be shared).
#
# Usage: scripts/tui-bench.sh
# Env:   BIN (the servebench binary; default: build the release one), REPEATS (default 5),
#        PROMPTS (default 600), CONC (default 50), PORT (default 18491),
#        OUT (default target/tui-bench), PIN (default 1: client and simulator on CPUs of
#        their own, as scripts/macro-bench.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
REPEATS="${REPEATS:-5}"
PROMPTS="${PROMPTS:-600}"
CONC="${CONC:-50}"
PORT="${PORT:-18491}"
OUT="${OUT:-target/tui-bench}"
mkdir -p "$OUT"
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet -p servebench
  BIN="${CARGO_TARGET_DIR:-target}/release/servebench"
fi
BIN="$(realpath "$BIN")"
SIM_PIN=(); CLIENT_PIN=()
read -r -a CPUS <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
if [[ ${PIN:-1} == 1 ]] && (( ${#CPUS[@]} >= 2 )); then
  CLIENT_PIN=(--pin-cpu "${CPUS[0]}"); SIM_PIN=(--pin-cpu "${CPUS[1]}")
fi
SOCK="sb-tui-bench-$$"

setsid "$BIN" sim "${SIM_PIN[@]}" --port "$PORT" --sim-ttft-ms 50 --sim-itl-ms 10 --sim-tokenizer cl100k_base \
  --ground-truth "$OUT/truth.jsonl" > "$OUT/sim.log" 2>&1 &
SIM_PID=$!
trap 'kill $SIM_PID 2>/dev/null || true; tmux -L "$SOCK" kill-server 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
  sleep 0.1
done

run_one() { # name (tui|bar) round
  local mode=$1 round=$2 name="$1-$2" flag=""
  [[ $mode == tui ]] && flag="--tui"
  echo "$name load: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$OUT/load.log"
  # Nothing redirected: the terminal is stdin, stdout and stderr of both views.
  cat > "$OUT/$name.sh" <<EOF
/usr/bin/time -f "%U %S %M" -o $OUT/$name.time "$BIN" ${CLIENT_PIN[*]} --base-url http://127.0.0.1:$PORT --model servebench-sim --tokenizer cl100k_base \
  --num-prompts $PROMPTS --max-concurrency $CONC --random-input-len 32 --random-output-len 100 \
  --ready-check-timeout-sec 10 --percentile-metrics ttft,tpot,itl,e2el --request-id-prefix $name- $flag \
  --save-result --result-dir $OUT --result-filename $name.json
echo \$? > $OUT/$name.done
EOF
  tmux -L "$SOCK" -f /dev/null new-session -d -s "$name" -x 120 -y 40 "sh $OUT/$name.sh; sleep 1"
  while [[ ! -f $OUT/$name.done ]]; do sleep 0.5; done
  [[ $(cat "$OUT/$name.done") == 0 ]] || { echo "$name failed (exit $(cat "$OUT/$name.done"))"; exit 1; }
}

rm -f "$OUT"/*.done "$OUT/load.log"
for r in $(seq "$REPEATS"); do
  if (( r % 2 )); then run_one bar "$r"; run_one tui "$r"; else run_one tui "$r"; run_one bar "$r"; fi
done
kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true

python3 - "$OUT" "$REPEATS" <<'PY'
import json, sys
out, repeats = sys.argv[1], int(sys.argv[2])
truth = {}
for line in open(f"{out}/truth.jsonl"):
    t = json.loads(line); truth[t["request_id"]] = t
def pct(v, p):
    v = sorted(v)
    if not v: return 0.0
    h = (len(v) - 1) * p / 100.0; lo = int(h); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (h - lo)
def mean(v): return sum(v) / len(v) if v else 0.0
rows = {"bar": [], "tui": []}
for mode in rows:
    for r in range(1, repeats + 1):
        name = f"{mode}-{r}"
        res = json.load(open(f"{out}/{name}.json"))
        m_ttft, t_ttft, m_itl, t_itl, events = [], [], [], [], 0
        for line in open(f"{out}/{name}.json.records.jsonl"):
            rec = json.loads(line)
            events += rec.get("token_event_count", 0) + 2
            t = truth.get(rec["request_id"])
            if rec["outcome"] != "completed" or t is None or not t["event_us"]: continue
            m_ttft.append((rec["first_token_us"] - rec["dispatched_us"]) / 1000)
            t_ttft.append((t["event_us"][0] - t["received_us"]) / 1000)
            gaps = rec.get("token_events", {}).get("gaps_us", [])
            tg = [b - a for a, b in zip(t["event_us"], t["event_us"][1:])]
            if len(gaps) == len(tg):
                m_itl += [g / 1000 for g in gaps]; t_itl += [g / 1000 for g in tg]
        h = res.get("client_health", {})
        cpu = h.get("client_cpu_seconds") or 0.0
        # The whole process (every thread, the dashboard's included; start-up too): time(1).
        u, s_, maxrss_kb = open(f"{out}/{name}.time").read().split()[-3:]
        rows[mode].append(dict(us=cpu * 1e6 / events, cpu=cpu, rss=(h.get("peak_rss_bytes") or 0) / 2**20,
                               pcpu=float(u) + float(s_), prss=int(maxrss_kb) / 1024,
                               ttft=mean(m_ttft) - mean(t_ttft), itl=mean(m_itl) - mean(t_itl),
                               p99=pct(m_itl, 99) - pct(t_itl, 99), failed=res["failed"]))
        print(name, {k: round(v, 3) for k, v in rows[mode][-1].items()})
print(f"\n| view | µs/event | CPU s (runtime) | CPU s (process) | peak RSS MiB (phase) | max RSS MiB (process) "
      f"| TTFT err ms | ITL err ms | p99 ITL err ms | failed |")
print("|---|---|---|---|---|---|---|---|---|---|")
for mode, label in (("bar", "progress bar"), ("tui", "--tui")):
    rs = rows[mode]
    span = lambda k, f: f"{f.format(min(x[k] for x in rs))}–{f.format(max(x[k] for x in rs))}"
    print(f"| {label} | {span('us', '{:.2f}')} | {span('cpu', '{:.2f}')} | {span('pcpu', '{:.2f}')} | "
          f"{span('rss', '{:.1f}')} | {span('prss', '{:.1f}')} | "
          f"{span('ttft', '{:+.3f}')} | {span('itl', '{:+.3f}')} | {span('p99', '{:+.3f}')} | "
          f"{sum(x['failed'] for x in rs)} |")
PY

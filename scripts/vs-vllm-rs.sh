#!/usr/bin/env bash
# servebench against vLLM's Rust client (`vllm-bench` 0.1.0 / `vllm-rs bench serve`), side by
# side on one simulator (issue 27 item 5, docs/performance.md "Goals against vLLM's Rust client").
#
# Starts one `servebench sim` (fixed timing: TTFT 50 ms, ITL 10 ms, --ground-truth) and runs
# both clients against it with the same command line (random dataset, INPUT_LEN in / OUTPUT_LEN
# out, REQS_PER_STREAM × concurrency requests, no warm-up, cold connection pool, as vllm-rs
# has no pre-connect), alternating ours / vllm-rs / ours / vllm-rs, REPEATS pairs per level.
# Per run:
#   TTFT err    = the client's mean_ttft_ms − the mean TTFT the simulator actually served
#                 (first event sent − request received, from its ground-truth log, the run's
#                 requests picked by their x-request-id prefix), ms. It includes the time the
#                 request waits in the simulator's intake, the same for both clients.
#   ITL p99 err = the client's p99_itl_ms − the p99 of the gaps the simulator actually left
#                 between events (the same linear interpolation as numpy's default), ms.
#   CPU s       = user + system seconds of the whole client process (wait4's rusage;
#                 preparation included).
#   RSS         = its peak resident set over the whole process, sampled from VmRSS in
#                 /proc/PID/status every 5 ms by the launcher below. Not the kernel's maximum
#                 RSS alone: servebench resets its own peak mark (clear_refs) before the
#                 measured phase, so the kernel's figure ("kernel max", printed too) is the
#                 measured phase's peak for servebench and the whole process's for vllm-rs.
#   load        = the 1-minute load average just before and just after the run.
# Then per level the ratios ours / vllm-rs of |TTFT err|, |ITL p99 err|, CPU s and RSS, one per
# pair (ours of pair i against vllm-rs of pair i), as median and min–max, against the goals.
#
# With two or more CPUs both clients run on the first CPU (sched_setaffinity in the launcher,
# what --pin-cpu and taskset do) and the simulator on the second (--pin-cpu), as
# scripts/macro-bench.sh does. Each runs in a session of its own (setsid: with kernel autogroup
# scheduling a process shares its CPU share with its session). Other work on the machine is
# not stopped: the load columns say what ran beside.
#
# Usage: scripts/vs-vllm-rs.sh OURS_BIN VLLM_RS_BIN [LEVELS...]     (default level: 1000)
#        VLLM_RS_BIN may be `vllm-bench` (0.1.0) or `vllm-rs` (with VLLM_RS_ARGS="bench serve").
# Env:   REPEATS (3), REQS_PER_STREAM (3), INPUT_LEN (32), OUTPUT_LEN (100), PORT (18481),
#        TOKENIZER (fixtures/tokenizers/smollm2-135m/tokenizer.json), OUT (target/vs-vllm-rs),
#        SIM_BIN (default OURS_BIN), PIN (1; 0 = no pinning), SMAPS (0; 1 = also read the
#        client's /proc/PID/smaps every 0.5 s and keep the breakdown of the largest sample:
#        anonymous, the binary's own file pages, other files; it takes the client's memory-map
#        lock briefly, so it is off by default), CLIENT_ENV ("K=V ..." for both clients, e.g.
#        MIMALLOC_ARENA_EAGER_COMMIT=0; a measurement knob only), OURS_ARGS (extra flags for
#        servebench only, e.g. "--preconnect 1000" for a warm pool: vllm-rs has no such flag).
set -euo pipefail
cd "$(dirname "$0")/.."
if (( $# < 2 )); then
  echo "usage: $0 OURS_BIN VLLM_RS_BIN [LEVELS...]" >&2; exit 2
fi
OURS=$1 THEIRS=$2; shift 2
LEVELS=("${@:-1000}")
read -r -a LEVELS <<< "${LEVELS[*]}"
read -r -a THEIRS_ARGS <<< "${VLLM_RS_ARGS:-}"
read -r -a CLIENT_ENV <<< "${CLIENT_ENV:-}"
read -r -a OURS_ARGS <<< "${OURS_ARGS:-}"
REPEATS="${REPEATS:-3}"
REQS_PER_STREAM="${REQS_PER_STREAM:-3}"
INPUT_LEN="${INPUT_LEN:-32}"
OUTPUT_LEN="${OUTPUT_LEN:-100}"
PORT="${PORT:-18481}"
OUT="${OUT:-target/vs-vllm-rs}"
SIM_BIN="${SIM_BIN:-$OURS}"
# An HF tokenizer.json: vllm-bench 0.1.0 panics generating random prompts with the built-in
# cl100k_base (a sampled id the encoding lacks: "no entry found for key" in tiktoken-rs).
TOKENIZER="${TOKENIZER:-fixtures/tokenizers/smollm2-135m/tokenizer.json}"
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true
SIM_PIN=(); CLIENT_CPU=""
read -r -a CPUS <<< "$(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')"
if [[ ${PIN:-1} == 1 ]] && (( ${#CPUS[@]} >= 2 )); then
  CLIENT_CPU=${CPUS[0]}; SIM_PIN=(--pin-cpu "${CPUS[1]}")
  echo "clients on CPU ${CPUS[0]}, simulator on CPU ${CPUS[1]} (PIN=0 to share)"
fi
{
  echo "ours:    $OURS ${OURS_ARGS[*]} ($("$OURS" --version 2>&1 | grep -m1 servebench))"
  echo "vllm-rs: $THEIRS ${THEIRS_ARGS[*]} ($("$THEIRS" --version 2>&1 | grep -m1 -E 'vllm'))"
  echo "tokenizer: $TOKENIZER; client env: ${CLIENT_ENV[*]:-none}"
  echo "machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
} | tee "$OUT/versions.txt"

setsid "$SIM_BIN" sim "${SIM_PIN[@]}" --port "$PORT" --sim-ttft-ms 50 --sim-itl-ms 10 \
  --sim-tokenizer cl100k_base --ground-truth "$OUT/truth.jsonl" > "$OUT/sim.log" 2>&1 &
SIM_PID=$!
trap 'kill $SIM_PID 2>/dev/null || true' EXIT
for _ in $(seq 50); do
  curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 || {
  echo "the simulator did not come up on port $PORT: see $OUT/sim.log" >&2; exit 1; }

# The launcher: starts the client in a session of its own, on CLIENT_CPU if given, samples its
# VmRSS every 5 ms (and /proc/PID/smaps every 0.5 s with SMAPS=1), and writes NAME.usage:
# cpu_s peak_rss_kib kernel_maxrss_kib user_s system_s [smaps at its largest: rss anon binary
# other_files KiB].
cat > "$OUT/launch.py" <<'PY'
import os, sys, time
usage, cpu, smaps, argv = sys.argv[1], sys.argv[2], sys.argv[3] == "1", sys.argv[4:]
exe = os.path.realpath(argv[0])
pid = os.fork()
if pid == 0:
    os.setsid()
    if cpu:
        os.sched_setaffinity(0, {int(cpu)})
    os.execv(argv[0], argv)
peak, best, next_smaps = 0, None, 0.0
while True:
    done, status, ru = os.wait4(pid, os.WNOHANG)
    if done:
        break
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    peak = max(peak, int(line.split()[1]))
                    break
        if smaps and time.monotonic() >= next_smaps:
            next_smaps = time.monotonic() + 0.5
            t = a = b = o = 0
            path = ""
            with open(f"/proc/{pid}/smaps") as f:
                for line in f:
                    head = line.split()
                    if not head[0].endswith(":"):
                        path = head[5] if len(head) >= 6 else ""
                    elif head[0] == "Rss:":
                        kb = int(head[1]); t += kb
                        if path == exe: b += kb
                        elif path.startswith("/"): o += kb
                        else: a += kb
            if best is None or t > best[0]:
                best = (t, a, b, o)
    except (OSError, ValueError, IndexError):
        pass
    time.sleep(0.005)
with open(usage, "w") as f:
    f.write(f"{ru.ru_utime + ru.ru_stime} {peak} {ru.ru_maxrss} {ru.ru_utime} {ru.ru_stime}"
            + (" %d %d %d %d" % best if best else "") + "\n")
sys.exit(os.waitstatus_to_exitcode(status))
PY

: > "$OUT/runs.tsv"
run() { # name client-tag concurrency [--dry-run]
  local name=$1 tag=$2 c=$3 exe=("$OURS" "${OURS_ARGS[@]}") l0 dry=("${@:4}")
  [[ $tag == vllm-rs ]] && exe=("$THEIRS" "${THEIRS_ARGS[@]}")
  l0=$(cut -d' ' -f1 /proc/loadavg)
  # The same command line for both (servebench accepts vllm-rs's flags); no proxy variables.
  env -u http_proxy -u https_proxy -u HTTP_PROXY -u HTTPS_PROXY -u all_proxy -u ALL_PROXY "${CLIENT_ENV[@]}" \
    python3 "$OUT/launch.py" "$OUT/$name.usage" "$CLIENT_CPU" "${SMAPS:-0}" "${exe[@]}" \
    --backend openai --base-url "http://127.0.0.1:$PORT" --model servebench-sim --tokenizer "$TOKENIZER" \
    --dataset-name random --random-input-len "$INPUT_LEN" --random-output-len "$OUTPUT_LEN" \
    --num-prompts $(( c * REQS_PER_STREAM )) --max-concurrency "$c" --request-id-prefix "$name-" \
    --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99 --disable-tqdm \
    --save-result --result-dir "$OUT" --result-filename "$name.json" "${dry[@]}" > "$OUT/$name.log" 2>&1 || true
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$tag" "$c" "$l0" "$(cut -d' ' -f1 /proc/loadavg)" >> "$OUT/runs.tsv"
  echo "$(date -u +%T) $name load $l0 -> $(cut -d' ' -f1 /proc/loadavg)"
}
for c in "${LEVELS[@]}"; do
  for i in $(seq "$REPEATS"); do
    # The preparation alone (tokenizer, workload; --dry-run sends nothing): its CPU is
    # subtracted from the run's to give the CPU of the sending and receiving.
    run "c$c-$i-ours-dry" ours "$c" --dry-run
    run "c$c-$i-vllmrs-dry" vllm-rs "$c" --dry-run
    run "c$c-$i-ours" ours "$c"
    run "c$c-$i-vllmrs" vllm-rs "$c"
  done
done
kill -TERM "$SIM_PID"; wait "$SIM_PID" 2>/dev/null || true; trap - EXIT

python3 - "$OUT" <<'PY'
import json, re, statistics, sys
out = sys.argv[1]

def pct(v, p):  # numpy's default (linear) percentile, as vLLM's clients compute theirs
    v = sorted(v)
    if not v: return float("nan")
    h = (len(v) - 1) * p / 100.0
    lo = int(h); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (h - lo)

truth = {}
with open(f"{out}/truth.jsonl") as f:
    for line in f:
        t = json.loads(line)
        m = re.match(r"(c\d+-\d+-(?:ours|vllmrs))-\d+$", t["request_id"])
        if m and t.get("event_us"):
            truth.setdefault(m.group(1), []).append(t)

def usage(path):  # cpu_s peak_rss_kib kernel_maxrss_kib user_s system_s [smaps: rss anon binary other KiB]
    v = open(path).read().split()
    return float(v[0]), int(v[1]) / 1024, int(v[2]) / 1024, [int(x) / 1024 for x in v[5:]], float(v[4])

rows = []
for line in open(f"{out}/runs.tsv"):
    name, tag, c, l0, l1 = line.rstrip("\n").split("\t")
    if name.endswith("-dry"):
        continue
    try:
        dcpu, drss, _, _, dsys = usage(f"{out}/{name}-dry.usage")
    except (OSError, ValueError, IndexError):
        dcpu = drss = dsys = float("nan")
    try:
        r = json.load(open(f"{out}/{name}.json"))
        cpu, rss, kmax, sm, sys_s = usage(f"{out}/{name}.usage")
    except (OSError, ValueError, KeyError, IndexError) as e:
        print(f"{name}: no result ({e}); see {out}/{name}.log"); continue
    ts = truth.get(name, [])
    t_ttft = [(t["event_us"][0] - t["received_us"]) / 1000 for t in ts]
    t_itl = [(b - a) / 1000 for t in ts for a, b in zip(t["event_us"], t["event_us"][1:])]
    if not t_ttft:
        print(f"{name}: no ground truth for its requests"); continue
    rows.append(dict(name=name, tag=tag, c=int(c), l0=l0, l1=l1, done=r["completed"], failed=r["failed"],
                     truth_n=len(ts), ttft_err=r["mean_ttft_ms"] - statistics.fmean(t_ttft),
                     itl_err=r["p99_itl_ms"] - pct(t_itl, 99), truth_ttft=statistics.fmean(t_ttft),
                     truth_itl99=pct(t_itl, 99), cpu=cpu, rss=rss, kmax=kmax, sm=sm, dcpu=dcpu,
                     drss=drss, rcpu=cpu - dcpu, rsys=sys_s - dsys))

print(f"\n{'run':>18} {'done':>5} {'fail':>4} {'truth':>5} | {'TTFT err':>8} {'ITL p99 err':>11} | "
      f"{'truth TTFT':>10} {'ITL p99':>7} | {'CPU s':>6} {'prep':>5} {'run':>5} {'(sys)':>5} | {'RSS MiB':>7} {'prep':>5} {'kernel max':>10} | load before→after")
for x in rows:
    print(f"{x['name']:>18} {x['done']:>5} {x['failed']:>4} {x['truth_n']:>5} | {x['ttft_err']:>+8.2f} "
          f"{x['itl_err']:>+11.3f} | {x['truth_ttft']:>10.2f} {x['truth_itl99']:>7.2f} | {x['cpu']:>6.2f} "
          f"{x['dcpu']:>5.2f} {x['rcpu']:>5.2f} {x['rsys']:>5.2f} | {x['rss']:>7.1f} {x['drss']:>5.1f} {x['kmax']:>10.1f} | {x['l0']}→{x['l1']}")
for x in rows:
    if x["sm"]:
        t, a, b, f = x["sm"]
        print(f"{x['name']:>18} smaps at its largest: RSS {t:.1f} MiB = anonymous {a:.1f} + binary {b:.1f} "
              f"+ other files {f:.1f}")

goals = (("|mean TTFT err|", "ttft_err", 0.05), ("|p99 ITL err|", "itl_err", 0.2), ("CPU s", "cpu", 0.7),
         ("CPU s, run only", "rcpu", 0.7), ("peak RSS", "rss", 0.35), ("kernel max RSS", "kmax", 0.35))
by = {(x["c"], x["name"].split("-")[1], x["tag"]): x for x in rows}
for c in sorted({x["c"] for x in rows}):
    idx = sorted({k[1] for k in by if k[0] == c}, key=int)
    pairs = [(by[(c, i, "ours")], by[(c, i, "vllm-rs")]) for i in idx
             if (c, i, "ours") in by and (c, i, "vllm-rs") in by]
    print(f"\nratio ours / vllm-rs at {c} streams, {len(pairs)} pairs:")
    print(f"{'figure':>16} {'goal':>6} | {'median':>7} {'min':>7} {'max':>7} | per pair")
    for label, key, goal in goals:
        rs = [abs(a[key]) / abs(b[key]) if b[key] else float("inf") for a, b in pairs]
        if not rs: continue
        med = statistics.median(rs)
        verdict = "met" if max(rs) <= goal else "met by the median" if med <= goal else "NOT met"
        print(f"{label:>16} {'≤' + str(goal):>6} | {med:>7.3f} {min(rs):>7.3f} {max(rs):>7.3f} | "
              + " / ".join(f"{v:.3f}" for v in rs) + f"   {verdict}")
print("\nms; truth = what the simulator sent (--ground-truth), matched by x-request-id prefix; CPU and RSS of")
print("the whole client process (RSS: VmRSS sampled every 5 ms; kernel max = ru_maxrss); prep = the same")
print("command with --dry-run (tokenizer and workload only); run = CPU s − prep, (sys) its system part;")
print("ratios of absolute errors, one per ours/vllm-rs pair")
PY

# Sourced by scripts/macro-bench.sh for its opt-in heavy cases (CASE=rate, CASE=streams); uses
# its BIN, SIM_BIN, PORT, OUT, CLIENT_PIN and SIM_PIN. See the usage there.

load_note() { echo "$(date -u +%T) $(cut -d' ' -f1-3 /proc/loadavg)"; }

# CPU seconds (user + system) of process $1 so far.
proc_cpu_s() {
  awk -v hz="$(getconf CLK_TCK)" '{ print ($14 + $15) / hz }' "/proc/$1/stat"
}

rate_case() {
  local rates=(${RATES:-5000 10000 20000}) secs=${RATE_SECONDS:-3} repeats=${REPEATS:-3} cap=()
  # CAP=N: --max-concurrency N (bounds the connections when the load outruns the simulator).
  [[ -n ${CAP:-} ]] && cap=(--max-concurrency "$CAP")
  # BIN2: a second client binary, run right after BIN at each rate (before/after in one run).
  local bins=("$BIN") tags=(a)
  [[ -n ${BIN2:-} ]] && bins+=("$BIN2") && tags+=(b)
  setsid "$SIM_BIN" sim "${SIM_PIN[@]}" --port "$PORT" --sim-ttft-ms 1 --sim-itl-ms 1 \
    --sim-tokenizer cl100k_base > "$OUT/rate-sim.log" 2>&1 &
  local sim=$!
  trap 'kill $sim 2>/dev/null || true' EXIT
  for _ in $(seq 50); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break; sleep 0.1; done
  : > "$OUT/rate-runs.tsv"
  for rep in $(seq "$repeats"); do
    for r in "${rates[@]}"; do
     for k in "${!bins[@]}"; do
      local name="rate-$r-$rep${tags[k]}" before after
      before=$(proc_cpu_s "$sim")
      echo "$name load $(load_note)" | tee -a "$OUT/rate-load.log"
      setsid "${bins[k]}" "${CLIENT_PIN[@]}" "${cap[@]}" --base-url "http://127.0.0.1:$PORT" --model servebench-sim \
        --tokenizer cl100k_base --random-input-len 8 --random-output-len 1 --ignore-eos \
        --num-prompts $(( r * secs )) --request-rate "$r" --disable-tqdm --no-proxy \
        --percentile-metrics ttft,e2el --metric-percentiles 50,99 --request-id-prefix "$name-" \
        --save-result --result-dir "$OUT" --result-filename "$name.json" > "$OUT/$name.log" 2>&1 || true
      after=$(proc_cpu_s "$sim")
      printf '%s\t%s\t%s\t%s\n' "$name" "$r" "$rep" "$(awk -v a="$before" -v b="$after" 'BEGIN { print b - a }')" \
        >> "$OUT/rate-runs.tsv"
     done
    done
  done
  kill -TERM "$sim"; wait "$sim" 2>/dev/null || true; trap - EXIT
  python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
print(f"{'run':>17} {'offered':>8} {'sent/s':>8} {'done/s':>8} {'late p50':>8} {'late p99':>8} "
      f"{'cli CPU%':>8} {'wait%':>5} {'µs/req':>7} {'sim µs/req':>10} {'RSS MiB':>7} {'failed':>6}  verdict")
for line in open(f"{out}/rate-runs.tsv"):
    name, rate, rep, sim_cpu = line.split("\t")
    try:
        r = json.load(open(f"{out}/{name}.json"))
    except OSError:
        print(f"{name:>16} no result (see {name}.log)"); continue
    n, last_int, last_sent = 0, 0, 0
    with open(f"{out}/{name}.json.records.jsonl") as f:
        for l in f:
            rec = json.loads(l)
            if rec.get("dispatched_us") is None: continue
            n += 1; last_int = max(last_int, rec["intended_us"]); last_sent = max(last_sent, rec["dispatched_us"])
    h = r.get("client_health", {})
    cpu_s = h.get("client_cpu_seconds") or 0.0
    v = r.get("validity", {})
    fired = ",".join(x["id"] for x in v.get("rules", []) if x["level"] != "ok")
    wait = next((f"{x['measured']:.0f}" for x in v.get("rules", []) if x["id"] == "client_cpu_wait"), "-")
    print(f"{name:>17} {n * 1e6 / last_int:>8.0f} {n * 1e6 / max(last_sent, last_int):>8.0f} "
          f"{r['request_throughput']:>8.0f} {h.get('dispatch_lateness_p50_ms') or 0:>8.2f} "
          f"{h.get('dispatch_lateness_p99_ms') or 0:>8.2f} {h.get('client_cpu_percent') or 0:>8.0f} {wait:>5} "
          f"{cpu_s * 1e6 / max(n, 1):>7.1f} {float(sim_cpu) * 1e6 / max(n, 1):>10.1f} "
          f"{(h.get('peak_rss_bytes') or 0) / 2**20:>7.1f} {r['failed']:>6}  {v.get('verdict')} {fired}")
print("offered = sent / last intended time; sent/s = sent / last dispatch time; done/s = vLLM's "
      "request_throughput; late = dispatch lateness (released − intended); CPU% of the client's one core; "
      "wait% = time it waited for that core while other work ran (validity rule client_cpu_wait)")
PY
}

streams_case() {
  local levels=${STREAM_LEVELS:-10000} pin=()
  [[ ${PIN:-1} == 1 ]] || pin=(--no-pin)
  echo "streams: open-files limit $(ulimit -n) (hard $(ulimit -Hn)); ephemeral ports $(cat /proc/sys/net/ipv4/ip_local_port_range)"
  echo "load $(load_note)"
  ( while sleep 1; do
      printf '%s established=%s time_wait=%s\n' "$(date -u +%T)" \
        "$(ss -Htn state established 2>/dev/null | wc -l)" \
        "$(ss -Htn state time-wait 2>/dev/null | wc -l)"
    done ) > "$OUT/streams-sockets.log" &
  local watch=$!
  setsid "$BIN" calibrate "${pin[@]}" --levels "$levels" --itl-ms 100 --output-len 20 \
    --work-dir "$OUT/streams" --json "$OUT/streams.json" 2>&1 | tee "$OUT/streams.log" || true
  kill "$watch" 2>/dev/null || true
  echo "load $(load_note)"
  echo "most TCP sockets established at once on this host (both ends of each loopback connection):"
  sort -t= -k2 -n "$OUT/streams-sockets.log" | tail -1
}

case "$CASE" in
  rate) rate_case ;;
  streams) streams_case ;;
  *) echo "unknown CASE=$CASE (rate, streams)" >&2; exit 2 ;;
esac

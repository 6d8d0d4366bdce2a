#!/usr/bin/env bash
# Kernel receive timestamps against a loopback packet capture (issue 27 item 2).
#
# Starts `servebench sim` (fixed timing: TTFT 50 ms, ITL 10 ms), captures its port on `lo` with
# tcpdump (nanosecond pcap timestamps: the kernel's CLOCK_REALTIME when the packet passed the
# loopback device), loads every core with busy loops started here (killed by PID at the end),
# and runs the client at STREAMS concurrent streams twice: with kernel timestamps (default) and
# with --no-kernel-timestamps. Each client event time (run origin + record offsets, wall-clock
# aligned through the result's run_origin_unix_us) is paired with the packet that carried the
# event (the response packets after the request head with its x-request-id, in order); the
# table gives, per mode, client − wire for each event (p50/p99), for each inter-token gap (ITL,
# p50/p99 of the per-gap error, and p99 client ITL − p99 wire ITL) and for TTFT (p50 of
# (first token − dispatch) − (first token packet − request packet)). Requests whose event count
# differs from the packets' (an event split over packets or two in one) are left out and
# counted.
#
# Needs: tcpdump (apt-get install tcpdump), root or CAP_NET_RAW.
# Usage: scripts/verify-kernel-timestamps.sh
# Env:   STREAMS (default 1000), REQS_PER_STREAM (2), OUTPUT_LEN (40), BUSY (busy loops; default
#        the number of CPUs; 0 = idle machine), PORT (18491), OUT (target/verify-kstamp),
#        BIN (client and simulator binary; default: build the release one), AB (N: instead of
#        the capture, N alternating kernel/user run pairs without capture, CPU µs per event),
#        MODES (the captured runs, in order; default "kernel user"; `kernel-default-slice` is
#        kernel stamps with --no-short-time-slice, for the short time slice's A/B).
set -euo pipefail
cd "$(dirname "$0")/.."
STREAMS="${STREAMS:-1000}"
REQS_PER_STREAM="${REQS_PER_STREAM:-2}"
OUTPUT_LEN="${OUTPUT_LEN:-40}"
PORT="${PORT:-18491}"
OUT="${OUT:-target/verify-kstamp}"
BUSY="${BUSY:-$(nproc)}"
command -v tcpdump >/dev/null || { echo "tcpdump not found (apt-get install tcpdump)" >&2; exit 2; }
mkdir -p "$OUT"
if [[ -z ${BIN:-} ]]; then
  cargo build --release --quiet -p servebench
  BIN="${CARGO_TARGET_DIR:-target}/release/servebench"
fi
ulimit -n 65536 2>/dev/null || true
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

"$BIN" sim --port "$PORT" --sim-ttft-ms 50 --sim-itl-ms 10 --sim-tokenizer cl100k_base > "$OUT/sim.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
  if curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1; then break; fi
  sleep 0.1
done
for _ in $(seq "$BUSY"); do
  python3 -c 'while True: pass' &
  PIDS+=($!)
done

run_mode() { # name [client flags...]
  local name=$1; shift
  tcpdump -i lo -n -s 2048 -B 262144 --time-stamp-precision=nano -w "$OUT/$name.pcap" \
    "tcp port $PORT" > "$OUT/$name.tcpdump.log" 2>&1 &
  local cap=$!
  sleep 1
  "$BIN" --base-url "http://127.0.0.1:$PORT" --model servebench-sim --tokenizer cl100k_base \
    --num-prompts $((STREAMS * REQS_PER_STREAM)) --max-concurrency "$STREAMS" --preconnect "$STREAMS" \
    --random-input-len 32 --random-output-len "$OUTPUT_LEN" --ready-check-timeout-sec 10 \
    --disable-tqdm --verbose --request-id-prefix "$name-" "$@" \
    --save-result --result-dir "$OUT" --result-filename "$name.json" > "$OUT/$name.log" 2>&1
  sleep 1
  kill -INT "$cap"; wait "$cap" 2>/dev/null || true
}
if [[ -n ${AB:-} ]]; then
  # Cost A/B: AB alternating pairs of runs without capture; CPU µs per SSE event of each.
  for i in $(seq "$AB"); do
    for mode in kernel user; do
      flags=(); [[ $mode == user ]] && flags=(--no-kernel-timestamps)
      "$BIN" --base-url "http://127.0.0.1:$PORT" --model servebench-sim --tokenizer cl100k_base \
        --num-prompts $((STREAMS * REQS_PER_STREAM)) --max-concurrency "$STREAMS" --preconnect "$STREAMS" \
        --random-input-len 32 --random-output-len "$OUTPUT_LEN" --disable-tqdm "${flags[@]}" \
        --save-result --result-dir "$OUT" --result-filename "ab-$mode-$i.json" > "$OUT/ab-$mode-$i.log" 2>&1
    done
  done
  cleanup; trap - EXIT
  python3 - "$OUT" "$AB" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
for mode in ("kernel", "user"):
    per = []
    for i in range(1, n + 1):
        r = json.load(open(f"{out}/ab-{mode}-{i}.json"))
        events = sum(json.loads(l).get("token_event_count", 0) + 2 for l in open(f"{out}/ab-{mode}-{i}.json.records.jsonl"))
        per.append(r["client_health"]["client_cpu_seconds"] * 1e6 / events)
    print(f"{mode:>7}: CPU µs per SSE event " + " / ".join(f"{v:.2f}" for v in per))
PY
  exit 0
fi
MODES="${MODES:-kernel user}"
for mode in $MODES; do
  case $mode in
    kernel) run_mode kernel ;;
    user) run_mode user --no-kernel-timestamps ;;
    kernel-default-slice) run_mode kernel-default-slice --no-short-time-slice ;;
    *) echo "unknown mode $mode (kernel, user, kernel-default-slice)" >&2; exit 2 ;;
  esac
done
cleanup; trap - EXIT

python3 - "$OUT" "$PORT" $MODES <<'PY'
import json, struct, sys
out = sys.argv[1]

def pct(v, p):
    v = sorted(v)
    if not v: return float("nan")
    h = (len(v) - 1) * p / 100.0
    lo = int(h); hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (h - lo)

def packets(path):
    """(t_unix_ns, sport, dport, payload) of each TCP/IPv4 packet with a payload."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack("<I", data[:4])[0]
    scale = 1 if magic == 0xA1B23C4D else 1000
    link = struct.unpack("<I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        pkt = data[off + 16: off + 16 + incl]
        off += 16 + incl
        ip = pkt[14:] if link == 1 else pkt[16:] if link == 113 else pkt
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        tcp = ip[(ip[0] & 15) * 4:]
        sport, dport = struct.unpack(">HH", tcp[:4])
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            yield sec * 1_000_000_000 + frac * scale, sport, dport, payload

def wire(path, port):
    """request id -> (request packet ns, [token event packet ns, ...])."""
    by_conn, reqs = {}, {}
    for t, sport, dport, p in packets(path):
        if dport == port:
            i = p.find(b"x-request-id: ")
            if i >= 0:
                rid = p[i + 14: p.index(b"\r\n", i)].decode()
                reqs[rid] = (t, [])
                by_conn[sport] = rid
        elif sport == port and dport in by_conn:
            n = sum(1 for chunk in p.split(b"data: ")[1:]
                    if chunk.startswith(b"{") and b'"text":""' not in chunk and b'"choices":[]' not in chunk)
            reqs[by_conn[dport]][1].extend([t] * n)
    return reqs

def compare(name):
    r = json.load(open(f"{out}/{name}.json"))
    origin = r["run_origin_unix_us"] * 1000
    w = wire(f"{out}/{name}.pcap", int(PORT))
    ev, itl, c_itl, w_itl, ttft = [], [], [], [], []
    used = skipped = 0
    with open(f"{out}/{name}.json.records.jsonl") as f:
        for line in f:
            rec = json.loads(line)
            if rec["outcome"] != "completed" or rec["request_id"] not in w:
                skipped += 1; continue
            sent, pk = w[rec["request_id"]]
            gaps = rec.get("token_events", {}).get("gaps_us", [])
            times = [rec["first_token_us"]]
            for g in gaps:
                times.append(times[-1] + g)
            if len(times) != len(pk):
                skipped += 1; continue
            used += 1
            ev += [(origin + c * 1000 - p) / 1e6 for c, p in zip(times, pk)]
            cg = [g / 1000 for g in gaps]
            wg = [(b - a) / 1e6 for a, b in zip(pk, pk[1:])]
            itl += [abs(a - b) for a, b in zip(cg, wg)]
            c_itl += cg; w_itl += wg
            ttft.append((rec["first_token_us"] - rec["dispatched_us"]) / 1000 - (pk[0] - sent) / 1e6)
    rt = r["client_health"].get("receive_timestamps") or {}
    return dict(name=name, used=used, skipped=skipped, ev50=pct(ev, 50), ev99=pct(ev, 99),
                itl50=pct(itl, 50), itl99=pct(itl, 99), p99diff=pct(c_itl, 99) - pct(w_itl, 99),
                ttft50=pct(ttft, 50), lag50=rt.get("read_lag_p50_ms"), lag99=rt.get("read_lag_p99_ms"),
                src=rt.get("source"), cpu=r["client_health"].get("client_cpu_seconds"))

PORT = sys.argv[2]
print(f"{'mode':>20} {'reqs':>5} {'left out':>8} | {'event err p50':>13} {'p99':>7} | {'|ITL err| p50':>13} "
      f"{'p99':>7} {'p99 ITL diff':>12} | {'TTFT err p50':>12} | {'read lag p50':>12} {'p99':>7} | {'CPU s':>6}")
for name in sys.argv[3:]:
    c = compare(name)
    print(f"{name:>20} {c['used']:>5} {c['skipped']:>8} | {c['ev50']:>13.3f} {c['ev99']:>7.3f} | "
          f"{c['itl50']:>13.3f} {c['itl99']:>7.3f} {c['p99diff']:>+12.3f} | {c['ttft50']:>+12.3f} | "
          f"{(c['lag50'] if c['lag50'] is not None else float('nan')):>12.3f} "
          f"{(c['lag99'] if c['lag99'] is not None else float('nan')):>7.3f} | {c['cpu']:>6.2f}")
print("ms; event err = client event time - packet time (wall-clock aligned); |ITL err| = |client gap -")
print("wire gap| per gap; p99 ITL diff = client p99 ITL - wire p99 ITL; TTFT err = client TTFT - wire")
print("(first token packet - request packet); read lag = the client's own figure (kernel modes only)")
PY

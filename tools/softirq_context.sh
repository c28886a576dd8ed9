#!/bin/sh
# Where the kernel's receive work lands, per accept-limit: one realsys point each (userver,
# select, 6,400 req/s by default) with tools/softirq_context.bt attached, then a summary:
# packets per NET_RX run, us per run and per packet, share of runs inside the server's
# system calls.  Root; about 15 s per policy.  Usage: tools/softirq_context.sh [RATE] [LIMIT...]
set -e
cd "$(dirname "$0")/.."
RATE=${1:-6400.0}; [ $# -eq 0 ] || shift   # dash exits on a failed shift, even with || true
LIMITS=${*:-1 10 inf}
OUT=$(mktemp -d /tmp/softirq-context.XXXXXX)
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
B=
trap '[ -n "$B" ] && kill -INT $B 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
for al in $LIMITS; do
    # stdout, not -o: bpftrace flushes stdout per line but buffers an -o file until exit
    bpftrace tools/softirq_context.bt >"$OUT/bt-$al.txt" 2>"$OUT/bt-$al.err" &
    B=$!
    n=0   # until BEGIN's line: every probe attached (see softirq_context.bt)
    until grep -q simaccept-bpf-ready "$OUT/bt-$al.txt" 2>/dev/null; do
        n=$((n + 1)); [ $n -le 300 ] || { echo "bpftrace did not attach in 30 s" >&2; exit 2; }
        kill -0 $B 2>/dev/null || { echo "bpftrace exited before attaching" >&2; exit 2; }
        sleep 0.1
    done
    lim=$al; [ "$al" = inf ] && lim='"inf"'
    if ! python3 -m realsys run scenarios/realsys/onepacket-select.toml --out "$OUT/run-$al" \
        --set "server.accept_limit=$lim" --set "workload.rate=$RATE" >"$OUT/run-$al.log" 2>&1; then
        tail -n 5 "$OUT/run-$al.log" >&2
        exit 2
    fi
    kill -INT $B; wait $B || true; B=   # attached, so this SIGINT is not lost
done
python3 - "$OUT" $LIMITS <<'PY'
import re, sys
out, lims = sys.argv[1], sys.argv[2:]
names = {3: "close", 20: "writev", 0: "read", 288: "accept4", 270: "pselect6", -1: "user code", -2: "other task"}
for al in lims:
    t = open(f"{out}/bt-{al}.txt").read()
    runs = {int(k): int(v) for k, v in re.findall(r"@runs\[(-?\d+)\]: (\d+)", t)}
    us = {int(k): int(v) for k, v in re.findall(r"@us\[(-?\d+)\]: (\d+)", t)}
    pk = int(re.search(r"@pkts: (\d+)", t).group(1))
    R, U = sum(runs.values()), sum(us.values())
    top = sorted(runs.items(), key=lambda kv: -kv[1])[:4]
    print(f"accept-{al}: {R} runs, {pk} packets, {pk / R:.2f} packets/run, {U / R:.2f} us/run, "
          f"{U / pk:.2f} us/packet, {sum(v for k, v in runs.items() if k >= 0) / R:.1%} inside a server "
          "syscall; by context: " + ", ".join(f"{names.get(k, k)} {v / R:.1%}" for k, v in top))
print(f"(raw maps and runs in {out})")
PY

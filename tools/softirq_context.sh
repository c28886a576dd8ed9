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
. tools/traced_point.sh
for al in $LIMITS; do
    lim=$al; [ "$al" = inf ] && lim='"inf"'
    traced_point tools/softirq_context.bt "$OUT" "$al" scenarios/realsys/onepacket-select.toml \
        --set "server.accept_limit=$lim" --set "workload.rate=$RATE"
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

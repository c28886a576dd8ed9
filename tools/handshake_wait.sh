#!/bin/sh
# Where the handshake's segments wait, per accept-limit: one realsys point each (userver,
# select, 4,800 req/s by default, past the Xeon's saturation) with tools/handshake_wait.bt
# attached, then a summary per segment and receiving CPU: how many, the share that waited
# 64 us or more between their enqueue and their processing, how many of those were sent from
# inside the sending CPU's NET_RX run, and how deep into the receiving CPU's run they were
# processed; and each CPU's long runs (32+ packets).  Root; about 15 s per policy.
# Usage: tools/handshake_wait.sh [RATE] [LIMIT...]   (OUT=dir keeps the raw maps there)
set -e
cd "$(dirname "$0")/.."
RATE=${1:-4800.0}; [ $# -eq 0 ] || shift
LIMITS=${*:-1 10 inf}
OUT=${OUT:-$(mktemp -d /tmp/handshake-wait.XXXXXX)}
mkdir -p "$OUT"
. tools/traced_point.sh
for al in $LIMITS; do
    lim=$al; [ "$al" = inf ] && lim='"inf"'
    traced_point tools/handshake_wait.bt "$OUT" "$al" scenarios/realsys/onepacket-select.toml \
        --set "server.accept_limit=$lim" --set "workload.rate=$RATE"
done
python3 - "$OUT" $LIMITS <<'PY'
import re, sys
from collections import defaultdict
out, lims = sys.argv[1], sys.argv[2:]
UNIT = {"": 1, "K": 1024, "M": 1 << 20}

def hists(text, name):
    """bpftrace hist maps called name: {key tuple: [(lo, hi, count)]}"""
    res = {}
    for m in re.finditer(r"@%s\[([^\]]*)\]: \n((?:\[[^\n]*\n)+)" % name, text):
        rows = []
        for lo, lu, hi, hu, n in re.findall(r"\[(\d+)(K|M)?(?:, (\d+)(K|M)?)?\)?\]?\s+(\d+)", m.group(2)):
            lo_v = int(lo) * UNIT[lu]
            rows.append((lo_v, int(hi) * UNIT[hu] if hi else lo_v + 1, int(n)))
        res[tuple(k.strip() for k in m.group(1).split(","))] = rows
    return res

def median(rows):
    tot = sum(n for *_, n in rows)
    acc = 0
    for lo, hi, n in rows:
        acc += n
        if 2 * acc >= tot:
            return f"{lo}-{hi}"
    return "-"

for al in lims:
    t = open(f"{out}/bt-{al}.txt").read()
    n = defaultdict(int)
    for seg, cpu, slow, fs, v in re.findall(r"@n\[([\w-]+), (\d+), (\d), (\d)\]: (\d+)", t):
        n[(seg, int(cpu), int(slow), int(fs))] += int(v)
    into, before = hists(t, "into_run_us"), hists(t, "pkts_before")
    print(f"accept-{al}:")
    for seg in ("SYN", "SYN-ACK", "ACK"):
        for cpu in (0, 1):
            tot = sum(v for k, v in n.items() if k[:2] == (seg, cpu))
            if tot < 100:
                continue
            slow = sum(v for k, v in n.items() if k[:3] == (seg, cpu, 1))
            slow_fs = n[(seg, cpu, 1, 1)]
            print(f"  {seg:7s} to cpu{cpu}: {tot:6d}, {slow / tot:6.1%} waited >= 64 us; of those "
                  f"{slow_fs / max(slow, 1):4.0%} sent from inside a NET_RX run, processed a median "
                  f"{median(into.get((seg, str(cpu)), []))} us into their run after "
                  f"{median(before.get((seg, str(cpu)), []))} packets")
    big = {tuple(k): int(v) for *k, v in re.findall(r"@big_runs\[(\d+), (\w+)\]: (\d+)", t)}
    gaps = hists(t, "gap_us")
    for cpu in ("0", "1"):
        nb = sum(v for k, v in big.items() if k[0] == cpu)
        ctx = ", ".join(f"{k[1]} {v / nb:.0%}" for k, v in sorted(big.items(), key=lambda kv: -kv[1]) if k[0] == cpu)
        print(f"  cpu{cpu}: {nb} NET_RX runs of 32+ packets, median {median(gaps.get((cpu,), []))} us after the "
              f"previous run ended; interrupted: {ctx or '-'}")
print(f"(raw maps and runs in {out})")
PY

#!/bin/sh
set -e
# Usage (root): cpu-account.sh MUX RATE OUTDIR SEED...  One realsys point per seed and
# accept-limit (1, inf) with cpu-account.bt attached; summarise with cpu-account-summary.py OUTDIR.
cd "$(dirname "$0")/../../../.."
MUX=$1; RATE=$2; OUT=$3; shift 3
mkdir -p $OUT
for rep in "$@"; do for al in 1 inf; do
  bpftrace realsys/results/xeon-2026-11-26/traces/cpu-account.bt > $OUT/bt-$al-$rep.txt 2>$OUT/bt-$al-$rep.err &
  B=$!
  until grep -q simaccept-bpf-ready $OUT/bt-$al-$rep.txt 2>/dev/null; do sleep 0.1; done
  lim=$al; [ "$al" = inf ] && lim='"inf"'
  python3 -m realsys run scenarios/realsys/onepacket-$MUX.toml --out $OUT/run-$al-$rep --set "server.accept_limit=$lim" --set "workload.rate=$RATE" --set "scenario.seed=$rep" > $OUT/run-$al-$rep.log 2>&1
  kill -INT $B; wait $B || true
done; done

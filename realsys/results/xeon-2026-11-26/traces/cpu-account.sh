#!/bin/sh
set -e
# Usage (root): cpu-account.sh MUX RATE OUTDIR SEED...  One realsys point per seed and
# accept-limit (1, inf) with cpu-account.bt attached; summarise with cpu-account-summary.py OUTDIR.
# OUTDIR is relative to the repository's root.
cd "$(dirname "$0")/../../../.."
MUX=$1; RATE=$2; OUT=$3; shift 3
mkdir -p "$OUT"
. tools/traced_point.sh
for rep in "$@"; do for al in 1 inf; do
  lim=$al; [ "$al" = inf ] && lim='"inf"'
  traced_point realsys/results/xeon-2026-11-26/traces/cpu-account.bt "$OUT" "$al-$rep" \
      scenarios/realsys/onepacket-$MUX.toml --set "server.accept_limit=$lim" \
      --set "workload.rate=$RATE" --set "scenario.seed=$rep"
done; done

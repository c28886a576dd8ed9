#!/bin/sh
# Every realsys run behind the realsys-linux6 cost profile and its held-out checks (issue #5):
#   fit:      onepacket-select (seed 2004, every rate) + onepacket-select-reps (seeds 11-13
#             past saturation), accept-limit 1 and inf rows only (validation/machine.py);
#   held out: their accept-limit 10 rows, onepacket-poll, onepacket-epoll (seed 2004 and 13
#             at every rate, 11 and 12 past saturation), onepacket-knot + onepacket-knot-reps;
#   thread-switch.json: one pthread block-and-wake (realsys switch-cost), the threaded
#             server's thread_switch in the profile.
# Run as root on an otherwise idle test bed, one sweep after another (two sweeps at once
# share the two CPUs and measure each other).  Every step resumes: finished points are kept,
# so after an interruption rerun the script.  About 35 minutes.
# RESULTS=DIR measures into DIR/<name> instead of realsys/results/<name> (another machine's
# runs, kept apart from the committed ones; fit them with machine-fit --results DIR).
set -e
cd "$(dirname "$0")/.."
# realsys needs numpy: $PYTHON, else the project's venv (make venv), else python3
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi
R=${RESULTS:-realsys/results}
REPS='workload.rate=[4000.0, 4800.0, 5600.0, 6400.0]'
run() { $PY -m realsys run "$@"; }

# MORE_SEEDS="21 22 23 24" measures only more replicates, into the same folders: each seed
# at every rate past saturation (PAST, default the committed runs' 4000-6400; KNOT_PAST for
# knot, default 5000 and 6400), every policy of all four mechanisms.  Seed by seed, so a
# drift of the machine over the half hour falls on every mechanism alike.
if [ -n "${MORE_SEEDS:-}" ]; then
    PAST=${PAST:-4000.0, 4800.0, 5600.0, 6400.0}
    KNOT_PAST=${KNOT_PAST:-5000.0, 6400.0}
    for seed in $MORE_SEEDS; do
        run scenarios/realsys/onepacket-select.toml --out "$R"/onepacket-select-reps \
            --set scenario.name='"realsys-onepacket-select-reps"' --set scenario.seed=$seed \
            --set "workload.rate=[$PAST]"
        for mux in poll epoll; do
            run scenarios/realsys/onepacket-$mux.toml --out "$R"/onepacket-$mux \
                --set scenario.seed=$seed --set "workload.rate=[$PAST]"
        done
        run scenarios/realsys/onepacket-knot.toml --out "$R"/onepacket-knot-reps \
            --set scenario.seed=$seed --set "workload.rate=[$KNOT_PAST]"
    done
    exit 0
fi

# One pthread block-and-wake, the threaded server's thread_switch (machine-fit reads it there).
$PY -m realsys switch-cost --out "$R"/thread-switch.json
run scenarios/realsys/onepacket-select.toml --out "$R"/onepacket-select
for seed in 11 12 13; do
    run scenarios/realsys/onepacket-select.toml --out "$R"/onepacket-select-reps \
        --set scenario.name='"realsys-onepacket-select-reps"' --set scenario.seed=$seed --set "$REPS"
done
for mux in poll epoll; do
    run scenarios/realsys/onepacket-$mux.toml --out "$R"/onepacket-$mux
    for seed in 11 12; do   # replicates past saturation
        run scenarios/realsys/onepacket-$mux.toml --out "$R"/onepacket-$mux \
            --set scenario.seed=$seed --set "$REPS"
    done
    run scenarios/realsys/onepacket-$mux.toml --out "$R"/onepacket-$mux --set scenario.seed=13
done
run scenarios/realsys/onepacket-knot.toml --out "$R"/onepacket-knot
for seed in 11 12 13; do
    run scenarios/realsys/onepacket-knot.toml --out "$R"/onepacket-knot-reps \
        --set scenario.seed=$seed --set 'workload.rate=[5000.0, 6400.0]'
done

#!/bin/sh
# The realsys runs behind the realsys-linux6 cost profile (issue #5): held-out poll and
# epoll sweeps plus replicates past saturation (seeds 11, 12) for poll, epoll and knot.
# Run as root on an otherwise idle test bed; every step resumes (finished points kept).
set -e
cd "$(dirname "$0")/.."
REPS='workload.rate=[4000.0, 4800.0, 5600.0, 6400.0]'
for mux in poll epoll; do
    python -m realsys run scenarios/realsys/onepacket-$mux.toml --out realsys/results/onepacket-$mux
done
for seed in 11 12; do   # replicates past saturation
    for mux in poll epoll; do
        python -m realsys run scenarios/realsys/onepacket-$mux.toml --out realsys/results/onepacket-$mux \
            --set scenario.seed=$seed --set "$REPS"
    done
    python -m realsys run scenarios/realsys/onepacket-knot.toml --out realsys/results/onepacket-knot-reps \
        --set scenario.seed=$seed --set 'workload.rate=[5000.0, 6400.0]'
done
# a fourth replicate at every rate (seed 13)
for mux in poll epoll; do
    python -m realsys run scenarios/realsys/onepacket-$mux.toml --out realsys/results/onepacket-$mux --set scenario.seed=13
done
python -m realsys run scenarios/realsys/onepacket-knot.toml --out realsys/results/onepacket-knot-reps \
    --set scenario.seed=13 --set 'workload.rate=[5000.0, 6400.0]'

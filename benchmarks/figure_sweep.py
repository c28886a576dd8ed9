"""figure_sweep: wall time to regenerate thesis fig. 4.12 in simulation.

scenarios/thesis/userver-onepacket.toml as it is (μserver, select, one-packet,
3 policies: accept-limit 1, 10, inf x target rates 10,000-30,000 step 2,000 =
33 points), with 2 s warm-up + 10 s measured per point, through
simaccept.sweep.run_sweep with jobs = os.cpu_count(), into a fresh temporary
output directory (nothing cached), plots included.

Prints the wall time, its ratio to the issue's bar (90 s) and goal (60 s),
the serial-equivalent time (sum of the points' own wall times) and the
parallel speed-up, and every point's replies/s (in the JSON too, with a
digest, so results can be compared between code versions for the same seeds).

Usage: python benchmarks/figure_sweep.py [--quick]
"""
from __future__ import annotations

import hashlib
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import _common
from _common import Machine, emit_json, quick_flag

import simaccept
from simaccept.sweep import run_sweep

SCENARIO = _common.ROOT / "scenarios" / "thesis" / "userver-onepacket.toml"
BAR, GOAL = 90.0, 60.0


def main():
    quick = quick_flag()
    m = Machine("figure_sweep", quick)
    jobs = os.cpu_count() or 1
    ov = ["scenario.warmup=2", "scenario.duration=10"]
    if quick:
        ov = ["scenario.warmup=1", "scenario.duration=2", "workload.rate=[10000, 20000, 30000]"]
    sc = simaccept.load_scenario(SCENARIO, overrides=ov)
    pts = sc.points()
    print(f"scenario: {SCENARIO.relative_to(_common.ROOT)} with {' '.join(ov)}")
    print(f"axes: {sc.axes}; {len(pts)} points; jobs={jobs}")
    times = []
    with tempfile.TemporaryDirectory(prefix="simaccept-figsweep-") as tmp:
        out = Path(tmp) / "out"
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        recs = run_sweep(sc, out=out, jobs=jobs, plots=True,
                         on_point=lambda r: times.append(time.perf_counter()))
        wall = time.perf_counter() - t0
        plots = sorted(p.name for p in out.glob("*.png"))
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)   # the pool's workers, joined at shutdown
    child_cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    t_points = (times[-1] - t0) if times else wall
    failed = [r for r in recs if r.status != "ok"]
    serial = sum(r.wall_s for r in recs)
    print()
    print(f"{'accept-limit':>12s} {'target':>7s} {'replies/s':>10s} {'±95%':>7s} {'qdrops/s':>9s} {'point wall s':>12s}")
    for r in recs:
        print(f"{r.accept_limit:>12s} {r.target_rate:7.0f} {r.replies_per_s:10.1f} {r.replies_per_s_ci:7.1f}"
              f" {r.qdrops_per_s:9.1f} {r.wall_s:12.2f}")
    print()
    print(f"wall: {wall:.1f} s for {len(recs)} points ({t_points:.1f} s until the last point, "
          f"{wall - t_points:.1f} s csv + plots: {', '.join(plots)})")
    print(f"serial-equivalent (sum of point wall times): {serial:.1f} s; parallel speed-up {serial / t_points:.2f}x "
          f"on {jobs} workers")
    print(f"CPU time of the {jobs} workers: {child_cpu:.1f} s -> {child_cpu / jobs:.1f} s wall on {jobs} idle cores "
          f"(estimate, load-independent; {child_cpu / jobs / BAR:.2f} of the bar)")
    qnote = " (quick mode: not the issue's configuration)" if quick else ""
    print(f"vs the issue{qnote}: {wall / BAR:.2f} of the 90 s bar ({'met' if wall <= BAR else 'NOT met'}), "
          f"{wall / GOAL:.2f} of the 60 s goal ({'met' if wall <= GOAL else 'not met'})")
    if failed:
        print(f"FAILED points: {len(failed)}: {failed[0].error}")
    replies = {f"AL{r.accept_limit}/{r.target_rate:.0f}": r.replies_per_s for r in recs}
    digest = hashlib.sha256(json.dumps(replies, sort_keys=True).encode()).hexdigest()[:16]
    print(f"replies/s digest (same seeds -> same digest if results are identical): {digest}")
    mach = m.end()
    emit_json(dict(benchmark="figure_sweep", wall_s=round(wall, 2), points=len(recs), jobs=jobs,
                   points_wall_s=round(t_points, 2), serial_equiv_s=round(serial, 2),
                   workers_cpu_s=round(child_cpu, 2), idle_wall_estimate_s=round(child_cpu / jobs, 2),
                   ratio_to_bar=round(wall / BAR, 3), failed=len(failed), replies_digest=digest,
                   replies_per_s=replies, **mach))
    return 1 if failed else 0       # failed points were printed, and it exited 0


if __name__ == "__main__":
    sys.exit(_common.run(main))

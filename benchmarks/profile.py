"""profile: where the time of one sweep point goes.

One point of the thesis sweep: μserver, select, one-packet, 30,000 req/s,
accept-limit 1, 10 s warm-up + 10 s measured (the scenario file's own
durations).  Runs it plain (the reference wall time), under cProfile and under
pyinstrument (if installed), side by side; checks that all three give the
same record; saves

* benchmarks/out/profile-cprofile.txt     top functions by tottime and cumtime, callers of the top ones
* benchmarks/out/profile-cprofile.pstats  the raw stats (python -m pstats ...; snakeviz)
* benchmarks/out/profile-pyinstrument.txt the call tree (and .html)

and prints the top 25 functions by tottime.

Usage: python benchmarks/profile.py [--quick]
"""
from __future__ import annotations

import os
import sys

# This file is named like the stdlib module `profile`, which cProfile imports:
# take the benchmarks directory off sys.path while importing cProfile.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
sys.modules.pop("profile", None)
import cProfile  # noqa: E402
import pstats  # noqa: E402
sys.path.insert(0, _HERE)

import gc  # noqa: E402
import io  # noqa: E402
import time  # noqa: E402

import _common  # noqa: E402
from _common import OUT, Machine, emit_json, quick_flag  # noqa: E402

import simaccept  # noqa: E402
from simaccept.sweep import atomic_write  # noqa: E402

SCENARIO = _common.ROOT / "scenarios" / "thesis" / "userver-onepacket.toml"
VOLATILE = ("wall_s", "started_at")


def key(rec):
    d = rec.to_dict()
    for k in VOLATILE:
        d.pop(k, None)
    return d


def main():
    quick = quick_flag()
    m = Machine("profile", quick)
    ov = ["workload.rate=30000", "server.accept_limit=1"]
    ov += ["scenario.warmup=2", "scenario.duration=3"] if quick else ["scenario.warmup=10", "scenario.duration=10"]
    sc = simaccept.load_scenario(SCENARIO, overrides=ov)
    print(f"point: {SCENARIO.relative_to(_common.ROOT)} with {' '.join(ov)} (mux {sc['server']['mux']})")
    OUT.mkdir(parents=True, exist_ok=True)
    # an earlier run's files go first: an interrupted run left its own cProfile beside the
    # earlier run's pyinstrument files, nothing telling them apart
    for old in OUT.glob("profile-*"):
        old.unlink()

    gc.collect()
    w0, c0 = time.perf_counter(), time.process_time()
    rec, host = simaccept.simulate(sc, raise_errors=True, return_host=True)
    plain_wall, plain_cpu = time.perf_counter() - w0, time.process_time() - c0
    n = host.n
    print(f"plain:        {plain_wall:6.2f} s wall, {plain_cpu:6.2f} s CPU; {n} connection attempts, "
          f"{n / plain_wall:,.0f} conns/s wall, {1e6 * plain_cpu / n:.2f} µs CPU per connection; "
          f"replies/s {rec.replies_per_s:.1f}")

    gc.collect()
    pr = cProfile.Profile()
    w0 = time.perf_counter()
    pr.enable()
    rec_c = simaccept.simulate(sc, raise_errors=True)
    pr.disable()
    cp_wall = time.perf_counter() - w0
    same = {"cProfile": key(rec_c) == key(rec)}
    print(f"cProfile:     {cp_wall:6.2f} s wall ({cp_wall / plain_wall:.2f}x plain); "
          f"same record: {same['cProfile']}")
    atomic_write(OUT / "profile-cprofile.pstats", lambda tmp: pr.dump_stats(tmp))
    buf = io.StringIO()
    st = pstats.Stats(pr, stream=buf)
    st.strip_dirs()
    buf.write(f"# {' '.join(ov)}; plain {plain_wall:.2f} s wall; cProfile {cp_wall:.2f} s\n")
    buf.write("\n## by tottime\n")
    st.sort_stats("tottime").print_stats(60)
    buf.write("\n## by cumulative\n")
    st.sort_stats("cumulative").print_stats(40)
    buf.write("\n## callers of the top 12 by tottime\n")
    st.sort_stats("tottime").print_callers(12)
    atomic_write(OUT / "profile-cprofile.txt", buf.getvalue())

    # the top 25 by tottime, printed compactly
    raw = pstats.Stats(pr)
    total = sum(v[2] for v in raw.stats.values())
    rows = sorted(raw.stats.items(), key=lambda kv: kv[1][2], reverse=True)[:25]
    print()
    print(f"top 25 functions by tottime (cProfile; total {total:.2f} s):")
    print(f"{'tottime s':>9s} {'%':>5s} {'cumtime s':>9s} {'calls':>10s} {'calls/conn':>10s}  function")
    top = []
    for (fn, line, name), (cc, nc, tt, ct, _) in rows:
        short = fn.replace(str(_common.ROOT) + os.sep, "")
        if "site-packages" in short:
            short = short.split("site-packages" + os.sep, 1)[1]
        label = f"{short}:{line}({name})"
        print(f"{tt:9.3f} {100 * tt / total:5.1f} {ct:9.3f} {nc:10d} {nc / n:10.2f}  {label}")
        top.append(dict(fn=label, tottime_s=round(tt, 3), share=round(tt / total, 4), calls_per_conn=round(nc / n, 3)))

    pi_wall = None
    try:
        from pyinstrument import Profiler
    except ImportError:
        print("\npyinstrument not installed: skipped (pip install pyinstrument)")
    else:
        gc.collect()
        p = Profiler(interval=0.001)
        w0 = time.perf_counter()
        p.start()
        rec_p = simaccept.simulate(sc, raise_errors=True)
        p.stop()
        pi_wall = time.perf_counter() - w0
        same["pyinstrument"] = key(rec_p) == key(rec)
        print(f"\npyinstrument: {pi_wall:6.2f} s wall ({pi_wall / plain_wall:.2f}x plain); "
              f"same record: {same['pyinstrument']}")
        text = p.output_text(unicode=True, color=False, show_all=False)
        atomic_write(OUT / "profile-pyinstrument.txt", text)
        atomic_write(OUT / "profile-pyinstrument.html", p.output_html())
        lines = text.splitlines()
        print("\n".join(lines[:45]))
        if len(lines) > 45:
            print(f"... ({len(lines) - 45} more lines in benchmarks/out/profile-pyinstrument.txt)")
    print(f"\nsaved: {', '.join(sorted(str(p.relative_to(_common.ROOT)) for p in OUT.glob('profile-*')))}")
    mach = m.end()
    emit_json(dict(benchmark="profile", point=" ".join(ov), conns=n, wall_s=round(plain_wall, 3),
                   cpu_s=round(plain_cpu, 3), us_cpu_per_conn=round(1e6 * plain_cpu / n, 3),
                   cprofile_wall_s=round(cp_wall, 3),
                   pyinstrument_wall_s=round(pi_wall, 3) if pi_wall else None,
                   top5=top[:5], same_record=same, **mach))
    if not all(same.values()):      # it printed "same record: False" and exited 0
        print(f"profile: a profiled run gave another record than the plain one: "
              f"{', '.join(k for k, v in same.items() if not v)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_common.run(main))

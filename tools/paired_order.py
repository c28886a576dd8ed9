"""Policy order past saturation, paired by seed: a supplement to machine-check's order check.

machine-check (validation.realsys_report.order_check) compares two policies by the difference of
their means over the replicate runs, with se = sqrt(sd_a^2/n_a + sd_b^2/n_b).  On a shared host
the level drifts between campaigns (the Xeon's seeds 25-28, measured a day later, averaged 4 %
below its earlier runs), and that drift lands in sd_a and sd_b alike: it widens se and turns
differences into ties.  A seed's runs of every policy were measured minutes apart
(validation/measure_realsys.sh runs seed by seed), so pairing them by seed removes what the
campaign shares: d_s = y_a(s) - y_b(s), ordered if |mean d| > 2 sd(d)/sqrt(n).  The simulated
side is the same in both tests (one simulation per run, its seed).  This script prints both
verdicts per pair; it does not change machine-check's definition.

    python tools/paired_order.py --results realsys/results/xeon-2026-11-26 --profile realsys-linux6-xeon

It simulates what machine-check simulates (the held-out files, with the fit's sim_overrides).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from validation import machine  # noqa: E402
from validation.realsys_report import realsys_heldout  # noqa: E402


def paired(rows: list[dict]) -> list[dict]:
    """Per (order group, rate, pair a-b), past saturation: the paired measured mean difference
    and its se over the seeds both policies ran, the simulated mean difference over the same
    seeds, and the paired status (ordered beyond 2 se: preserved / inverted; else tie)."""
    out = []
    for og in sorted({d["order_group"] for d in rows if d["order_group"]}):
        by = defaultdict(dict)                     # (rate, policy) -> seed -> row
        for d in rows:
            if d["order_group"] == og and d["past_saturation"] and d["seed"] is not None:
                by[(d["rate"], d["policy"])][d["seed"]] = d
        for rate in sorted({r for r, _ in by}):
            # machine-check's order (accept-N by N, accept-inf last), so each pair is (a, b) as its
            # unpaired one is: by name, accept-10 came before accept-2, the sign flipped and the
            # unpaired verdict was not found ("–")
            pols = sorted((p for r, p in by if r == rate),
                          key=lambda p: (p == "accept-inf", int(p.split("-")[1]) if p != "accept-inf" else 0))
            for i, a in enumerate(pols):
                for b in pols[i + 1:]:
                    seeds = sorted(set(by[(rate, a)]) & set(by[(rate, b)]))
                    if len(seeds) < 2:
                        continue
                    dm = [by[(rate, a)][s]["measured"] - by[(rate, b)][s]["measured"] for s in seeds]
                    ds = [by[(rate, a)][s]["predicted"] - by[(rate, b)][s]["predicted"] for s in seeds]
                    mean = statistics.fmean(dm)
                    se = statistics.stdev(dm) / math.sqrt(len(dm))
                    sim = statistics.fmean(ds)
                    status = "tie" if abs(mean) <= 2 * se else (
                        "preserved" if (mean > 0) == (sim > 0) else "inverted")
                    out.append({"group": og, "rate": rate, "a": a, "b": b, "n": len(seeds),
                                "measured_diff": mean, "measured_se": se, "sim_diff": sim, "status": status})
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", required=True, help="folder of the runs (machine-check --results)")
    ap.add_argument("--profile", required=True, help="the machine profile fitted to them")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    try:
        return _run(ap, a)
    except KeyboardInterrupt:       # it simulates every held-out run: Ctrl-C printed a traceback
        print("paired_order: interrupted", file=sys.stderr)
        return 130


def _run(ap, a) -> int:
    from simaccept.costs import available_profiles
    if a.profile not in available_profiles():
        ap.error(f"--profile: no cost profile named {a.profile!r} (have: {', '.join(available_profiles())})")
    if not machine.heldout_files(a.results):
        ap.error(f"--results: {a.results} holds none of the realsys results folders "
                 "(measure them with validation/measure_realsys.sh)")
    fit_json = machine.default_fit_json(a.results, a.profile)
    try:
        # a damaged fit record or point file ended in a traceback (JSONDecodeError, AttributeError,
        # IsADirectoryError); each is named, before the simulations
        over = machine.fit_sim_overrides(machine.read_fit_record(fit_json) if fit_json.exists() else None)
        for p in machine.heldout_files(a.results):
            machine._points([Path(p).parent])
    except ValueError as e:
        ap.error(str(e))
    info = realsys_heldout(machine.heldout_files(a.results), a.profile, a.jobs, over)
    unpaired = {(g, p["rate"], p["a"], p["b"]): p for g, o in info["orders"].items() for p in o["pairs"]}
    rows = paired(info["rows"])
    print("| order group | rate | pair a − b | runs | unpaired diff ± se: status | paired diff ± se: status | simulated diff |")
    print("|---|---|---|---|---|---|---|")
    for p in rows:
        u = unpaired.get((p["group"], p["rate"], p["a"], p["b"]))
        us = f"{u['measured_diff']:+,.0f} ± {u['measured_se']:,.0f}: {u['status']}" if u else "–"
        print(f"| {p['group']} | {p['rate']:g} | {p['a']} − {p['b']} | {p['n']} | {us} | "
              f"{p['measured_diff']:+,.0f} ± {p['measured_se']:,.0f}: {p['status']} | {p['sim_diff']:+,.0f} |")
    count = lambda rs, s: sum(1 for r in rs if r["status"] == s)  # noqa: E731
    print(f"\nunpaired: {count(unpaired.values(), 'preserved') + count(unpaired.values(), 'inverted')} ordered, "
          f"{count(unpaired.values(), 'inverted')} inverted; paired: {len(rows) - count(rows, 'tie')} ordered, "
          f"{count(rows, 'inverted')} inverted (of {len(rows)} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

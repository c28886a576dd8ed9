"""What-if for Knot's thesis rows: one cost changed, Knot's rows simulated as the report simulates them.

Written when the validation report missed Knot's Accept-50 peak (thesis 14,000 replies/s; the
simulation kept up past 16,800) and its open connections at Accept-50, 15,000 req/s (thesis
~25,000; simulated 2,779), before Knot's connections went cold (27 Nov; now 14,779 and 13,325,
docs/guides/knot.md).  The sensitivity analysis reads elasticities past a censored peak, which say
nothing of where the peak goes.  This script simulates the rows directly: for each value of one cost,
Accept-50 and Accept-1 at a few rates around their peaks (each row's own seed, the thesis's
120 s window from idle: validation.records.scenario_for, as the report's peak runs) and Accept-50
at 15,000 req/s, and prints a Markdown table.  The report's cell at 15,000 is a point of its group
sweep, with the sweep's random stream, so the two differ by seed (before the cold connections: 3,462
open here, 2,779 in the report).  Points are kept in --cache, one JSON per (row, rate, cost, value, model), so an
interrupted run resumes and the table can be printed again without simulating.

    python tools/knot_whatif.py --cost thread_switch --values 6,13,20,30
    python tools/knot_whatif.py --cost user_per_request --values 14.7,18.7 --accept50 14000,14700
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simaccept.sweep import stop_workers, worker_pool  # noqa: E402

FIELDS = ("replies_per_s", "open_conns_mean", "accept_rate", "c_avg")


def _row(limit: str, peak: bool):
    from validation.records import load_thesis
    for m in load_thesis():
        r = m.record
        if r.server == "knot" and r.accept_limit == limit and math.isnan(r.target_rate) == peak:
            return m
    raise LookupError(f"no knot accept-{limit} {'peak' if peak else 'rate'} row in thesis.csv")


def point(job) -> dict:
    """Simulate one (accept-limit, peak row?, rate, cost, value, extra overrides); cached in job['cache']."""
    from simaccept.sim import simulate
    from simaccept.sweep import atomic_write
    from validation.records import scenario_for
    sc = scenario_for(_row(job["limit"], job["peak"]), rate=job["rate"],
                      overrides=[f"costs.{job['cost']}={job['value']!r}", *job["set"]])
    # the content hash covers --set, the profile's resolved costs and the model's code: a point
    # the old model computed (Knot before its connections went cold) is not answered again
    key = (f"{job['limit']}-{'peak' if job['peak'] else 'rate'}-{job['rate']:g}-{job['cost']}={job['value']:g}"
           f"-{sc.content_hash()}")
    path = Path(job["cache"]) / f"{key}.json"
    if path.is_file():
        return json.loads(path.read_text())
    r = simulate(sc, raise_errors=True)
    d = {"limit": job["limit"], "peak_row": job["peak"], "rate": job["rate"], "cost": job["cost"],
         "value": job["value"], **{k: getattr(r, k) for k in FIELDS}}
    atomic_write(path, json.dumps(d))
    return d


def _floats(s: str, what: str) -> list[float]:
    try:
        out = [float(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: {s!r} is not a comma-separated list of numbers") from None
    if not out or any(not math.isfinite(x) or x < 0 for x in out):
        raise argparse.ArgumentTypeError(f"{what}: each must be a finite number >= 0 (got {s!r})")
    return out


def main(argv=None) -> int:
    from simaccept.costs import COST_NAMES
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cost", required=True, help="a cost name (simaccept.costs.COST_NAMES)")
    ap.add_argument("--values", required=True, type=lambda s: _floats(s, "--values"))
    ap.add_argument("--accept50", default="14000,14700,15400", type=lambda s: _floats(s, "--accept50"),
                    help="rates (req/s) for Accept-50's peak row")
    ap.add_argument("--accept1", default="12000,12600", type=lambda s: _floats(s, "--accept1"),
                    help="rates (req/s) for Accept-1's peak row")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="another override for every simulation (e.g. scenario.duration=2 for a quick look)")
    ap.add_argument("--cache", default=str(ROOT / "out" / "knot-whatif"))
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    if a.cost not in COST_NAMES:
        ap.error(f"--cost: no cost named {a.cost!r}")
    # checked before the workers start: a file or /proc/x as --cache ended in mkdir's traceback,
    # a bad --set in a worker's ScenarioError traceback
    from simaccept.cli import _out_dir, shown
    from simaccept.scenario import ScenarioError
    try:
        _out_dir(a.cache, "--cache")
    except ScenarioError as e:
        ap.error(f"--cache {a.cache!r}: {e.reason}")
    for s in a.set:
        if s.split("=", 1)[0].strip() == f"costs.{a.cost}":
            ap.error(f"--set {s!r}: sets the cost --cost varies; give its values with --values")
    from validation.records import scenario_for
    jobs = _jobs(a)
    # every point is checked before the workers start (a rate or value past the first one
    # ended in a worker's ScenarioError traceback, after the other points had run)
    for j in jobs:
        try:
            scenario_for(_row(j["limit"], j["peak"]), rate=j["rate"],
                         overrides=[f"costs.{j['cost']}={j['value']!r}", *j["set"]])
        except ScenarioError as e:
            flag = ("--values" if e.key.startswith("costs.") else
                    "--accept50" if e.key == "workload.rate" and j["peak"] and j["limit"] == "50" else
                    "--accept1" if e.key == "workload.rate" and j["peak"] else "--set")
            ap.error(f"{flag}: {shown(e)} (accept-{j['limit']} at {j['rate']:g} req/s, {a.cost}={j['value']:g})")
    from simaccept.cli import Terminated, termination_signals_as_interrupt
    try:
        with termination_signals_as_interrupt():    # SIGTERM/SIGHUP killed this process alone; its workers ran on
            return _run(a, jobs)
    except KeyboardInterrupt as e:
        print("knot_whatif: interrupted (finished points are kept in --cache: run again to resume)", file=sys.stderr)
        return 128 + e.signum if isinstance(e, Terminated) else 130


def _jobs(a) -> list[dict]:
    jobs = []
    for v in a.values:
        base = {"cost": a.cost, "value": v, "set": a.set, "cache": a.cache}
        jobs += [{**base, "limit": "50", "peak": True, "rate": r} for r in a.accept50]
        jobs.append({**base, "limit": "50", "peak": False, "rate": 15000.0})
        jobs += [{**base, "limit": "1", "peak": True, "rate": r} for r in a.accept1]
    return jobs


def _run(a, jobs) -> int:
    Path(a.cache).mkdir(parents=True, exist_ok=True)
    ex = worker_pool(max(1, a.jobs))
    try:
        res = list(ex.map(point, jobs))
    except BaseException:
        stop_workers(ex)        # shutdown() would let each running point finish (minutes)
        raise
    ex.shutdown()
    print(f"| {a.cost} | row | offered (req/s) | replies/s | served | open conns | C_avg |\n|---|---|---|---|---|---|---|")
    for d in res:
        row = f"accept-{d['limit']} " + ("peak" if d["peak_row"] else "@15000")
        print(f"| {d['value']:g} | {row} | {d['rate']:,.0f} | {d['replies_per_s']:,.0f} | "
              f"{100 * d['replies_per_s'] / d['rate']:.1f} % | {d['open_conns_mean']:,.0f} | {d['c_avg']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m validation seeds``: how far each thesis cell moves with the seed.

The report scores every thesis cell on one simulated run per point, and the issue's
tolerance for throughput is ±10 %.  A cell that misses by 12 % at one seed could be in band at
another: this runs every *held-out* thesis row with a measured throughput (replies/s at a
target rate, or a peak) at ``n`` seeds, the row's own (:func:`validation.records.record_seed`,
what ``thesis-fit`` and ``window`` use) and the ``n - 1`` after it, in the thesis's window
(120 s from idle, as the report), with the same costs, and reports the spread of the
simulated value and of its error.  A peak row is the largest replies/s over its peak rates
(:func:`validation.records.peak_scenarios`) at each seed, as in the fit and the report.

A cell *in band at every seed* is a robust pass; *at no seed*, a miss that is not seed noise.

Every other cell the report scores on a row with a target rate (C_avg, accept rate, select calls/s,
fds per select, drop shares, the gprof time split, ...; any role, since the fit saw only the
calibration rows' throughput, drop shares and time split) is scored the same way on the same
runs, with the report's own :func:`validation.report.compare` and tolerances, so a loop metric
that one seed puts in band and another out is told from one that misses at every seed.  Left out: % of own peak, which needs the
row's whole line, not one point per seed.

Runs are cached (:func:`validation.fitter.simulate_cached`): a rerun, or a larger ``n``,
simulates only what is new.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from simaccept.costs import load_costs
from simaccept.record import RunRecord
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .fitter import check_run_count, check_run_inputs, raise_if_failed, simulate_cached, stderr_progress
from .records import WORK, load_thesis, nan_to_null, peak_scenarios, record_seed, scenario_for
from .report import METRICS, _fmt, compare, role_of, tolerance_str

DEFAULT_CACHE = WORK / "out" / "validation-cache" / "seeds"
TOL = 0.10                    # the throughput tolerance
#: Scored by the report but not here: it needs the row's peak, i.e. its whole line of rates.
NOT_PER_POINT = ("pct_of_peak",)


class SeedsError(ValueError):
    pass


def heldout_throughput_rows(thesis=None):
    """(row, metric) for every held-out thesis row with a measured throughput."""
    out = []
    for m in thesis if thesis is not None else load_thesis():
        r = m.record
        if not r.server or not r.workload or role_of(m) != "held-out":
            continue
        metric = "peak_replies_per_s" if math.isnan(r.target_rate) else "replies_per_s"
        if not math.isnan(m.get(metric)):
            out.append((m, metric))
    return out


def target_rate_rows(thesis=None):
    """(row, "replies_per_s") for every thesis row with a target rate, whatever its role: the runs
    whose other metrics are scored at each seed."""
    return [(m, "replies_per_s") for m in (thesis if thesis is not None else load_thesis())
            if m.record.server and m.record.workload and not math.isnan(m.record.target_rate)]


def plan(rows, n: int, profile: str) -> dict[str, list[list[str]]]:
    """{row label: per seed, the scenario JSONs whose max replies/s is the cell's value}."""
    prof = [f"costs.profile={json.dumps(str(profile))}"]
    out = {}
    for m, metric in rows:
        base = record_seed(m.record)
        seeds = [base + k for k in range(n)]
        if metric == "peak_replies_per_s":
            out[m.label] = [[sc.to_json() for sc in peak_scenarios(m, overrides=prof + [f"scenario.seed={s}"])]
                            for s in seeds]
        else:
            out[m.label] = [[scenario_for(m, overrides=prof, seed=s).to_json()] for s in seeds]
    return out


def cell(m, metric: str, seeds: list[int], values: list[float]) -> dict[str, Any]:
    """The spread of one cell over the seeds: values, errors, and how many seeds are in band."""
    meas = m.get(metric)
    errs = [v / meas - 1.0 for v in values]
    ok = [abs(e) <= TOL for e in errs]
    return {"row": m.label, "metric": metric, "measured": meas, "seeds": seeds, "values": values,
            "min": min(values), "max": max(values), "mean": sum(values) / len(values),
            "errors": errs, "error_min": min(errs), "error_max": max(errs),
            "within_10pct_seeds": sum(ok), "n_seeds": len(values)}


def metric_cells(m, seeds: list[int], sims: list[RunRecord]) -> list[dict[str, Any]]:
    """Every cell the report scores on row ``m`` (but :data:`NOT_PER_POINT`), one simulated record
    per seed: its values, errors and how many seeds are within the report's tolerance."""
    per: dict[str, list[dict[str, Any]]] = {}
    for sim in sims:
        for c in compare(m, sim, []):
            if c["metric"] not in NOT_PER_POINT:
                per.setdefault(c["metric"], []).append(c)
    out = []
    for metric, cs in per.items():
        kind, tol, label = METRICS[metric]
        vals = [c["predicted"] for c in cs]
        errs = [c["error"] for c in cs]
        finite = [e for e in errs if not math.isnan(e)]
        out.append({"row": m.label, "role": cs[0]["role"], "metric": metric, "label": label, "kind": kind,
                    "tolerance": tol, "table": cs[0]["table"], "measured": cs[0]["measured"], "seeds": seeds,
                    "values": vals, "errors": errs,
                    "min": min((v for v in vals if not math.isnan(v)), default=math.nan),
                    "max": max((v for v in vals if not math.isnan(v)), default=math.nan),
                    "error_min": min(finite, default=math.nan), "error_max": max(finite, default=math.nan),
                    "within_seeds": sum(c["ok"] for c in cs), "n_seeds": len(cs)})
    return out


def by_metric(cells: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """{metric: cells, in band at every seed, at some (not all), at none}, in METRICS order."""
    out: dict[str, dict[str, int]] = {}
    for metric in METRICS:
        cs = [c for c in cells if c["metric"] == metric]
        if cs:
            every = sum(c["within_seeds"] == c["n_seeds"] for c in cs)
            none = sum(c["within_seeds"] == 0 for c in cs)
            out[metric] = {"cells": len(cs), "every_seed": every, "some_seeds": len(cs) - every - none,
                           "no_seed": none}
    return out


def run(out: str | Path = "docs/validation", n: int = 4, jobs: int = 1, profile: str = "thesis-2004",
        cache: str | Path = DEFAULT_CACHE) -> dict:
    if n < 1:
        raise SeedsError(f"--seeds: must be >= 1, got {n}")
    cache = check_run_inputs(profile, cache, SeedsError)
    rows = heldout_throughput_rows()
    if not rows:
        raise SeedsError("thesis.csv has no held-out row with a measured throughput")
    others = target_rate_rows()
    check_run_count(n * len({m.label for m, _ in rows + others}), "--seeds", SeedsError)   # a peak row runs more
    todo = {**plan(others, n, profile), **plan(rows, n, profile)}
    done = simulate_cached([j for per_seed in todo.values() for js in per_seed for j in js], cache, jobs,
                           source="<seeds>", progress=stderr_progress)
    raise_if_failed(((lab, done[j]) for lab, per_seed in todo.items() for js in per_seed for j in js), SeedsError)
    cells = []
    for m, metric in rows:
        per_seed = todo[m.label]
        seeds = [json.loads(js[0])["scenario"]["seed"] for js in per_seed]
        values = [max(float(done[j]["replies_per_s"]) for j in js) for js in per_seed]
        c = cell(m, metric, seeds, values)
        # A peak taken at the highest rate tried is only a lower bound: the sim kept up there.
        c["at_top_rate"] = metric == "peak_replies_per_s" and any(
            max(js, key=lambda j: float(done[j]["replies_per_s"])) == js[-1] for js in per_seed)
        cells.append(c)
    heldout_tp = {c["row"] for c in cells if c["metric"] == "replies_per_s"}
    other_cells = []
    for m, _ in others:
        per_seed = todo[m.label]
        seeds = [json.loads(js[0])["scenario"]["seed"] for js in per_seed]
        other_cells += [c for c in metric_cells(m, seeds, [RunRecord(**done[js[0]]) for js in per_seed])
                        # the held-out throughput cells are the table above
                        if not (c["metric"] == "replies_per_s" and c["row"] in heldout_tp)]
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),   # the report flags this file stale when the model changes
        "profile": profile,
        "costs": dict(load_costs(profile).us),
        "n_seeds": n,
        "window": "the thesis's: 120 s from idle queues",
        "cells": cells,
        "in_band_at_every_seed": sum(c["within_10pct_seeds"] == n for c in cells),
        "in_band_at_no_seed": sum(c["within_10pct_seeds"] == 0 for c in cells),
        "other_cells": other_cells,
        "other_by_metric": by_metric(other_cells),
    }
    out = Path(out)
    atomic_write(out / "seeds.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "seeds.md", markdown(result))
    return result


def markdown(res: dict) -> str:
    n, cells = res["n_seeds"], res["cells"]
    L = ["---\norphan: true\n---\n", "# Thesis cells across seeds\n",
         f"Generated {res['generated_at']} by `python -m validation seeds --seeds {n}` (profile "
         f"`{res['profile']}`).  Method in `validation/seeds.py`.\n",
         f"Every held-out thesis row with a measured throughput, simulated at {n} seeds (the row's own and the "
         f"{n - 1} after it) in the row's own window ({res['window']}), same costs.  A peak is the largest "
         "replies/s over the row's peak rates (0.9-1.2 x the thesis's) at each seed; ≥ marks one taken at the "
         "highest of them, where the sim still kept up, so a lower bound.\n",
         f"In band (±10 %) at every seed: {res['in_band_at_every_seed']} of {len(cells)}; at no seed: "
         f"{res['in_band_at_no_seed']} of {len(cells)}.\n",
         "| row | metric | thesis | simulated min – max | error min – max | in band (seeds) |",
         "|---|---|---|---|---|---|"]
    L += [f"| {c['row']} | {c['metric']} | {spread_columns(c)} |" for c in cells]
    L.append("")
    if res.get("other_cells") is not None:
        L += other_markdown(res)
    return "\n".join(L) + "\n"


def other_markdown(res: dict) -> list[str]:
    """The other cells' section of seeds.md: a per-metric count, then every cell."""
    n, cells = res["n_seeds"], res["other_cells"]
    L = ["## Every other cell across the same seeds\n",
         f"Every other metric the report scores on a row with a target rate, any role (the fit saw only the "
         f"calibration rows' throughput, drop shares and table 4.9's time split), on the same {n} runs per row, with the report's tolerances; % of own peak "
         "is left out (it needs the row's whole line).  The μserver's C_avg is per loop, as the report's.\n"]
    L += by_metric_markdown(res["other_by_metric"], n)
    L += ["| row | role | metric | thesis | simulated min – max | error min – max | in band (seeds) |",
          "|---|---|---|---|---|---|---|"]
    L += [f"| {c['row']} | {c['role']} | {c['label']} | {metric_spread_columns(c)} |" for c in cells]
    L.append("")
    return L


def by_metric_markdown(counts: dict[str, dict[str, int]], n: int) -> list[str]:
    L = [f"| metric | tolerance | cells | in band at all {n} seeds | at some | at none |", "|---|---|---|---|---|---|"]
    for metric, k in counts.items():
        kind, tol, label = METRICS[metric]
        L.append(f"| {label} | {tolerance_str(kind, tol)} | {k['cells']} | {k['every_seed']} | {k['some_seeds']} | {k['no_seed']} |")
    return L + [""]


def metric_spread_columns(c: dict[str, Any]) -> str:
    """thesis | min – max | error min – max | seeds in band for one of :func:`metric_cells`' cells;
    errors relative (%) or in percentage points, as the metric's tolerance."""
    k = "pp" if c["kind"] == "pp" else "pct"
    err = f"{_fmt(c['error_min'], k)} – {_fmt(c['error_max'], k)}"
    return (f"{_fmt(c['measured'])} | {_fmt(c['min'])} – {_fmt(c['max'])} | {err} | "
            f"{c['within_seeds']} of {c['n_seeds']}")


def spread_columns(c: dict[str, Any]) -> str:
    """A cell's thesis | min – max | error min – max | seeds in band, as Markdown table columns
    (here and in the report's section); ≥: a peak at the highest rate tried, a lower bound."""
    ge = "≥ " if c.get("at_top_rate") else ""
    return (f"{c['measured']:,.0f} | {ge}{c['min']:,.0f} – {c['max']:,.0f} | "
            f"{100 * c['error_min']:+.1f} % – {100 * c['error_max']:+.1f} % | {c['within_10pct_seeds']} of {c['n_seeds']}")

"""Which costs each thesis throughput cell answers to, and which of them the fit could see.

The report says which held-out thesis cells miss; this module measures why, one cost
at a time.  For every thesis throughput cell the simulator can run (calibration,
hand-set and held-out alike), each cost its server uses is raised by :data:`STEP`
(25 %) with every other cost at its ``thesis-2004`` value, and the cell is simulated
again at the same seed.  The result is an *elasticity*:

    E = ln(y_raised / y) / ln(STEP)      (y: replies/s, or the peak for a peak row)

E = -1 means throughput is inversely proportional to that cost (the cost is all the
CPU per reply); E = 0 means the cell does not see it at all.  Three readings follow:

* **identified**: a cost the thesis-2004 fit chose (:data:`validation.thesis_fit.FIT_PARAMS`)
  is pinned by the calibration rows; a hand-set cost is *seen* by the calibration
  (or hand-set) rows only if some such row has ``|E|`` >= :data:`SEEN` -- otherwise no row
  the profile was built on can tell its value, and a held-out cell that depends on it
  is a prediction from an unmeasured number;
* **factor to close**: for a held-out cell outside ±10 %, the factor on one cost that
  would bring it to the near edge of the band, ``(edge / y) ** (1 / E)`` (linear in
  logs: an estimate, flagged when far from 1);
* **what-if**: for each missing cell, the unidentified cost with the smallest factor
  is set to that factor and *every* cell is simulated again, to count how many held-out
  cells that one change would bring inside (or push outside) the band, and what it
  does to the calibration rows.

Peak rows are simulated at :data:`PEAK_FACTORS` x the measured peak (wider than the
fit's 0.9-1.2, so that a cost that raises the peak is not capped by the top rate).
The grid still caps it from below: where the maximum sits at a point the server kept up
with and the next point is saturated (:data:`KEPT_UP`), the true peak lies between them,
a raised cost moves it without moving the maximum, and every E would read ~0 (Knot's
Accept-50 row, 2026-11-27, before its connections went cold: 16,756 served of 16,800 offered,
every E between -0.01 and +0.01).  Such a
*censored* peak's elasticities are read at the next, saturated point instead, and marked.
Every simulation is cached under ``out/validation-cache/sensitivity/`` by its
scenario, as soon as it finishes: an interrupted run keeps what it did, and a second
run recomputes nothing.

``python -m validation sensitivity [--out DIR] [--jobs N] [--step 1.25]`` writes
``sensitivity.md`` and ``sensitivity.json`` (default ``docs/validation``); 848 simulations
for the elasticities, then 47 per what-if run (for scale, the model of 2026-11-27 on two cores:
2.6 to 4 simulations a minute, about 4 hours for the elasticities; 13 minutes per what-if run;
a peak row such as Knot's is 6 simulations per cost, of about 80 s each).

``--rows LABEL,LABEL,...`` runs only those cells, and ``--rows misses`` the held-out throughput
cells the committed report (``docs/validation/cells.csv``) scores outside ±10 %, into
``sensitivity-rows.{md,json}``: their elasticities and factors to close, no what-if runs, and a
cost none of them sees is only *not seen by these rows*.
"""
from __future__ import annotations

import csv
import datetime as _dt
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from simaccept.costs import COST_NAMES, load_costs
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .records import (DOCS_OUT, WORK, Measured, is_peak_row, load_thesis, nan_to_null, peak_rates, peak_scenarios,
                      scenario_for, simulable)

STEP = 1.25
#: Peak rows: simulated at these multiples of the measured peak (max replies/s = the peak).
PEAK_FACTORS = (0.9, 1.0, 1.1, 1.2, 1.3, 1.4)
#: ``|E|`` at or above which a row is said to see a cost.
SEEN = 0.05
TOLERANCE = 0.10
#: A peak row's maximum is *censored* when, at its grid point, the simulation served at least this
#: share of the offered rate and a higher point follows: the simulated peak lies between the two, so
#: the grid, not the costs, sets the maximum, and its elasticities would all read ~0.
KEPT_UP = 0.99
DEFAULT_OUT = DOCS_OUT
DEFAULT_CACHE = WORK / "out" / "validation-cache" / "sensitivity"

#: Kernel packet work every server pays.
KERNEL = ("k_syn", "k_syn_drop", "k_ack_establish", "k_data_rx", "k_fin_rx", "k_tx_per_segment", "k_ack_rx")
#: The costs each server's model charges (``simaccept/servers/*.py``), kernel included.
PARAMS_BY_SERVER: dict[str, tuple[str, ...]] = {
    "userver": ("select_base", "select_per_fd", "select_per_ready", "accept", "setsockopt", "read", "write",
                "writev", "sendfile", "sendfile_per_kb", "close", "user_per_request") + KERNEL,
    "tux": ("tux_accept", "tux_request", "tux_per_kb", "tux_close", "tux_phase", "tux_cold",
            "tux_cache_touches") + KERNEL,
    "knot": ("thread_switch", "sched_base", "sched_per_blocked", "sched_per_ready", "accept", "read", "write",
             "setsockopt", "sendfile_per_kb", "close", "user_per_request") + KERNEL,
}


#: A partial run's status for a cost that is neither fitted nor seen by the rows it ran.
NOT_SEEN_PARTIAL = "not seen by these rows"
#: ``--rows misses``: the held-out throughput cells the committed report scores outside the band.
MISSES = "misses"


class SensitivityError(ValueError):
    pass


@dataclass(frozen=True)
class Cell:
    """One thesis throughput number: the row, its role and what was measured."""
    m: Measured
    role: str            # calibration | hand-set | held-out
    metric: str          # replies_per_s | peak_replies_per_s
    measured: float

    @property
    def label(self) -> str:
        return self.m.label

    @property
    def server(self) -> str:
        return self.m.record.server


def cells(rows: Iterable[Measured] | None = None) -> list[Cell]:
    """Every simulable thesis throughput cell, with the report's role."""
    from .report import role_of
    out = []
    for m in (load_thesis() if rows is None else rows):
        r = m.record
        ok, _ = simulable(m, peaks=True)
        if not ok or r.server not in PARAMS_BY_SERVER:
            continue
        metric = "peak_replies_per_s" if is_peak_row(m) else "replies_per_s"
        v = m.get(metric)
        if not (isinstance(v, float) and math.isfinite(v) and v > 0):
            continue
        out.append(Cell(m, role_of(m), metric, v))
    return out


def elasticity(y0: float, y1: float, step: float = STEP) -> float:
    """ln(y1 / y0) / ln(step); NaN unless both are positive and finite."""
    if not (y0 > 0 and y1 > 0 and math.isfinite(y0) and math.isfinite(y1)) or step <= 0 or step == 1:
        return math.nan
    return math.log(y1 / y0) / math.log(step)


def factor_to_band(pred: float, measured: float, e: float, tol: float = TOLERANCE, min_e: float = SEEN) -> float:
    """The factor on one cost that moves ``pred`` to the near edge of ``measured`` ± tol.

    1.0 if already inside; NaN if the cell barely sees the cost (``|E|`` < ``min_e``: the
    factor would be astronomically large or small) or the prediction is not positive.
    Linear in logs, so an estimate.
    """
    if not (pred > 0 and measured > 0):
        return math.nan
    lo, hi = measured * (1 - tol), measured * (1 + tol)
    if lo <= pred <= hi:
        return 1.0
    if not math.isfinite(e) or abs(e) < min_e:
        return math.nan
    edge = hi if pred > hi else lo
    return (edge / pred) ** (1.0 / e)


def _scenario_jsons(c: Cell, overrides: Sequence[str]) -> list[str]:
    if c.metric == "peak_replies_per_s":
        return [sc.to_json() for sc in peak_scenarios(c.m, overrides=overrides, factors=PEAK_FACTORS)]
    return [scenario_for(c.m, overrides=overrides).to_json()]


class Runner:
    """Simulates scenario JSONs through :func:`validation.fitter.simulate_cached`; results as replies/s."""

    def __init__(self, cache: Path, jobs: int = 1, log: Callable[[str], None] = print):
        self.cache, self.jobs, self.log = Path(cache), max(1, int(jobs)), log
        self.n_run = 0

    def replies(self, jsons: Sequence[str]) -> dict[str, float]:
        from .fitter import simulate_cached

        def counted(js, d):
            self.n_run += 1
        jsons = list(dict.fromkeys(jsons))
        done = simulate_cached(jsons, self.cache, self.jobs, "<sensitivity>", on_done=counted, progress=self.log)
        bad = [d for d in done.values() if d.get("status") != "ok"]
        if bad:
            raise SensitivityError(f"a simulation failed: {(bad[0].get('error') or '').splitlines()[:1]}")
        return {js: float(done[js]["replies_per_s"]) for js in jsons}


def _value(c: Cell, ys: Sequence[float]) -> float:
    return max(ys) if c.metric == "peak_replies_per_s" else ys[0]


def past_censored_peak(rates: Sequence[float], ys: Sequence[float]) -> int | None:
    """Index of the first grid point past a censored peak (see :data:`KEPT_UP`), or None if the
    maximum is not censored (it is past saturation, or at the grid's last point)."""
    k = max(range(len(ys)), key=ys.__getitem__)
    if k + 1 < len(ys) and ys[k] >= KEPT_UP * rates[k]:
        return k + 1
    return None


def analyse(cs: Sequence[Cell], runner: Runner, profile: str = "thesis-2004", step: float = STEP,
            params: dict[str, Sequence[str]] | None = None, sim_overrides: Sequence[str] = (),
            what_if: bool = True, partial: bool = False) -> dict:
    """Base predictions, elasticities, factors to close and (optionally) the what-if runs.

    ``partial``: ``cs`` is a chosen subset of the cells.  A cost no row of the subset sees is
    then :data:`NOT_SEEN_PARTIAL`, not *unidentified*: the rows left out might see it.
    """
    params = {k: tuple(v) for k, v in (params or PARAMS_BY_SERVER).items()}
    bad = sorted({p for v in params.values() for p in v} - set(COST_NAMES))
    if bad:
        raise SensitivityError(f"unknown cost(s): {', '.join(bad)}")
    if not (step > 0 and math.isfinite(step)) or step == 1:
        raise SensitivityError(f"--step: must be finite, > 0 and != 1, got {step}")
    costs = load_costs(profile).as_dict()
    inf = sorted({p for v in params.values() for p in v if not math.isfinite(costs[p] * step)})
    if inf:         # a ScenarioError traceback ("costs.select_base: must be finite") after the base runs' plan
        raise SensitivityError(f"--step: {step:g} makes {', '.join(inf)} infinite")
    base_over = [f"costs.profile={json.dumps(str(profile))}"] + list(sim_overrides)

    def over_for(p: str, f: float) -> list[str]:
        return base_over + [f"costs.{p}={costs[p] * f!r}"]

    plan: dict[tuple[str, str], list[str]] = {}
    for c in cs:
        plan[(c.label, "")] = _scenario_jsons(c, base_over)
        for p in params.get(c.server, ()):
            plan[(c.label, p)] = _scenario_jsons(c, over_for(p, step))
    ys = runner.replies([js for v in plan.values() for js in v])
    by_label = {c.label: c for c in cs}
    y = {k: _value(by_label[k[0]], [ys[js] for js in jsons]) for k, jsons in plan.items()}

    from .thesis_fit import FIT_PARAMS
    rows = []
    for c in cs:
        y0 = y[(c.label, "")]
        # A censored peak's elasticities are read at the first grid point past it, where the server is
        # saturated and its costs set throughput: a proxy for how the peak itself would move.
        k = at_rate = None
        if c.metric == "peak_replies_per_s":
            rates = peak_rates(c.m, PEAK_FACTORS)
            k = past_censored_peak(rates, [ys[js] for js in plan[(c.label, "")]])
            at_rate = None if k is None else rates[k]
        if k is None:
            el = {p: elasticity(y0, y[(c.label, p)], step) for p in params.get(c.server, ())}
        else:
            at = {p: ys[plan[(c.label, p)][k]] for p in ("",) + tuple(params.get(c.server, ()))}
            el = {p: elasticity(at[""], at[p], step) for p in params.get(c.server, ())}
        err = (y0 - c.measured) / c.measured
        rows.append({"row": c.label, "role": c.role, "server": c.server, "metric": c.metric,
                     "measured": c.measured, "predicted": y0, "error": err, "ok": abs(err) <= TOLERANCE,
                     "elasticity_at_rate": at_rate,
                     "elasticity": el,
                     "factor_to_band": {p: factor_to_band(y0, c.measured, e) for p, e in el.items()}})
    seen_by: dict[str, dict[str, float]] = {}       # cost -> role -> max |E| over that role's rows
    for r in rows:
        if r["role"] == "held-out":
            continue
        for p, e in r["elasticity"].items():
            if math.isfinite(e):
                d = seen_by.setdefault(p, {})
                d[r["role"]] = max(d.get(r["role"], 0.0), abs(e))
    servers = {c.server for c in cs} if partial else set(params)    # a partial run lists only its servers' costs
    all_params = sorted({p for k, v in params.items() if k in servers for p in v}, key=COST_NAMES.index)
    status = {}
    for p in all_params:
        sb = seen_by.get(p, {})
        if p in FIT_PARAMS:
            st = "fitted"
        elif sb.get("calibration", 0.0) >= SEEN:
            st = "seen by calibration rows"
        elif sb.get("hand-set", 0.0) >= SEEN:
            st = "seen by hand-set rows"
        else:
            st = NOT_SEEN_PARTIAL if partial else "unidentified"
        status[p] = {"status": st, "value": costs[p], "max_abs_e_calibration": sb.get("calibration"),
                     "max_abs_e_hand_set": sb.get("hand-set")}
    res = {"profile": profile, "costs": dict(costs),     # the report flags this file stale when they change
           "step": step, "seen_threshold": SEEN, "tolerance": TOLERANCE,
           "peak_factors": list(PEAK_FACTORS), "rows": rows, "params": status, "what_if": [], "partial": partial}
    if what_if:
        res["what_if"] = _what_if(cs, rows, status, runner, over_for, base_over)
    return res


def _what_if(cs, rows, status, runner: Runner, over_for, base_over) -> list[dict]:
    """For each missing held-out cell: its unidentified cost with the smallest factor to close,
    applied to every cell and simulated."""
    picks: dict[tuple[str, float], list[str]] = {}
    for r in rows:
        if r["role"] != "held-out" or r["ok"]:
            continue
        cand = [(abs(math.log(f)), p, f) for p, f in r["factor_to_band"].items()
                if status[p]["status"] == "unidentified" and math.isfinite(f) and f > 0]
        if not cand:
            continue
        _, p, f = min(cand)
        f = round(f, 2) if 0.05 <= f <= 20 else f
        # one run per cost when two cells ask for nearly the same change (within 5 %): the smaller change
        near = next((k for k in picks if k[0] == p and abs(math.log(k[1] / f)) < math.log(1.05)), None)
        if near is not None:
            rows_ = picks.pop(near)
            f = min(near[1], f, key=lambda x: abs(math.log(x)))
            picks[(p, f)] = rows_
        picks.setdefault((p, f), []).append(r["row"])
    out = []
    by_label = {c.label: c for c in cs}
    for (p, f), for_rows in picks.items():
        over = over_for(p, f)
        jsons = {c.label: _scenario_jsons(c, over) for c in cs}
        ys = runner.replies([js for v in jsons.values() for js in v])
        cells_out = []
        for r in rows:
            c = by_label[r["row"]]
            v = _value(c, [ys[js] for js in jsons[c.label]])
            e = (v - c.measured) / c.measured
            cells_out.append({"row": c.label, "role": c.role, "predicted": v, "error": e,
                              "ok": abs(e) <= TOLERANCE, "was_ok": r["ok"], "was_error": r["error"]})
        held = [x for x in cells_out if x["role"] == "held-out"]
        cal = [x for x in cells_out if x["role"] == "calibration"]
        out.append({"param": p, "factor": f, "value": status[p]["value"] * f, "chosen_for": for_rows,
                    "heldout_within": sum(x["ok"] for x in held), "heldout_cells": len(held),
                    "heldout_within_before": sum(x["was_ok"] for x in held),
                    "calibration_max_abs_change": max((abs(x["error"] - x["was_error"]) for x in cal), default=0.0),
                    "cells": cells_out})
    return out


def missing_heldout(rows: Iterable[dict]) -> list[dict]:
    """The held-out rows outside the band that have an error to read."""
    return [r for r in rows if r["role"] == "held-out" and not r["ok"] and r["error"] is not None]


def moved_cells(w: dict) -> tuple[list[str], list[str]]:
    """A what-if run's cells it brought inside the band, and those it pushed outside."""
    return ([x["row"] for x in w["cells"] if x["ok"] and not x["was_ok"]],
            [x["row"] for x in w["cells"] if x["was_ok"] and not x["ok"]])


def one_way_costs(d: dict) -> list[str] | None:
    """When the missing held-out cells err both ways: the costs every one of them sees (``|E|`` >= :data:`SEEN`),
    if each of those moves them all the same way (E of one sign), else None.

    Then no change to one cost closes them all: it narrows the misses on one side and widens the others',
    and what the cells miss is the difference between them, not a level."""
    miss = missing_heldout(d["rows"])
    if not miss or not (any(r["error"] > 0 for r in miss) and any(r["error"] < 0 for r in miss)):
        return None
    seen = [p for p in miss[0]["elasticity"]
            if all(r["elasticity"].get(p) is not None and abs(r["elasticity"][p]) >= SEEN for r in miss)]
    if not seen or any(len({math.copysign(1, r["elasticity"][p]) for r in miss}) > 1 for p in seen):
        return None
    return seen


def one_way_sentence(errors: Sequence[float], costs: Sequence[str]) -> str:
    """What :func:`one_way_costs` found, in a sentence for the pages."""
    errs = ", ".join(f"{100 * e:+.1f} %" for e in errors)
    return (f"The missing cells err both ways ({errs}), and every cost all of them see moves them the same way "
            "(E of one sign: " + ", ".join(f"`{p}`" for p in costs) + "): a change to one cost narrows the misses "
            "on one side and widens the others'.  What these cells miss is the difference between them, which no "
            "one cost's level moves.")


# --------------------------------------------------------------------------- output
def _e(v) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v:+.2f}"


def format_factor(f) -> str:
    """A factor to close, or where it lies when the linear estimate means nothing."""
    if f is None or not math.isfinite(f):
        return "–"
    if f > 10:
        return "beyond x10"
    if f < 0.1:
        return "below x0.1"
    return f"x{f:.2f}"


def _pct(v) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{100 * v:+.1f} %"


def markdown(res: dict) -> str:
    rows, status = res["rows"], res["params"]
    cmd = ("python -m validation sensitivity" + (f" --step {res['step']:g}" if res["step"] != STEP else "")
           + (f" --rows {','.join(r['row'] for r in rows)}" if res.get("partial") else ""))
    L = ["---", "orphan: true", "---", "",
         "# Why the held-out thesis cells miss: elasticities and identification", "",
         f"Generated {res['generated_at']} by `{cmd}` (profile `{res['profile']}`).  "
         "Method: `validation/sensitivity.py`.", "",
         f"Each cost a server uses is raised by {100 * (res['step'] - 1):.0f} % alone and every thesis throughput "
         "cell of that server is simulated again at the same seed.  **E** = ln(y raised / y) / ln("
         f"{res['step']:g}): -1 means throughput is inversely proportional to that cost, 0 that the cell does not "
         f"see it.  A cost is *seen* by a group of rows if one of them has |E| >= {res['seen_threshold']:g}; "
         "*unidentified* means neither the calibration rows (the fit's) nor the hand-set rows see it: "
         "no number the profile was built on constrains it.", ""]
    if res.get("partial"):
        L += [f"**Partial run** (`--rows`): only the {len(rows)} row(s) below were simulated, and no what-if runs.  "
              f"A cost that is neither fitted nor seen by them is *{NOT_SEEN_PARTIAL}*, not unidentified: "
              "the rows left out might see it (the whole analysis is `sensitivity.md`).  Each row is simulated "
              "at its own seed, as the fit simulates it; the report's tables use the sweep's, so their errors "
              "differ by run-to-run noise.", ""]
    L += ["## The costs", "", "| cost | value (µs) | status | max abs E, calibration rows | hand-set rows |",
          "|---|---|---|---|---|"]
    for p, s in status.items():
        mc, mh = s["max_abs_e_calibration"], s["max_abs_e_hand_set"]
        L.append(f"| `{p}` | {s['value']:.4g} | {s['status']} | {'–' if mc is None else f'{mc:.2f}'} | "
                 f"{'–' if mh is None else f'{mh:.2f}'} |")
    L += ["", "## Each held-out cell that misses", ""]
    for r in rows:
        if r["role"] != "held-out" or r["ok"]:
            continue
        L += [f"### {r['row']}", "",
              f"Measured {r['measured']:,.0f}, simulated {r['predicted']:,.0f} ({_pct(r['error'])}).  "
              "Costs with |E| >= 0.05, largest first; *factor* is the change of that cost alone that "
              "would bring the cell to the edge of ±10 % (linear in logs; beyond 0.5-2 it is only a direction).", ""]
        if r.get("elasticity_at_rate"):
            L += [f"**Censored peak:** the simulated maximum is at a grid point where the server kept up (at least "
                  f"{100 * KEPT_UP:.0f} % of the offered rate served), so the grid sets it and every cost's E on it "
                  f"is ~0.  E here is read at the next grid point, {r['elasticity_at_rate']:,.0f} req/s, past "
                  "saturation, as a proxy for the peak's; the factors use it against the peak.", ""]
        L += ["| cost | status | E | factor to close |", "|---|---|---|---|"]
        el = sorted(((abs(e), p, e) for p, e in r["elasticity"].items() if math.isfinite(e) and abs(e) >= SEEN),
                    reverse=True)
        for _, p, e in el:
            f = r["factor_to_band"][p]
            L.append(f"| `{p}` | {status[p]['status']} | {_e(e)} | {format_factor(f)} |")
        if not el:
            L.append("| (no cost moves this cell by 5 % per 100 %) | | | |")
        L.append("")
    ow = one_way_costs(res)
    if ow:
        L += [one_way_sentence([r["error"] for r in missing_heldout(rows)], ow), ""]
    if res["what_if"]:
        L += ["## What one unidentified cost would do", "",
              "For each missing cell, its unidentified cost with the factor closest to 1 is set to that factor "
              "and every cell is simulated again.  Not a fit and not a prediction: the factor was read off "
              "the held-out cell itself.  It shows whether a single unmeasured number could explain the miss "
              "without breaking the others.", "",
              "| cost x factor | chosen for | held-out within ±10 % (before -> after) | brought in | pushed out "
              "| largest change on a calibration row |", "|---|---|---|---|---|---|"]
        for w in res["what_if"]:
            moved = [", ".join(rs) or "–" for rs in moved_cells(w)]
            L.append(f"| `{w['param']}` x{w['factor']:.2f} ({w['value']:.3g} µs) | {', '.join(w['chosen_for'])} | "
                     f"{w['heldout_within_before']} -> {w['heldout_within']} of {w['heldout_cells']} | "
                     f"{moved[0]} | {moved[1]} | {100 * w['calibration_max_abs_change']:.1f} pp |")
        L.append("")
        for w in res["what_if"]:
            L += [f"<details><summary><code>{w['param']}</code> x{w['factor']:.2f}: every cell</summary>", "",
                  "| row | role | before | after |", "|---|---|---|---|"]
            for x in w["cells"]:
                L.append(f"| {x['row']} | {x['role']} | {_pct(x['was_error'])} | {_pct(x['error'])}"
                         f"{'' if x['ok'] else ' (miss)'} |")
            L += ["", "</details>", ""]
    L += ["## Every cell's elasticities", "",
          "| row | role | error | " + " | ".join(f"`{p}`" for p in status) + " |",
          "|---|---|---|" + "---|" * len(status)]
    for r in rows:
        at = r.get("elasticity_at_rate")
        L.append(f"| {r['row']} | {r['role']} | {_pct(r['error'])}{f' (E at {at:,.0f})' if at else ''} | "
                 + " | ".join(_e(r["elasticity"].get(p)) if p in r["elasticity"] else "" for p in status) + " |")
    return "\n".join(L) + "\n"


def report_misses(cells_csv: str | Path = DEFAULT_OUT / "cells.csv") -> list[str]:
    """The labels of the held-out throughput cells ``cells_csv`` (a report's) scores outside the band."""
    f = Path(cells_csv)
    if not f.is_file():
        raise SensitivityError(f"--rows {MISSES}: no report's cells.csv at {str(f)!r} (run `python -m validation "
                               "report` first, or name the rows)")
    with f.open(newline="") as fh:
        return list(dict.fromkeys(r["row"] for r in csv.DictReader(fh)
                                  if r["role"] == "held-out" and r["metric"] in ("replies_per_s", "peak_replies_per_s")
                                  and r["ok"] == "False"))


def select_cells(all_cells: Sequence[Cell], labels: Sequence[str]) -> list[Cell]:
    """The cells named by ``labels`` (a report's row labels), in the order given; an unknown label is refused."""
    by_label = {c.label: c for c in all_cells}
    unknown = [x for x in labels if x not in by_label]
    if unknown:
        raise SensitivityError(f"--rows: {unknown[0]!r} is not a simulable thesis throughput row "
                               f"(e.g. {next(iter(by_label), '?')!r})")
    if not labels:
        raise SensitivityError("--rows: no rows named")
    return [by_label[x] for x in dict.fromkeys(labels)]


def run(out: str | Path = DEFAULT_OUT, jobs: int = 2, step: float = STEP, profile: str = "thesis-2004",
        cache: str | Path = DEFAULT_CACHE, log=print, rows: Sequence[str] | None = None) -> dict:
    """The whole analysis -> ``sensitivity.{json,md}``; with ``rows`` (labels, or ``["misses"]``) only those
    cells, no what-if runs, -> ``sensitivity-rows.{json,md}`` (the whole analysis's files are left as they are)."""
    out = Path(out)
    if out.exists() and not out.is_dir():      # a missing one is made at the end, as every analysis's
        raise SensitivityError(f"--out {str(out)!r}: not a directory")
    try:
        Path(cache).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise SensitivityError(f"--cache {str(cache)!r}: {e.strerror or e}") from None
    cs, stem = cells(), "sensitivity"
    if rows is not None:
        misses = list(rows) == [MISSES]
        labels = report_misses() if misses else list(rows)
        if misses and not labels:
            raise SensitivityError(f"--rows {MISSES}: the report scores every held-out throughput cell within the band")
        cs, stem = select_cells(cs, labels), "sensitivity-rows"
    res = analyse(cs, Runner(Path(cache), jobs, log), profile=profile, step=step,
                  what_if=rows is None, partial=rows is not None)
    res["generated_at"] = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    res["model_fingerprint"] = model_fingerprint()   # the report flags this file stale when the model changes
    atomic_write(out / f"{stem}.json", json.dumps(nan_to_null(res), indent=2))
    atomic_write(out / f"{stem}.md", markdown(res))
    return res

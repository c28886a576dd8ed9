"""``python -m validation window``: how the measurement window moves each thesis cell.

The thesis measured every point as one 2-minute httperf run from idle queues (a two-minute
pause between experiments let every socket leave TIME_WAIT, sec 3.2.1), and httperf's rates
are totals over the run: each thesis number is an average over 120 s *including* the start.
The thesis scenario files simulate a 10 s warm-up and then 10 s measured (quick to run, and
what ``simaccept run`` gives); the report and ``thesis-fit`` simulate a paper row over the
thesis's own window instead (:func:`validation.records.record_window`).  Under one-packet
overload the two differ: retransmitted SYNs (3 and 9 s after the first), requests that met a
full accept queue waiting in the SYN queue for their retransmissions, and the DropRequest rule
they trigger keep the rates falling for another 20-30 s (μserver Accept-1 at 27,000 req/s:
15.2k accepts/s in the first 5 s, 11.2k at 10-15 s, 9.3-9.5k from 30 s on).  SPECweb99-like
runs (7.3 requests per connection) barely drift.

For every thesis row with a target rate and at least one metric the report scores, this
simulates the row at its own seed in both windows (the scenario file's, and 120 s from t = 0
with no warm-up) with the same costs, and reports each metric's value and error against the
thesis in each.  Peak rows are left out: a peak is a maximum over rates, mostly below
overload.  Runs are cached (:func:`validation.fitter.simulate_cached`), so a rerun
recomputes nothing.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from simaccept import load_scenario
from simaccept.costs import load_costs
from simaccept.record import RunRecord
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .fitter import check_run_inputs, raise_if_failed, simulate_cached, stderr_progress
from .records import WORK, load_thesis, nan_to_null, scenario_for, thesis_scenario_file
from .report import role_of, userver_c_avg

DEFAULT_CACHE = WORK / "out" / "validation-cache" / "window"
THESIS_WINDOW = ("scenario.warmup=0", "scenario.duration=120")
METRICS = ("replies_per_s", "accept_rate", "c_avg", "select_calls_per_s", "fds_per_select")
TOL = {"replies_per_s": 0.10}      # the tolerances: throughput ±10 %, the others ±25 %


class WindowError(ValueError):
    pass


def file_window(m) -> list[str]:
    """The warm-up and measured window of the row's thesis scenario file, as overrides."""
    sc = load_scenario(thesis_scenario_file(m.record.server, m.record.workload)[0])
    return [f"scenario.warmup={sc['scenario']['warmup']!r}", f"scenario.duration={sc['scenario']['duration']!r}"]


def rows_with_rates(thesis=None):
    """Thesis rows the simulator can run at a target rate, with a measured value of some metric."""
    out = []
    for m in thesis if thesis is not None else load_thesis():
        r = m.record
        if not r.server or not r.workload or math.isnan(r.target_rate):
            continue
        if any(not math.isnan(m.get(k)) for k in METRICS):
            out.append(m)
    return out


def compare(rows, sims_file: dict[str, dict], sims_thesis: dict[str, dict]) -> list[dict[str, Any]]:
    """One dict per (row, metric the thesis measured): both windows' values and errors."""
    out = []
    for m in rows:
        a, b = sims_file[m.label], sims_thesis[m.label]
        for k in METRICS:
            meas = m.get(k)
            if math.isnan(meas) or meas == 0:
                continue
            if k == "c_avg" and m.record.server == "userver":
                # counted per loop, as the thesis counts it (validation.report.userver_c_avg)
                va, vb = (userver_c_avg(RunRecord.from_dict(d)) if d.get("status") == "ok" else math.nan
                          for d in (a, b))
            else:
                va, vb = a.get(k), b.get(k)
            va = math.nan if va is None else float(va)
            vb = math.nan if vb is None else float(vb)
            tol = TOL.get(k, 0.25)
            ea, eb = va / meas - 1.0, vb / meas - 1.0
            out.append({"row": m.label, "role": role_of(m), "workload": m.record.workload, "metric": k,
                        "measured": meas,
                        "file_window": va, "thesis_window": vb, "error_file_window": ea,
                        "error_thesis_window": eb, "change": vb / va - 1.0 if va else math.nan,
                        "tolerance": tol, "ok_file_window": abs(ea) <= tol, "ok_thesis_window": abs(eb) <= tol})
    return out


def run(out: str | Path = "docs/validation", jobs: int = 1, profile: str = "thesis-2004",
        cache: str | Path = DEFAULT_CACHE) -> dict:
    cache = check_run_inputs(profile, cache, WindowError)
    rows = rows_with_rates()
    if not rows:
        raise WindowError("thesis.csv has no row with a target rate")
    prof = [f"costs.profile={json.dumps(str(profile))}"]
    scen = {m.label: (scenario_for(m, overrides=prof + file_window(m)),
                      scenario_for(m, overrides=prof + list(THESIS_WINDOW))) for m in rows}
    windows = {(a["scenario"]["warmup"], a["scenario"]["duration"]) for a, _ in scen.values()}
    js = {lab: (a.to_json(), b.to_json()) for lab, (a, b) in scen.items()}
    done = simulate_cached([j for pair in js.values() for j in pair], cache, jobs, source="<window>",
                           progress=stderr_progress)
    raise_if_failed(((lab, done[j]) for lab, pair in js.items() for j in pair), WindowError)
    cells = compare(rows, {lab: done[a] for lab, (a, _) in js.items()}, {lab: done[b] for lab, (_, b) in js.items()})
    thr = [c for c in cells if c["metric"] == "replies_per_s"]
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),   # the report flags this file stale when the model changes
        "profile": profile,
        "costs": dict(load_costs(profile).us),      # the report flags this file stale when they change
        "file_window_s": sorted(f"{w:g} s warm-up + {d:g} s" for w, d in windows),
        "thesis_window": "120 s from t = 0 (no warm-up)",
        "cells": cells,
        "throughput_within_10pct": {"file_window": sum(c["ok_file_window"] for c in thr),
                                    "thesis_window": sum(c["ok_thesis_window"] for c in thr), "cells": len(thr)},
    }
    out = Path(out)
    atomic_write(out / "window.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "window.md", markdown(result))
    return result


def _pct(v: float) -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:+.1f} %"


def markdown(res: dict) -> str:
    L = ["---\norphan: true\n---\n", "# The measurement window: the scenario files' against the thesis's\n",
         f"Generated {res['generated_at']} by `python -m validation window` (profile `{res['profile']}`).  "
         "Method in `validation/window.py`.\n",
         "Each thesis number is an httperf total over one 2-minute run from idle queues; the report and "
         "`thesis-fit` simulate every paper row over that window (120 s from t = 0).  The thesis scenario "
         f"files, as `simaccept run` gives them, simulate {', '.join(res['file_window_s'])}.  Below, every "
         "thesis row with a target rate, simulated at its own seed in both windows with the same costs.  "
         "*change*: thesis window against the file's.\n"]
    t = res["throughput_within_10pct"]
    L.append(f"Throughput within ±10 %: {t['thesis_window']} of {t['cells']} in the thesis's window (the report's), "
             f"{t['file_window']} in the scenario files'.\n")
    L += ["| row | role | metric | thesis | file window | error | 120 s from t = 0 | error | change |",
          "|---|---|---|---|---|---|---|---|---|"]
    for c in res["cells"]:
        f = (lambda v: "–" if v is None or math.isnan(v) else f"{v:,.1f}") if c["metric"] in ("c_avg", "fds_per_select") \
            else (lambda v: "–" if v is None or math.isnan(v) else f"{v:,.0f}")
        L.append(f"| {c['row']} | {c['role']} | {c['metric']} | {f(c['measured'])} | {f(c['file_window'])} | "
                 f"{_pct(c['error_file_window'])} | {f(c['thesis_window'])} | {_pct(c['error_thesis_window'])} | "
                 f"{_pct(c['change'])} |")
    L.append("")
    return "\n".join(L) + "\n"

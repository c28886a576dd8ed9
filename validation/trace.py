"""``python -m validation trace``: how a thesis cell's server loop moves within its run.

The report and ``seeds`` score each thesis cell on a 2-minute average, as the thesis measured it.
Under one-packet overload the simulated μserver's loop (select calls/s, accepts per loop) is not
steady over those 2 minutes, and an average alone cannot say whether a cell misses because the
loop is wrong throughout or because it is a mix of regimes.

The simulator keeps no time series (a per-window counter would be a hook in the model, and so a
new model fingerprint).  This does not need one: a one-packet run of T seconds *is* the first T
seconds of a longer run at the same seed (its clients send on a fixed period and no random draw
depends on the run's length; ``tests/validation/test_trace.py`` checks every connection's times
and outcome), so each row is simulated from idle queues at each of ``n`` seeds (the row's own and
the ones after it, as ``seeds``) for ``step``, 2 ``step``, ... seconds and for the row's whole
window, and the cumulative counts (replies, accepts, getevents calls, fds returned, drops by
category) are differenced into steps.  A count that fell between two lengths would mean the
shorter run was not a prefix: that is refused, not differenced.

Only one-packet rows with deterministic arrivals (httperf ``--rate``): Poisson arrivals (the TUX
scenario's) are drawn for the whole run at once, so a shorter run's differ from the start of a
longer one (refused), and a SPECweb99-like run's prefix property is not checked.  Runs are cached (:func:`validation.fitter.simulate_cached`).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any

from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .fitter import check_run_count, check_run_inputs, raise_if_failed, simulate_cached, stderr_progress
from .records import WORK, NotSimulable, load_thesis, nan_to_null, record_seed, scenario_for
from .report import role_of

DEFAULT_CACHE = WORK / "out" / "validation-cache" / "trace"
#: Tables 4.7/4.8 and 5.1: the μserver one-packet rows whose loop the thesis counted, past its peak;
#: and Knot's open connections just past its Accept-50 peak (sec 4.2.3), a held-out miss.
DEFAULT_ROWS = ("userver/one-packet/select/accept-1@27000", "userver/one-packet/select/accept-10@27000",
                "userver/one-packet/select/accept-inf@27000", "knot/one-packet/-/accept-50@15000")
DROPS = ("drops_drop_request", "drops_listen_overflow", "drops_acceptq_full", "drops_synq_full")
DROP_NAMES = {"drops_drop_request": "DropRequest", "drops_listen_overflow": "ListenOverflow",
              "drops_acceptq_full": "AcceptQFull", "drops_synq_full": "SynQFull"}
#: Counts are products of a rate and a length: a difference this far below zero is rounding.
ROUNDING = 1e-6


class TraceError(ValueError):
    pass


def run_ends(window_s: float, step: float) -> list[float]:
    """The run lengths: every multiple of ``step`` below ``window_s``, then ``window_s``."""
    return [round(step * i, 9) for i in range(1, math.ceil(window_s / step - 1e-9))] + [float(window_s)]


def cumulative(rec: dict[str, Any]) -> dict[str, float]:
    """A run's totals from its record (rates times its measured length; drops are counts)."""
    dur = float(rec["duration_s"])
    loops = float(rec["select_calls_per_s"]) * dur
    fds = float(rec["fds_per_select"]) * loops if loops > 0 else 0.0
    out = {"replies": float(rec["replies_per_s"]) * dur, "accepts": float(rec["accept_rate"]) * dur,
           "loops": loops, "fds": fds, "open_s": float(rec["open_conns_mean"]) * dur}
    out.update({d: float(rec[d]) for d in DROPS})
    return out


def steps(ends: list[float], recs: list[dict[str, Any]], label: str = "") -> list[dict[str, Any]]:
    """Each step between consecutive run lengths: its rates, accepts per loop (the thesis's C_avg),
    fds per select and drop shares.  Returns: one dict per step, from t = 0.
    Raises TraceError when a total falls from one length to the next (not a prefix)."""
    out, prev, t_prev, end_prev = [], None, 0.0, 0.0
    for t, rec in zip(ends, recs):
        cum = cumulative(rec)
        # A run ends when its server's last loop does, a few ms past its nominal length, and its
        # totals are counted to there: rates are over the actual span, labels nominal.
        end = float(rec["duration_s"])
        d = {k: v - (prev[k] if prev else 0.0) for k, v in cum.items()}
        for k, v in d.items():
            if v < -ROUNDING * max(1.0, abs(cum[k])):
                raise TraceError(f"{label}: {k} fell from {prev[k]:.6g} to {cum[k]:.6g} between the "
                                 f"{t_prev:g} s and {t:g} s runs: the shorter run is not the start of the longer")
        d = {k: max(v, 0.0) for k, v in d.items()}
        span = end - end_prev
        if not span > 0:
            raise TraceError(f"{label}: the {t:g} s run ended at {end:g} s, not after the {t_prev:g} s run's {end_prev:g} s")
        drops = sum(d[x] for x in DROPS)
        out.append({
            "t0": t_prev, "t1": t, "span_s": span, "replies_per_s": d["replies"] / span, "accept_rate": d["accepts"] / span,
            "loops_per_s": d["loops"] / span,
            "accepts_per_loop": d["accepts"] / d["loops"] if d["loops"] > 0 else math.nan,
            "fds_per_select": d["fds"] / d["loops"] if d["loops"] > 0 else math.nan,
            "open_conns_mean": d["open_s"] / span,
            "drops_per_s": drops / span,
            "drop_shares": {DROP_NAMES[x]: (100.0 * d[x] / drops if drops > 0 else math.nan) for x in DROPS},
        })
        prev, t_prev, end_prev = cum, t, end
    return out


def _rows(labels) -> list:
    if not labels:
        raise TraceError("--rows: no row given")
    by = {m.label: m for m in load_thesis()}
    out = []
    for lab in labels:
        m = by.get(lab)
        if m is None:
            near = sorted(k for k in by if "@" in k and not k.endswith("@peak"))
            raise TraceError(f"--rows: no thesis row {lab!r}; rows with a target rate: {', '.join(near)}")
        r = m.record
        if math.isnan(r.target_rate):
            raise TraceError(f"--rows: {lab} has no target rate (a peak row is a maximum over rates)")
        if r.workload != "one-packet":
            raise TraceError(f"--rows: {lab} is a {r.workload} row; only one-packet runs are known to be the "
                             "start of a longer run at the same seed")
        try:
            arrivals = scenario_for(m)["workload"]["arrivals"]
        except NotSimulable as e:
            raise TraceError(f"--rows: {lab} cannot be simulated: {e}") from None
        if arrivals != "deterministic":
            # Poisson arrivals are drawn for the whole run at once: a shorter run's differ from its start
            raise TraceError(f"--rows: {lab}'s scenario has {arrivals} arrivals; only deterministic ones (httperf "
                             "--rate) make a run the start of a longer one at the same seed")
        out.append(m)
    return out


def run(out: str | Path = "docs/validation", n: int = 4, step: float = 20.0, rows=DEFAULT_ROWS, jobs: int = 1,
        profile: str = "thesis-2004", cache: str | Path = DEFAULT_CACHE, until: float | None = None) -> dict:
    """Trace ``rows`` (report labels) at ``n`` seeds in steps of ``step`` seconds over each row's
    window (or its first ``until`` seconds); writes OUT/trace.json and OUT/trace.md."""
    if n < 1:
        raise TraceError(f"--seeds: must be >= 1, got {n}")
    if not (math.isfinite(step) and step > 0):
        raise TraceError(f"--step: must be a positive number of seconds, got {step}")
    if until is not None and not (math.isfinite(until) and until > 0):
        raise TraceError(f"--until: must be a positive number of seconds, got {until}")
    ms = _rows(rows)
    cache = check_run_inputs(profile, cache, TraceError)
    prof = [f"costs.profile={json.dumps(profile)}"]
    windows = [float(m.record.duration_s) if until is None else min(until, float(m.record.duration_s)) for m in ms]
    for m, window in zip(ms, windows):
        if step >= window:
            raise TraceError(f"--step: {step:g} s is not shorter than {m.label}'s window ({window:g} s)")
    # one run per step end: counted from the lengths, before a list of them is built
    check_run_count(n * sum(math.ceil(w / step - 1e-9) for w in windows), "--seeds x --step", TraceError)
    plan = []
    for m, window in zip(ms, windows):
        ends = run_ends(window, step)
        for s in (record_seed(m.record) + k for k in range(n)):
            plan.append((m, s, ends, [scenario_for(m, overrides=prof + [f"scenario.duration={t!r}"], seed=s).to_json()
                                      for t in ends]))
    done = simulate_cached([js for *_, jss in plan for js in jss], cache, jobs, source="<trace>",
                           progress=stderr_progress)
    raise_if_failed(((f"{m.label} seed {s}", done[js]) for m, s, _, jss in plan for js in jss), TraceError)
    traces = []
    for m, s, ends, jss in plan:
        recs = [done[js] for js in jss]
        traces.append({"row": m.label, "role": role_of(m), "seed": s, "ends": ends,
                       "steps": steps(ends, recs, f"{m.label} seed {s}"),
                       "whole": {k: recs[-1][k] for k in ("replies_per_s", "select_calls_per_s", "accept_rate",
                                                          "fds_per_select", "open_conns_mean")}})
    thesis = {m.label: {k: m.get(k) for k in ("replies_per_s", "select_calls_per_s", "c_avg", "fds_per_select",
                                               "accept_rate", "open_conns_mean")} for m in ms}
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),
        "profile": profile, "n_seeds": n, "step_s": step, "until_s": until,
        "thesis": thesis, "traces": traces,
    }
    out = Path(out)
    atomic_write(out / "trace.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "trace.md", markdown(result))
    return result


def _f(x: float, nd: int = 0) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:,.{nd}f}"


def markdown(res: dict) -> str:
    n, step = res["n_seeds"], res["step_s"]
    rows = list(dict.fromkeys(t["row"] for t in res["traces"]))
    cmd = f"python -m validation trace --seeds {n} --step {step:g}" + (
        f" --until {res['until_s']:g}" if res.get("until_s") else "") + (
        # other rows than the default's: the command named did not reproduce the page
        f" --rows {','.join(rows)}" if rows and rows != list(DEFAULT_ROWS) else "")
    L = ["---\norphan: true\n---\n", "# The server loop within a run\n",
         f"Generated {res['generated_at']} by `{cmd}` (profile `{res['profile']}`, simulator model fingerprint "
         f"`{res['model_fingerprint']}`).  Method in `validation/trace.py`.\n",
         f"Each row from idle queues at {n} seed{'s' if n > 1 else ''} (the row's own and the ones after it, as seeds.md), simulated for "
         f"{step:g}, {2 * step:g}, ... s and for its whole window; the totals differenced into steps (a shorter "
         "one-packet run is the start of a longer one at the same seed).  *loops/s* is getevents calls a second, "
         "*per loop* accepts per call (the thesis's C_avg for the μserver), *open* the mean of open connections, drop "
         "shares in % of the step's drops.  "
         "The last line of each seed is the whole window, as seeds.md scores it.\n"]
    by_row: dict[str, list[dict]] = {}
    for t in res["traces"]:
        by_row.setdefault(t["row"], []).append(t)
    for row, ts in by_row.items():
        th = res["thesis"][row]
        L.append(f"## {row} ({ts[0]['role']})\n")
        said = [f"{_f(th['replies_per_s'])} replies/s"]
        said += [f"{_f(th[k], nd)} {what}" for k, nd, what in (
            ("select_calls_per_s", 0, "loops/s"), ("c_avg", 2, "per loop"), ("fds_per_select", 1, "fds per select"),
            ("open_conns_mean", 0, "open connections")) if not math.isnan(th.get(k, math.nan))]
        L.append(f"Thesis, over its whole run: {', '.join(said)}.\n")
        L += ["| seed | seconds | replies/s | loops/s | per loop | fds/select | open | drops/s | DropRequest | "
              "ListenOverflow | AcceptQFull |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for t in ts:
            for s in t["steps"]:
                sh = s["drop_shares"]
                L.append(f"| {t['seed']} | {s['t0']:g}–{s['t1']:g} | {_f(s['replies_per_s'])} | "
                         f"{_f(s['loops_per_s'] or math.nan)} | {_f(s['accepts_per_loop'], 1)} | {_f(s['fds_per_select'])} | "
                         f"{_f(s['open_conns_mean'])} | {_f(s['drops_per_s'])} | "
                         f"{_f(sh['DropRequest'], 1)} | {_f(sh['ListenOverflow'], 1)} | {_f(sh['AcceptQFull'], 1)} |")
            w = t["whole"]
            calls = w["select_calls_per_s"]
            L.append(f"| {t['seed']} | **0–{t['ends'][-1]:g}** | {_f(w['replies_per_s'])} | {_f(calls or math.nan)} | "
                     f"{_f(w['accept_rate'] / calls if calls else math.nan, 1)} | {_f(w['fds_per_select'])} | "
                     f"{_f(w['open_conns_mean'])} | | | | |")
        L.append("")
    return "\n".join(L) + "\n"

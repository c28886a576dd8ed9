"""``python -m validation drops``: the thesis's queue-drop totals against the simulator's.

Tables 5.1 and 5.2 count every queue drop of four runs at 27,000 req/s one-packet (the
μserver and TUX, Accept-1 and Accept-Inf) with counters the author added to the kernel,
totals over the run as printed.  The report scores the four categories' *shares*; this
compares the totals, per second of the 120 s run (thesis.csv's ``duration_s``).

**Why totals.**  A connection that is never served shows up in these counters: each of its
SYNs that is refused is an AcceptQFull, DropRequest (or SynQFull) drop; ListenOverflow
counts final ACKs, not SYNs.  So SYN drops per second over failed connections per second
(target rate less replies/s) is a property of the clients' retransmissions and timeout,
about the same for any server on the same clients.  The thesis gives replies/s for both
μserver runs (table 4.7), so its *SYN drops per failed connection* can be read there; TUX's
replies/s at 27,000 req/s are in no table or text, and the same ratio turns table 5.2's
totals into the replies/s TUX must have had (:func:`implied_replies`):

    replies/s = rate - SYN drops/s / (SYN drops per failed connection, μserver's)

This is an inference, not a measurement: it holds if TUX's failed connections sent as many
SYNs as the μserver's did (same httperf, same kernel, same timeout).  The μserver's two
runs, at very different drop mixes, give the ratio's range.

**Why a trace.**  Each run is simulated with a probe that samples the listening socket
every ``dt`` (SYN queue length, young requests, accept queue length) and, per ``window``
seconds, the drops and replies (:func:`trace_run`).  A run under the probe is the same run:
the probe only reads state and draws no random number, so its record equals the one a plain
``simulate`` gives (each run is simulated once more without the probe to check it:
``same_as_simulate``).  The host processes its packets in step with the server's
operations, ahead of SimPy's clock by at most the current phase (a few ms here), so a
sample is the queues' state within that step of its time stamp.

**Why an approach.**  Each row's scenario is also simulated at the rates below it
(:data:`APPROACH_RATES`, the same seed and window) at two costs of a refused SYN: the profile's
fitted ``k_syn_drop`` and ``k_syn``, the cost of an admitted SYN, which does all a refused one
does and more (the measured kernel cost is of that size: ``tools/syn_drop_cost.py``).  A row
past the rate where its server's replies fall off a cliff answers to the drop cost far more than
one on a gentle slope, and the thesis's TUX Accept-1 totals say which side that row was on.
The largest fall between neighbouring rates is reported per row and cost (:func:`steepest_fall`).

``python -m validation drops [--out DIR] [--jobs N] [--cache DIR]`` writes ``drops.md`` and
``drops.json`` (default ``docs/validation``).  Finished runs are kept in the cache, keyed by
the scenario's content hash (resolved costs and the model's fingerprint included).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, Callable, Sequence

from simaccept.costs import load_costs
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write, stop_workers, worker_pool

from .fitter import _worker_died, check_run_inputs, raise_if_failed, scenario_from_json, scenario_json
from .records import WORK, load_thesis, nan_to_null, scenario_for

DEFAULT_CACHE = WORK / "out" / "validation-cache" / "drops"
SYN_CATEGORIES = ("drops_synq_full", "drops_acceptq_full", "drops_drop_request")
CATEGORIES = SYN_CATEGORIES + ("drops_listen_overflow",)
SAMPLE_DT = 0.05              # s between samples of the queues
WINDOW = 10.0                 # s per row of a trace's table
BOUND_SLACK = 0.01             # beyond syn_drop_bound by more than this share, over either run length
TRACE_FORMAT = 1              # in a cached trace's name: a trace written by other code is not read back
#: Target rates (req/s) each drop row is also simulated at, up to its own: from below the
#: simulated μserver Accept-1's peak (~17,600) past TUX Accept-1's (25,000 in the thesis).
APPROACH_RATES = (16_000.0, 18_000.0, 20_000.0, 22_000.0, 23_000.0, 24_000.0, 25_000.0, 26_000.0, 27_000.0)


class DropsError(ValueError):
    pass


# ---------------------------------------------------------------------------- arithmetic
def drop_rows(thesis=None) -> list:
    """The paper rows that carry drop totals (tables 5.1, 5.2), in file order."""
    rows = [m for m in (thesis if thesis is not None else load_thesis())
            if m.record.source == "paper" and not math.isnan(m.get("drops_total"))]
    for m in rows:
        if not (m.record.duration_s > 0 and math.isfinite(m.record.target_rate)):
            raise DropsError(f"{m.label}: a drop total needs a run length (duration_s) and a target rate")
    return rows


def per_second(counts: dict[str, float], duration_s: float) -> dict[str, float]:
    """Each category's count (an absent or NaN category counts 0: no SynQFull column in the
    thesis, whose syncookies were off) per second, plus ``syn`` (SYNs refused) and ``total``."""
    if not duration_s > 0:
        raise DropsError(f"duration_s must be > 0, got {duration_s!r}")
    out = {c: (0.0 if counts.get(c) is None or math.isnan(counts[c]) else float(counts[c])) / duration_s
           for c in CATEGORIES}
    out["syn"] = sum(out[c] for c in SYN_CATEGORIES)
    out["total"] = out["syn"] + out["drops_listen_overflow"]
    return out


def syn_drops_per_failed(syn_per_s: float, rate: float, replies_per_s: float) -> float:
    """SYNs refused per connection that got no reply; NaN when (almost) every connection got one."""
    failed = rate - replies_per_s
    return syn_per_s / failed if failed > 0.01 * rate else math.nan


def syn_drop_bound(rate: float, replies_per_s: float, accept_rate: float) -> float:
    """The most SYN drops per failed connection that clients with an exact retransmission allow
    (a deadline at the first SYN retransmission, 3 s on Linux 2.4, acted on just after it, the
    retransmission sent at 3 s: the one-packet scenario files' clients without the connect
    race); NaN without an accept rate or when (almost) every connection got a reply.

    Such a client's connection is refused at most two SYNs (at 0 and 3 s: the third, at 9 s,
    is past its deadline).  One that got a reply was refused none: after a refused SYN it is
    established at 3 s or later, past its deadline, and closed without a request.  One the
    server accepted and never answered (one-packet: accepts less replies) was refused at
    most one: a SYN of it got in.  So SYN drops <= 2 x failed - accepted-unanswered, and per
    failed connection 2 - (accepts - replies) / (rate - replies).  More than that means some
    connections were answered after a refused SYN (a later deadline, or one acted on after
    the reply came) or sent a third SYN (a deadline past 9 s).  The files' clients race their
    deadline (a retransmission sent up to a tick early, docs/background/connect-race.md) and can
    go past it.
    """
    # syn_drops_per_failed's guard: NaN when (almost) every connection got a reply
    if math.isnan(syn_drops_per_failed(1.0, rate, replies_per_s)) or not math.isfinite(accept_rate):
        return math.nan
    return 2.0 - max(0.0, accept_rate - replies_per_s) / (rate - replies_per_s)


def accepts_run_s(m) -> float:
    """total_accepts / accept_rate of a paper row (table 4.8): the length of the run its
    accepts were counted over, NaN without both.  The drop totals come from a re-run (sec
    5.1.1) whose length is not printed; this one is the nearest stated."""
    tot, rate = m.get("total_accepts"), m.get("accept_rate")
    return tot / rate if rate > 0 and math.isfinite(tot) else math.nan


def implied_replies(rate: float, syn_per_s: float, ratios: Sequence[float]) -> tuple[float, float]:
    """(low, high) replies/s that ``syn_per_s`` SYN drops imply at ``rate``, for SYN drops per
    failed connection in [min(ratios), max(ratios)]; capped at the rate."""
    rs = [r for r in ratios if r > 0 and math.isfinite(r)]
    if not rs:
        raise DropsError("no SYN-drops-per-failed-connection ratio to infer replies from")
    lo, hi = rate - syn_per_s / min(rs), rate - syn_per_s / max(rs)
    return max(0.0, min(lo, rate)), max(0.0, min(hi, rate))


def approach_costs(profile: str) -> dict[str, float]:
    """The two costs of a refused SYN the approach is simulated at (µs): the profile's fitted
    ``k_syn_drop`` ("fitted") and its ``k_syn`` ("k_syn")."""
    us = load_costs(profile).us
    return {"fitted": float(us["k_syn_drop"]), "k_syn": float(us["k_syn"])}


def steepest_fall(points: Sequence[dict]) -> dict | None:
    """The largest relative fall in replies/s between neighbouring rates of ``points`` (dicts
    with ``rate`` and ``replies_per_s``, any order): {"from", "to" (rates), "replies_from",
    "replies_to", "change" (relative, < 0)}; None when replies/s never fall."""
    pts = sorted(points, key=lambda p: p["rate"])
    best = None
    for a, b in zip(pts, pts[1:]):
        if a["replies_per_s"] > 0 and b["replies_per_s"] < a["replies_per_s"]:
            ch = b["replies_per_s"] / a["replies_per_s"] - 1.0
            if best is None or ch < best["change"]:
                best = {"from": a["rate"], "to": b["rate"], "replies_from": a["replies_per_s"],
                        "replies_to": b["replies_per_s"], "change": ch}
    return best


def _approach_jsons(rows, prof: list[str], costs: dict[str, float],
                    rates: Sequence[float]) -> dict[str, dict[str, dict[float, str]]]:
    """{row label: {cost name: {rate: scenario JSON}}} of every approach run, rates ascending (rates
    above a row's own are left out; at its own rate and fitted cost the JSON is the plain run's, so
    the cache answers it)."""
    out = {}
    for m in rows:
        out[m.label] = {}
        for name, k in costs.items():
            ov = prof if name == "fitted" else prof + [f"costs.k_syn_drop={k!r}"]
            out[m.label][name] = {float(r): scenario_json(scenario_for(m, overrides=ov, rate=r))
                                  for r in sorted(rates) if r <= m.record.target_rate}
    return out


def _thesis_replies_at(m, rates: Sequence[float], thesis) -> dict[float, float]:
    """{rate: replies/s} of the ``thesis`` rows of ``m``'s server, workload, mux and accept-limit at ``rates``."""
    r0, want = m.record, {float(r) for r in rates}
    out = {}
    for t in thesis:
        r = t.record
        if ((r.server, r.workload, r.mux, r.accept_limit) == (r0.server, r0.workload, r0.mux, r0.accept_limit)
                and float(r.target_rate) in want and math.isfinite(t.get("replies_per_s"))):
            out[float(r.target_rate)] = float(t.get("replies_per_s"))
    return out


# ---------------------------------------------------------------------------- the probe
def probed_run(sc, probe: Callable) -> tuple[Any, Any, dict]:
    """``simulate(sc, probe=probe)``, raising on failure: (its record, its host, the closing
    snapshot simulate() took, taken again: a snapshot only reads).  The probe tracers' run."""
    from simaccept import metrics
    from simaccept.sim import simulate

    seen: dict[str, Any] = {}

    def set_up(env, host, server):
        seen.update(env=env, server=server)
        probe(env, host, server)

    rec, host = simulate(sc, raise_errors=True, return_host=True, probe=set_up)
    t_stop = sc["scenario"]["warmup"] + sc["scenario"]["duration"]
    return rec, host, metrics.snapshot(max(seen["env"].now, t_stop), host, seen["server"])


def trace_run(sc, dt: float = SAMPLE_DT, window: float = WINDOW) -> dict[str, Any]:
    """Simulate ``sc`` (a scalar Scenario) as :func:`simaccept.sim.simulate` does, with a probe.

    Returns {"record": the RunRecord as a dict, "windows": per ``window`` seconds from t = 0:
    mean and max SYN queue, share of samples with the SYN queue at the 3/4 line (a SYN would
    be a DropRequest), mean young requests, mean accept queue, share of samples with it full,
    drops/s by category and replies/s (by the time the client got the reply, as the record's)}.
    No CPU shares per window: the μserver's loop adds up its CPU time in local counters and
    hands them to the host only at the end of warm-up and of the run (the record has them)."""
    import numpy as np

    from simaccept import metrics

    t_stop = sc["scenario"]["warmup"] + sc["scenario"]["duration"]
    samples: list[tuple] = []          # (t, synq, at 3/4 line, young, acceptq, acceptq full)
    snaps: list[dict] = []

    def probe(env, host, server):
        ls = host.lsock
        snaps.append(metrics.snapshot(0.0, host, server))

        def sample():
            while env.now + dt <= t_stop + 1e-9:
                yield env.timeout(dt)
                samples.append((env.now, ls.synq_len, ls.three_quarters_full(), ls.young, len(ls.acceptq),
                                ls.acceptq_full()))
                if abs(env.now - window * len(snaps)) < dt / 2:
                    snaps.append(metrics.snapshot(env.now, host, server))

        env.process(sample())

    rec, host, end = probed_run(sc, probe)
    # The last window ends where the record's does (the server's last operation can end past t_stop).
    if len(snaps) > 1 and snaps[-1]["t"] >= end["t"] - dt / 2:
        snaps[-1] = end
    else:
        snaps.append(end)
    resp_t = np.asarray(host.resp_t)
    wins = []
    for a, b in zip(snaps, snaps[1:]):
        t0, t1 = a["t"], b["t"]
        span = t1 - t0
        s = [x for x in samples if t0 < x[0] <= t1 + 1e-9]
        d = [(y - x) / span for x, y in zip(a["drops"], b["drops"])]
        wins.append({
            "t0": t0, "t1": t1,
            "synq_mean": float(np.mean([x[1] for x in s])), "synq_max": int(max(x[1] for x in s)),
            "at_three_quarters": float(np.mean([x[2] for x in s])),
            "young_mean": float(np.mean([x[3] for x in s])),
            "acceptq_mean": float(np.mean([x[4] for x in s])), "acceptq_full": float(np.mean([x[5] for x in s])),
            **{c: d[i] for i, c in enumerate(CATEGORIES)},
            "replies_per_s": float(((resp_t >= t0) & (resp_t < t1)).sum() / span),
        })
    return {"record": rec.to_dict(), "windows": wins}


def _trace_json(js: str) -> dict:
    """trace_run in a worker; a run that raises comes back as a failed record (as simulate's do)."""
    import traceback
    try:
        return trace_run(scenario_from_json(js, "<drops>"))
    except Exception as e:  # noqa: BLE001 - run() names the failed row
        return {"record": {"status": "failed", "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"},
                "windows": []}


def _traced(jsons: list[str], cache: Path, jobs: int, worker: Callable[[str], dict] | None = None,
            prefix: str = f"trace{TRACE_FORMAT}") -> dict[str, dict]:
    """{scenario JSON: ``worker(JSON)``, default :func:`_trace_json`}, reading finished runs
    from ``cache`` (files ``{prefix}-{content hash}.json``) and writing each new one there as
    it finishes (an interrupted run keeps them).  The loop of
    :func:`validation.fitter.simulate_cached`, for a result that is not a RunRecord: a dict
    whose ``record`` is one (a run not ``ok`` is returned, not cached)."""
    from concurrent.futures import as_completed
    worker = worker or _trace_json
    out, todo = {}, []
    for js in dict.fromkeys(jsons):
        f = cache / f"{prefix}-{scenario_from_json(js, '<drops>').content_hash()}.json"
        if f.is_file():
            out[js] = json.loads(f.read_text())
        else:
            todo.append((js, f))
    if not todo:
        return out
    cache.mkdir(parents=True, exist_ok=True)
    ex = worker_pool(max(1, min(jobs, len(todo))))
    try:
        futs = {ex.submit(worker, js): (js, f) for js, f in todo}
        for fut in as_completed(futs):
            js, f = futs[fut]
            res = fut.result()
            if res["record"].get("status") == "ok":
                atomic_write(f, json.dumps(nan_to_null(res), allow_nan=False) + "\n")
            out[js] = res
    except BaseException as e:
        stop_workers(ex)
        from concurrent.futures.process import BrokenProcessPool
        if isinstance(e, BrokenProcessPool):
            raise _worker_died("the finished runs are kept in the cache") from None
        raise
    ex.shutdown()
    return out


# ---------------------------------------------------------------------------- the analysis
def run(out: str | Path = "docs/validation", jobs: int = 1, profile: str = "thesis-2004",
        cache: str | Path = DEFAULT_CACHE, check_plain: bool = True,
        approach_rates: Sequence[float] = APPROACH_RATES) -> dict:
    """Simulate every drop row in its own window under the probe; compare totals; infer TUX's
    replies/s; write drops.json and drops.md into ``out``.  ``check_plain`` also simulates each
    run without the probe (in the same pool) and records whether the two records agree.
    ``approach_rates`` (empty: none) are the rates each row is also simulated at, without the
    probe, at both :func:`approach_costs`."""
    cache = check_run_inputs(profile, cache, DropsError)
    for r in approach_rates:
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not (math.isfinite(r) and r > 0):
            raise DropsError(f"approach_rates: each must be a rate in req/s > 0, got {r!r}")
    rows = drop_rows()
    if not rows:
        raise DropsError("thesis.csv has no row with drop totals")
    prof = [f"costs.profile={json.dumps(profile)}"]
    jsons = {m.label: scenario_json(scenario_for(m, overrides=prof)) for m in rows}
    traced = _traced(list(jsons.values()), cache, jobs)
    raise_if_failed(((lab, traced[js]["record"]) for lab, js in jsons.items()), DropsError)
    same = {}
    acosts = approach_costs(profile) if approach_rates else {}
    ajs = _approach_jsons(rows, prof, acosts, approach_rates) if approach_rates else {}
    runs = {(lab, name, r): js for lab, by in ajs.items() for name, pts in by.items() for r, js in pts.items()}
    if check_plain or runs:
        from .fitter import simulate_cached, stderr_progress
        batch = list(dict.fromkeys((list(jsons.values()) if check_plain else []) + list(runs.values())))
        plain = simulate_cached(batch, cache / "plain", jobs, source="<drops>", progress=stderr_progress)
        raise_if_failed(((f"{lab} at {r:g} req/s, {name} k_syn_drop", plain[js])
                         for (lab, name, r), js in runs.items()), DropsError)
    if check_plain:
        same = {lab: all(plain[js].get(k) == traced[js]["record"].get(k)
                         for k in ("replies_per_s", "accept_rate") + CATEGORIES)
                for lab, js in jsons.items()}
    cells = []
    for m in rows:
        r, sim = m.record, traced[jsons[m.label]]["record"]
        rate = r.target_rate
        th = per_second({c: m.get(c) for c in CATEGORIES}, r.duration_s)
        sm = per_second({c: sim.get(c) for c in CATEGORIES}, float(sim["duration_s"]))
        meas_replies = m.get("replies_per_s")      # NaN for TUX: no table gives it
        cells.append({
            "row": m.label, "server": r.server, "accept_limit": r.accept_limit, "rate": rate,
            "cite": m.extras.get("cite", ""),
            "thesis_per_s": th, "sim_per_s": sm,
            "ratio_total": sm["total"] / th["total"] if th["total"] > 0 else math.nan,
            "ratio_syn": sm["syn"] / th["syn"] if th["syn"] > 0 else math.nan,
            "thesis_replies_per_s": meas_replies, "sim_replies_per_s": float(sim["replies_per_s"]),
            "thesis_syn_per_failed": syn_drops_per_failed(th["syn"], rate, meas_replies),
            "sim_syn_per_failed": syn_drops_per_failed(sm["syn"], rate, float(sim["replies_per_s"])),
            "thesis_accept_rate": m.get("accept_rate"),
            "thesis_syn_bound": syn_drop_bound(rate, meas_replies, m.get("accept_rate")),
            "thesis_duration_s": r.duration_s,
            "accepts_run_s": accepts_run_s(m),
            "sim_accept_rate": float(sim["accept_rate"]),
            "sim_syn_bound": syn_drop_bound(rate, float(sim["replies_per_s"]), float(sim["accept_rate"])),
            "sim_cpu_idle": float(sim.get("cpu_share_idle", math.nan)),
            "same_as_simulate": same.get(m.label),
            "trace": traced[jsons[m.label]]["windows"],
        })
    ratios = [c["thesis_syn_per_failed"] for c in cells if math.isfinite(c["thesis_syn_per_failed"])]
    for c in cells:
        if math.isnan(c["thesis_replies_per_s"]) and ratios:
            lo, hi = implied_replies(c["rate"], c["thesis_per_s"]["syn"], ratios)
            c["implied_replies_per_s"] = [lo, hi]
            c["sim_vs_implied"] = [c["sim_replies_per_s"] / hi - 1.0, c["sim_replies_per_s"] / lo - 1.0]
        else:
            c["implied_replies_per_s"] = None
            c["sim_vs_implied"] = None
    approach = None
    if ajs:
        approach = {"rates": [float(r) for r in approach_rates], "k_syn_drop": acosts, "rows": []}
        thesis = load_thesis()
        for m in rows:
            row = {"row": m.label, "thesis_replies_per_s": {f"{r:g}": v for r, v in
                                                            _thesis_replies_at(m, approach_rates, thesis).items()}}
            for name, by_rate in ajs[m.label].items():
                pts = [{"rate": r, "replies_per_s": float(plain[js]["replies_per_s"]),
                        "drops_per_s": per_second({c: plain[js].get(c) for c in CATEGORIES},
                                                  float(plain[js]["duration_s"]))["total"]}
                       for r, js in by_rate.items()]
                row[name] = pts
                row[name + "_steepest_fall"] = steepest_fall(pts)
            approach["rows"].append(row)
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),   # drops.md names it: which model these figures are of
        "profile": profile,
        "costs": dict(load_costs(profile).us),
        "window": "the thesis's: 120 s from idle queues",
        "sample_dt_s": SAMPLE_DT, "trace_window_s": WINDOW,
        "thesis_syn_per_failed_range": [min(ratios), max(ratios)] if ratios else None,
        "cells": cells,
        "approach": approach,
    }
    out = Path(out)
    atomic_write(out / "drops.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "drops.md", markdown(result))
    return result


def _f(x, fmt="{:,.0f}") -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else fmt.format(x)


def bound_markdown(cells: Sequence[dict]) -> list[str]:
    """The section on :func:`syn_drop_bound`: rows with the thesis's accepts and replies only."""
    rows = [c for c in cells if math.isfinite(c.get("thesis_syn_bound", math.nan))]
    if not rows:
        return []
    L = ["## SYN drops per failed connection: the most that clients with an exact retransmission allow\n",
         "Clients that give up at 3 s, Linux 2.4's first SYN retransmission, act on it 1 ms late and send that "
         "retransmission at exactly 3 s (the one-packet scenario files' clients without the connect race, "
         "[connect-race.md](../background/connect-race.md)).  Such a connection is refused at most two SYNs (at 0 and 3 s), one that got a reply "
         "was refused none (after a refused SYN it is established past its deadline and closed without a "
         "request), and one the server accepted but never answered was refused at most one.  So SYN drops per "
         "failed connection are at most 2 - (accepts - replies) / (rate - replies) (`syn_drop_bound`).  The "
         "thesis's accepts and replies are table 4.8's and 4.7's; its drops come from a re-run under the "
         "instrumented kernel (sec 5.1.1) of unprinted length: below over the length they are printed for (thesis.csv's duration_s: " + ", ".join(sorted({f"{c['thesis_duration_s']:g} s" for c in rows})) + "), and over the accepts' own run "
         "(total accepts / accept rate).\n",
         "| row | failed/s | accepted, no reply/s | thesis: SYN drops per failed, printed length / accepts' run | bound | "
         "thesis beyond the bound, SYN drops/s | sim | sim's bound |",
         "|---|---|---|---|---|---|---|---|"]
    over = []
    for c in rows:
        rate, rep, acc = c["rate"], c["thesis_replies_per_s"], c["thesis_accept_rate"]
        failed, b, dur, run_s = rate - rep, c["thesis_syn_bound"], c["thesis_duration_s"], c["accepts_run_s"]
        # the totals over the run length they are printed for (duration_s), and over the accepts' run
        syn = [c["thesis_per_s"]["syn"]] + ([c["thesis_per_s"]["syn"] * dur / run_s] if math.isfinite(run_s) else [])
        beyond = [x - b * failed for x in syn]
        if min(beyond) > BOUND_SLACK * b * failed:
            over.append(c["row"])
        L.append(f"| {c['row']} | {failed:,.0f} | {acc - rep:,.0f} | "
                 + " / ".join(f"{x / failed:.3f}" for x in syn) + f" ({_f(run_s, '{:.1f}')} s) | {b:.3f} | "
                 + " / ".join(f"{x:,.0f}" for x in beyond) + " ("
                 + " / ".join(f"{100 * x / y:.1f}" for x, y in zip(beyond, syn)) + " % of its SYN drops) | "
                 f"{_f(c['sim_syn_per_failed'], '{:.3f}')} | {_f(c['sim_syn_bound'], '{:.3f}')} |")
    L += ["", ("Over either run length, " + " and ".join(f"`{r}`" for r in over) + " refused more SYNs than such "
               "clients can have had refused: some of its connections were answered after a refused SYN (a later "
               "deadline, or one acted on after the reply came) or sent a third SYN (at 9 s: a deadline past "
               "it).  Clients with an exact retransmission stay within the bound by construction, so no fit "
               "of the kernel's costs or rules could bring their SYN drops, and the drop mix they set, up to "
               "these totals while the accepts that got no reply stayed at table 4.8's.  The scenario files' "
               "clients race their deadline since 2026-11-30: a retransmission sent up to a 10 ms tick early "
               "is answered if the client's loop reaches its socket in time "
               "([connect-race.md](../background/connect-race.md)); the sim's columns are theirs, and may "
               "exceed the bound as the thesis's do."
               if over else "No row is beyond the bound over both run lengths (by more than "
               f"{100 * BOUND_SLACK:g} %)."), ""]
    return L


def approach_markdown(ap: dict | None, cells: Sequence[dict], profile: str = "") -> list[str]:
    """The section on the approach to each row's rate at the two drop costs (none without one)."""
    if not ap or not ap["rows"]:
        return []
    k = ap["k_syn_drop"]
    where = ", fitted on the μserver's one-packet rows only" if profile == "thesis-2004" else ""
    implied = {c["row"]: c["implied_replies_per_s"] for c in cells if c.get("implied_replies_per_s")}
    L = ["## The approach to each row's rate, at two costs of a refused SYN\n",
         f"Each row's scenario (its seed and window) simulated at the rates below its own, with the profile's "
         f"`k_syn_drop` (profile `{profile}`: {k['fitted']:.2f} µs{where}) and with "
         f"`k_syn_drop` = `k_syn` ({k['k_syn']:.2f} µs: an admitted SYN's cost, which does all a refused one "
         "does and more; the test bed's Linux 6 spends 2.2-3.8 µs of NET_RX per refused SYN, "
         "`tools/syn_drop_cost.py`).  Both servers ran on the same kernel, so a refused SYN cost them the "
         "same.  Replies/s and queue drops/s (all four categories); *thesis* where a table or the text gives "
         "that rate's replies/s (TUX at 27,000: the range the totals imply, above).\n"]
    for row in ap["rows"]:
        fit, ks = row["fitted"], {p["rate"]: p for p in row["k_syn"]}
        th = {float(r): v for r, v in row["thesis_replies_per_s"].items()}
        L += [f"### {row['row']}\n",
              "| req/s | thesis replies/s | replies/s, fitted | drops/s, fitted | replies/s, k_syn | drops/s, k_syn |",
              "|---|---|---|---|---|---|"]
        for p in fit:
            r, q = p["rate"], ks.get(p["rate"])
            t = _f(th.get(r))
            if r not in th and implied.get(row["row"]) and r == fit[-1]["rate"]:
                lo, hi = implied[row["row"]]
                t = f"{lo:,.0f} – {hi:,.0f} (implied)"
            L.append(f"| {r:,.0f} | {t} | {p['replies_per_s']:,.0f} | {p['drops_per_s']:,.0f} | "
                     f"{_f(q and q['replies_per_s'])} | {_f(q and q['drops_per_s'])} |")
        falls = []
        for name, what in (("fitted", "fitted"), ("k_syn", "`k_syn`")):
            f = row.get(name + "_steepest_fall")
            falls.append(f"at the {what} cost, {f['from']:,.0f} -> {f['to']:,.0f} req/s: {f['replies_from']:,.0f} -> "
                         f"{f['replies_to']:,.0f} replies/s ({100 * f['change']:+.1f} %)" if f
                         else f"at the {what} cost, never")
        L += ["", "Largest fall between neighbouring rates: " + "; ".join(falls) + ".", ""]
    return L


def markdown(res: dict) -> str:
    cells = res["cells"]
    rng = res["thesis_syn_per_failed_range"]
    L = ["---\norphan: true\n---\n", "# Queue-drop totals: tables 5.1 and 5.2 against the simulator\n",
         f"Generated {res['generated_at']} by `python -m validation drops` (profile `{res['profile']}`, simulator "
         f"model fingerprint `{res['model_fingerprint']}`).  Method in `validation/drops.py`.  Not scored: the "
         "report scores these rows' drop-category *shares*; this page compares the totals.\n",
         f"Each row simulated once in its own window ({res['window']}); thesis counts are totals over the run as "
         "printed, divided by its 120 s.  *SYN drops* are AcceptQFull + DropRequest (+ SynQFull, none in the "
         "thesis: syncookies off): SYNs refused.  ListenOverflow counts final ACKs.\n",
         "## Totals per second\n",
         "| row | source | AcceptQFull/s | DropRequest/s | ListenOverflow/s | total/s | sim / thesis | replies/s | "
         "SYN drops per failed connection | CPU idle |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        for src, d, rep, per, idle in (
                ("thesis", c["thesis_per_s"], c["thesis_replies_per_s"], c["thesis_syn_per_failed"], None),
                ("sim", c["sim_per_s"], c["sim_replies_per_s"], c["sim_syn_per_failed"], c["sim_cpu_idle"])):
            ratio = _f(c["ratio_total"], "{:.2f}") if src == "sim" else ""
            L.append(f"| {c['row'] if src == 'thesis' else ''} | {src} | {_f(d['drops_acceptq_full'])} | "
                     f"{_f(d['drops_drop_request'])} | {_f(d['drops_listen_overflow'])} | {_f(d['total'])} | {ratio} | "
                     f"{_f(rep)} | {_f(per, '{:.2f}')} | {_f(None if idle is None else 100 * idle, '{:.1f} %')} |")
    L.append("")
    L += bound_markdown(cells)
    imp = [c for c in cells if c["implied_replies_per_s"]]
    if imp and rng:
        L += ["## TUX's replies/s that the totals imply\n",
              f"The μserver's two runs refused {rng[0]:.2f}-{rng[1]:.2f} SYNs per connection that got no reply "
              "(table 5.1 over table 4.7's replies/s).  If TUX's clients, the same httperf on the same kernel, "
              "sent as many per failed connection, table 5.2's SYN drops imply these replies/s at 27,000 req/s "
              "(no table or text gives them):\n",
              "| row | thesis SYN drops/s | implied replies/s | simulated | sim against implied |", "|---|---|---|---|---|"]
        for c in imp:
            lo, hi = c["implied_replies_per_s"]
            e0, e1 = c["sim_vs_implied"]
            L.append(f"| {c['row']} | {c['thesis_per_s']['syn']:,.0f} | {lo:,.0f} – {hi:,.0f} | "
                     f"{c['sim_replies_per_s']:,.0f} | {100 * e0:+.1f} % – {100 * e1:+.1f} % |")
        L.append("")
    L += approach_markdown(res.get("approach"), cells, res["profile"])
    L += ["## How each simulated run gets there\n",
          f"The listening socket sampled every {res['sample_dt_s'] * 1000:g} ms; per {res['trace_window_s']:g} s: "
          "SYN queue (mean, max), share of samples at the 3/4 line (a SYN arriving then is a DropRequest), young "
          "requests (no SYN-ACK retransmitted yet; a ListenOverflowed request stays young until its first "
          "retransmission, 3 s), accept queue (mean, share of samples full), drops/s and replies/s." + (" Each traced run's record equals a plain simulation's: "
                           + ("yes for all." if all(c["same_as_simulate"] for c in cells)
                              else "**no** for " + ", ".join(c["row"] for c in cells if not c["same_as_simulate"]))
                           if all(c["same_as_simulate"] is not None for c in cells) else "") + "\n"]
    for c in cells:
        L += [f"### {c['row']}\n",
              "| s | SYN queue mean / max | at 3/4 | young | accept queue mean | full | AcceptQFull/s | "
              "DropRequest/s | ListenOverflow/s | replies/s |", "|---|---|---|---|---|---|---|---|---|---|"]
        for w in c["trace"]:
            L.append(f"| {w['t0']:.0f}-{w['t1']:.0f} | {w['synq_mean']:,.0f} / {w['synq_max']:,} | "
                     f"{100 * w['at_three_quarters']:.0f} % | {w['young_mean']:,.0f} | {w['acceptq_mean']:.0f} | "
                     f"{100 * w['acceptq_full']:.0f} % | {w['drops_acceptq_full']:,.0f} | {w['drops_drop_request']:,.0f} | "
                     f"{w['drops_listen_overflow']:,.0f} | {w['replies_per_s']:,.0f} |")
        L.append("")
    return "\n".join(L) + "\n"

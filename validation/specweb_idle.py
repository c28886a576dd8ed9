"""What the thesis's own select statistics say about its SPECweb99-like connections.

The μserver's SPECweb99-like rows miss throughput most (Accept-1 +41 % at 26,000 req/s).
The thesis's select columns tell why, without using any throughput.  Three of its
columns pin select's cost per call:

* table 4.3 (gprof): select's share of the server's time: 39.96 % at Accept-1, 5.49 %
  at Accept-Inf;
* table 4.1: select calls per second (1,248 and 35) and fds returned per call (21.6 and 885.8).

The server's share of the CPU (what gprof divides by) is taken from the simulation of
the same row.  With the fitted thesis-2004 select cost (``select_base + select_per_fd x
interest set + select_per_ready x ready``, fitted on one-packet rows), this gives the
size of select's interest set, i.e. how many connections were open:

    per_call   = share_select x server_cpu_fraction / select_calls_per_s
    interest   = (per_call - select_base - select_per_ready x fds_per_select) / select_per_fd
    open_conns = interest - 1            (the listening socket)

This *absolute reading* assumes gprof's time includes the kernel's time in the call.
The thesis does not say, and table 4.9 suggests otherwise (writev 0.02 % at 9,442
calls/s, where the fitted writev alone would be ~8 % of the server's CPU): gprof
histograms the program's own text, so its shares may be of the μserver's user-level
time, select's being the fd_set building and scanning, itself proportional to the
interest set.  Under that *ratio reading* only ratios between runs mean anything:
open(Accept-1) / open(Accept-Inf) = (share / calls)(Accept-1) / (share / calls)(Accept-Inf)
(:func:`implied_open_ratio`).  Both are reported; the delay is a range between them.

The same arithmetic on the one-packet rows (table 4.9, where connections carry one
request) is the control: there the implied interest set should be close to the
simulator's.

With the workload as the thesis states it (requests on a connection back to back), the
simulator's Accept-1 keeps ~55 connections open at 26,000 req/s; the thesis's numbers
imply several hundred.  The only client-side knob that adds open time per request is
``client.think_ms`` (the client's delay after each reply before its next request or
close); the thesis does not state one.  :func:`run` sweeps it and reports, per value, the
simulated open connections next to the implied ones and the throughput that follows.
The delay is read where simulated and implied open connections meet, on the gprof rows
whose one-packet control agrees (:func:`control_agrees`); the throughput at that delay
is a conditional prediction (the delay came from tables 4.1 and 4.3 of the same rows,
not from their throughput), reported apart from the held-out figure, which keeps the
workload as stated.

The client delay is one of two numbers these rows depend on that no calibration row measures.
The other is the per-KB cost of sending a reply (``sendfile_per_kb``, ``tux_per_kb``: a one-packet
reply has no second KB), set a priori.  With ``per_kb_factors`` the whole reading is repeated with
both scaled by each factor: the delay is read again from the select statistics at those costs, and
the throughput at it is reported per factor.  The factor itself is not inferred from anything; the
table shows which pairs of the two numbers would put the rows in band, not a prediction.

``python -m validation specweb-idle [--out DIR] [--jobs N] [--think-ms 0,25,...] [--per-kb-factors
1,0.85,...]`` writes ``specweb-idle.md`` and ``specweb-idle.json`` (default ``docs/validation``).
"""
from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

from simaccept.costs import load_costs, read_profile
from simaccept.record import RunRecord
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .fitter import check_run_inputs
from .records import WORK, Measured, load_thesis, nan_to_null, scenario_for

#: Client delays swept (ms after each reply).
THINK_GRID_MS = (0.0, 25.0, 50.0, 75.0, 100.0, 125.0, 150.0, 200.0)

#: Factors on the profile's per-KB send costs, swept with the client delay.  ``sendfile_per_kb``
#: (the μserver) and ``tux_per_kb`` (TUX) move together: both send through the same zero-copy
#: tcp_sendpage path, and no calibration row sends a reply of more than one packet, so no row the
#: profile was built on measures either (sensitivity.md: unidentified).  1.0 first: the profile as fitted.
PER_KB_FACTORS = (1.0, 0.85, 0.7, 0.6)
#: The costs each factor scales.
PER_KB_COSTS = ("sendfile_per_kb", "tux_per_kb")

#: One outside measurement of what sending costs on Linux 2.4 with zero-copy sendfile, for scale only:
#: no fit, score or grid uses it.  Andrew Morton, "sendfile+zerocopy: fairly sexy", linux-kernel,
#: 2001-01-27 (http://lkml.iu.edu/hypermail/linux/kernel/0101.3/0674.html): a 650 MHz Pentium III
#: sending over saturated 100baseT (11.5 MB/s; 10**6 bytes, as 2**20 would exceed the link's payload
#: rate) through a 3c59x NIC with scatter/gather and transmit checksums, one interrupt per packet,
#: 2.4.1-pre10 with the zerocopy patch: 18.2 % of the CPU with sendfile().  Counted by what a spinning
#: loop is left, so it holds all of the sender's work: the call, the transmit path, the ACKs it receives,
#: the interrupts.  Scaling it to the thesis's 2.4 GHz Xeon by clock alone ignores the Pentium 4's
#: lower work per clock (which would raise it) and the e1000's interrupt mitigation (which would lower it).
OUTSIDE_SEND_COST = {"source": "http://lkml.iu.edu/hypermail/linux/kernel/0101.3/0674.html",
                     "cpu_share": 0.182, "bytes_per_s": 11.5e6, "clock_mhz": 650.0}
#: The thesis's server clock (sec. 3.2: two 2.4 GHz Xeons, a uniprocessor kernel).
THESIS_CLOCK_MHZ = 2400.0

#: The rows simulated: every SPECweb99-like thesis row with a target rate and a
#: throughput (μserver Accept-1/10/Inf and TUX Accept-1/Inf at 26,000 req/s).
WORKLOAD = "specweb99"


class IdleError(ValueError):
    pass


def implied_open_conns(share_select: float, select_calls_per_s: float, fds_per_select: float,
                       server_cpu_fraction: float, select_base: float, select_per_fd: float,
                       select_per_ready: float) -> float:
    """Open connections select's measured cost per call implies (NaN when an input is missing).

    Costs in microseconds.  Can come out negative: then the measured cost per call is below
    what the fitted cost gives an empty interest set (the cost model, or the server CPU
    fraction, is off for that row).
    """
    vals = (share_select, select_calls_per_s, fds_per_select, server_cpu_fraction)
    if any(not isinstance(v, (int, float)) or math.isnan(v) for v in vals):
        return math.nan
    if select_calls_per_s <= 0 or select_per_fd <= 0:
        raise IdleError("select_calls_per_s and select_per_fd must be > 0")
    per_call_us = share_select * server_cpu_fraction / select_calls_per_s * 1e6
    return (per_call_us - select_base - select_per_ready * fds_per_select) / select_per_fd - 1.0


def implied_open_ratio(share_a: float, calls_a: float, share_b: float, calls_b: float) -> float:
    """open_a / open_b implied by two runs' select shares and call rates (the *ratio reading*).

    If the shares are of the server's user-level time (gprof without kernel time), equal in
    both runs, and select's user-level work per call (building and scanning the fd_sets) is
    proportional to the interest set, the per-call share ratio is the interest-set ratio.
    NaN when an input is missing.
    """
    vals = (share_a, calls_a, share_b, calls_b)
    if any(not isinstance(v, (int, float)) or math.isnan(v) for v in vals):
        return math.nan
    if calls_a <= 0 or calls_b <= 0 or share_b <= 0:
        raise IdleError("select calls and the reference share must be > 0")
    return (share_a / calls_a) / (share_b / calls_b)


def ratio_table(gp: Sequence[Measured], sims: dict[tuple[str, float], RunRecord], think_ms: Sequence[float],
                num: str = "1", den: str = "inf") -> list[dict]:
    """Per delay: implied vs simulated open(Accept-num) / open(Accept-den) for the gprof rows of one workload."""
    by = {m.record.accept_limit: m for m in gp}
    if num not in by or den not in by:
        return []
    a, b = by[num], by[den]
    implied = implied_open_ratio(a.get("cpu_share_select"), a.record.select_calls_per_s,
                                 b.get("cpu_share_select"), b.record.select_calls_per_s)
    out = []
    for th in think_ms:
        sa, sb = sims[(a.label, float(th))], sims[(b.label, float(th))]
        sim = sa.open_conns_mean / sb.open_conns_mean if sb.open_conns_mean > 0 else math.nan
        out.append({"accept_limit": f"{num}/{den}", "think_ms": float(th), "implied_ratio": implied,
                    "sim_ratio": sim, "log_ratio": (math.log(sim / implied) if sim > 0 and implied > 0
                                                    else math.nan)})
    return out


def server_cpu_fraction(rec: RunRecord) -> float:
    """The server process's share of the CPU in a simulated run (gprof's denominator)."""
    return 1.0 - rec.cpu_share_kernel_net - (0.0 if math.isnan(rec.cpu_share_idle) else rec.cpu_share_idle)


def gprof_rows(rows: Iterable[Measured], workload: str) -> list[Measured]:
    """μserver rows of ``workload`` with select's gprof share and table-4.1-style select statistics."""
    return [m for m in rows if m.record.server == "userver" and m.record.workload == workload
            and not math.isnan(m.get("cpu_share_select")) and not math.isnan(m.record.select_calls_per_s)
            and not math.isnan(m.record.fds_per_select) and not math.isnan(m.record.target_rate)]


def throughput_rows(rows: Iterable[Measured], workload: str = WORKLOAD) -> list[Measured]:
    return [m for m in rows if m.record.workload == workload and m.record.server
            and not math.isnan(m.record.target_rate) and not math.isnan(m.record.replies_per_s)]


def per_kib_sent(costs: dict[str, float], mss: int = 1448, send_cost: str = "sendfile_per_kb") -> dict[str, float]:
    """What the model charges per KiB of a long reply, in us, by part.

    ``send``: the server's per-KB send cost; ``tx``: the transmit path's ``k_tx_per_segment``
    per full segment; ``ack``: ``k_ack_rx`` for the client's ACK of every second segment
    (:meth:`simaccept.host.Host.reply_kernel_cost`).  A reply's fixed costs (the call, its
    first segment's odd ACK) are left out: this is the slope, as a bulk transfer measures it.
    """
    return {"send": costs[send_cost], "tx": costs["k_tx_per_segment"] * 1024.0 / mss,
            "ack": costs["k_ack_rx"] * 1024.0 / (2 * mss)}


def outside_per_kib(clock_mhz: float = THESIS_CLOCK_MHZ) -> tuple[float, float]:
    """(:data:`OUTSIDE_SEND_COST` in us of CPU per KiB sent, the same scaled by clock alone to ``clock_mhz``)."""
    o = OUTSIDE_SEND_COST
    us = o["cpu_share"] * 1e6 / (o["bytes_per_s"] / 1024.0)
    return us, us * o["clock_mhz"] / clock_mhz


def per_kb_overrides(costs: dict[str, float], factor: float) -> list[str]:
    """The ``costs.*`` overrides that scale the per-KB send costs (:data:`PER_KB_COSTS`) by ``factor``."""
    return [] if factor == 1.0 else [f"costs.{k}={costs[k] * factor!r}" for k in PER_KB_COSTS]


#: Where the runs are kept (``--cache``): results are keyed by the resolved scenario and the model.
DEFAULT_CACHE = WORK / "out" / "validation-cache" / "specweb-idle"


def simulate_rows(rows: Sequence[Measured], think_ms: Sequence[float], jobs: int = 1,
                  profile: str = "thesis-2004", cost_overrides: Sequence[str] = (),
                  cache: str | Path = DEFAULT_CACHE) -> dict[tuple[str, float], RunRecord]:
    """{(row label, think_ms): simulated record}, each row at its own seed (same at every delay).
    Runs are cached (:func:`validation.fitter.simulate_cached`): the whole analysis is a few hundred
    SPECweb99-like runs, more than an hour on two cores, so an interrupted one resumes."""
    from .fitter import simulate_cached, stderr_progress
    keys, jsons = [], []
    for m in rows:
        for th in think_ms:
            sc = scenario_for(m, overrides=[f"costs.profile={json.dumps(str(profile))}", f"client.think_ms={float(th)!r}",
                                            *cost_overrides])
            keys.append((m.label, float(th)))
            jsons.append(sc.to_json())
    done = simulate_cached(jsons, Path(cache), jobs, source="<specweb-idle>", progress=stderr_progress)
    out = {}
    for k, js in zip(keys, jsons):
        rec = RunRecord(**done[js])
        if rec.status != "ok":
            raise IdleError(f"simulation of {k[0]} at think_ms={k[1]:g} failed: {rec.error}")
        out[k] = rec
    return out


def implied_table(gp: Sequence[Measured], sims: dict[tuple[str, float], RunRecord], think_ms: Sequence[float],
                  costs: dict[str, float]) -> list[dict]:
    """Per (gprof row, delay): implied vs simulated open connections and select share (costs in us)."""
    out = []
    for m in gp:
        r = m.record
        for th in think_ms:
            s = sims[(m.label, float(th))]
            frac = server_cpu_fraction(s)
            implied = implied_open_conns(m.get("cpu_share_select"), r.select_calls_per_s, r.fds_per_select,
                                         frac, costs["select_base"], costs["select_per_fd"],
                                         costs["select_per_ready"])
            out.append({
                "row": m.label, "accept_limit": r.accept_limit, "think_ms": float(th),
                "measured_select_share": m.get("cpu_share_select"),
                "sim_select_share": s.cpu_share_select / frac if frac > 0 else math.nan,
                "server_cpu_fraction": frac,
                "implied_open_conns": implied,
                "sim_open_conns": s.open_conns_mean,
                "log_ratio": (math.log(s.open_conns_mean / implied)
                              if implied > 0 and s.open_conns_mean > 0 else math.nan),
            })
    return out


#: A gprof row can infer the client delay only if the same accept-limit's one-packet control
#: agrees: implied and simulated open connections within this many connections or this
#: fraction of the implied count, whichever is larger.
CONTROL_ABS, CONTROL_REL = 50.0, 0.5


def control_agrees(control: Sequence[dict]) -> dict[str, bool]:
    """{accept_limit: whether its one-packet control row passes} (see CONTROL_ABS / CONTROL_REL)."""
    out = {}
    for t in control:
        imp, sim = t["implied_open_conns"], t["sim_open_conns"]
        out[t["accept_limit"]] = (not math.isnan(imp) and not math.isnan(sim)
                                  and abs(sim - imp) <= max(CONTROL_ABS, CONTROL_REL * abs(imp)))
    return out


def infer_think(table: Sequence[dict], think_ms: Sequence[float], limits: Iterable[str],
                uncrossed: dict | None = None) -> tuple[float, dict]:
    """The client delay at which simulated open connections equal the implied ones, per gprof
    row whose accept-limit is in ``limits`` (linear interpolation of the log ratio between
    the two grid delays where it changes sign); the mean over the rows that cross.

    A row that never crosses within the grid infers nothing; it goes into ``uncrossed`` (when
    given) as ``{accept_limit: "above" | "below" | "undefined"}``: the side the simulation stays
    on at every delay, or no implied count (log ratio NaN) at any.  Raises when no row is usable or none of them crosses."""
    per_row, never = {}, {}
    for lim in limits:
        pts = sorted((t["think_ms"], t["log_ratio"]) for t in table if t["accept_limit"] == lim)
        if not pts:
            continue
        cross = math.nan
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if math.isnan(y0) or math.isnan(y1):
                continue
            if y0 == 0:
                cross = x0
                break
            if y0 < 0 <= y1 or y1 <= 0 < y0:
                cross = x0 + (x1 - x0) * (-y0) / (y1 - y0)
                break
        if math.isnan(cross):
            ys = [y for _, y in pts if not math.isnan(y)]
            never[lim] = "undefined" if not ys else "above" if min(ys) > 0 else "below"
        else:
            per_row[lim] = cross
    if uncrossed is not None:
        uncrossed.update(never)
    if not per_row:
        if never:
            raise IdleError("simulated open connections do not cross the implied ones within "
                            f"{min(think_ms):g}-{max(think_ms):g} ms at any usable accept-limit ("
                            + ", ".join(f"Accept-{k}: {v} at every delay" for k, v in never.items()) + ")")
        raise IdleError("no gprof row passes its one-packet control; the delay cannot be inferred")
    return sum(per_row.values()) / len(per_row), per_row


def prediction_table(rows: Sequence[Measured], sims, think_ms: Sequence[float]) -> list[dict]:
    out = []
    for m in rows:
        for th in think_ms:
            s = sims[(m.label, float(th))]
            meas = m.record.replies_per_s
            out.append({"row": m.label, "server": m.record.server, "accept_limit": m.record.accept_limit,
                        "think_ms": float(th), "measured": meas, "predicted": s.replies_per_s,
                        "error": s.replies_per_s / meas - 1.0, "sim_open_conns": s.open_conns_mean,
                        "sim_accept_rate": s.accept_rate, "measured_accept_rate": m.record.accept_rate})
    return out


def read_delays(gp_spec: Sequence[Measured], gp_one: Sequence[Measured], sims, think_ms: Sequence[float],
                costs: dict[str, float]) -> dict:
    """Both readings of the client delay from one set of simulations (the SPECweb99-like gprof rows
    at every delay of ``think_ms``, the one-packet controls at 0 ms).  The absolute reading may infer
    none (``best_think_ms`` None, ``absolute_reading_error`` says why); raises IdleError when the ratio
    reading infers none either, or when it alone fails."""
    spec_tab = implied_table(gp_spec, sims, think_ms, costs)
    control = implied_table(gp_one, sims, [0.0], costs)
    agrees = control_agrees(control)
    uncrossed: dict = {}
    # The absolute reading rests on the fitted select costs; when none of its controls passes (a fit
    # that makes select's per-fd cost implausibly small, say) it infers nothing, and the file says so
    # with the ratio reading, which does not use the costs.  Only both failing is an error.
    absolute_error = None
    try:
        th_best, per_row = infer_think(spec_tab, think_ms, [k for k, ok in agrees.items() if ok], uncrossed)
        th_best = float(round(th_best))         # ms; finer is below the noise of one 10 s run
    except IdleError as e:
        th_best, per_row, absolute_error = None, {}, str(e)
    ratio_spec = ratio_table(gp_spec, sims, think_ms)
    try:
        th_ratio, _ = infer_think(ratio_spec, think_ms, ["1/inf"])
    except IdleError as e:
        if absolute_error is None:
            raise
        raise IdleError(f"neither reading infers a delay: absolute: {absolute_error}; ratio: {e}") from e
    return {"implied_specweb": spec_tab, "implied_one_packet_control": control, "control_agrees": agrees,
            "inferred_think_ms_by_accept_limit": per_row, "uncrossed_by_accept_limit": uncrossed,
            "best_think_ms": th_best, "absolute_reading_error": absolute_error,
            "ratio_specweb": ratio_spec, "ratio_think_ms": float(round(th_ratio))}


def _simulate_all(rows, gp_spec, gp_one, think_ms, jobs, profile, cost_overrides=(), cache=DEFAULT_CACHE) -> dict:
    labels = {m.label for m in rows}
    sims = simulate_rows(rows + [m for m in gp_spec if m.label not in labels], think_ms, jobs, profile, cost_overrides,
                         cache)
    sims.update(simulate_rows(gp_one, [0.0], jobs, profile, cost_overrides, cache))
    return sims


def _at_delays(rows, sims, think_ms, delays, jobs, profile, cost_overrides=(), cache=DEFAULT_CACHE) -> list[dict]:
    """Predictions at ``delays``, simulating the ones off the grid first (into ``sims``)."""
    extra = sorted(set(delays) - set(think_ms))
    if extra:
        sims.update(simulate_rows(rows, extra, jobs, profile, cost_overrides, cache))
    return prediction_table(rows, sims, sorted(set(delays)))


def per_kb_run(factor: float, rows, gp_spec, gp_one, think_ms, costs, jobs, profile, cache=DEFAULT_CACHE) -> dict:
    """The delay read again and the throughput at it with the per-KB send costs times ``factor``.
    A factor at which neither reading infers a delay is kept, with its error and the 0 ms point."""
    over = per_kb_overrides(costs, factor)
    sims = _simulate_all(rows, gp_spec, gp_one, think_ms, jobs, profile, over, cache)
    try:
        rd = read_delays(gp_spec, gp_one, sims, think_ms, costs)
        th_best, th_ratio, err = rd["best_think_ms"], rd["ratio_think_ms"], None
        abs_err = rd["absolute_reading_error"]
    except IdleError as e:
        th_best = th_ratio = abs_err = None
        err = str(e)
    delays = [0.0] + [t for t in (th_ratio, th_best) if t is not None]
    pred = _at_delays(rows, sims, think_ms, delays, jobs, profile, over, cache)
    return _kb_entry(factor, costs, th_ratio, th_best, abs_err, err, pred)


def _kb_entry(factor: float, costs: dict[str, float], th_ratio, th_best, abs_err, err, pred) -> dict:
    """One factor's line of ``per_kb``: the delays read, the predictions at 0 ms and at them."""
    kept = {0.0} | {t for t in (th_ratio, th_best) if t is not None}
    pred = [p for p in pred if p["think_ms"] in kept]
    return {"factor": factor, "costs": {k: costs[k] * factor for k in PER_KB_COSTS},
            "ratio_think_ms": th_ratio, "best_think_ms": th_best, "absolute_reading_error": abs_err, "error": err,
            "predictions": pred, "within_10pct_as_stated": _within(pred, 0.0),
            "within_10pct_at_ratio_delay": None if th_ratio is None else _within(pred, th_ratio),
            "within_10pct_at_best_think": None if th_best is None else _within(pred, th_best)}


def per_kb_reads(k: dict, as_stated: bool = True) -> list[tuple[str, float, dict]]:
    """(reading, delay ms, within ±10 %) of one ``per_kb`` line: 0 ms when ``as_stated``, then each
    delay read (ratio, absolute) that was."""
    out = [("as stated", 0.0, k["within_10pct_as_stated"])] if as_stated else []
    return out + [(n, k[t], k[w]) for n, t, w in (("ratio", "ratio_think_ms", "within_10pct_at_ratio_delay"),
                                                   ("absolute", "best_think_ms", "within_10pct_at_best_think"))
                  if k[t] is not None]


def run(out: str | Path = "docs/validation", jobs: int = 1, think_ms: Sequence[float] = THINK_GRID_MS,
        profile: str = "thesis-2004", per_kb_factors: Sequence[float] = PER_KB_FACTORS,
        cache: str | Path = DEFAULT_CACHE) -> dict:
    think_ms = sorted({float(t) for t in think_ms})
    if not think_ms or any(not (math.isfinite(t) and t >= 0) for t in think_ms):
        raise IdleError(f"--think-ms: need finite delays >= 0, got {think_ms}")
    if 0.0 not in think_ms:
        think_ms = [0.0] + think_ms             # the workload as stated is always the reference
    factors = list(dict.fromkeys(float(f) for f in per_kb_factors))
    if any(not (math.isfinite(f) and f > 0) for f in factors):
        raise IdleError(f"--per-kb-factors: need factors > 0, got {list(per_kb_factors)}")
    if 1.0 not in factors:
        factors = [1.0] + factors               # the profile as fitted is always the reference
    costs = load_costs(profile).us              # microseconds; KeyError (before any run) if unknown
    cache = check_run_inputs(profile, cache, IdleError)
    thesis = load_thesis()
    gp_spec = gprof_rows(thesis, WORKLOAD)
    gp_one = gprof_rows(thesis, "one-packet")
    rows = throughput_rows(thesis)
    if len(gp_spec) < 2:
        raise IdleError("thesis.csv has fewer than two SPECweb99-like gprof rows")
    # a delay as long as the run (1e300 was taken) leaves each connection one request in it:
    # every point would simulate and read as the same degenerate workload
    run_s = min(float(scenario_for(m)["scenario"]["duration"]) for m in [*rows, *gp_spec, *gp_one])
    long = [t for t in think_ms if t >= run_s * 1000]
    if long:
        raise IdleError(f"--think-ms: {', '.join(f'{t:g}' for t in long)}: a delay must be shorter than the "
                        f"rows' run ({run_s:g} s = {run_s * 1000:g} ms)")
    sims = _simulate_all(rows, gp_spec, gp_one, think_ms, jobs, profile, cache=cache)
    rd = read_delays(gp_spec, gp_one, sims, think_ms, costs)
    th_best, th_ratio = rd["best_think_ms"], rd["ratio_think_ms"]
    inferred = {th_ratio} if th_best is None else {th_best, th_ratio}
    pred = _at_delays(rows, sims, think_ms, set(think_ms) | inferred, jobs, profile, cache=cache)
    kb = [_kb_entry(1.0, costs, th_ratio, th_best, rd["absolute_reading_error"], None, pred)]
    kb += [per_kb_run(f, rows, gp_spec, gp_one, think_ms, costs, jobs, profile, cache) for f in factors if f != 1.0]
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),   # the report flags this file stale when the model changes
        "profile": profile,
        "costs": dict(costs),      # the report flags this file stale when they change
        "think_ms_grid": think_ms,
        "select_cost_us": {k: costs[k] for k in ("select_base", "select_per_fd", "select_per_ready")},
        "implied_specweb": rd["implied_specweb"],
        "implied_one_packet_control": rd["implied_one_packet_control"],
        "control_agrees": rd["control_agrees"],
        "inferred_think_ms_by_accept_limit": rd["inferred_think_ms_by_accept_limit"],
        "uncrossed_by_accept_limit": rd["uncrossed_by_accept_limit"],   # control agrees, but no delay in the grid meets
        "best_think_ms": th_best,                   # None: the absolute reading infers no delay
        "absolute_reading_error": rd["absolute_reading_error"],
        "predictions": pred,
        "heldout_within_10pct_as_stated": _within(pred, 0.0),
        "heldout_within_10pct_at_best_think": None if th_best is None else _within(pred, th_best),
        "writev_evidence": _writev_evidence(gp_one, sims, costs),
        "ratio_reading": {"specweb": rd["ratio_specweb"], "one_packet_control": ratio_table(gp_one, sims, [0.0]),
                          "think_ms": th_ratio, "within_10pct": _within(pred, th_ratio)},
        "per_kb": kb,
    }
    out = Path(out)
    atomic_write(out / "specweb-idle.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "specweb-idle.md", markdown(result))
    return result


def _writev_evidence(gp_one: Sequence[Measured], sims, costs: dict[str, float]) -> dict | None:
    """Table 4.9's writev share at Accept-1 next to what the fitted writev would take of the server's
    CPU (the server's fraction from the simulation of the same row) if gprof counted kernel time."""
    for m in gp_one:
        share = m.get("cpu_share_writev")
        if m.record.accept_limit == "1" and not math.isnan(share) and not math.isnan(m.record.replies_per_s):
            frac = server_cpu_fraction(sims[(m.label, 0.0)])
            calls = m.record.replies_per_s                      # one writev per reply (one-packet)
            return {"row": m.label, "measured_share": share, "calls_per_s": calls, "cost_us": costs["writev"],
                    "kernel_inclusive_share": calls * costs["writev"] * 1e-6 / frac}
    return None


def _within(pred: Sequence[dict], th: float) -> dict:
    cells = [p for p in pred if p["think_ms"] == th]
    ok = sum(abs(p["error"]) <= 0.10 for p in cells)
    return {"within": ok, "cells": len(cells)}


def _f(v, fmt="{:,.0f}") -> str:
    return "–" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def markdown(res: dict) -> str:
    c = res["select_cost_us"]
    th = res["best_think_ms"]
    rr = res["ratio_reading"]
    thr = rr["think_ms"]
    wv = res.get("writev_evidence") or {}
    # orphan: reached from index.md's link, in no toctree (Sphinx would warn)
    L = ["---", "orphan: true", "---", "", "# SPECweb99-like: what select's measured cost says about open connections", "",
         f"Generated {res['generated_at']} by `python -m validation specweb-idle` (profile `{res['profile']}`). "
         "Method in `validation/specweb_idle.py`.  No throughput is used to read the delays below.", "",
         "The thesis gives select's share of the μserver's time (gprof, tables 4.3 and 4.9) and select calls per "
         "second (tables 4.1, 4.7).  It does not say whether gprof's time includes the kernel's, so there are two "
         "readings:", "",
         "* **absolute**: the share is of the server's CPU, kernel time in the call included.  Times the server's "
         "CPU fraction (from the simulation of the same row) and divided by the call rate, it is select's cost per "
         f"call; less the fitted cost of an empty call (select_base {c['select_base']:.2f} us) and of the fds "
         f"returned ({c['select_per_ready']:.2f} us each), over select_per_fd ({c['select_per_fd']:.3f} us), it is "
         "the interest set;",
         "* **ratio**: the share is of the μserver's own user-level time (gprof histograms the program's text; time "
         "in libc and the kernel falls outside), and select's is the fd_set building and scanning, also "
         "proportional to the interest set.  Only ratios between runs then mean anything: open(Accept-1) / "
         "open(Accept-Inf) = (share / calls at Accept-1) / (share / calls at Accept-Inf).", ""]
    if wv:
        L += [f"For the ratio reading: table 4.9 gives writev {wv['measured_share']:.2%} of the time at Accept-1, "
              f"{wv['calls_per_s']:,.0f} calls/s; the fitted writev ({wv['cost_us']:g} us) would make that "
              f"{wv['kernel_inclusive_share']:.1%} of the server's CPU in a profile that counted kernel time.", ""]
    L += ["## Absolute reading", "", "Control, one-packet (the rows the costs were fitted on):", "",
          "| row | select share (thesis / sim) | implied open conns | sim open conns |", "|---|---|---|---|"]
    for t in res["implied_one_packet_control"]:
        L.append(f"| {t['row']} | {t['measured_select_share']:.1%} / {t['sim_select_share']:.1%} | "
                 f"{_f(t['implied_open_conns'])} | {_f(t['sim_open_conns'])} |")
    L += ["", "SPECweb99-like, by client delay after each reply:", "",
          "| client delay (ms) | row | select share (thesis / sim) | implied open conns | sim open conns |",
          "|---|---|---|---|---|"]
    for t in res["implied_specweb"]:
        L.append(f"| {t['think_ms']:g} | {t['row']} | {t['measured_select_share']:.1%} / "
                 f"{t['sim_select_share']:.1%} | {_f(t['implied_open_conns'])} | {_f(t['sim_open_conns'])} |")
    ag = res["control_agrees"]
    used = res["inferred_think_ms_by_accept_limit"]
    unx = res.get("uncrossed_by_accept_limit", {})
    L += ["", "A row infers the delay only if its accept-limit's one-packet control agrees (implied and simulated "
          f"open connections within {CONTROL_ABS:g} connections or {CONTROL_REL:.0%}): "
          + ", ".join(f"Accept-{k}: {'agrees' if v else 'does not'}" for k, v in ag.items()) + ".  "
          "Where the control disagrees the simulator's own count of open connections is off on the fitted rows, so "
          "that row cannot tell a client delay from that miss.  "
          + ((f"This reading infers no delay at these costs: {res.get('absolute_reading_error')}." if th is None else
              "Delay where simulated and implied "
              "open connections meet: " + ", ".join(f"Accept-{k}: {v:.1f} ms" for k, v in used.items())
              + "".join(f", Accept-{k}: none (" + ("no implied count at any delay" if v == "undefined" else
                                                 f"the simulation's count stays {v} the implied one at every delay "
                                                 "of the grid") + ", so this row infers no delay)"
                        for k, v in unx.items())
              + f"; used: **{th:g} ms**.")), "",
          "## Ratio reading", "",
          "| workload | client delay (ms) | implied open(1)/open(Inf) | simulated |", "|---|---|---|---|"]
    for t in rr["one_packet_control"]:
        L.append(f"| one-packet (control) | {t['think_ms']:g} | {t['implied_ratio']:.3f} | {t['sim_ratio']:.3f} |")
    for t in rr["specweb"]:
        L.append(f"| SPECweb99-like | {t['think_ms']:g} | {t['implied_ratio']:.3f} | {t['sim_ratio']:.3f} |")
    # the delays inferred: (label, ms); the absolute reading's only when it inferred one
    cols = [("ratio", thr)] + ([] if th is None else [("absolute", th)])
    L += ["", f"Delay where the ratios meet (interpolated): **{thr:g} ms**.  The control is off by the factor "
          "shown, perhaps because its Accept-1 set is a few connections, where select's fixed cost rather than the "
          "set dominates.", "",
          "## Throughput: as stated (0 ms) and at the inferred delays", "",
          "The 0 ms column is the held-out prediction the report scores.  The others are conditional: their "
          "delays were read off tables 4.1, 4.3 and 4.9, not off throughput, but from the same rows, so they are "
          "not held-out.", "",
          "| row | thesis replies/s | sim at 0 ms | " + " | ".join(f"sim at {v:g} ms ({k})" for k, v in cols)
          + " | thesis accepts/s | sim at " + " / ".join(f"{v:g}" for v in [0.0] + [v for _, v in cols]) + " ms |",
          "|---|---|---|" + "---|" * len(cols) + "---|---|"]
    by = {(p["row"], p["think_ms"]): p for p in res["predictions"]}
    for row in dict.fromkeys(p["row"] for p in res["predictions"]):
        a = by[(row, 0.0)]
        at = [by[(row, v)] for _, v in cols]
        L.append(f"| {row} | {_f(a['measured'])} | {_f(a['predicted'])} ({a['error']:+.1%}) | "
                 + "".join(f"{_f(b['predicted'])} ({b['error']:+.1%}) | " for b in at)
                 + f"{_f(a['measured_accept_rate'])} | "
                 + " / ".join(_f(b["sim_accept_rate"]) for b in [a] + at) + " |")
    w0, wb, wr = res["heldout_within_10pct_as_stated"], res["heldout_within_10pct_at_best_think"], rr["within_10pct"]
    L += ["", f"Within ±10 %: {w0['within']} of {w0['cells']} as stated, {wr['within']} at {thr:g} ms"
          + ("" if th is None else f", {wb['within']} at {th:g} ms") + ".", "",
          "Under either reading the thesis's Accept-1 kept far more connections open than the simulator's "
          "back-to-back clients do; how many depends on the reading, so the delay is a range, not a value.  A "
          "delay per request is one explanation, not a finding: the thesis states none, and lost packets "
          "recovered by retransmission timeouts (not modelled) would also keep connections open longer.  TUX has "
          "no select; its rows show whether the delay alone explains TUX's miss.", ""]
    L += per_kb_markdown(res)
    full = sorted(res["predictions"], key=lambda p: (p["row"], p["think_ms"]))
    L += ["## Every simulated point", "", "| row | client delay (ms) | replies/s | error | open conns | accepts/s |",
          "|---|---|---|---|---|---|"]
    for p in full:
        L.append(f"| {p['row']} | {p['think_ms']:g} | {_f(p['predicted'])} | {p['error']:+.1%} | "
                 f"{_f(p['sim_open_conns'])} | {_f(p['sim_accept_rate'])} |")
    return "\n".join(L) + "\n"


def _short(row: str) -> str:
    """``userver/specweb99/select/accept-inf@26000`` -> ``userver Accept-Inf``."""
    server, _, _, rest = row.split("/", 3)
    limit = rest.split("@")[0].removeprefix("accept-")
    return f"{server} Accept-{'Inf' if limit == 'inf' else limit}"


def per_kb_markdown(res: dict) -> list[str]:
    """The client delay and the per-KB send cost together: one table row per (factor, delay read)."""
    kb = res.get("per_kb") or []
    if len(kb) < 2:
        return []
    rows = list(dict.fromkeys(p["row"] for p in kb[0]["predictions"]))
    names = " / ".join(f"`{k}`" for k in PER_KB_COSTS)
    L = ["## Two numbers no calibration row measures: the client delay and the per-KB send cost", "",
         f"No calibration row sends a reply of more than one packet, so nothing the profile was built on measures "
         f"the per-KB cost of sending one ({names}, hand-set a priori; sensitivity.md: unidentified).  Below, both "
         "are scaled by each factor, the delay is read again from the select statistics at those costs (both "
         "readings, as above), and the rows are simulated at it.  The factor is not inferred from anything: the "
         "table shows which pairs of the two numbers put the rows within ±10 %, not a prediction.", "",
         "| per-KB send cost | client delay | " + " | ".join(_short(r) for r in rows) + " | within ±10 % |",
         "|---|---|" + "---|" * len(rows) + "---|"]
    for k in kb:
        cost = " / ".join(f"{v:.2f}" for v in k["costs"].values()) + f" µs/KB (x{k['factor']:g})"
        by = {(p["row"], p["think_ms"]): p for p in k["predictions"]}
        for label, th, w in per_kb_reads(k):
            L.append(f"| {cost} | {th:g} ms ({label}) | "
                     + " | ".join(f"{by[(r, th)]['error']:+.1%}" for r in rows) + f" | {w['within']} of {w['cells']} |")
        if k.get("error"):
            L.append(f"| {cost} | no delay read: {k['error']} |" + " |" * len(rows) + " |")
    L += ["", outside_per_kib_markdown(res.get("profile"), kb)]
    return L


def outside_per_kib_markdown(profile: str | None, kb: list[dict[str, Any]]) -> str:
    """One outside measurement of a Linux 2.4 sender's cost per KiB, next to what the model charges per KiB."""
    try:
        costs = read_profile(profile or "thesis-2004")
    except (KeyError, ValueError) as e:
        return f"(The outside figure for the per-KB cost is not shown: profile {profile!r}: {e}.)\n"
    raw, scaled = outside_per_kib()
    charged = []
    for k in kb:
        parts = per_kib_sent({**costs, **k["costs"]})
        charged.append(f"{sum(parts.values()):.2f} at {k['costs']['sendfile_per_kb']:.2f} µs/KB")
    p1 = per_kib_sent(costs)
    return ("For scale only, one outside measurement: a 650 MHz Pentium III sending with Linux 2.4's zero-copy "
            "sendfile (A. Morton, linux-kernel, 2001-01-27; 100baseT, transmit checksums in the NIC, one interrupt "
            f"per packet) spent {raw:.1f} µs of CPU per KiB sent, all of the sender's work counted: by clock alone "
            f"{scaled:.1f} µs/KiB on the thesis's 2.4 GHz Xeon.  The model charges per KiB of a long reply the "
            f"per-KB send cost, the transmit path ({p1['tx']:.2f}: k_tx_per_segment per segment) and the client's "
            f"ACKs ({p1['ack']:.2f}: k_ack_rx every second segment): " + ", ".join(charged) + ".  It gives no "
            "reason to lower the per-KB cost; it cannot choose between these either (one run, another "
            "microarchitecture and NIC, scaled by clock alone).  Not used by any fit or score.\n")

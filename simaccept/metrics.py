"""Metrics: the RunRecord computed from per-connection rows and phase counters.

Counters (server statistics, drop counters, CPU time) are snapshotted when
the warm-up ends and when the run stops; the record holds the differences
divided by the measured time.  Client-side figures come from the
per-request rows (reply received at, response time) and per-connection rows
(outcome, connect time), restricted to the measured window.

Confidence intervals are 95 % batch means: the measured window is cut into
``scenario.batches`` equal batches, and the half-width is
``t(0.975, B-1) * s / sqrt(B)`` over the batch values.
"""
from __future__ import annotations

import math

import numpy as np
from scipy import stats as sps

from .host import O_ABANDONED, O_TIMEDOUT
from .kernel import Drop


class MeasurementError(RuntimeError):
    """The run finished but its measured window holds no measurement of the server: the
    record is failed with this message alone (no traceback: not a bug in the simulator)."""


def snapshot(t, host, server) -> dict:
    ls = host.lsock
    return {
        "t": t,
        "stats": dict(server.stats),
        "drops": list(ls.drops),
        "server_time": dict(host.cpu.server_time),
        "kernel_time": dict(host.cpu.kernel_time),
        "accepted_dead": host.accepted_dead,
        "softirq_runs": host.softirq_runs,
    }


def batch_ci(values: np.ndarray) -> float:
    values = np.asarray(values, dtype=float)      # a list was a bare TypeError
    v = values[np.isfinite(values)]
    if len(v) < 2:
        return math.nan
    return float(sps.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))


def per_connection_rows(host) -> dict[str, np.ndarray]:
    """One row per connection attempt (Ciw style), as columns: {name: array}, in the order the
    clients opened them.  ``host`` is the second value of ``simulate(sc, return_host=True)``.
    Times are seconds of simulated time from the start of the run, warm-up included; NaN where the
    connection never got there.

    * ``t_first_syn``: the client sent its first SYN;
    * ``syns_sent``: its SYNs that reached the server's host while the client was still trying
      (the first, and a retransmission after each drop; 0 if the first was still on the wire
      when the run stopped);
    * ``t_established``: the SYN-ACK reached the client (its side of the handshake);
    * ``t_accepted``: the server's accept() returned it;
    * ``t_closed``: the server's close() of it returned (open from ``t_accepted`` to here);
    * ``t_done``: the client received its last reply (completed), or gave up (timed out,
      abandoned);
    * ``outcome``: an index into :data:`simaccept.host.OUTCOME_NAMES`: in_flight (undecided
      when the run stopped), completed (every request answered), timed_out (connected before the
      client acted on its deadline, which is ``client.timer_lag_ms`` after it: a reply missed
      the deadline, or, for a handshake completed within that lag, the client closed the
      connection without a request, a dead accept), abandoned (not connected by then);
    * ``requests``: the requests it was to make (1 for one-packet; 1, or 5 to 15, for
      SPECweb99-like);
    * ``replies``: the replies it received in time.

    The run's record counts replies and response times by when a reply arrived in its measured
    window, and connections by when they opened in it (``conn_attempts_per_s``, ``connect_ms_mean``)
    or gave up (``client_timeouts``).  That window opens at the server's first pass through its loop
    at or after the warm-up (later after a long Accept-Inf work-phase) and closes where the run
    stopped; the record keeps only its length, ``duration_s``.  Rows are selected here by what the
    caller asks (``t_first_syn >= warmup`` for the connections opened after the warm-up).
    docs/tutorial.md, *One row per connection*; tests/simaccept/test_metrics.py recomputes the
    record's figures from the rows."""
    t0 = np.asarray(host.t0)
    t_est = np.asarray(host.t_est)
    return {
        "t_first_syn": t0,
        "syns_sent": np.asarray(host.syn_k),
        "t_established": np.where(t_est >= 0, t_est, np.nan),
        "t_accepted": np.where(np.asarray(host.t_acc) >= 0, np.asarray(host.t_acc), np.nan),
        "t_closed": np.where(np.asarray(host.t_closed) >= 0, np.asarray(host.t_closed), np.nan),
        "t_done": np.where(np.asarray(host.t_done) >= 0, np.asarray(host.t_done), np.nan),
        "outcome": np.asarray(host.outcome),
        "requests": np.asarray(host.nreq),
        "replies": np.asarray(host.replies),
    }


def compute(sc, host, server, w: dict, e: dict) -> dict:
    dur = e["t"] - w["t"]
    if dur <= 0:    # simulate() refuses a warm snapshot taken at or after the stop first
        raise MeasurementError(f"measured window is empty (from {w['t']:g} s to {e['t']:g} s)")
    tw, te = w["t"], e["t"]
    out: dict = {"duration_s": dur}
    ds = {k: e["stats"][k] - w["stats"][k] for k in e["stats"]}

    # replies and response time, by the time the reply was received
    rt = np.asarray(host.resp_t)
    rv = np.asarray(host.resp_v)
    m = (rt >= tw) & (rt < te)
    rt_m, rv_m = rt[m], rv[m]
    out["replies_per_s"] = len(rt_m) / dur
    B = sc["scenario"]["batches"]
    edges = np.linspace(tw, te, B + 1)
    idx = np.clip(np.searchsorted(edges, rt_m, side="right") - 1, 0, B - 1)
    counts = np.bincount(idx, minlength=B).astype(float)
    out["replies_per_s_ci"] = batch_ci(counts / (dur / B))
    if len(rv_m):
        out["resp_ms_mean"] = float(rv_m.mean() * 1e3)
        out["resp_ms_p50"] = float(np.percentile(rv_m, 50) * 1e3)
        out["resp_ms_p99"] = float(np.percentile(rv_m, 99) * 1e3)
        sums = np.bincount(idx, weights=rv_m, minlength=B)
        with np.errstate(invalid="ignore", divide="ignore"):
            out["resp_ms_mean_ci"] = batch_ci(sums / counts * 1e3)

    # the per-connection columns these metrics need (per_connection_rows has them all;
    # converting the other lists too costs ~10 % of a million-connection run)
    t0 = np.asarray(host.t0)
    started = (t0 >= tw) & (t0 < te)
    out["conn_attempts_per_s"] = float(started.sum() / dur)
    t_est = np.asarray(host.t_est)[started]
    est = t_est[t_est >= 0] - t0[started][t_est >= 0]
    if len(est):
        out["connect_ms_mean"] = float(est.mean() * 1e3)
    td = np.asarray(host.t_done)
    outcome = np.asarray(host.outcome)
    gave_up = ((outcome == O_TIMEDOUT) | (outcome == O_ABANDONED)) & (td >= tw) & (td < te)
    out["client_timeouts"] = float(gave_up.sum() / dur)
    # Not an unmeasured NaN: no path in the model sends a client a reset (tcp_abort_on_overflow
    # is off, as in every run the thesis and realsys made, and the servers close with a FIN),
    # so the count is 0 by the model's own rules; a reset the model has goes to the server.
    out["client_resets"] = 0.0

    # server statistics (thesis tables 4.2, 4.7, 4.8)
    out["accept_rate"] = ds["accepts"] / dur
    out["n_accept_phases"] = float(ds["accept_phases"])
    out["c_avg"] = ds["accepts"] / ds["accept_phases"] if ds["accept_phases"] else math.nan
    out["accepts_eagain"] = float(ds["accepts_eagain"])
    out["select_calls_per_s"] = ds["getevents_calls"] / dur
    out["fds_per_select"] = ds["fds_returned"] / ds["getevents_calls"] if ds["getevents_calls"] else math.nan
    out["fd_rate"] = ds["fds_returned"] / dur
    out["work_items_per_phase"] = ds["work_items"] / ds["work_phases"] if ds["work_phases"] else math.nan
    # each connection is open from accept() to the server's close() (or the run's end): the
    # window's share of that, summed, is the time-average of the open set, exact whatever the
    # loop (until 3 Dec a sum taken at the loop's passes, which counted time before the window
    # and missed its tail where Knot's scheduler passes were seconds apart)
    ta = np.asarray(host.t_acc)
    tc = np.asarray(host.t_closed)
    acc = ta >= 0
    ta, tc = ta[acc], tc[acc]
    span = np.minimum(np.where(tc >= 0, tc, te), te) - np.maximum(ta, tw)
    out["open_conns_mean"] = float(span[span > 0].sum() / dur)

    # queue drops (thesis 5.1.1)
    dd = [e["drops"][i] - w["drops"][i] for i in range(4)]
    out["drops_synq_full"] = float(dd[Drop.SYNQ_FULL])
    out["drops_acceptq_full"] = float(dd[Drop.ACCEPTQ_FULL])
    out["drops_drop_request"] = float(dd[Drop.DROP_REQUEST])
    out["drops_listen_overflow"] = float(dd[Drop.LISTEN_OVERFLOW])
    out["qdrops_per_s"] = sum(dd) / dur

    # CPU shares of the measured wall time
    busy = 0.0
    for cat in sorted((set(e["server_time"]) | set(w["server_time"])) - {"_k"}):
        v = e["server_time"].get(cat, 0.0) - w["server_time"].get(cat, 0.0)
        out[f"cpu_share_{cat}"] = v / dur
        busy += v
    kn = e["kernel_time"].get("kernel_net", 0.0) - w["kernel_time"].get("kernel_net", 0.0)
    out["cpu_share_kernel_net"] = kn / dur
    out["softirq_runs_per_s"] = (e["softirq_runs"] - w["softirq_runs"]) / dur
    busy += kn
    out["cpu_share_idle"] = max(0.0, 1.0 - busy / dur)
    return out

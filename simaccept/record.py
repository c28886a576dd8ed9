"""One record per run: the schema every source (sim, real, paper) shares.

A :class:`RunRecord` is one flat row.  Simulated runs, measured realsys runs
and numbers transcribed from the thesis all become the same columns, so
comparing them is a join, not a translation.  A field a source cannot measure
is NaN (or the empty string for text), never invented.

The column list is the contract with ``realsys`` and ``validation``; add
columns at the end, never rename.
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Mapping

#: Syscall / activity names whose CPU shares are recorded as ``cpu_share_<name>``.
CPU_CATEGORIES = (
    "select", "poll", "epoll", "accept", "read", "write", "writev", "sendfile",
    "close", "setsockopt", "user", "kernel_net", "idle",
)

_TEXT = ("source", "scenario", "point", "server", "mux", "accept_limit", "policy",
         "workload", "kernel_profile", "cost_profile", "git_rev", "host",
         "started_at", "status", "error", "config", "costs")


@dataclasses.dataclass
class RunRecord:
    """A run's results; numbers default to NaN (not measured)."""

    # identity ---------------------------------------------------------------
    source: str = ""            # sim | real | paper
    scenario: str = ""
    point: str = ""             # the sweep coordinates in schema order, "server.accept_limit=1;workload.rate=20000.0"
    server: str = ""            # userver | tux | knot | nginx
    mux: str = ""               # select | poll | epoll | "" (tux, knot)
    accept_limit: str = ""      # "1", "10", "inf"
    policy: str = ""            # accept-limit | adaptive-closed | queue-aware | time-budget
    workload: str = ""          # one-packet | specweb99
    target_rate: float = math.nan   # requests/s offered
    duration_s: float = math.nan    # measured period (warm-up excluded): from scenario.warmup to warmup +
                                    # duration_s s after t = 0 (simulated time, or the load generator's
                                    # start in a real run); config holds the warm-up
    # throughput -------------------------------------------------------------
    replies_per_s: float = math.nan
    replies_per_s_ci: float = math.nan     # 95 % half-width (batch means)
    conn_attempts_per_s: float = math.nan  # new connections offered per second
    accept_rate: float = math.nan
    n_accept_phases: float = math.nan    # sim μserver: loops whose getevents found the listener ready
    c_avg: float = math.nan              # accepts / n_accept_phases; the thesis's μserver counts every
                                         # loop (accept_rate / select_calls_per_s: validation.report.userver_c_avg)
    accepts_eagain: float = math.nan
    select_calls_per_s: float = math.nan   # getevents calls/s, whatever the mux
    fds_per_select: float = math.nan
    fd_rate: float = math.nan
    work_items_per_phase: float = math.nan
    open_conns_mean: float = math.nan
    # queue drops (per second and by category, counts over the measured period)
    qdrops_per_s: float = math.nan
    drops_synq_full: float = math.nan
    drops_acceptq_full: float = math.nan
    drops_drop_request: float = math.nan
    drops_listen_overflow: float = math.nan
    # client view ------------------------------------------------------------
    resp_ms_mean: float = math.nan
    resp_ms_mean_ci: float = math.nan
    resp_ms_p50: float = math.nan
    resp_ms_p99: float = math.nan
    connect_ms_mean: float = math.nan
    client_timeouts: float = math.nan      # per second
    client_resets: float = math.nan        # per second
    # CPU shares (fractions of the measured wall time; a threaded server's blocking call
    # sums its threads' time in the call, waiting included, and can exceed 1) ---------
    cpu_share_select: float = math.nan
    cpu_share_poll: float = math.nan
    cpu_share_epoll: float = math.nan
    cpu_share_accept: float = math.nan
    cpu_share_read: float = math.nan
    cpu_share_write: float = math.nan
    cpu_share_writev: float = math.nan
    cpu_share_sendfile: float = math.nan
    cpu_share_close: float = math.nan
    cpu_share_setsockopt: float = math.nan
    cpu_share_user: float = math.nan
    cpu_share_kernel_net: float = math.nan
    cpu_share_idle: float = math.nan
    # provenance ---------------------------------------------------------------
    seed: float = math.nan     # a float (nan: none, as a paper's row), exact to 2**53; config holds it whole
    kernel_profile: str = ""
    cost_profile: str = ""
    git_rev: str = ""
    host: str = ""
    started_at: str = ""
    wall_s: float = math.nan
    status: str = "ok"          # ok | failed
    error: str = ""
    config: str = ""            # the resolved scenario as JSON
    # added after the first release (columns are only ever appended) ---------------
    softirq_runs_per_s: float = math.nan   # kernel packet-work runs (NET_RX softirqs) per second
    costs: str = ""             # the resolved costs the run charged, JSON (µs, one a count; sim only): config names the
                                # profile, and a profile refitted after the run would read as the one it used

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json(self) -> str:
        # JSON has no NaN; null is the honest "not measured".
        # .item(): a NumPy scalar set on a field (np.float32) is not JSON
        return json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                           for k, v in ((k, v.item() if hasattr(v, "item") and hasattr(v, "dtype") else v)
                                        for k, v in self.to_dict().items())}, sort_keys=False)

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> "RunRecord":
        """Build from a CSV/JSON row; unknown keys are refused, empty cells are NaN (a text
        column's empty cell, None or NaN as pandas reads it, is "")."""
        if not isinstance(row, Mapping):
            raise TypeError(f"a record row is a mapping of column to value, got {type(row).__name__}")
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise ValueError(f"unknown record column(s): {', '.join(sorted(unknown))}")
        kw: dict[str, Any] = {}
        for name, value in row.items():
            if name in _TEXT:
                missing = value is None or (isinstance(value, float) and math.isnan(value))
                kw[name] = "" if missing else str(value)
            else:
                if value is None or value == "":
                    kw[name] = math.nan
                else:
                    try:
                        if isinstance(value, bool):     # float(True) is 1.0
                            raise TypeError
                        kw[name] = float(value)
                    except (TypeError, ValueError, OverflowError):
                        raise ValueError(f"record column {name!r}: not a number: {value!r}") from None
        return cls(**kw)


#: Column order of every CSV this project writes.
COLUMNS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RunRecord))

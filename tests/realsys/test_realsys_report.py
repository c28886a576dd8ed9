"""realsys.report: which rows are repetitions of one point and which are series of their own."""
from __future__ import annotations

import pytest

from realsys.report import summarize
from realsys.runner import append_record
from simaccept.record import RunRecord


def _rec(point, limit, rate, replies, status="ok", seed=2004.0):
    return RunRecord(source="real", point=point, server="userver", mux="select", accept_limit=limit,
                     target_rate=rate, replies_per_s=replies, conn_attempts_per_s=rate, duration_s=4.0,
                     status=status, seed=seed)


@pytest.mark.parametrize("rows,want", [
    # seeds are repetitions: one series, mean of the two
    ([_rec("server.accept_limit=1;workload.rate=4800.0", "1", 4800.0, 3400.0, seed=11.0),
      _rec("server.accept_limit=1;workload.rate=4800.0", "1", 4800.0, 3600.0, seed=12.0)],
     {"userver/select/accept-1": (3500.0, 2)}),
    # another swept axis is a series of its own, not a repetition
    ([_rec("server.accept_limit=1;workload.rate=4800.0;client.timeout=0.25", "1", 4800.0, 3505.0),
      _rec("server.accept_limit=1;workload.rate=4800.0;client.timeout=10.0", "1", 4800.0, 3085.0)],
     {"userver/select/accept-1/client.timeout=0.25": (3505.0, 1),
      "userver/select/accept-1/client.timeout=10.0": (3085.0, 1)}),
    # a failed row (measured off its window) is left out
    ([_rec("server.accept_limit=inf;workload.rate=2800.0", "inf", 2800.0, 2800.0),
      _rec("server.accept_limit=inf;workload.rate=2800.0", "inf", 2800.0, 2801.0, status="failed")],
     {"userver/select/accept-inf": (2800.0, 1)}),
])
def test_series(tmp_path, rows, want):
    for r in rows:
        append_record(tmp_path / "results.csv", r)
    pol = summarize(tmp_path)["policies"]
    got = {lab: (p["replies_per_s"][next(iter(p["replies_per_s"]))], next(iter(p["runs_per_rate"].values())))
           for lab, p in pol.items()}
    assert got == want

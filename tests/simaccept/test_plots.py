"""Thesis-style sweep figures: a figure is written only when it has a line to show."""
import math

import pytest

from simaccept.plots import thesis_plots
from simaccept.record import RunRecord

pytest.importorskip("matplotlib")


def _rec(server, rate, select_calls, fds):
    return RunRecord(source="sim", scenario="s", server=server, accept_limit="1", policy="accept-limit",
                     target_rate=rate, replies_per_s=0.9 * rate, qdrops_per_s=0.0, resp_ms_mean=1.0,
                     select_calls_per_s=select_calls, fds_per_select=fds, status="ok")


def test_tux_gets_no_getevents_figures_and_an_earlier_one_is_removed(tmp_path):
    # TUX has no getevents phase: its sweep drew select-rate as a flat 0 and fds-per-select as an empty frame
    stale = tmp_path / "select-rate.png"
    stale.write_bytes(b"an earlier userver sweep's figure")
    written = thesis_plots([_rec("tux", r, 0.0, math.nan) for r in (1000.0, 2000.0)], tmp_path, formats=("png",))
    names = sorted(p.name for p in written)
    assert names == ["queue-drops.png", "response-time.png", "throughput.png"]
    assert not stale.exists() and not (tmp_path / "fds-per-select.png").exists()


def test_userver_gets_all_five(tmp_path):
    written = thesis_plots([_rec("userver", r, 500.0, 2.0) for r in (1000.0, 2000.0)], tmp_path, formats=("png",))
    assert len(written) == 5 and all(p.stat().st_size > 1000 for p in written)

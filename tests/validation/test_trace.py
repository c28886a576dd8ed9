"""validation.trace: the server loop in steps within a run, from runs of growing length."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

import simaccept
from simaccept.sim import simulate
from validation import trace
from validation.cli import main
from validation.records import load_thesis, record_seed

INF27 = "userver/one-packet/select/accept-inf@27000"


def _run(T, seed=7, rate=27000, limit="inf", server="userver"):
    sc = simaccept.load_scenario(f"scenarios/thesis/{server}-onepacket.toml", overrides=[
        f"workload.rate={rate}", f"server.accept_limit={limit}", "scenario.warmup=0", f"scenario.duration={T}",
        f"scenario.seed={seed}", "costs.profile=thesis-2004"])
    return simulate(sc, return_host=True)


@pytest.mark.parametrize("server, rate, limit", [("userver", 27000, "1"), ("userver", 27000, "inf"),
                                                  ("knot", 15000, "50"), ("knot", 30000, "50")])
def test_a_shorter_one_packet_run_is_the_start_of_a_longer_one(server, rate, limit):
    # What differencing relies on: every connection that finished in the 1.5 s run has the same
    # times and outcome in the 3 s run (the μserver overloaded: drops, retransmissions, the 3/4 rule
    # all happen; Knot with its threads and scheduler, at and past its Accept-50 peak).
    (short, hs), (_, hl) = _run(1.5, rate=rate, limit=limit, server=server), _run(3.0, rate=rate, limit=limit, server=server)
    if server == "userver":
        assert short.drops_drop_request + short.drops_acceptq_full + short.drops_listen_overflow > 0
    td = np.asarray(hs.t_done)
    done = (td >= 0) & (td < 1.5)
    assert done.sum() > 10_000
    for col in ("t0", "t_est", "t_done", "outcome"):
        a, b = np.asarray(getattr(hs, col)), np.asarray(getattr(hl, col))[:len(hs.t0)]
        assert np.array_equal(a[done], b[done]), col


def test_run_ends_are_steps_then_the_window():
    assert trace.run_ends(123.0, 20) == [20, 40, 60, 80, 100, 120, 123.0]
    assert trace.run_ends(120.0, 20) == [20, 40, 60, 80, 100, 120.0]
    assert trace.run_ends(3.0, 1) == [1, 2, 3.0]


def _rec(dur, replies, accepts, loops, fds, dr=0.0, lo=0.0, aq=0.0):
    return {"duration_s": dur, "replies_per_s": replies / dur, "accept_rate": accepts / dur,
            "select_calls_per_s": loops / dur, "fds_per_select": fds / loops if loops else math.nan,
            "drops_drop_request": dr, "drops_listen_overflow": lo, "drops_acceptq_full": aq, "drops_synq_full": 0.0,
            "open_conns_mean": 0.0}


def test_steps_difference_the_totals():
    st = trace.steps([10, 20], [_rec(10, 1000, 1000, 100, 500, dr=30, aq=10), _rec(20, 3000, 3100, 110, 600, dr=30, aq=50)])
    assert [s["span_s"] for s in st] == [10, 10]
    assert st[0]["loops_per_s"] == pytest.approx(10) and st[0]["accepts_per_loop"] == pytest.approx(10)
    assert st[1]["t0"] == 10 and st[1]["replies_per_s"] == pytest.approx(200)
    assert st[1]["accepts_per_loop"] == pytest.approx(2100 / 10) and st[1]["fds_per_select"] == pytest.approx(10)
    assert st[1]["drop_shares"]["AcceptQFull"] == pytest.approx(100) and st[1]["drop_shares"]["DropRequest"] == 0
    assert math.isnan(trace.steps([5], [_rec(5, 0, 0, 0, 0)])[0]["accepts_per_loop"])


def test_a_total_that_falls_is_not_a_prefix():
    with pytest.raises(trace.TraceError, match="accepts fell from 1000 to 900 between the 10 s and 20 s runs"):
        trace.steps([10, 20], [_rec(10, 1000, 1000, 100, 500), _rec(20, 1200, 900, 110, 600)], "r")


def test_run_writes_steps_that_add_up_to_the_whole_window_and_caches(tmp_path):
    m = next(m for m in load_thesis() if m.label == INF27)
    res = trace.run(out=tmp_path, n=2, step=1, rows=[INF27], until=3, cache=tmp_path / "cache")
    assert [t["seed"] for t in res["traces"]] == [record_seed(m.record), record_seed(m.record) + 1]
    for t in res["traces"]:
        assert t["ends"] == [1, 2, 3.0] and len(t["steps"]) == 3
        w = t["whole"]
        # the steps' totals are the whole run's (the 3 s run is the last of the lengths), over its
        # actual length: a run ends with its server's last loop, a few ms past 3 s
        span = sum(s["span_s"] for s in t["steps"])
        assert 3.0 <= span < 3.01
        assert sum(s["replies_per_s"] * s["span_s"] for s in t["steps"]) == pytest.approx(span * w["replies_per_s"])
        loops = sum(s["loops_per_s"] * s["span_s"] for s in t["steps"])
        assert loops == pytest.approx(span * w["select_calls_per_s"])
        assert sum(s["accepts_per_loop"] * s["loops_per_s"] * s["span_s"] for s in t["steps"]) / loops == pytest.approx(
            w["accept_rate"] / w["select_calls_per_s"])
    assert res["traces"][0]["steps"] != res["traces"][1]["steps"]          # another seed, another run
    saved = json.loads((tmp_path / "trace.json").read_text())
    assert saved["traces"][0]["steps"][0]["t1"] == 1 and saved["thesis"][INF27]["select_calls_per_s"] == 262
    md = (tmp_path / "trace.md").read_text()
    assert f"## {INF27} (calibration)" in md and "262 loops/s, 70.43 per loop" in md and "| **0–3** |" in md
    # the page's command had no --rows, so it named a run of the four default rows
    assert f"`python -m validation trace --seeds 2 --step 1 --until 3 --rows {INF27}`" in md
    t = res["traces"][0]
    assert sum(s["open_conns_mean"] * s["span_s"] for s in t["steps"]) == pytest.approx(
        sum(s["span_s"] for s in t["steps"]) * t["whole"]["open_conns_mean"])
    assert len(list((tmp_path / "cache").iterdir())) == 6
    again = trace.run(out=tmp_path, n=2, step=1, rows=[INF27], until=3, cache=tmp_path / "cache")
    assert again["traces"] == res["traces"] and len(list((tmp_path / "cache").iterdir())) == 6


@pytest.mark.parametrize("argv, says", [
    (["--rows", "userver/one-packet/select/accept-7@27000"], "no thesis row 'userver/one-packet/select/accept-7@27000'"),
    (["--rows", "userver/one-packet/select/accept-1@peak"], "has no target rate"),
    (["--rows", "userver/specweb99/select/accept-1@26000"], "is a specweb99 row; only one-packet"),
    (["--rows", "tux/one-packet/-/accept-inf@23000"], "scenario has poisson arrivals; only deterministic"),
    (["--rows", "demand/one-packet/-/accept--@20000"], "cannot be simulated: no server (client-side demand row)"),
    (["--rows", " , "], "--rows: no row given"),
    (["--step", "0"], "--step: must be a positive number of seconds, got 0.0"),
    (["--step", "nan"], "--step: must be a positive number"),
    (["--step", "200"], "--step: 200 s is not shorter than"),
    (["--until", "-1"], "--until: must be a positive number of seconds, got -1.0"),
    (["--seeds", "0"], "--seeds: must be >= 1, got 0"),
    (["--seeds", "1000000000"], "--seeds x --step: 24,000,000,000 simulations, more than 100,000"),   # 4 rows x 6 steps
    (["--step", "1e-9", "--seeds", "1"], "more than 100,000"),      # its list of run ends ran out of memory
    (["--jobs", "0"], "--jobs: must be >= 1, got 0"),
    (["--profile", "no-such-profile"], "--profile"),
])
def test_cli_refuses_bad_input_before_running(tmp_path, capsys, monkeypatch, argv, says):
    monkeypatch.setattr(trace, "simulate_cached", lambda *a, **k: pytest.fail("simulated before refusing"))
    assert main(["trace", "--out", str(tmp_path), "--cache", str(tmp_path / "c")] + argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err, err
    assert not (tmp_path / "trace.md").exists()


def test_failed_simulation_is_exit_1_with_the_row(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(trace, "simulate_cached",
                        lambda jsons, *a, **k: {j: {"status": "failed", "error": "boom\nmore"} for j in jsons})
    assert main(["trace", "--out", str(tmp_path), "--cache", str(tmp_path / "c"), "--rows", INF27,
                 "--until", "2", "--step", "1", "--seeds", "1"]) == 1
    err = capsys.readouterr().err
    assert "simulation failed" in err and INF27 in err and "boom" in err and "more" not in err
    assert not (tmp_path / "trace.md").exists()


def test_the_committed_trace_ends_in_the_committed_seeds_runs():
    # trace.md's whole-window line of each seed is the run seeds.md scores (same scenario, same seed)
    from validation.records import ROOT
    tr = json.loads((ROOT / "docs/validation/trace.json").read_text())
    sd = json.loads((ROOT / "docs/validation/seeds.json").read_text())
    assert tr["model_fingerprint"] == sd["model_fingerprint"]
    calls = {c["row"]: dict(zip(c["seeds"], c["values"])) for c in sd["other_cells"] if c["metric"] == "select_calls_per_s"}
    assert {t["row"] for t in tr["traces"]} == set(trace.DEFAULT_ROWS)
    for t in tr["traces"]:
        if t["row"] in calls:
            assert t["whole"]["select_calls_per_s"] == pytest.approx(calls[t["row"]][t["seed"]], rel=1e-12)
        assert len(t["steps"]) == 6 and t["steps"][-1]["t1"] == 120

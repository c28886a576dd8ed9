"""validation.drops: tables 5.1/5.2's queue-drop totals against the simulator's."""
from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from simaccept.metrics import per_connection_rows
from simaccept.scenario import load_scenario
from simaccept.sim import simulate
from validation import drops
from validation.cli import main
from validation.records import load_thesis

TUX_AL1 = "tux/one-packet/-/accept-1@27000"
US_AL1 = "userver/one-packet/select/accept-1@27000"


def test_the_four_runs_of_tables_5_1_and_5_2():
    rows = {m.label: m for m in drops.drop_rows()}
    assert set(rows) == {US_AL1, "userver/one-packet/select/accept-inf@27000", TUX_AL1,
                         "tux/one-packet/-/accept-inf@27000"}
    assert rows[TUX_AL1].get("drops_total") == 1368683 and rows[TUX_AL1].record.duration_s == 120


def test_a_drop_row_without_a_run_length_is_refused():
    m = next(m for m in load_thesis() if m.label == TUX_AL1)
    bad = dataclasses.replace(m, record=dataclasses.replace(m.record, duration_s=math.nan))
    with pytest.raises(drops.DropsError, match="tux/one-packet/-/accept-1@27000: .*duration_s"):
        drops.drop_rows([bad])


def test_per_second_counts_an_absent_category_as_zero():
    d = drops.per_second({"drops_synq_full": math.nan, "drops_acceptq_full": 1200.0,
                          "drops_drop_request": 2400.0, "drops_listen_overflow": 600.0}, 120.0)
    assert d["drops_synq_full"] == 0 and d["syn"] == pytest.approx(30.0) and d["total"] == pytest.approx(35.0)
    with pytest.raises(drops.DropsError, match="duration_s must be > 0"):
        drops.per_second({}, 0.0)


@pytest.mark.parametrize("syn, rate, replies, want", [
    (34_000.0, 27_000.0, 9_442.0, 34_000 / 17_558),     # table 5.1's Accept-1, roughly
    (100.0, 27_000.0, 26_990.0, math.nan),              # almost every connection answered: no ratio
    (100.0, 27_000.0, 27_500.0, math.nan),              # more replies than the rate (earlier requests)
])
def test_syn_drops_per_failed_connection(syn, rate, replies, want):
    got = drops.syn_drops_per_failed(syn, rate, replies)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


@pytest.mark.parametrize("rate, replies, accepts, want", [
    (27_000.0, 15_918.0, 18_462.0, 2 - 2_544 / 11_082),      # tables 4.7/4.8, Accept-Inf: 1.770
    (27_000.0, 9_442.0, 11_365.0, 2 - 1_923 / 17_558),        # Accept-1: 1.890
    (27_000.0, 15_918.0, 15_000.0, 2.0),                      # fewer accepts than replies: none unanswered
    (27_000.0, 15_918.0, math.nan, math.nan),                 # no accept rate (TUX's rows): no bound
    (27_000.0, 26_990.0, 27_000.0, math.nan),                 # almost every connection answered
])
def test_syn_drop_bound(rate, replies, accepts, want):
    got = drops.syn_drop_bound(rate, replies, accepts)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


def _refusals(race: bool):
    race_keys = [] if race else ["client.syn_tick_ms=0", "client.loop_ms=0"]
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml", ["scenario.warmup=0", "scenario.duration=9",
                                                                  "workload.rate=27000", "server.accept_limit=inf"]
                       + race_keys)
    rec, host = simulate(sc, return_host=True)
    rows = per_connection_rows(host)
    decided = rows["t_first_syn"] < 2.0          # deadline 3 s, SYNs at 0 and ~3 s: decided well before 9 s
    got_in = np.isfinite(rows["t_established"])
    refused = rows["syns_sent"] - got_in
    replied = rows["replies"] > 0
    unanswered = np.isfinite(rows["t_accepted"]) & ~replied
    return decided, refused, replied, unanswered


def test_clients_with_an_exact_retransmission_stay_within_the_bound_connection_by_connection():
    # What syn_drop_bound rests on, checked on every connection of an overloaded run of the scenario
    # file's clients without the connect race: at most two SYNs refused, none for one that got a
    # reply, at most one for one accepted and never answered.
    d, refused, replied, unanswered = _refusals(race=False)
    assert refused[d].max() == 2 and refused[d & replied].max() == 0 and refused[d & unanswered].max() == 1
    failed = (d & ~replied).sum()
    assert unanswered[d].sum() > 0.05 * failed                  # the case the bound is about does occur
    assert refused[d].sum() <= 2 * failed - unanswered[d].sum()


def test_the_scenario_files_clients_with_the_race_are_answered_after_a_refused_syn():
    # The files' clients (early SYN retransmission, client loop: connect-race.md) can go past the
    # bound, as the thesis's Accept-Inf did: some connections are answered after a refused SYN.
    d, refused, replied, unanswered = _refusals(race=True)
    assert refused[d].max() == 2 and refused[d & unanswered].max() == 1
    assert (d & replied & (refused == 1)).sum() > 100
    assert refused[d & replied].max() == 1


def test_implied_replies_spans_the_ratios_and_stays_in_range():
    lo, hi = drops.implied_replies(27_000.0, 7_000.0, [2.0, 1.75, math.nan])
    assert lo == pytest.approx(27_000 - 4_000) and hi == pytest.approx(27_000 - 3_500)
    assert drops.implied_replies(1_000.0, 7_000.0, [2.0]) == (0.0, 0.0)      # never below 0
    with pytest.raises(drops.DropsError, match="no SYN-drops-per-failed-connection ratio"):
        drops.implied_replies(27_000.0, 7_000.0, [math.nan, 0.0])


def test_a_traced_run_is_the_plain_run_and_its_windows_add_up():
    sc = load_scenario("scenarios/thesis/tux-onepacket.toml", ["scenario.warmup=0", "scenario.duration=3",
                                                              "workload.rate=27000", "server.accept_limit=1"])
    t = drops.trace_run(sc, window=1.0)
    plain = simulate(sc).to_dict()
    for k in ("replies_per_s", "accept_rate", "drops_acceptq_full", "drops_drop_request", "drops_listen_overflow"):
        assert t["record"][k] == plain[k], k
    w = t["windows"]
    # the last window ends with the record's, where the server's last operation ended (past 3 s)
    assert [(x["t0"], x["t1"]) for x in w] == [pytest.approx((0.0, 1.0)), pytest.approx((1.0, 2.0)),
                                                pytest.approx((2.0, 3.0), abs=1e-3)]
    assert w[-1]["t1"] == pytest.approx(plain["duration_s"])
    for c in drops.CATEGORIES + ("replies_per_s",):     # per window, they add up to the run's (no warm-up)
        total = plain[c] * plain["duration_s"] if c == "replies_per_s" else plain[c]
        assert sum(x[c] * (x["t1"] - x["t0"]) for x in w) == pytest.approx(total, abs=0.5), c
    for x in w:                          # queueing invariants of the Linux 2.4 profile (backlog 128)
        assert 0 <= x["synq_mean"] <= x["synq_max"] <= 1024
        assert 0 <= x["young_mean"] <= x["synq_max"]
        assert 0 <= x["acceptq_mean"] <= 129 and 0 <= x["acceptq_full"] <= 1
        assert 0 <= x["at_three_quarters"] <= 1
    # overloaded from idle: the queues fill and SYNs are refused by the end
    assert w[-1]["acceptq_mean"] > 64 and w[-1]["drops_acceptq_full"] + w[-1]["drops_drop_request"] > 0


def test_run_writes_totals_implied_replies_and_traces(tmp_path, monkeypatch):
    # the thesis's 120 s shortened to 2 s so the test stays short; the mechanics are the same
    short = [dataclasses.replace(m, record=dataclasses.replace(m.record, duration_s=2.0))
             for m in drops.drop_rows()]
    monkeypatch.setattr(drops, "drop_rows", lambda: short)
    res = drops.run(out=tmp_path, jobs=1, cache=tmp_path / "cache", approach_rates=())
    cells = {c["row"]: c for c in res["cells"]}
    us, tux = cells[US_AL1], cells[TUX_AL1]
    assert us["implied_replies_per_s"] is None and math.isfinite(us["thesis_syn_per_failed"])
    lo, hi = tux["implied_replies_per_s"]
    assert 0 < lo <= hi <= 27_000
    assert all(c["same_as_simulate"] for c in res["cells"])
    # the thesis's counts over its run length (2 s here): 1,368,683 / 2
    assert tux["thesis_per_s"]["total"] == pytest.approx(1368683 / 2)
    saved = json.loads((tmp_path / "drops.json").read_text())
    assert saved["cells"][0]["row"] == res["cells"][0]["row"] and saved["model_fingerprint"]
    md = (tmp_path / "drops.md").read_text()
    assert f"| {TUX_AL1} | thesis |" in md and "## TUX's replies/s that the totals imply" in md
    assert "Each traced run's record equals a plain simulation's: yes for all." in md
    inf = cells["userver/one-packet/select/accept-inf@27000"]
    assert inf["thesis_syn_bound"] == pytest.approx(2 - 2_544 / 11_082)
    assert math.isnan(tux["thesis_syn_bound"])          # no accepts or replies printed for TUX here
    assert inf["accepts_run_s"] == pytest.approx(2_271_144 / 18_462)
    assert "## SYN drops per failed connection: the most that clients with an exact retransmission allow" in md
    assert res["approach"] is None and "## The approach" not in md
    assert f"| {US_AL1} | 17,558 | 1,923 |" in md and f"| {TUX_AL1} | 17," not in md
    n = len(list((tmp_path / "cache").glob("trace1-*.json")))
    assert n == 4
    again = drops.run(out=tmp_path, jobs=1, cache=tmp_path / "cache", approach_rates=())   # from the cache
    assert [c["sim_per_s"] for c in again["cells"]] == [c["sim_per_s"] for c in res["cells"]]


def test_cli_refuses_bad_input(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["drops", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert main(["drops", "--profile", "no-such-profile", "--out", str(tmp_path)]) == 2
    assert "--profile" in capsys.readouterr().err
    assert main(["drops", "--cache", str(f), "--out", str(tmp_path)]) == 2
    assert "--cache" in capsys.readouterr().err


def test_a_run_that_fails_is_named_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setattr(drops, "trace_run", lambda sc: 1 / 0)
    with pytest.raises(drops.DropsError, match=r"simulation failed for .*ZeroDivisionError"):
        drops.run(out=tmp_path, jobs=1, cache=tmp_path / "cache", check_plain=False)
    assert not (tmp_path / "drops.md").exists() and not list((tmp_path / "cache").glob("*.json"))


def test_steepest_fall_is_the_largest_relative_fall_between_neighbours():
    pts = [{"rate": 27.0, "replies_per_s": 18.0}, {"rate": 25.0, "replies_per_s": 25.0},
           {"rate": 26.0, "replies_per_s": 20.0}, {"rate": 24.0, "replies_per_s": 24.0}]
    f = drops.steepest_fall(pts)            # any order; 25 -> 26 falls 20 %, 26 -> 27 only 10 %
    assert (f["from"], f["to"], f["replies_from"], f["replies_to"]) == (25.0, 26.0, 25.0, 20.0)
    assert f["change"] == pytest.approx(-0.2)
    assert drops.steepest_fall([{"rate": 1.0, "replies_per_s": 1.0}, {"rate": 2.0, "replies_per_s": 2.0}]) is None
    assert drops.steepest_fall([]) is None


def test_approach_costs_are_the_fitted_drop_cost_and_an_admitted_syns():
    from simaccept.costs import load_costs
    us = load_costs("thesis-2004").us
    assert drops.approach_costs("thesis-2004") == {"fitted": us["k_syn_drop"], "k_syn": us["k_syn"]}
    assert us["k_syn_drop"] > us["k_syn"]       # else the two settings would be one


def test_the_approach_simulates_each_row_below_its_rate_at_both_costs(tmp_path, monkeypatch):
    short = [dataclasses.replace(m, record=dataclasses.replace(m.record, duration_s=2.0))
             for m in drops.drop_rows()]
    monkeypatch.setattr(drops, "drop_rows", lambda: short)
    rates = (23_000.0, 27_000.0, 28_000.0)          # 28,000 is above every row's own rate: left out
    res = drops.run(out=tmp_path, jobs=2, cache=tmp_path / "cache", approach_rates=rates)
    ap = res["approach"]
    assert ap["rates"] == list(rates) and set(ap["k_syn_drop"]) == {"fitted", "k_syn"}
    rows = {r["row"]: r for r in ap["rows"]}
    assert set(rows) == {c["row"] for c in res["cells"]}
    for lab, r in rows.items():
        assert [p["rate"] for p in r["fitted"]] == [p["rate"] for p in r["k_syn"]] == [23_000.0, 27_000.0]
        own = next(c for c in res["cells"] if c["row"] == lab)
        # at its own rate and the fitted cost the approach point is the row's own run
        assert r["fitted"][-1]["replies_per_s"] == own["sim_replies_per_s"]
        assert r["fitted"][-1]["drops_per_s"] == pytest.approx(own["sim_per_s"]["total"])
    # a cheaper refused SYN leaves the server more CPU: TUX Accept-1 serves more at 27,000
    assert rows[TUX_AL1]["k_syn"][-1]["replies_per_s"] > rows[TUX_AL1]["fitted"][-1]["replies_per_s"]
    assert rows[TUX_AL1]["thesis_replies_per_s"] == {"23000": 22997.0}
    md = (tmp_path / "drops.md").read_text()
    assert "## The approach to each row's rate, at two costs of a refused SYN" in md
    assert f"| 23,000 | 22,997 |" in md and "(implied)" in md and "Largest fall between neighbouring rates" in md
    saved = json.loads((tmp_path / "drops.json").read_text())
    assert saved["approach"]["rows"][0]["row"] == ap["rows"][0]["row"]
    # from the cache: nothing simulated again, the same figures
    monkeypatch.setattr(drops, "trace_run", lambda sc: 1 / 0)
    import validation.fitter as fitter
    monkeypatch.setattr(fitter, "_simulate_json", lambda *a: 1 / 0)
    again = drops.run(out=tmp_path, jobs=1, cache=tmp_path / "cache", approach_rates=rates)
    assert again["approach"]["rows"] == ap["rows"]


@pytest.mark.parametrize("bad", [[-1.0], [0], [math.nan], ["27000"], [True]])
def test_a_bad_approach_rate_is_refused_by_name_before_anything_runs(tmp_path, bad):
    with pytest.raises(drops.DropsError, match=r"approach_rates: each must be a rate in req/s > 0"):
        drops.run(out=tmp_path, jobs=1, cache=tmp_path / "cache", approach_rates=bad)
    assert not (tmp_path / "drops.md").exists() and not (tmp_path / "cache").exists()

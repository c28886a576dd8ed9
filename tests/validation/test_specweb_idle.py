"""validation.specweb_idle: open connections implied by select's measured cost, and the delay read from them."""
import json
import math

import pytest

import simaccept
from simaccept.costs import load_costs, scenario_costs
from validation import specweb_idle as si
from validation.cli import main
from validation.specweb_idle import (IdleError, control_agrees, implied_open_conns, implied_open_ratio,
                                     infer_think, server_cpu_fraction)

COST = dict(select_base=10.0, select_per_fd=0.2, select_per_ready=0.8)


def test_implied_open_conns_inverts_the_select_cost():
    # 1,000 calls/s over 500 open connections (+ the listener), 20 ready: 10 + 0.2*501 + 0.8*20 = 126.2 us/call
    per_call_us = 10.0 + 0.2 * 501 + 0.8 * 20
    frac = 0.6
    share = per_call_us * 1e-6 * 1000 / frac
    assert implied_open_conns(share, 1000.0, 20.0, frac, **COST) == pytest.approx(500.0)


def test_implied_open_conns_missing_input_is_nan_and_zero_calls_refused():
    assert math.isnan(implied_open_conns(math.nan, 1000.0, 20.0, 0.6, **COST))
    with pytest.raises(IdleError, match="select_calls_per_s"):
        implied_open_conns(0.4, 0.0, 20.0, 0.6, **COST)


def test_implied_open_conns_matches_the_simulators_own_count():
    """Fed the simulator's own select share and counters, the formula gives back its open connections:
    the formula is the simulator's select cost model, read backwards."""
    sc = simaccept.load_scenario("scenarios/thesis/userver-specweb.toml",
                                 ["workload.rate=26000", "server.accept_limit=1", "client.think_ms=100",
                                  "scenario.warmup=4", "scenario.duration=3", "scenario.seed=11"])
    r = simaccept.simulate(sc)
    assert r.status == "ok"
    c = load_costs("thesis-2004").us
    frac = server_cpu_fraction(r)
    got = implied_open_conns(r.cpu_share_select / frac, r.select_calls_per_s, r.fds_per_select, frac,
                             c["select_base"], c["select_per_fd"], c["select_per_ready"])
    assert r.open_conns_mean > 300          # the delay keeps hundreds open
    assert got == pytest.approx(r.open_conns_mean, rel=0.02)


def test_implied_open_ratio_is_the_per_call_share_ratio():
    # 40 % over 1,000 calls vs 10 % over 50 calls: 4e-4 / 2e-3 per call -> a fifth of the connections
    assert implied_open_ratio(0.40, 1000.0, 0.10, 50.0) == pytest.approx(0.2)
    assert math.isnan(implied_open_ratio(math.nan, 1000.0, 0.10, 50.0))
    with pytest.raises(IdleError):
        implied_open_ratio(0.40, 1000.0, 0.0, 50.0)


def _rows(lim, pts):
    return [{"accept_limit": lim, "think_ms": x, "log_ratio": y} for x, y in pts]


def test_infer_think_interpolates_the_crossing_and_averages_rows():
    tab = _rows("1", [(0, -2.0), (50, -1.0), (100, 1.0)]) + _rows("10", [(0, -1.0), (50, 0.0), (100, 0.5)])
    th, per = infer_think(tab, [0, 50, 100], ["1", "10"])
    assert per == {"1": pytest.approx(75.0), "10": pytest.approx(50.0)}
    assert th == pytest.approx(62.5)


def test_infer_think_refuses_no_crossing_and_no_rows():
    tab = _rows("inf", [(0, 0.4), (50, 0.7), (100, 0.9)])
    with pytest.raises(IdleError, match="do not cross.*Accept-inf: above"):
        infer_think(tab, [0, 50, 100], ["inf"])
    with pytest.raises(IdleError, match="no gprof row"):
        infer_think(tab, [0, 50, 100], [])


def test_infer_think_reports_a_row_that_does_not_cross_and_uses_the_others():
    tab = _rows("1", [(0, -2.0), (50, -1.0), (100, 1.0)]) + _rows("inf", [(0, 0.4), (50, 0.7), (100, 0.9)])
    never: dict = {}
    th, per = infer_think(tab, [0, 50, 100], ["1", "inf"], never)
    assert per == {"1": pytest.approx(75.0)} and th == pytest.approx(75.0)
    assert never == {"inf": "above"}
    below: dict = {}
    infer_think(tab + _rows("10", [(0, -0.9), (50, -0.5), (100, -0.1)]), [0, 50, 100], ["1", "10"], below)
    assert below == {"10": "below"}


def test_control_agrees_within_50_conns_or_half():
    ctl = [{"accept_limit": "1", "implied_open_conns": -15.0, "sim_open_conns": 9.0},
           {"accept_limit": "inf", "implied_open_conns": 216.0, "sim_open_conns": 638.0},
           {"accept_limit": "10", "implied_open_conns": 400.0, "sim_open_conns": 590.0}]
    assert control_agrees(ctl) == {"1": True, "inf": False, "10": True}


@pytest.mark.parametrize("argv, flag", [
    (["--think-ms", "0,abc"], "--think-ms"),
    (["--think-ms", "0,-5"], "--think-ms"),
    (["--think-ms", "0,inf"], "--think-ms"),       # a client that never answers: refused, not a traceback
    (["--think-ms", "nan"], "--think-ms"),
    # as long as the run: each connection one request in it (1e300 simulated every row)
    (["--think-ms", "0,1e300"], "--think-ms: 1e+300: a delay must be shorter than the rows' run (120 s"),
    (["--think-ms", "50,120000"], "--think-ms: 120000: a delay must be shorter"),
    (["--per-kb-factors", "1,x"], "--per-kb-factors"),
    (["--per-kb-factors", "1,0"], "--per-kb-factors"),
    (["--per-kb-factors", "-0.5"], "--per-kb-factors"),
    (["--per-kb-factors", "nan"], "--per-kb-factors"),
    (["--jobs", "0"], "--jobs"),
    (["--profile", "no-such-profile"], "--profile"),
])
def test_cli_bad_input_is_exit_2_and_writes_nothing(argv, flag, tmp_path, capsys):
    rc = main(["specweb-idle", "--out", str(tmp_path)] + argv)
    assert rc == 2
    assert flag in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def _result(best):
    """A minimal specweb-idle result: one row, the ratio reading at 60 ms, the absolute at ``best``."""
    grid = [0.0, 60.0] + ([] if best is None else [best])
    pred = [{"row": "userver/specweb99/select/accept-1@26000", "think_ms": t, "measured": 8888.0,
             "predicted": 10000.0 - 20 * t, "error": (10000.0 - 20 * t) / 8888.0 - 1, "measured_accept_rate": 1234.0,
             "sim_accept_rate": 1400.0 - t, "sim_open_conns": 30.0 + t} for t in grid]
    within = lambda t: si._within(pred, t)  # noqa: E731
    return {"generated_at": "2026-11-30T00:00:00+00:00", "profile": "thesis-2004", "costs": {},
            "select_cost_us": {"select_base": 11.8, "select_per_fd": 0.023, "select_per_ready": 0.8},
            "implied_one_packet_control": [], "implied_specweb": [], "control_agrees": {"1": False, "inf": False},
            "inferred_think_ms_by_accept_limit": {} if best is None else {"1": best},
            "uncrossed_by_accept_limit": {}, "best_think_ms": best,
            "absolute_reading_error": "no gprof row passes its one-packet control" if best is None else None,
            "predictions": pred, "heldout_within_10pct_as_stated": within(0.0),
            "heldout_within_10pct_at_best_think": None if best is None else within(best),
            "writev_evidence": None,
            "ratio_reading": {"specweb": [], "one_packet_control": [], "think_ms": 60.0, "within_10pct": within(60.0)}}


@pytest.mark.parametrize("best", [None, 70.0])
def test_a_failed_absolute_reading_is_written_with_the_ratio_reading(best, tmp_path):
    from validation.report import _specweb_idle_summary, specweb_idle_markdown
    res = _result(best)
    md = si.markdown(res)
    assert "sim at 60 ms (ratio)" in md
    assert ("sim at 70 ms (absolute)" in md) == (best is not None)
    assert ("infers no delay at these costs: no gprof row passes" in md) == (best is None)
    (tmp_path / "specweb-idle.json").write_text(json.dumps(res))
    summ = _specweb_idle_summary(tmp_path)
    assert summ["inferred_client_delay_ms"] == best
    text = "\n".join(specweb_idle_markdown(summ))
    e60 = 100 * (8800.0 / 8888.0 - 1)
    row = "| userver/specweb99/select/accept-1@26000 | "
    assert (row + f"{e60:+.1f} % |" + ("" if best is None else f" {100 * (8600.0 / 8888.0 - 1):+.1f} % |")) in text
    assert ("the absolute reading, which rests on the fitted select costs, infers none" in text) == (best is None)


def test_per_kb_overrides_scale_both_send_costs_and_reach_the_scenario():
    costs = load_costs("thesis-2004").us
    assert si.per_kb_overrides(costs, 1.0) == []
    over = si.per_kb_overrides(costs, 0.7)
    m = si.throughput_rows(si.load_thesis())[0]
    sc = si.scenario_for(m, overrides=['costs.profile="thesis-2004"', *over])
    ran = scenario_costs(sc).us                                  # what the simulation is charged
    for k in si.PER_KB_COSTS:
        assert ran[k] == pytest.approx(0.7 * costs[k])
    assert ran["sendfile"] == costs["sendfile"]                  # the per-call cost is not a per-KB one


def _kb(factor, ratio, best, errors, err=None):
    """One per_kb entry: one row, predictions at 0 ms and at the delays read."""
    delays = [0.0] + [t for t in (ratio, best) if t is not None]
    pred = [{"row": "userver/specweb99/select/accept-1@26000", "think_ms": t, "error": errors[i]}
            for i, t in enumerate(delays)]
    return {"factor": factor, "costs": {"sendfile_per_kb": 2.0 * factor, "tux_per_kb": 2.0 * factor},
            "ratio_think_ms": ratio, "best_think_ms": best, "absolute_reading_error": None, "error": err,
            "predictions": pred, "within_10pct_as_stated": si._within(pred, 0.0),
            "within_10pct_at_ratio_delay": None if ratio is None else si._within(pred, ratio),
            "within_10pct_at_best_think": None if best is None else si._within(pred, best)}


def test_per_kb_table_has_a_line_per_factor_and_delay_read(tmp_path):
    from validation.report import _specweb_idle_summary, specweb_idle_markdown
    res = _result(70.0)
    res["per_kb"] = [_kb(1.0, 60.0, 70.0, [0.125, -0.01, -0.03]),
                     _kb(0.7, 50.0, None, [0.242, 0.024]),
                     _kb(0.5, None, None, [0.40], err="neither reading infers a delay")]
    md = si.markdown(res)
    assert "| 2.00 / 2.00 µs/KB (x1) | 0 ms (as stated) | +12.5% | 0 of 1 |" in md
    assert "| 2.00 / 2.00 µs/KB (x1) | 70 ms (absolute) | -3.0% | 1 of 1 |" in md
    assert "| 1.40 / 1.40 µs/KB (x0.7) | 50 ms (ratio) | +2.4% | 1 of 1 |" in md
    assert "(x0.7) | 50 ms (absolute)" not in md and "(x0.7) | 0 ms (absolute)" not in md
    assert "| 1.00 / 1.00 µs/KB (x0.5) | no delay read: neither reading infers a delay |" in md
    (tmp_path / "specweb-idle.json").write_text(json.dumps(res))
    text = "\n".join(specweb_idle_markdown(_specweb_idle_summary(tmp_path)))
    assert "x0.7 (1.40 / 1.40 µs/KB): 1 at 50 ms (ratio)" in text
    assert "x1 (2.00 / 2.00 µs/KB): 1 at 60 ms (ratio), 1 at 70 ms (absolute)" in text
    assert "x0.5 (1.00 / 1.00 µs/KB): no delay read" in text


def test_one_factor_writes_no_per_kb_section():
    res = _result(70.0)
    res["per_kb"] = [_kb(1.0, 60.0, 70.0, [0.125, -0.01, -0.03])]
    assert "Two numbers no calibration row measures" not in si.markdown(res)


def test_per_kib_sent_is_the_slope_of_what_the_host_charges_a_reply():
    """The per-KiB figure the report quotes is the simulator's own reply cost, per KiB of a long reply."""
    sc = simaccept.load_scenario("scenarios/thesis/userver-specweb.toml",
                                 ["workload.rate=1000", "server.accept_limit=1", "scenario.warmup=0.1", "scenario.duration=0.1",
                                  "scenario.seed=3"])
    rec, host = simaccept.simulate(sc, return_host=True)
    assert rec.status == "ok"
    costs = scenario_costs(sc).us
    c = 0
    for segments in (100, 400):                        # even counts: no odd last segment's ACK
        n = segments * host.mss
        host.sizes[host.req_off[c] + host.rq[c]] = n
        host.rem[c] = n
        kernel_per_kib = host.reply_kernel_cost(c, n) * 1e6 / (n / 1024.0)
        parts = si.per_kib_sent(costs, host.mss)
        assert parts["tx"] + parts["ack"] == pytest.approx(kernel_per_kib)
    assert parts["send"] == costs["sendfile_per_kb"]
    assert si.per_kib_sent(costs, host.mss, "tux_per_kb")["send"] == costs["tux_per_kb"]


def test_outside_figure_lists_what_the_model_charges_at_each_factor():
    from validation.specweb_idle import outside_per_kib_markdown
    raw, scaled = si.outside_per_kib()
    assert scaled == pytest.approx(raw * 650.0 / 2400.0)
    kb = [_kb(1.0, 60.0, 70.0, [0.1, 0.0, 0.0]), _kb(0.5, None, None, [0.3])]
    costs = load_costs("thesis-2004").us
    text = outside_per_kib_markdown("thesis-2004", kb)
    for k in kb:
        total = sum(si.per_kib_sent({**costs, **k["costs"]}).values())
        assert f"{total:.2f} at {k['costs']['sendfile_per_kb']:.2f} µs/KB" in text
    assert f"{scaled:.1f} µs/KiB on the thesis's 2.4 GHz Xeon" in text
    assert "not shown: profile 'no-such-profile'" in outside_per_kib_markdown("no-such-profile", kb)
    res = _result(70.0)
    res["profile"], res["per_kb"] = "thesis-2004", kb
    assert text in si.markdown(res)                           # specweb-idle.md's per-KB section ends with it


def test_cli_refuses_a_cache_that_is_not_a_directory(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    out = tmp_path / "out"
    assert main(["specweb-idle", "--cache", str(f), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "--cache" in err and "not a directory" in err and "Traceback" not in err, err
    assert not out.exists()


def test_runs_are_cached_so_an_interrupted_analysis_resumes(tmp_path):
    from validation.records import load_thesis
    row = next(m for m in load_thesis() if m.label == "userver/one-packet/select/accept-inf@27000")
    short = ["scenario.duration=0.3"]             # a short window: the cache, not the result, is tested
    first = si.simulate_rows([row], [0.0], cost_overrides=short, cache=tmp_path / "c")
    files = sorted((tmp_path / "c").iterdir())
    assert len(files) == 1
    again = si.simulate_rows([row], [0.0], cost_overrides=short, cache=tmp_path / "c")
    assert sorted((tmp_path / "c").iterdir()) == files
    key = (row.label, 0.0)
    assert again[key].replies_per_s == first[key].replies_per_s and first[key].status == "ok"
    si.simulate_rows([row], [0.0, 25.0], cost_overrides=short, cache=tmp_path / "c")   # one more delay: one more run
    assert len(list((tmp_path / "c").iterdir())) == 2

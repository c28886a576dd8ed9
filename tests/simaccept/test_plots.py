"""Thesis-style sweep figures: a figure is written only when it has a line to show."""
import json
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


def test_lines_are_told_apart_by_every_swept_key_and_seeds_are_replicates(tmp_path):
    # An audit's sweep over mux x seed x accept-limit drew two lines called "Accept-1" (select
    # and poll) and ran each line through both seeds' points at every rate.
    from simaccept import load_scenario
    from simaccept.plots import plot_lines
    from simaccept.sweep import run_sweep
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml", overrides=[
        "scenario.warmup=0.1", "scenario.duration=0.3", "workload.rate=[20000, 30000]",
        "server.accept_limit=[1, inf]", "scenario.seed=[1, 2]", 'server.mux=["select", "poll"]'])
    recs = run_sweep(sc, tmp_path / "o", jobs=1, plots=True)
    lines = plot_lines(recs)
    assert sorted(lines) == ["Accept-1, mux=poll", "Accept-1, mux=select",
                             "Accept-Inf, mux=poll", "Accept-Inf, mux=select"]
    for label, rs in lines.items():
        assert sorted(r.target_rate for r in rs) == [20000, 20000, 30000, 30000]   # 2 seeds per rate
        assert len({r.seed for r in rs}) == 2
    assert (tmp_path / "o" / "throughput.png").stat().st_size > 1000


def test_a_line_through_replicates_is_their_mean_with_a_95_interval():
    from simaccept.plots import _mean_ci
    m, h = _mean_ci([10.0, 12.0, 14.0])
    assert m == 12.0 and h == pytest.approx(4.968, abs=1e-3)      # t(0.975, 2) 4.303 x 2 / sqrt 3
    assert _mean_ci([5.0]) == (5.0, 0.0)


def test_records_without_config_split_by_mux_only_when_it_varies():
    from simaccept.plots import plot_lines
    a, b = _rec("userver", 1000.0, 1.0, 1.0), _rec("userver", 1000.0, 1.0, 1.0)
    a.mux, b.mux = "select", "poll"
    assert sorted(plot_lines([a, b])) == ["Accept-1, mux=poll", "Accept-1, mux=select"]
    assert sorted(plot_lines([a, _rec("userver", 2000.0, 1.0, 1.0)])) == ["Accept-1, mux=-", "Accept-1, mux=select"]
    assert list(plot_lines([_rec("userver", 1000.0, 1.0, 1.0), _rec("userver", 2000.0, 1.0, 1.0)])) == ["Accept-1"]


def _cfg_rec(rate, **sections):
    r = _rec("userver", rate, 1.0, 1.0)
    r.config = json.dumps(sections)
    return r


def test_close_values_are_separate_lines_and_clashing_key_names_keep_their_section():
    from simaccept.plots import plot_lines
    recs = [_cfg_rec(1000.0, scenario={"duration": 1.0000001}, costs={"profile": "a"}, kernel={"profile": "x"}),
            _cfg_rec(1000.0, scenario={"duration": 1.0000004}, costs={"profile": "a"}, kernel={"profile": "y"})]
    assert sorted(plot_lines(recs)) == ["Accept-1, profile=x, duration=1.0000001",      # keys in dotted order
                                        "Accept-1, profile=y, duration=1.0000004"]
    recs[1].config = json.dumps({"scenario": {"duration": 1.0000004}, "costs": {"profile": "b"},
                                 "kernel": {"profile": "y"}})
    assert sorted(plot_lines(recs)) == ["Accept-1, costs.profile=a, kernel.profile=x, duration=1.0000001",
                                        "Accept-1, costs.profile=b, kernel.profile=y, duration=1.0000004"]


def test_records_with_and_without_config_fall_back_to_their_columns():
    from simaccept.plots import plot_lines
    with_cfg = _cfg_rec(1000.0, scenario={"duration": 1.0}, server={"mux": "select"})
    with_cfg.mux = "select"
    bare = _rec("userver", 2000.0, 1.0, 1.0)
    bare.mux = "poll"
    assert sorted(plot_lines([with_cfg, bare])) == ["Accept-1, mux=poll", "Accept-1, mux=select"]
    broken = _rec("userver", 2000.0, 1.0, 1.0)
    broken.config = "not json"
    assert list(plot_lines([broken])) == ["Accept-1"]


def test_a_dollar_in_a_name_is_drawn_literally(tmp_path):
    # "$" starts matplotlib's mathtext: a scenario named 'bad $\frac$ name' ended a finished
    # sweep in a parse error, and every rerun the same way
    import dataclasses
    recs = [dataclasses.replace(_rec("userver", r, 500.0, 2.0), scenario=r"bad $\frac$ name", policy="$x$")
            for r in (1000.0, 2000.0)]
    written = thesis_plots(recs, tmp_path, formats=("png",))
    assert len(written) == 5


def _row(lim, rate, replies, seed=1, status="ok", mux="select"):
    cfg = {"server": {"accept_limit": lim, "mux": mux}, "workload": {"rate": rate}, "scenario": {"seed": seed}}
    return RunRecord(source="sim", scenario="s", server="userver", accept_limit=str(lim), policy="accept-limit",
                     target_rate=rate, replies_per_s=replies, status=status, seed=seed, config=json.dumps(cfg))


def test_the_throughput_table_puts_the_policies_side_by_side_in_grid_order():
    from simaccept.plots import throughput_table
    recs = [_row("inf", 30000.0, 20831.4), _row("inf", 10000.0, 10000.0),
            _row(1, 10000.0, 9999.6), _row(1, 30000.0, 0.0, status="failed")]
    assert throughput_table(recs).splitlines() == [
        "replies/s",
        "target req/s  Accept-Inf  Accept-1",
        "      10,000      10,000    10,000",
        "      30,000      20,831    failed",
    ]


def test_the_throughput_table_averages_seeds_and_marks_what_the_grid_lacks():
    from simaccept.plots import throughput_table
    recs = [_row(1, 20000.0, 100.0, seed=1), _row(1, 20000.0, 300.0, seed=2),
            _row(1, 20000.0, 999.0, seed=3, status="failed"),      # a failed replicate is not averaged in
            _row(1, 20000.0, 50.0, mux="poll"), _row(1, 30000.0, 60.0, mux="poll")]
    assert throughput_table(recs).splitlines() == [
        "replies/s (mean of up to 3 seeds)",
        "target req/s  Accept-1, mux=select  Accept-1, mux=poll",
        "      20,000                   200                  50",
        "      30,000                     -                  60",
    ]
    assert throughput_table([]) == ""

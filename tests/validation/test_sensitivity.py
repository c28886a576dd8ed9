"""validation.sensitivity: elasticities, the factor to close a miss, the cache, bad input."""
import json
import math

import pytest

from simaccept.costs import load_costs
from validation import cli, report
from validation.records import nan_to_null
from validation.report import HAND_SET
from validation.sensitivity import (NOT_SEEN_PARTIAL, SEEN, Runner, SensitivityError, analyse, cells, elasticity,
                                   markdown, past_censored_peak,
                                   factor_to_band, report_misses, select_cells)

SHORT = ["scenario.warmup=1", "scenario.duration=2"]


@pytest.mark.parametrize("y0,y1,step,want", [
    (100.0, 80.0, 1.25, -1.0),            # inversely proportional
    (100.0, 100.0, 1.25, 0.0),            # unseen
    (100.0, 125.0, 1.25, 1.0),
    (0.0, 10.0, 1.25, math.nan),          # no throughput at all: undefined, not 0
    (100.0, 80.0, 1.0, math.nan),
])
def test_elasticity(y0, y1, step, want):
    got = elasticity(y0, y1, step)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


@pytest.mark.parametrize("pred,meas,e,want", [
    (120.0, 100.0, -1.0, 120 / 110),      # too high: raise the cost until 110
    (80.0, 100.0, -1.0, 80 / 90),         # too low: lower it until 90
    (105.0, 100.0, -1.0, 1.0),            # inside the band
    (120.0, 100.0, -0.5, (110 / 120) ** -2),
    (120.0, 100.0, SEEN / 2, math.nan),   # barely seen: no finite answer worth printing
    (120.0, 100.0, math.nan, math.nan),
])
def test_factor_to_band(pred, meas, e, want):
    got = factor_to_band(pred, meas, e)
    assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want)


def test_cells_take_the_reports_roles():
    cs = cells()
    roles = {c.label: c.role for c in cs}
    assert {lab for lab, r in roles.items() if r == "hand-set"} == set(HAND_SET)
    assert all(r == "calibration" for lab, r in roles.items() if lab.startswith("userver/one-packet/"))
    held = {lab for lab, r in roles.items() if r == "held-out"}
    assert "tux/specweb99/-/accept-1@26000" in held and "knot/one-packet/-/accept-50@peak" in held
    assert not any(lab.startswith("demand/") for lab in roles)


def test_unused_cost_is_unseen_and_used_cost_is_seen(tmp_path):
    """TUX charges no select: raising select_base changes nothing (same seed, exactly);
    at 26,000 req/s TUX is CPU-bound, so its per-KB cost lowers throughput."""
    c = next(c for c in cells() if c.label == "tux/specweb99/-/accept-1@26000")
    runner = Runner(tmp_path / "cache", jobs=1, log=lambda s: None)
    params = {"tux": ("tux_per_kb", "select_base")}
    res = analyse([c], runner, params=params, sim_overrides=SHORT, what_if=False)
    row, = res["rows"]
    assert row["elasticity"]["select_base"] == 0.0
    assert row["elasticity"]["tux_per_kb"] < -0.1
    assert runner.n_run == 3
    # only held-out rows here: nothing the profile was built on sees either cost
    assert res["params"]["tux_per_kb"]["status"] == "unidentified"
    # a second analysis is answered from the cache, identically
    again = Runner(tmp_path / "cache", jobs=1, log=lambda s: None)
    res2 = analyse([c], again, params=params, sim_overrides=SHORT, what_if=False, partial=True)
    assert again.n_run == 0
    assert res2["rows"][0]["predicted"] == row["predicted"]
    assert res2["rows"][0]["elasticity"] == row["elasticity"]
    # a chosen subset of rows cannot call a cost unidentified: the rows left out might see it
    assert res2["params"]["tux_per_kb"]["status"] == NOT_SEEN_PARTIAL and res2["partial"] is True
    assert set(res2["params"]) == {"tux_per_kb", "select_base"}
    # the report reads the JSON back: a held-out cell in band is not listed among the misses,
    # one that misses is, with its top cost (the row is marked each way: its short run's
    # error is whatever it is)
    res["generated_at"] = "now"
    row["ok"] = True
    (tmp_path / "sensitivity.json").write_text(json.dumps(nan_to_null(res)))
    assert report._sensitivity_summary(tmp_path)["misses"] == []
    row["ok"] = False
    (tmp_path / "sensitivity.json").write_text(json.dumps(nan_to_null(res)))
    se = report._sensitivity_summary(tmp_path)
    assert "tux_per_kb" in se["unidentified"]
    assert [m["row"] for m in se["misses"]] == [c.label]
    assert se["misses"][0]["top_costs"][0]["cost"] == "tux_per_kb"
    md = "\n".join(report.sensitivity_markdown(se))
    assert c.label in md and "`tux_per_kb`" in md
    assert "Not run" in "\n".join(report.sensitivity_markdown(None))
    # computed with the shipped profile: not stale; a cost changed since is named
    assert se["stale_costs"] == [] and "Stale" not in md
    res["params"]["tux_per_kb"]["value"] *= 2
    res["costs"]["tux_per_kb"] *= 2
    (tmp_path / "sensitivity.json").write_text(json.dumps(nan_to_null(res)))
    se = report._sensitivity_summary(tmp_path)
    assert se["stale_costs"] == ["tux_per_kb"]
    # a cost the profile has that the analysis did not know (added since) makes it stale too
    del res["costs"]["k_ack_rx"]
    (tmp_path / "sensitivity.json").write_text(json.dumps(nan_to_null(res)))
    assert report._sensitivity_summary(tmp_path)["stale_costs"] == ["tux_per_kb", "k_ack_rx (new)"]
    # a file from before costs were recorded: the raised costs' values, and model costs it never raised
    del res["costs"]
    (tmp_path / "sensitivity.json").write_text(json.dumps(nan_to_null(res)))
    old = report._sensitivity_summary(tmp_path)["stale_costs"]
    assert old[0] == "tux_per_kb" and "k_ack_rx (not analysed)" in old
    assert "**Stale:**" in "\n".join(report.sensitivity_markdown(se))


def test_bad_input_is_refused(tmp_path, capsys):
    c = cells()[0]
    (tmp_path / "a-file").write_text("")
    with pytest.raises(SensitivityError, match="no_such_cost"):
        analyse([c], Runner(tmp_path), params={"userver": ("no_such_cost",)})
    with pytest.raises(SensitivityError, match="step"):
        analyse([c], Runner(tmp_path), step=1.0)
    assert cli.main(["sensitivity", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert cli.main(["sensitivity", "--out", str(tmp_path / "a-file")]) == 2
    assert "not a directory" in capsys.readouterr().err
    # a missing --out passes (made when the files are written, as by the other analyses): the
    # refusal that follows is the step's, and nothing was made
    assert cli.main(["sensitivity", "--out", str(tmp_path / "missing"), "--cache", str(tmp_path / "c"),
                     "--step", "1"]) == 2
    assert "not a directory" not in capsys.readouterr().err and not (tmp_path / "missing").exists()
    assert cli.main(["sensitivity", "--out", str(tmp_path), "--step", "1"]) == 2
    assert "step" in capsys.readouterr().err
    blocker = tmp_path / "a-file"
    assert cli.main(["sensitivity", "--out", str(tmp_path), "--cache", str(blocker / "sub")]) == 2
    assert "--cache" in capsys.readouterr().err


def test_rows_are_chosen_by_label_or_as_the_reports_misses(tmp_path, capsys):
    cs = cells()
    labels = ["tux/one-packet/-/accept-inf@23000", "knot/one-packet/-/accept-50@peak"]
    assert [c.label for c in select_cells(cs, labels + labels[:1])] == labels
    with pytest.raises(SensitivityError, match="'tux/one-packet/-/accept-7@1'"):
        select_cells(cs, labels + ["tux/one-packet/-/accept-7@1"])
    with pytest.raises(SensitivityError, match="no rows"):
        select_cells(cs, [])
    # misses: held-out throughput cells scored outside the band; other metrics and roles are not rows to run
    head = "group,role,row,policy,target_rate,metric,measured,predicted,error,kind,tolerance,ok,table,cite\n"
    (tmp_path / "cells.csv").write_text(head + "\n".join([
        "g,held-out,a@1,1,1,replies_per_s,1,2,1,rel,0.1,False,t,t",
        "g,held-out,a@1,1,1,c_avg,1,2,1,rel,0.25,False,t,t",
        "g,held-out,b@1,1,1,replies_per_s,1,1,0,rel,0.1,True,t,t",
        "g,calibration,c@1,1,1,replies_per_s,1,2,1,rel,0.1,False,t,t",
        "g,held-out,d@peak,1,,peak_replies_per_s,1,2,1,rel,0.1,False,t,t"]) + "\n")
    assert report_misses(tmp_path / "cells.csv") == ["a@1", "d@peak"]
    with pytest.raises(SensitivityError, match="cells.csv"):
        report_misses(tmp_path / "none.csv")
    # the committed report's misses are all rows the analysis can run
    assert set(report_misses()) <= {c.label for c in cs}
    assert cli.main(["sensitivity", "--out", str(tmp_path), "--rows", "knot/one-packet/-/accept-50@nope"]) == 2
    assert "accept-50@nope" in capsys.readouterr().err
    assert cli.main(["sensitivity", "--out", str(tmp_path), "--rows", " , "]) == 2
    assert "no rows" in capsys.readouterr().err
    assert not (tmp_path / "sensitivity-rows.json").exists()


@pytest.mark.parametrize("rates,ys,want", [
    ([100, 110, 120], [99.5, 109.0, 100.0], 2),     # kept up at 110 (99.1 %), saturated at 120: censored
    ([100, 110, 120], [99.5, 105.0, 100.0], None),  # 95 % of 110: past saturation, the maximum is the peak
    ([100, 110, 120], [99.5, 109.9, 119.9], None),  # kept up to the top: no saturated point to read
    ([100, 110, 120], [99.9, 90.0, 80.0], 1),       # censored at the grid's first point
])
def test_past_censored_peak(rates, ys, want):
    assert past_censored_peak(rates, ys) == want


class _GridRunner:
    """Replies/s of a server with capacity ``scale / (k_syn + k_syn_drop)`` that keeps up below it and
    collapses past it (y = cap^5 / rate^4): no simulation, only the rule the analysis reads peaks with."""
    n_run = 0

    def __init__(self, cap):
        self.ks = load_costs("thesis-2004").as_dict()
        self.scale = cap * (self.ks["k_syn"] + self.ks["k_syn_drop"])

    def replies(self, jsons):
        out = {}
        for js in jsons:
            d = json.loads(js)
            k = {p: float(d["costs"].get(p, self.ks[p])) for p in ("k_syn", "k_syn_drop")}
            cap = self.scale / (k["k_syn"] + k["k_syn_drop"])
            rate = float(d["workload"]["rate"])
            out[js] = rate if rate <= cap else cap ** 5 / rate ** 4
        return out


def test_censored_peak_reads_elasticities_past_it():
    c = next(c for c in cells() if c.label == "knot/one-packet/-/accept-50@peak")   # grid 12,600 .. 19,600
    params = {"knot": ("k_syn", "k_syn_drop")}
    row, = analyse([c], _GridRunner(20_000), params=params, what_if=False, partial=True)["rows"]
    assert row["predicted"] == 19600.0 and row["elasticity_at_rate"] is None      # kept up at the top point
    res = analyse([c], _GridRunner(17_000), params=params, what_if=False, partial=True)
    row, = res["rows"]
    assert row["predicted"] == 16800.0 and row["elasticity_at_rate"] == 18200.0   # censored
    assert not row["ok"]                                                          # +20 %: listed as a miss
    ks = load_costs("thesis-2004").as_dict()
    total = ks["k_syn"] + ks["k_syn_drop"]
    for p in params["knot"]:       # at 18,200, y ~ cap^5 and cap ~ 1 / (k_syn + k_syn_drop)
        want = 5 * math.log(total / (total + 0.25 * ks[p])) / math.log(1.25)
        assert row["elasticity"][p] == pytest.approx(want)
        assert row["elasticity"][p] < -0.5              # read at the peak itself, both would be 0
    assert "Censored peak" in markdown({**res, "generated_at": "now"})


def _analysis(row, e, costs, fingerprint, when="2099-01-01T00:00:00+00:00"):
    return {"profile": "thesis-2004", "costs": costs, "step": 1.25, "generated_at": when,
            "model_fingerprint": fingerprint, "what_if": [],
            "params": {"tux_cold": {"status": "seen by hand-set rows", "value": costs["tux_cold"]}},
            "rows": [{"row": row, "role": "held-out", "ok": False, "error": e,
                      "elasticity": {"tux_cold": -0.44}, "factor_to_band": {"tux_cold": 0.8}}]}


def test_report_points_at_a_current_partial_run_when_the_whole_analysis_is_stale(tmp_path):
    from simaccept.scenario import model_fingerprint
    now = dict(load_costs("thesis-2004").us)
    old = dict(now, k_syn=now["k_syn"] * 2)
    row = "tux/one-packet/-/accept-inf@23000"
    (tmp_path / "sensitivity.json").write_text(json.dumps(_analysis(row, -0.30, old, model_fingerprint())))
    (tmp_path / "sensitivity-rows.json").write_text(json.dumps(_analysis(row, -0.175, now, model_fingerprint())))
    se = report._sensitivity_summary(tmp_path)
    md = "\n".join(report.sensitivity_markdown(se))
    assert se["stale_costs"] == ["k_syn"] and "**Stale:**" in md
    assert "**Current for the cells that miss:**" in md and "sensitivity-rows.md" in md
    assert f"| {row} | -17.5 % | `tux_cold` -0.44" in md and f"| {row} | -30.0 % |" in md
    # a partial run of another model, or with other costs, is not current either
    for stale_rows in (_analysis(row, -0.175, now, "0" * 16), _analysis(row, -0.175, old, model_fingerprint())):
        (tmp_path / "sensitivity-rows.json").write_text(json.dumps(stale_rows))
        assert report._sensitivity_summary(tmp_path)["rows_current"] is None
    # nor needed when the whole analysis is current
    (tmp_path / "sensitivity.json").write_text(json.dumps(_analysis(row, -0.175, now, model_fingerprint())))
    (tmp_path / "sensitivity-rows.json").write_text(json.dumps(_analysis(row, -0.175, now, model_fingerprint())))
    se = report._sensitivity_summary(tmp_path)
    assert se["rows_current"] is None and "Current for" not in "\n".join(report.sensitivity_markdown(se))


def _miss(row, error, e):
    return {"row": row, "role": "held-out", "ok": False, "error": error, "elasticity": e,
            "factor_to_band": {p: 1.1 for p in e}}


def test_report_says_when_one_cost_cannot_close_misses_that_err_both_ways(tmp_path):
    from simaccept.scenario import model_fingerprint
    d = _analysis("a@1", 0.12, dict(load_costs("thesis-2004").us), model_fingerprint())
    d["params"] = {p: {"status": "unidentified", "value": 1.0} for p in ("sendfile_per_kb", "k_ack_rx", "write")}
    d["rows"] = [_miss("a@1", 0.12, {"sendfile_per_kb": -0.33, "k_ack_rx": -0.19, "write": 0.0}),
                 _miss("a@2", -0.16, {"sendfile_per_kb": -0.36, "k_ack_rx": -0.21, "write": -0.05})]
    cell = lambda row, ok, was_ok: {"row": row, "role": "held-out", "ok": ok, "was_ok": was_ok,
                                    "error": 0.0, "was_error": 0.0}
    d["what_if"] = [{"param": "sendfile_per_kb", "factor": 1.06, "value": 2.12, "chosen_for": ["a@1"],
                     "heldout_within": 1, "heldout_within_before": 1, "heldout_cells": 3,
                     "calibration_max_abs_change": 0.0,
                     "cells": [cell("a@1", True, False), cell("a@2", False, False), cell("b@1", False, True)]}]
    (tmp_path / "sensitivity.json").write_text(json.dumps(d))
    se = report._sensitivity_summary(tmp_path)
    # `write` is not seen by a@1: only the costs both misses see count
    assert se["one_way_costs"] == ["sendfile_per_kb", "k_ack_rx"]
    w, = se["what_if"]
    assert w["brought_in"] == ["a@1"] and w["pushed_out"] == ["b@1"]
    md = "\n".join(report.sensitivity_markdown(se))
    assert "| 1 -> 1 of 3 | a@1 | b@1 |" in md
    assert "No one of these changes brings every held-out cell inside" in md
    assert "err both ways (+12.0 %, -16.0 %)" in md and "`sendfile_per_kb`, `k_ack_rx`" in md
    # a cost that moves the two misses apart could close both: no such claim
    d["rows"][1]["elasticity"]["k_ack_rx"] = +0.21
    (tmp_path / "sensitivity.json").write_text(json.dumps(d))
    assert report._sensitivity_summary(tmp_path)["one_way_costs"] is None
    # misses all on one side: one cost may close them all
    d["rows"][1]["elasticity"]["k_ack_rx"], d["rows"][1]["error"] = -0.21, 0.16
    (tmp_path / "sensitivity.json").write_text(json.dumps(d))
    se = report._sensitivity_summary(tmp_path)
    assert se["one_way_costs"] is None and "err both ways" not in "\n".join(report.sensitivity_markdown(se))
    # the analysis's own page says it too
    d["rows"][1]["error"] = -0.16
    for s in d["params"].values():
        s.update(max_abs_e_calibration=0.0, max_abs_e_hand_set=None)
    for r in d["rows"]:
        r.update(measured=100.0, predicted=100.0 * (1 + r["error"]))
    page = markdown({**d, "partial": False, "seen_threshold": SEEN, "generated_at": "now"})
    assert "err both ways (+12.0 %, -16.0 %)" in page
    assert "| 1 -> 1 of 3 | a@1 | b@1 |" in page

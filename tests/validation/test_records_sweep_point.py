"""A sweep's rows are simulated again as the points they were: same seed key, same random stream."""
import json
import shutil
import warnings
from pathlib import Path

import pytest

import simaccept
from simaccept.sweep import run_sweep
from validation.fitter import SWEEP_POINT, CostFitter, scenario_from_json, scenario_json
from validation.records import RecordError, load_records, scenario_for

ROOT = Path(__file__).resolve().parents[2]
BASE = ["scenario.warmup=0.05", "scenario.duration=0.1", "scenario.seed=9", "workload.rate=3000",
        "server.accept_limit=1"]


def _sweep(tmp_path, axes, name="sw"):
    sc = simaccept.load_scenario(ROOT / "scenarios/thesis/userver-onepacket.toml", BASE + axes)
    run_sweep(sc, tmp_path / name, jobs=1, plots=False)
    return sc.points(), load_records(tmp_path / name / "results.csv")


def _keys(recs, overrides=()):
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # a label that could not be rebuilt warns
        return [scenario_for(m, overrides=list(overrides)).point_key for m in recs]


def test_per_cost_axes_out_of_alphabetical_order(tmp_path):
    # the config column is written with sorted keys: [costs] came back accept, select_base
    points, recs = _sweep(tmp_path, ["costs.select_base=[10.0, 12.0]", "costs.accept=[3.0, 4.0]"])
    assert [m.record.point for m in recs] == [p.point_label() for p in points]
    assert recs[0].record.point.startswith("costs.select_base=")
    assert _keys(recs) == [p.point_key for p in points]


def test_a_semicolon_in_a_swept_profile_path(tmp_path):
    prof = []
    for d in ("p;a", "p;b"):
        (tmp_path / d).mkdir()
        shutil.copy(ROOT / "simaccept/costs/thesis-2004.toml", tmp_path / d / "c.toml")
        prof.append(json.dumps(str(tmp_path / d / "c.toml")))
    points, recs = _sweep(tmp_path, [f"costs.profile=[{', '.join(prof)}]"])
    assert ";" in recs[0].record.point.split("=", 1)[1]
    assert _keys(recs) == [p.point_key for p in points]


def test_a_set_or_fitted_cost_on_a_swept_key_keeps_the_stream(tmp_path):
    points, recs = _sweep(tmp_path, ["costs.select_base=[10.0, 12.0]"])
    assert _keys(recs, ["costs.select_base=10.5"]) == [p.point_key for p in points]
    sc = scenario_for(recs[0], overrides=["costs.select_base=10.5"])
    assert sc["costs"]["select_base"] == 10.5


def test_json_round_trip_and_unkeyed_json_is_to_json(tmp_path):
    points, recs = _sweep(tmp_path, ["workload.rate=[3000.0, 4000.0]"])
    sc = scenario_for(recs[1])
    js = scenario_json(sc)
    back = scenario_from_json(js, "<t>")
    assert SWEEP_POINT in json.loads(js) and back.point_key == points[1].point_key
    assert back.values == sc.values and back.coords == points[1].coords
    plain = simaccept.load_scenario(ROOT / "scenarios/thesis/userver-onepacket.toml", BASE)
    assert scenario_json(plain) == plain.to_json()      # what the fitter's cache was keyed by


def test_the_fitter_starts_on_a_sweep_with_no_residual(tmp_path):
    # the rows came from thesis-2004 itself: with their own streams the residual is exactly 0
    points, recs = _sweep(tmp_path, ["workload.rate=[20000.0, 30000.0]"])
    f = CostFitter(params=["select_base"], metrics=["replies_per_s"], max_nfev=1, accept_max_nfev=True).fit(recs)
    assert f.start_residual_norm_ == 0.0


def test_a_seed_past_2_53_is_the_configs_own(tmp_path):
    big = 2 ** 60 + 1
    sc = simaccept.load_scenario(ROOT / "scenarios/thesis/userver-onepacket.toml", BASE + [f"scenario.seed={big}"])
    rec = simaccept.simulate(sc)
    from simaccept.sweep import records_to_csv
    (tmp_path / "r.csv").write_text(records_to_csv([rec]))
    (m,) = load_records(tmp_path / "r.csv")
    assert m.record.seed != big and scenario_for(m)["scenario"]["seed"] == big


@pytest.mark.parametrize("cell,column", [("target_rate", "target_rate"), ("config", "config")])
def test_a_records_own_bad_value_names_its_column_and_a_set_may_repair_it(tmp_path, cell, column):
    from simaccept.sweep import records_to_csv
    rec = simaccept.simulate(simaccept.load_scenario(ROOT / "scenarios/thesis/userver-onepacket.toml", BASE))
    if cell == "target_rate":
        rec.target_rate = 1e12
    else:
        doc = json.loads(rec.config)
        doc["kernel"]["backlog"] = -4
        rec.config = json.dumps(doc)
    (tmp_path / "r.csv").write_text(records_to_csv([rec]))
    (m,) = load_records(tmp_path / "r.csv")
    with pytest.raises(RecordError) as e:
        scenario_for(m)
    assert e.value.column == column and e.value.line == 2
    if cell == "config":
        assert scenario_for(m, overrides=["kernel.backlog=128"])["kernel"]["backlog"] == 128


def test_a_point_label_that_cannot_be_rebuilt_warns_naming_the_row(tmp_path):
    # a review's case: the warning named no file or line, only records.py's own
    sc = simaccept.load_scenario(ROOT / "scenarios/thesis/userver-onepacket.toml",
                                 BASE + ["workload.rate=[5000.0, 6000.0]"])
    rec = simaccept.simulate(list(sc.points())[0])
    rec.point = "server.foo=1;workload.rate=5000.0"
    from simaccept.sweep import records_to_csv
    (tmp_path / "r.csv").write_text(records_to_csv([rec]))
    (m,) = load_records(tmp_path / "r.csv")
    with pytest.warns(UserWarning, match=rf"^{tmp_path / 'r.csv'}:2: sweep point 'server.foo=1;"):
        scenario_for(m)

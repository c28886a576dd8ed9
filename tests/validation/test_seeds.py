"""validation.seeds: the held-out throughput cells across seeds."""
from __future__ import annotations

import dataclasses
import json
import math

import pytest

from validation import seeds
from validation.cli import main
from validation.records import load_thesis, record_seed

SPEC_AL1 = "userver/specweb99/select/accept-1@26000"          # thesis: 8,888 replies/s
KNOT_PEAK = "knot/one-packet/-/accept-50@peak"                # thesis: 14,000 replies/s


def _row(label):
    return next(m for m in load_thesis() if m.label == label)


def test_only_heldout_rows_with_a_throughput():
    rows = {m.label: metric for m, metric in seeds.heldout_throughput_rows()}
    assert rows[SPEC_AL1] == "replies_per_s"
    assert rows[KNOT_PEAK] == "peak_replies_per_s"
    # calibration (μserver one-packet) and hand-set rows are not held-out
    assert not any(lab.startswith("userver/one-packet/") for lab in rows)
    assert "knot/one-packet/-/accept-1@peak" not in rows
    # a held-out row without a measured throughput (Knot's open-connection count) is left out
    assert "knot/one-packet/-/accept-50@15000" not in rows


@pytest.mark.parametrize("values, within", [
    ([8888.0, 8888.0], 2),
    ([9776.0, 9778.0], 1),            # +9.99 % in, +10.01 % out
    ([7990.0, 10000.0], 0),           # -10.1 % and +12.5 %: out both ways
])
def test_cell_counts_the_seeds_in_band(values, within):
    c = seeds.cell(_row(SPEC_AL1), "replies_per_s", [1, 2], values)
    assert c["within_10pct_seeds"] == within and c["n_seeds"] == 2
    assert c["min"] == min(values) and c["max"] == max(values)
    assert math.isclose(c["error_min"], min(values) / 8888 - 1)
    assert math.isclose(c["error_max"], max(values) / 8888 - 1)


def test_peak_rows_take_the_largest_rate_at_each_seed():
    m = _row(KNOT_PEAK)
    p = seeds.plan([(m, "peak_replies_per_s")], 2, "thesis-2004")[KNOT_PEAK]
    assert len(p) == 2 and all(len(js) == 4 for js in p)          # 0.9-1.2 x the peak, per seed
    docs = [[json.loads(j) for j in js] for js in p]
    assert {d["scenario"]["seed"] for d in docs[0]} == {record_seed(m.record)}
    assert {d["scenario"]["seed"] for d in docs[1]} == {record_seed(m.record) + 1}
    assert sorted(d["workload"]["rate"] for d in docs[0]) == pytest.approx([12600.0, 14000.0, 15400.0, 16800.0])
    assert all(d["costs"]["profile"] == "thesis-2004" for d in docs[0])


def test_run_writes_the_spread_and_caches(tmp_path, monkeypatch):
    m = _row(SPEC_AL1)
    monkeypatch.setattr(seeds, "heldout_throughput_rows", lambda: [(m, "replies_per_s")])
    monkeypatch.setattr(seeds, "target_rate_rows", lambda: [(m, "replies_per_s")])
    real = seeds.scenario_for
    # the thesis's 120 s shortened so the test stays short; the mechanics are the same
    monkeypatch.setattr(seeds, "scenario_for", lambda m, overrides=(), **k: real(
        m, overrides=list(overrides) + ["scenario.duration=2"], **k))
    res = seeds.run(out=tmp_path, n=2, jobs=1, cache=tmp_path / "cache")
    c = res["cells"][0]
    assert c["seeds"] == [record_seed(m.record), record_seed(m.record) + 1]
    assert all(v > 0 for v in c["values"]) and c["values"][0] != c["values"][1]   # other seed, other run
    w = c["within_10pct_seeds"]
    assert w == sum(abs(v / 8888.0 - 1.0) <= 0.10 for v in c["values"])
    assert res["in_band_at_every_seed"] == int(w == 2) and res["in_band_at_no_seed"] == int(w == 0)
    saved = json.loads((tmp_path / "seeds.json").read_text())
    assert saved["cells"][0]["values"] == c["values"] and saved["costs"]["select_base"] > 0
    md = (tmp_path / "seeds.md").read_text()
    assert f"| {SPEC_AL1} | replies_per_s | 8,888 |" in md and "of 2 |" in md
    assert len(list((tmp_path / "cache").iterdir())) == 2      # the other cells are scored on the same runs
    other = {c["metric"]: c for c in res["other_cells"]}
    assert "replies_per_s" not in other                      # a held-out throughput cell is in the table above
    assert other["c_avg"]["values"] == [a / s for a, s in zip(
        [other["accept_rate"]["values"][0], other["accept_rate"]["values"][1]],
        [other["select_calls_per_s"]["values"][0], other["select_calls_per_s"]["values"][1]])]   # per loop
    assert res["other_by_metric"]["c_avg"]["cells"] == 1
    assert "## Every other cell across the same seeds" in md and f"| {SPEC_AL1} | held-out | C_avg |" in md
    assert f"| {SPEC_AL1} | held-out | select calls/s | 1,248 |" in md
    res3 = seeds.run(out=tmp_path, n=3, jobs=1, cache=tmp_path / "cache")      # one more seed: one more run
    assert len(list((tmp_path / "cache").iterdir())) == 3
    assert res3["cells"][0]["values"][:2] == c["values"]                     # same seeds, same results


def test_cli_refuses_bad_input(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["seeds", "--cache", str(f), "--out", str(tmp_path)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["seeds", "--seeds", "0", "--out", str(tmp_path)]) == 2
    assert "--seeds: must be >= 1, got 0" in capsys.readouterr().err
    assert main(["seeds", "--seeds", "1000000000", "--out", str(tmp_path)]) == 2      # its plan ran out of memory
    assert "more than 100,000" in capsys.readouterr().err
    assert main(["seeds", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs: must be >= 1, got 0" in capsys.readouterr().err
    assert main(["seeds", "--profile", "no-such-profile", "--out", str(tmp_path)]) == 2
    assert "--profile: no cost profile named 'no-such-profile'" in capsys.readouterr().err
    assert not (tmp_path / "seeds.md").exists()


def test_failed_simulation_is_refused_with_the_row(tmp_path, monkeypatch, capsys):
    m = _row(SPEC_AL1)
    monkeypatch.setattr(seeds, "heldout_throughput_rows", lambda: [(m, "replies_per_s")])
    monkeypatch.setattr(seeds, "target_rate_rows", lambda: [(m, "replies_per_s")])
    monkeypatch.setattr(seeds, "simulate_cached",
                        lambda jsons, *a, **k: {j: {"status": "error", "error": "boom\nmore"} for j in jsons})
    with pytest.raises(seeds.SeedsError, match=f"simulation failed.*{SPEC_AL1}: boom"):
        seeds.run(out=tmp_path, n=2, jobs=1, cache=tmp_path / "cache")
    assert not (tmp_path / "seeds.md").exists()
    assert main(["seeds", "--out", str(tmp_path), "--cache", str(tmp_path / "cache")]) == 1
    assert "simulation failed" in capsys.readouterr().err


def test_the_report_summarises_it(tmp_path, monkeypatch):
    from validation import report
    assert report._seeds_summary(tmp_path) is None
    assert report.seeds_markdown(None)[1].startswith("Not run for this output")
    m = _row(SPEC_AL1)
    monkeypatch.setattr(seeds, "heldout_throughput_rows", lambda: [(m, "replies_per_s")])
    monkeypatch.setattr(seeds, "target_rate_rows", lambda: [(m, "replies_per_s")])
    monkeypatch.setattr(seeds, "simulate_cached",
                        lambda jsons, *a, **k: {j: {"status": "ok", "replies_per_s": 8000.0 + 1000 * i}
                                                for i, j in enumerate(jsons)})
    seeds.run(out=tmp_path, n=3, jobs=1, cache=tmp_path / "cache")
    s = report._seeds_summary(tmp_path)
    c = s["cells"][0]
    assert (c["min"], c["max"], c["within_10pct_seeds"]) == (8000.0, 10000.0, 2)    # -9.99 %, +1.3 %, +12.5 %
    assert s["in_band"][f"{SPEC_AL1}|replies_per_s"] == [2, 3] and s["in_band"][f"{SPEC_AL1}|c_avg"] == [0, 3]
    assert s["in_band_at_every_seed"] == 0 and s["in_band_at_no_seed"] == 0 and s["stale_costs"] == []
    md = "\n".join(report.seeds_markdown(s))
    assert "## Across seeds" in md and "Stale" not in md
    assert f"| {SPEC_AL1} | 8,888 | 8,000 – 10,000 | -10.0 % – +12.5 % | 2 of 3 |" in md
    # the mocked runs have no loop counts: every C_avg is NaN, so out of band at every seed
    assert s["other_by_metric"]["c_avg"] == {"cells": 1, "every_seed": 0, "some_seeds": 0, "no_seed": 1}
    assert f"| {SPEC_AL1} | held-out | C_avg |" in md and "| C_avg | ±25 % | 1 | 0 | 0 | 1 |" in md
    assert "(`python -m validation trace`; of the same runs and model as seeds.md)" in md
    (tmp_path / "trace.json").write_text(json.dumps({"model_fingerprint": "0123456789abcdef"}))
    md = "\n".join(report.seeds_markdown(report._seeds_summary(tmp_path)))   # traced at another model: said so
    assert "its runs are of model `0123456789abcdef`, seeds.md's of `" in md and "same runs and model" not in md
    (tmp_path / "trace.json").unlink()
    saved = json.loads((tmp_path / "seeds.json").read_text())
    for k in ("other_cells", "other_by_metric"):              # as written before they were scored per seed
        del saved[k]
    (tmp_path / "seeds.json").write_text(json.dumps(saved))
    old = report._seeds_summary(tmp_path)
    assert old["other_by_metric"] is None and old["loop_cells"] == []
    assert "| C_avg |" not in "\n".join(report.seeds_markdown(old))
    saved = json.loads((tmp_path / "seeds.json").read_text())
    saved["costs"]["sendfile_per_kb"] += 1.0                  # computed with other costs: flagged
    (tmp_path / "seeds.json").write_text(json.dumps(saved))
    s = report._seeds_summary(tmp_path)
    assert s["stale_costs"] == ["sendfile_per_kb"] and "**Stale:**" in "\n".join(report.seeds_markdown(s))


@pytest.mark.parametrize("shape, top", [("rising", True), ("saturated", False)])
def test_a_peak_at_the_highest_rate_is_marked_a_lower_bound(tmp_path, monkeypatch, shape, top):
    m = _row(KNOT_PEAK)
    monkeypatch.setattr(seeds, "heldout_throughput_rows", lambda: [(m, "peak_replies_per_s")])

    def fake(jsons, *a, **k):
        out = {}
        for j in jsons:
            rate = json.loads(j)["workload"]["rate"]
            out[j] = {"status": "ok", "replies_per_s": rate if shape == "rising" else min(rate, 14500.0 - rate / 100)}
        return out
    monkeypatch.setattr(seeds, "simulate_cached", fake)
    c = seeds.run(out=tmp_path, n=1, jobs=1, cache=tmp_path / "cache")["cells"][0]
    assert c["at_top_rate"] is top
    # rising: 16,800 at the highest rate; saturated: 14,346 at 15,400, then 14,332 at 16,800
    assert c["max"] == pytest.approx(16800.0 if top else 14346.0)
    row = next(line for line in (tmp_path / "seeds.md").read_text().splitlines() if line.startswith(f"| {KNOT_PEAK}"))
    assert ("| ≥ " in row) is top


def test_every_row_with_a_target_rate_whatever_its_role():
    rows = {m.label for m, _ in seeds.target_rate_rows()}
    assert "userver/one-packet/select/accept-inf@27000" in rows          # calibration: its loop was not fitted
    assert "knot/one-packet/-/accept-50@15000" in rows                   # open connections only
    assert SPEC_AL1 in rows
    assert not any(lab.endswith("@peak") for lab in rows)               # a peak is a line, not a point


AI27 = "userver/one-packet/select/accept-inf@27000"   # table 4.7/4.8: 18,462 accepts/s, 262 selects/s, C_avg 70.43


def test_metric_cells_score_each_seed_with_the_reports_tolerances():
    m = _row(AI27)
    exact = m.record
    # seed 2's loop three times as long: the same accepts in a third of the selects
    long_loop = dataclasses.replace(exact, select_calls_per_s=262.0 / 3)
    cells = {c["metric"]: c for c in seeds.metric_cells(m, [7, 8], [exact, long_loop])}
    assert "pct_of_peak" not in cells                                     # needs the row's line
    ca = cells["c_avg"]
    assert ca["values"] == pytest.approx([18462 / 262, 3 * 18462 / 262])  # per loop, as the thesis counts
    assert ca["within_seeds"] == 1 and ca["n_seeds"] == 2 and ca["seeds"] == [7, 8]
    assert ca["error_max"] == pytest.approx(3 * 18462 / 262 / 70.43 - 1)
    assert cells["select_calls_per_s"]["within_seeds"] == 1
    assert cells["replies_per_s"]["within_seeds"] == 2 and cells["replies_per_s"]["role"] == "calibration"
    sh = cells["share:drops_drop_request"]
    assert sh["kind"] == "pp" and sh["errors"] == pytest.approx([0.0, 0.0]) and sh["within_seeds"] == 2
    counts = seeds.by_metric(list(cells.values()))
    assert counts["c_avg"] == {"cells": 1, "every_seed": 0, "some_seeds": 1, "no_seed": 0}
    assert counts["replies_per_s"]["every_seed"] == 1
    assert list(counts)[0] == "replies_per_s"                             # METRICS order


def test_a_failed_seed_counts_out_of_band():
    m = _row(AI27)
    failed = dataclasses.replace(m.record, status="error")
    cells = {c["metric"]: c for c in seeds.metric_cells(m, [1, 2], [m.record, failed])}
    c = cells["replies_per_s"]
    assert c["within_seeds"] == 1 and math.isnan(c["values"][1]) and c["min"] == c["max"] == 15918.0
    md = "\n".join(seeds.other_markdown({"n_seeds": 2, "other_cells": list(cells.values()),
                                          "other_by_metric": seeds.by_metric(list(cells.values()))}))
    assert f"| {AI27} | calibration | replies/s | 15,918 | 15,918 – 15,918 | +0.0 % – +0.0 % | 1 of 2 |" in md


def test_the_committed_report_headline_counts_the_committed_seeds():
    from validation.records import ROOT
    d = json.loads((ROOT / "docs/validation/seeds.json").read_text())
    ob = d["other_by_metric"]
    assert ob == seeds.by_metric(d["other_cells"])
    every, none = sum(v["every_seed"] for v in ob.values()), sum(v["no_seed"] for v in ob.values())
    k = sum(v["cells"] for v in ob.values())
    assert k == len(d["other_cells"]) and 0 < every < k
    head = (ROOT / "docs/validation/index.md").read_text()
    assert f"within tolerance at all {d['n_seeds']} seeds (see *Across seeds*) | {every} of {k}; at none {none} |" in head
    # every missing cell the seeds analysis scores says at how many seeds it is in band
    lines = head.split("## Cells that miss")[1].split("## Per-table")[0].splitlines()
    scored = 0
    for c in d["other_cells"]:
        miss = [ln for ln in lines if ln.startswith(f"| {c['row']} | {c['label']} |")]
        assert len(miss) <= 1
        if miss:
            scored += 1
            assert f"| {c['within_seeds']} of {c['n_seeds']} |" in miss[0], miss[0]
    assert scored > 0

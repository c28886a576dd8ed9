"""validation.window: the thesis rows simulated in the scenario files' window and in the thesis's."""
from __future__ import annotations

import json
import math

import pytest

from validation import window
from validation.cli import main
from validation.records import load_thesis

SPEC_AL1 = "userver/specweb99/select/accept-1@26000"


def _row(label):
    return next(m for m in load_thesis() if m.label == label)


def test_rows_with_rates_skip_peaks_and_client_rows():
    rows = window.rows_with_rates()
    labels = {m.label for m in rows}
    assert SPEC_AL1 in labels
    assert all(not math.isnan(m.record.target_rate) and m.record.server for m in rows)
    # a peak row (no target rate) and the client-side demand rows (no server) are left out
    assert not any(m.label.endswith("@peak") for m in rows)


def test_compare_errors_tolerances_and_change():
    m = _row(SPEC_AL1)                        # thesis: 8,888 replies/s, C_avg 0.97
    # the μserver's C_avg per loop, as the thesis counts it (accepts / select calls), not the sim's c_avg
    a = {"status": "ok", "replies_per_s": 9770.0, "c_avg": 3.0, "accept_rate": float("nan"),
         "select_calls_per_s": 1200.0}
    b = {"status": "ok", "replies_per_s": 7900.0, "c_avg": 1.0, "accept_rate": 1500.0, "select_calls_per_s": 1000.0}
    cells = {c["metric"]: c for c in window.compare([m], {m.label: a}, {m.label: b})}
    thr = cells["replies_per_s"]
    assert math.isclose(thr["error_file_window"], 9770 / 8888 - 1)     # +9.9 %: inside
    assert thr["ok_file_window"] and thr["tolerance"] == 0.10
    assert math.isclose(thr["change"], 7900 / 9770 - 1)
    assert not thr["ok_thesis_window"]                                   # -11.1 %: outside
    cavg = cells["c_avg"]
    assert cavg["tolerance"] == 0.25 and math.isnan(cavg["file_window"]) and not cavg["ok_file_window"]
    assert cavg["thesis_window"] == 1.5 and not cavg["ok_thesis_window"]
    a.update(accept_rate=1200.0)                                         # 1.0 a loop: inside, whatever c_avg says
    assert next(c for c in window.compare([m], {m.label: a}, {m.label: b}) if c["metric"] == "c_avg")["ok_file_window"]
    # a metric the simulation did not produce is NaN, never within tolerance
    acc = cells["accept_rate"]
    assert math.isnan(acc["error_file_window"]) and not acc["ok_file_window"]


def test_run_writes_both_windows_and_caches(tmp_path, monkeypatch):
    # the thesis's window shortened so the test stays short; the mechanics are the same
    monkeypatch.setattr(window, "THESIS_WINDOW", ("scenario.warmup=0", "scenario.duration=2"))
    real_rows = window.rows_with_rates
    monkeypatch.setattr(window, "rows_with_rates", lambda: [m for m in real_rows() if m.label == SPEC_AL1])
    monkeypatch.setattr(window, "file_window", lambda m: ["scenario.warmup=1", "scenario.duration=2"])
    res = window.run(out=tmp_path, jobs=1, cache=tmp_path / "cache")
    assert res["throughput_within_10pct"]["cells"] == 1
    assert res["file_window_s"] == ["1 s warm-up + 2 s"]
    saved = json.loads((tmp_path / "window.json").read_text())
    thr = [c for c in saved["cells"] if c["metric"] == "replies_per_s"][0]
    assert thr["file_window"] > 0 and thr["thesis_window"] > 0
    assert thr["file_window"] != thr["thesis_window"]           # different windows, different runs
    assert "| userver/specweb99/select/accept-1@26000 | held-out | replies_per_s |" in (tmp_path / "window.md").read_text()
    n = len(list((tmp_path / "cache").iterdir()))
    assert n == 2
    window.run(out=tmp_path, jobs=1, cache=tmp_path / "cache")   # everything cached: nothing new
    assert len(list((tmp_path / "cache").iterdir())) == n
    # the report summarises it when it finds window.json in its output directory
    from validation import report
    s = report._window_summary(tmp_path)
    assert s["throughput_within_10pct"]["cells"] == 1 and s["throughput"][0]["role"] == "held-out"
    md = "\n".join(report.window_markdown(s))
    assert "## The measurement window" in md and "| userver/specweb99/select/accept-1@26000 | held-out |" in md
    assert report.window_markdown(None)[1].startswith("Not run for this output")
    # it records the costs it used: current now; a cost changed since is named, in bold
    assert s["stale_costs"] == [] and "Stale" not in md
    saved["costs"]["select_base"] += 1.0
    (tmp_path / "window.json").write_text(json.dumps(saved))
    s = report._window_summary(tmp_path)
    assert s["stale_costs"] == ["select_base"]
    assert "**Stale:**" in "\n".join(report.window_markdown(s))
    del saved["costs"]
    (tmp_path / "window.json").write_text(json.dumps(saved))
    assert report._window_summary(tmp_path)["stale_costs"] == ["(the file does not record the costs it used)"]
    # it records the simulator's code it ran: current now; a different model is named in the stale line
    from simaccept.scenario import model_fingerprint
    assert saved["model_fingerprint"] == model_fingerprint() and s["stale_model"] == []
    saved["model_fingerprint"] = "0123456789abcdef"
    (tmp_path / "window.json").write_text(json.dumps(saved))
    s = report._window_summary(tmp_path)
    assert len(s["stale_model"]) == 1 and "`0123456789abcdef` then" in s["stale_model"][0]
    assert "`0123456789abcdef` then" in "\n".join(report.window_markdown(s))


def test_file_window_is_the_scenario_files():
    m = _row(SPEC_AL1)
    assert window.file_window(m) == ["scenario.warmup=10.0", "scenario.duration=10.0"]
    # the thesis side is what the report simulates: the row's own window
    from validation.records import record_window
    assert tuple(record_window(m)) == window.THESIS_WINDOW[:1] + ("scenario.duration=120.0",)


def test_cli_refuses_bad_cache_and_jobs(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["window", "--cache", str(f), "--out", str(tmp_path)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["window", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs: must be >= 1, got 0" in capsys.readouterr().err
    assert main(["window", "--profile", "no-such-profile", "--out", str(tmp_path)]) == 2
    assert "--profile: no cost profile named 'no-such-profile'" in capsys.readouterr().err


def test_failed_simulation_is_refused_with_the_row(tmp_path, monkeypatch, capsys):
    real_rows = window.rows_with_rates
    monkeypatch.setattr(window, "rows_with_rates", lambda: [m for m in real_rows() if m.label == SPEC_AL1])
    monkeypatch.setattr(window, "simulate_cached",
                        lambda jsons, *a, **k: {j: {"status": "error", "error": ""} for j in jsons})
    with pytest.raises(window.WindowError, match=f"simulation failed.*{SPEC_AL1}: no error text"):
        window.run(out=tmp_path, jobs=1, cache=tmp_path / "cache")
    assert not (tmp_path / "window.md").exists()
    assert main(["window", "--out", str(tmp_path), "--cache", str(tmp_path / "cache")]) == 1
    assert "simulation failed" in capsys.readouterr().err

"""The chapter-4/5 figure writers on real (short) simulated records."""
from __future__ import annotations

import pytest

from simaccept import load_scenario, simulate
from simaccept import figures

pytest.importorskip("matplotlib")


def _recs(server, rates, limits):
    out = []
    for lim in limits:
        for rate in rates:
            sc = load_scenario(figures.SCENARIO_DIR / f"{server}-onepacket.toml",
                               [f"server.accept_limit={lim}", f"workload.rate={rate}",
                                "scenario.warmup=0.1", "scenario.duration=0.2"])
            out.append(simulate(sc))
    return out


def test_every_thesis_figure_has_a_sweep_and_a_metric():
    for num, (names, m, cap) in {**figures.CHAPTER4, **figures.CHAPTER5}.items():
        assert names and all(n in figures.SWEEPS for n in names), num
        assert m in figures._M and cap
        assert all((figures.SCENARIO_DIR / f"{n}.toml").exists() for n in names)
    nums = set(figures.CHAPTER4) | set(figures.CHAPTER5) | {"5.5"}
    assert nums == {f"4.{i}" for i in range(1, 23)} | {f"5.{i}" for i in range(1, 8)}


def test_line_and_breakdown_figures_are_written(tmp_path):
    recs = _recs("userver", [22000, 30000], [1, "inf"]) + _recs("tux", [30000], [1])
    assert all(r.status == "ok" for r in recs)
    p = figures.line_figure(recs, "replies_per_s", "Replies/s", "t", tmp_path / "fig5.2")
    assert [x.name for x in p] == ["fig5.2.png"] and p[0].stat().st_size > 5000
    p = figures.drop_breakdown_figure(recs, (22000.0, 30000.0), "t", tmp_path / "fig5.5")
    assert p[0].stat().st_size > 5000
    assert not list(tmp_path.glob("*.tmp*"))


def test_without_matplotlib_figures_stops_before_simulating(tmp_path, monkeypatch, capsys):
    # matplotlib is an extra (simaccept[plot]): `simaccept figures` ran all six sweeps first,
    # minutes of simulation, then ended in a ModuleNotFoundError traceback
    import sys
    from simaccept import cli

    def boom(*a, **k):
        raise AssertionError("a sweep ran")
    monkeypatch.setattr(figures, "run_sweeps", boom)
    monkeypatch.setitem(sys.modules, "matplotlib", None)        # import matplotlib raises ImportError
    assert cli.main(["figures", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the figures are drawn with matplotlib") and "simaccept[plot]" in err, err
    with pytest.raises(figures.NoMatplotlib):
        figures.make_figures(tmp_path / "g")


def test_a_directory_where_a_figure_goes_is_refused_before_simulating(tmp_path, monkeypatch, capsys):
    # `simaccept figures` ran its six sweeps (24 min), then ended in an IsADirectoryError traceback
    from simaccept import cli

    def boom(*a, **k):
        raise AssertionError("a sweep ran")
    monkeypatch.setattr(figures, "run_sweeps", boom)
    (tmp_path / "f" / "fig4.3.png").mkdir(parents=True)
    assert cli.main(["figures", "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "fig4.3.png" in err and "is a directory" in err, err


def test_a_figure_that_cannot_be_written_is_an_error_not_a_traceback(tmp_path, monkeypatch, capsys):
    import errno
    from simaccept import cli
    recs = _recs("userver", [22000], [1])
    monkeypatch.setattr(figures, "run_sweeps", lambda out, jobs=1, log=None: (
        {n: recs for n in figures.SWEEPS}, {n: 0.0 for n in figures.SWEEPS}))

    def full(fig, stem, formats=("png",)):
        raise OSError(errno.ENOSPC, "No space left on device", f"{stem}.png")
    monkeypatch.setattr(figures, "save_figure", full)
    assert cli.main(["figures", "--out", str(tmp_path / "f")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error:") and "No space left on device" in err and "rerun" in err, err

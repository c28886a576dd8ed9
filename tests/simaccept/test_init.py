"""simaccept/__init__.py: the package's entry points are what they wrap, as inspect sees them."""
from __future__ import annotations

import inspect
import subprocess
import sys

import simaccept
import simaccept.sim
import simaccept.sweep


def _shape(fn):
    return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


def test_simulate_and_run_sweep_show_the_signatures_they_wrap():
    # they showed (scenario, *args, **kw) to help() and editors until 6 Dec 2026
    assert _shape(simaccept.simulate)[1:] == _shape(simaccept.sim.simulate)[1:]
    assert _shape(simaccept.run_sweep)[1:] == _shape(simaccept.sweep.run_sweep)[1:]


def test_run_sweep_takes_its_output_folder_by_position_and_passes_every_keyword(tmp_path, monkeypatch):
    seen = {}
    monkeypatch.setattr(simaccept.sweep, "run_sweep", lambda *a, **kw: seen.update(args=a, kw=kw))
    simaccept.run_sweep("sc", tmp_path, jobs=2, warn=False)
    assert seen["args"] == ("sc", tmp_path)
    assert seen["kw"] == {"jobs": 2, "dask": None, "progress": False, "plots": True, "on_point": None,
                          "parquet": False, "raise_errors": False, "warn": False}


def test_importing_the_package_does_not_import_the_simulator():
    code = "import sys, simaccept; print('simpy' in sys.modules, 'simaccept.sim' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]

"""Sweeps: same results whatever the workers; an interrupted sweep resumes."""
import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simaccept import load_scenario
from simaccept.sweep import read_csv, run_sweep

ROOT = Path(__file__).resolve().parents[2]
SMALL = """
[scenario]
name = "sweep-test"
duration = 1.0
warmup = 0.5
seed = 11
[workload]
rate = [2000, 6000, 12000]
[server]
accept_limit = [1, "inf"]
"""


def rows(path):
    with open(path, newline="") as f:
        out = []
        for r in csv.DictReader(f):
            for k in ("wall_s", "started_at"):
                r.pop(k)
            out.append(r)
        return out


def test_results_identical_for_one_and_two_jobs(tmp_path):
    sc = load_scenario(text=SMALL)
    run_sweep(sc, tmp_path / "j1", jobs=1, plots=False)
    run_sweep(sc, tmp_path / "j2", jobs=2, plots=False)
    a, b = rows(tmp_path / "j1" / "results.csv"), rows(tmp_path / "j2" / "results.csv")
    assert len(a) == 6
    assert a == b


def test_results_identical_with_dask_local(tmp_path):
    pytest.importorskip("dask.distributed")
    sc = load_scenario(text=SMALL)
    run_sweep(sc, tmp_path / "j1", jobs=1, plots=False)
    run_sweep(sc, tmp_path / "dk", dask="local", plots=False)
    assert rows(tmp_path / "j1" / "results.csv") == rows(tmp_path / "dk" / "results.csv")


def test_killed_sweep_resumes_and_recomputes_nothing_finished(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SMALL.replace("duration = 1.0", "duration = 2.0"))
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "simaccept", "sweep", str(spec), "--out", str(out), "--no-progress"]
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    points = out / "points"
    deadline = time.time() + 120
    while time.time() < deadline and len(list(points.glob("*.json"))) < 2:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    done = {f.name: f.stat().st_mtime_ns for f in points.glob("*.json")}
    assert 2 <= len(done) < 6, "the kill should land mid-sweep"
    assert not (out / "results.csv").exists()
    for f in points.iterdir():
        json.loads(f.read_text()) if f.suffix == ".json" else None     # no torn files
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    for name, mtime in done.items():
        assert (points / name).stat().st_mtime_ns == mtime           # not recomputed
    resumed = rows(out / "results.csv")
    # identical to an uninterrupted sweep
    run_sweep(load_scenario(spec), tmp_path / "clean", plots=False)
    assert resumed == rows(tmp_path / "clean" / "results.csv")


def test_cli_sweep_writes_csv_and_plots(tmp_path):
    spec = tmp_path / "s.toml"
    spec.write_text(SMALL)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "simaccept", "sweep", str(spec), "--jobs", "2",
                        "--out", str(tmp_path / "o"), "--no-progress"], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    recs = read_csv(tmp_path / "o" / "results.csv")
    assert len(recs) == 6 and all(x.status == "ok" for x in recs)
    if __import__("importlib").util.find_spec("matplotlib"):
        assert (tmp_path / "o" / "throughput.png").stat().st_size > 1000


def test_cli_run_json_and_bad_input(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    base = [sys.executable, "-m", "simaccept", "run", "scenarios/thesis/userver-onepacket.toml"]
    r = subprocess.run(base + ["--set", "workload.rate=5000", "--set", "server.accept_limit=1",
                               "--set", "scenario.warmup=0.2", "--set", "scenario.duration=0.5", "--json"],
                       env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    rec = json.loads(r.stdout)
    assert rec["source"] == "sim" and rec["target_rate"] == 5000 and json.loads(rec["config"])
    for bad, key in ([["--set", "workload.rate=-1"], "workload.rate"],
                     [["--set", "server.nope=1"], "server.nope"],
                     [[], "server.accept_limit"]):
        r = subprocess.run(base + bad, env=env, capture_output=True, text=True, timeout=60, cwd=ROOT)
        assert r.returncode == 2
        assert key in r.stderr and "Traceback" not in r.stderr

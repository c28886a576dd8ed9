"""realsys/c/switchcost and ``python -m realsys switch-cost``: one pthread block-and-wake timed on
this machine (the threaded server's thread_switch in the machine profile)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from realsys import C_DIR
from realsys.switchcost import FILE_NAME, read

REPO = Path(__file__).resolve().parents[2]


def _run(*args, prog="switchcost"):
    return subprocess.run([str(C_DIR / prog), *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("prog", ["switchcost", "switchcost-asan"])
def test_a_round_trip_costs_two_calls_and_two_block_and_wakes(cbuild, prog):
    p = _run("--rounds", "3", "--iterations", "2000", prog=prog)
    assert p.returncode == 0, p.stderr
    d = json.loads(p.stdout)
    assert d["tool"] == "switchcost" and d["rounds"] == 3 and d["iterations"] == 2000
    assert len(d["per_round"]) == 3
    for r in d["per_round"]:
        # the definition, per round (rounded to 4 decimals when printed)
        assert r["switch_us"] == pytest.approx((r["round_trip_us"] - 2 * r["calls_us"]) / 2, abs=2e-4)
        assert r["calls_us"] > 0
    # the medians are each column's own, so they need not satisfy the definition together
    for k in ("round_trip_us", "calls_us", "switch_us"):
        vals = sorted(r[k] for r in d["per_round"])
        assert d[k] == vals[1], k
    # a block-and-wake is work: a scheduler that switched for free would be news (and a bug here)
    assert 0 < d["switch_us"] < 1000
    assert d["cpu"] in os.sched_getaffinity(0)


@pytest.mark.parametrize("args, says", [
    (["--rounds", "0"], "--rounds: expected an integer from 1 to 1000, got '0'"),
    (["--rounds", "x"], "--rounds: expected an integer"),
    (["--iterations", "999"], "--iterations: expected an integer from 1000"),
    (["--cpu", "-1"], "--cpu: expected an integer"),
    (["--cpu", str(os.cpu_count() + 7)], "not a CPU this process may run on"),
    (["extra"], "unexpected argument 'extra'"),
])
def test_bad_options_are_refused_by_name(cbuild, args, says):
    p = _run(*args)
    assert p.returncode == 2 and p.stdout == "" and says in p.stderr, (p.returncode, p.stderr)


def test_help_is_not_an_error(cbuild):
    p = _run("--help")
    assert p.returncode == 0 and p.stdout.startswith("usage: switchcost")


def test_the_cli_writes_the_measurement_that_read_accepts(cbuild, tmp_path):
    out = tmp_path / FILE_NAME
    p = subprocess.run([sys.executable, "-m", "realsys", "switch-cost", "--rounds", "1", "--iterations", "2000",
                        "--out", str(out)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert p.returncode == 0, p.stderr
    d = read(out)
    assert d == json.loads(p.stdout)
    assert d["provenance"]["cpu_model"] and d["measured_at"]
    assert "one block-and-wake" in p.stderr and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("argv, says", [
    (["--out", "{file}/x.json"], "'{file}' is not a directory"),
    (["--out", "{dir}"], "is a directory; give a file name"),
    (["--out", ""], "--out '': give a file name"),
    (["--rounds", "0"], "argument --rounds: expected 1 to 1,000, got 0"),
    (["--iterations", "1e5"], "argument --iterations: expected a whole number, got '1e5'"),
])
def test_the_cli_refuses_bad_counts_by_name(argv, says, tmp_path):
    # a bad --out was found after the timing, as a traceback, and the measurement was lost
    (tmp_path / "f").write_text("")
    fill = {"file": str(tmp_path / "f"), "dir": str(tmp_path)}
    p = subprocess.run([sys.executable, "-m", "realsys", "switch-cost", "--iterations", "100000000",
                        *[a.format(**fill) for a in argv]], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert p.returncode == 2 and says.format(**fill) in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("text, says", [
    ("", "not a switchcost measurement"),
    ("[1, 2]", "switch_us must be a positive number, got None"),
    ('{"switch_us": 0}', "got 0"),
    ('{"switch_us": -2.5}', "got -2.5"),
    ('{"switch_us": "3"}', "got '3'"),
    ('{"switch_us": true}', "got True"),
])
def test_read_refuses_what_is_not_a_measurement(tmp_path, text, says):
    f = tmp_path / FILE_NAME
    f.write_text(text)
    with pytest.raises(ValueError, match=str(f)) as e:
        read(f)
    assert says in str(e.value)


def test_read_refuses_a_directory_by_name(tmp_path):
    d = tmp_path / FILE_NAME
    d.mkdir()
    with pytest.raises(ValueError, match=f"{d}: not a switchcost measurement \\(a directory\\)"):
        read(d)


def test_the_committed_measurement_is_one():
    d = read(REPO / "realsys" / "results" / FILE_NAME)
    assert d["rounds"] == len(d["per_round"]) and d["provenance"]["cpu_model"].startswith("AMD EPYC")

"""tools/paired_order.py: pairing replicate runs by seed removes a level shared by a seed's runs
(a campaign measured on a slower day), which the unpaired check counts as noise."""
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from validation.realsys_report import order_check

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "paired_order.py"
_spec = importlib.util.spec_from_file_location("paired_order", TOOL)
paired_order = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(paired_order)


def rows(drift, diff, sim_diff, jitter=(0, 0, 0, 0, 0, 0), rate=5000.0):
    """Two policies at one rate past saturation, one run each per seed: seed s measures
    4000 + drift[s] (+ diff for accept-1) + jitter[s]; the simulation gives sim_diff between them."""
    out = []
    for s, (d, j) in enumerate(zip(drift, jitter)):
        for pol, extra, sim in (("accept-1", diff + j, sim_diff), ("accept-inf", 0.0, 0.0)):
            out.append({"order_group": "g", "rate": rate, "policy": pol, "seed": s, "past_saturation": True,
                        "measured": 4000.0 + d + extra, "predicted": 3900.0 + sim, "role": "held-out"})
    return out


# Half the seeds measured ~400 replies/s lower (another day); accept-1 leads by ~100 in every seed.
DRIFT = (0, 0, 0, -400, -400, -400)
JIT = (10, -10, 5, -5, 0, 0)


@pytest.mark.parametrize("sim_diff,want", [(+50.0, "preserved"), (-50.0, "inverted")])
def test_a_shared_drift_hides_the_difference_unpaired_but_not_paired(sim_diff, want):
    rs = rows(DRIFT, 100.0, sim_diff, JIT)
    p, = paired_order.paired(rs)
    assert (p["a"], p["b"], p["n"]) == ("accept-1", "accept-inf", 6)
    assert p["measured_diff"] == pytest.approx(100.0)
    assert p["status"] == want
    # the unpaired check (machine-check's) sees the drift as spread: a tie
    u = order_check(rs)
    assert [q["status"] for q in u["pairs"]] == ["tie"]


def test_paired_noise_is_a_tie_and_unshared_seeds_are_left_out():
    rs = rows((0,) * 6, 0.0, 80.0, (300, -300, 250, -250, 100, -120))
    rs = [d for d in rs if not (d["policy"] == "accept-inf" and d["seed"] == 5)]   # seed 5: one policy only
    p, = paired_order.paired(rs)
    assert p["n"] == 5 and p["status"] == "tie"


def test_rows_below_saturation_or_without_a_seed_are_not_paired():
    rs = rows(DRIFT, 100.0, 50.0, JIT)
    for d in rs:
        d["past_saturation"] = False
    assert paired_order.paired(rs) == []
    rs = rows(DRIFT, 100.0, 50.0, JIT)
    for d in rs:
        d["seed"] = None
    assert paired_order.paired(rs) == []


@pytest.mark.parametrize("args,msg", [
    ((), "--results"),
    (("--results", "/nonexistent", "--profile", "realsys-linux6-xeon"), "holds none of the realsys results folders"),
    (("--results", "realsys/results", "--profile", "nope"), "--profile: no cost profile named 'nope'"),
])
def test_bad_arguments_are_refused(args, msg):
    r = subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and msg in r.stderr, r.stderr


def _runs(tmp_path):
    import shutil
    for name in ("onepacket-select", "onepacket-select-reps"):
        shutil.copytree(ROOT / "realsys" / "results" / name, tmp_path / name)
    return tmp_path


@pytest.mark.parametrize("where,content,msg", [
    ("realsys-linux6-fit.json", "[1]", "realsys-linux6-fit.json: a JSON list, not a fit's record"),
    ("realsys-linux6-fit.json", "not json", "realsys-linux6-fit.json: Expecting value"),
    ("onepacket-select/points/0000.json", "not json", "0000.json: not a point file (Expecting value"),
    ("onepacket-select/points/0000.json", None, "0000.json: not a point file (a directory)"),
])
def test_a_damaged_fit_record_or_point_file_is_refused_naming_it(tmp_path, where, content, msg):
    # each ended in a traceback (JSONDecodeError, AttributeError, IsADirectoryError)
    d = _runs(tmp_path)
    if content is None:
        (d / where).mkdir()
    else:
        (d / where).write_text(content)
    r = subprocess.run([sys.executable, str(TOOL), "--results", str(d), "--profile", "realsys-linux6"],
                       capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_ctrl_c_is_exit_130_without_a_traceback(tmp_path, capsys, monkeypatch):
    # it simulates every held-out run; Ctrl-C printed a KeyboardInterrupt traceback
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(paired_order, "realsys_heldout", interrupted)
    assert paired_order.main(["--results", str(_runs(tmp_path)), "--profile", "realsys-linux6"]) == 130
    assert capsys.readouterr().err.strip() == "paired_order: interrupted"


def test_pairs_are_oriented_as_machine_check_s():
    # sorted by name, accept-10 came before accept-2: the pair was (accept-10, accept-2), its
    # difference of the other sign, and the table's unpaired column found no match ("–")
    rs = rows(DRIFT, 100.0, 50.0, JIT)
    for d in rs:
        d["policy"] = {"accept-1": "accept-2", "accept-inf": "accept-10"}[d["policy"]]
    p, = paired_order.paired(rs)
    u, = order_check(rs)["pairs"]
    assert (p["a"], p["b"]) == (u["a"], u["b"]) == ("accept-2", "accept-10")
    assert p["measured_diff"] == pytest.approx(100.0) and p["status"] == "preserved"

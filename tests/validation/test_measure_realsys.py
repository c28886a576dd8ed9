"""validation/measure_realsys.sh: the runs it asks realsys for, read from its command lines
(PYTHON=echo prints each instead of running it; the runs themselves are realsys's tests)."""
from __future__ import annotations

import os
import subprocess

from validation.records import ROOT

SCRIPT = ROOT / "validation" / "measure_realsys.sh"


def _commands(tmp_path, **env):
    out = subprocess.run(["sh", str(SCRIPT)], capture_output=True, text=True, check=True, cwd=tmp_path,
                         env={**os.environ, "PYTHON": "echo", "RESULTS": str(tmp_path / "box"), **env})
    return out.stdout.splitlines()


def test_the_full_set_is_the_thread_switch_then_sixteen_sweeps_into_the_six_folders(tmp_path):
    cmds = _commands(tmp_path)
    assert cmds[0] == f"-m realsys switch-cost --out {tmp_path / 'box' / 'thread-switch.json'}"
    cmds = cmds[1:]
    assert len(cmds) == 16 and all(c.startswith("-m realsys run scenarios/realsys/onepacket-") for c in cmds)
    outs = {c.split("--out ")[1].split()[0] for c in cmds}
    assert outs == {str(tmp_path / "box" / d) for d in ("onepacket-select", "onepacket-select-reps", "onepacket-poll",
                                                        "onepacket-epoll", "onepacket-knot", "onepacket-knot-reps")}


def test_more_seeds_adds_replicates_to_every_cell_past_saturation_only(tmp_path):
    """MORE_SEEDS: each seed once through all four mechanisms at the PAST rates (knot at KNOT_PAST),
    into the folders the fit and the check read, and nothing else."""
    cmds = _commands(tmp_path, MORE_SEEDS="21 22", PAST="4800.0, 6400.0")
    assert len(cmds) == 8
    for seed, block in (("21", cmds[:4]), ("22", cmds[4:])):
        assert all(f"--set scenario.seed={seed} " in c for c in block)
        assert [c.split("--out ")[1].split()[0].rsplit("/", 1)[1] for c in block] == [
            "onepacket-select-reps", "onepacket-poll", "onepacket-epoll", "onepacket-knot-reps"]
        assert all(c.endswith("--set workload.rate=[4800.0, 6400.0]") for c in block[:3])
        assert block[3].endswith("--set workload.rate=[5000.0, 6400.0]")
        assert 'scenario.name="realsys-onepacket-select-reps"' in block[0]

"""tools/soak.sh: bad arguments are refused by name, exit 2, before the test bed is built
(each was a ValueError traceback after make, or a test bed built for a soak of no time)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("args,env,msg", [
    (["abc"], {}, "soak.sh: MINUTES: must be a finite number > 0, got 'abc'"),
    (["0"], {}, "soak.sh: MINUTES: must be a finite number > 0, got '0'"),
    (["-5"], {}, "soak.sh: MINUTES: must be a finite number > 0, got '-5'"),
    (["inf"], {}, "soak.sh: MINUTES: must be a finite number > 0, got 'inf'"),
    (["1"], {"SOAK_RATE": "x"}, "soak.sh: SOAK_RATE: must be a finite number > 0, got 'x'"),
    (["1"], {"SOAK_MUX": "kqueue"}, "soak.sh: SOAK_MUX: must be select, poll or epoll, got 'kqueue'"),
])
def test_bad_arguments_are_refused_by_name(cbuild, args, env, msg):
    r = subprocess.run(["sh", "tools/soak.sh", *args], cwd=ROOT, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHON": sys.executable, **env})
    assert r.returncode == 2 and r.stderr.strip().endswith(msg) and "Traceback" not in r.stderr, r.stderr


def test_a_test_bed_that_cannot_be_built_is_an_error_and_the_work_folder_goes(cbuild, tmp_path):
    # TestBedBusy (another run up) was a traceback, and /tmp/soak-* (its docroot) stayed behind
    # after every soak that did not finish; the test bed is refused here by a stub, never built
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import realsys.testbed as tb\n"
        "def _busy(self):\n"
        "    raise tb.TestBedBusy('another test bed is up on this machine (pid 1)')\n"
        "tb.TestBed.__enter__ = _busy\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "PYTHON": sys.executable, "TMPDIR": str(tmp), "PYTHONPATH": f"{site}:{ROOT}"}
    r = subprocess.run(["sh", "tools/soak.sh", "1"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "soak.sh: another test bed is up" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not list(tmp.iterdir())

"""realsys/kernel.py's DropTracer when the run dies (root only: bpftrace attaches probes).

The bpftrace probes are global and the program has no end of its own.  A run killed with
SIGKILL (no handler runs) used to leave its bpftrace attached for good: `realsys clean`
and the next run's stale clean-up remove namespaces, cgroups and marker files only."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.root
REPO = Path(__file__).resolve().parents[2]

CHILD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from realsys import kernel
t = kernel.DropTracer()
assert t.available, t.note
t.program_window(0, 1)
t.start(timeout=60)
assert t.proc is not None, t.note
print(t.proc.pid, flush=True)
time.sleep(120)
"""


def _alive(pid: int) -> bool:
    try:
        st = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return st.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(shutil.which("bpftrace") is None, reason="bpftrace not installed")
def test_bpftrace_goes_with_a_killed_run():
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(REPO)], stdout=subprocess.PIPE, text=True)
    pid = None
    try:
        line = p.stdout.readline()
        assert line.strip().isdigit(), line
        pid = int(line)
        assert _alive(pid)
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.1)
        assert not _alive(pid), "bpftrace outlived the run that started it"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None and _alive(pid):
            os.kill(pid, signal.SIGKILL)

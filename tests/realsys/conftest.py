"""Shared fixtures for the realsys tests.

Tests that need root (namespaces, veth, sysctls, bpftrace) carry ``@pytest.mark.root``
and are skipped only when not running as root.  The C sources are built once per
session with make (warnings are errors)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
C_DIR = REPO / "realsys" / "c"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def pytest_configure(config):
    config.addinivalue_line("markers", "root: needs root (network namespaces); skipped otherwise")


def pytest_collection_modifyitems(config, items):
    if os.geteuid() == 0:
        return
    skip = pytest.mark.skip(reason="needs root (network namespaces, veth, sysctls)")
    for it in items:
        if "root" in it.keywords:
            it.add_marker(skip)


@pytest.fixture(scope="session")
def cbuild():
    """Build the C binaries (and the sanitizer builds) once; returns the C directory."""
    p = subprocess.run(["make", "-s", "-C", str(C_DIR), "all", "asan"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return C_DIR


@pytest.fixture
def bpftrace_attached(tmp_path):
    """``with bpftrace_attached(PROGRAM) as bt:`` runs bpftrace on a program file and enters the
    block once every probe is attached (its BEGIN prints realsys.kernel.READY; bpftrace 0.17
    loses a SIGINT sent before that).  When the block ends bpftrace is stopped as realsys stops
    it (``interrupt``), it must exit cleanly, and ``bt.out`` holds what it printed (its maps)."""
    from realsys.kernel import READY, ensure_tracefs, interrupt

    class Traced:
        out = ""

    @contextlib.contextmanager
    def attach(program):
        assert ensure_tracefs()
        out, err = tmp_path / "bt.txt", tmp_path / "bt.err"
        # stdout to a file, not -o: bpftrace flushes stdout per line but buffers an -o file to exit
        with open(out, "w") as of, open(err, "w") as ef:
            p = subprocess.Popen(["bpftrace", str(program)], stdout=of, stderr=ef)
        bt = Traced()
        try:
            deadline = time.monotonic() + 60
            while READY not in (out.read_text() if out.exists() else ""):
                assert p.poll() is None, err.read_text()
                assert time.monotonic() < deadline, "bpftrace did not attach in 60 s"
                time.sleep(0.1)
            yield bt
        finally:
            _, clean = interrupt(p)      # bpftrace prints its maps and exits (killed if it will not)
        assert clean, err.read_text()
        bt.out = out.read_text()

    return attach

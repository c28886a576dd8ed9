"""Shared fixtures for the realsys tests.

Tests that need root (namespaces, veth, sysctls, bpftrace) carry ``@pytest.mark.root``
and are skipped only when not running as root.  The C sources are built once per
session with make (warnings are errors)."""
from __future__ import annotations

import os
import subprocess
import sys
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

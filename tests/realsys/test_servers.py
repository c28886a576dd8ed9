"""realsys.servers: the command line each real server gets for a point."""
from __future__ import annotations

from pathlib import Path

import pytest

from realsys.servers import WRITEV_ALL, server_argv
from simaccept.scenario import load_scenario


def _argv(kind: str, workload: str) -> list[str]:
    extra = "" if kind == "userver" else "threads = 16\n"
    sc = load_scenario(text=f"""
[server]
kind = "{kind}"
{extra}
[workload]
kind = "{workload}"
rate = 100.0
""")
    values = sc.points()[0].values
    return server_argv(kind, values, Path("/d"), Path("/s.json"), Path("/w"))


@pytest.mark.parametrize("kind,workload,want", [
    # the simulated μserver: one writev for a one-packet reply, CORK + write + sendfile for
    # every SPECweb99-like file (thesis sec. 3.1); the simulated Knot copies every reply
    ("userver", "one-packet", WRITEV_ALL),
    ("userver", "specweb99", 0),
    ("knot", "one-packet", WRITEV_ALL),
    ("knot", "specweb99", WRITEV_ALL),
])
def test_the_c_servers_take_the_simulated_servers_write_path(kind, workload, want):
    argv = _argv(kind, workload)
    assert argv[argv.index("--writev-max") + 1] == str(want)


@pytest.mark.parametrize("kind", ["userver", "knot"])
def test_the_c_servers_get_the_scenarios_open_connection_cap(kind):
    # knot had no --max-conns: server.max_conns bounded the simulated Knot-C and not the real one
    argv = _argv(kind, "one-packet")
    assert argv[argv.index("--max-conns") + 1] == "15000"

"""realsys: real C servers, an open-loop load generator and kernel accounting on a
network-namespace test bed, recording the same RunRecord rows as the simulator.

    realsys run scenarios/realsys/smoke.toml --out /tmp/rs

Modules: testbed (namespaces, veth, RPS, sysctls), kernel (TcpExt counters, CPU split,
bpftrace drop split), docroot (the file sets), servers (how each server kind is
started), loadgen (our generator and httperf), runner (sweeps -> records), cli.
"""
from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"
__all__ = ["C_DIR"]

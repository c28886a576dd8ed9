"""realsys: real C servers, an open-loop load generator and kernel accounting on a
network-namespace test bed, recording the same RunRecord rows as the simulator.

    realsys run scenarios/realsys/smoke.toml --out /tmp/rs

Modules: testbed (namespaces, veth, RPS, sysctls), kernel (TcpExt counters, CPU split,
bpftrace drop split), docroot (the file sets), servers (how each server kind is
started), loadgen (our generator and httperf), runner (sweeps -> records), cli.
"""
from pathlib import Path

C_DIR = Path(__file__).resolve().parent / "c"
__all__ = ["C_DIR", "results_path"]


def results_path(path: str | Path) -> Path:
    """``path``; or, when nothing is there, the committed results folder it names by its path in
    the repository (``realsys/results/epyc-2026-12-04``), which an installed package carries at
    the same place: the results README's ``compare`` commands, run from anywhere.  Not ``report``:
    the package carries the results.csv files, not their points/*.json, from which a report
    reads the generator's lag and the drop split (it printed without them, rc 0)."""
    p = Path(path)
    if p.exists():
        return p
    s = p.as_posix()
    s = s[2:] if s.startswith("./") else s
    if (s == "realsys/results" or s.startswith("realsys/results/")) and ".." not in s.split("/"):
        q = Path(__file__).resolve().parent.parent / s
        if q.exists():
            return q
    return p

"""The CPU-0 accounting trace kept with the Xeon's results (realsys/results/xeon-2026-11-26/traces/
cpu-account.*) attaches on this kernel, and its committed summaries follow from its raw maps."""
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

TRACES = Path(__file__).resolve().parents[2] / "realsys" / "results" / "xeon-2026-11-26" / "traces"


@pytest.mark.parametrize("run_set", ["cpu-account-poll-4800/set1", "cpu-account-poll-4800/set2",
                                     "cpu-account-select-load/rate-4800", "cpu-account-select-load/rate-6400"])
def test_committed_summaries_follow_from_the_raw_maps(run_set):
    d = TRACES / run_set
    got = subprocess.run([sys.executable, str(TRACES / "cpu-account-summary.py"), str(d)],
                         capture_output=True, text=True, check=True).stdout
    assert got == (d / "summary.txt").read_text()
    # two or three traced points per policy, each with thousands of replies
    counts = re.search(r"\{'1': \[([\d, ]+)\], 'inf': \[([\d, ]+)\]\}", got)
    assert counts and all(int(x) > 10000 for g in counts.groups() for x in g.split(","))


@pytest.mark.root
def test_the_accounting_program_attaches_and_accounts_cpu0(bpftrace_attached):
    """Attached for a second on an otherwise quiet CPU 0: the buckets it fills add up to about
    the time it was attached (idle included), so no state transition is lost."""
    with bpftrace_attached(TRACES / "cpu-account.bt") as bt:
        t0 = time.monotonic()
        time.sleep(1.0)
    wall = time.monotonic() - t0
    acc = {int(k): int(v) for k, v in re.findall(r"@acc\[(\d+)\]: (\d+)", bt.out)}
    total_s = sum(acc.values()) / 1e9
    # from BEGIN to the last transition before exit: at least the second slept, at most
    # the attach-to-exit time plus the attach wait
    assert 0.5 < total_s < wall + 60, (acc, wall)

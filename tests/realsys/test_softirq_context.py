"""The diagnostic bpftrace script (tools/softirq_context.bt) compiles, attaches and counts on this kernel."""
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from realsys.kernel import ensure_tracefs

SCRIPT = Path(__file__).resolve().parents[2] / "tools" / "softirq_context.bt"


@pytest.mark.root
def test_softirq_context_counts_runs_on_cpu0(tmp_path):
    """Loopback traffic from a thread pinned to CPU 0 makes NET_RX runs there; the script
    counts them by context (no server runs, so none is inside a "userver" system call)."""
    assert ensure_tracefs()
    out = tmp_path / "bt.txt"
    p = subprocess.Popen(["bpftrace", str(SCRIPT), "-o", str(out)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    stop = threading.Event()

    def traffic():
        os.sched_setaffinity(0, {0})
        srv = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        srv.bind(("127.0.0.1", 0))
        cli = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        while not stop.is_set():
            cli.sendto(b"x", srv.getsockname())
            srv.recv(16)
        srv.close()
        cli.close()

    time.sleep(1.5)          # attach
    t = threading.Thread(target=traffic)
    t.start()
    try:
        time.sleep(1.5)
        p.send_signal(signal.SIGINT)      # bpftrace prints its maps and exits
        _, err = p.communicate(timeout=30)
    finally:
        stop.set()
        t.join()
    assert p.returncode == 0, err
    text = out.read_text()
    runs = {int(k): int(v) for k, v in re.findall(r"@runs\[(-?\d+)\]: (\d+)", text)}
    assert sum(runs.values()) > 10, text
    assert int(re.search(r"@pkts: (\d+)", text).group(1)) > 10
    assert all(k < 0 for k in runs), runs

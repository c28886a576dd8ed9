"""The shipped bpftrace scripts (realsys/bpf) compile, attach and count on this kernel."""
import json
import os
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from realsys.kernel import ensure_tracefs

NETRX = Path(__file__).resolve().parents[2] / "realsys" / "bpf" / "netrx_context.bt"


@pytest.mark.root
def test_netrx_context_counts_runs_on_the_cpu():
    """Loopback traffic from a thread pinned to CPU 0 makes NET_RX runs there; the script
    counts them by context (no server runs, so no syscall of "userver" is counted)."""
    assert ensure_tracefs()
    p = subprocess.Popen(["bpftrace", "-f", "json", str(NETRX), "0", "3"], stdout=subprocess.PIPE,
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
        out, err = p.communicate(timeout=30)
    finally:
        stop.set()
        t.join()
    assert p.returncode == 0, err
    maps = {}
    for line in out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            if d.get("type") == "map":
                maps.update(d["data"])
    runs = maps.get("@runs", {})
    assert sum(runs.values()) > 10, maps
    assert sum(maps.get("@pkts", {}).values()) > 10
    assert not maps.get("@calls")

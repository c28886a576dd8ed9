"""tools/handshake_wait.bt times real handshakes on this kernel, and the committed trace
summaries (realsys/results/xeon-2026-11-26/traces) follow from their raw maps."""
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BT, SH = ROOT / "tools" / "handshake_wait.bt", ROOT / "tools" / "handshake_wait.sh"
TRACES = ROOT / "realsys" / "results" / "xeon-2026-11-26" / "traces"


def summary_code() -> str:
    text = SH.read_text()
    return text[text.index("<<'PY'\n") + 7: text.rindex("\nPY")]


@pytest.mark.root
def test_every_segment_of_loopback_handshakes_is_timed(bpftrace_attached):
    """50 loopback connections: loopback's transmit also goes through netif_rx, so each
    SYN, SYN-ACK and handshake ACK is counted from its enqueue to its processing."""
    with bpftrace_attached(BT) as bt:
        srv = socket.create_server(("127.0.0.1", 0), backlog=64)
        for _ in range(50):
            c = socket.create_connection(srv.getsockname())
            srv.accept()[0].close()
            c.close()
        srv.close()
        time.sleep(0.2)
    n = {}
    for seg, cpu, slow, fs, v in re.findall(r"@n\[([\w-]+), (\d+), (\d), (\d)\]: (\d+)", bt.out):
        n[seg] = n.get(seg, 0) + int(v)
    # other loopback traffic on a shared machine may add to these, never take away
    assert n.get("SYN", 0) >= 50 and n.get("SYN-ACK", 0) >= 50, n
    assert n.get("ACK", 0) >= 50, n     # the handshake's third segment is a 52-byte bare ACK


@pytest.mark.parametrize("run", ["run1", "run2"])
def test_committed_summaries_follow_from_the_raw_maps(tmp_path, run):
    """The summary table in realsys/results/README.md was read off these files: the script's
    own summary code, run again on the saved maps, gives the saved summary line for line."""
    for al in ("1", "10", "inf"):
        shutil.copy(TRACES / f"handshake-wait-{run}-accept-{al}.txt", tmp_path / f"bt-{al}.txt")
    got = subprocess.run(["python3", "-", str(tmp_path), "1", "10", "inf"], input=summary_code(),
                         capture_output=True, text=True, check=True).stdout
    want = (TRACES / f"handshake-wait-{run}-summary.txt").read_text()
    strip = lambda s: [ln for ln in s.splitlines() if not ln.startswith("(raw maps")]
    assert strip(got) == strip(want)
    assert re.search(r"accept-inf:\n  SYN     to cpu0: +\d+, +30\.\d% waited", got)

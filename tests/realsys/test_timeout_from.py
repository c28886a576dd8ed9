"""What a client's --timeout counts from, measured with real httperf and loadgen.

A loopback listener with backlog 0 holds one filler connection, so the kernel drops the
generator's first SYN (accept queue full).  At 0.5 s the filler is accepted; the SYN
retransmission (1 s on this kernel) gets in.  The server reads the request and never
answers, and notes when the client gives up (EOF or reset).  httperf cancels its connect
timer when the connection is established and arms a new one for the request, so it gives
up a full timeout after the connect; ``loadgen --timeout-from first-syn`` gives up a
timeout after its first SYN.  The simulator's ``client.timeout_from`` has the same two
meanings (tests/simaccept/test_model.py).
"""
from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

TIMEOUT_S = 2.0


def _give_up_times(argv_for_port) -> tuple[float, float]:
    """(connection accepted, client gave up), seconds after the generator started."""
    lst = socket.socket()
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind(("127.0.0.1", 0))
    lst.listen(0)
    port = lst.getsockname()[1]
    filler = socket.create_connection(("127.0.0.1", port), timeout=2)
    time.sleep(0.1)
    conns = []
    gen = None
    try:
        t0 = time.monotonic()
        gen = subprocess.Popen(argv_for_port(port), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        lst.settimeout(2)
        conns.append(lst.accept()[0])            # the filler: frees the accept queue
        lst.settimeout(5)
        c, _ = lst.accept()
        conns.append(c)
        t_acc = time.monotonic() - t0
        c.settimeout(4 * TIMEOUT_S)
        assert c.recv(4096).startswith(b"GET ")
        try:
            while c.recv(4096):
                pass
        except ConnectionResetError:
            pass
        t_gone = time.monotonic() - t0
        gen.wait(timeout=4 * TIMEOUT_S + 5)
        return t_acc, t_gone
    finally:
        if gen and gen.poll() is None:
            gen.kill()
            gen.wait()
        for s in conns + [filler, lst]:
            s.close()


def _loadgen(cbuild, mode):
    return lambda port: [str(cbuild / "loadgen"), "--server", "127.0.0.1", "--port", str(port), "--rate", "1",
                         "--duration", "0.5", "--timeout", str(TIMEOUT_S), "--timeout-from", mode]


@pytest.mark.parametrize("gen", ["httperf", "loadgen-connect", "loadgen-first-syn"])
def test_timeout_counts_from_connect_or_first_syn(gen, cbuild):
    if gen == "httperf":
        if not shutil.which("httperf"):
            pytest.fail("httperf is not installed: run realsys/install-deps.sh (the README's install command)")
        argv = lambda port: ["httperf", "--server", "127.0.0.1", "--port", str(port), "--num-conns", "1",  # noqa: E731
                             "--timeout", str(TIMEOUT_S), "--uri", "/"]
    else:
        argv = _loadgen(cbuild, gen.removeprefix("loadgen-"))
    t_acc, t_gone = _give_up_times(argv)
    assert t_acc > 0.8, "the first SYN was not dropped: the test proves nothing"
    if gen == "loadgen-first-syn":
        assert t_gone == pytest.approx(TIMEOUT_S, abs=0.4), (t_acc, t_gone)
    else:
        assert t_gone - t_acc == pytest.approx(TIMEOUT_S, abs=0.4), (t_acc, t_gone)

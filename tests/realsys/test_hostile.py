"""Hostile clients against the real servers, in the namespace test bed (root only).

For each server (userver with select, poll and epoll; knot), sanitizer builds, one server
process per kind, and each scenario bounded in time (a few seconds; 20 s hard cap):

    slowloris   2,000 connections, each with a half-sent request head, held open
    silent      500 connections that connect and send nothing, held open
    rst         GET of a 900 KB file, read 16 KB, close with SO_LINGER 0 (RST mid-reply)
    garbage     a valid request pipelined with random bytes (and pure random bytes)
    traversal   ../../etc/passwd, %2e%2e%2f, %252e, //etc/passwd, /./../, backslashes,
                NUL, a symlink to a file outside the root, ... in a loop

While a scenario's hostile client (client host 2) is active, the open-loop generator
(client host 1) offers a well-formed one-packet load; its 2xx replies are compared with
the same load without the hostile client, measured on the same server process just
before.  Asserted per scenario:

* the reply count stays within 10 % of the baseline -- except where the drop is the
  server's documented design: knot serves each connection to completion on one of its
  --threads threads, so idle connections (slowloris, silent) hold threads until
  --idle-timeout; there the drop is asserted to be explained (threads busy with idle
  connections) and the rate to recover fully once the hostile clients leave;
* the server is alive throughout, and exits 0 on SIGTERM at the end with no sanitizer
  report;
* the contents of a secret file planted outside the document root (and reachable by a
  symlink inside it) never appear in any reply the hostile clients receive, and every
  traversal request gets 400, 403 or 404;
* the server's open descriptors (/proc/PID/fd) return to the count before the scenario
  within 15 s after the hostile clients leave.

The hostile clients are this file run as a script (``python test_hostile.py client ...``)
inside the client namespace.  Every load is bounded in time and count, and the traffic
stays inside the test bed's 198.18.0.0/15 namespaces.
"""
from __future__ import annotations

import json
import os
import random
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

SECRET = "SECRET-7d1e0c44-never-served"
BIG = "/specweb/class3_8"            # 921,600 bytes: sendfile path
TRAVERSAL = [
    b"/../../etc/passwd", b"/../../../../../../../../etc/passwd", b"/%2e%2e/%2e%2e/etc/passwd",
    b"/%2e%2e%2f%2e%2e%2fetc%2fpasswd", b"/%2E%2E/secret.txt", b"/.%2e/secret.txt",
    b"/%252e%252e/%252e%252e/etc/passwd", b"/%252e%252e%252fsecret.txt", b"//etc/passwd",
    b"//secret.txt", b"/./../secret.txt", b"/specweb/../../secret.txt", b"/specweb/./../../secret.txt",
    b"/..\\..\\secret.txt", b"/..%5c..%5csecret.txt", b"/%5c..%5csecret.txt", b"/%00../secret.txt",
    b"/index.html%00/../../secret.txt", b"/escape", b"/escape/", b"/specweb/up", b"/%c0%ae%c0%ae/secret.txt",
    b"/..;/secret.txt", b"/" + b"../" * 30 + b"secret.txt", b"/..", b"/.", b"/specweb/..",
    b"http://x/../secret.txt", b"../secret.txt", b"/secret.txt", b"/%2fsecret.txt", b"/%2e%2e",
]
RAW_TRAVERSAL = [  # request lines with raw NUL / backslash bytes
    b"GET /\x00../secret.txt HTTP/1.0\r\n\r\n", b"GET /..\\secret.txt HTTP/1.0\r\n\r\n",
    b"GET /../secret.txt\x00 HTTP/1.0\r\n\r\n", b"GET\t/../secret.txt HTTP/1.0\r\n\r\n",
]


# =========================================================================== client side
def _summary(d: dict) -> None:
    print(json.dumps(d), flush=True)


def _hold_conns(ip: str, port: int, n: int, payload: bytes, hold: float, secret: bytes) -> None:
    """Open n connections (non-blocking, in batches), send payload on each, report
    'ready', hold them until `hold` s have passed or SIGTERM, then close them all."""
    import resource
    resource.setrlimit(resource.RLIMIT_NOFILE, (n + 1024, n + 1024))
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *a: stop.__setitem__(0, True))
    socks, failed = [], 0
    t_end_connect = time.monotonic() + 8.0
    for i in range(0, n, 250):
        batch = []
        for _ in range(min(250, n - i)):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.connect_ex((ip, port))
            batch.append(s)
        pend = {s.fileno(): s for s in batch}
        poller = select.poll()
        for fd in pend:
            poller.register(fd, select.POLLOUT)
        while pend and time.monotonic() < t_end_connect:
            for fd, _ev in poller.poll(200):
                poller.unregister(fd)
                s = pend.pop(fd)
                if s.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                    try:
                        if payload:
                            s.send(payload)
                        socks.append(s)
                        continue
                    except OSError:
                        pass
                failed += 1
                s.close()
        for s in pend.values():
            failed += 1
            s.close()
    print(f"ready {len(socks)}", flush=True)
    seen = 0
    got = 0
    t_end = time.monotonic() + hold
    while not stop[0] and time.monotonic() < t_end:
        time.sleep(0.05)
    for s in socks:
        try:
            b = s.recv(65536)
            got += len(b)
            seen += secret in b
        except OSError:
            pass
        s.close()
    _summary({"held": len(socks), "failed": failed, "bytes_received": got, "secret_seen": seen})


def _read_all(s: socket.socket, limit: int = 1 << 20) -> bytes:
    out = b""
    try:
        while len(out) < limit:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except OSError:
        pass
    return out


def _statuses(raw: bytes) -> list[int]:
    st = []
    for part in raw.split(b"HTTP/1.")[1:]:
        try:
            st.append(int(part[2:5]))
        except ValueError:
            pass
    return st


def _loop(ip: str, port: int, hold: float, secret: bytes, mode: str, rate: float) -> None:
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *a: stop.__setitem__(0, True))
    rnd = random.Random(1234)
    counts: dict[str, int] = {}
    seen = 0
    n = 0
    print("ready 0", flush=True)
    t0 = time.monotonic()
    t_end = t0 + hold
    while not stop[0] and time.monotonic() < t_end:
        # one clock reading: with two, the second could pass next_t (sleep(-x) raised, CI 26 Nov)
        wait = t0 + n / rate - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        n += 1
        try:
            s = socket.create_connection((ip, port), timeout=2.0)
        except OSError:
            counts["connect_error"] = counts.get("connect_error", 0) + 1
            continue
        try:
            if mode == "rst":
                s.sendall(f"GET {BIG} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
                got = b""
                while len(got) < 16384:
                    b = s.recv(16384 - len(got))
                    if not b:
                        break
                    got += b
                seen += secret in got
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                key = "rst_after_16k" if len(got) >= 16384 else "short"
            elif mode == "garbage":
                junk = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 3000)))
                if n % 2:
                    s.sendall(b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n" + junk +
                              b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n")
                else:
                    s.sendall(junk + b"\r\n\r\n")
                raw = _read_all(s)
                seen += secret in raw
                key = ",".join(str(x) for x in _statuses(raw)) or "none"
            else:  # traversal
                k = (n - 1) % (len(TRAVERSAL) + len(RAW_TRAVERSAL))
                if k < len(TRAVERSAL):
                    req = b"GET " + TRAVERSAL[k] + b" HTTP/1.0\r\n\r\n"
                    if n % 3 == 0:   # pipelined behind a valid keep-alive request
                        # with Host: an HTTP/1.1 request without one is a 400 (RFC 9112 3.2),
                        # the connection closes and the traversal would never be parsed; a
                        # 403/404 keeps a keep-alive connection, so the last request closes it
                        req = (b"GET /index.html HTTP/1.1\r\nHost: x\r\n\r\n"
                               b"GET " + TRAVERSAL[k] + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                else:
                    req = RAW_TRAVERSAL[k - len(TRAVERSAL)]
                s.sendall(req)
                raw = _read_all(s)
                seen += secret in raw or b"root:x:0:0" in raw
                st = _statuses(raw)
                if n % 3 == 0 and k < len(TRAVERSAL):
                    st = st[1:]          # the valid request's 200
                key = ",".join(str(x) for x in st) or "none"
        except OSError as e:
            key = f"oserror:{type(e).__name__}"
        finally:
            s.close()
        counts[key] = counts.get(key, 0) + 1
    _summary({"n": n, "counts": counts, "secret_seen": seen})


def client_main(argv: list[str]) -> None:
    mode, ip, port, hold = argv[0], argv[1], int(argv[2]), float(argv[3])
    secret = SECRET.encode()
    if mode == "slowloris":
        _hold_conns(ip, port, int(argv[4]), b"GET /index.html HTTP/1.1\r\nHost: x\r\nX-Slow: ", hold, secret)
    elif mode == "silent":
        _hold_conns(ip, port, int(argv[4]), b"", hold, secret)
    else:
        _loop(ip, port, hold, secret, mode, float(argv[4]))


if __name__ == "__main__" and len(sys.argv) > 1 and sys.argv[1] == "client":
    client_main(sys.argv[2:])
    sys.exit(0)


# =========================================================================== test side
import pytest  # noqa: E402

from realsys.docroot import make_docroot  # noqa: E402
from realsys.loadgen import loadgen_argv  # noqa: E402
from realsys.testbed import TestBed  # noqa: E402

pytestmark = pytest.mark.root

PORT = 8080
RATE = 800.0          # well-formed load, conn/s: far below every sanitizer build's capacity
LOAD_S = 2.0
KNOT_THREADS = 64
KNOT_IDLE_S = 1
KINDS = [("userver", "select"), ("userver", "poll"), ("userver", "epoll"), ("knot", "")]
SCENARIOS = {            # mode -> held connections, or attempts per second
    "slowloris": 2000, "silent": 500, "rst": 60.0, "garbage": 150.0, "traversal": 150.0,
}
SAN_ENV = dict(os.environ, ASAN_OPTIONS="detect_leaks=0:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")


def nfds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@pytest.fixture(scope="module")
def bed():
    with TestBed(n_clients=2) as tb:
        yield tb


def run_load(tb: TestBed, tmp: Path, tag: str, duration: float = LOAD_S) -> dict:
    out = tmp / f"lg-{tag}.json"
    argv = loadgen_argv(server_ip=tb.server_ips[0], port=PORT, binds=tb.client_addrs(0, 2), conn_rate=RATE,
                        duration=duration, warmup=0.2, timeout=1.0, arrivals="deterministic", seed=5,
                        workload="one-packet", out=out)
    p = tb.spawn(tb.client_ns[0], argv, cpu=1, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        _, err = p.communicate(timeout=duration + 15)
    finally:
        tb.stop(p, timeout=5)
    assert p.returncode == 0, err.decode(errors="replace")[-2000:]
    return json.loads(out.read_text())


@pytest.fixture(scope="module", params=KINDS, ids=[f"{k}-{m}" if m else k for k, m in KINDS])
def server(request, bed, cbuild, tmp_path_factory):
    kind, mux = request.param
    tmp = tmp_path_factory.mktemp(f"hostile-{kind}{mux}")
    root = make_docroot(tmp / "root", 1024)
    (tmp / "secret.txt").write_text(SECRET + "\n")
    (root / "escape").symlink_to(tmp / "secret.txt")
    (root / "specweb" / "up").symlink_to("../../secret.txt")
    for d in (tmp, root):
        d.chmod(0o755)
    stats = tmp / "stats.json"
    argv = [str(cbuild / f"{kind}-asan"), "--addr", "0.0.0.0", "--port", str(PORT), "--docroot", str(root),
            "--stats", str(stats), "--backlog", "1024"]
    if kind == "userver":
        argv += ["--mux", mux, "--max-conns", "5000", "--accept-limit", "inf"]
    else:   # unmodified Knot-C: accept-limit 1
        argv += ["--threads", str(KNOT_THREADS), "--idle-timeout", str(KNOT_IDLE_S), "--accept-limit", "1"]
    errf = open(tmp / "stderr.txt", "wb")
    p = bed.spawn(bed.server_ns, argv, cpu=0, stdout=subprocess.DEVNULL, stderr=errf, env=SAN_ENV)
    try:
        bed.wait_listening(PORT, p, timeout=15)
        base_fds = nfds(p.pid)
        yield {"kind": kind, "mux": mux, "proc": p, "tmp": tmp, "base_fds": base_fds, "stats": stats}
    finally:
        rc = bed.stop(p, signal.SIGTERM, timeout=20)
        errf.close()
        err = (tmp / "stderr.txt").read_text(errors="replace")
        assert rc == 0, f"{kind} {mux}: exit {rc} on SIGTERM\n{err[-3000:]}"
        assert "AddressSanitizer" not in err and "runtime error" not in err, err[-3000:]
        assert json.loads(stats.read_text())["replies"] > 0


def wait_fds(pid: int, want: int, timeout: float = 15.0) -> int:
    deadline = time.monotonic() + timeout
    n = nfds(pid)
    while n > want and time.monotonic() < deadline:
        time.sleep(0.1)
        n = nfds(pid)
    return n


def listen_backlog(tb: TestBed) -> tuple[int, int]:
    """(requests in the SYN queue, connections in the accept queue) of the server's listener."""
    def ss(*args):
        return subprocess.run(["ip", "netns", "exec", tb.server_ns, "ss", "-Htn", *args],
                              capture_output=True, text=True, timeout=10).stdout.splitlines()
    synq = len(ss("state", "syn-recv", f"sport = :{PORT}"))
    acceptq = sum(int(line.split()[1]) for line in ss("-l", f"sport = :{PORT}") if len(line.split()) > 1)
    return synq, acceptq


def wait_listen_drained(tb: TestBed, timeout: float = 20.0) -> tuple[int, int]:
    """Wait until the kernel has let go of the hostile clients' half-open and queued connections.

    Closed clients whose final ACK met a full accept queue stay in the SYN queue until a
    SYN-ACK retransmission (1 s, 3 s, 7 s ... on Linux 6) draws their RST; meanwhile a full
    SYN queue drops new SYNs, which a 1 s client timeout cannot survive."""
    deadline = time.monotonic() + timeout
    q = listen_backlog(tb)
    while q != (0, 0) and time.monotonic() < deadline:
        time.sleep(0.2)
        q = listen_backlog(tb)
    return q


def start_hostile(tb: TestBed, mode: str, hold: float) -> tuple[subprocess.Popen, int]:
    argv = [sys.executable, str(Path(__file__).resolve()), "client", mode, tb.server_ips[1], str(PORT),
            f"{hold:.1f}", str(SCENARIOS[mode])]
    p = tb.spawn(tb.client_ns[1], argv, cpu=1, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r, _, _ = select.select([p.stdout], [], [], 15.0)
    line = p.stdout.readline().decode() if r else ""
    if not line.startswith("ready"):
        tb.stop(p, signal.SIGKILL)
        raise AssertionError(f"hostile client {mode} not ready: {line!r} {p.stderr.read().decode()[-2000:]}")
    return p, int(line.split()[1])


def finish_hostile(tb: TestBed, p: subprocess.Popen) -> dict:
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
    try:
        out, err = p.communicate(timeout=15)
    finally:
        tb.stop(p, signal.SIGKILL, timeout=5)
    assert p.returncode == 0, err.decode(errors="replace")[-2000:]
    return json.loads(out.decode().strip().splitlines()[-1])


def ok(g: dict) -> int:
    return g["status"]["2xx"]


@pytest.mark.parametrize("mode", list(SCENARIOS))
def test_hostile(bed, server, mode, tmp_path):
    p, kind = server["proc"], server["kind"]
    base_fds = server["base_fds"]
    assert wait_fds(p.pid, base_fds) <= base_fds
    baseline = run_load(bed, tmp_path, "base")
    assert ok(baseline) >= 0.95 * RATE * LOAD_S, baseline

    t_hostile = time.monotonic()
    hostile, held = start_hostile(bed, mode, hold=LOAD_S + 8)
    try:
        if mode in ("slowloris", "silent"):
            want = SCENARIOS[mode]
            if kind == "userver":
                assert held >= want, f"only {held} of {want} connections held"
                # the server really holds them: one descriptor each
                deadline = time.monotonic() + 5
                while nfds(p.pid) < base_fds + 0.98 * want and time.monotonic() < deadline:
                    time.sleep(0.1)
                assert nfds(p.pid) >= base_fds + 0.98 * want
            else:
                assert held >= KNOT_THREADS, held
        under = run_load(bed, tmp_path, "hostile")
        assert p.poll() is None, "server died under hostile load"
        if kind == "knot" and mode in ("slowloris", "silent"):
            busy_fds = nfds(p.pid) - base_fds
    finally:
        summary = finish_hostile(bed, hostile)
    assert time.monotonic() - t_hostile < 20, "scenario over its 20 s bound"
    assert summary["secret_seen"] == 0, summary
    if mode == "traversal":
        codes = {c for key in summary["counts"] for c in key.split(",")}
        assert codes <= {"400", "403", "404"}, summary     # never 200, never a dropped connection
        assert summary["n"] >= 100, summary
    elif mode == "garbage":
        assert summary["n"] >= 100, summary
        codes = {c for key in summary["counts"] if not key.startswith("oserror") for c in key.split(",")}
        assert codes <= {"200", "400", "none"}, summary
        resets = sum(v for k, v in summary["counts"].items() if k.startswith("oserror"))
        assert resets <= 0.05 * summary["n"], summary
    elif mode == "rst":
        assert summary["counts"].get("rst_after_16k", 0) >= 50, summary

    # descriptors back to where they were before the scenario
    left = wait_fds(p.pid, base_fds)
    assert left <= base_fds, f"{left - base_fds} descriptors still open 15 s after the hostile clients left"
    assert p.poll() is None

    ratio = ok(under) / ok(baseline)
    print(f"\nhostile {kind}{'-' + server['mux'] if server['mux'] else ''} {mode}: 2xx {ok(baseline)} -> "
          f"{ok(under)} (ratio {ratio:.3f}), held {held}, fds back to {left} (base {base_fds}), "
          f"client {json.dumps(summary)[:300]}")
    if kind == "knot" and mode in ("slowloris", "silent"):
        # Documented drop: every knot thread sits in a blocking read on an idle connection
        # for --idle-timeout before it takes the next one.  The threads were busy with
        # them (descriptors held beyond the baseline) ...
        assert busy_fds >= KNOT_THREADS * 0.9, busy_fds
        # ... and once the idle clients are gone (and the kernel's queues have let go of
        # them) the rate is back.
        assert wait_listen_drained(bed) == (0, 0)
        after = run_load(bed, tmp_path, "after")
        assert ok(after) >= 0.9 * ok(baseline), (after, baseline)
        assert wait_fds(p.pid, base_fds) <= base_fds
    else:
        assert 0.9 <= ratio <= 1.1, f"{mode}: {ok(under)} 2xx under hostile load vs {ok(baseline)} without"
        assert under["timeouts"] <= 0.01 * under["attempts"], under


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))

"""The C programs refuse a bad command-line value by name (realsys/c/opt.h).

They used to read numbers with atoi()/atof(), so "--spin-us x" ran with 0 us of
work and "--port abc" gave a bare usage text.  Each row is one bad value; the
program must exit 2 before doing anything, naming the option and echoing the
value.  The rows start from arguments that would otherwise run (loopback, a
short load), so a row that is wrongly accepted shows up as a run, not a hang.
Asked for, --help (or -h) is not an error: usage on stdout, exit 0.
"""
from __future__ import annotations

import json
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

SERVER_BASE = ["--addr", "127.0.0.1", "--port", "18080"]
LOADGEN_BASE = ["--server", "127.0.0.1", "--port", "18080", "--duration", "0.2", "--timeout", "0.2"]

ROWS = [
    # (program, bad arguments, option named in the error, value echoed)
    ("userver", ["--port", "abc"], "--port", "abc"),
    ("userver", ["--port", "0"], "--port", "0"),
    ("userver", ["--port", "65536"], "--port", "65536"),
    ("userver", ["--backlog", "-5"], "--backlog", "-5"),
    ("userver", ["--backlog", ""], "--backlog", ""),
    ("userver", ["--accept-limit", "0"], "--accept-limit", "0"),
    ("userver", ["--accept-limit", "5x"], "--accept-limit", "5x"),
    ("userver", ["--accept-limit", "Inf"], "--accept-limit", "Inf"),
    ("userver", ["--mux", "kqueue"], "--mux", "kqueue"),
    ("userver", ["--spin-us", "x"], "--spin-us", "x"),
    ("userver", ["--spin-us", "1.5"], "--spin-us", "1.5"),
    ("userver", ["--max-conns", "0"], "--max-conns", "0"),
    ("userver", ["--max-conns", "99999999999999999999"], "--max-conns", "99999999999999999999"),
    ("userver", ["--sample-ms", "-1"], "--sample-ms", "-1"),
    ("userver", ["--writev-max", "-1"], "--writev-max", "-1"),
    ("userver", ["--writev-max", "16k"], "--writev-max", "16k"),
    ("userver", ["--writev-max", "67108865"], "--writev-max", "67108865"),
    ("userver", ["select"], "unexpected argument", "select"),
    ("knot", ["--threads", "0"], "--threads", "0"),
    ("knot", ["--max-conns", "0"], "--max-conns", "0"),
    ("knot", ["--max-conns", "1e3"], "--max-conns", "1e3"),
    ("knot", ["--threads", "ten"], "--threads", "ten"),
    ("knot", ["--idle-timeout", "2s"], "--idle-timeout", "2s"),
    ("knot", ["--accept-limit", "-1"], "--accept-limit", "-1"),
    ("knot", ["--port", " "], "--port", " "),
    ("knot", ["--writev-max", "1e6"], "--writev-max", "1e6"),
    ("knot", ["--mux", "bogus"], "--mux", "bogus"),             # taken and ignored, but not any word
    ("userver", ["--port", " +18640"], "--port", " +18640"),     # strtol skips blanks and takes '+'
    ("userver", ["--accept-limit", "\t7"], "--accept-limit", "\t7"),
    ("loadgen", ["--rate", "0x10"], "--rate", "0x10"),            # strtod reads hex
    ("loadgen", ["--duration", " 0x1p-1"], "--duration", " 0x1p-1"),
    ("loadgen", ["--timeout", "+1"], "--timeout", "+1"),
    ("loadgen", ["--rate", "0"], "--rate", "0"),
    ("loadgen", ["--rate", "nan"], "--rate", "nan"),
    ("loadgen", ["--rate", "1e7"], "--rate", "1e7"),
    ("loadgen", ["--rate", "100/s"], "--rate", "100/s"),
    ("loadgen", ["--duration", "inf"], "--duration", "inf"),
    ("loadgen", ["--timeout", "-1"], "--timeout", "-1"),
    ("loadgen", ["--timeout-from", "syn"], "--timeout-from", "syn"),
    ("loadgen", ["--arrivals", "uniform"], "--arrivals", "uniform"),
    ("loadgen", ["--workload", "specweb2005"], "--workload", "specweb2005"),
    ("loadgen", ["--bind", "198.18.0.1,1.2.3"], "--bind", "198.18.0.1,1.2.3"),
    # strtok_r skipped empty fields: "" bound nothing and "a,,b" bound two, both silently;
    # past 256 addresses the rest were dropped
    ("loadgen", ["--bind", ""], "--bind", ""),
    ("loadgen", ["--bind", "198.18.0.1,,198.18.0.2"], "--bind", "198.18.0.1,,198.18.0.2"),
    ("loadgen", ["--bind", "198.18.0.1,"], "--bind", "198.18.0.1,"),
    ("loadgen", ["--bind", ",".join(["127.0.0.1"] * 257)], "--bind", ",".join(["127.0.0.1"] * 257)),
    ("loadgen", ["--seed", "-1"], "--seed", "-1"),
    ("loadgen", ["--zipf", "inf"], "--zipf", "inf"),
    ("loadgen", ["--warmup", "601"], "--warmup", "601"),
    ("loadgen", ["--server", "localhost"], "--server", "localhost"),
    ("loadgen", ["--server", "127.0.0.1:80"], "--server", "127.0.0.1:80"),
    # --addr was passed to make_listener unchecked: "localhost" ended in "userver: listen:
    # Invalid argument", exit 1, not naming the option
    ("userver", ["--addr", "localhost"], "--addr", "localhost"),
    ("userver", ["--addr", "::1"], "--addr", "::1"),
    ("userver", ["--addr", ""], "--addr", ""),
    ("userver", ["--addr", "127.1"], "--addr", "127.1"),
    ("knot", ["--addr", "localhost"], "--addr", "localhost"),
    ("knot", ["--addr", "256.0.0.1"], "--addr", "256.0.0.1"),
    ("knot", ["--addr", "127.0.0.1 "], "--addr", "127.0.0.1 "),
    # the request is built in a 256-byte buffer: a longer target was sent cut off and followed
    # by the bytes beyond it (ASan: heap-buffer-overflow in send_request past ~4.4 KB)
    ("loadgen", ["--uri", "/" + "a" * 300], "--uri", "/" + "a" * 300),
    ("loadgen", ["--uri", "/a b"], "--uri", "/a b"),
    ("loadgen", ["--uri", "/a\tb"], "--uri", "/a\tb"),
    ("loadgen", ["--uri", "index.html"], "--uri", "index.html"),
]


@pytest.mark.parametrize("prog,bad,opt,value", ROWS, ids=[f"{r[0]} {' '.join(r[1])}"[:60] for r in ROWS])
def test_bad_value_is_refused_by_name(cbuild, prog, bad, opt, value):
    base = LOADGEN_BASE if prog == "loadgen" else SERVER_BASE
    p = subprocess.run([str(cbuild / prog)] + base + bad, capture_output=True, text=True, timeout=20)
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-300:])
    first = p.stderr.splitlines()[0]
    assert first.startswith(f"{prog}: ") and opt in first and f"'{value}'" in first, first
    assert p.stdout == ""       # refused before a run started: no statistics written


# Output files (--stats, --out) are written when the run ends, so a bad path was found only
# then: "userver: stats: No such file or directory" at SIGTERM, "loadgen: out: ..." after the
# whole load, exit 1, the run's statistics lost.  Each row is refused at start-up (opt.h,
# opt_outpath), for every program: exit 2 naming the option, before the server listens or
# loadgen connects, leaving no file behind.
OUT_OPT = {"userver": "--stats", "knot": "--stats", "loadgen": "--out"}
OUT_ROWS = [
    # (case, path, what the refusal says; {tmp} is the test's directory)
    ("no such directory", "{tmp}/nodir/s.json",
     "expected a file in an existing, writable directory ('{tmp}/nodir': No such file or directory)"),
    ("parent is a file", "{tmp}/file/s.json", "('{tmp}/file': Not a directory)"),
    ("a directory", "{tmp}", "expected a file path, not a directory"),
    ("trailing slash", "{tmp}/new/", "expected a file path, not a directory"),
    ("empty", "", "expected a file path"),
    # the writers append ".tmp" / ".snap.tmp" (NAME_MAX 255; 4096-byte buffers, which cut a
    # longer path silently)
    ("name too long", "{tmp}/" + "n" * 247, "expected a file name of at most 246 characters"),
    ("path too long", "{tmp}/" + ("d" * 200 + "/") * 21 + "s.json", "expected a path of at most 4086 characters"),
    ("no files in /proc", "/proc/s.json", "expected a file in an existing, writable directory ('/proc': "),
    ("read-only directory", "{tmp}/ro/s.json", "('{tmp}/ro': Permission denied)"),     # not as root
]


@pytest.fixture
def world_searchable_dir():
    """A directory anyone may enter, below /tmp (pytest's tmp_path is under a 0700 directory of
    root's, so a program run as nobody could not reach it)."""
    d = Path(tempfile.mkdtemp(prefix="simaccept-outpath-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.mark.parametrize("prog", ["userver", "knot", "loadgen"])
@pytest.mark.parametrize("case,path,says", OUT_ROWS, ids=[r[0] for r in OUT_ROWS])
def test_bad_output_path_is_refused_at_startup(cbuild, tmp_path, world_searchable_dir, prog, case, path, says):
    base, exe, as_nobody = tmp_path, cbuild / prog, None
    if case == "read-only directory" and os.geteuid() == 0:
        # root writes into a mode-0500 directory, so the program runs as nobody: from a copy in
        # a directory nobody may enter (a fresh clone's build directory may be under a 0700 one)
        base = world_searchable_dir
        exe = base / "bin" / prog
        exe.parent.mkdir()
        shutil.copy2(cbuild / prog, exe)

        def as_nobody():
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
    (base / "file").write_text("")
    (base / "docroot").mkdir()
    (base / "docroot").chmod(0o755)
    (base / "ro").mkdir()
    (base / "ro").chmod(0o500)
    before = sorted(base.rglob("*"))
    path, says = path.format(tmp=base), says.format(tmp=base)
    opt = OUT_OPT[prog]
    # loadgen aims at a real listener for 3 s: a run not refused connects at once and lasts 3 s
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    srv.setblocking(False)
    if prog == "loadgen":
        argv = ["--server", "127.0.0.1", "--port", str(srv.getsockname()[1]), "--rate", "20", "--duration", "3"]
    else:
        argv = ["--addr", "127.0.0.1", "--port", "18082", "--docroot", str(base / "docroot")]
    t0 = time.monotonic()
    p = subprocess.Popen([str(exe)] + argv + [opt, path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=as_nobody)
    try:
        out, err = p.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        pytest.fail(f"{prog} {opt} {path!r} was not refused: it ran ({err[-300:]})")
    finally:
        try:
            srv.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
        srv.close()
    elapsed = time.monotonic() - t0
    assert p.returncode == 2, (p.returncode, out[-300:], err[-300:])
    first = err.splitlines()[0]
    assert first.startswith(f"{prog}: {opt}: ") and says in first and first.endswith(f", got '{path}'"), first
    assert elapsed < 2.0, elapsed                       # at start-up, not after a run
    assert not connected and " on 127.0.0.1:" not in err, err   # no load sent; the server never listened
    assert out == ""
    assert sorted(base.rglob("*")) == before            # no probe, no .tmp left


def test_loadgen_out_is_still_written_whole(cbuild, tmp_path):
    # The check leaves nothing, and the file still comes from OUT.tmp renamed at the end: a
    # relative path (the current directory) and a name of 246 characters, the longest, both work.
    names = ["rel.json", "n" * 246]
    for name in names:
        p = subprocess.run([str(cbuild / "loadgen")] + LOADGEN_BASE + ["--rate", "5", "--out", name],
                           capture_output=True, text=True, timeout=20, cwd=tmp_path)
        assert p.returncode == 0, p.stderr[-300:]
        assert p.stdout == ""
    assert sorted(os.listdir(tmp_path)) == sorted(names)
    for name in names:
        assert "attempts" in json.loads((tmp_path / name).read_text())


@pytest.mark.parametrize("prog", ["userver", "knot", "loadgen"])
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_prints_usage_to_stdout_and_exits_0(cbuild, prog, flag):
    # knot and loadgen had no --help ("unrecognized option"); userver's printed the usage
    # to stderr and exited 2, as for a mistake.  Asked for, it is not an error.
    p = subprocess.run([str(cbuild / prog), flag], capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, (p.returncode, p.stderr[-300:])
    assert p.stdout.startswith(f"usage: {prog} ") and "--help" in p.stdout, p.stdout
    assert p.stderr == ""


@pytest.mark.parametrize("prog", ["userver", "knot", "loadgen"])
def test_unknown_option_prints_usage_to_stderr_and_exits_2(cbuild, prog):
    p = subprocess.run([str(cbuild / prog), "--no-such-option"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 2, (p.returncode, p.stdout[-300:], p.stderr[-300:])
    assert "--no-such-option" in p.stderr and f"usage: {prog} " in p.stderr, p.stderr
    assert p.stdout == ""


def test_loadgen_uri_at_the_limit_is_sent_whole(cbuild):
    # 180 characters (the longest --uri accepted) go out intact, with the Host line after.
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    uri = "/" + "u" * 179
    p = subprocess.Popen([str(cbuild / "loadgen"), "--server", "127.0.0.1", "--port", str(srv.getsockname()[1]),
                          "--rate", "1", "--duration", "0.2", "--timeout", "0.5", "--http10", "--uri", uri],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        srv.settimeout(5)
        c, _ = srv.accept()
        c.settimeout(5)
        got = b""
        while b"\r\n\r\n" not in got:
            b = c.recv(4096)
            if not b:
                break
            got += b
        c.close()
    finally:
        p.communicate(timeout=20)
        srv.close()
    assert got == f"GET {uri} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n".encode(), got


def test_loadgen_binds_256_addresses_in_turn(cbuild):
    # 256 addresses is the most --bind takes; connections leave from them round-robin.
    binds = [f"127.0.{i // 250}.{i % 250 + 1}" for i in range(256)]
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    p = subprocess.Popen([str(cbuild / "loadgen"), "--server", "127.0.0.1", "--port", str(srv.getsockname()[1]),
                          "--bind", ",".join(binds), "--rate", "40", "--duration", "0.1", "--timeout", "0.3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peers = []
    try:
        srv.settimeout(5)
        for _ in range(4):
            c, (host, _) = srv.accept()
            peers.append(host)
            c.close()
    finally:
        out, err = p.communicate(timeout=20)
        srv.close()
    assert p.returncode == 0, err[-300:]
    assert peers == binds[:4], peers


@pytest.mark.parametrize("arrivals", ["deterministic", "poisson"])
def test_loadgen_tiny_rate_still_ends(cbuild, arrivals):
    # At --rate 1e-12 the inter-arrival gap (1e21 ns) does not fit in uint64_t; the cast gave 0,
    # the launch loop never advanced and loadgen ran forever, deaf to SIGTERM.  Now the one
    # arrival inside the window is launched and the run ends on time.
    p = subprocess.run([str(cbuild / "loadgen")] + LOADGEN_BASE + ["--rate", "1e-12", "--arrivals", arrivals],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr[-300:]
    assert '"attempts": 1,' in p.stdout, p.stdout[:400]


def test_loadgen_without_server_names_it(cbuild):
    p = subprocess.run([str(cbuild / "loadgen"), "--rate", "5"], capture_output=True, text=True, timeout=20)
    assert p.returncode == 2 and p.stderr.startswith("loadgen: --server is required"), p.stderr


@pytest.mark.parametrize("prog,good", [
    ("userver", ["--accept-limit", "inf", "--mux", "epoll", "--spin-us", "0", "--max-conns", "100", "--sample-ms", "50"]),
    ("knot", ["--accept-limit", "10", "--threads", "4", "--idle-timeout", "1", "--mux", "select"]),
])
def test_good_values_still_start_the_server(cbuild, prog, good, tmp_path):
    # The refusal must not catch the values realsys itself passes: the server starts,
    # announces itself on the address it was given, and ends cleanly on SIGTERM.
    argv = [str(cbuild / prog), "--addr", "127.0.0.1", "--port", "18081", "--docroot", str(tmp_path),
            "--stats", str(tmp_path / "stats.json")] + good
    p = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([p.stderr], [], [], 10)
        banner = p.stderr.readline() if ready else ""
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert banner.startswith(f"{prog}: ") and "on 127.0.0.1:18081" in banner, banner
    assert p.returncode == 0, p.stderr.read()
    # the statistics, and nothing else: the start-up check of --stats left no file
    assert os.listdir(tmp_path) == ["stats.json"]

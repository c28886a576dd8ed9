#!/bin/sh
# tools/soak.sh [MINUTES] - soak the event-driven server (userver) at twice its peak.
#
# On the realsys test bed (root: network namespaces), userver (mux $SOAK_MUX, default
# select; --spin-us 200, the onepacket-select scale, peak about 3,400 replies/s) gets
# $SOAK_RATE connections/s (default 6,800 = 2x peak) of the one-packet workload from two
# generator processes for MINUTES (default 10).  Every 10 s it samples the server's RSS
# (VmRSS) and open descriptors (/proc/PID/fd), and prints them; at the end it prints the
# RSS at 1 minute and at the end, the RSS growth after the first minute, the fd maximum,
# and the server's exit status on SIGTERM.  Exit 1 if the server died or did not exit 0.
# A script for a person, not CI: it takes MINUTES and both CPUs.
set -eu
MIN=${1:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
make -s -C "$ROOT/realsys/c" all
cd "$ROOT"
# realsys needs numpy: $PYTHON, else the project's venv (make venv), else python3
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    if [ -x "$ROOT/.venv/bin/python" ]; then PY="$ROOT/.venv/bin/python"; else PY=python3; fi
fi
exec "$PY" - "$MIN" "${SOAK_RATE:-6800}" "${SOAK_MUX:-select}" <<'PY'
import json, os, signal, subprocess, sys, tempfile, time
from pathlib import Path
sys.path.insert(0, os.getcwd())
from realsys import bin_dir
from realsys.docroot import make_docroot
from realsys.loadgen import loadgen_argv
from realsys.testbed import TestBed, TestBedError

def number(text, what):
    """A finite number > 0, or exit 2 naming it (was a ValueError traceback; 0 or less built the
    test bed for a soak of no time)."""
    try:
        x = float(text)
    except ValueError:
        x = float("nan")
    if not 0 < x < float("inf"):
        sys.exit(print(f"soak.sh: {what}: must be a finite number > 0, got {text!r}", file=sys.stderr) or 2)
    return x

minutes, rate, mux = number(sys.argv[1], "MINUTES"), number(sys.argv[2], "SOAK_RATE"), sys.argv[3]
if mux not in ("select", "poll", "epoll"):
    sys.exit(print(f"soak.sh: SOAK_MUX: must be select, poll or epoll, got {mux!r}", file=sys.stderr) or 2)
secs = minutes * 60
work = Path(tempfile.mkdtemp(prefix="soak-"))
import atexit, shutil
atexit.register(shutil.rmtree, work, True)     # on every exit: it was removed only after a finished soak
os.chmod(work, 0o755)
root = make_docroot(work / "root", 1024)

def rss_kb(pid):
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return -1

samples = []
try:
    with TestBed(n_clients=2, sysctls_server={"net.ipv4.tcp_syncookies": "0"}) as tb:
        srv = tb.spawn(tb.server_ns, [str(bin_dir() / "userver"), "--port", "8080", "--docroot", str(root),
                                      "--mux", mux, "--accept-limit", "inf", "--spin-us", "200",
                                      "--max-conns", "15000", "--stats", str(work / "stats.json")],
                       cpu=0, nice=-20, stderr=subprocess.DEVNULL)
        tb.wait_listening(8080, srv)
        gens = []
        for i in range(2):
            argv = loadgen_argv(server_ip=tb.server_ips[i], port=8080, binds=tb.client_addrs(i, 8),
                                conn_rate=rate / 2, duration=secs, warmup=0.0, timeout=2.0,
                                arrivals="deterministic", seed=11 + i, workload="one-packet",
                                out=work / f"g{i}.json")
            gens.append(tb.spawn(tb.client_ns[i], argv, cpu=1, nice=-20, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL))
        t0 = time.monotonic()
        print(f"soak: userver {mux} spin 200us, {rate:.0f} conn/s offered, {minutes:g} min", flush=True)
        # conn_kb: connection structs the server has malloc'd (kept on its freelist,
        # so they grow only at a new high of simultaneously open connections);
        # peak: the most open connections in its 100 ms samples
        print("   t_s   rss_kb   fds   conn_kb   peak", flush=True)
        while time.monotonic() - t0 < secs:
            time.sleep(max(0.0, 10 - (time.monotonic() - t0) % 10))
            if srv.poll() is not None:
                print(f"soak: SERVER DIED with status {srv.returncode}", flush=True)
                break
            t = time.monotonic() - t0
            snap = work / "stats.json.snap"
            snap.unlink(missing_ok=True)
            os.kill(srv.pid, signal.SIGUSR2)
            for _ in range(100):
                if snap.exists():
                    break
                time.sleep(0.01)
            try:
                st = json.loads(snap.read_text())
                conn_kb = st["conn_structs"] * st["conn_struct_bytes"] / 1024
                peak = st["open_conns"]["max"]
            except (OSError, ValueError, KeyError):
                conn_kb, peak = float("nan"), -1
            s = (round(t), rss_kb(srv.pid), len(os.listdir(f"/proc/{srv.pid}/fd")), conn_kb, peak)
            samples.append(s)
            print(f"{s[0]:6d} {s[1]:8d} {s[2]:5d} {s[3]:9.0f} {s[4]:6d}", flush=True)
        for g in gens:
            tb.stop(g, timeout=15)
        alive = srv.poll() is None
        rc = tb.stop(srv, signal.SIGTERM, timeout=15)
except TestBedError as e:      # another test bed up, not root: a traceback, and the work folder left
    sys.exit(print(f"soak.sh: {e}", file=sys.stderr) or 2)
except KeyboardInterrupt:
    sys.exit(print("soak.sh: interrupted", file=sys.stderr) or 130)
replies = sum(json.loads((work / f"g{i}.json").read_text()).get("replies_ok", 0)
              for i in range(2) if (work / f"g{i}.json").exists())
if samples:
    at1 = min(samples, key=lambda s: abs(s[0] - 60))
    last = samples[-1]
    after1 = [s[1] for s in samples if s[0] >= 60]
    grow = (max(after1) - at1[1]) if after1 else 0
    conn_grow = last[3] - at1[3]
    print(f"soak: RSS at {at1[0]} s: {at1[1]} kB; at {last[0]} s (end): {last[1]} kB; "
          f"growth after the first minute: {grow} kB, of which connection structs {conn_grow:.0f} kB "
          f"(peak open {at1[4]} -> {last[4]}), other {grow - conn_grow:.0f} kB; "
          f"fds max {max(s[2] for s in samples)}; replies {replies} "
          f"({replies / secs:.0f}/s); server alive {alive}, exit {rc} on SIGTERM")
sys.exit(0 if alive and rc == 0 else 1)
PY

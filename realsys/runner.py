"""Run a scenario's sweep on the test bed and record one RunRecord (source="real") per point.

Per point (timeline, all on CLOCK_MONOTONIC)::

    start server in the server ns on cpu_server, wait until it listens
    start bpftrace (gated to the measured window by nsecs thresholds)
    t_lg    start load generators in both client ns on cpu_clients (fresh source addresses)
    t_meas  = t_lg + warmup: SIGUSR1 to the server (zero its statistics), counters + CPU snapshot
    t_end   = t_meas + duration: SIGUSR2 (statistics snapshot), counters + CPU snapshot
    wait for the generators (they drain for at most twice client.timeout: connect, then reply), stop bpftrace and server

Results: ``DIR/results.csv`` (record.COLUMNS; rewritten atomically with one more complete
row per point; a point whose (point label, resolved config) already has an ok row is
skipped, so an interrupted sweep resumes), ``DIR/points/<content-hash>.json`` (server
statistics, generator output, counter deltas, drop split, CPU, softirq and provenance:
kernel version, sysctls, CPU model, git revision), and ``DIR/throughput.png``.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import math
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

from simaccept.cli import _out_dir
from simaccept.sweep import atomic_write
from simaccept.record import COLUMNS, RunRecord
from simaccept.scenario import SCHEMA, Scenario, ScenarioError, load_scenario

from . import REPO, bin_dir, in_source_tree, kernel
from .docroot import HEADER_TEMPLATE, SPECWEB_FILES, make_docroot
from .loadgen import (httperf_argv, httperf_wsesslog_argv, loadgen_argv, merge, parse_httperf, requests_per_conn,
                      write_wsesslog)
from .rowconfig import resolved_now
from .servers import PORT, ServerConfigError, death_signal, nginx_binary, nginx_event_methods, nginx_version, server_argv
from .testbed import (CPU_QUOTA_MIN, DEFAULTED_SYSCTLS, TestBed, TestBedError, check_can_build, netrx_check,
                      owner_alive, owner_record, stop_signals_held)

# Server and generators run at nice -20: on a shared machine other CPU-bound work then
# gets about 1 % of their CPUs instead of half (softirq work is not affected by nice).
NICE = -20
#: The runner's own thread runs at this SCHED_FIFO priority (the lowest) while it runs points,
#: with SCHED_RESET_ON_FORK so that what it starts (server, generators, bpftrace) does not inherit
#: it; 0 leaves it as it was.  Why: each generator is in an autogroup of its own at nice -20
#: (TestBed.spawn), the runner's session at nice 0, so against one busy-polling generator the
#: runner gets about 1 % of the clients' CPU (CFS weights 1024 : 88761), and its work at a
#: window's mark (a signal, the counters, the CPU snapshot) took that long to finish: measured
#: side by side, 12 runs of the httperf test point, the window's start was marked 0.05-0.20 s late
#: (median 0.17 s, one point failed) at nice 0 and 0.001-0.002 s late at SCHED_FIFO, and one
#: fresh-clone CI run saw 2.0-5.0 s.  The runner sleeps between its marks, so a real-time
#: thread takes only what it uses; the kernel's RT throttling (95 %) bounds even a runaway.
RUNNER_FIFO_PRIORITY = 1
#: A point fails when its generators launched less than this share of the rate asked for in the
#: window (httperf: the clients' kernels' count; loadgen: its own, :func:`offered_error`, which
#: fails as far above too): a generator falls behind rather than failing.
MIN_LAUNCHED = 0.95
#: The shortest middle 80 % of a window whose loadgen launch rate :func:`offered_error` judges (s).
OFFERED_MIN_WINDOW_S = 1.0
SYSCTL_KEYS = ("net.ipv4.tcp_syncookies", "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog",
               "net.ipv4.tcp_synack_retries", "net.ipv4.tcp_abort_on_overflow")


# --------------------------------------------------------------------------- checks
def check_real(sc: Scenario) -> None:
    """Refuse, naming the key, what cannot run for real on this machine."""
    for key in ("cpu_server", "cpu_clients"):
        if len({p.values["realsys"][key] for p in sc.points()}) > 1:
            # the test bed's receive steering and the runner's CPU are set from the first point
            raise ScenarioError(f"realsys.{key}", "one test bed serves the whole run (its RPS steering and "
                                "the runner's CPU come from the first point): give one value; other CPUs "
                                "are separate runs")
    for pt in sc.points():
        v = pt.values
        if v["kernel"]["profile"] != "linux-6":
            raise ScenarioError("kernel.profile", f"{v['kernel']['profile']!r} cannot run for real: this machine "
                                f"runs Linux {platform.release()}; use linux-6 here and the simulator for linux-2.4")
        kind = v["server"]["kind"]
        if kind == "tux":
            raise ScenarioError("server.kind", "tux needs its kernel module and cannot run here; simulate it")
        if kind == "knot" and v["server"]["mux"] != "select":
            # knot.c blocks in accept() and read() in its threads: no getevents phase, and its
            # record's config would be one the simulator refuses (sim.check_modelled)
            raise ScenarioError("server.mux", f"knot has no getevents phase (threads block in accept and read), "
                                f"so {v['server']['mux']!r} would change nothing: leave it \"select\"")
        if kind == "nginx" and v["server"]["accept_limit"] not in (1, "inf"):
            raise ScenarioError("server.accept_limit", "nginx has only multi_accept off (1) or on (\"inf\"), "
                                f"got {v['server']['accept_limit']!r}")
        if kind == "nginx" and v["realsys"]["spin_us"] > 0:
            raise ScenarioError("realsys.spin_us", "nginx has no per-request spin; use 0 for nginx points")
        if v["server"]["policy"] != "accept-limit":
            raise ScenarioError("server.policy", "the real servers implement only accept-limit")
        if v["workload"]["idle_conns"] != 0:
            raise ScenarioError("workload.idle_conns", "idle WAN connections are simulated only")
        cl = v["client"]
        # The client keys the simulator models and the real clients cannot: refused rather
        # than run with the kernel's or the generator's own behaviour under the key's name.
        if cl["syn_rto"] != -1:
            raise ScenarioError("client.syn_rto", "the clients' initial SYN RTO is their kernel's (1 s on Linux 6) "
                                "and cannot be set here; use -1, or simulate")
        if cl["data_rto"] != 0.2:
            raise ScenarioError("client.data_rto", "the clients' data RTO floor is their kernel's (RTO_min, 0.2 s) "
                                "and is not set here; use 0.2, or simulate")
        for key, why in _FIXED_ON_THE_TEST_BED.items():
            sec, name = key.split(".")
            if v[sec][name] != SCHEMA[sec][name].default:
                raise ScenarioError(key, f"{why}; use {SCHEMA[sec][name].default!r} (the value that stands for it), "
                                    "or simulate")
        if v["realsys"]["httperf"]:
            for key in ("think_ms", "request_delay_ms"):
                if cl[key] != 0:
                    raise ScenarioError(f"client.{key}", "httperf cannot delay as the simulated client does (its "
                                        "session think time is not held before the close, and it has no request "
                                        "delay); use our load generator (realsys.httperf = false) or 0")
        if v["realsys"]["httperf"] and cl["timeout_from"] != "connect":
            raise ScenarioError("client.timeout_from", "httperf's timer restarts at connect; "
                                "first-syn needs our load generator (realsys.httperf = false)")
        # make_docroot builds at most the SPECweb99-like set's 36 files; fewer leave out
        # files the SPECweb99-like clients ask for (404s, the point failing its 4xx check).
        nfiles = v["realsys"]["docroot_files"]
        if nfiles > SPECWEB_FILES:
            raise ScenarioError("realsys.docroot_files", f"{nfiles} files: the SPECweb99-like set has "
                                f"{SPECWEB_FILES} (at most {SPECWEB_FILES})")
        least = len(HEADER_TEMPLATE.format(n=1)) + 1
        if v["workload"]["kind"] == "one-packet" and v["workload"]["reply_bytes"] < least:
            # the body is at least 1 byte: 1 and 100 were both served as 105 bytes, recorded as asked
            raise ScenarioError("workload.reply_bytes", f"a reply here is its {least - 1}-byte header and at least "
                                f"1 byte of body: give {least} or more, or simulate")
        if nfiles < SPECWEB_FILES and v["workload"]["kind"] == "specweb99":
            raise ScenarioError("realsys.docroot_files", f"{nfiles} files leave out some the SPECweb99-like "
                                f"clients ask for; use {SPECWEB_FILES} for workload.kind = \"specweb99\"")
        ncpu = os.cpu_count() or 1
        for key in ("cpu_server", "cpu_clients"):
            if v["realsys"][key] >= ncpu:
                raise ScenarioError(f"realsys.{key}", f"CPU {v['realsys'][key]} does not exist ({ncpu} CPUs)")
        if v["realsys"]["cpu_server"] == v["realsys"]["cpu_clients"]:
            # the runner holds the server's CPU at SCHED_FIFO: the generators, bpftrace and the
            # clients' receive steering on it too measure a shared CPU, recorded as any point
            raise ScenarioError("realsys.cpu_clients", f"is the server's CPU ({v['realsys']['cpu_server']}): the "
                                "load generators need a CPU of their own (realsys.cpu_server apart)")
        if v["client"]["hosts"] > 2:
            raise ScenarioError("client.hosts", "the test bed has 2 client hosts")
        if v["realsys"]["cpu_quota"] < CPU_QUOTA_MIN:
            # the kernel's CFS bandwidth takes a quota of 1 ms at least in a period of 1 s at most;
            # past that the cgroup's write failed with EINVAL, the test bed up and the server listening
            raise ScenarioError("realsys.cpu_quota", f"{v['realsys']['cpu_quota']!r} is below the smallest share "
                                f"the kernel's CFS bandwidth gives ({CPU_QUOTA_MIN:g}: 1 ms a second)")
        if v["realsys"]["settle_s"] > SETTLE_MAX_S:
            # 1e10 made time.sleep overflow after the first point, with a traceback
            raise ScenarioError("realsys.settle_s", f"{v['realsys']['settle_s']:g} s between points is past "
                                f"{SETTLE_MAX_S:g} s (an hour); TIME_WAIT lasts 60 s")
        if kind != "nginx" and v["realsys"]["spin_us"] != int(v["realsys"]["spin_us"]):
            # the servers take whole microseconds: 0.4 ran as 0 and 2.5 as 2, recorded as asked
            raise ScenarioError("realsys.spin_us", f"{v['realsys']['spin_us']:g}: the servers spin whole "
                                "microseconds; give an integer")
        for key in _LOADGEN_DOUBLES:
            if 0 < pt.get(key) < sys.float_info.min:
                # subnormal: strtod flags it out of range and loadgen refused it with the test bed up
                raise ScenarioError(key, f"{pt.get(key)!r} is too small for loadgen to read (its smallest is "
                                    f"{sys.float_info.min!r}); use 0 or a larger number")
        for key, hi, prog in _C_LIMITS:
            if prog in ("loadgen", kind) and pt.get(key) > hi:
                raise ScenarioError(key, f"{pt.get(key):g} is past what {prog} accepts (at most {hi:g})")
        if not v["realsys"]["httperf"]:
            per_proc = v["workload"]["rate"] / requests_per_conn(v["workload"]["kind"]) / v["realsys"]["procs"]
            if 0 < per_proc < sys.float_info.min:
                raise ScenarioError("workload.rate", f"{per_proc!r} connections/s per generator is too small for "
                                    "loadgen to read")
            if per_proc > LOADGEN_MAX_RATE:
                raise ScenarioError("workload.rate", f"{per_proc:g} connections/s per generator is past what "
                                    f"loadgen accepts ({LOADGEN_MAX_RATE:g}); raise realsys.procs")
        if kind == "nginx" and nginx_binary() is None:
            # it was blamed on server.mux: "this nginx has no 'epoll' event method; set it to epoll"
            raise ScenarioError("server.kind", "nginx is not installed: realsys/install-deps.sh installs it")
        if kind == "nginx" and v["server"]["mux"] not in nginx_event_methods():
            raise ScenarioError("server.mux", f"this nginx has no {v['server']['mux']!r} event method (it has "
                                f"{', '.join(nginx_event_methods()) or 'none found'}); set server.mux = \"epoll\"")


#: Scenario keys the test bed has one fixed value for: a run given another one used to go ahead
#: with the test bed's and record the value it was given.
_FIXED_ON_THE_TEST_BED = {
    "client.timer_lag_ms": "the generators act on a timeout when it is due (a timerfd): a lag is simulated only",
    "client.syn_tick_ms": "the clients' SYN retransmissions leave when their kernel's timers fire: the early "
                          "tick is simulated only",
    "client.loop_ms": "the generators' event loop takes what it takes: the connect race is simulated only",
    # client.orphans is not here: it switches the model of what the clients' kernel does after a
    # close, which the test bed's kernel does whatever it says (as costs switch the model's CPU).
    # Nor is server.sndbuf_freed: the test bed's kernel frees a send buffer by the ACKs ("acked").
    "client.orphan_retries": "a closed client socket resends its request as the clients' kernel's "
                             "net.ipv4.tcp_orphan_retries says (0 there: 8 times)",
    "network.nics": "the test bed has two server NICs (veth pairs)",
    "network.bandwidth_mbps": "the test bed's veth links are not rate-limited",
    "network.delay_ms": "the test bed's links add no delay (this kernel has no netem)",
    "network.mss": "the veth links' MTU is 1500 (MSS 1448)",
    "server.sndbuf": "the real servers leave the send buffer to the kernel's autotuning",
    "server.service_dist": "the real servers' per-request work (realsys.spin_us) is a fixed amount",
    "workload.request_bytes": "the load generators send their own request line (about 50 bytes)",
}

#: What the C programs refuse past (their option parsing in realsys/c/*.c), for the scenario
#: keys that reach them: a key the schema allows past these would start the test bed and
#: then fail with the program's own message lost in its log.  (key, limit, program)
_C_LIMITS = (("client.timeout", 600.0, "loadgen"),          # loadgen.c --timeout
             ("scenario.duration", 3600.0, "loadgen"),      # loadgen.c --duration
             ("scenario.warmup", 600.0, "loadgen"),         # loadgen.c --warmup
             ("client.think_ms", 600000.0, "loadgen"),      # loadgen.c --think-ms
             ("client.request_delay_ms", 600000.0, "loadgen"),  # loadgen.c --request-delay-ms
             ("workload.zipf_alpha", 100.0, "loadgen"),     # loadgen.c --zipf
             ("realsys.spin_us", 1e6, "userver"),           # userver.c --spin-us
             ("realsys.spin_us", 1e6, "knot"),              # knot.c --spin-us
             ("server.threads", 100000, "knot"))            # knot.c --threads
LOADGEN_MAX_RATE = 1e6                                       # loadgen.c --rate (connections/s)
SETTLE_MAX_S = 3600.0                                        # realsys.settle_s: the runner sleeps it between points
#: The scenario keys loadgen reads as doubles (opt_double, strtod), above their lower bound 0.
_LOADGEN_DOUBLES = ("scenario.duration", "scenario.warmup", "client.timeout", "client.think_ms",
                    "client.request_delay_ms", "workload.zipf_alpha")


def check_out_name(sc: Scenario) -> None:
    """With no --out, scenario.name is a folder under realsys/results/: one plain name only."""
    name = sc.name
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise ScenarioError("scenario.name", f"{name!r} names the results folder (realsys/results/<name>) when "
                            "there is no --out: use a plain name, or pass --out")


#: The programs a run starts: make is asked about these alone.
RUN_BINARIES = ("userver", "knot", "loadgen")


def ensure_built(log=print, where: Path | None = None) -> None:
    """Build the programs a run starts in ``where`` (default ``realsys.bin_dir()``) unless make
    says they are up to date.  Raises RuntimeError with make's message when the build fails."""
    where = bin_dir() if where is None else where
    # make's own rules say what each program depends on: the newest of every source was the
    # test, so loadgen.c edited after userver was built ran make, and said so, on every run
    q = subprocess.run(["make", "-q", "-C", str(where), *RUN_BINARIES], capture_output=True)
    if q.returncode == 0:
        return
    log(f"realsys: building C sources in {where}")
    p = subprocess.run(["make", "-s", "-C", str(where), *RUN_BINARIES], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"make -C {where} failed:\n{p.stderr[-2000:]}")


def default_results_dir(name: str) -> Path:
    """Where a run without ``--out`` writes: ``realsys/results/<name>`` in the source tree realsys
    runs from, or under the working directory when it runs installed (it wrote into
    site-packages).  A source tree is told by its layout, as validation's ``CHECKOUT`` is, not by
    git (a tarball, or a checkout git refuses to read as root, is still one)."""
    return (REPO if in_source_tree(REPO) else Path.cwd()) / "realsys" / "results" / name


# --------------------------------------------------------------------------- provenance
def git_rev() -> str:
    """The checkout's ``git describe`` (with ``-dirty``), or "unknown" when realsys does
    not run from one (an installed package inside a user's repository gave that repository's)."""
    from simaccept.sim import checkout_rev
    # "unknown", not "not a checkout": git also refuses a checkout another user owns, as root
    return checkout_rev(REPO, describe=True) or "unknown"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def provenance() -> dict:
    return {"kernel": platform.release(), "kernel_version": platform.version(), "cpu_model": cpu_model(),
            "ncpu": os.cpu_count(), "git_rev": git_rev(), "host": socket.gethostname(),
            "python": platform.python_version(), "nginx": nginx_version(),
            "bpftrace": shutil.which("bpftrace") is not None}


# --------------------------------------------------------------------------- results file
class ResultsFileError(ValueError):
    """DIR/results.csv exists but is not a results file this runner wrote."""


#: A realsys results.csv holds a row per measured point (about 2 kB each); past this it is not one.
MAX_RESULTS_BYTES = 256 << 20


def read_rows(path: Path) -> list[dict]:
    """The rows of a results.csv ([] if there is none).  Raises ResultsFileError for a file
    that is not one (unreadable, not UTF-8, or no point/config/status header): a run would
    otherwise rewrite it with its rows and lose what it held."""
    if not path.exists():
        return []
    import stat
    try:
        st = path.stat()
    except OSError as e:
        raise ResultsFileError(f"{path}: cannot read it as a results file ({e.strerror or e}); move it away") from None
    # a device or a FIFO is none: /dev/zero was read until MemoryError, a FIFO blocked the run
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise ResultsFileError(f"{path}: not a regular file, not a results file; move it away")
    if st.st_size > MAX_RESULTS_BYTES:
        raise ResultsFileError(f"{path}: larger than {MAX_RESULTS_BYTES:,} bytes, not a results file; move it away")
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rd = csv.DictReader(f)
            rows = list(rd)
            header = rd.fieldnames or []
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ResultsFileError(f"{path}: cannot read it as a results file ({e}); move it away") from None
    missing = [c for c in ("point", "config", "status", "replies_per_s") if c not in header]
    if header and missing:
        raise ResultsFileError(f"{path}: not a results file (no {', '.join(missing)} column); move it away")
    for i, r in enumerate(rows, start=2):
        # DictReader pads a short row with None and files a long one's extra fields under None:
        # the runner writes whole rows atomically, so such a row was damaged from outside
        if None in r or None in r.values():
            raise ResultsFileError(f"{path}: line {i} has {'more' if None in r else 'fewer'} fields than "
                                   f"the header (damaged); move the file away or mend that line")
    return rows


def append_record(path: Path, rec: RunRecord) -> None:
    """Rewrite path with one more row: temp file + os.replace, so the file on disk always
    holds complete rows only.  ResultsFileError for a file with columns this version does not
    write (a newer one's): the rewrite would drop them from every row."""
    rows = read_rows(path)
    check_known_columns(path, rows)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in COLUMNS})
    d = rec.to_dict()
    w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in d.items()})
    atomic_write(path, buf.getvalue())


def check_known_columns(path: Path, rows: list[dict]) -> None:
    """ResultsFileError if the rows have a column this version does not write (a newer
    version's file): a row added to it would drop that column from every row."""
    unknown = [c for c in (rows[0] if rows else {}) if c not in COLUMNS]
    if unknown:
        raise ResultsFileError(f"{path}: columns this version does not write ({', '.join(unknown[:5])}"
                               f"{', ...' if len(unknown) > 5 else ''}): adding a row would drop them from every "
                               f"row; give another --out, or run the version that wrote it")


def done_keys(rows: list[dict]) -> set[tuple[str, str]]:
    """(point label, config) of each ok row, its config as this version writes it
    (:func:`realsys.rowconfig.resolved_now`), to compare with a point's ``(point_label(),
    to_json())``.  Compared as written, a row measured before a key was added was not
    recognised, and a resumed run measured its point again (on 7 Dec 2026, all 1,050 rows of
    the committed folders)."""
    defaults = load_scenario(text="").values
    return {(r.get("point", ""), resolved_now(r.get("config", ""), defaults))
            for r in rows if r.get("status") == "ok"}


# --------------------------------------------------------------------------- one point
def _nan(x) -> float:
    return math.nan if x is None else float(x)


def _sysctls_for(v: dict, defaults: dict[str, str]) -> dict[str, str]:
    """The server namespace's sysctls for the point ``v``; a key it leaves at -1 gets the
    namespace's own value (``defaults``, read when the bed was built), not the last point's."""
    k = v["kernel"]
    out = {"net.ipv4.tcp_syncookies": "1" if k["syncookies"] else "0", "net.ipv4.tcp_abort_on_overflow": "0",
           "net.core.somaxconn": str(k["somaxconn"] if k["somaxconn"] != -1 else 4096)}
    for key, name in DEFAULTED_SYSCTLS.items():
        if k[key] != -1:
            out[name] = str(k[key])
        elif defaults.get(name):
            out[name] = defaults[name]
    return out


def _sleep_until(t: float) -> None:
    while True:
        d = t - time.monotonic()
        if d <= 0:
            return
        time.sleep(min(d, 0.5))


#: How far the measured window may be off, as a fraction of its length, before a point fails.
WINDOW_SLACK = 0.05


def httperf_launches_in_window(rate: float, warm: float, dur: float) -> int:
    """How many of one httperf process's connections start in [warm, warm + dur): it starts
    round(rate x (warm + dur)) of them (at least 1, :func:`httperf_argv`), the k-th at k / rate."""
    n = max(1, int(round(rate * (warm + dur))))
    lo = math.ceil(warm * rate)
    hi = min(n - 1, math.ceil((warm + dur) * rate) - 1)
    return max(0, hi - lo + 1)


def status_error(status: dict) -> str | None:
    """None unless the server answered client errors: the generators ask only for files that
    exist, in valid requests, so a 4xx means the server cannot serve them (an unreadable
    document root gave 403 to every request, recorded as full throughput).  5xx replies are
    load shedding, a result: they are just not counted as replies."""
    n = sum(status.get(k, 0) for k in ("2xx", "3xx", "4xx", "5xx"))
    bad = status.get("4xx", 0)
    if n == 0 or bad <= 0.01 * n:
        return None
    return (f"{bad} of the generators' {n} replies were 4xx: the server refused their requests "
            f"(document root unreadable or files missing?)")


#: Launch lag (ms, the 99th percentile) past which a point's log line says its generator fell
#: behind: an open-loop schedule that slips sends what is due in one burst when it catches up.
LAUNCH_LAG_NOTE_MS = 10.0


def launch_lag_note(g: dict) -> str | None:
    """None unless our generators' launch lag (how late each connection left against its
    schedule; ``g["launch_lag_us"]``, merged over the processes) has its 99th percentile past
    :data:`LAUNCH_LAG_NOTE_MS`; else a note saying so.  A note, not a failure: the launches in
    the window still count to the rate asked for (``conn_attempts_per_s``), but 1 % of them
    came that late or later, in bursts, and some committed runs did (realsys/results/README.md,
    *Generator launch lag*).  httperf's points have no such histogram: None."""
    lag = g.get("launch_lag_us") or {}
    p99 = lag.get("p99")
    if not isinstance(p99, (int, float)) or not p99 / 1e3 > LAUNCH_LAG_NOTE_MS:
        return None
    return (f"the generators fell behind their schedule: launch lag p99 {p99 / 1e3:.1f} ms, max "
            f"{(lag.get('max') or math.nan) / 1e3:.1f} ms (what was due went out in bursts)")


def generator_error(g: dict) -> str | None:
    """None unless our generators failed to launch more than 1 % of their connections
    themselves (no socket, no port, no file descriptor, --max-conns open), or never launched
    some that were due (``unlaunched``: still behind a second after the schedule's end): the
    load offered was then below the rate asked for, and the point would be read as that rate's."""
    bad, n = g.get("local_errors", 0) or 0, g.get("attempts", 0) or 0
    late = g.get("unlaunched", 0) or 0
    if late:
        return (f"the load generators fell behind their schedule and never launched {late} of their "
                f"{n + late} connections: the offered load was below the rate asked for (more generator "
                f"processes, realsys.procs, or a lower rate)")
    if n == 0 or bad <= 0.01 * n:
        return None
    return (f"the load generators could not launch {bad} of their {n} connections (out of sockets, ports "
            f"or file descriptors; gen-N.log says which): the offered load was below the rate asked for")


def offered_error(g: dict, conn_rate: float, dur: float, arrivals: str) -> str | None:
    """None if our generators launched, in the middle 80 % of the window (``achieved_rate_mid``,
    summed over processes), within 1 - :data:`MIN_LAUNCHED` (5 %) of ``conn_rate``, or
    two launches per process of the count due there if that is more (each process rounds its
    own schedule's count); with Poisson arrivals, within four standard deviations of that count
    if that is wider.  Not judged for a middle window under :data:`OFFERED_MIN_WINDOW_S`: a
    stall of a few ms on a busy machine moves a share of its few launches out of it.
    A generator past what its CPU can launch falls behind, and since 7 Dec 2026 (its catch-up
    in bursts of 64) offers the window less: 28,771 conn/s of 35,000 (two processes, a 2 s
    window), recorded ok at 27,994 replies/s and read as the server's peak.  A generator
    catching up from the warm-up offers it more: 26,568 of 25,000.  Every committed loadgen row
    launched 98.5-100.9 % of its rate."""
    got = g.get("achieved_rate_mid")
    if got is None or conn_rate <= 0 or 0.8 * dur < OFFERED_MIN_WINDOW_S or not math.isfinite(got):
        return None
    n = conn_rate * 0.8 * dur           # launches due in the middle 80 %
    tol = max(1 - MIN_LAUNCHED, 2 * max(1, int(g.get("procs") or 1)) / n)
    if arrivals == "poisson":
        tol = max(tol, 4 / math.sqrt(n))
    off = got / conn_rate - 1
    if abs(off) <= tol:
        return None
    return (f"the load generators launched {got:.0f} conn/s in the window's middle 80 %, {abs(off):.0%} "
            f"{'below' if off < 0 else 'above'} the {conn_rate:g} asked for: they fell behind their schedule "
            f"{'' if off < 0 else 'and caught up in the window '}(the launch lag is in the point's JSON), so the "
            f"load offered was not the rate asked for; use more generator processes (realsys.procs) or a lower rate")


def httperf_error(res: list[dict], returncodes: list[int | None], conn_rate: float,
                  launched_per_s: float) -> str | None:
    """None if every httperf process printed its summary and together they launched at least
    :data:`MIN_LAUNCHED` of ``conn_rate`` in the window (``launched_per_s``: the clients'
    kernels' count of connect()s there); else what went wrong.  ``res``: :func:`parse_httperf` of
    each process's output; ``returncodes``: their exit statuses.  12 busy-polling processes at
    5,600 conn/s fell behind their schedule (1,637 launched a second in the window), were still
    running at the drain's deadline and were killed, printing nothing: recorded ok at 0 replies/s."""
    killed = [i for i, (r, rc) in enumerate(zip(res, returncodes)) if not r.get("connections") and (rc or 0) < 0]
    silent = [i for i, r in enumerate(res) if not r.get("connections") and i not in killed]
    n = len(res)
    if killed:
        return (f"{len(killed)} of {n} httperf processes (gen-{', gen-'.join(map(str, killed))}) were still "
                f"running when the generators' drain ended and were killed, so they printed no summary; they "
                f"launched {launched_per_s:.0f} of {conn_rate:g} conn/s in the window: {n} busy-polling "
                f"processes sharing the clients' CPU fall behind their schedule; use fewer or a lower rate")
    if silent:
        return (f"{len(silent)} of {n} httperf processes (gen-{', gen-'.join(map(str, silent))}) printed no "
                f"summary (gen-N.json has what they wrote)")
    if launched_per_s < MIN_LAUNCHED * conn_rate:
        return (f"httperf launched {launched_per_s:.0f} of {conn_rate:g} conn/s in the window (the clients' "
                f"kernels' count of connect()s): it fell behind its schedule, so the load offered was below "
                f"the rate asked for; {n} busy-polling processes share the clients' CPU")
    return None


def launch_error(attempts: float, conn_rate: float, dur: float) -> str | None:
    """None if the generators launched a connection in the measured window; else why the
    point measured nothing.  Launches are scheduled from the warm-up's start, so a rate
    below one per (warm-up + duration) can leave the window empty: such a point used to be
    recorded ok at 0 replies/s, a measurement of no load passed off as one of the server."""
    if attempts > 0:
        return None
    return (f"no connection was launched in the measured window ({conn_rate:g} conn/s x {dur:g} s = "
            f"{conn_rate * dur:.2g} expected): its rates would be of no load; raise workload.rate or "
            f"scenario.duration")


def _sched_name() -> str:
    """The calling thread's scheduling policy and priority, e.g. ``SCHED_FIFO 1`` (a point's record)."""
    pol = os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK
    names = {os.SCHED_OTHER: "SCHED_OTHER", os.SCHED_FIFO: "SCHED_FIFO", os.SCHED_RR: "SCHED_RR"}
    return f"{names.get(pol, pol)} {os.sched_getparam(0).sched_priority}"


class runner_on_time:
    """``with runner_on_time() as how:`` the calling thread runs at SCHED_FIFO
    (:data:`RUNNER_FIFO_PRIORITY`, reset on fork) inside the block and as before after it; ``how``
    says which (``"SCHED_FIFO 1"``, or ``"unchanged: <why>"`` where the kernel refuses it, e.g.
    no CAP_SYS_NICE, or when the priority is 0)."""

    def __enter__(self) -> str:
        self.old = None
        if not RUNNER_FIFO_PRIORITY:
            return "unchanged: RUNNER_FIFO_PRIORITY is 0"
        try:
            old = (os.sched_getscheduler(0), os.sched_getparam(0))
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK,
                                  os.sched_param(RUNNER_FIFO_PRIORITY))
        except OSError as e:
            return f"unchanged: {e.strerror or e}"
        self.old = old
        return f"SCHED_FIFO {RUNNER_FIFO_PRIORITY}"

    def __exit__(self, *exc) -> None:
        if self.old is not None:
            policy, param = self.old
            os.sched_setscheduler(0, policy, param)


def window_error(dur: float, late_start: float, late_end: float, server_wall_s: float | None,
                 httperf: bool = False) -> str | None:
    """None if the point measured the window it was asked for; else why not, in a sentence.

    The runner marks the window with its own clock (SIGUSR1 and the first counter read at the
    window's start, SIGUSR2 and the second at its end).  It runs on the clients' CPU, so
    generators that busy-poll there can starve it (it now runs at SCHED_FIFO, :class:`runner_on_time`,
    where the kernel allows it).  httperf 0.9.0 spins (2.0 s of CPU for a 2 s
    run at 200 conn/s); with 12 processes at 4,800 req/s the server's statistics covered 1 ms
    of a 4 s window and the kernel counters did not move, while httperf reported 4,800
    replies/s from a server that peaks near 3,600, and at 2,800 req/s the runner marked the
    window's start 6.7 s late.  ``late_start``/``late_end``: how late the
    runner marked each end (s); ``server_wall_s``: the time the server's statistics cover
    (None for nginx, which keeps none).  A point fails when either end is more than
    :data:`WINDOW_SLACK` x ``dur`` late or the server's statistics cover that much less than
    ``dur``: its rates would be of another window, or of none.  ``httperf``: whether httperf
    generated the load (the usual cause then); a window under a second allows its marks a few
    ms at most (0.01 s: 0.5 ms, where marking takes 1-5 ms), and the cause was put on httperf
    even for a 10 ms window of loadgen."""
    slack = WINDOW_SLACK * dur
    worst = max(late_start, late_end)
    if worst > slack:
        which = "start" if late_start >= late_end else "end"

        def secs(x):
            return f"{x * 1e3:.1f} ms" if x < 0.1 else f"{x:.2f} s"
        why = ("the clients' CPU was saturated (httperf busy-polls; use fewer realsys.procs)" if httperf else
               "the clients' CPU was busy (fewer realsys.procs or a lower rate)")
        if dur < 1.0:
            why = (f"a {dur:g} s window leaves too little for marking it, which takes a few ms: lengthen "
                   f"scenario.duration (1 s or more); or {why}")
        return (f"the runner marked the measured window's {which} {secs(worst)} late (allowed "
                f"{secs(slack)} of a {dur:g} s window): {why}")
    if server_wall_s is not None and server_wall_s < dur - slack:
        return (f"the server's statistics cover {server_wall_s:.2f} s of the {dur:g} s window: "
                f"it saw no event for the rest (no load reached it)")
    return None


def _say_mixed_drop_split(out_dir: Path, use_bpf: bool, log) -> None:
    """A run resumed with(out) --no-bpf mixed both kinds of drop split in one folder without
    a word: counters only cannot tell AcceptQFull from ListenOverflow."""
    kinds = set()
    for f in (out_dir / "points").glob("*.json"):
        try:
            kinds.add((json.loads(f.read_text()).get("drops") or {}).get("source"))
        except (OSError, ValueError):
            continue
    other = "counters+bpftrace" if not use_bpf else "counters only"
    if other in kinds:
        log(f"realsys: note: points already in {out_dir} have the drop split '{other}', this run's "
            f"{'does not use bpftrace' if not use_bpf else 'uses bpftrace where it can'}: the folder will mix "
            f"both (the report marks counters-only rows)")


def _active_opens(tb: TestBed, namespaces) -> int:
    """connect()s made so far in these namespaces (Tcp.ActiveOpens counts each SYN sent for a
    new connection, whether or not it was answered)."""
    return sum(kernel.read_counters(lambda n, ns=ns: tb.netfile(ns, n)).get("Tcp.ActiveOpens", 0)
               for ns in namespaces)


def server_error(kind: str, died: int | None, stop_status: int, snap: dict | None, *logs: Path) -> str | None:
    """None if the server lived through the point and stopped cleanly; else why not.

    A server killed mid-point (OOM killer, a crash) left a point recorded ok: the generators'
    refusals and the replies made before the death read as a slow server (an audit's
    SIGKILLed userver gave "37 replies/s, status ok").  ``died``: the exit status the server
    already had before the runner stopped it, or None; ``stop_status``: its status after
    SIGTERM (0 for our servers and nginx; negative: killed by that signal); ``snap``: the
    statistics userver and knot write at the window's end (nginx keeps none); ``logs``: the
    server's, whose last lines the error quotes."""
    tail = _log_tail(*logs)
    if died is not None:
        how = f"was killed by signal {-died}" if died < 0 else f"exited with status {died}"
        return f"the server ({kind}) {how} during the point, before the runner stopped it" + tail
    if kind != "nginx" and snap is None:
        return (f"the server ({kind}) wrote no statistics at the window's end (SIGUSR2): "
                f"its accepts and phases are unknown" + tail)
    if stop_status != 0:
        how = f"was killed by signal {-stop_status}" if stop_status < 0 else f"exited with status {stop_status}"
        return f"the server ({kind}) {how} when stopped with SIGTERM, not 0" + tail
    return None


def run_point(tb: TestBed, pt: Scenario, work: Path, *, use_bpf: bool = True, log=print,
              hook: Callable[[str], None] | None = None) -> tuple[RunRecord, dict]:
    v = pt.values
    sv, wl, cl, rs, sc = v["server"], v["workload"], v["client"], v["realsys"], v["scenario"]
    started = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    t_wall0 = time.monotonic()
    h = pt.content_hash(simulator=False)
    pdir = work / h
    pdir.mkdir(parents=True, exist_ok=True)
    docroot = make_docroot(work / f"docroot-{wl['reply_bytes']}", wl["reply_bytes"], rs["docroot_files"])
    tb.set_sysctls(_sysctls_for(v, getattr(tb, "sysctl_defaults", {})))
    sysctls = tb.read_sysctls(SYSCTL_KEYS)
    stats_path = pdir / "server.json"
    kind = sv["kind"]
    argv = server_argv(kind, v, docroot, stats_path, pdir / "nginx")
    srv_log = open(pdir / "server.log", "w")
    server = tb.spawn(tb.server_ns, argv, cpu=rs["cpu_server"], nice=NICE, deathsig=death_signal(kind),
                      stdout=srv_log, stderr=subprocess.STDOUT)
    extra: dict = {"point": pt.point_label(), "hash": h, "config": pt.to_json(), "sysctls": sysctls, "server_argv": argv,
                   "runner_sched": _sched_name()}
    tracer = None
    try:
        try:
            tb.wait_listening(PORT, server)
        except TestBedError as e:
            srv_log.flush()
            raise TestBedError(f"{e}{_log_tail(pdir / 'server.log', pdir / 'nginx' / 'error.log')}") from None
        time.sleep(0.1)
        pids = [server.pid]
        if kind == "nginx":
            time.sleep(0.2)
            pids += kernel.children(server.pid)
        if rs["cpu_quota"] < 1:
            extra["cpu_cgroup"] = tb.cpu_limit(pids, rs["cpu_quota"])
        warm, dur, tmo = sc["warmup"], sc["duration"], cl["timeout"]
        tracer = kernel.DropTracer(enabled=use_bpf)
        lead = 2.5 if tracer.available else 0.3
        t_lg = time.monotonic() + lead
        t_meas, t_end = t_lg + warm, t_lg + warm + dur
        if tracer.available:
            tracer.program_window(int(t_meas * 1e9), int(t_end * 1e9))
        tracer.start()
        nhosts = min(cl["hosts"], len(tb.client_ns))
        procs = rs["procs"]
        conn_rate = wl["rate"] / requests_per_conn(wl["kind"])
        gens = []
        seeds = pt.seed_sequence().generate_state(procs)
        _sleep_until(t_lg)
        t_lg_real = time.monotonic()
        for i in range(procs):
            host = i % nhosts
            out = pdir / f"gen-{i}.json"
            if rs["httperf"]:
                per = conn_rate / procs
                n = max(1, int(round(per * (warm + dur))))
                if wl["kind"] == "specweb99":
                    log = write_wsesslog(pdir / f"gen-{i}.wsesslog", n, int(seeds[i]), wl["zipf_alpha"])
                    a = httperf_wsesslog_argv(server_ip=tb.server_ips[host], port=PORT, rate=per, sessions=n,
                                              timeout=tmo, log=log)
                else:
                    a = httperf_argv(server_ip=tb.server_ips[host], port=PORT, rate=per, num_conns=n, timeout=tmo)
                gens.append((tb.spawn(tb.client_ns[host], a, cpu=rs["cpu_clients"], nice=NICE, stdout=open(out, "w"),
                                      stderr=subprocess.STDOUT), out))
            else:
                a = loadgen_argv(server_ip=tb.server_ips[host], port=PORT, binds=tb.client_addrs(host, 4),
                                 conn_rate=conn_rate / procs, duration=dur, warmup=warm, timeout=tmo,
                                 arrivals=wl["arrivals"], seed=int(seeds[i]), workload=wl["kind"], out=out,
                                 timeout_from=cl["timeout_from"], think_ms=cl["think_ms"],
                                 request_delay_ms=cl["request_delay_ms"], zipf_alpha=wl["zipf_alpha"])
                gens.append((tb.spawn(tb.client_ns[host], a, cpu=rs["cpu_clients"], nice=NICE, stdout=subprocess.DEVNULL,
                                      stderr=open(pdir / f"gen-{i}.log", "w")), out))
        if hook:
            hook("load-started")
        _sleep_until(t_lg_real + warm)
        if kind != "nginx":
            server.send_signal(signal.SIGUSR1)
        c0 = kernel.read_counters(lambda n: tb.netfile(tb.server_ns, n))
        opens0, t_opens0 = (_active_opens(tb, tb.client_ns[:nhosts]) if rs["httperf"] else 0), time.monotonic()
        late_start = time.monotonic() - (t_lg_real + warm)
        cpu = kernel.CpuMeter(pids, rs["cpu_server"])
        sirq0 = tb.softirq_snapshot()
        _sleep_until(t_lg_real + warm + dur)
        if kind != "nginx":
            server.send_signal(signal.SIGUSR2)
        c1 = kernel.read_counters(lambda n: tb.netfile(tb.server_ns, n))
        opens1, t_opens1 = (_active_opens(tb, tb.client_ns[:nhosts]) if rs["httperf"] else 0), time.monotonic()
        late_end = time.monotonic() - (t_lg_real + warm + dur)
        shares = cpu.shares()
        sirq1 = tb.softirq_snapshot()
        t_after = time.monotonic()
        deadline = t_after + 2 * tmo + 15      # connect, then (timeout_from connect) the reply
        for p, _ in gens:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                tb.stop(p, signal.SIGKILL)
        t_gens = time.monotonic()
        bpf = (tracer.stop() or None) if tracer.available else None
        if bpf is not None and t_lg_real - t_lg > WINDOW_SLACK * dur:
            # bpftrace's window was fixed before it attached (up to 30 s): counted that much
            # earlier than the counters' and the server's, its split mixed two windows unsaid
            bpf = None
            tracer.note = (f"the load started {t_lg_real - t_lg:.1f} s after bpftrace's window was set (it was "
                           f"slow to attach): its window is not the counters', counter-only split for this point")
        extra["timing_s"] = {"generators_drain": t_gens - t_after, "bpftrace_stop": time.monotonic() - t_gens,
                             "window_start_late": late_start, "window_end_late": late_end}
        fds_open = len(os.listdir(f"/proc/{server.pid}/fd")) if server.poll() is None else -1
        snap = None
        if kind != "nginx":
            sp = Path(str(stats_path) + ".snap")
            for _ in range(50):
                if sp.exists():
                    break
                time.sleep(0.02)
            snap = json.loads(sp.read_text()) if sp.exists() else None
        # exited before the stop: it died during the point (its replies/s was of a dead server)
        died = server.poll()
        stop_status = tb.stop(server, signal.SIGTERM, timeout=15 if kind == "knot" else 5)
    finally:
        if server.poll() is None:
            tb.stop(server, signal.SIGKILL)
        if tracer is not None:
            tracer.abort()
        srv_log.close()
    delta = kernel.counter_delta(c0, c1)
    split = kernel.split_drops(delta, bpf)
    if bpf is None and tracer.note:
        split["note"] = f"{split['note']} ({tracer.note})"
    for i, (p, o) in enumerate(gens):
        if p.returncode != 0 and not (rs["httperf"] and Path(o).exists()):
            raise RuntimeError(f"load generator {i} exited with status {p.returncode}"
                               + _log_tail(pdir / f"gen-{i}.log", Path(o)))
    if rs["httperf"]:
        gen_res = [parse_httperf(Path(o).read_text()) for _, o in gens]
        g = _from_httperf(gen_res, conn_rate, warm + dur)
        # httperf's own "Connection rate" divides by its test duration, which includes waiting
        # out the last timeout: 1,077 conn/s for 3,750 launches at 1,500/s.  The clients'
        # kernels count every connect() (Tcp.ActiveOpens): the launches in the window itself.
        # over the time between the two reads: the runner marks either end a little late
        g["launches_in_window_kernel"] = opens1 - opens0
        g["achieved_rate_window"] = (opens1 - opens0) / max(t_opens1 - t_opens0, 1e-9)
    else:
        gen_res = [json.loads(Path(o).read_text()) for _, o in gens]
        g = merge(gen_res)
    rec = _record(pt, v, g, snap, delta, split, shares, dur, kind)
    # loadgen counts its launches in the window; httperf's count includes the warm-up's, so
    # its in-window launches come from its schedule (deterministic, from the warm-up's start)
    in_window = (procs * httperf_launches_in_window(conn_rate / procs, warm, dur) if rs["httperf"]
                 else g["attempts"])
    why = (launch_error(in_window, conn_rate, dur)
           or (httperf_error(gen_res, [p.returncode for p, _ in gens], conn_rate, g["achieved_rate_window"])
               if rs["httperf"] else None)
           or (status_error(g["status"]) if "status" in g else None)
           or generator_error(g)
           or (None if rs["httperf"] else offered_error(g, conn_rate, dur, wl["arrivals"]))
           or server_error(kind, died, stop_status, snap, pdir / "server.log", pdir / "nginx" / "error.log")
           or window_error(dur, late_start, late_end, snap.get("wall_s") if snap else None, rs["httperf"]))
    if why:
        rec.status, rec.error = "failed", why
    sirq = netrx_check(tb, sirq0, sirq1)
    if 0 <= sirq["cpu_server"] < len(sirq["net_rx_softirqs_per_cpu"]):
        # the simulator's softirq_runs_per_s: NET_RX runs on the server's CPU in the window
        rec.softirq_runs_per_s = sirq["net_rx_softirqs_per_cpu"][sirq["cpu_server"]] / dur
    prov = provenance()
    rec.git_rev = prov["git_rev"]
    rec.host = f"{prov['host']}; Linux {prov['kernel']}; {prov['cpu_model']} x{prov['ncpu']}"
    rec.started_at = started
    rec.wall_s = time.monotonic() - t_wall0
    extra.update({"generator": g, "generator_procs": gen_res, "server_stats": snap, "counters_delta":
                  {k: x for k, x in delta.items() if x}, "drops": split, "bpftrace": bpf,
                  "bpftrace_note": tracer.note, "cpu": shares,
                  "replies_counted_by": ("the server, in the window" if rs["httperf"] and snap and snap.get("wall_s")
                                         else "httperf, over its whole run" if rs["httperf"]
                                         else "the clients, in the window"),
                  "softirq": dict(sirq,
                                  server_ns_ip_in_receives=delta.get("Ip.InReceives", 0)),
                  "server_fds_after_load": fds_open, "server_exit": {"died_during_point": died is not None,
                                                                     "status": died if died is not None else stop_status},
                  "provenance": prov, "httperf": rs["httperf"]})
    return rec, extra


def _log_tail(*paths: Path, lines: int = 5) -> str:
    """The last lines of the first non-empty log, for an error message: the work folder
    holding the logs is removed when the run ends."""
    for path in paths:
        try:
            text = path.read_text(errors="replace").strip()
        except OSError:
            continue
        if text:
            return f"; {path.name} says: " + " | ".join(text.splitlines()[-lines:])
    return ""


def _from_httperf(res: list[dict], conn_rate: float, total_s: float) -> dict:
    replies = sum(r["replies"] for r in res)
    n = sum(r["connections"] for r in res)
    w = [r["response_ms"] for r in res if not math.isnan(r["response_ms"])]
    c = [r["connect_ms"] for r in res if not math.isnan(r["connect_ms"])]
    return {"attempts": n, "replies_ok": sum(r["status_2xx"] for r in res), "replies": replies,
            "replies_in_window": sum(r["status_2xx"] for r in res), "window_s": total_s,
            # httperf's counts cover the warm-up too: shares, not window counts
            "status": {k: sum(r.get(f"status_{k}", 0) for r in res) for k in ("2xx", "3xx", "4xx", "5xx")},
            "local_errors": sum(r.get("fd_unavail", 0) + r.get("addrunavail", 0) + r.get("ftab_full", 0)
                                for r in res),
            "achieved_rate": sum(r["conn_rate"] for r in res if not math.isnan(r["conn_rate"])),
            "target_rate": conn_rate, "timeouts": sum(r["client_timo"] for r in res),
            "resets": sum(r["connreset"] for r in res), "refused": sum(r["connrefused"] for r in res),
            "resp_ms": {"mean": sum(w) / len(w) if w else math.nan, "p50": math.nan, "p99": math.nan},
            "connect_ms": {"mean": sum(c) / len(c) if c else math.nan}, "generator": "httperf"}


def _record(pt: Scenario, v: dict, g: dict, snap: dict | None, delta: dict, split: dict, shares: dict,
            dur: float, kind: str) -> RunRecord:
    sv, wl = v["server"], v["workload"]
    r = RunRecord(source="real", scenario=v["scenario"]["name"], point=pt.point_label(), server=kind,
                  mux="" if kind == "knot" else sv["mux"], accept_limit=str(sv["accept_limit"]),
                  policy=sv["policy"], workload=wl["kind"], target_rate=float(wl["rate"]), duration_s=float(dur),
                  seed=float(v["scenario"]["seed"]), kernel_profile=v["kernel"]["profile"], cost_profile="",
                  config=pt.to_json())
    win = g.get("window_s") or dur
    # 2xx replies received in the window, whichever launch they answer (as the simulator and
    # httperf count); older points have every reply (replies_recv_in_window), or only those
    # to launches in the window too (replies_in_window)
    r.replies_per_s = g.get("replies_ok_recv_in_window", g.get("replies_recv_in_window", g["replies_in_window"])) / win
    if g.get("generator") == "httperf" and snap and snap.get("wall_s"):
        # httperf counts over its whole run, the warm-up from idle and the drain included: past the
        # peak that read 4,079 replies/s where the server sent 3,648 in the window (+12 %).  The
        # server's own count of 2xx replies sent in the window stands in: with our generator it is
        # within 0.2 % of the replies the clients received there (3,877 vs 3,883 at 4,000 req/s;
        # the difference is replies to clients that had gone).  nginx keeps no count: whole run.
        r.replies_per_s = snap["status_2xx"] / snap["wall_s"]
    # launches per second in the middle 80 % of the window (immune to start/end lag);
    # achieved_rate (first to last launch) is in the point JSON too
    # (httperf: the clients' kernels' count of connect()s in the window, see run_point)
    r.conn_attempts_per_s = _nan(g.get("achieved_rate_mid") or g.get("achieved_rate_window") or g.get("achieved_rate"))
    r.resp_ms_mean = _nan(g["resp_ms"].get("mean"))
    r.resp_ms_p50 = _nan(g["resp_ms"].get("p50"))
    r.resp_ms_p99 = _nan(g["resp_ms"].get("p99"))
    r.connect_ms_mean = _nan(g["connect_ms"].get("mean"))
    r.client_timeouts = g["timeouts"] / win
    r.client_resets = g["resets"] / win
    ld = delta.get("TcpExt.ListenDrops", 0)
    r.qdrops_per_s = ld / dur
    r.drops_synq_full = float(split["SynQFull"])
    r.drops_acceptq_full = float(split["AcceptQFull"])
    r.drops_drop_request = float(split["DropRequest"])
    r.drops_listen_overflow = float(split["ListenOverflow"])
    r.cpu_share_user = shares["server_user"]
    r.cpu_share_kernel_net = shares["cpu_softirq"]
    r.cpu_share_idle = shares["cpu_idle"]
    if snap:
        w = snap["wall_s"] or dur
        r.accept_rate = snap["accepts"] / w
        r.n_accept_phases = float(snap["accept_phases"])
        r.c_avg = snap["c_avg"] if snap["accept_phases"] else math.nan
        r.accepts_eagain = float(snap["accepts_eagain"])
        r.work_items_per_phase = snap["work_items_per_phase"] if snap["work_phases"] else math.nan
        r.open_conns_mean = snap["open_conns"]["mean"]
        sc = snap["syscalls"]
        if kind == "userver":
            r.select_calls_per_s = snap["getevents_calls"] / w
            r.fds_per_select = snap["fds_per_getevents"]
            r.fd_rate = snap["fds_returned"] / w
        share = {name: sc[name]["s"] / w for name in sc}
        mux = sv["mux"]
        if kind == "userver":
            r.cpu_share_select = share["select"] if mux == "select" else math.nan
            r.cpu_share_poll = share["poll"] if mux == "poll" else math.nan
            r.cpu_share_epoll = share["epoll_wait"] + share["epoll_ctl"] if mux == "epoll" else math.nan
        r.cpu_share_accept = share["accept"]
        r.cpu_share_read = share["read"]
        r.cpu_share_write = share["write"]
        r.cpu_share_writev = share["writev"]
        r.cpu_share_sendfile = share["sendfile"]
        r.cpu_share_close = share["close"]
        r.cpu_share_setsockopt = share["setsockopt"]
    return r


# --------------------------------------------------------------------------- sweep
def run_scenario(path: str, overrides: list[str] = (), out: str | None = None, *, log=print,
                 use_bpf: bool = True, hook: Callable[[str], None] | None = None) -> list[RunRecord]:
    sc = load_scenario(path, overrides)
    check_real(sc)
    if out is not None and not str(out).strip():
        # it read as no --out, and the run wrote into the committed realsys/results/<name>/
        raise ScenarioError("--out", "an empty path; give a directory, or leave --out out for "
                                     "realsys/results/<scenario name>")
    if not out:
        check_out_name(sc)
    out_dir = Path(out) if out else default_results_dir(sc.name)
    try:                    # bad input (exit 2), refused before anything is made
        _out_dir(str(out_dir))
        if (out_dir / "points").exists() and not (out_dir / "points").is_dir():
            # it was refused as "OUT (or a directory above it) is not a directory", and only after
            # the checks that need root and the test bed's lock
            raise ResultsFileError(f"{str(out_dir / 'points')!r} exists and is not a directory; a run keeps each "
                                   "point's details in that folder: move it away")
        rows = read_rows(out_dir / "results.csv") if out_dir.is_dir() else []
        check_known_columns(out_dir / "results.csv", rows)      # before a point is measured, not after
        other = sorted({r.get("source") or "" for r in rows} - {"real"})
        if other:
            # a sweep's rows carry the same point and config: they counted as measured, and the
            # run measured nothing and exited 0
            raise ResultsFileError(f"{out_dir / 'results.csv'} holds {', '.join(map(repr, other))} rows, not "
                                   "measured ones: their points would be skipped as done; use another --out")
        done = done_keys(rows)
    except ResultsFileError as e:
        raise ScenarioError("--out", str(e)) from None
    # then what this machine lacks (not root, a program, another run up): before the output
    # folder is made and the C programs built, as they were
    check_can_build()
    made_out = not out_dir.exists()
    try:
        # points/ is made with the first point kept: an interrupted run that kept none
        # left an empty points/ folder (and an empty OUT it made)
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise ScenarioError("--out", f"{str(out_dir)!r} (or a directory above it) exists and is not a directory") from None
    except OSError as e:
        raise ScenarioError("--out", f"cannot create {str(out_dir)!r}: {e.strerror or e}") from None
    csv_path = out_dir / "results.csv"
    try:
        ensure_built(log)
    except BaseException:       # a Ctrl-C or a failed build: the OUT it made stays no empty folder
        if made_out:
            _remove_if_empty(out_dir)
        raise
    pts = sc.points()
    todo = [p for p in pts if (p.point_label(), p.to_json()) not in done]
    log(f"realsys: {sc.name}: {len(pts)} points, {len(pts) - len(todo)} already in {csv_path}")
    if todo and len(todo) < len(pts):
        _say_mixed_drop_split(out_dir, use_bpf, log)
    recs: list[RunRecord] = []
    if todo:
        first = todo[0].values["realsys"]
        work = Path(tempfile.mkdtemp(prefix=WORK_PREFIX))
        os.chmod(work, 0o755)
        # Who owns it, for clean_work() after a run that could not remove it (SIGKILL).
        (work / OWNER_FILE).write_text(json.dumps(owner_record(os.getpid())))
        # Keep this process (and bpftrace, which inherits the mask) off the server's CPU.
        old_aff = os.sched_getaffinity(0)
        os.sched_setaffinity(0, {first["cpu_clients"]})
        try:
            said: set[str] = set()
            with TestBed(cpu_server=first["cpu_server"], cpu_clients=first["cpu_clients"], log=log) as tb, \
                    runner_on_time() as sched:
                if sched.startswith("unchanged"):
                    log(f"realsys: the runner's scheduling is {sched}: the generators at nice {NICE} may "
                        "mark its measured windows late (window_error)")
                # a killed run's work folder (5 MB) went only with `realsys clean`; its
                # namespaces already went with the next run's test bed (under the same lock)
                clean_work(log)
                for i, pt in enumerate(todo):
                    t0 = time.monotonic()
                    try:
                        rec, extra = run_point(tb, pt, work, use_bpf=use_bpf, log=log, hook=hook)
                    except (ScenarioError, ServerConfigError) as e:
                        raise ScenarioError(getattr(e, "key", "?"), getattr(e, "reason", str(e))) from None
                    # the point's details first, then its row: a row on disk always
                    # has its complete point file (both written atomically)
                    # both or neither: a Ctrl-C between them kept the point file and not its
                    # row, and the next run measured the point again
                    with stop_signals_held("realsys: keeping the point", log):
                        (out_dir / "points").mkdir(exist_ok=True)
                        atomic_write(out_dir / "points" / f"{pt.content_hash(simulator=False)}.json",
                                     json.dumps(extra, indent=1, default=str, allow_nan=True))
                        append_record(csv_path, rec)
                    recs.append(rec)
                    note = extra.get("bpftrace_note")
                    if note and note not in said and not (note == "bpftrace disabled" and not use_bpf):
                        said.add(note)      # once per run: the row's drop columns lose a category
                        log(f"realsys: {note}")
                    lagged = launch_lag_note(extra.get("generator") or {})
                    log(f"[{i + 1}/{len(todo)}] {pt.point_label() or '(single point)'}: "
                        f"{rec.replies_per_s:.0f} replies/s (offered {rec.conn_attempts_per_s:.0f} conn/s), "
                        f"drops/s {rec.qdrops_per_s:.0f}, p50 {rec.resp_ms_p50:.2f} ms, "
                        f"{time.monotonic() - t0:.1f}s"
                        + (f"; FAILED: {rec.error} (row kept with status failed; a rerun retries it)"
                           if rec.status != "ok" else "")
                        + (f"; note: {lagged}" if lagged else ""))
                    if i + 1 < len(todo):
                        time.sleep(pt.values["realsys"]["settle_s"])
        finally:
            os.sched_setaffinity(0, old_aff)
            # a second Ctrl-C landing in the plot had ended the run without one
            with stop_signals_held("realsys: removing the work folder and plotting", log):
                shutil.rmtree(work, ignore_errors=True)
                if made_out and not recs:
                    _remove_if_empty(out_dir)
                if recs:            # an interrupted run's plot shows what it finished, too
                    try:
                        plot(csv_path, out_dir / "throughput.png", log=log)
                    except Exception as e:      # never hide the run's own outcome behind a plot's
                        log(f"realsys: no plot: {e}")
    elif csv_path.exists():
        try:        # nothing measured: a plot that fails is no failed run (exit 1) either
            plot(csv_path, out_dir / "throughput.png", log=log)
        except Exception as e:
            log(f"realsys: no plot: {e}")
    return recs


def _remove_if_empty(d: Path) -> None:
    """Remove the folder ``d`` a run made if it is still empty (rmdir refuses one that is not:
    nothing of this run, or anyone's, is lost)."""
    try:
        d.rmdir()
    except OSError:
        pass


WORK_PREFIX = "realsys-"
OWNER_FILE = "owner.json"


def clean_work(log=None) -> list[str]:
    """Remove the temporary work folders (``$TMPDIR/realsys-*``, about 5 MB each: a copy of
    the document root) of runs whose owner is dead.  A folder without an owner record is
    one this runner did not make, or an older one: it is left alone."""
    removed = []
    for d in Path(tempfile.gettempdir()).glob(WORK_PREFIX + "*"):
        try:
            m = json.loads((d / OWNER_FILE).read_text())
            pid, start = int(m["owner_pid"]), m.get("owner_starttime")
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if owner_alive(pid, start):
            continue
        shutil.rmtree(d, ignore_errors=True)
        if d.exists():          # not ours to delete (another user's, read-only): say so, claim nothing
            if log:
                log(f"realsys: could not remove work folder {d} (owner pid {pid} is gone)")
            continue
        removed.append(str(d))
        if log:
            log(f"realsys: removed work folder {d} (owner pid {pid} is gone)")
    return removed


def plot(csv_path: Path, png: Path, log=print) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        from simaccept.plots import mathtext_literal
    except ImportError:
        log("realsys: matplotlib not installed: no plot")
        return False
    rows = [r for r in read_rows(csv_path) if r.get("status") == "ok" and r.get("replies_per_s")]
    if not rows:
        return False
    series: dict[str, list[tuple[float, float]]] = {}
    for r in rows:
        lab = f"{r['server']} {r['mux']} accept-{r['accept_limit']}".replace("  ", " ")
        series.setdefault(lab, []).append((float(r["target_rate"]), float(r["replies_per_s"])))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for lab, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=mathtext_literal(lab))
    ax.set_xlabel("target request rate (requests/s)")
    ax.set_ylabel("replies/s")
    ax.set_title(mathtext_literal(f"{rows[0]['scenario']} (measured)"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    atomic_write(png, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    plt.close(fig)
    log(f"realsys: plot {png}")
    return True

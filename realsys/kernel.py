"""Kernel accounting for a realsys run: TcpExt counters, the server's CPU split, and
drops split into the thesis's four categories (Pariag 2004, section 5.1.1).

Where each category comes from on this kernel (Linux 6.x; checked against
net/ipv4/tcp_input.c ``tcp_conn_request``, tcp_ipv4.c ``tcp_v4_syn_recv_sock`` and
tcp_minisocks.c ``tcp_check_req``; the skb drop reason TCP_LISTEN_OVERFLOW was added
to ``tcp_check_req`` in 2025):

=================  =============================================  ==========================
thesis category    what happens on Linux 6                        source here
=================  =============================================  ==========================
SynQFull           SYN arrives, request queue (limit = listen     TcpExt.TCPReqQFullDrop
                   backlog since 4.4) full, no syncookies         (+ TCPReqQFullDoCookies
                                                                  reported apart: with
                                                                  cookies a SYN-ACK is still
                                                                  sent, not a drop)
AcceptQFull        SYN arrives, accept queue full (> backlog)     TcpExt.ListenOverflows
                   -> dropped, counted in ListenOverflows         minus the bpftrace count
                   (unconditional since 4.10)                     below (exact only together)
DropRequest        SYN arrives, syncookies off, request queue     residual: ListenDrops -
                   > 3/4 of tcp_max_syn_backlog, peer unproven    ListenOverflows -
                   (no counter of its own)                        TCPReqQFullDrop
ListenOverflow     final ACK (or first data segment) arrives,     bpftrace: tracepoint
                   accept queue full: the segment is dropped,     skb:kfree_skb with reason
                   the request stays, the SYN-ACK is resent       TCP_LISTEN_OVERFLOW
=================  =============================================  ==========================

Where the split is inexact:

* ListenOverflows counts both SYN-time (AcceptQFull) and ACK-time (ListenOverflow)
  events.  Without bpftrace only their sum is known: the record then carries the sum in
  ``drops_acceptq_full`` and NaN in ``drops_listen_overflow``, and the note says so.
* The SYN-time drops free the SYN with ``consume_skb`` (no drop reason), so no
  tracepoint sees them; they come from counters only.
* DropRequest is a residual: ListenDrops also counts other rare failures (request-sock
  allocation, route or memory failures in ``tcp_v4_syn_recv_sock``), which land here.
  With the listen backlog far below tcp_max_syn_backlog the request queue fills (a
  SynQFull) long before the 3/4 rule can apply, so on Linux 6 DropRequest is normally 0
  where 2.4's 1024-entry SYN queue produced it.
* The bpftrace probe is global (tracepoints see every namespace); only listeners emit
  TCP_LISTEN_OVERFLOW and the only listener under load is our server, so the count is
  the server's.  Other drop reasons are reported for information, unfiltered.
"""
from __future__ import annotations

import json
import math
import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path

TCPEXT_KEYS = ("ListenOverflows", "ListenDrops", "TCPReqQFullDrop", "TCPReqQFullDoCookies",
               "SyncookiesSent", "SyncookiesRecv", "SyncookiesFailed", "TCPTimeWaitOverflow",
               "TCPAbortOnData", "TCPAbortOnClose", "TCPBacklogDrop", "TCPSynRetrans",
               "EmbryonicRsts", "TW", "TWRecycled")
TCP_KEYS = ("ActiveOpens", "PassiveOpens", "AttemptFails", "EstabResets", "InSegs", "OutSegs",
            "RetransSegs", "OutRsts")
CLK_TCK = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- counters
def parse_netstat(text: str) -> dict[str, int]:
    """Parse /proc/net/netstat or /proc/net/snmp text into {"TcpExt.ListenDrops": n, ...}."""
    out: dict[str, int] = {}
    lines = text.splitlines()
    for head, vals in zip(lines[0::2], lines[1::2]):
        hk, *names = head.split()
        vk, *nums = vals.split()
        if hk != vk:
            continue
        for n, v in zip(names, nums):
            try:
                out[f"{hk.rstrip(':')}.{n}"] = int(v)
            except ValueError:
                pass
    return out


def read_counters(netfile) -> dict[str, int]:
    """netfile(name) -> text of /proc/net/<name> in the namespace (TestBed.netfile bound to a ns)."""
    c = parse_netstat(netfile("netstat"))
    c.update(parse_netstat(netfile("snmp")))
    return c


def counter_delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before.get(k, 0) for k in after}


# --------------------------------------------------------------------------- CPU
def proc_cpu(pid: int) -> dict[str, float]:
    """User and system seconds of a process and all its threads (and, for nginx, its
    children when listed by the caller), from /proc/<pid>/stat."""
    f = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return {"utime_s": int(f[11]) / CLK_TCK, "stime_s": int(f[12]) / CLK_TCK}


def children(pid: int) -> list[int]:
    out = []
    try:
        for t in Path(f"/proc/{pid}/task").iterdir():
            out += [int(x) for x in (t / "children").read_text().split()]
    except OSError:
        pass
    return out


def cpu_stat(cpu: int) -> dict[str, float]:
    """Seconds per state of one CPU from /proc/stat (user nice system idle iowait irq softirq steal)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{cpu} "):
            v = [int(x) / CLK_TCK for x in line.split()[1:9]]
            return dict(zip(("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal"), v))
    raise ValueError(f"no cpu{cpu} in /proc/stat")


class CpuMeter:
    """Snapshot server-process and server-CPU times; ``shares()`` gives fractions of wall time."""

    def __init__(self, pids: list[int], cpu: int):
        self.pids, self.cpu = pids, cpu
        self.t0 = time.monotonic()
        self.p0 = self._ptimes()
        self.c0 = cpu_stat(cpu)

    def _ptimes(self) -> dict[str, float]:
        tot = {"utime_s": 0.0, "stime_s": 0.0}
        for pid in self.pids:
            try:
                c = proc_cpu(pid)
            except OSError:
                continue
            tot["utime_s"] += c["utime_s"]
            tot["stime_s"] += c["stime_s"]
        return tot

    def shares(self) -> dict[str, float]:
        wall = time.monotonic() - self.t0
        p1, c1 = self._ptimes(), cpu_stat(self.cpu)
        d = {k: c1[k] - self.c0[k] for k in c1}
        return {
            "wall_s": wall,
            "server_user": (p1["utime_s"] - self.p0["utime_s"]) / wall,
            "server_system": (p1["stime_s"] - self.p0["stime_s"]) / wall,
            "cpu_softirq": d["softirq"] / wall,
            "cpu_irq": d["irq"] / wall,
            "cpu_idle": (d["idle"] + d["iowait"]) / wall,
            "cpu_user": (d["user"] + d["nice"]) / wall,
            "cpu_system": d["system"] / wall,
        }


# --------------------------------------------------------------------------- bpftrace
# BEGIN's printf reaches us through the perf buffer, i.e. only once bpftrace has attached every
# probe and entered its event loop.  "Attaching N probes..." comes earlier, and bpftrace 0.17
# loses a SIGINT that arrives while it is still attaching (it then runs until killed), so the
# ready line, not the banner, is what start() waits for.  It also loses one that lands outside
# its epoll_wait (the flag is then read only when another event arrives), e.g. while it writes
# the ready line itself, so interrupt() re-sends it.  @running makes a clean exit print
# at least one map even when nothing was dropped (no map printed = counts unknown).
READY = "simaccept-bpf-ready"
BPF_PROGRAM = r"""
BEGIN { @running = 1; printf("{READY}\n"); }
tracepoint:skb:kfree_skb {FILTER} { @drop[args->reason] = count(); }
tracepoint:tcp:tcp_retransmit_synack {FILTER} { @synack_retransmits = count(); }
tracepoint:tcp:tcp_send_reset {FILTER} { @resets_sent = count(); }
"""


def bpf_program(window: tuple[int, int] | None = None) -> str:
    """The program; with window=(t0, t1) in CLOCK_MONOTONIC ns (bpftrace's nsecs) it counts
    only events inside the measured window, so its counts line up with the counter deltas."""
    f = f"/nsecs >= {int(window[0])} && nsecs < {int(window[1])}/" if window else ""
    return BPF_PROGRAM.replace("{FILTER}", f).replace("{READY}", READY)
TRACEFS = Path("/sys/kernel/tracing")


def drop_reason_names() -> dict[int, str]:
    """Number -> name of skb drop reasons, from the kfree_skb tracepoint's print format."""
    try:
        fmt = (TRACEFS / "events/skb/kfree_skb/format").read_text()
    except OSError:
        return {}
    return {int(n): s for n, s in re.findall(r'\{\s*(\d+),\s*"([A-Z0-9_]+)"\s*\}', fmt)}


def ensure_tracefs() -> bool:
    if (TRACEFS / "events").is_dir():
        return True
    subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True)
    return (TRACEFS / "events").is_dir()


def wait_ready(stream, timeout: float) -> bool:
    """True once READY (the BEGIN probe's printf) is read from bpftrace's stdout, i.e. every
    probe is attached; False at EOF or after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    fd, seen = stream.fileno(), b""
    while time.monotonic() < deadline:
        # Raw reads under select(): a bpftrace stuck before its event loop prints nothing, and
        # a buffered readline() could both block past the deadline and hide a line it buffered.
        r, _, _ = select.select([fd], [], [], min(1.0, max(0.0, deadline - time.monotonic())))
        if not r:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return False
        seen = seen[-64:] + chunk
        if READY.encode() in seen:
            return True
    return False


def interrupt(p: subprocess.Popen, grace: float = 30.0) -> tuple[str, bool]:
    """Stops bpftrace so that it prints its maps: SIGINT, re-sent every 2 s (one sent while
    bpftrace is still attaching, or between its polls, is lost), SIGTERM after ``grace`` s, SIGKILL 5 s later.
    Returns (stdout, clean) where clean means it exited 0 on SIGINT/SIGTERM."""
    for sig in [signal.SIGINT] * max(1, int(grace // 2)) + [signal.SIGTERM]:
        if p.poll() is None:
            p.send_signal(sig)
        try:
            o, _ = p.communicate(timeout=2.0 if sig == signal.SIGINT else 5.0)
            return o or "", p.returncode == 0
        except subprocess.TimeoutExpired:
            pass     # communicate() keeps what it has read so far for the next call
    p.kill()
    o, _ = p.communicate()
    return o or "", False


def bpf_maps(out: str) -> dict:
    """The maps ``bpftrace -f json`` printed in ``out``, by name ({} if none); other lines are skipped."""
    maps: dict = {}
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict) and msg.get("type") == "map":
            maps.update(msg.get("data", {}))
    return maps


def _die_with_parent() -> None:
    """In a forked child before exec: ask for SIGKILL when the parent (thread) exits."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


class DropTracer:
    """Runs the bpftrace program for the measured window.  ``available`` is False (with
    ``note``) when bpftrace or tracefs is missing; the run then goes on counter-only."""

    def __init__(self, enabled: bool = True):
        self.proc: subprocess.Popen | None = None
        self.note = ""
        self.available = False
        self.result: dict = {}
        self.window: tuple[int, int] | None = None
        if not enabled:
            self.note = "bpftrace disabled"
            return
        if shutil.which("bpftrace") is None:
            self.note = "bpftrace not installed: counter-only split (AcceptQFull+ListenOverflow summed)"
            return
        if not ensure_tracefs():
            self.note = "tracefs not mountable: counter-only split"
            return
        self.available = True

    def program_window(self, t0_ns: int, t1_ns: int) -> None:
        self.window = (t0_ns, t1_ns)

    def start(self, timeout: float = 30.0) -> None:
        if not self.available:
            return
        # The probes are global and bpftrace has no end of its own: if the run is SIGKILLed, an
        # orphaned bpftrace stayed attached for good (`realsys clean` removes namespaces only).
        # The kernel now sends it SIGKILL when the thread that started it dies.
        # A session of its own: a SIGINT to the runner's process group (a Ctrl-C meant for something
        # else, a group signal from a batch shell that the runner itself ignores) ended it mid-window
        # and its partial maps were kept as the point's counts; the runner stops it (interrupt).
        self.proc = subprocess.Popen(["bpftrace", "-f", "json", "-e", bpf_program(self.window)], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent,
                                     start_new_session=True)
        if wait_ready(self.proc.stdout, timeout):
            return
        err = ""
        if self.proc.poll() is not None:
            err = self.proc.stderr.read().strip()[-300:]
        self.stop()
        self.available = False
        self.note = f"bpftrace failed to attach ({err or 'timeout'}): counter-only split"

    def stop(self) -> dict:
        if self.proc is None:
            return self.result
        p = self.proc
        early = p.poll()                    # it ended before it was asked to: its counts stop short
        try:
            out, clean = interrupt(p)
        except BaseException:
            # a Ctrl-C among interrupt()'s 35 s of re-sent SIGINTs: self.proc cleared first, the
            # runner's abort() found nothing and bpftrace stayed on the system-wide tracepoints
            p.kill()
            p.communicate()
            raise
        finally:
            self.proc = None
        if early is not None:
            self.note = f"bpftrace ended (status {early}) before the point stopped it: counter-only split for this point"
            self.result = {}
            return {}
        if not clean or '"type": "map"' not in out.replace('"type":"map"', '"type": "map"'):
            # No maps printed: the counts are unknown, not zero.
            self.note = "bpftrace did not exit cleanly: counter-only split for this point"
            self.result = {}
            return {}
        names = drop_reason_names()
        if "TCP_LISTEN_OVERFLOW" not in names.values():
            # Linux before 6.15 frees an ACK-time overflow as NOT_SPECIFIED: a measured 0 and
            # every ListenOverflows counted AcceptQFull, labelled as split by bpftrace
            self.note = ("this kernel's kfree_skb has no TCP_LISTEN_OVERFLOW drop reason (Linux before 6.15): "
                         "counter-only split")
            self.result = {}
            return {}
        res: dict = {"drop_reasons": {}, "synack_retransmits": 0, "resets_sent": 0}
        for mname, val in bpf_maps(out).items():
            if mname == "@drop" and isinstance(val, dict):
                for k, v in val.items():
                    # a number (bpftrace 0.17) or, from a bpftrace that prints enum keys by name,
                    # the name: int() of that was a ValueError that ended the sweep
                    name = names.get(int(k), k) if str(k).strip().isdigit() else str(k).removeprefix(
                        "SKB_DROP_REASON_")
                    res["drop_reasons"][name] = res["drop_reasons"].get(name, 0) + v
            elif mname == "@synack_retransmits":
                res["synack_retransmits"] = val
            elif mname == "@resets_sent":
                res["resets_sent"] = val
        self.result = res
        return res

    def abort(self) -> None:
        """Kill it if it still runs (the point ended by an exception before stop()): otherwise it
        stays attached to the system-wide tracepoints until the runner's process ends."""
        p, self.proc = self.proc, None
        if p is not None:
            p.kill()
            p.communicate()


def split_drops(delta: dict[str, int], bpf: dict | None) -> dict:
    """The four thesis categories from counter deltas (+ the bpftrace result if any)."""
    lo = delta.get("TcpExt.ListenOverflows", 0)
    ld = delta.get("TcpExt.ListenDrops", 0)
    sq = delta.get("TcpExt.TCPReqQFullDrop", 0)
    out = {
        "SynQFull": sq,
        "DropRequest": max(0, ld - lo - sq),
        "cookies_sent": delta.get("TcpExt.TCPReqQFullDoCookies", 0),
        "ListenDrops": ld,
        "ListenOverflows": lo,
        "source": "counters+bpftrace" if bpf else "counters only",
    }
    if bpf is not None and "drop_reasons" in bpf:
        ack = int(bpf["drop_reasons"].get("TCP_LISTEN_OVERFLOW", 0))
        out["ListenOverflow"] = ack
        out["AcceptQFull"] = max(0, lo - ack)
        out["synack_retransmits"] = bpf.get("synack_retransmits", 0)
        out["note"] = "AcceptQFull = ListenOverflows - bpftrace TCP_LISTEN_OVERFLOW; DropRequest is a residual"
    else:
        out["ListenOverflow"] = math.nan
        out["AcceptQFull"] = lo
        out["note"] = ("no bpftrace: AcceptQFull holds ListenOverflows, i.e. SYN-time and ACK-time "
                       "overflows summed; ListenOverflow unknown")
    out["total"] = out["SynQFull"] + out["DropRequest"] + lo
    return out

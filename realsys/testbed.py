"""The test bed: one server host with two NICs and two client hosts, as network namespaces.

::

    client ns  sa-<pid>-c1  (198.18.1.2, .10-.249)  --veth--  sa<pid>s1 198.18.1.1/24 ┐
                                                                                     ├ server ns sa-<pid>-srv
    client ns  sa-<pid>-c2  (198.18.2.2, .10-.249)  --veth--  sa<pid>s2 198.18.2.1/24 ┘

All addresses are in 198.18.0.0/15 (RFC 2544 benchmarking range) and exist only inside
the namespaces this object creates: no veth end, route or address is ever placed in
the caller's namespace, so no traffic can leave the machine.

* The server runs on ``cpu_server`` (taskset) and its NICs' receive processing is
  steered there with RPS (``queues/rx-0/rps_cpus`` inside the namespace); the clients'
  NICs steer to ``cpu_clients`` where the load generators run.  :meth:`softirq_snapshot`
  and :meth:`netrx_check` show where NET_RX work lands.
* Sysctls per kernel profile are set inside the server namespace (syncookies,
  somaxconn, tcp_max_syn_backlog, synack retries) and the clients get a wide
  ip_local_port_range and tcp_tw_reuse=1.
* :class:`TestBed` is a context manager that always tears down what it created, on an
  exception, Ctrl-C, SIGTERM or SIGHUP (the last two turned into :class:`TestBedInterrupted`).
  Signals that arrive during the teardown itself are held until it has finished, so a
  second Ctrl-C cannot leave namespaces behind.  It records
  what it created in ``/run/simaccept-testbed/<prefix>.json``; on start it removes
  stale test beds of earlier runs: namespaces named ``sa-<pid>-...`` whose owning
  process is dead (or whose pid was reused, per the recorded start time).  Namespaces
  of live owners and anything not matching the name pattern are never touched.
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Sequence

MARK_DIR = Path("/run/simaccept-testbed")
#: Held (flock) while a test bed is up; the kernel lets go when its process ends, even by
#: SIGKILL.  Two runs at once share CPU 0 and the system-wide tracepoints: each measured
#: about half a server (2,096 and 2,074 replies/s where one alone gave 4,173) and both
#: bpftrace runs counted both servers' drops, with nothing to tell.
LOCK_FILE = MARK_DIR / "lock"
#: Programs the test bed runs: namespaces and veths, the anchors, CPU pinning, nice levels.
REQUIRED_TOOLS = ("ip", "sh", "sleep", "taskset", "nice", "chrt", "setpriv")
CG_V1 = Path("/sys/fs/cgroup/cpu")          # cgroup v1 cpu controller (this machine)
CG_V2 = Path("/sys/fs/cgroup")              # cgroup v2 unified hierarchy
NS_RE = re.compile(r"^sa-(\d+)-(srv|c\d+)$")
SUBNETS = ("198.18.1", "198.18.2")
SERVER_HOST = 1
CLIENT_HOST = 2
POOL = range(10, 250)          # extra client source addresses per subnet
#: Server-namespace sysctls a scenario may leave at the kernel's default (kernel.* = -1), by
#: the scenario's ``kernel`` key that sets each.
DEFAULTED_SYSCTLS = {"max_syn_backlog": "net.ipv4.tcp_max_syn_backlog",
                     "synack_retries": "net.ipv4.tcp_synack_retries"}


class _forked_real_time:
    """While it is entered, a real-time runner thread (realsys.runner.runner_on_time: SCHED_FIFO,
    reset on fork) forks children that stay real-time through ``ip netns exec`` until ``chrt
    --other 0`` in their exec chain (:meth:`TestBed.spawn`); by then the parent, real-time too,
    has set their autogroup's nice.  Reset on fork, a child began at nice 0 and, against 12 httperf
    processes busy-polling at -20, took 0.7-1.5 s to get from fork to exec.  (Not a preexec_fn:
    Python code between fork and exec took a Ctrl-C there as a traceback in the child.)  Does
    nothing for a thread that is not SCHED_FIFO or when ``on`` is false."""

    def __init__(self, on: bool):
        self.on = on
        self.old = None

    def __enter__(self):
        if self.on and os.sched_getscheduler(0) == os.SCHED_FIFO | os.SCHED_RESET_ON_FORK:
            self.old = os.sched_getparam(0)
            os.sched_setscheduler(0, os.SCHED_FIFO, self.old)
        return self

    def __exit__(self, *exc):
        if self.old is not None:
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, self.old)


class TestBedError(RuntimeError):
    pass


#: CFS bandwidth of realsys.cpu_quota's cgroup: a short period, so that the throttling is
#: fine-grained.  The kernel refuses (EINVAL) a quota under 1 ms or a period over 1 s, so a
#: 5 ms period took no quota share under 0.2 (the run failed with the test bed up): the
#: period grows to keep the quota at 1 ms, down to a share of 0.001.
CFS_PERIOD_US, CFS_MIN_QUOTA_US, CFS_MAX_PERIOD_US = 5000, 1000, 1_000_000
CPU_QUOTA_MIN = CFS_MIN_QUOTA_US / CFS_MAX_PERIOD_US


def cfs_bandwidth(quota: float) -> tuple[int, int]:
    """(quota, period) in microseconds for a share of one CPU in [CPU_QUOTA_MIN, 1)."""
    if not CPU_QUOTA_MIN <= quota < 1:
        raise TestBedError(f"realsys.cpu_quota {quota!r}: a CFS quota takes a share from {CPU_QUOTA_MIN:g} to 1")
    period = min(CFS_MAX_PERIOD_US, max(CFS_PERIOD_US, math.ceil(CFS_MIN_QUOTA_US / quota)))
    return max(CFS_MIN_QUOTA_US, int(quota * period)), period


class TestBedBusy(TestBedError):
    """Another test bed is up on this machine."""


class TestBedInterrupted(SystemExit):
    """Raised in the main thread when SIGTERM or SIGHUP arrives while a test bed is up."""

#: Signals that end a run: the test bed turns them into exceptions, and holds them off
#: while it tears down.  SIGHUP is a closed terminal or SSH session ending a long sweep.
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def stop_signals_held(doing: str, say: Callable[[str], None]):
    """SIGINT, SIGTERM and SIGHUP arriving in the block are held, said once (``doing``), and
    acted on when it ends: KeyboardInterrupt or TestBedInterrupted, unless an exception is
    already ending the run.  For clean-ups an impatient second Ctrl-C must not cut short.
    In the main thread only (elsewhere Python delivers no signal to a handler anyway)."""
    held: list[int] = []
    saved: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        def hold(signum, frame):
            if not held:
                say(f"{doing}; signal {signum} held until it is done")
            held.append(signum)
        for sig in _STOP_SIGNALS:
            if signal.getsignal(sig) is not signal.SIG_IGN:     # an ignored signal stays ignored
                saved[sig] = signal.signal(sig, hold)
    try:
        yield
    finally:
        for sig, h in saved.items():
            signal.signal(sig, h)
    if held and sys.exc_info()[1] is None:     # else an exception is already ending the run
        if held[0] == signal.SIGINT:
            raise KeyboardInterrupt
        raise TestBedInterrupted(128 + held[0])


def _run(cmd: Sequence[str], input: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(cmd), input=input, text=True, capture_output=True)
    if check and p.returncode != 0:
        raise TestBedError(f"{' '.join(cmd)}: exit {p.returncode}: {p.stderr.strip()}")
    return p


def _proc_starttime(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[19])


def list_namespaces() -> list[str]:
    p = _run(["ip", "netns", "list"], check=False)
    return [line.split()[0] for line in p.stdout.splitlines() if line.strip()]


def _ns_pids(ns: str) -> list[int]:
    p = _run(["ip", "netns", "pids", ns], check=False)
    return [int(x) for x in p.stdout.split() if x.isdigit()]


def _kill_ns_processes(ns: str) -> None:
    """Kill every process whose network namespace is ns (a namespace we own)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        pids = _ns_pids(ns)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline and _ns_pids(ns):
            time.sleep(0.05)


def _delete_ns(ns: str) -> None:
    _kill_ns_processes(ns)
    _run(["ip", "netns", "del", ns], check=False)


def owner_record(pid: int) -> dict:
    """Who made something that may outlive a SIGKILL: what :func:`owner_alive` checks later."""
    return {"owner_pid": pid, "owner_starttime": _proc_starttime(pid)}


def owner_alive(pid: int, starttime: int | None) -> bool:
    st = _proc_starttime(pid)
    if st is None:
        return False
    return starttime is None or st == starttime


def clean_stale(log=None) -> list[str]:
    """Remove test beds left by killed runs: ``sa-<pid>-*`` namespaces whose owner is dead.

    Returns the namespaces removed (names) and cgroups (paths).  A namespace whose owner lives is left alone, and
    so is every namespace not matching the pattern."""
    removed = []
    marks = {}
    if MARK_DIR.is_dir():
        for f in MARK_DIR.glob("sa-*.json"):
            try:
                marks[f.stem] = json.loads(f.read_text())
            except (OSError, ValueError):
                continue
    for ns in list_namespaces():
        m = NS_RE.match(ns)
        if not m:
            continue
        pid = int(m.group(1))
        prefix = f"sa-{pid}"
        start = marks.get(prefix, {}).get("owner_starttime")
        if owner_alive(pid, start):
            continue
        _delete_ns(ns)
        removed.append(ns)
        if log:
            log(f"testbed: removed stale namespace {ns} (owner pid {pid} is gone)")
    for base in (CG_V1, CG_V2):
        if not base.is_dir():
            continue
        for cg in base.glob("sa-*-srv"):
            m = re.match(r"^sa-(\d+)-srv$", cg.name)
            if m and not owner_alive(int(m.group(1)), marks.get(f"sa-{m.group(1)}", {}).get("owner_starttime")):
                _remove_cgroup(cg)
                removed.append(str(cg))
    for prefix in marks:
        m = re.match(r"^sa-(\d+)$", prefix)
        if m and not owner_alive(int(m.group(1)), marks[prefix].get("owner_starttime")):
            (MARK_DIR / f"{prefix}.json").unlink(missing_ok=True)
    return removed


def _remove_cgroup(cg: Path) -> None:
    """Kill what is left in one of our cgroups and remove it."""
    for _ in range(3):
        try:
            pids = [int(x) for x in (cg / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)
    for _ in range(20):
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.1)


def read_softirqs() -> dict[str, list[int]]:
    out = {}
    for line in Path("/proc/softirqs").read_text().splitlines()[1:]:
        name, *vals = line.split()
        out[name.rstrip(":")] = [int(v) for v in vals]
    return out


def read_softnet() -> list[int]:
    """Packets processed per CPU (column 1 of /proc/net/softnet_stat)."""
    rows = []
    for line in Path("/proc/net/softnet_stat").read_text().splitlines():
        rows.append(int(line.split()[0], 16))
    return rows


def _lock_or_busy() -> int:
    """An fd holding :data:`LOCK_FILE`'s flock, or TestBedBusy naming the holder."""
    MARK_DIR.mkdir(parents=True, exist_ok=True)
    fd = os.open(LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        try:
            holder = json.loads(os.read(fd, 4096) or b"{}").get("owner_pid", "?")
        except ValueError:
            holder = "?"
        os.close(fd)
        raise TestBedBusy(f"another test bed is up on this machine (pid {holder}); two runs at once "
                          f"share the server's CPU and the kernel's tracepoints, and each would measure "
                          f"part of a server: wait for it to end") from None
    return fd


def check_can_build() -> None:
    """TestBedError now, rather than half-way through a build or a run: not root, a program
    missing (the bed came up and then failed as "No such file: /proc/<pid>/net/tcp" without
    sleep), or another test bed up (TestBedBusy; the lock is taken for real by the bed)."""
    if os.geteuid() != 0:
        raise TestBedError("the test bed needs root (network namespaces, veth, sysctls)")
    missing = [t for t in REQUIRED_TOOLS if shutil.which(t) is None]
    if missing:
        raise TestBedError(f"the test bed needs {', '.join(missing)} on PATH (packages iproute2, "
                           f"coreutils, util-linux; realsys/install-deps.sh)")
    os.close(_lock_or_busy())


class TestBed:
    """Context manager: ``with TestBed(...) as tb: tb.spawn(tb.server_ns, [...], cpu=0)``."""

    __test__ = False   # not a pytest class

    def __init__(self, *, cpu_server: int = 0, cpu_clients: int = 1, n_clients: int = 2,
                 sysctls_server: dict[str, str] | None = None, log=None):
        if not (1 <= n_clients <= len(SUBNETS)):
            raise ValueError("n_clients must be 1 or 2")
        ncpu = os.cpu_count() or 1
        for c in (cpu_server, cpu_clients):
            if c >= ncpu:
                raise TestBedError(f"CPU {c} does not exist (this machine has {ncpu})")
        self.pid = os.getpid()
        self.prefix = f"sa-{self.pid}"
        self.server_ns = f"{self.prefix}-srv"
        self.client_ns = [f"{self.prefix}-c{i + 1}" for i in range(n_clients)]
        self.server_ips = [f"{SUBNETS[i]}.{SERVER_HOST}" for i in range(n_clients)]
        self.cpu_server = cpu_server
        self.cpu_clients = cpu_clients
        self.sysctls_server = dict(sysctls_server or {})
        self.log = log or (lambda msg: None)
        self.created: list[str] = []          # namespaces, in creation order
        self.cgroups: list[Path] = []         # cpu cgroups we made (server CPU quota)
        self.procs: list[subprocess.Popen] = []
        self.anchors: dict[str, int] = {}     # ns -> pid of a sleeper whose /proc/<pid>/net shows the ns
        self._old_handlers: dict[int, object] = {}
        self._addr_cursor = [0] * n_clients
        self._lock_fd: int | None = None

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "TestBed":
        check_can_build()       # before the handlers: a refusal must leave the process as it was
        if threading.current_thread() is threading.main_thread():
            self._old_handlers[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_sigterm)
            if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:    # under nohup it stays ignored
                self._old_handlers[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._on_sigterm)
        try:
            self._take_lock()
            clean_stale(self.log)
            self._build()
        except BaseException:
            self.teardown()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.teardown()

    def _on_sigterm(self, signum, frame):
        raise TestBedInterrupted(128 + signum)

    def _take_lock(self) -> None:
        fd = _lock_or_busy()
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(owner_record(self.pid)).encode(), 0)
        self._lock_fd = fd

    def _mark(self) -> None:
        MARK_DIR.mkdir(parents=True, exist_ok=True)
        tmp = MARK_DIR / f".{self.prefix}.tmp"
        tmp.write_text(json.dumps({**owner_record(self.pid),
                                   "namespaces": self.created, "cgroups": [str(c) for c in self.cgroups]}))
        os.replace(tmp, MARK_DIR / f"{self.prefix}.json")

    def _add_ns(self, ns: str) -> None:
        if ns in list_namespaces():
            raise TestBedError(f"namespace {ns} already exists and is not ours to reuse")
        # marked before it is made: a run killed between the two left a namespace without its
        # owner's start time, which clean_stale could then not tell from a reused pid's
        self.created.append(ns)
        self._mark()
        try:
            _run(["ip", "netns", "add", ns])
        except BaseException:
            if ns not in list_namespaces():     # a Ctrl-C after the add: it is ours to tear down
                self.created.remove(ns)
                self._mark()
            raise

    def _build(self) -> None:
        t0 = time.monotonic()
        self._add_ns(self.server_ns)
        for ns in self.client_ns:
            self._add_ns(ns)
        cmds: dict[str, list[str]] = {ns: ["link set lo up"] for ns in self.created}
        for i, cns in enumerate(self.client_ns):
            sdev, cdev = f"sa{self.pid}s{i + 1}", f"sa{self.pid}c{i + 1}"
            # Both ends are created directly inside their namespaces: nothing in ours.
            _run(["ip", "link", "add", sdev, "netns", self.server_ns, "type", "veth",
                  "peer", "name", cdev, "netns", cns])
            net = SUBNETS[i]
            cmds[self.server_ns] += [f"addr add {net}.{SERVER_HOST}/24 dev {sdev}", f"link set {sdev} up"]
            cmds[cns] += [f"addr add {net}.{CLIENT_HOST}/24 dev {cdev}", f"link set {cdev} up"]
            cmds[cns] += [f"addr add {net}.{h}/32 dev {cdev}" for h in POOL]
        for ns, c in cmds.items():
            _run(["ip", "-n", ns, "-batch", "-"], input="\n".join(c) + "\n")
        # sysctls + RPS, one shell per namespace
        srv_mask = format(1 << self.cpu_server, "x")
        cli_mask = format(1 << self.cpu_clients, "x")
        srv_sh = ["echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6"]
        for i in range(len(self.client_ns)):
            srv_sh.append(f"echo {srv_mask} > /sys/class/net/sa{self.pid}s{i + 1}/queues/rx-0/rps_cpus")
        for k, v in self.sysctls_server.items():
            srv_sh.append(f"echo '{v}' > /proc/sys/{k.replace('.', '/')}")
        _run(["ip", "netns", "exec", self.server_ns, "sh", "-ec", "; ".join(srv_sh)])
        for i, cns in enumerate(self.client_ns):
            sh = ["echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6",
                  f"echo {cli_mask} > /sys/class/net/sa{self.pid}c{i + 1}/queues/rx-0/rps_cpus",
                  "echo '1024 65535' > /proc/sys/net/ipv4/ip_local_port_range",
                  "echo 1 > /proc/sys/net/ipv4/tcp_tw_reuse"]
            _run(["ip", "netns", "exec", cns, "sh", "-ec", "; ".join(sh)])
        # An anchor process per namespace: /proc/<anchor>/net/* reads that namespace's counters.
        for ns in self.created:
            # infinity: after 86400 s the sleeper was a zombie and /proc/<pid>/net/* gave ENOENT
            p = self.spawn(ns, ["sleep", "infinity"], cpu=None)
            self.anchors[ns] = p.pid
        #: The new server namespace's own values of the sysctls a point may leave at their default
        #: (-1): set back at every point, else a point ran with the previous point's value.
        self.sysctl_defaults = self.read_sysctls(list(DEFAULTED_SYSCTLS.values()))
        self.log(f"testbed: up in {time.monotonic() - t0:.2f}s: {', '.join(self.created)}")

    def set_sysctls(self, values: dict[str, str], ns: str | None = None) -> None:
        ns = ns or self.server_ns
        sh = [f"echo '{v}' > /proc/sys/{k.replace('.', '/')}" for k, v in values.items()]
        if sh:
            _run(["ip", "netns", "exec", ns, "sh", "-ec", "; ".join(sh)])

    def read_sysctls(self, keys: Sequence[str], ns: str | None = None) -> dict[str, str]:
        # net.* sysctls answer for the opener's network namespace: read them from inside.
        ns = ns or self.server_ns
        paths = " ".join(f"/proc/sys/{k.replace('.', '/')}" for k in keys)
        p = _run(["ip", "netns", "exec", ns, "sh", "-c", f"for f in {paths}; do echo $(cat $f); done"])
        vals = p.stdout.splitlines()
        return {k: (vals[i].strip() if i < len(vals) else "") for i, k in enumerate(keys)}

    def _say(self, msg: str) -> None:
        # After SIGHUP the terminal may be gone (EIO/EPIPE), and from a signal handler the
        # print may re-enter one in progress (RuntimeError): a log line must not stop a teardown.
        try:
            self.log(msg)
        except (OSError, ValueError, RuntimeError):
            pass

    def teardown(self) -> None:
        """Stop our processes, delete our namespaces (their veths go with them).

        SIGINT, SIGTERM and SIGHUP arriving meanwhile are held and acted on once everything
        is removed (a KeyboardInterrupt or TestBedInterrupted raised then), so an impatient
        second Ctrl-C cannot cut the teardown short and leave the test bed up."""
        try:
            with stop_signals_held("testbed: tearing down", self._say):
                self._teardown()
        finally:
            # after the hold is lifted: restored inside it, they were undone by its own restore,
            # and SIGTERM raised TestBedInterrupted in a process with no bed up
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)
            self._old_handlers.clear()

    def _teardown(self) -> None:
        try:
            self._remove_all()
        finally:        # last, and even after a failed removal: a held lock refuses every later bed
            if self._lock_fd is not None:
                os.close(self._lock_fd)
                self._lock_fd = None

    def _remove_all(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                try:
                    p.terminate()
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 3.0
        for p in self.procs:
            try:
                p.wait(timeout=max(0.05, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs.clear()
        for ns in reversed(self.created):
            _delete_ns(ns)
        for cg in self.cgroups:
            _remove_cgroup(cg)
        self.cgroups.clear()
        if self.created:
            self._say(f"testbed: removed {', '.join(self.created)}")
        self.created.clear()
        (MARK_DIR / f"{self.prefix}.json").unlink(missing_ok=True)

    # ------------------------------------------------------------------ processes
    def spawn(self, ns: str, argv: Sequence[str], cpu: int | None, nice: int | None = None,
              deathsig: str = "KILL", **kw) -> subprocess.Popen:
        """Start argv inside ns (one of ours), pinned to cpu, optionally at a nice level.
        ip-netns-exec, setpriv, chrt, nice and taskset all exec, so the Popen's pid is the
        program's own.  It gets ``deathsig`` (SIGKILL unless told) when the thread that
        started it ends: a SIGKILLed run had left its servers listening and its anchors
        sleeping until the next run or ``realsys clean`` (the namespaces still wait for
        those; so does a program whose exec chain had not reached setpriv, milliseconds
        after its spawn).  So start programs from a thread that outlives them (the runner's
        is the main thread).  The kernel clears the death signal in a forked child, so a
        program that forks its own workers (nginx's master) must get a signal it handles by
        stopping them: ``servers.death_signal`` says which."""
        if ns not in self.created:
            raise TestBedError(f"{ns} is not a namespace of this test bed")
        if deathsig not in ("KILL", "TERM", "INT", "QUIT"):
            raise TestBedError(f"deathsig {deathsig!r}: one of KILL, TERM, INT, QUIT")
        cmd = ["ip", "netns", "exec", ns, "setpriv", "--pdeathsig", deathsig]
        if nice is not None:
            # forked real-time (_forked_real_time), the program itself is not
            cmd += ["chrt", "--other", "0", "nice", "-n", str(nice)]
        if cpu is not None:
            cmd += ["taskset", "-c", str(cpu)]
        kw.setdefault("stdin", subprocess.DEVNULL)
        if nice is not None:
            # With sched_autogroup on, nice only ranks processes within one session; other
            # sessions' work still gets an equal share of the CPU.  So the process gets a
            # session (autogroup) of its own, and that group gets the same nice level.
            kw["start_new_session"] = True
        with _forked_real_time(nice is not None):
            p = subprocess.Popen(cmd + list(argv), **kw)
        self.procs.append(p)
        if nice is not None:
            try:
                Path(f"/proc/{p.pid}/autogroup").write_text(str(nice))
            except OSError:
                pass
        return p

    def stop(self, p: subprocess.Popen, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if p.poll() is None:
            p.send_signal(sig)
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            return p.wait()
        finally:
            if p in self.procs:
                self.procs.remove(p)

    def cpu_limit(self, pids: Sequence[int], quota: float) -> str:
        """Put pids in a cpu cgroup of ours limited to `quota` of one CPU (CFS bandwidth).
        Interrupt and softirq work done on that CPU is not limited.  A short period (5 ms)
        makes the throttling fine-grained, closer to a slower CPU than to 100 ms on/off
        bursts; below a quota of 0.2 the period grows (``cfs_bandwidth``).  Returns the
        cgroup path."""
        q_us, period = cfs_bandwidth(quota) if quota < 1 else (None, CFS_PERIOD_US)
        if (CG_V1 / "cpu.cfs_quota_us").exists():
            cg = CG_V1 / f"{self.prefix}-srv"
            files = {"cpu.cfs_period_us": str(period),
                     "cpu.cfs_quota_us": str(q_us) if quota < 1 else "-1",
                     "cpu.shares": "262144"}
        elif "cpu" in (CG_V2 / "cgroup.controllers").read_text().split() if (CG_V2 / "cgroup.controllers").exists() else False:
            cg = CG_V2 / f"{self.prefix}-srv"
            files = {"cpu.max": f"{q_us} {period}" if quota < 1 else f"max {period}",
                     "cpu.weight": "10000"}
        else:
            raise TestBedError("no cpu cgroup controller: cannot apply realsys.cpu_quota")
        if cg not in self.cgroups:
            self.cgroups.append(cg)         # marked before it is made, as a namespace is
            self._mark()
            cg.mkdir(exist_ok=True)
        for name, val in files.items():
            (cg / name).write_text(val)
        for pid in pids:
            (cg / "cgroup.procs").write_text(str(pid))
        return str(cg)

    # ------------------------------------------------------------------ addresses
    def client_addrs(self, client: int, n: int) -> list[str]:
        """n fresh source addresses of client host `client` (rotating through the pool, so
        consecutive points do not reuse 4-tuples still in TIME_WAIT)."""
        pool = list(POOL)
        out = []
        for _ in range(n):
            out.append(f"{SUBNETS[client]}.{pool[self._addr_cursor[client] % len(pool)]}")
            self._addr_cursor[client] += 1
        return out

    # ------------------------------------------------------------------ observation
    def netfile(self, ns: str, name: str) -> str:
        """Text of /proc/net/<name> as seen inside ns (via the ns's anchor process)."""
        return Path(f"/proc/{self.anchors[ns]}/net/{name}").read_text()

    def listening(self, port: int, ns: str | None = None) -> bool:
        text = self.netfile(ns or self.server_ns, "tcp")
        want = f":{port:04X} "
        for line in text.splitlines()[1:]:
            f = line.split()
            if len(f) > 3 and f[3] == "0A" and (f[1] + " ").endswith(want):
                return True
        return False

    def wait_listening(self, port: int, proc: subprocess.Popen | None = None, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.listening(port):
                return
            if proc is not None and proc.poll() is not None:
                raise TestBedError(f"server exited with status {proc.returncode} before listening")
            time.sleep(0.02)
        raise TestBedError(f"nothing listening on port {port} after {timeout}s")

    @staticmethod
    def softirq_snapshot() -> dict[str, list[int]]:
        return {"NET_RX": read_softirqs().get("NET_RX", []), "softnet_processed": read_softnet()}

    def host_info(self) -> dict[str, str]:
        return {"namespaces": ",".join(self.created), "server_ips": ",".join(self.server_ips)}


def netrx_check(tb: TestBed, before: dict, after: dict) -> dict:
    """Per-CPU NET_RX softirq and packets-processed deltas between two snapshots."""
    d_rx = [a - b for a, b in zip(after["NET_RX"], before["NET_RX"])]
    d_pk = [a - b for a, b in zip(after["softnet_processed"], before["softnet_processed"])]
    return {"net_rx_softirqs_per_cpu": d_rx, "packets_processed_per_cpu": d_pk,
            "cpu_server": tb.cpu_server, "cpu_clients": tb.cpu_clients}

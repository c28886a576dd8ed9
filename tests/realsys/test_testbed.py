"""The namespace test bed: built and always torn down, stale beds cleaned, RPS steering."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from realsys import servers, testbed
from realsys.testbed import TestBed, list_namespaces

pytestmark = pytest.mark.root


def _ours(pid: int) -> list[str]:
    return [n for n in list_namespaces() if n.startswith(f"sa-{pid}-")]


def _links_named(fragment: str) -> str:
    """The `ip -o link` lines naming ``fragment``, of the root namespace and of every named one:
    a bed makes its veths inside its namespaces, so the root namespace alone never lists them."""
    out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    out += subprocess.run(["ip", "-all", "netns", "exec", "ip", "-o", "link"], capture_output=True, text=True).stdout
    return "\n".join(line for line in out.splitlines() if fragment in line)


def test_a_live_beds_veths_are_seen_by_the_teardown_checks():
    with TestBed():
        assert f"sa{os.getpid()}s1" in _links_named("sa")
    assert f"sa{os.getpid()}" not in _links_named("sa")


def test_build_and_teardown_on_exception(cbuild):
    pid = os.getpid()
    server = None
    with pytest.raises(RuntimeError, match="midway"):
        with TestBed() as tb:
            assert set(_ours(pid)) == {tb.server_ns, *tb.client_ns}
            server = tb.spawn(tb.server_ns, [str(cbuild / "userver"), "--port", "80", "--docroot", "/nonexistent"],
                              cpu=0, stderr=subprocess.DEVNULL)
            sleeper = tb.spawn(tb.client_ns[0], ["sleep", "60"], cpu=1)
            assert tb.read_sysctls(["net.ipv4.tcp_tw_reuse"], tb.client_ns[0])["net.ipv4.tcp_tw_reuse"] == "1"
            raise RuntimeError("midway")
    assert _ours(pid) == []
    assert f"sa{pid}" not in _links_named("sa")
    assert sleeper.poll() is not None
    assert server.poll() is not None
    assert not (testbed.MARK_DIR / f"sa-{pid}.json").exists()


def test_a_sigkilled_runs_programs_end_with_it(tmp_path):
    """SIGKILL runs no teardown: the namespaces wait for the next run or ``realsys clean``,
    but the programs no longer do (an audit: the point's userver still listened and the
    anchors slept on until then)."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        from realsys.testbed import TestBed
        tb = TestBed().__enter__()
        p = tb.spawn(tb.server_ns, ["sleep", "60"], cpu=0, nice=-20)
        print(" ".join(str(x) for x in [p.pid, *tb.anchors.values()]), flush=True)
        time.sleep(60)
    """))
    # a program whose exec chain has not reached setpriv when the run dies is missed (the
    # parent already gone, no signal comes): a window of milliseconds after spawn
    _sigkill_a_bed_run(script, 4, settle=0.5)


@pytest.mark.skipif(servers.nginx_binary() is None, reason="nginx is not installed (realsys/install-deps.sh)")
def test_a_sigkilled_runs_nginx_ends_with_it_worker_too(tmp_path):
    """nginx's worker is forked by its master, and a forked child does not inherit the death
    signal: with SIGKILL as the master's, the worker of a SIGKILLed run stayed (seen in a
    review on 2026-12-04).  The master gets ``servers.death_signal("nginx")`` instead and
    stops its worker itself."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        from realsys import kernel, servers
        from realsys.docroot import make_docroot
        from realsys.testbed import TestBed
        work = Path({str(tmp_path)!r})
        docroot = make_docroot(work / "docroot", 1024, 4)
        conf = servers.nginx_config(work / "nginx", docroot, accept_limit="inf", backlog=128, mux="epoll",
                                    max_conns=1000)
        tb = TestBed().__enter__()
        argv = [servers.nginx_binary(), "-c", str(conf), "-p", str(work / "nginx"), "-e", str(work / "nginx/error.log")]
        p = tb.spawn(tb.server_ns, argv, cpu=0, nice=-20, deathsig=servers.death_signal("nginx"))
        tb.wait_listening(servers.PORT, p)
        deadline = time.monotonic() + 5
        while not kernel.children(p.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        print(" ".join(str(x) for x in [p.pid, *kernel.children(p.pid)]), flush=True)
        time.sleep(60)
    """))
    _sigkill_a_bed_run(script, 2)          # the master and its one worker


def _sigkill_a_bed_run(script: Path, n: int, settle: float = 0.0) -> None:
    """Run ``script`` (it builds a bed, prints the pids of the ``n`` programs it started and
    sleeps), SIGKILL it ``settle`` s after they are up, and assert that none of them outlives
    it by 5 s and that the next clean-up leaves none of its namespaces."""
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(x) for x in p.stdout.readline().split()]
        assert len(pids) == n and all(_alive(x) for x in pids), pids
        time.sleep(settle)
        p.kill()
        p.wait(timeout=10)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and any(_alive(x) for x in pids):
            time.sleep(0.05)
        assert not [x for x in pids if _alive(x)], [(x, Path(f"/proc/{x}/cmdline").read_bytes()) for x in pids if _alive(x)]
    finally:
        if p.poll() is None:
            p.kill()
        testbed.clean_stale()
    assert _ours(p.pid) == []


def _alive(pid: int) -> bool:
    """Running and not a zombie (a killed child of a dead parent is reaped by init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def test_teardown_on_sigterm(tmp_path):
    """A run killed with SIGTERM (the way CI or a user stops it) leaves nothing behind."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        from realsys.testbed import TestBed
        with TestBed() as tb:
            tb.spawn(tb.client_ns[0], ["sleep", "60"], cpu=1)
            print("up", flush=True)
            time.sleep(60)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"
    assert _ours(p.pid)
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    assert _ours(p.pid) == []
    assert f"sa{p.pid}" not in _links_named("sa")


def test_stale_cleanup_only_dead_owners():
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"sa-{dead.pid}-srv"
    live = "sa-1-srv"                   # pid 1 is alive: must not be touched
    other = f"zz-{os.getpid()}-keep"     # not our pattern: must not be touched
    for ns in (stale, live, other):
        subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        removed = testbed.clean_stale()
        names = list_namespaces()
        assert stale in removed and stale not in names
        assert live in names and other in names
    finally:
        for ns in (stale, live, other):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_rps_steers_server_receive_to_its_cpu(cbuild, tmp_path):
    """Packets processed on the server's CPU match what the server namespace received."""
    from realsys.docroot import make_docroot
    from realsys import kernel
    root = make_docroot(tmp_path / "root", 1024)
    os.chmod(tmp_path, 0o755)
    with TestBed() as tb:
        srv = tb.spawn(tb.server_ns, [str(cbuild / "userver"), "--port", "80", "--docroot", str(root),
                                      "--mux", "epoll"], cpu=0, stderr=subprocess.DEVNULL)
        tb.wait_listening(80, srv)
        c0 = kernel.read_counters(lambda n: tb.netfile(tb.server_ns, n))
        s0 = tb.softirq_snapshot()
        gens = [tb.spawn(tb.client_ns[i], [str(cbuild / "loadgen"), "--server", tb.server_ips[i], "--port", "80",
                                           "--rate", "1000", "--duration", "1", "--timeout", "1",
                                           "--out", str(tmp_path / f"g{i}.json")], cpu=1) for i in range(2)]
        for g in gens:
            g.wait(timeout=20)
        s1 = tb.softirq_snapshot()
        c1 = kernel.read_counters(lambda n: tb.netfile(tb.server_ns, n))
        chk = testbed.netrx_check(tb, s0, s1)
    rx = c1["Ip.InReceives"] - c0["Ip.InReceives"]
    pk = chk["packets_processed_per_cpu"]
    assert rx > 5000                      # ~5 packets per connection, 2000 connections
    assert chk["net_rx_softirqs_per_cpu"][0] > 0
    # every packet the server namespace received was processed on CPU 0 (plus a little else)
    assert pk[0] >= 0.95 * rx, (pk, rx)
    assert pk[0] <= 1.5 * rx + 2000, (pk, rx)


@pytest.mark.parametrize("quota", [0.25, 0.1, testbed.CPU_QUOTA_MIN])
def test_cpu_quota_cgroup_created_and_removed(quota):
    """Below 0.2 the 5 ms period took a quota under the kernel's 1 ms: EINVAL, the bed up."""
    pid = os.getpid()
    with TestBed() as tb:
        p = tb.spawn(tb.server_ns, ["sleep", "30"], cpu=0)
        cg = tb.cpu_limit([p.pid], quota)
        cgp = Path(cg)
        assert str(p.pid) in (cgp / "cgroup.procs").read_text().split()
        if (cgp / "cpu.cfs_quota_us").exists():
            q, period = int((cgp / "cpu.cfs_quota_us").read_text()), int((cgp / "cpu.cfs_period_us").read_text())
        else:
            q, period = map(int, (cgp / "cpu.max").read_text().split())
        assert q >= 1000 and period <= 1_000_000          # what the kernel's CFS bandwidth takes
        assert q / period == pytest.approx(quota, rel=1e-3)
        assert period == max(5000, round(1000 / quota))
    assert not cgp.exists()
    assert _ours(pid) == []


def test_killed_run_is_cleaned_on_next_start(tmp_path):
    """SIGKILL leaves the bed behind; the next start (clean_stale) removes it and its processes."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        from realsys.testbed import TestBed
        with TestBed() as tb:
            p = tb.spawn(tb.client_ns[0], ["sleep", "60"], cpu=1)
            print(p.pid, flush=True)
            time.sleep(60)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    sleeper = int(p.stdout.readline())
    p.kill()
    p.wait(timeout=10)
    left = _ours(p.pid)
    assert left, "SIGKILL cannot run teardown: the namespaces must still be there"
    removed = testbed.clean_stale()
    assert set(left) <= set(removed)
    assert _ours(p.pid) == []
    time.sleep(0.2)
    assert not os.path.exists(f"/proc/{sleeper}") or "Z" in open(f"/proc/{sleeper}/stat").read().split()[2]


_SLOW_TEARDOWN = """
    import signal, sys, time
    sys.path.insert(0, {root!r})
    # as in a terminal, even if pytest runs with them ignored (a background job, nohup)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    from realsys import servers, testbed
    from realsys.testbed import TestBed
    _delete = testbed._delete_ns
    def slow_delete(ns):            # a teardown long enough to be signalled in, deterministically
        print("tearing", flush=True)
        time.sleep(0.5)
        _delete(ns)
    testbed._delete_ns = slow_delete
    with TestBed(log=lambda m: print(m, file=sys.stderr, flush=True)) as tb:
        tb.spawn(tb.client_ns[0], ["sleep", "60"], cpu=1)
        print("up", flush=True)
        {body}
"""


@pytest.mark.parametrize("first, second, rc", [
    (signal.SIGINT, signal.SIGINT, -signal.SIGINT),  # Ctrl-C twice: an uncaught KeyboardInterrupt
    (signal.SIGTERM, signal.SIGTERM, 143),
    (signal.SIGHUP, signal.SIGINT, 129),          # a closed terminal, then an impatient Ctrl-C
    (None, signal.SIGTERM, 143),                  # the run ended by itself; SIGTERM in its teardown
])
def test_a_signal_during_the_teardown_is_held_until_it_is_done(tmp_path, first, second, rc):
    """The audit's case: a second Ctrl-C or SIGTERM 20 ms after the first cut the teardown
    short and left the namespaces up, while the run said it had been interrupted normally."""
    body = "time.sleep(60)" if first else "pass"
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(_SLOW_TEARDOWN).format(
        root=str(testbed.__file__.rsplit('/realsys/', 1)[0]), body=body))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        if first:
            p.send_signal(first)
        assert p.stdout.readline().strip() == "tearing"
        p.send_signal(second)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert _ours(p.pid) == [], err
    assert not (testbed.MARK_DIR / f"sa-{p.pid}.json").exists()
    assert "held until it is done" in err and "testbed: removed" in err
    assert p.returncode == rc, err[-2000:]


def test_a_nohup_run_ignores_the_hangup(tmp_path):
    """SIGHUP ends a run as SIGTERM does, unless the run was started ignoring it (nohup)."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import signal, sys, time
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        from realsys.testbed import TestBed
        with TestBed() as tb:
            print("up", flush=True)
            time.sleep(1.0)
        print("finished", flush=True)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "up"
    p.send_signal(signal.SIGHUP)
    out, _ = p.communicate(timeout=30)
    assert p.returncode == 0 and "finished" in out
    assert _ours(p.pid) == []


def test_a_second_test_bed_is_refused_while_one_is_up(tmp_path):
    """Two runs at once each measured half a server (2,096 and 2,074 replies/s where one gave
    4,173) and both counted both servers' drops.  Now the second is refused, naming the first;
    once the first is gone (even SIGKILLed: the kernel drops its lock), a new one builds."""
    script = tmp_path / "bed.py"
    script.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(testbed.__file__.rsplit('/realsys/', 1)[0])!r})
        from realsys.testbed import TestBed
        with TestBed() as tb:
            print("up", flush=True)
            time.sleep(60)
    """))
    p = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "up"
        with pytest.raises(testbed.TestBedBusy, match=f"another test bed is up on this machine \\(pid {p.pid}\\)"):
            with TestBed():
                pass
        assert _ours(os.getpid()) == []                   # the refused one built nothing
        assert _ours(p.pid)                               # and left the other alone
        # a run is refused before it makes its output folder or builds anything
        from realsys import cli as rcli
        smoke = str(Path(testbed.__file__).resolve().parents[1] / "scenarios" / "realsys" / "smoke.toml")
        assert rcli.main(["run", smoke, "--out", str(tmp_path / "second")]) == 1
        assert not (tmp_path / "second").exists()
    finally:
        p.kill()
        p.wait(timeout=10)
    with TestBed() as tb:                                 # the lock died with its holder
        assert tb.server_ns in list_namespaces()
    assert _ours(os.getpid()) == []


def test_a_missing_program_is_named_before_anything_is_built(monkeypatch):
    # without sleep on PATH the bed came up, then failed with "No such file: /proc/<pid>/net/tcp"
    import shutil as _shutil
    real = _shutil.which
    monkeypatch.setattr(testbed.shutil, "which", lambda n, *a, **k: None if n == "sleep" else real(n, *a, **k))
    with pytest.raises(testbed.TestBedError, match="needs sleep on PATH"):
        with TestBed():
            pass
    assert _ours(os.getpid()) == []


def test_a_refused_bed_gives_the_signal_handlers_back(tmp_path):
    # teardown put them back inside its signal hold, whose own restore then re-installed the
    # bed's: after any bed, even a refused one, SIGTERM raised TestBedInterrupted
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    lock = testbed._lock_or_busy()
    try:
        with pytest.raises(testbed.TestBedBusy):
            with TestBed():
                pass
    finally:
        os.close(lock)
    assert {sig: signal.getsignal(sig) for sig in before} == before
    with TestBed():
        pass
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_clean_waits_for_no_bed_to_be_up(capsys):
    # clean took no lock: one that read a dead run's mark while a new run reused its pid
    # deleted the new run's namespaces
    from realsys import cli as rcli
    lock = testbed._lock_or_busy()
    try:
        assert rcli.main(["clean"]) == 1
        assert "another test bed is up on this machine" in capsys.readouterr().err
    finally:
        os.close(lock)
    assert rcli.main(["clean"]) == 0


def test_the_anchors_sleep_for_as_long_as_the_bed_is_up():
    # "sleep 86400": a bed up for a day had zombie anchors, and its counters read ENOENT
    with TestBed() as tb:
        for pid in tb.anchors.values():
            assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[:2] == [b"sleep", b"infinity"]

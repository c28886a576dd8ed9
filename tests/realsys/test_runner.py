"""Runner: atomic append + resume, scenario errors exit 2 naming the key."""
from __future__ import annotations

import csv
import json
import os
import signal
import time
from pathlib import Path

import pytest

from realsys import cli, runner
from realsys.runner import (append_record, generator_error, httperf_error, offered_error, httperf_launches_in_window, launch_error, read_rows,
                            run_scenario, server_error, status_error, window_error)
from realsys.servers import nginx_binary
from simaccept.record import COLUMNS, RunRecord

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "scenarios" / "realsys" / "smoke.toml")


@pytest.mark.parametrize("override,key", [
    ("kernel.profile=linux-2.4", "kernel.profile"),
    ("server.kind=tux", "server.kind"),
    ("server.bogus=1", "server.bogus"),
    ("workload.rate=-5", "workload.rate"),
    ("realsys.cpu_server=4095", "realsys.cpu_server"),
])
def test_bad_scenario_exit_2(override, key, capsys, tmp_path):
    rc = cli.main(["run", SMOKE, "--set", override, "--out", str(tmp_path)])
    assert rc == 2
    assert key in capsys.readouterr().err


def test_nginx_accept_limit_refused(capsys, tmp_path):
    rc = cli.main(["run", SMOKE, "--set", "server.kind=nginx", "--set", "server.accept_limit=10",
                   "--out", str(tmp_path)])
    assert rc == 2 and "server.accept_limit" in capsys.readouterr().err


def test_httperf_with_a_first_syn_timer_refused(capsys, tmp_path):
    rc = cli.main(["run", SMOKE, "--set", "realsys.httperf=true", "--set", 'client.timeout_from="first-syn"',
                   "--out", str(tmp_path)])
    assert rc == 2 and "client.timeout_from" in capsys.readouterr().err
    rc = cli.main(["run", SMOKE, "--set", 'client.timeout_from="from-nowhere"', "--out", str(tmp_path)])
    assert rc == 2 and "client.timeout_from" in capsys.readouterr().err


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_out_that_cannot_be_a_directory_is_exit_2(where, capsys, tmp_path):
    # it was an OSError from mkdir: exit 1 (a failed run) and "[Errno 17] File exists"
    f = tmp_path / "f"
    f.write_text("keep")
    out = f if where == "file" else f / "sub"
    rc = cli.main(["run", SMOKE, "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("realsys: --out: ") and str(out) in err, err
    assert f.read_text() == "keep"



@pytest.mark.parametrize("text,needle", [
    (None, "No such file"),                      # unreadable
    ("[server\nkind = 1", "scenario file: "),   # not TOML
])
def test_bad_scenario_file_is_named_as_the_file(text, needle, capsys, tmp_path):
    # it printed "scenario key '<file>': ...", as if '<file>' were a key to fix
    f = tmp_path / "s.toml"
    if text is not None:
        f.write_text(text)
    rc = cli.main(["run", str(f), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("realsys: scenario file: ") and needle in err and "<file>" not in err, err

def test_append_is_complete_rows(tmp_path):
    p = tmp_path / "results.csv"
    for i in range(3):
        append_record(p, RunRecord(source="real", point=f"p{i}", replies_per_s=float(i)))
    with open(p, newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["point"] for r in rows] == ["p0", "p1", "p2"]
    assert list(rows[0]) == list(COLUMNS)
    assert rows[0]["target_rate"] == ""          # NaN -> empty
    assert not list(tmp_path.glob(".*tmp"))


def test_a_newer_versions_columns_are_not_dropped(tmp_path, capsys):
    # the rewrite kept COLUMNS only: a column another version wrote went from every row
    p = tmp_path / "results.csv"
    append_record(p, RunRecord(source="real", point="p0", replies_per_s=1.0))
    lines = p.read_text().splitlines()
    p.write_text("\n".join([lines[0] + ",newer_column", lines[1] + ",7"]) + "\n")
    from realsys.runner import ResultsFileError
    with pytest.raises(ResultsFileError, match="columns this version does not write \\(newer_column\\)"):
        append_record(p, RunRecord(source="real", point="p1", replies_per_s=2.0))
    assert p.read_text().splitlines()[1].endswith(",7")
    assert cli.main(["run", SMOKE, "--out", str(tmp_path)]) == 2       # refused before anything runs
    assert "--out: " in capsys.readouterr().err and p.read_text().splitlines()[1].endswith(",7")


def test_a_point_at_the_kernels_default_gets_the_namespaces_value_not_the_last_points():
    # a sweep kernel.max_syn_backlog=[256, -1] ran its second point at 256
    from realsys.runner import _sysctls_for
    v = {"kernel": {"syncookies": False, "somaxconn": 128, "max_syn_backlog": -1, "synack_retries": 3}}
    got = _sysctls_for(v, {"net.ipv4.tcp_max_syn_backlog": "4096", "net.ipv4.tcp_synack_retries": "5"})
    assert got["net.ipv4.tcp_max_syn_backlog"] == "4096" and got["net.ipv4.tcp_synack_retries"] == "3"
    v["kernel"]["max_syn_backlog"] = 256
    assert _sysctls_for(v, {"net.ipv4.tcp_max_syn_backlog": "4096"})["net.ipv4.tcp_max_syn_backlog"] == "256"


@pytest.mark.root
def test_the_bed_reads_its_namespaces_defaults_before_any_point(tmp_path):
    from realsys.testbed import DEFAULTED_SYSCTLS, TestBed
    with TestBed() as tb:
        assert set(tb.sysctl_defaults) == set(DEFAULTED_SYSCTLS.values()) and all(tb.sysctl_defaults.values())
        tb.set_sysctls({"net.ipv4.tcp_max_syn_backlog": "317"})      # no kernel's default
        assert tb.read_sysctls(["net.ipv4.tcp_max_syn_backlog"])["net.ipv4.tcp_max_syn_backlog"] == "317"
        assert tb.sysctl_defaults["net.ipv4.tcp_max_syn_backlog"] != "317"


@pytest.mark.root
def test_a_point_at_minus_one_runs_with_the_namespaces_own_syn_backlog(cbuild, tmp_path):
    over = ["kernel.max_syn_backlog=[317, -1]", "workload.rate=300", "scenario.duration=0.3",
            "scenario.warmup=0.1", "realsys.settle_s=0"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["ok", "ok"]
    seen = {}
    for f in (tmp_path / "points").glob("*.json"):
        d = json.loads(f.read_text())
        seen[json.loads(d["config"])["kernel"]["max_syn_backlog"]] = d["sysctls"]["net.ipv4.tcp_max_syn_backlog"]
    assert seen[317] == "317" and seen[-1] != "317", seen


@pytest.mark.root
def test_resume_skips_finished_points(cbuild, tmp_path):
    over = ["workload.rate=[300,400]", "scenario.duration=0.5", "scenario.warmup=0.1"]
    first = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert len(first) == 2
    again = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert again == []                               # nothing left to do
    rows = read_rows(tmp_path / "results.csv")
    assert len(rows) == 2
    # drop one finished row, as if the sweep had been interrupted after the first point
    keep = rows[:1]
    with open(tmp_path / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(COLUMNS))
        w.writeheader()
        w.writerows(keep)
    third = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.point for r in third] == [rows[1]["point"]]
    assert len(read_rows(tmp_path / "results.csv")) == 2
    assert (tmp_path / "throughput.png").exists()


@pytest.mark.parametrize("late_start,late_end,wall,fails", [
    (0.004, 0.002, 3.997, None),            # a loadgen overload point (measured: 2-5 ms late)
    (0.19, 0.0, 3.81, None),                # just inside 5 % of 4 s
    (0.26, 0.003, 3.74, "start 0.26 s late"),   # 4 httperf processes on the clients' CPU
    (0.0, 0.5, 4.5, "end 0.50 s late"),
    (6.69, 2.69, 0.002, "start 6.69 s late"),   # 12 httperf processes: a window of nothing
    (0.0, 0.0, 1.36, "cover 1.36 s of the 4 s window"),
    (0.0, 0.0, None, None),                 # nginx keeps no statistics
])
def test_window_error(late_start, late_end, wall, fails):
    why = window_error(4.0, late_start, late_end, wall)
    if fails is None:
        assert why is None
    else:
        assert why is not None and fails in why


def test_window_error_names_a_short_window_and_httperf_only_when_it_ran():
    # a 10 ms window of loadgen was put on httperf's busy-polling, in "0.00 s" units
    why = window_error(0.01, 0.002, 0.0, None, httperf=False)
    assert "start 2.0 ms late (allowed 0.5 ms of a 0.01 s window)" in why
    assert "lengthen scenario.duration" in why and "httperf" not in why
    assert "httperf busy-polls" in window_error(4.0, 0.26, 0.0, None, httperf=True)
    assert "httperf" not in window_error(4.0, 0.26, 0.0, None, httperf=False)


@pytest.mark.root
def test_a_point_measured_off_its_window_fails_and_is_retried(cbuild, tmp_path):
    """A runner that marks the window late (here a hook that sleeps, as a saturated clients' CPU
    made it: 12 httperf processes put it 6.7 s late) writes the row as failed, with the reason,
    and a rerun measures the point again."""
    over = ["workload.rate=300", "scenario.duration=0.5", "scenario.warmup=0.1"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False,
                        hook=lambda what: time.sleep(0.5))
    assert [r.status for r in recs] == ["failed"]
    assert "window's start" in recs[0].error and "late" in recs[0].error
    rows = read_rows(tmp_path / "results.csv")
    assert [r["status"] for r in rows] == ["failed"] and "late" in rows[0]["error"]
    again = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.status for r in again] == ["ok"]
    assert [r["status"] for r in read_rows(tmp_path / "results.csv")] == ["failed", "ok"]


@pytest.mark.parametrize("kind, died, stop_status, snap, fails", [
    ("userver", None, 0, {"wall_s": 4.0}, None),
    ("nginx", None, 0, None, None),                       # nginx keeps no statistics
    ("userver", -9, -9, None, "was killed by signal 9 during the point"),
    ("knot", 1, 1, {"wall_s": 4.0}, "exited with status 1 during the point"),
    ("knot", None, 0, None, "wrote no statistics"),
    ("userver", None, -6, {"wall_s": 4.0}, "killed by signal 6 when stopped"),
])
def test_server_error(kind, died, stop_status, snap, fails):
    why = server_error(kind, died, stop_status, snap)
    assert (why is None) if fails is None else (why is not None and fails in why), why


def _our_children() -> dict[int, str]:
    """This process's children: {pid: comm}."""
    out = {}
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = st.read_text()
        except OSError:
            continue
        name, rest = text.split("(", 1)[1].rsplit(")", 1)
        if int(rest.split()[1]) == os.getpid():                       # fields: state, ppid
            out[int(st.parent.name)] = name
    return out


def _kill_our_child(comm: str) -> None:
    """SIGKILL this process's child named ``comm`` (the runner spawns the server directly:
    ip netns exec, taskset and nice exec into it)."""
    pid = next((pid for pid, name in _our_children().items() if name == comm), None)
    if pid is None:
        raise AssertionError(f"no child {comm} of {os.getpid()}")
    os.kill(pid, signal.SIGKILL)


@pytest.mark.root
def test_the_runner_marks_windows_in_real_time_and_what_it_starts_does_not(cbuild, tmp_path):
    """The generators' nice -20 left the runner about 1 % of the clients' CPU, and its window
    marks late by 0.05-0.2 s (seconds in one CI run): it runs its points at SCHED_FIFO, reset on
    fork, so the server and the generators it starts are scheduled as before, and it is back
    to its own policy afterwards."""
    seen = {}

    def hook(what):
        seen["runner"] = os.sched_getscheduler(0)
        kids = _our_children()
        seen["children"] = {f"{name}/{pid}": os.sched_getscheduler(pid) for pid, name in kids.items()}
        seen["nice"] = {f"{name}/{pid}": os.getpriority(os.PRIO_PROCESS, pid) for pid, name in kids.items()}

    before = (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority)
    over = ["workload.rate=300", "scenario.duration=0.5", "scenario.warmup=0.1"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False, hook=hook)
    assert [r.status for r in recs] == ["ok"], recs[0].error
    assert seen["runner"] == os.SCHED_FIFO | os.SCHED_RESET_ON_FORK
    # forked real-time (so that a fork is not starved by generators already busy-polling), each
    # drops to SCHED_OTHER at nice -20 in its exec chain (chrt, nice) before its program runs; the
    # server listens by then, a generator may still be `ip netns exec` on its way to loadgen
    programs = {k: v for k, v in seen["children"].items() if k.split("/")[0] in ("userver", "loadgen")}
    assert any(k.startswith("userver/") for k in programs), seen["children"]
    assert all(pol == os.SCHED_OTHER for pol in programs.values()), seen["children"]
    assert all(seen["nice"][k] == runner.NICE for k in programs), seen["nice"]
    assert (os.sched_getscheduler(0), os.sched_getparam(0).sched_priority) == before
    point = json.loads(next((tmp_path / "points").glob("*.json")).read_text())
    assert point["runner_sched"] == "SCHED_FIFO 1"


@pytest.mark.root
def test_twelve_busy_polling_httperf_processes_are_measured_in_their_window(cbuild, tmp_path):
    """Stock httperf holds about 1,000 connections per process, so higher loads need more of
    them, all busy-polling the clients' CPU at nice -20.  Forked at SCHED_OTHER, each later one
    took 0.7-1.5 s from fork to exec and the window was marked 7-15 s late (every such point
    failed); forked real-time, 12 processes start in ~0.2 s and the point is measured."""
    over = ["realsys.httperf=true", "realsys.procs=12", "realsys.spin_us=1000", "workload.rate=4800",
            "scenario.duration=4", "scenario.warmup=0.5", "client.timeout=1"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["ok"], recs[0].error
    assert abs(recs[0].conn_attempts_per_s - 4800) <= 0.05 * 4800, recs[0].conn_attempts_per_s
    point = json.loads(next((tmp_path / "points").glob("*.json")).read_text())
    assert len(point["generator_procs"]) == 12


@pytest.mark.root
def test_httperf_runs_specweb_sessions_from_a_session_log(cbuild, tmp_path):
    """realsys.httperf with the SPECweb99-like workload: stock httperf replays sessions from a
    --wsesslog file, one keep-alive connection each; the server sees one accept a session and
    the session log's requests on it.  A 5 s timeout: with smoke's 1 s, one SYN the kernel
    dropped (retransmitted after 1 s) or a 1 s stall of a shared machine is an httperf error,
    which is not what this test is about (one CI run failed on an unnamed error so)."""
    over = ["realsys.httperf=true", "workload.kind=specweb99", "workload.rate=2000", "client.timeout=5"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["ok"], recs[0].error
    point = json.loads(next((tmp_path / "points").glob("*.json")).read_text())
    procs = point["generator_procs"]
    assert all(g["connections"] > 0 and g["errors"] == 0 and g["status_4xx"] == 0 for g in procs), [
        {k: g[k] for k in ("connections", "errors", "status_4xx", "client_timo", "connreset", "connrefused",
                           "fd_unavail", "addrunavail", "ftab_full")} for g in procs]
    conns, reqs = sum(g["connections"] for g in procs), sum(g["requests"] for g in procs)
    assert 5.5 < reqs / conns < 9.0                     # sessions of mean 7.3 requests
    st = point["server_stats"]
    assert st["replies"] > 4 * st["accepts"] > 0
    assert abs(recs[0].conn_attempts_per_s - 2000 / 7.3) <= 0.05 * 2000 / 7.3


def test_a_runner_the_kernel_keeps_from_real_time_says_so_and_runs_as_it_was():
    """Without CAP_SYS_NICE (dropped from the bounding set, RLIMIT_RTPRIO 0: a user's process)
    the runner stays as it was and says why; with the priority set to 0 it does not try."""
    import resource
    import subprocess
    import sys
    code = ("import os; from realsys import runner\n"
            "with runner.runner_on_time() as how: inside = os.sched_getscheduler(0)\n"
            "runner.RUNNER_FIFO_PRIORITY = 0\n"
            "with runner.runner_on_time() as off: pass\n"
            "print(how, '|', inside, '|', off)")
    drop = ["setpriv", "--bounding-set=-sys_nice", "--inh-caps=-sys_nice"] if os.geteuid() == 0 else []
    p = subprocess.run(drop + [sys.executable, "-c", code], cwd=str(REPO), capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_RTPRIO, (0, 0)))
    assert p.returncode == 0, p.stderr
    how, inside, off = (x.strip() for x in p.stdout.split("|"))
    assert how.startswith("unchanged: ") and "ermi" in how, how        # Operation not permitted
    assert int(inside) == os.SCHED_OTHER
    assert off == "unchanged: RUNNER_FIFO_PRIORITY is 0"


@pytest.mark.root
def test_a_point_whose_server_died_fails(cbuild, tmp_path):
    """A server killed during the point (here SIGKILL as the load starts; the OOM killer does
    the same) left a row "ok" with the replies made before it died: 37 replies/s of 300."""
    over = ["workload.rate=300", "scenario.duration=0.5", "scenario.warmup=0.1", "client.timeout=0.5"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False,
                        hook=lambda what: _kill_our_child("userver"))
    assert [r.status for r in recs] == ["failed"], [(r.status, r.replies_per_s) for r in recs]
    assert "was killed by signal 9 during the point" in recs[0].error, recs[0].error
    assert [r["status"] for r in read_rows(tmp_path / "results.csv")] == ["failed"]


@pytest.mark.parametrize("attempts, fails", [(0, True), (1, False), (5000, False)])
def test_launch_error(attempts, fails):
    why = launch_error(attempts, 0.2, 0.5)
    assert (why is not None) == fails
    if fails:
        assert "no connection was launched" in why and "0.2 conn/s x 0.5 s" in why


@pytest.mark.parametrize("rate, warm, dur, n", [
    (0.2, 0.1, 0.5, 0),         # one connection, at 0, in the warm-up
    (100.0, 0.5, 1.0, 100),     # 150 in all, 50 in the warm-up
    (3.0, 0.0, 1.0, 3),         # at 0, 1/3, 2/3
    (1.0, 0.5, 1.0, 1),         # round(1.5) = 2 connections, at 0 and 1
])
def test_httperf_launches_in_window(rate, warm, dur, n):
    # httperf's own count includes the warm-up's connections: an empty window must be told
    # from its schedule
    assert httperf_launches_in_window(rate, warm, dur) == n


@pytest.mark.root
def test_a_point_whose_window_got_no_connection_fails(cbuild, tmp_path):
    """At 0.2 conn/s the generator launches at the warm-up's start and next 5 s later, past
    a 0.5 s window: nothing was measured, and the row says so instead of 0 replies/s ok."""
    over = ["workload.rate=0.2", "workload.arrivals=deterministic", "realsys.procs=1",
            "scenario.duration=0.5", "scenario.warmup=0.1"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["failed"]
    assert "no connection was launched in the measured window" in recs[0].error, recs[0].error


def test_cli_exits_1_when_a_point_failed(monkeypatch, capsys):
    bad = RunRecord(source="real", point="workload.rate=300", replies_per_s=300.0, status="failed",
                    error="the runner marked the measured window's start 6.69 s late")
    monkeypatch.setattr("realsys.runner.run_scenario", lambda *a, **k: [bad])
    assert cli.main(["run", SMOKE]) == 1
    out, err = capsys.readouterr()
    assert "FAILED" in out and "1 of 1 points failed" in err and "6.69 s late" in err


@pytest.mark.parametrize("status, fails", [
    ({"2xx": 1000}, False),
    ({"2xx": 995, "4xx": 5}, False),            # 0.5 %: not a setup error
    ({"2xx": 0, "4xx": 2000}, True),            # nginx could not read the document root
    ({"2xx": 500, "5xx": 1500}, False),         # load shedding is a result, just not replies
])
def test_status_error(status, fails):
    why = status_error(status)
    assert (why is not None) == fails
    if fails:
        assert "2000 replies" in why and "4xx" in why


@pytest.mark.root
@pytest.mark.skipif(nginx_binary() is None, reason="nginx is installed by make venv / realsys/install-deps.sh")
def test_a_server_answering_403_is_not_full_throughput(cbuild, tmp_path, monkeypatch):
    """nginx's worker (www-data) cannot read a document root under a 0700 folder: every request
    got 403, and the point was recorded ok at 2,000 replies/s for 2,000 req/s offered."""
    import tempfile
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    monkeypatch.setattr(tempfile, "tempdir", str(private))
    over = ["server.kind=nginx", "server.mux=epoll", "server.accept_limit=1", "workload.rate=500",
            "scenario.duration=0.5", "scenario.warmup=0.2", "realsys.procs=1"]
    recs = run_scenario(SMOKE, over, str(tmp_path / "o"), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["failed"], [(r.status, r.replies_per_s) for r in recs]
    assert "were 4xx" in recs[0].error and recs[0].replies_per_s == 0, (recs[0].error, recs[0].replies_per_s)


@pytest.mark.root
def test_a_run_without_bpftrace_says_so_once(cbuild, tmp_path, monkeypatch):
    """Without bpftrace the drop split is counters only (ListenOverflow inside AcceptQFull):
    the console used to look like a normal run's, and only the point files said it."""
    import shutil as _shutil
    from realsys import kernel
    real_which = _shutil.which
    monkeypatch.setattr(kernel.shutil, "which", lambda name, *a, **k: None if name == "bpftrace"
                        else real_which(name, *a, **k))
    lines = []
    over = ["workload.rate=[300, 400]", "scenario.duration=0.3", "scenario.warmup=0.1", "realsys.settle_s=0"]
    recs = run_scenario(SMOKE, over, str(tmp_path), log=lines.append, use_bpf=True)
    assert [r.status for r in recs] == ["ok", "ok"]
    said = [x for x in lines if "bpftrace not installed" in x]
    assert len(said) == 1 and "AcceptQFull+ListenOverflow summed" in said[0], lines


@pytest.mark.parametrize("g, fails", [
    ({"attempts": 10000, "local_errors": 0}, False),
    ({"attempts": 10000, "local_errors": 50}, False),
    ({"attempts": 10000, "local_errors": 300}, True),     # e.g. socket() past the open-files cap
    ({"attempts": 0}, False),                             # httperf: no such count
    ({"attempts": 10000, "local_errors": 0, "unlaunched": 1}, True),   # behind its schedule past its end
])
def test_generator_error(g, fails):
    # local_errors never reached the record or the console: a generator out of descriptors
    # offered less than the rate asked for, and the point read as that rate's
    why = generator_error(g)
    assert (why is not None) == fails
    if fails and "unlaunched" in g:
        assert "never launched 1 of their 10001 connections" in why
    elif fails:
        assert "could not launch 300 of their 10000 connections" in why


@pytest.mark.parametrize("mid, rate, dur, arrivals, fails", [
    (28770.7, 35000.0, 2.0, "deterministic", True),     # a review's run: recorded ok, read as the peak
    (0.9848 * 4383.6, 4383.6, 4.0, "deterministic", False),   # the lowest of the 1,022 committed rows
    (0.96 * 5000.0, 5000.0, 2.0, "deterministic", False),
    (0.94 * 5000.0, 5000.0, 2.0, "deterministic", True),
    (0.90 * 500.0, 500.0, 2.0, "poisson", False),       # 800 expected: 4 sd is 14 %
    (0.80 * 500.0, 500.0, 2.0, "poisson", True),
    (0.94 * 50000.0, 50000.0, 2.0, "poisson", True),    # 4 sd is 2 %: the 5 % floor holds
    (26568.0, 25000.0, 2.0, "deterministic", True),     # caught up from the warm-up into the window
    (1.0085 * 4000.0, 4000.0, 4.0, "deterministic", False),   # the highest of the committed rows
    (1.10 * 500.0, 500.0, 2.0, "poisson", False),
    (0.5 * 35000.0, 35000.0, 1.0, "deterministic", False),   # a middle window under 1 s is not judged
    (40 / 3.2, 10.0, 4.0, "deterministic", True),       # 32 due, 40 counted: off by more than two
    (35 / 3.2, 10.0, 4.0, "deterministic", False),      # 32 due, 35 counted by two processes: two each
    (float("nan"), 5000.0, 2.0, "deterministic", False),  # an interrupted run: nothing to judge
    (None, 5000.0, 2.0, "deterministic", False),        # an older generator's JSON
])
def test_offered_error(mid, rate, dur, arrivals, fails):
    # a generator past what its CPU launches falls behind, and the window is offered less
    g = {} if mid is None else {"achieved_rate_mid": mid, "procs": 2}
    why = offered_error(g, rate, dur, arrivals)
    assert (why is not None) == fails, why
    if fails:
        assert f"{mid:.0f} conn/s in the window's middle 80 %" in why and "realsys.procs" in why
        assert ("below" if mid < rate else "above") in why


def test_merge_sums_the_unlaunched():
    from realsys.loadgen import merge
    assert merge([{"unlaunched": 3}, {"unlaunched": 4}, {}])["unlaunched"] == 7


@pytest.mark.root
def test_an_httperf_point_offers_what_its_clients_launched(cbuild, tmp_path):
    """httperf's "Connection rate" divides its launches by a test duration that includes
    waiting out the last timeout: an audit's 1,500 conn/s point was recorded as 1,077 offered
    and the report called the generator 28 % off.  The row now takes the clients' kernels'
    count of connect()s in the window."""
    over = ["realsys.httperf=true", "realsys.procs=2", "realsys.spin_us=1000", "workload.rate=1200", "scenario.duration=4",
            "scenario.warmup=0.5", "client.timeout=1"]
    # httperf busy-polls the clients' CPU, which the runner shares: on a loaded machine the
    # point may fail runner.window_error, either end marked late (0.24 s of 0.20 allowed, once in
    # CI) or the server's statistics short of the window (3.71 s of 4, once in a fresh-clone
    # run).  The launch rate is counted between the runner's own two reads, so a window that
    # starts seconds late is a slice of the schedule in which httperf's own lag shows, and one
    # that ends late runs past its last launch (a fresh-clone run, 2026-11-29: start 3.05 s late,
    # end 0.23 s, 1,205 launches in 1.18 s = 1,026/s).  So the rate is checked on a point whose
    # window was measured as asked; a starved one is run again, at most twice, after a pause
    # (starvation comes in episodes: three runs in a row 2.0-5.0 s late, the next ones 0.06 s).
    # The cause was the generators' nice -20 against the runner's 0 (about 1 % of the CPU);
    # with the runner at SCHED_FIFO (runner.runner_on_time) 10 of 10 such points were marked
    # within 2 ms, where before 7 of 10 failed, so a retry should now be rare.
    window = ("the measured window's", "the server's statistics cover")
    for attempt in range(3):
        if attempt:
            time.sleep(15)
        out = tmp_path / f"attempt-{attempt}"
        recs = run_scenario(SMOKE, over, str(out), log=lambda m: None, use_bpf=False)
        assert len(recs) == 1 and (recs[0].status == "ok" or any(w in recs[0].error for w in window)), \
            (recs[0].status, recs[0].error)
        if recs[0].status == "ok":
            break
    else:
        pytest.fail(f"the runner was starved of the clients' CPU in 3 runs: {recs[0].error}")
    assert abs(recs[0].conn_attempts_per_s - 1200) <= 0.05 * 1200, recs[0].conn_attempts_per_s
    point = json.loads(next((out / "points").glob("*.json")).read_text())
    g = point["generator"]
    assert g["launches_in_window_kernel"] > 0
    # what httperf itself said, for the record: well short of what it launched
    assert g["achieved_rate"] < 0.9 * 1200, g["achieved_rate"]
    # httperf counts replies over its whole run; the row has the server's count in the window
    srv = point["server_stats"]
    assert point["replies_counted_by"] == "the server, in the window"
    assert recs[0].replies_per_s == pytest.approx(srv["status_2xx"] / srv["wall_s"])


@pytest.mark.parametrize("connections, rcs, launched, fails", [
    ((5, 7), (0, 0), 990.0, None),
    ((5, 7), (0, 0), 900.0, "httperf launched 900 of 1000 conn/s in the window"),
    ((5, 0), (0, 0), 990.0, "1 of 2 httperf processes (gen-1) printed no summary"),
    ((0, 0), (-9, -9), 300.0, "2 of 2 httperf processes (gen-0, gen-1) were still running"),
])
def test_httperf_error(connections, rcs, launched, fails):
    """A point whose httperf processes printed nothing (killed at the drain's end: 12 at 5,600
    conn/s once, after earlier points of the same run) or fell behind their schedule was recorded
    ok at 0 replies/s; it fails, saying which."""
    why = httperf_error([{"connections": n} for n in connections], list(rcs), 1000.0, launched)
    assert (why is None) if fails is None else (fails in why), why


@pytest.mark.root
def test_a_run_interrupted_before_keeping_a_point_leaves_no_empty_folder(cbuild, tmp_path):
    """An interrupted run that kept no point left an empty points/ folder, and the empty OUT
    it had made: points/ is made with the first point kept, and an OUT the run made is
    removed while it is still empty.  An OUT that was there before stays."""
    def ctrl_c(what):
        raise KeyboardInterrupt
    base = ["scenario.duration=0.3", "scenario.warmup=0.1", "workload.rate=[300]"]
    made, there = tmp_path / "made", tmp_path / "there"
    there.mkdir()
    for out in (made, there):
        with pytest.raises(KeyboardInterrupt):
            run_scenario(SMOKE, base, str(out), log=lambda m: None, use_bpf=False, hook=ctrl_c)
    assert not made.exists()
    assert there.is_dir() and list(there.iterdir()) == []
    recs = run_scenario(SMOKE, base, str(made), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["ok"]
    assert len(list((made / "points").glob("*.json"))) == 1


@pytest.mark.root
def test_a_resumed_run_says_when_it_mixes_drop_splits(cbuild, tmp_path):
    # resumed with --no-bpf (or without it), a folder mixed both drop splits without a word
    base = ["scenario.duration=0.3", "scenario.warmup=0.1"]
    run_scenario(SMOKE, base + ["workload.rate=[300]"], str(tmp_path), log=lambda m: None, use_bpf=False)
    said = []
    recs = run_scenario(SMOKE, base + ["workload.rate=[300,400]"], str(tmp_path), log=said.append, use_bpf=True)
    assert [r.status for r in recs] == ["ok"]
    assert any("drop split 'counters only'" in m and "mix" in m for m in said), said


_PLOT_UNDER_CTRL_C = """
import os, signal, sys, time
# Ctrl-C as a terminal gives it: a shell without job control starts a background command with
# SIGINT ignored, and Python then installs no KeyboardInterrupt (a fresh-clone CI started with
# `&` inside a subshell failed here on 2 Dec 2026: both SIGINTs were ignored)
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {root!r})
from realsys import runner
real_plot, runs = runner.plot, []

def hook(what):                       # the first Ctrl-C, during the second point's load
    runs.append(what)
    if len(runs) == 2:
        os.kill(os.getpid(), signal.SIGINT)

def plot(*a, **k):                    # the impatient second one, while plotting
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    return real_plot(*a, **k)

runner.plot = plot
try:
    runner.run_scenario({smoke!r}, ["server.accept_limit=[1,10]", "scenario.duration=0.5",
                        "scenario.warmup=0.1"], {out!r}, log=lambda m: print(m, file=sys.stderr, flush=True),
                        use_bpf=False, hook=hook)
except KeyboardInterrupt:
    print("interrupted", flush=True)
"""


def test_a_second_ctrl_c_while_plotting_still_leaves_the_plot(tmp_path):
    """An audit's case: Ctrl-C pressed again 50 ms apart ended an interrupted run in its
    plot (a KeyboardInterrupt there is no Exception), so the finished points had no
    throughput.png; the run's clean-up now holds it until the plot is written."""
    import subprocess
    import sys

    script = tmp_path / "run.py"
    out = tmp_path / "out"
    script.write_text(_PLOT_UNDER_CTRL_C.format(root=str(REPO), smoke=SMOKE, out=str(out)))
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert p.stdout.strip() == "interrupted", p.stderr[-2000:]
    assert "held until it is done" in p.stderr, p.stderr[-2000:]
    assert len(read_rows(out / "results.csv")) == 1
    assert (out / "throughput.png").stat().st_size > 0


def test_the_c_programs_are_built_only_when_make_says_so(cbuild, tmp_path, monkeypatch):
    # the newest of every source was the test: loadgen.c edited after userver was built made
    # every run say "building C sources" and run make, for nothing
    import shutil
    c = tmp_path / "c"
    shutil.copytree(cbuild, c, ignore=shutil.ignore_patterns("fuzz", "*-asan", "http_test*"))
    now = time.time()
    for f in c.iterdir():               # sources old, binaries new ...
        t = now - 100 if f.name in runner.RUN_BINARIES else now - 1000
        os.utime(f, (t, t))
    os.utime(c / "loadgen.c", (now - 200, now - 200))
    os.utime(c / "userver", (now - 300, now - 300))     # ... but userver older than loadgen.c, not its own
    said = []
    runner.ensure_built(said.append, c)
    assert said == []
    os.utime(c / "userver.c", (now, now))               # a source of userver's own, newer: built
    runner.ensure_built(said.append, c)
    assert said == [f"realsys: building C sources in {c}"] and (c / "userver").stat().st_mtime >= now

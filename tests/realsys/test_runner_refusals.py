"""What realsys refuses before building the test bed, and what it says when a program fails anyway.

Each refusal here was a run that built the test bed, started the programs and then failed
with exit 1 and a message that did not name the key (found by a fresh-user audit)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from realsys import cli, report, runner
from realsys.runner import _C_LIMITS, LOADGEN_MAX_RATE, clean_work
from realsys.servers import nginx_binary, nginx_event_methods
from realsys.testbed import owner_record

REPO = Path(__file__).resolve().parents[2]
SMOKE = str(REPO / "scenarios" / "realsys" / "smoke.toml")
FLAG = {"client.timeout": "--timeout", "scenario.duration": "--duration", "scenario.warmup": "--warmup",
        "realsys.spin_us": "--spin-us", "server.threads": "--threads", "client.think_ms": "--think-ms",
        "client.request_delay_ms": "--request-delay-ms", "workload.zipf_alpha": "--zipf"}


@pytest.mark.parametrize("overrides, key", [
    (["client.timeout=700"], "client.timeout"),                       # was: No such file ... gen-0.json
    (["realsys.spin_us=2000000"], "realsys.spin_us"),                 # was: server exited with status 2
    (["server.kind=knot", "server.threads=200000"], "server.threads"),
    (["scenario.duration=3601"], "scenario.duration"),
    (["scenario.warmup=601"], "scenario.warmup"),
    (["workload.rate=3000000", "realsys.procs=1"], "workload.rate"),
    (["client.think_ms=600001"], "client.think_ms"),
    (["client.request_delay_ms=600001"], "client.request_delay_ms"),
    (["workload.zipf_alpha=101"], "workload.zipf_alpha"),
])
def test_a_value_past_what_the_c_programs_take_is_exit_2_naming_the_key(overrides, key, capsys, tmp_path):
    argv = ["run", SMOKE, "--out", str(tmp_path)]
    for o in overrides:
        argv += ["--set", o]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"scenario key '{key}'" in err and "accepts" in err, err
    assert not (tmp_path / "results.csv").exists()


@pytest.mark.parametrize("overrides, key", [
    # the cgroup write failed with EINVAL (exit 1, "[Errno 22] Invalid argument") once the bed was up
    (["realsys.cpu_quota=0.0009"], "realsys.cpu_quota"),
    # time.sleep overflowed after the first point: a traceback
    (["realsys.settle_s=3601"], "realsys.settle_s"),
])
def test_a_value_the_kernel_or_the_runner_cannot_take_is_exit_2_naming_the_key(overrides, key, capsys, tmp_path):
    argv = ["run", SMOKE, "--out", str(tmp_path)]
    for o in overrides:
        argv += ["--set", o]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"scenario key '{key}'" in err, err
    assert not (tmp_path / "results.csv").exists()


@pytest.mark.parametrize("key, limit, prog", _C_LIMITS + (("workload.rate", LOADGEN_MAX_RATE, "loadgen"),))
def test_the_limits_are_the_c_programs_own(cbuild, key, limit, prog):
    """The limit itself passes the program's option check and just past it does not.  A bad
    --port after it stops the program either way, before it listens or connects."""
    flag = FLAG.get(key, "--rate")

    def refused_for(value):
        p = subprocess.run([str(cbuild / prog), flag, value, "--port", "0"], capture_output=True, text=True,
                           timeout=10)
        assert p.returncode == 2, p.stderr
        return f"{flag}:" in p.stderr

    assert float(limit).is_integer()
    assert not refused_for(str(int(limit)))
    assert refused_for(str(int(limit) + 1))


@pytest.mark.skipif(nginx_binary() is None, reason="nginx is installed by make venv / realsys/install-deps.sh")
def test_an_event_method_this_nginx_lacks_is_refused(capsys, tmp_path):
    # Debian's nginx-light is built without --with-select_module/--with-poll_module
    methods = nginx_event_methods()
    assert methods[0] == "epoll"
    lacking = [m for m in ("select", "poll") if m not in methods]
    for mux in lacking:
        rc = cli.main(["run", SMOKE, "--set", "server.kind=nginx", "--set", "server.accept_limit=1",
                       "--set", f"server.mux={mux}", "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert rc == 2 and "scenario key 'server.mux'" in err and "epoll" in err, err


@pytest.mark.parametrize("name", ["../escape", "a/b", ".."])
def test_a_scenario_name_that_is_not_a_plain_folder_name_is_refused_without_out(name, capsys):
    rc = cli.main(["run", SMOKE, "--set", f'scenario.name="{name}"'])
    err = capsys.readouterr().err
    assert rc == 2 and "scenario key 'scenario.name'" in err and "--out" in err, err
    assert not (REPO / "realsys" / "escape").exists()


@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage\n", b"name,value\nx,1\n"])
def test_a_results_csv_that_is_not_one_is_refused_not_replaced(content, capsys, tmp_path):
    (tmp_path / "results.csv").write_bytes(content)
    rc = cli.main(["run", SMOKE, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("realsys: --out: ") and "move it away" in err, err
    assert (tmp_path / "results.csv").read_bytes() == content


@pytest.mark.parametrize("content", [b"point,config,status,replies_per_s\nx,{},ok\n",
                                     b"point,config,status,replies_per_s\nx,{},ok,1,extra\n"])
def test_a_results_csv_with_a_damaged_row_is_refused_not_replaced(content, capsys, tmp_path):
    # the runner would have rewritten the short row padded with empty cells
    (tmp_path / "results.csv").write_bytes(content)
    rc = cli.main(["run", SMOKE, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "line 2 has" in err and "fields than the header" in err, err
    assert (tmp_path / "results.csv").read_bytes() == content


@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_out_is_refused(capsys, out):
    # it read as no --out: the run wrote into the committed realsys/results/<name>/
    rc = cli.main(["run", SMOKE, "--out", out])
    err = capsys.readouterr().err
    assert rc == 2 and "--out" in err and "empty path" in err, err


def test_report_refuses_a_folder_without_results(capsys, tmp_path):
    # it printed "saturation at None; past it: []" and exited 0: a typo read as an empty result
    with pytest.raises(SystemExit) as e:
        report.main([str(tmp_path / "nonexistent")])
    assert e.value.code == 2 and "no results.csv" in capsys.readouterr().err


def test_clean_removes_work_folders_of_dead_owners_only(tmp_path, monkeypatch):
    monkeypatch.setattr(runner.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    folders = {}
    for what, owner in (("dead", {"owner_pid": dead.pid, "owner_starttime": None}),
                        ("live", owner_record(os.getpid())),
                        ("unowned", None)):
        d = tmp_path / f"realsys-{what}"
        (d / "docroot-1024").mkdir(parents=True)
        if owner:
            (d / runner.OWNER_FILE).write_text(json.dumps(owner))
        folders[what] = d
    assert clean_work() == [str(folders["dead"])]
    assert not folders["dead"].exists() and folders["live"].exists() and folders["unowned"].exists()


@pytest.mark.root
def test_a_run_removes_a_killed_runs_work_folder(cbuild, tmp_path, monkeypatch):
    # only `realsys clean` did; 27 such folders (5 MB each) had piled up on the audit's machine
    monkeypatch.setattr(runner.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / "realsys-killed"
    stale.mkdir()
    (stale / runner.OWNER_FILE).write_text(json.dumps({"owner_pid": dead.pid, "owner_starttime": None}))
    recs = runner.run_scenario(SMOKE, ["workload.rate=300", "scenario.duration=0.3", "scenario.warmup=0.1"],
                               str(tmp_path / "out"), log=lambda m: None, use_bpf=False)
    assert [r.status for r in recs] == ["ok"]
    assert not stale.exists()


@pytest.mark.root
@pytest.mark.parametrize("which", ["server", "generator"])
def test_a_program_that_fails_anyway_has_its_own_message_in_the_error(cbuild, which, monkeypatch, capsys, tmp_path):
    """The programs' logs live in the run's work folder, removed when the run ends: the
    error must carry their last lines.  A bad option appended to the real argv stands in
    for a limit the runner does not know of."""
    if which == "server":
        orig = runner.server_argv
        monkeypatch.setattr(runner, "server_argv", lambda *a, **k: orig(*a, **k) + ["--backlog", "0"])
        needle = "server.log says: userver: --backlog:"
    else:
        orig = runner.loadgen_argv
        monkeypatch.setattr(runner, "loadgen_argv", lambda *a, **k: orig(*a, **k) + ["--timeout", "601"])
        needle = "gen-0.log says: loadgen: --timeout:"
    rc = cli.main(["run", SMOKE, "--no-bpf", "--out", str(tmp_path), "--set", "scenario.duration=0.3",
                   "--set", "scenario.warmup=0.1"])
    err = capsys.readouterr().err
    assert rc == 1 and needle in err, err
    assert not [n for n in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
                if n.startswith(f"sa-{os.getpid()}-")]


def test_without_root_nothing_is_made_before_the_refusal(monkeypatch, capsys, tmp_path):
    # the output folder (and its points/) used to be created, then "needs root" came
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    out = tmp_path / "nr"
    assert cli.main(["run", SMOKE, "--out", str(out)]) == 1
    assert "the test bed needs root" in capsys.readouterr().err
    assert not out.exists()


def test_clean_without_root_is_refused_and_claims_nothing(monkeypatch, capsys):
    # as nobody it printed "removed work folder ..." nine times and removed none
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    assert cli.main(["clean"]) == 1
    err = capsys.readouterr().err
    assert "clean needs root" in err and "removed" not in err


def test_clean_does_not_claim_a_folder_it_could_not_remove(tmp_path, monkeypatch, capsys):
    import shutil
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    d = tmp_path / "realsys-stuck"
    d.mkdir()
    (d / "owner.json").write_text(json.dumps({"owner_pid": 2 ** 22 + 1, "owner_starttime": 1}))
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: None)      # as EACCES would leave it
    lines = []
    assert clean_work(lines.append) == []
    assert lines and "could not remove" in lines[0]


def test_realsys_help_points_to_the_report(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "python -m realsys.report DIR" in " ".join(capsys.readouterr().out.split())


def test_realsys_report_is_a_subcommand_too(capsys):
    """`python -m realsys report DIR` was refused as an invalid choice; it is realsys.report's."""
    d = str(REPO / "realsys" / "results" / "onepacket-select")
    assert report.main([d, "--json"]) == 0
    alone = capsys.readouterr().out
    assert cli.main(["report", d, "--json"]) == 0
    assert capsys.readouterr().out == alone and '"policies"' in alone
    with pytest.raises(SystemExit) as e:
        cli.main(["report", str(REPO / "no-such-folder")])
    assert e.value.code == 2 and "python -m realsys report: error: " in capsys.readouterr().err


def test_a_results_csv_that_is_a_device_is_refused(monkeypatch, capsys, tmp_path):
    # DIR/results.csv linked to /dev/zero was read until MemoryError (the OOM killer, without a
    # limit); not root here, so a refusal that failed could not go on to build a test bed
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    (tmp_path / "results.csv").symlink_to("/dev/zero")
    assert cli.main(["run", SMOKE, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("realsys: --out: ") and "results.csv: not a regular file" in err, err
    with pytest.raises(runner.ResultsFileError, match="not a regular file"):
        os.mkfifo(tmp_path / "fifo.csv")
        runner.read_rows(tmp_path / "fifo.csv")     # a FIFO blocked open() until a writer came


@pytest.mark.parametrize("content", [None, "not,a,results,file\n"])
def test_without_root_bad_input_is_still_exit_2(content, monkeypatch, capsys, tmp_path):
    # the root check came first for a moment: a bad --out or results.csv got "needs root", exit 1
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    if content is None:
        (tmp_path / "f").write_text("keep")
        out = tmp_path / "f"
    else:
        out = tmp_path / "o"
        out.mkdir()
        (out / "results.csv").write_text(content)
    assert cli.main(["run", SMOKE, "--out", str(out)]) == 2
    assert "--out" in capsys.readouterr().err


@pytest.fixture(scope="module")
def startup_s():
    """The interpreter's own start-up (the slowest of three), measured once for the module."""
    def once():
        t = time.monotonic()
        subprocess.run([sys.executable, "-c", "pass"], cwd=REPO, check=True)
        return time.monotonic() - t
    return max(once() for _ in range(3))


@pytest.mark.root
@pytest.mark.parametrize("delay_s", [0.05, 0.1, 0.2])
def test_ctrl_c_while_starting_is_one_line_not_a_traceback(tmp_path, delay_s, startup_s):
    # the modules take about 0.25 s to load; a Ctrl-C then printed KeyboardInterrupt's traceback
    # SIGINT back to its default first: a shell that runs the suite in the background (as CI
    # may) hands it down ignored, and Python then never raises KeyboardInterrupt
    # The delay counts from the end of the interpreter's own start-up (site and the editable
    # install's finder), measured here: a Ctrl-C inside site is CPython's "Fatal Python error:
    # init_import_site" before any code of ours runs (once in CI, on a slow machine, at 0.05 s).
    p = subprocess.Popen([sys.executable, "-m", "realsys", "run", SMOKE, "--out", str(tmp_path / "o")],
                         cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(startup_s + delay_s)
    p.send_signal(signal.SIGINT)
    err = p.communicate(timeout=120)[1]
    assert "Traceback" not in err, err
    # 130 from our handler; -SIGINT if it came before Python set its own handler up
    assert p.returncode in (130, -signal.SIGINT) and ("interrupted" in err or p.returncode < 0), (p.returncode, err)


@pytest.mark.parametrize("overrides, key, says", [
    # simulated client behaviours the real clients do not have: once run silently as the defaults
    (["client.syn_rto=3"], "client.syn_rto", "kernel"),
    (["client.data_rto=0.5"], "client.data_rto", "RTO_min"),
    (["client.timer_lag_ms=1"], "client.timer_lag_ms", "simulated only"),
    (["client.syn_tick_ms=10"], "client.syn_tick_ms", "simulated only"),
    (["client.loop_ms=10"], "client.loop_ms", "simulated only"),
    (["client.orphan_retries=3"], "client.orphan_retries", "tcp_orphan_retries"),
    (["realsys.httperf=true", "client.think_ms=50"], "client.think_ms", "httperf"),
    (["realsys.httperf=true", "client.request_delay_ms=5"], "client.request_delay_ms", "httperf"),
    # and the test bed's fixed network, send buffer, service time and request
    (["network.nics=4"], "network.nics", "two server NICs"),
    (["network.bandwidth_mbps=100"], "network.bandwidth_mbps", "not rate-limited"),
    (["network.delay_ms=20"], "network.delay_ms", "netem"),
    (["network.mss=536"], "network.mss", "1500"),
    (["server.sndbuf=16384"], "server.sndbuf", "autotuning"),
    (["server.service_dist=exponential"], "server.service_dist", "fixed amount"),
    # knot.c has no getevents phase; it ran with the mux's name in its record
    (["server.kind=knot", "server.mux=poll"], "server.mux", "no getevents phase"),
    (["workload.request_bytes=400"], "workload.request_bytes", "request line"),
    # more files than make_docroot builds (were silently capped at 36), or a SPECweb99-like
    # set missing files its clients ask for (404s)
    (["realsys.docroot_files=1000"], "realsys.docroot_files", "at most 36"),
    (["workload.kind=specweb99", "realsys.docroot_files=10"], "realsys.docroot_files", "leave out"),
    # the test bed's RPS steering and the runner's CPU came from the first point alone (2026-12-04)
    (["realsys.cpu_server=[0, 1]"], "realsys.cpu_server", "one test bed serves the whole run"),
    (["realsys.cpu_clients=[0, 1]"], "realsys.cpu_clients", "one test bed serves the whole run"),
    # 1 and 100 were both served as 105 bytes, and recorded as asked (2026-12-04)
    (["workload.reply_bytes=100"], "workload.reply_bytes", "give 105 or more"),
    # subnormal numbers passed every check and loadgen refused them with the test bed up; a
    # fractional spin ran rounded (0.4 as 0), recorded as asked; the generators on the server's
    # CPU measured a shared one (2026-12-04, a review of realsys's input)
    (["workload.zipf_alpha=1e-320"], "workload.zipf_alpha", "too small for loadgen to read"),
    (["scenario.duration=1e-320"], "scenario.duration", "too small for loadgen to read"),
    (["workload.rate=1e-310"], "workload.rate", "too small for loadgen to read"),
    (["realsys.spin_us=0.4"], "realsys.spin_us", "whole microseconds"),
    (["realsys.cpu_clients=0"], "realsys.cpu_clients", "is the server's CPU (0)"),
])
def test_what_the_test_bed_cannot_be_set_to_is_exit_2_naming_the_key(overrides, key, says, capsys, tmp_path):
    argv = ["run", SMOKE, "--out", str(tmp_path)]
    for o in overrides:
        argv += ["--set", o]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert f"scenario key '{key}'" in err and says in err, err
    assert not (tmp_path / "results.csv").exists()


def test_a_set_split_in_two_is_refused_naming_set(capsys, tmp_path):
    # `--set server.accept_limit 1` was argparse's "unrecognized arguments: 1", no word of --set
    assert cli.main(["run", SMOKE, "--out", str(tmp_path), "--set", "server.accept_limit", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("realsys: --set server.accept_limit: expected SECTION.KEY=VALUE as one argument, "
                          "e.g. --set server.accept_limit=1"), err
    assert not (tmp_path / "results.csv").exists()


def test_a_value_nested_past_the_recursion_limit_is_exit_2_naming_the_key(capsys, tmp_path):
    # a RecursionError is a RuntimeError: it was exit 1, "realsys: maximum recursion depth exceeded"
    argv = ["run", SMOKE, "--out", str(tmp_path), "--set", "workload.rate=" + "[" * 5000 + "]" * 5000]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "workload.rate" in err and "nested too deeply to read" in err, err
    assert not (tmp_path / "results.csv").exists()


# --- from a review of realsys's orchestration (2026-12-04); each failed on the code before -------

def test_a_missing_nginx_is_named_as_such(monkeypatch, capsys, tmp_path):
    # it was blamed on server.mux: "this nginx has no 'epoll' event method (it has none found);
    # set server.mux = "epoll""
    monkeypatch.setattr(runner, "nginx_binary", lambda: None)
    monkeypatch.setattr(runner, "nginx_event_methods", lambda: ())
    rc = cli.main(["run", SMOKE, "--set", "server.kind=nginx", "--set", "server.mux=epoll",
                   "--set", "server.accept_limit=1", "--set", "realsys.spin_us=0", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "scenario key 'server.kind'" in err and "nginx is not installed" in err, err


def test_a_file_where_the_points_folder_goes_is_named(capsys, tmp_path):
    # it said "OUT (or a directory above it) exists and is not a directory", OUT being one
    (tmp_path / "points").write_text("")
    assert cli.main(["run", SMOKE, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{str(tmp_path / 'points')!r} exists and is not a directory" in err, err


def test_a_plot_that_fails_when_nothing_is_left_to_measure_is_no_failed_run(monkeypatch, capsys, tmp_path):
    # every point done and throughput.png a folder: "realsys: [Errno 21] Is a directory", exit 1
    from simaccept import load_scenario
    from realsys.runner import append_record
    from simaccept.record import RunRecord
    for p in load_scenario(SMOKE).points():
        append_record(tmp_path / "results.csv", RunRecord(
            source="real", point=p.point_label(), config=p.to_json(), server="userver", mux="select",
            accept_limit="1", workload="one-packet", target_rate=p["workload"]["rate"], replies_per_s=100.0,
            duration_s=1.0, status="ok"))
    (tmp_path / "throughput.png").mkdir()
    monkeypatch.setattr(runner, "ensure_built", lambda log: None)
    monkeypatch.setattr(runner, "check_can_build", lambda *a, **k: None)
    assert cli.main(["run", SMOKE, "--out", str(tmp_path)]) == 0
    assert "no plot" in capsys.readouterr().err

def test_a_folder_of_simulated_rows_is_refused_not_taken_for_measured(capsys, tmp_path):
    # `simaccept sweep smoke.toml --out D` then `realsys run smoke.toml --out D`: "1 points, 1 already
    # in D/results.csv", nothing measured, exit 0
    from simaccept import load_scenario, run_sweep
    run_sweep(load_scenario(SMOKE, ["scenario.duration=0.2", "scenario.warmup=0.1"]), tmp_path, plots=False)
    before = (tmp_path / "results.csv").read_bytes()
    rc = cli.main(["run", SMOKE, "--out", str(tmp_path), "--set", "scenario.duration=0.2",
                   "--set", "scenario.warmup=0.1"])
    err = capsys.readouterr().err
    assert rc == 2 and "holds 'sim' rows, not measured ones" in err, err
    assert (tmp_path / "results.csv").read_bytes() == before

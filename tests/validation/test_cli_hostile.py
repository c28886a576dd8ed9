"""Hostile input to `simaccept fit|predict` and `python -m validation fit|predict`: exit 2 naming
the flag or the file, line and column, no traceback; --out problems refused before anything runs,
and no half-written or temporary file left behind."""
import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simaccept.cli import main
from validation.records import RecordError, load_records

ROOT = Path(__file__).resolve().parents[2]


def _edit(one_run_csv, tmp_path, name, **cells):
    rows = list(csv.DictReader(one_run_csv.open()))
    rows[0].update(cells)
    p = tmp_path / name
    with p.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return p


def _no_litter(d: Path):
    left = [p.name for p in d.iterdir() if p.name.endswith((".tmp", ".probe"))]
    assert not left, f"temporary files left behind: {left}"


@pytest.mark.parametrize("config,why", [("{not json", "not JSON"), ("[1, 2]", "must be a JSON object")])
@pytest.mark.parametrize("cmd", ["fit", "predict"])
def test_bad_config_cell_is_exit_2_naming_file_line_column(one_run_csv, tmp_path, capsys, cmd, config, why):
    bad = _edit(one_run_csv, tmp_path, "bad-config.csv", config=config)
    with pytest.raises(RecordError, match=why) as e:
        load_records(bad)
    assert e.value.column == "config" and e.value.line == 2
    argv = ([cmd, "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "x.toml")]
            if cmd == "fit" else [cmd, "--records", str(bad), "--profile", "thesis-2004"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: column 'config'" in err and why in err


@pytest.mark.parametrize("cmd", ["fit", "predict"])
def test_a_bad_value_in_a_config_cell_names_file_line_and_key(one_run_csv, tmp_path, capsys, cmd):
    # it named the key only ("scenario key 'kernel.backlog': ..."), not which file or row
    import json
    doc = json.loads(next(csv.DictReader(one_run_csv.open()))["config"])
    doc["kernel"]["backlog"] = -4
    bad = _edit(one_run_csv, tmp_path, "bad-value.csv", config=json.dumps(doc))
    argv = ([cmd, "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "x.toml")]
            if cmd == "fit" else [cmd, "--records", str(bad), "--profile", "thesis-2004"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2: column 'config': scenario key 'kernel.backlog'" in err and "Traceback" not in err, err
    # a bad --set is still the flag's fault, not the record's
    rc = main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--set", "kernel.backlog=-4"])
    err = capsys.readouterr().err
    assert rc == 2 and "kernel.backlog" in err and "column 'config'" not in err, err


def test_a_byte_order_mark_is_not_part_of_the_first_column(one_run_csv, tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbf" + one_run_csv.read_bytes())
    assert load_records(p)[0].record.source == "sim"


@pytest.mark.parametrize("cells,why", [
    ({"status": "failed", "error": "server crashed"}, "status failed: not a finished run"),
    ({"target_rate": ""}, "no target rate"),
    ({"replies_per_s": ""}, "no measured value for replies_per_s"),
])
def test_fit_with_nothing_fittable_is_exit_2_and_says_why(one_run_csv, tmp_path, capsys, cells, why):
    bad = _edit(one_run_csv, tmp_path, "nothing.csv", **cells)
    rc = main(["fit", "--records", str(bad), "--params", "select_base", "--metrics", "replies_per_s",
               "--out", str(tmp_path / "x.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and str(bad) in err and why in err
    assert not (tmp_path / "x.toml").exists()


def test_predict_with_nothing_predictable_says_why(one_run_csv, tmp_path, capsys):
    bad = _edit(one_run_csv, tmp_path, "failed.csv", status="failed")
    assert main(["predict", "--records", str(bad), "--profile", "thesis-2004"]) == 2
    assert "status failed: not a finished run" in capsys.readouterr().err


# predict's --out is optional: an empty one means none, so (predict, empty) is no row
@pytest.mark.parametrize("cmd,where", [(c, w) for c in ("fit", "predict") for w in ("existing-dir", "read-only-fs", "empty")
                                       if (c, w) != ("predict", "empty")])
def test_unusable_out_is_exit_2_before_anything_runs(one_run_csv, tmp_path, capsys, monkeypatch, cmd, where):
    import validation.fitter as fitter
    ran = []
    monkeypatch.setattr(fitter.CostFitter, "fit", lambda self, recs: ran.append("fit"))
    monkeypatch.setattr(fitter, "simulate_records", lambda *a, **k: ran.append("sim") or [])
    if where == "existing-dir":
        out = tmp_path / "out.toml"
        out.mkdir()
    elif where == "read-only-fs":
        out = Path("/proc/simaccept-test.toml")
    else:
        out = Path("")
    argv = ([cmd, "--records", str(one_run_csv), "--params", "select_base", "--out", str(out)] if cmd == "fit"
            else [cmd, "--records", str(one_run_csv), "--profile", "thesis-2004", "--out", str(out)])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "Traceback" not in err
    assert ran == [], "refused only after the simulations"
    _no_litter(tmp_path)


def test_fitted_profile_is_written_atomically_and_readable(one_run_csv, tmp_path, capsys, monkeypatch):
    # A write that fails half-way (disk full) leaves neither a partial profile nor a temp file.
    out = tmp_path / "p.toml"
    out.write_text("# the old profile\n[costs]\n")
    import simaccept.sweep as sweep
    import validation.fitter as fitter
    real_fit = fitter.CostFitter.fit

    def full(fd):
        raise OSError(28, "No space left on device")

    def fit_then_disk_full(self, recs):          # the disk fills after the fit, while the profile is written
        r = real_fit(self, recs)
        monkeypatch.setattr(sweep.os, "fsync", full)
        return r
    monkeypatch.setattr(fitter.CostFitter, "fit", fit_then_disk_full)
    rc = main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--out" in err and "No space left on device" in err
    assert out.read_text() == "# the old profile\n[costs]\n"
    _no_litter(tmp_path)
    monkeypatch.undo()
    assert main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--out", str(out)]) == 0
    assert out.stat().st_mode & 0o777 == 0o644 and "[costs]" in out.read_text()
    _no_litter(tmp_path)


def _at_seeds(one_run_csv, many, n: int) -> None:
    """``many``: the one run's row n times, at n seeds (the same row twice is refused as pasted
    twice, by predict as by fit)."""
    import csv
    with one_run_csv.open(newline="") as fh:
        row = next(csv.DictReader(fh))
    with many.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerows({**row, "seed": str(float(row["seed"]) + k)} for k in range(n))


@pytest.mark.parametrize("group", [True, False], ids=["terminal-ctrl-c", "kill-INT-pid"])
def test_ctrl_c_in_python_m_validation_is_130_without_traceback(one_run_csv, tmp_path, group):
    # Eight 20 s simulations queued on one worker: after SIGINT (to the process group, as a
    # terminal sends it, or to the main process only) the queued ones must not be run.
    import signal
    many = tmp_path / "many.csv"
    _at_seeds(one_run_csv, many, 8)
    p = subprocess.Popen([sys.executable, "-m", "validation", "predict", "--records", str(many),
                          "--profile", "thesis-2004", "--set", "scenario.duration=20"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         # a shell's background job (a CI runner's, `cmd &`) starts with SIGINT
                         # ignored, and Python keeps it so: the child must have the default
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    time.sleep(8)
    if group:
        os.killpg(p.pid, signal.SIGINT)
    else:
        p.send_signal(signal.SIGINT)
    try:
        out, err = p.communicate(timeout=150)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 130 and "Traceback" not in err and "interrupted" in err, err[-2000:]


@pytest.mark.parametrize("cmd", ["report", "sensitivity", "window", "seeds", "specweb-idle", "trace"])
@pytest.mark.parametrize("where", ["file", "under-file"])
def test_long_commands_refuse_an_unusable_out_before_running(cmd, where, tmp_path, monkeypatch, capsys):
    # `report --out /dev/null` swept for hours and failed only when writing its first file
    import validation.report
    from validation.cli import main as vmain

    def boom(*a, **k):
        raise AssertionError("ran before the bad --out was refused")
    monkeypatch.setattr(validation.report, "build", boom)
    f = tmp_path / "f"
    f.write_text("keep")
    out = f if where == "file" else f / "sub"
    assert vmain([cmd, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"--out {str(out)!r}" in err and "not a directory" in err and "Traceback" not in err, err
    assert f.read_text() == "keep"


def test_report_with_an_unknown_group_is_exit_2_and_writes_nothing(tmp_path, capsys):
    # `--group nosuchgroup` used to write an empty report (into docs/validation without
    # --out) and exit 0
    from validation.cli import main as vmain
    out = tmp_path / "rep"
    out.mkdir()
    assert vmain(["report", "--group", "userver-one-packet-select", "--group", "nosuchgroup", "--out", str(out),
                  "--cache", str(tmp_path / "cache"), "--quick"]) == 2
    err = capsys.readouterr().err
    assert "--group: no configuration named 'nosuchgroup'" in err and "userver-one-packet-select" in err, err
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("argv, msg", [
    (["--group", "nosuch"], "--group: no configuration named 'nosuch'"),
    (["--profile", "nosuch"], "--profile: no cost profile named 'nosuch'"),
])
def test_a_refused_report_says_only_why(monkeypatch, capsys, argv, msg):
    # `report --group nosuch` announced "a partial report ... goes to out/validation-partial"
    # and then refused the group
    import validation.report as report
    from validation.cli import main as vmain
    monkeypatch.setattr(report, "build", lambda *a, **k: pytest.fail("build() reached"))
    assert vmain(["report", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {msg}") and "partial report" not in err, err


@pytest.mark.parametrize("step", ["inf", "-inf", "nan", "0", "1"])
def test_sensitivity_step_that_is_no_factor_is_exit_2(step, tmp_path, capsys):
    from validation.cli import main as vmain
    assert vmain(["sensitivity", f"--step={step}", "--out", str(tmp_path), "--cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert "--step: must be finite, > 0 and != 1" in err and "Traceback" not in err, err


@pytest.mark.parametrize("cmd, module, fn", [("window", "validation.window", "run"),
                                             ("seeds", "validation.seeds", "run"),
                                             ("sensitivity", "validation.sensitivity", "run"),
                                             ("specweb-idle", "validation.specweb_idle", "run")])
def test_default_out_is_the_repositorys_docs_validation_from_any_directory(cmd, module, fn, tmp_path,
                                                                           monkeypatch):
    # the default was the relative "docs/validation": run elsewhere, it made ./docs/validation there
    import importlib
    from validation.cli import main as vmain
    from validation.report import DEFAULT_OUT
    seen = {}

    class Stop(Exception):
        pass

    def capture(*a, **k):
        seen["out"] = k.get("out")
        raise Stop
    monkeypatch.setattr(importlib.import_module(module), fn, capture)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(Stop):
        vmain([cmd])
    assert Path(seen["out"]) == DEFAULT_OUT and DEFAULT_OUT.is_absolute()
    assert not (tmp_path / "docs").exists()


def test_fit_out_with_a_name_too_long_is_exit_2(one_run_csv, tmp_path, capsys):
    # an OSError traceback (File name too long), exit 1
    assert main(["fit", "--records", str(one_run_csv), "--params", "select_base",
                 "--out", str(tmp_path / ("x" * 300 + ".toml"))]) == 2
    err = capsys.readouterr().err
    assert "File name too long" in err and "Traceback" not in err, err


def test_out_under_a_file_says_it_is_not_a_directory(one_run_csv, tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("")
    assert main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--out", str(f / "x.toml")]) == 2
    err = capsys.readouterr().err
    assert f"{str(f)!r} is not a directory" in err and "does not exist" not in err, err


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP"])
def test_sigterm_or_sighup_to_python_m_validation_is_128_plus_it_without_traceback(one_run_csv, tmp_path, signame):
    # their default action killed the process outright (returncode -15): no word of what was kept,
    # and a worker's finished points not yet collected were lost
    import signal
    sig = getattr(signal, signame)
    many = tmp_path / "many.csv"
    _at_seeds(one_run_csv, many, 4)
    p = subprocess.Popen([sys.executable, "-m", "validation", "predict", "--records", str(many),
                          "--profile", "thesis-2004", "--set", "scenario.duration=20", "--jobs", "2"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True,
                         # a terminal's dispositions, whatever the test runner was started under
                         # (nohup ignores SIGHUP, and the CLI rightly keeps that ignore)
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL))
    try:
        workers = _pool_of(p)
        time.sleep(1.0)
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 128 + sig and f"interrupted by {signame}" in err and "Traceback" not in err, \
        (p.returncode, err[-2000:])
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in workers)


def _pool_of(p: subprocess.Popen) -> set[int]:
    """The two worker pids of ``p``'s pool, once both have started (60 s at most)."""
    workers: set[int] = set()
    deadline = time.time() + 60
    while time.time() < deadline and len(workers) < 2:
        time.sleep(0.2)
        workers = {int(x) for t in Path(f"/proc/{p.pid}/task").iterdir()
                   for x in (t / "children").read_text().split()}
    assert len(workers) == 2, "the pool never started"
    return workers


def test_sigterm_to_predict_with_workers_is_143_at_once_and_leaves_no_worker(one_run_csv, tmp_path):
    # predict's pool was shut down without killing its workers: after SIGTERM the parent
    # waited for the running 20 s simulations (or, killed, left them running)
    import signal
    many = tmp_path / "many.csv"
    _at_seeds(one_run_csv, many, 4)
    p = subprocess.Popen([sys.executable, "-m", "simaccept", "predict", "--records", str(many),
                          "--profile", "thesis-2004", "--set", "scenario.duration=20", "--jobs", "2"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        workers = _pool_of(p)
        time.sleep(1.0)
        t0 = time.monotonic()
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 143 and "interrupted by SIGTERM" in err and "Traceback" not in err, err[-2000:]
    assert took < 10, f"{took:.1f} s: it waited for the running simulations"
    deadline = time.time() + 10
    while time.time() < deadline and any(Path(f"/proc/{w}").exists() for w in workers):
        time.sleep(0.1)
    assert not any(Path(f"/proc/{w}").exists() for w in workers)


@pytest.mark.parametrize("cmd", ["predict", "fit"])
def test_a_worker_killed_outright_in_fit_or_predict_is_one_line_exit_1(one_run_csv, tmp_path, cmd):
    # as in a sweep: a BrokenProcessPool traceback, where the sweep said what happened
    import csv
    import signal
    many = tmp_path / "many.csv"
    with one_run_csv.open(newline="") as fh:
        row = next(csv.DictReader(fh))
    with many.open("w", newline="") as fh:
        # four runs at four seeds: fit refuses a row the same in every column as another
        w = csv.DictWriter(fh, fieldnames=list(row))
        w.writeheader()
        w.writerows({**row, "seed": str(float(row["seed"]) + k)} for k in range(4))
    extra = (["--profile", "thesis-2004"] if cmd == "predict" else
             ["--params", "select_base", "--out", str(tmp_path / "p.toml")])
    p = subprocess.Popen([sys.executable, "-m", "simaccept", cmd, "--records", str(many), *extra,
                          "--set", "scenario.duration=20", "--jobs", "2"],
                         cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        workers = _pool_of(p)
        time.sleep(0.5)
        os.kill(min(workers), signal.SIGKILL)           # as the OOM killer would
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    assert p.returncode == 1, (p.returncode, err[-2000:])
    assert "error: a worker process died before its simulation finished" in err and "Traceback" not in err, err
    assert not (tmp_path / "p.toml").exists()


@pytest.mark.parametrize("argv, partial", [
    (["report", "--quick", "--real-profile", "realsys-linux6"], True),
    (["report", "--group", "userver-one-packet-select", "--real-profile", "realsys-linux6"], True),
    (["report", "--set", "scenario.duration=5", "--real-profile", "realsys-linux6"], True),
    (["report"], True),                                    # no realsys part
    (["report", "--real-profile", "realsys-linux6"], False),   # the committed report's command
])
def test_a_partial_report_does_not_replace_the_committed_one(monkeypatch, capsys, argv, partial):
    # `report --quick --group ...` wrote over docs/validation: 17 thesis cells became 6 and the
    # realsys figures null, without a word.  The simulations are not the subject here: build()
    # only records where it would write.
    import validation.report as report
    from validation.cli import main as vmain
    seen = {}

    def build(out, *a, **k):
        seen["out"] = out
        return {"thesis_throughput_within_10pct": None, "thesis_throughput_cells": 0,
                "thesis_heldout_throughput_within_10pct": None, "thesis_heldout_throughput_cells": 0,
                "policy_order_preserved": None, "groups": []}
    monkeypatch.setattr(report, "build", build)
    assert vmain(argv) == 0
    out, err = capsys.readouterr()
    # the every-role fraction counts the rows the profile was fitted on: the held-out one beside it
    assert "(0 cells, every role); held-out alone None (0 cells)" in out, out
    if partial:
        assert seen["out"] == report.PARTIAL_OUT and "partial report" in err and str(report.DEFAULT_OUT) in err, err
    else:
        assert seen["out"] == report.DEFAULT_OUT and "partial" not in err


_LONG_RUNS = [("validation.report", "build"), ("validation.window", "run"), ("validation.seeds", "run"),
              ("validation.sensitivity", "run"), ("validation.specweb_idle", "run"), ("validation.trace", "run"),
              ("validation.drops", "run"), ("validation.realsys_report", "check")]


def _nothing_runs(monkeypatch):
    import importlib

    def boom(*a, **k):
        raise AssertionError("ran before the bad directory was refused")
    for mod, fn in _LONG_RUNS:
        monkeypatch.setattr(importlib.import_module(mod), fn, boom)


_CACHED = ["report", "sensitivity", "window", "seeds", "trace", "drops"]


@pytest.mark.parametrize("cmd,option", [(c, "--out") for c in _CACHED + ["specweb-idle", "machine-check"]]
                         + [(c, "--cache") for c in _CACHED])
@pytest.mark.parametrize("where", ["read-only-fs", "empty", "file"])
def test_an_unusable_out_or_cache_dir_is_refused_up_front_naming_its_option(cmd, option, where, tmp_path,
                                                                            monkeypatch, capsys):
    # os.access says yes to root on /proc: `report --out /proc/nope` failed after the sweeps with
    # a traceback; --out '' was the default; `--cache afile` was blamed on --out
    from validation.cli import main as vmain
    _nothing_runs(monkeypatch)
    f = tmp_path / "afile"
    f.write_text("keep")
    bad = {"read-only-fs": "/proc/simaccept-test", "empty": "", "file": str(f)}[where]
    argv = [cmd] + (["--results", "realsys/results", "--profile", "realsys-linux6"] if cmd == "machine-check" else [])
    argv += [option, bad] + (["--out", str(tmp_path / "o")] if option == "--cache" else [])
    monkeypatch.chdir(ROOT)
    assert vmain(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option} {bad!r}: ") and "Traceback" not in err, err
    assert f.read_text() == "keep" and sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


@pytest.mark.parametrize("flags,named", [
    (["--real", "/nonexistent.csv", "--real-profile", "realsys-linux6"],
     "--real: /nonexistent.csv: cannot read: No such file or directory"),
    (["--real-profile", "nope"], "--real-profile: no cost profile named 'nope'"),
    (["--real", "realsys/results/onepacket-select/results.csv"], "--real: needs --real-profile"),
])
def test_report_real_options_are_refused_before_any_sweep(flags, named, tmp_path, monkeypatch, capsys):
    # read only after the sweeps (a minute for one --quick group); --real-profile nope was named
    # "scenario key 'costs.profile'", and --real without --real-profile was ignored, exit 0
    import validation.report as report
    from validation.cli import main as vmain

    def boom(*a, **k):
        raise AssertionError("swept before --real/--real-profile were checked")
    monkeypatch.setattr(report, "run_sweep", boom)
    monkeypatch.setattr(report, "realsys_heldout", boom)
    monkeypatch.chdir(ROOT)
    assert vmain(["report", "--quick", "--group", "tux-one-packet", "--out", str(tmp_path / "o"),
                  "--cache", str(tmp_path / "c")] + flags) == 2
    err = capsys.readouterr().err
    assert named in err and "costs.profile" not in err and "Traceback" not in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("where", ["read-only-fs", "directory"])
def test_machine_fit_refuses_an_unwritable_fit_json_before_fitting(where, tmp_path, monkeypatch, capsys):
    # it was written only after the fit
    import validation.machine as machine
    from validation.cli import main as vmain

    def boom(*a, **k):
        raise AssertionError("fitted before --fit-json was checked")
    monkeypatch.setattr(machine, "fit", boom)
    bad = "/proc/simaccept-test/fit.json" if where == "read-only-fs" else str(tmp_path / "d.json")
    if where == "directory":
        (tmp_path / "d.json").mkdir()
    monkeypatch.chdir(ROOT)
    assert vmain(["machine-fit", "--fit-json", bad]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --fit-json {bad!r}: ") and "Traceback" not in err, err

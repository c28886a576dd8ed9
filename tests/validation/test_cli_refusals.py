"""Bad input to `simaccept fit|predict` and `python -m validation fit|predict`, from an audit:
each is refused with exit 2 naming the option and the reason, before anything runs, and
nothing the user gave is overwritten (each test says what happened before)."""
import importlib
from pathlib import Path

import pytest

import simaccept
from simaccept.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_runs(monkeypatch):
    """What ran: a refusal must come before any fit or simulation."""
    import validation.fitter as fitter
    ran = []
    monkeypatch.setattr(fitter.CostFitter, "fit", lambda self, recs: ran.append("fit"))
    monkeypatch.setattr(fitter, "simulate_records", lambda *a, **k: ran.append("sim") or [])
    return ran


def _copy(one_run_csv, tmp_path, name="r2.csv") -> Path:
    p = tmp_path / name
    p.write_bytes(one_run_csv.read_bytes())
    return p


@pytest.mark.parametrize("cmd", ["predict", "fit"])
@pytest.mark.parametrize("how", ["same", "dot", "symlink"])
def test_out_naming_the_records_file_is_refused(one_run_csv, tmp_path, capsys, monkeypatch, no_runs, cmd, how):
    # predict --records r2.csv --out r2.csv replaced the records with its predictions
    rec = _copy(one_run_csv, tmp_path, "r2.toml" if cmd == "fit" else "r2.csv")
    before = rec.read_bytes()
    monkeypatch.chdir(tmp_path)
    out = {"same": rec.name, "dot": f"./{rec.name}", "symlink": "link" + rec.suffix}[how]
    if how == "symlink":
        (tmp_path / out).symlink_to(rec)
    mtime = tmp_path.stat().st_mtime_ns
    argv = ([cmd, "--records", rec.name, "--params", "select_base", "--out", out] if cmd == "fit"
            else [cmd, "--records", rec.name, "--profile", "thesis-2004", "--out", out])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"--out {str(Path(out))!r}: is the --records file" in err and "Traceback" not in err, err
    assert rec.read_bytes() == before and no_runs == []
    # nothing created in the records' directory either: the writability probe came first
    assert tmp_path.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("cache", ["pc.toml", "pc.toml/sub"])
def test_fit_cache_at_the_out_file_is_refused_before_the_fit(one_run_csv, tmp_path, capsys, monkeypatch, no_runs, cache):
    # fit --out pc.toml --cache pc.toml ran the whole fit, made pc.toml the cache directory and
    # then could not write the profile there
    monkeypatch.chdir(tmp_path)
    assert main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--out", "pc.toml",
                 "--cache", cache]) == 2
    err = capsys.readouterr().err
    assert f"--cache {cache!r}: is the --out file" in err and "Traceback" not in err, err
    assert no_runs == [] and not (tmp_path / "pc.toml").exists()


def test_fit_out_over_a_packaged_profile_is_refused(one_run_csv, capsys, no_runs):
    # fit --out simaccept/costs/thesis-2004.toml replaced the shipped profile every analysis uses
    # (thesis-fit and machine-fit refuse to); as a relative path too
    from simaccept.costs import HERE
    target = HERE / "thesis-2004.toml"
    before = target.read_bytes()
    for out in (str(target), str(Path("simaccept/costs/../costs/thesis-2004.toml"))):
        assert main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--out", out]) == 2
        err = capsys.readouterr().err
        assert f"--out {out!r}: is the packaged cost profile 'thesis-2004'" in err and "Traceback" not in err, err
    assert target.read_bytes() == before and no_runs == []


def test_fit_out_over_its_base_profile_is_refused(one_run_csv, tmp_path, capsys, no_runs):
    # the fit overwrote the file it started from, and its header then named itself as the base
    base = tmp_path / "base.toml"
    base.write_bytes((Path(simaccept.__file__).parent / "costs" / "thesis-2004.toml").read_bytes())
    before = base.read_bytes()
    assert main(["fit", "--records", str(one_run_csv), "--params", "select_base", "--base-profile", str(base),
                 "--out", str(base)]) == 2
    err = capsys.readouterr().err
    assert f"--out {str(base)!r}: is the --base-profile file" in err and "Traceback" not in err, err
    assert base.read_bytes() == before and no_runs == []


@pytest.mark.parametrize("cmd", ["predict", "fit"])
def test_records_that_are_a_device_are_exit_2_unread(tmp_path, capsys, no_runs, cmd):
    # predict --records /dev/zero read until a MemoryError
    argv = ([cmd, "--records", "/dev/zero", "--params", "select_base", "--out", str(tmp_path / "p.toml")]
            if cmd == "fit" else [cmd, "--records", "/dev/zero", "--profile", "thesis-2004"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "/dev/zero: not a regular file" in err and "Traceback" not in err, err


@pytest.mark.parametrize("over, why", [("workload.rate=5", "each record sets it from its own columns"),
                                       ("server.accept_limit=10", "each record sets it from its own columns"),
                                       (' costs.profile = "thesis-2004-hand"', "give the profile as --profile")])
def test_predict_set_of_a_record_key_or_the_profile_is_refused(one_run_csv, capsys, no_runs, over, why):
    # predict --set workload.rate=5 simulated every record at 5 req/s and compared it with the
    # record's measurement; --set costs.profile=... silently replaced --profile (fit refuses both)
    assert main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--set", over]) == 2
    err = capsys.readouterr().err
    assert f"--set: {over.split('=')[0].strip()}: {why}" in err and "Traceback" not in err, err
    assert no_runs == []


@pytest.mark.parametrize("cmd", ["predict", "fit"])
def test_a_metric_given_twice_is_refused(one_run_csv, tmp_path, capsys, no_runs, cmd):
    # predict printed every row twice (and counted it twice in the median); fit counted its
    # residuals twice, a weight of 2 nobody asked for
    argv = ([cmd, "--records", str(one_run_csv), "--params", "select_base", "--out", str(tmp_path / "p.toml")]
            if cmd == "fit" else [cmd, "--records", str(one_run_csv), "--profile", "thesis-2004"])
    assert main(argv + ["--metrics", "replies_per_s,accept_rate,replies_per_s"]) == 2
    err = capsys.readouterr().err
    assert "--metrics: given more than once: replies_per_s" in err and "Traceback" not in err, err
    assert no_runs == []


def test_thesis_fit_metric_given_twice_is_refused(capsys, monkeypatch):
    import validation.thesis_fit as tf
    from validation.cli import main as vmain
    monkeypatch.setattr(tf, "fit", lambda *a, **k: pytest.fail("fitted"))
    assert vmain(["thesis-fit", "--metrics", "replies_per_s,replies_per_s"]) == 2
    assert "--metrics: given more than once: replies_per_s" in capsys.readouterr().err


@pytest.fixture
def nothing_runs(monkeypatch):
    """Every analysis and fit python -m validation can start fails the test if it starts."""
    import validation.machine as machine
    import validation.phases as phases
    import validation.report as report
    import validation.specweb_idle as specweb_idle
    import validation.thesis_fit as thesis_fit
    import validation.trace as trace
    for mod, name in ((thesis_fit, "fit"), (thesis_fit, "check"), (machine, "fit"), (specweb_idle, "run"),
                      (trace, "run"), (phases, "run"), (report, "run_report")):
        monkeypatch.setattr(mod, name, lambda *a, _n=f"{mod.__name__}.{name}", **k: pytest.fail(f"{_n} ran"))


SELECT = "realsys/results/onepacket-select/results.csv"


@pytest.mark.parametrize("argv, msg", [
    # found by an audit on 2026-12-05; each ran (or began to) with the input taken for another
    (["machine-fit", "--profile", ""], "--profile: an empty name"),              # refitted realsys-linux6
    (["thesis-fit", "--params", ""], "--params: none given"),                    # the whole fit
    (["thesis-fit", "--start", ""], "--start: an empty name"),                   # from thesis-2004-hand
    (["thesis-fit", "--params", "select_base,select_base"], "--params: given more than once: select_base"),
    (["thesis-fit", "--check", "--params", "select_base"], "--check: prints the residuals"),   # ignored
    (["thesis-fit", "--check", "--start", "thesis-2004-hand"], "--start belong to a fit"),
    (["specweb-idle", "--per-kb-factors", ""], "--per-kb-factors: not a comma-separated list"),  # "1" only
    (["specweb-idle", "--think-ms", "0,,25"], "--think-ms: not a comma-separated list"),   # the item dropped
    (["specweb-idle", "--think-ms", "0,25,25.0"], "--think-ms: given more than once: 25"),
    (["specweb-idle", "--think-ms", "-5"], "--think-ms: -5: each must be a finite number >= 0"),
    (["trace", "--rows", "userver/one-packet/select/accept-1@27000,userver/one-packet/select/accept-1@27000"],
     "--rows: given more than once"),                                            # traced twice
    (["phases", "--rows", "a,a"], "--rows: given more than once: a"),
    (["report", "--real-profile", ""], "--real-profile: an empty name"),         # no realsys section
    (["fit", "--records", SELECT, "--params", "user_per_request", "--base-profile", "", "--out",
      "out/never-written.toml"], "--base-profile: an empty name"),              # a whole fit from thesis-2004
    (["machine-fit", "--results", SELECT, "--profile", "realsys-x"], f"--results: {SELECT}: not a directory"),
    (["machine-check", "--results", SELECT, "--profile", "realsys-linux6", "--out", "out/never"],
     f"--results: {SELECT}: not a directory"),                                   # "no such directory"
    (["report", "--real", SELECT, "--real", "./" + SELECT, "--real-profile", "realsys-linux6"],
     "is the file given before as"),                                             # held out twice
])
def test_python_m_validation_refuses_by_option_before_anything_runs(argv, msg, capsys, nothing_runs, monkeypatch):
    from validation.cli import main as vmain
    monkeypatch.chdir(ROOT)
    assert vmain(argv) == 2
    err = capsys.readouterr().err
    assert msg in err and "Traceback" not in err, err


def test_thesis_fit_names_its_own_options(capsys, monkeypatch):
    # "params: duplicate names", "sim_overrides: ..." and "give the profile as base_profile
    # (--base-profile)", an option thesis-fit does not have
    from validation.cli import main as vmain
    monkeypatch.chdir(ROOT)
    assert vmain(["thesis-fit", "--set", "costs.profile=thesis-2004-hand"]) == 2
    err = capsys.readouterr().err
    assert "--set: costs.profile: give the profile as --start" in err, err


@pytest.mark.parametrize("out", ["", " "])
def test_predict_out_empty_is_refused(one_run_csv, capsys, no_runs, out):
    # predict --out "" was taken for no --out: the rows were printed and nothing written (fit refuses it)
    assert main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--out", out]) == 2
    err = capsys.readouterr().err
    assert f"--out {out!r}: give a file name" in err and no_runs == [], err


def test_predict_cache_keeps_its_simulations_and_refuses_a_file(one_run_csv, tmp_path, capsys, monkeypatch):
    import validation.fitter as fitter
    ran = []
    real = fitter._simulate_json
    monkeypatch.setattr(fitter, "_simulate_json", lambda js, src: ran.append(js) or real(js, src))
    short = ["--set", "scenario.warmup=0.1", "--set", "scenario.duration=0.2"]
    argv = ["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--cache", str(tmp_path / "c"), *short]
    assert main(argv) == 0
    first = capsys.readouterr().out
    assert main(argv + ["--metrics", "replies_per_s,accept_rate"]) == 0
    assert len(ran) == 1 and len(list((tmp_path / "c").glob("*.json"))) == 1
    assert first.splitlines()[1] in capsys.readouterr().out
    (tmp_path / "f").write_text("")
    assert main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--cache", str(tmp_path / "f")]) == 2
    assert "--cache " in capsys.readouterr().err and len(ran) == 1


@pytest.mark.parametrize("cmd", ["report", "fit", "phases", "thesis-fit", "predict"])
def test_a_set_split_in_two_is_refused_naming_set(capsys, no_runs, cmd):
    # `--set scenario.duration 5` was argparse's "unrecognized arguments: 5", no word of --set
    from validation.cli import main as vmain
    try:
        rc = vmain([cmd, "--set", "scenario.duration", "5"])
    except SystemExit as e:
        rc = e.code
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --set scenario.duration: expected SECTION.KEY=VALUE as one "
                                      "argument, e.g. --set scenario.duration=5"), err
    assert no_runs == []


def test_a_split_set_on_a_subcommand_without_set_is_argparses_refusal(capsys, no_runs):
    # sensitivity takes no --set: the advice to write --set scenario.duration=5 was refused again
    from validation.cli import main as vmain
    with pytest.raises(SystemExit) as e:
        vmain(["sensitivity", "--set", "scenario.duration", "5"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "expected SECTION.KEY=VALUE" not in err and "--set" in err, err
    assert no_runs == []


# the analyses other than fitting (a review of 4 Dec): a malformed --profile file, a --step that makes a cost
# infinite, and a run other than the committed one with no --out
@pytest.mark.parametrize("cmd", ["window", "seeds", "trace", "drops", "phases", "specweb-idle", "sensitivity"])
@pytest.mark.parametrize("text", ["[costs]\nselect_base = -5\n", "select_base = 3\n"])
def test_a_malformed_profile_file_is_refused_naming_the_flag(cmd, text, tmp_path, capsys):
    # a negative cost or a profile without its [costs] table: a ValueError traceback, exit 1
    from validation.cli import main as vmain
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    assert vmain([cmd, "--profile", str(bad), "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --profile: ") and str(bad) in err, err
    assert not (tmp_path / "o").exists()


def test_a_step_that_makes_a_cost_infinite_is_refused_naming_the_flag(tmp_path, capsys):
    # --step 1e308: costs.select_base = inf, a ScenarioError traceback, exit 1
    from validation.cli import main as vmain
    assert vmain(["sensitivity", "--step", "1e308", "--rows", "userver/specweb99/select/accept-1@26000",
                  "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --step: 1e+308 makes ") and "infinite" in err, err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("argv, module, partial", [
    (["seeds", "--seeds", "1"], "validation.seeds", True),
    (["trace", "--rows", "userver/one-packet/select/accept-1@27000"], "validation.trace", True),
    (["trace", "--until", "40"], "validation.trace", True),
    (["window", "--profile", "thesis-2004-hand"], "validation.window", True),
    (["drops", "--profile", "thesis-2004-hand"], "validation.drops", True),
    (["specweb-idle", "--think-ms", "0"], "validation.specweb_idle", True),
    (["sensitivity", "--step", "1.5"], "validation.sensitivity", True),
    (["seeds"], "validation.seeds", False),          # the committed pages' own commands
    (["trace", "--seeds", "4", "--step", "20"], "validation.trace", False),
    (["window"], "validation.window", False),
])
def test_a_partial_analysis_does_not_replace_the_committed_page(monkeypatch, argv, module, partial):
    # as report and phases: a run other than the committed one goes to out/validation-partial when
    # no --out is given, not over docs/validation/<analysis>.{md,json}, which the report reads
    from validation import report
    from validation.cli import main as vmain
    seen = {}

    def run(*a, out=None, **k):
        seen["out"] = out
        raise KeyboardInterrupt         # nothing is simulated: only where it would write
    monkeypatch.setattr(importlib.import_module(module), "run", run)
    assert vmain(argv) == 130
    assert str(seen["out"]) == str(report.PARTIAL_OUT if partial else report.DEFAULT_OUT), argv


KNOT = "realsys/results/onepacket-knot/results.csv"


@pytest.mark.parametrize("cmd", ["predict", "fit"])
@pytest.mark.parametrize("records, over, says", [
    (None, "scenario.duration=[1, 2]", "scenario key 'scenario.duration': is a sweep axis (a list); a record is "
                                       "simulated at one point: give one value"),
    (KNOT, "workload.idle_conns=5", "scenario key 'workload.idle_conns': only the userver model holds idle"),
    (KNOT, 'server.service_dist="exponential"', "scenario key 'server.service_dist': only the userver model"),
])
def test_a_set_the_simulation_would_refuse_is_exit_2_before_any_run(one_run_csv, capsys, monkeypatch, cmd,
                                                                     records, over, says):
    # found by an audit on 2026-12-07: predict raised it in a worker, a 30-line traceback; fit
    # said it with advice for the Python API (load_scenario(..., overrides=[...]))
    import validation.fitter as fitter
    monkeypatch.chdir(ROOT)
    monkeypatch.setattr(fitter, "_simulate_json", lambda *a, **k: pytest.fail("a simulation ran"))
    argv = [cmd, "--records", records or str(one_run_csv), "--set", over]
    argv += (["--profile", "realsys-linux6"] if cmd == "predict" else
             ["--params", "user_per_request", "--base-profile", "realsys-linux6", "--out", "out/never-written.toml"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err and "load_scenario" not in err, err
    assert not (ROOT / "out" / "never-written.toml").exists()


@pytest.mark.parametrize("cmd", ["predict", "fit"])
def test_a_record_whose_own_config_is_a_sweep_is_named_by_file_and_line(tmp_path, capsys, monkeypatch, cmd):
    import csv
    import json

    import validation.fitter as fitter
    monkeypatch.setattr(fitter, "_simulate_json", lambda *a, **k: pytest.fail("a simulation ran"))
    rows = list(csv.DictReader(open(ROOT / KNOT, newline="")))[:2]
    doc = json.loads(rows[1]["config"])
    doc["client"]["timeout"] = [1, 2]
    rows[1]["config"] = json.dumps(doc)
    bad = tmp_path / "r.csv"
    with open(bad, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    argv = [cmd, "--records", str(bad)]
    argv += (["--profile", "realsys-linux6"] if cmd == "predict" else
             ["--params", "user_per_request", "--base-profile", "realsys-linux6", "--out", str(tmp_path / "p.toml")])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: knot/one-packet/-/accept-" in err and "cannot be simulated as measured: scenario key " \
        "'client.timeout': is a sweep axis" in err and "Traceback" not in err, err


def test_predict_refuses_a_row_pasted_twice_as_fit_does(one_run_csv, tmp_path, capsys, no_runs):
    # a review's case: fit refused a row the same in every column as another, predict printed it
    # twice and counted it twice in its median ("over 3 record(s)")
    text = one_run_csv.read_text()
    twice = tmp_path / "twice.csv"
    twice.write_text(text + text.splitlines(keepends=True)[1])
    rc = main(["predict", "--records", str(twice), "--profile", "thesis-2004"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{twice}:3: " in err and f"is the same in every column as {twice}:2 (item 0)" in err, err
    assert no_runs == []

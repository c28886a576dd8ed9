"""The ``simaccept`` command line: an unusable output or scheduler is refused with
exit status 2, naming the option, before any point is simulated."""
import importlib
import json
import time
from pathlib import Path

import pytest

from simaccept import cli, simulate
from simaccept.record import RunRecord
from simaccept.scenario import ScenarioError

# simaccept.sweep is also the name of a function the package exports: take the module.
sweep = importlib.import_module("simaccept.sweep")
REPO = Path(__file__).resolve().parents[2]

SMALL = """
[scenario]
name = "cli-test"
duration = 0.3
warmup = 0.1
[workload]
rate = [2000, 6000]
"""


@pytest.fixture
def spec(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(SMALL)
    return p


@pytest.fixture
def no_simulation(monkeypatch):
    """Fail the test if any point is simulated."""
    def boom(*a, **k):
        raise AssertionError("a point was simulated before the bad option was refused")
    monkeypatch.setattr(sweep, "_run_point", boom)


@pytest.mark.parametrize("where", ["file", "under-file", "empty", "proc"])
def test_sweep_out_that_cannot_be_a_directory_is_refused_before_running(tmp_path, spec, no_simulation,
                                                                       capsys, where):
    f = tmp_path / "afile"
    f.write_text("not a directory\n")
    out = {"file": str(f), "under-file": str(f / "sub"), "empty": "", "proc": "/proc/no/such/dir"}[where]
    assert cli.main(["sweep", str(spec), "--out", out, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "error: --out: " in err and "scenario key" not in err and "Traceback" not in err
    assert f.read_text() == "not a directory\n"
    if where == "proc":     # not "No such file or directory" alone, about a directory that is there
        assert "cannot write in '/proc': it accepts no new files" in err, err


def test_sweep_out_with_a_name_too_long_is_refused_before_running(tmp_path, spec, no_simulation, capsys):
    # an OSError traceback (File name too long), exit 1
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / ("x" * 300)), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "error: --out: cannot use" in err and "File name too long" in err and "Traceback" not in err, err


@pytest.mark.parametrize("name", ["results.csv", "results.parquet"])
def test_sweep_whose_results_file_is_a_directory_is_refused_before_running(tmp_path, spec, no_simulation,
                                                                          capsys, name):
    # found only after every point had run, as an IsADirectoryError traceback
    (tmp_path / "o" / name).mkdir(parents=True)
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "error: --out: " in err and f"{name}' is a directory" in err and "Traceback" not in err, err


def test_sweep_whose_point_file_is_a_directory_is_refused_before_running(tmp_path, spec, no_simulation, capsys):
    # found only after that point had run, as an IsADirectoryError traceback
    from simaccept.scenario import load_scenario
    from simaccept.sweep import _cache_name, policy_key
    p = load_scenario(spec).points()[0]
    name = _cache_name(p, policy_key(p["server"]["policy"]))
    (tmp_path / "o" / "points" / name).mkdir(parents=True)
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "error: --out: " in err and f"{name}' is a directory" in err and "Traceback" not in err, err


def test_refused_scenario_creates_no_out_directory(tmp_path, spec, capsys):
    out = tmp_path / "o"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--set", "server.kind=nginx", "--no-progress"]) == 2
    assert "server.kind" in capsys.readouterr().err and not out.exists()


def test_sweep_out_missing_directory_is_created(tmp_path, spec):
    out = tmp_path / "a" / "b"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress"]) == 0
    assert len(sweep.read_csv(out / "results.csv")) == 2


def test_run_sweep_fails_on_a_bad_out_before_simulating(tmp_path, no_simulation):
    from simaccept import load_scenario
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(ScenarioError, match="^out: ") as e:
        sweep.run_sweep(load_scenario(text=SMALL), f, plots=False)
    assert e.value.key == "--out"


def test_figures_out_that_is_a_file_is_refused_before_running(tmp_path, monkeypatch, capsys):
    import simaccept.figures as figures

    def boom(*a, **k):
        raise AssertionError("a sweep ran before the bad --out was refused")
    monkeypatch.setattr(figures, "run_sweeps", boom)
    f = tmp_path / "afile"
    f.write_text("x")
    assert cli.main(["figures", "--out", str(f)]) == 2
    err = capsys.readouterr().err
    assert "error: --out: " in err and "scenario key" not in err and "Traceback" not in err


def test_sweep_unreachable_dask_scheduler_is_a_clean_error(tmp_path, spec, capsys):
    pytest.importorskip("dask.distributed")
    import dask
    with dask.config.set({"distributed.comm.timeouts.connect": "1s"}):
        rc = cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--dask", "tcp://127.0.0.1:1",
                       "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "error: --dask: " in err and "tcp://127.0.0.1:1" in err and "Traceback" not in err


@pytest.mark.parametrize("cmd,kept", [("sweep", "no point finished in this run"), ("predict", "nothing written"),
                                      ("run", "nothing written")])
def test_interrupt_message_says_what_is_kept(tmp_path, spec, monkeypatch, capsys, cmd, kept):
    # Ctrl-C used to print "finished points are kept" for every command, though only
    # sweep (and figures) cache points; an interrupted predict or fit keeps nothing.
    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "run_sweep", interrupted)
    import validation.cli
    monkeypatch.setattr(validation.cli, "predict_main", interrupted)
    import simaccept.sim
    monkeypatch.setattr(simaccept.sim, "simulate", interrupted)
    argv = {"sweep": ["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress"],
            "predict": ["predict", "--records", "r.csv", "--profile", "thesis-2004"],
            "run": ["run", str(spec), "--set", "workload.rate=2000"]}[cmd]
    assert cli.main(argv) == 130
    err = capsys.readouterr().err
    assert kept in err and "interrupted" in err and "are kept" not in err


def test_interrupted_sweep_counts_the_points_it_kept(tmp_path, spec, monkeypatch, capsys):
    # "finished points are kept" was said with none finished, and named no folder
    out = tmp_path / "o"
    (out / "points").mkdir(parents=True)
    (out / "points" / "earlier.json").write_text("{}")

    def two_then_ctrl_c(sc, out_dir, *, on_point=None, **kw):
        for i in range(2):
            (out / "points" / f"p{i}.json").write_text("{}")
            on_point(RunRecord(status="ok"))
        on_point(RunRecord(status="failed"))     # not kept: a failed point is run again
        raise KeyboardInterrupt
    monkeypatch.setattr(sweep, "run_sweep", two_then_ctrl_c)
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress"]) == 130
    err = capsys.readouterr().err
    assert f"the 2 points finished in this run are kept in {out / 'points'}; {out / 'points'} holds 3 in all" in err


def test_pool_is_no_bigger_than_the_points_left(tmp_path, monkeypatch):
    # `sweep --jobs 64` on an 8-point grid forked 64 workers (fork start method spawns
    # max_workers up front), 56 of them idle: a typo'd --jobs 1000 forks 1000 processes.
    from simaccept import load_scenario
    seen = []
    real = sweep.ProcessPoolExecutor

    def recording(max_workers=None, **kw):
        seen.append(max_workers)
        return real(max_workers=max_workers, **kw)
    monkeypatch.setattr(sweep, "ProcessPoolExecutor", recording)
    recs = sweep.run_sweep(load_scenario(text=SMALL), tmp_path / "o", jobs=64, plots=False)
    assert len(recs) == 2 and seen == [2]


@pytest.mark.parametrize("argv,shown", [
    (["sweep", "{spec}", "--jobs", "0", "--out", "{tmp}/o"], "error: --jobs: must be >= 1, got 0"),
    (["run", "{tmp}/nosuch.toml"], "error: scenario file: cannot read"),
    (["run", "{spec}", "--set", "workload.rate=-1"], "error: scenario key 'workload.rate': must be > 0"),
])
def test_error_names_a_flag_a_file_or_a_scenario_key(tmp_path, spec, capsys, argv, shown):
    # a command-line flag or the file itself was called a "scenario key" ('--jobs', '<file>')
    rc = cli.main([a.format(spec=spec, tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(shown), err


@pytest.mark.parametrize("text", ["\n", "# only a comment\n\n  # another\n", "\ufeff"])
def test_a_scenario_file_that_sets_no_key_runs_on_defaults_with_a_warning(tmp_path, capsys, text):
    # a file of comments ran on every default without the warning an empty file got
    from simaccept.cli import main
    empty = tmp_path / "empty.toml"
    empty.write_text(text)
    assert main(["run", str(empty), "--set", "scenario.duration=0.2", "--set", "scenario.warmup=0.1",
                 "--set", "workload.rate=1000"]) == 0
    assert "sets no key: every key not given with --set takes its default" in capsys.readouterr().err


def test_a_livelocked_run_fails_with_the_reason_and_no_traceback(capsys):
    # at 150,000 req/s kernel packet work kept the server in one call from before the end of
    # warm-up to after the stop: a RuntimeError traceback said "duration too short?"
    argv = ["run", str(REPO / "scenarios/thesis/userver-onepacket.toml"), "--set", "server.accept_limit=inf",
            "--set", "scenario.warmup=2", "--set", "scenario.duration=2", "--set", "workload.rate=150000"]
    assert cli.main(argv) == 1
    out, err = capsys.readouterr()
    assert out == "" and "Traceback" not in err, err
    assert err.startswith("error: the run failed: MeasurementError: no server call ended between the end of "
                          "warm-up (2 s) and the stop (4 s)"), err
    assert "Kernel packet work took 100% of the CPU" in err and "receive livelock" in err, err
    assert cli.main(argv + ["--json"]) == 1
    rec = json.loads(capsys.readouterr().out)
    assert rec["status"] == "failed" and rec["error"].startswith("MeasurementError: no server call ended")


def test_a_run_with_no_load_in_its_window_warns(tmp_path, capsys):
    # scenario.duration=1e-9 printed "0 replies/s ... mean response nan ms" and nothing else
    p = tmp_path / "one.toml"
    p.write_text(SMALL.replace("rate = [2000, 6000]", "rate = 2000"))
    assert cli.main(["run", str(p), "--set", "scenario.duration=1e-9"]) == 0
    err = capsys.readouterr().err
    assert "warning: no connection was offered in the 1e-09 s measured window" in err, err
    assert cli.main(["run", str(p)]) == 0
    assert "warning" not in capsys.readouterr().err


def test_sweeping_a_key_only_realsys_reads_warns(tmp_path, spec, capsys):
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress",
                     "--set", "workload.rate=2000", "--set", "realsys.httperf=[false, true]"]) == 0
    err = capsys.readouterr().err
    assert "warning: the simulator does not read realsys.httperf" in err, err
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "p"), "--no-progress",
                     "--set", "workload.rate=2000", "--set", "realsys.spin_us=[0, 5]"]) == 0
    assert "does not read" not in capsys.readouterr().err          # spin_us is simulated too


def test_sweeping_the_request_size_warns_since_no_model_reads_it(tmp_path, spec, capsys):
    # workload.request_bytes is in the schema, and a sweep over it gave "ok" points that differ
    # only in their random stream, without a word
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress", "--no-table",
                     "--set", "workload.rate=2000", "--set", "workload.request_bytes=[80, 60000]"]) == 0
    assert "warning: the simulator does not read workload.request_bytes" in capsys.readouterr().err
    # the warning's ground: the same point at another size is the same run (once the model
    # reads it, this fails, and the key leaves SIM_IGNORES)
    small, big = (cli.load_scenario(str(spec), ["workload.rate=2000", f"workload.request_bytes={b}"])
                  for b in (80, 60000))
    a, b = simulate(small), simulate(big)
    assert (a.replies_per_s, a.resp_ms_mean, a.cpu_share_kernel_net) == (b.replies_per_s, b.resp_ms_mean,
                                                                         b.cpu_share_kernel_net)


def test_run_warns_when_the_scenario_sets_the_request_size(spec, capsys):
    # a sweep along workload.request_bytes warned; a run at 60,000 bytes printed the 80-byte
    # run's figures without a word
    assert cli.main(["run", str(spec), "--set", "workload.rate=2000", "--set", "workload.request_bytes=60000"]) == 0
    assert "warning: the simulator does not read workload.request_bytes" in capsys.readouterr().err
    assert cli.main(["run", str(spec), "--set", "workload.rate=2000"]) == 0
    assert "does not read" not in capsys.readouterr().err


def test_dask_local_has_jobs_workers(tmp_path, spec, monkeypatch):
    pytest.importorskip("dask.distributed")
    import dask.distributed
    seen = {}

    class Probe(Exception):
        pass

    def cluster(**kw):
        seen.update(kw)
        raise Probe
    monkeypatch.setattr(dask.distributed, "LocalCluster", cluster)
    with pytest.raises(Probe):
        sweep.run_sweep(cli.load_scenario(str(spec)), tmp_path / "o", jobs=3, dask="local", plots=False)
    assert seen["n_workers"] == 3


def test_every_sweep_and_figures_option_has_help():
    p = cli._parser()
    subs = next(a for a in p._actions if a.dest == "cmd").choices
    for name in ("run", "sweep", "figures"):
        for a in subs[name]._actions:
            if a.dest != "help":
                assert a.help, f"{name} {a.option_strings or a.dest} has no help"
    assert "``" not in p.description


def test_fit_help_states_the_base_profile_default():
    # Without --base-profile a fit starts from thesis-2004 and keeps its costs for every cost
    # it does not fit: a newcomer fitting their own runs could not see that from --help.
    p = cli._parser()
    fit = next(a for a in p._actions if a.dest == "cmd").choices["fit"]
    base = next(a for a in fit._actions if a.dest == "base_profile")
    assert f"default {base.default}" in base.help


def test_run_of_a_sweep_names_every_axis_and_how_to_fix_them(capsys):
    # `simaccept run thesis/userver-onepacket` named only server.accept_limit; fixing it
    # with --set was refused again, for workload.rate.  Every axis is named, and the
    # --set example it gives fixes them all.
    assert cli.main(["run", "thesis/userver-onepacket"]) == 2
    err = capsys.readouterr().err
    assert "server.accept_limit" in err and "workload.rate" in err, err
    example = err.split("(e.g. ", 1)[1].split(")", 1)[0].split()
    sets = [example[i + 1] for i in range(0, len(example), 2) if example[i] == "--set"]
    assert sets == ["server.accept_limit=1", "workload.rate=10000"], err
    assert not cli.load_scenario("thesis/userver-onepacket", sets).axes


def _rc(main, argv):
    try:
        return main(argv)
    except SystemExit as e:         # argparse's refusal
        return e.code


@pytest.mark.parametrize("argv,shown", [
    (["run", "{spec}", "--set", "server.accept_limit", "1"],
     "error: --set server.accept_limit: expected SECTION.KEY=VALUE as one argument, e.g. --set server.accept_limit=1"),
    (["sweep", "{spec}", "--out", "{tmp}/o", "--set=workload.rate", "3000"],
     "error: --set workload.rate: expected SECTION.KEY=VALUE as one argument, e.g. --set workload.rate=3000"),
    (["run", "{spec}", "--set", "server.accept_limit"],
     "error: --set server.accept_limit: expected SECTION.KEY=VALUE as one argument, e.g. --set server.accept_limit=VALUE"),
    (["run", "--set", "server.accept_limit", "{spec}"],      # the scenario is not the example's value
     "error: --set server.accept_limit: expected SECTION.KEY=VALUE as one argument, e.g. --set server.accept_limit=VALUE"),
    # every subcommand with --set, found by its parser's prog (fit and predict were not tested)
    (["fit", "--records", "thesis", "--params", "k_syn_drop", "--out", "{tmp}/o", "--set", "scenario.duration", "5"],
     "error: --set scenario.duration: expected SECTION.KEY=VALUE as one argument, e.g. --set scenario.duration=5"),
    (["predict", "--records", "thesis", "--profile", "thesis-2004", "--out", "{tmp}/o", "--set", "scenario.duration",
      "5"], "error: --set scenario.duration: expected SECTION.KEY=VALUE as one argument, e.g. --set scenario.duration=5"),
])
def test_a_set_split_in_two_is_refused_naming_set(tmp_path, spec, capsys, argv, shown):
    # `--set server.accept_limit 1` was argparse's "unrecognized arguments: 1", no word of --set
    rc = _rc(cli.main, [a.format(spec=spec, tmp=tmp_path) for a in argv])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith(shown), err
    assert not (tmp_path / "o").exists()



def test_sweep_set_help_shows_how_a_list_is_written_and_that_it_parses():
    # --set's help said only "a list makes it an axis"; --set workload.rate=10000,20000 is a string
    p = cli._parser()
    sweep_p = next(a for a in p._actions if a.dest == "cmd").choices["sweep"]
    text = next(a for a in sweep_p._actions if a.dest == "set").help
    example = text.split("--set '", 1)[1].split("'", 1)[0]
    assert example == "workload.rate=[10000,20000]", text
    sc = cli.load_scenario("thesis/userver-onepacket", [example, "server.accept_limit=1"])
    assert [(k, list(v)) for k, v in sc.axes] == [("workload.rate", [10000, 20000])]


def test_a_comma_separated_set_says_how_a_list_is_written(spec, tmp_path, capsys):
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--set", "workload.rate=1000,2000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: scenario key 'workload.rate': must be a number, got \"1000,2000\"; a sweep axis "
                          "is a list: --set 'workload.rate=[1000,2000]'"), err
    assert err.count("--set 'workload.rate=[1000,2000]'") == 1, err      # the scenario's hint, not twice


def test_a_rerun_sweep_says_how_many_points_it_reused(spec, tmp_path, capsys):
    # a rerun of a cached sweep printed the same line as the first run: nothing said whether
    # the cache had served it (or, after a model edit, had not)
    out = tmp_path / "o"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress"]) == 0
    first_out, err = capsys.readouterr()
    assert "reused" not in err, err                 # nothing was cached: no line
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress",
                     "--set", "workload.rate=[2000, 6000, 4000]"]) == 0
    o, err = capsys.readouterr()
    assert o.splitlines()[-1] == f"3 points -> {out}/results.csv (0 failed)"          # stdout as before
    assert err.splitlines() == [f"2 of 3 points reused from {out / 'points'}, 1 simulated"], err
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress"]) == 0
    o, err = capsys.readouterr()
    assert o == first_out and err.splitlines() == [f"2 of 2 points reused from {out / 'points'}, 0 simulated"], err
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress", "--set", "workload.rate=3000"]) == 0
    assert capsys.readouterr().err.startswith(f"0 of 1 point reused from {out / 'points'}, 1 simulated (the points "
                                              "cached there are of other scenarios, costs or model code)")


def test_a_rerun_of_a_policy_never_cached_blames_the_policy_not_the_cache(spec, tmp_path, monkeypatch, capsys,
                                                                          policy_source):
    # "0 of 1 point reused (the points cached there are of other scenarios, costs or model
    # code)" sent the user to the cache, when the policy that cannot be keyed was why (an
    # object that prints as its address: no stable form, simaccept.sweep.policy_key)
    from simaccept.servers import policies
    ns: dict = {}
    exec(policy_source("prompt-policy", "1", register=False), ns)
    ns["UserPolicy"].tool = object()
    monkeypatch.setitem(policies.REGISTRY, "prompt-policy", ns["UserPolicy"])
    out = tmp_path / "o"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress", "--set", "workload.rate=3000"]) == 0
    capsys.readouterr()
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress", "--set", "workload.rate=3000",
                     "--set", "server.policy=prompt-policy"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("policy prompt-policy: a value its class uses has no stable form"), err
    assert err[1] == (f"0 of 1 point reused from {out / 'points'}, 1 simulated (policy prompt-policy is never "
                      "cached: a value its class uses has no stable form)"), err


def test_a_sweep_prints_its_replies_per_s_by_rate_and_policy_unless_told_not_to(spec, tmp_path, capsys):
    import csv
    out = tmp_path / "o"
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress",
                     "--set", "server.accept_limit=[1, inf]"]) == 0
    o = capsys.readouterr().out.splitlines()
    rows = list(csv.DictReader(open(out / "results.csv")))
    rates = sorted({float(r["target_rate"]) for r in rows})
    assert o[0] == "replies/s" and o[1].split() == ["target", "req/s", "Accept-1", "Accept-Inf"], o
    assert len(o) == 2 + len(rates) + 1 and o[-1].startswith(f"{len(rows)} points -> ")
    for line, rate in zip(o[2:], rates):        # the table is the results file's, point by point
        want = [f"{float(r['replies_per_s']):,.0f}" for lim in ("1", "inf") for r in rows
                if r["accept_limit"] == lim and float(r["target_rate"]) == rate]
        assert line.split() == [f"{rate:,.0f}", *want], (line, want)
    assert cli.main(["sweep", str(spec), "--out", str(out), "--no-progress", "--no-table",
                     "--set", "server.accept_limit=[1, inf]"]) == 0
    assert capsys.readouterr().out == f"{len(rows)} points -> {out}/results.csv (0 failed)\n"


def test_the_list_hint_is_for_a_sweeps_refused_value_only(spec, tmp_path, capsys):
    # an unknown key got "(a list, a sweep axis, is written in brackets: ...)"; so did run,
    # which refuses an axis
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--set", "workload.rat=1,2"]) == 2
    assert "sweep axis" not in capsys.readouterr().err
    assert cli.main(["run", str(spec), "--set", "workload.rate=1000,2000"]) == 2
    assert "written in brackets" not in capsys.readouterr().err


def test_a_comma_separated_choice_shows_a_list_that_parses(spec, tmp_path, capsys):
    # words are quoted, as TOML wants them (it said --set 'server.kind=[userver,tux]', itself refused)
    import re
    assert cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--set", "server.kind=userver,tux"]) == 2
    err = capsys.readouterr().err
    shown = re.search(r"--set '([^']*)'", err).group(1)
    assert shown == 'server.kind=["userver","tux"]', err
    from simaccept.scenario import load_scenario
    assert dict(load_scenario(text="", overrides=[shown]).axes)["server.kind"] == ["userver", "tux"]


@pytest.mark.parametrize("cmd", ["run", "sweep"])
def test_a_bracketed_list_of_bare_words_shows_them_quoted(cmd, spec, tmp_path, capsys):
    # TOML reads no bare word: the whole text was one string, refused as an unknown policy
    # without a word on the quotes
    import re
    out = ["--out", str(tmp_path / "o")] if cmd == "sweep" else []
    assert cli.main([cmd, str(spec), *out, "--set", "server.policy=[accept-limit, queue-aware]"]) == 2
    err = capsys.readouterr().err
    shown = re.search(r"--set '([^']*)'", err).group(1)
    assert shown == 'server.policy=["accept-limit","queue-aware"]', err
    from simaccept.scenario import load_scenario
    assert dict(load_scenario(text="", overrides=[shown]).axes)["server.policy"] == ["accept-limit", "queue-aware"]
    # a number's key is not told to quote a word: that is refused next
    assert cli.main([cmd, str(spec), *out, "--set", "workload.rate=[1000, abc]"]) == 2
    assert "quotes" not in capsys.readouterr().err
    # words already quoted: the refusal is of a value, and quotes are no help (a review saw the hint)
    assert cli.main([cmd, str(spec), *out, "--set", 'server.policy=["accept-limit", "nonexistent"]']) == 2
    err = capsys.readouterr().err
    assert 'unknown policy "nonexistent"' in err and "quotes" not in err


@pytest.mark.parametrize("argv,shown", [
    # a bundled name without its folder is the scenario, not the value
    (["run", "--set", "server.accept_limit", "tux-onepacket"], "--set server.accept_limit=VALUE"),
    # a value the shell would split is quoted
    (["sweep", "thesis/tux-onepacket", "--set", "workload.rate", "[1, 2]"], "--set 'workload.rate=[1, 2]'"),
])
def test_a_split_set_shows_a_line_to_copy(argv, shown, capsys):
    assert cli.main(argv) == 2
    assert shown in capsys.readouterr().err


def test_a_split_set_is_left_to_argparse_where_the_subcommand_takes_no_set(capsys):
    # `scenarios --set a.b 5` was told to join KEY=VALUE, which scenarios then refused again
    with pytest.raises(SystemExit):
        cli.main(["scenarios", "--set", "a.b", "5"])
    assert "expected SECTION.KEY=VALUE" not in capsys.readouterr().err


@pytest.mark.parametrize("text,want", [
    ("\n# Leading blank line.  More.\n[scenario]\n", "Leading blank line."),
    ("# (" + "x " * 80 + ")\n", "(" + ("x " * 80)[:96].rstrip() + "..."),
    ("[scenario]\n# late comment\n", "late comment"),
])
def test_describe_never_gives_an_empty_description(text, want):
    assert cli.describe(text) == want


def test_run_connections_writes_the_runs_connections_one_row_each(spec, tmp_path, capsys):
    import csv
    import math

    from simaccept import load_scenario, simulate
    from simaccept.host import OUTCOME_NAMES
    from simaccept.metrics import per_connection_rows
    out = tmp_path / "sub" / "conns.csv"
    sets = ["workload.rate=6000", "server.accept_limit=1"]
    argv = ["run", str(spec), "--connections", str(out)]
    for s in sets:
        argv += ["--set", s]
    assert cli.main(argv) == 0
    rows = list(csv.DictReader(out.open()))
    assert f"{len(rows)} connections -> {out}" in capsys.readouterr().err
    # the same point from Python: the file is its table, value for value
    _, host = simulate(load_scenario(str(spec), sets), return_host=True)
    want = per_connection_rows(host)
    assert list(rows[0]) == list(want) and len(rows) == len(want["t_first_syn"]) > 0
    for name, col in want.items():
        got = [r[name] for r in rows]
        if name == "outcome":
            assert got == [OUTCOME_NAMES[v] for v in col.tolist()]
        elif col.dtype.kind == "f":
            assert [math.nan if g == "" else float(g) for g in got] == pytest.approx(col.tolist(), rel=0,
                                                                                      abs=0, nan_ok=True)
        else:
            assert [int(g) for g in got] == col.tolist()
    # the last connections are still in flight when the run stops: no t_done, an empty field
    assert any(r["outcome"] == "in_flight" and r["t_done"] == "" for r in rows)


@pytest.mark.parametrize("where,why", [
    ("{tmp}", "is a directory; give a file name"),
    ("", "must name a file"),
    ("{tmp}/f/c.csv", "is not a directory"),          # f is a file
])
def test_run_connections_that_cannot_be_written_are_refused_before_the_run(spec, tmp_path, capsys, monkeypatch,
                                                                            where, why):
    import simaccept.sim

    def boom(*a, **k):
        raise AssertionError("the point was simulated before --connections was refused")
    monkeypatch.setattr(simaccept.sim, "simulate", boom)
    (tmp_path / "f").write_text("")
    rc = cli.main(["run", str(spec), "--set", "workload.rate=6000", "--connections", where.format(tmp=tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: --connections: ") and why in err, err


def test_run_connections_on_a_full_disk_still_prints_the_record_and_exits_1(spec, tmp_path, capsys, monkeypatch):
    def full(path, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(sweep, "atomic_write", full)
    out = tmp_path / "c.csv"
    rc = cli.main(["run", str(spec), "--set", "workload.rate=6000", "--set", "server.accept_limit=1",
                   "--connections", str(out), "--json"])
    cap = capsys.readouterr()
    assert rc == 1 and json.loads(cap.out)["status"] == "ok"
    assert f"error: --connections {out}: not written: No space left on device" in cap.err
    assert not out.exists()


def test_a_sweep_with_no_load_in_its_window_warns(tmp_path, spec, capsys):
    # run warned; sweep cached every such point as finished and said "(0 failed)"
    argv = ["sweep", str(REPO / "scenarios/thesis/userver-onepacket.toml"), "--no-progress", "--no-table",
            "--set", "scenario.duration=1e-9", "--set", "scenario.warmup=0.1",
            "--set", "server.accept_limit=[1, 10]", "--set", "workload.rate=2000"]
    assert cli.main(argv + ["--out", str(tmp_path / "o")]) == 0
    err = capsys.readouterr().err
    assert "warning: 2 of 2 points offered no connection in the measured window" in err, err
    assert "first: server.accept_limit=1" in err, err
    assert cli.main(["sweep", str(spec), "--no-progress", "--no-table", "--out", str(tmp_path / "p")]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("where", ["set", "file"])
def test_a_value_nested_past_the_recursion_limit_is_refused(tmp_path, spec, capsys, where):
    # tomllib recurses per level: a RecursionError traceback, exit 1
    deep = "[" * 5000 + "]" * 5000
    if where == "set":
        argv = ["run", str(spec), "--set", f"workload.rate={deep}"]
    else:
        p = tmp_path / "deep.toml"
        p.write_text(f"[workload]\nrate = {deep}\n")
        argv = ["run", str(p)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and "nested too deeply to read" in err, err
    assert ("workload.rate" in err) == (where == "set"), err


@pytest.mark.parametrize("argv,shown", [
    # two values of one key meant a sweep axis; the last alone used to run
    (["sweep", "thesis/tux-onepacket", "--out", "o", "--set", "workload.rate=1000", "--set", " workload.rate = 2000"],
     "--set workload.rate: given twice (1000 and 2000); give it once (a sweep takes a list: "
     "--set 'workload.rate=[1000, 2000]')"),
    # a list already: no list of lists offered
    (["run", "thesis/tux-onepacket", "--set=server.kind=tux", "--set", "server.kind=[\"a\"]"],
     "--set server.kind: given twice (tux and [\"a\"]); give it once\n"),
])
def test_one_key_set_twice_is_refused_before_anything_runs(argv, shown, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        cli.main(argv)
    assert e.value.code == 2
    assert shown in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_set_twice_is_refused_by_every_cli_that_takes_set(capsys):
    from realsys import cli as rcli
    from validation import cli as vcli
    for main, argv in ((rcli.main, ["run", "x.toml", "--set", "a.b=1", "--set", "a.b=2"]),
                       (vcli.main, ["predict", "--records", "r.csv", "--profile", "p", "--set", "a.b=1",
                                    "--set", "a.b=2"])):
        with pytest.raises(SystemExit) as e:
            main(argv)
        assert e.value.code == 2
        assert "--set a.b: given twice (1 and 2)" in capsys.readouterr().err
    # different keys, and a value holding the key's text, are not twice
    args = cli._parser().parse_args(["run", "x", "--set", "a.b=1", "--set", "a.bc=a.b=2"])
    assert args.set == ["a.b=1", "a.bc=a.b=2"]


@pytest.mark.parametrize("argv, rc", [(["simaccept", "scenarios"], 1),
                                      (["validation", "--help"], 0),     # argparse's own print is quiet
                                      (["realsys", "report", "realsys/results/onepacket-select"], 1)])
def test_a_reader_that_goes_away_is_no_traceback(argv, rc):
    # `simaccept scenarios | head -1` ended in a BrokenPipeError traceback
    import subprocess
    import sys
    root = Path(__file__).resolve().parents[2]
    p = subprocess.Popen([sys.executable, "-m", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=root)
    p.stdout.close()                    # before anything is written: the first write fails (EPIPE)
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == rc and "Traceback" not in err and "BrokenPipe" not in err, err


def _handlers():
    import signal
    return signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGHUP)


def test_termination_signals_raise_terminated_inside_the_block_and_are_put_back_after():
    # shared by `simaccept` and `python -m validation`: a SIGTERM or SIGHUP inside is a
    # Terminated carrying the signal; the caller's handlers are back after, raised or not
    import os
    import signal
    mine = lambda *a: None  # noqa: E731
    saved = _handlers()
    try:
        signal.signal(signal.SIGTERM, mine)
        signal.signal(signal.SIGHUP, mine)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            with pytest.raises(cli.Terminated) as e:
                with cli.termination_signals_as_interrupt():
                    assert _handlers() == (cli._raise_terminated, cli._raise_terminated)
                    os.kill(os.getpid(), sig)
                    time.sleep(5)           # the handler raises at once; 5 s only if it does not
            assert e.value.signum == sig and isinstance(e.value, KeyboardInterrupt)
            assert _handlers() == (mine, mine)
        with cli.termination_signals_as_interrupt():
            pass
        assert _handlers() == (mine, mine)
        # started under nohup: SIGHUP stays ignored inside, as it was
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        with cli.termination_signals_as_interrupt():
            assert _handlers() == (cli._raise_terminated, signal.SIG_IGN)
        assert _handlers() == (mine, signal.SIG_IGN)
    finally:
        signal.signal(signal.SIGTERM, saved[0])
        signal.signal(signal.SIGHUP, saved[1])


def test_termination_signals_from_another_thread_install_nothing():
    import threading
    seen = []
    before = _handlers()

    def body():
        with cli.termination_signals_as_interrupt():
            seen.append(_handlers())

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert seen == [before] and _handlers() == before


def test_sweep_names_the_first_failed_point_and_its_error(spec, tmp_path, capsys):
    # it said only "(1 failed)", sending the user to results.csv's error column; run_sweep's own
    # FailedPointsWarning is not printed a second time
    from simaccept.servers.policies import REGISTRY, AcceptLimit

    class Broken(AcceptLimit):
        name = "broken-cli"

        def quota(self, v):
            return 0
    REGISTRY["broken-cli"] = Broken
    try:
        rc = cli.main(["sweep", str(spec), "--out", str(tmp_path / "o"), "--no-progress", "--no-table",
                       "--set", "server.policy=broken-cli", "--set", "workload.rate=2000"])
    finally:
        del REGISTRY["broken-cli"]
    out, err = capsys.readouterr()
    assert rc == 1
    assert out.splitlines()[-1] == f"1 point -> {tmp_path / 'o'}/results.csv (1 failed)"
    assert "warning: 1 of 1 point failed (status 'failed', rates NaN, the reason in 'error'); first: " in err, err
    assert "quota() returned 0" in err and "FailedPointsWarning" not in err, err


def test_keys_lists_every_key_and_filters(capsys):
    from simaccept.scenario import SCHEMA
    assert cli.main(["keys"]) == 0
    out = capsys.readouterr().out
    for section, keys in SCHEMA.items():
        for name in keys:
            assert f"\n{section}.{name}  (" in "\n" + out, f"{section}.{name}"
    assert "costs.<cost>  (number, default the profile's; >= 0)" in out
    assert cli.main(["keys", "TIMEOUT"]) == 0          # any case, name or meaning
    some = capsys.readouterr().out
    assert "client.timeout  (number" in some and "workload.rate  (" not in some
    assert cli.main(["keys", "nosuch"]) == 2
    assert "error: no scenario key contains 'nosuch'" in capsys.readouterr().err

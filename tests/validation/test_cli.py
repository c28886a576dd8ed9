"""`simaccept fit` exit codes: 0 fitted, 1 the fit failed, 2 bad input (column / parameter named)."""
import csv
import math
import tomllib
from pathlib import Path

import pytest

import simaccept
from simaccept.cli import main
from simaccept.costs import load_costs
from simaccept.sweep import records_to_csv


@pytest.fixture(scope="module")
def sim_csv(tmp_path_factory):
    """Two short simulated runs past saturation, as `simaccept sweep` writes them."""
    recs = []
    for al in (1, 10):
        sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                     ["workload.rate=24000", f"server.accept_limit={al}", "scenario.warmup=0.5",
                                      "scenario.duration=1", "scenario.seed=3"])
        recs.append(simaccept.simulate(sc))
        assert recs[-1].status == "ok"
    p = tmp_path_factory.mktemp("fit") / "results.csv"
    p.write_text(records_to_csv(recs))
    return p


@pytest.fixture
def no_simulation(monkeypatch):
    """Make any simulation (a fit, or simulating records) fail the test: for refusals that must come first."""
    import validation.fitter as fitter

    def boom(*a, **k):
        raise AssertionError("simulated before the bad input was refused")
    monkeypatch.setattr(fitter.CostFitter, "fit", boom)
    monkeypatch.setattr(fitter, "simulate_records", boom)


def test_fit_ok_writes_profile(sim_csv, tmp_path, capsys):
    out = tmp_path / "fitted.toml"
    rc = main(["fit", "--records", str(sim_csv), "--params", "select_base", "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    # said before the first simulation: a fit of the thesis's rows printed nothing for minutes
    assert err.startswith("fit: 2 records, 1 cost: every evaluation simulates each record (a paper row over its "
                          "own window), 2 evaluations a step; --verbose 1 prints each\n"), err
    doc = tomllib.loads(out.read_text())
    # The records came from thesis-2004 itself: the fit stays at its value.
    assert doc["costs"]["select_base"] == pytest.approx(load_costs("thesis-2004").us["select_base"], rel=0.02)
    assert "Residual norm" in out.read_text() and "Fitted to 2 record(s)" in out.read_text()


def test_a_fitted_profile_is_used_by_its_path(sim_csv, tmp_path, capsys):
    # The researcher's loop: fit to their records, then simulate (or fit again) with the
    # profile where --out wrote it, without copying it into simaccept/costs/.
    import json
    out = tmp_path / "mybox.toml"
    assert main(["fit", "--records", str(sim_csv), "--params", "select_base", "--out", str(out)]) == 0
    fitted = tomllib.loads(out.read_text())["costs"]
    assert load_costs(str(out)).us == {**load_costs("thesis-2004").us, **fitted}
    capsys.readouterr()
    rc = main(["run", "scenarios/thesis/userver-onepacket.toml", "--set", "workload.rate=2000",
               "--set", "server.accept_limit=1", "--set", "scenario.duration=0.5", "--set", "scenario.warmup=0.2",
               "--set", f"costs.profile={out}", "--json"])
    rec = json.loads(capsys.readouterr().out)
    assert rc == 0 and rec["status"] == "ok" and rec["cost_profile"] == str(out.resolve())
    again = tmp_path / "again.toml"
    assert main(["fit", "--records", str(sim_csv), "--params", "select_base", "--out", str(again),
                 "--base-profile", str(out)]) == 0, capsys.readouterr().err
    assert f"Base profile: {out}" in again.read_text()


def test_fit_failure_is_exit_1(sim_csv, tmp_path, capsys):
    rc = main(["fit", "--records", str(sim_csv), "--params", "thread_switch", "--out", str(tmp_path / "x.toml")])
    err = capsys.readouterr().err
    assert rc == 1 and "singular Jacobian" in err and "thread_switch" in err
    assert not (tmp_path / "x.toml").exists()


def test_unknown_param_is_exit_2(sim_csv, tmp_path, capsys):
    rc = main(["fit", "--records", str(sim_csv), "--params", "select_base,selct_per_fd,bogus",
               "--out", str(tmp_path / "x.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and "selct_per_fd" in err and "bogus" in err and "select_base," not in err.split("known")[0]
    assert "--params: unknown cost parameter(s)" in err and "--metrics" not in err


def test_missing_column_is_exit_2(sim_csv, tmp_path, capsys):
    lines = sim_csv.read_text().splitlines()
    header = lines[0].split(",")
    i = header.index("duration_s")
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join(",".join(c for j, c in enumerate(line.split(",")) if j != i) for line in lines[:1]) + "\n")
    rc = main(["fit", "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "x.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and "duration_s" in err and "missing required column" in err


def test_zero_duration_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "zero.csv"
    bad.write_text("source,scenario,server,mux,accept_limit,workload,target_rate,duration_s,replies_per_s\n"
                   "paper,thesis/userver-onepacket,userver,select,1,one-packet,27000,0,9442\n")
    rc = main(["fit", "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "x.toml")])
    err = capsys.readouterr().err
    assert rc == 2 and "duration_s" in err and ":2:" in err


def test_unreadable_records_and_bad_out_dir_are_exit_2(sim_csv, tmp_path, capsys):
    assert main(["fit", "--records", str(tmp_path / "none.csv"), "--params", "select_base",
                 "--out", str(tmp_path / "x.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["fit", "--records", str(sim_csv), "--params", "select_base",
                 "--out", str(tmp_path / "no" / "dir" / "x.toml")]) == 2
    assert "does not exist" in capsys.readouterr().err




def test_predict_reproduces_a_sweeps_own_records(tmp_path, capsys):
    # a sweep point's random stream is keyed by its coordinates, which the record keeps only as
    # its `point` label; predicted from the seed alone, the profile that wrote these rows missed
    # them by seed noise (16,121 vs 16,126 replies/s in one case)
    from simaccept.sweep import run_sweep
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 ["workload.rate=[20000, 30000]", 'server.accept_limit=[1, "inf"]',
                                  "scenario.warmup=0.3", "scenario.duration=0.5", "scenario.seed=5"])
    recs = run_sweep(sc, tmp_path / "sw", jobs=1, plots=False)
    assert len(recs) == 4 and recs[0].point == "server.accept_limit=1;workload.rate=20000.0"
    single = simaccept.simulate(simaccept.load_scenario(
        "scenarios/thesis/userver-onepacket.toml", ["workload.rate=20000", "server.accept_limit=1",
                                                    "scenario.warmup=0.3", "scenario.duration=0.5",
                                                    "scenario.seed=5"]))
    assert single.replies_per_s != recs[0].replies_per_s         # another stream: what was predicted
    out = tmp_path / "rows.csv"
    rc = main(["predict", "--records", str(tmp_path / "sw" / "results.csv"), "--profile", "thesis-2004",
               "--metrics", "replies_per_s,select_calls_per_s", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8 and all(float(r["difference"]) == 0.0 for r in rows), rows


def _with_column(src, dst, col, value):
    """A copy of the records file ``src`` at ``dst`` with ``col`` set to ``value`` in every row."""
    rows = list(csv.DictReader(src.open()))
    for r in rows:
        r[col] = value
    with dst.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return dst


def test_a_measured_zero_is_shown_with_its_difference_not_as_not_measured(sim_csv, tmp_path, capsys):
    # a record measuring 0 was reported "not measured in these records", hiding any miss on it
    zero = _with_column(sim_csv, tmp_path / "zero.csv", "accept_rate", "0.0")
    out = tmp_path / "rows.csv"
    rc = main(["predict", "--records", str(zero), "--profile", "thesis-2004", "--metrics", "replies_per_s,accept_rate",
               "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "not measured" not in text, text
    summary = next(x for x in text.splitlines() if x.startswith("accept_rate: "))
    assert "2 record(s) measured 0" in summary and "predicted 0 in 0" in summary, summary
    got = list(csv.DictReader(out.open()))
    acc = [r for r in got if r["metric"] == "accept_rate"]
    assert all(r["error"] == "" and float(r["difference"]) > 1000 for r in acc) and acc[0]["seed"] == "3"
    # fit says why such a record gives no residual
    rc = main(["fit", "--records", str(zero), "--params", "select_base", "--metrics", "accept_rate",
               "--out", str(tmp_path / "p.toml")])
    assert rc != 0 and "accept_rate measured 0" in capsys.readouterr().err

@pytest.mark.parametrize("flags,named", [
    (["--jobs", "0"], "--jobs"),
    (["--max-nfev", "-3"], "--max-nfev"),
    (["--select", "bogus"], "'bogus'"),
    # the message names the one argument at fault (it said "--params/--metrics" for both)
    (["--metrics", "replies_per_s,bogus"], "--metrics: unknown metric(s): bogus"),
    (["--params", "select_base,select_base"], "--params: duplicate names"),
    (["--select", "server=nosuch"], "no records: --select 'server=nosuch' matches none of its 2 records"),
    (["--select", "target_rate==24000"], "--select 'target_rate==24000': '==' is not an operator"),
    (["--metrics", ""], "--metrics '': give at least one metric"),      # it fitted the default metrics
    (["--base-profile", "nosuch"], "--base-profile: no cost profile named 'nosuch'"),
    (["--base-profile", "no/such.toml"], "--base-profile: no cost profile file 'no/such.toml'"),
])
def test_bad_fit_flags_are_exit_2(sim_csv, tmp_path, capsys, flags, named):
    out = tmp_path / "x.toml"
    rc = main(["fit", "--records", str(sim_csv), "--params", "select_base", "--out", str(out)] + flags)
    assert rc == 2 and named in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("cmd,profile", [("machine-fit", "realsys-linux6"), ("thesis-fit", "thesis-2004")])
@pytest.mark.parametrize("flags,named", [(["--jobs", "0"], "--jobs"), (["--max-nfev", "-1"], "--max-nfev")])
def test_bad_profile_fit_flags_are_exit_2_and_touch_nothing(cmd, profile, flags, named, capsys):
    from validation.cli import main as vmain
    path = Path(simaccept.__file__).parent / "costs" / f"{profile}.toml"
    before = path.read_bytes()
    assert vmain([cmd, *flags]) == 2
    assert named in capsys.readouterr().err
    assert path.read_bytes() == before


def test_report_jobs_0_is_exit_2(tmp_path, capsys):
    from validation.cli import main as vmain
    assert vmain(["report", "--jobs", "0", "--out", str(tmp_path)]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("bad,named", [("scenario.no_such_key=1", "no_such_key"), ("scenario.duration=-5", "duration")])
@pytest.mark.parametrize("check", [True, False])
def test_thesis_fit_bad_set_is_exit_2_and_touches_nothing(bad, named, check, capsys):
    from validation.cli import main as vmain
    path = Path(simaccept.__file__).parent / "costs" / "thesis-2004.toml"
    before = path.read_bytes()
    assert vmain(["thesis-fit", "--jobs", "1", "--set", bad] + (["--check"] if check else [])) == 2
    assert named in capsys.readouterr().err
    assert path.read_bytes() == before


def test_predict_own_records_with_their_profile_is_exact_and_another_profile_is_not(sim_csv, tmp_path, capsys):
    # Each record is simulated with its own configuration and seed, so the profile that
    # produced the records predicts them with no error at all; another one does not.
    out = tmp_path / "rows.csv"
    rc = main(["predict", "--records", str(sim_csv), "--profile", "thesis-2004",
               "--metrics", "replies_per_s,accept_rate", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "replies_per_s: median |error| 0.0% over 2 record(s)" in text
    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 4 and all(float(r["error"]) == 0.0 for r in rows)
    assert {r["metric"] for r in rows} == {"replies_per_s", "accept_rate"}
    dear = tmp_path / "dear.toml"
    dear.write_text(f"[costs]\nuser_per_request = {load_costs('thesis-2004').us['user_per_request'] + 30.0}\n")
    rc = main(["predict", "--records", str(sim_csv), "--profile", str(dear), "--select", "accept_limit=1"])
    text = capsys.readouterr().out
    line = next(x for x in text.splitlines() if x.startswith("userver/one-packet/select/accept-1@24000"))
    assert rc == 0 and float(line.split()[-1].rstrip("%")) < -5      # dearer requests: fewer replies


@pytest.mark.parametrize("flags,named", [
    (["--metrics", "replies_per_s,bogus"], "--metrics: not numeric record columns: bogus"),
    (["--metrics", "server"], "--metrics: not numeric record columns: server"),
    (["--metrics", "replies,accept_rate"],         # a misspelled column was named with no hint
     "--metrics: not numeric record columns: replies (close: replies_per_s"),
    (["--profile", "nosuch"], "--profile: no cost profile named 'nosuch'"),
    (["--profile", "none/such.toml"], "--profile: no cost profile file"),
    (["--jobs", "0"], "--jobs: must be >= 1"),
    (["--select", "target_rate>=fast"], "'fast' is not a number"),
    (["--select", "server>=a"], "server is text"),
    (["--select", "target_rate>=99999"], "no record to predict: --select 'target_rate>=99999' matches none"),
    (["--select", "accept_limit=1", "--select", "accept_limit=10"],
     "--select 'accept_limit=1' with --select 'accept_limit=10' together match none of its 2 records"),
    (["--select", "target_rate==24000"], "--select 'target_rate==24000': '==' is not an operator"),
    (["--select", "target_rate=24000=2"], "--select 'target_rate=24000=2': '24000=2' is not a number"),
    (["--metrics", ""], "--metrics '': give at least one record column"),     # it predicted replies_per_s
    (["--out", "/no/such/dir/rows.csv"], "does not exist"),
])
def test_bad_predict_flags_are_exit_2(sim_csv, capsys, flags, named):
    args = ["predict", "--records", str(sim_csv), "--profile", "thesis-2004"]
    for i in range(0, len(flags), 2):       # a flag given here replaces the default one
        if flags[i] in args:
            j = args.index(flags[i])
            del args[j:j + 2]
    rc = main(args + flags)
    err = capsys.readouterr().err
    assert rc == 2 and named in err, err


@pytest.mark.parametrize("cmd,metrics", [("predict", None), ("predict", "replies_per_s"), ("fit", "replies_per_s"),
                                         ("fit", "accept_rate,drop_shares")])
def test_a_metric_the_records_file_has_no_column_for_is_exit_2_before_simulating(sim_csv, tmp_path, capsys,
                                                                                  no_simulation, cmd, metrics):
    # a header with replies_per_sec printed "replies_per_s  nan" and "not measured in these records", exit 0
    col, typo = (("drops_drop_request", "drops_drop_reqest") if metrics and "drop_shares" in metrics
                 else ("replies_per_s", "replies_per_sec"))
    lines = sim_csv.read_text().splitlines(True)
    bad = tmp_path / "renamed.csv"
    bad.write_text(lines[0].replace(f",{col},", f",{typo},", 1) + "".join(lines[1:]))
    args = ([cmd, "--records", str(bad), "--profile", "thesis-2004"] if cmd == "predict" else
            [cmd, "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "p.toml")])
    rc = main(args + (["--metrics", metrics] if metrics else []))
    err = capsys.readouterr().err
    assert rc == 2 and f"--metrics: {bad} has no column {col!r}" in err and f"close: {typo}" in err, err
    assert "Traceback" not in err


def test_a_metric_column_empty_in_every_row_is_still_not_measured(sim_csv, tmp_path, capsys):
    # kept deliberately: a column the file has but these rows did not measure (realsys runs
    # have no c_avg) is reported as such, exit 0
    f = _with_column(sim_csv, tmp_path / "no-c_avg.csv", "c_avg", "")
    rc = main(["predict", "--records", str(f), "--profile", "thesis-2004", "--metrics", "replies_per_s,c_avg",
               "--select", "accept_limit=1"])
    out = capsys.readouterr().out
    assert rc == 0 and "c_avg: not measured in these records" in out, out


@pytest.mark.parametrize("sel,kept", [
    ("accept_limit=1", ["1"]), ("accept_limit!=1", ["10"]), ("target_rate>=24000", ["1", "10"]),
    ("target_rate>24000", []), ("target_rate<=24000", ["1", "10"]), ("target_rate<24000.5", ["1", "10"]),
    ("target_rate!=24000", []), ("cpu_share_poll!=0", ["1", "10"]),     # NaN (select runs) is only != anything
    ("cpu_share_poll>=0", []),
])
def test_select_compares_numbers_and_text(sim_csv, sel, kept):
    from validation.records import select_records
    from validation.records import load_records
    assert [m.record.accept_limit for m in select_records(load_records(sim_csv), [sel])] == kept


@pytest.mark.parametrize("spelling", ["inf", "Inf", "INF", "infinity"])
def test_select_accept_limit_inf_in_any_spelling(sim_csv, tmp_path, spelling):
    # scenarios take "Inf" and the plots say Accept-Inf; --select accept_limit=Inf kept nothing
    from validation.records import load_records, select_records
    rows = list(csv.DictReader(sim_csv.open()))
    rows[0]["accept_limit"] = "inf"
    f = tmp_path / "with-inf.csv"
    with f.open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    kept = select_records(load_records(f), [f"accept_limit={spelling}"])
    assert [m.record.accept_limit for m in kept] == ["inf"]


@pytest.mark.parametrize("sel", ["replies_per_s>nan", "target_rate<=NaN"])
def test_select_ordering_against_nan_is_refused(sim_csv, sel):
    from validation.records import load_records, select_records
    with pytest.raises(ValueError, match="nan is not an order"):
        select_records(load_records(sim_csv), [sel])


def test_select_equal_nan_is_not_measured_and_not_equal_nan_is_measured(sim_csv):
    # "!=nan" kept every row, measured or not (a NaN is != anything), and "=nan" none
    from validation.records import load_records, select_records
    recs = load_records(sim_csv)
    poll = [m.record.cpu_share_poll for m in recs]
    assert all(math.isnan(x) for x in poll) and len(recs) == 2        # select runs: poll not measured
    assert len(select_records(recs, ["cpu_share_poll=nan"])) == 2
    assert select_records(recs, ["cpu_share_poll!=nan"]) == []
    assert len(select_records(recs, ["replies_per_s!=nan"])) == 2
    assert select_records(recs, ["replies_per_s=nan"]) == []


def test_predict_skips_failed_runs_naming_why(sim_csv, tmp_path, capsys):
    rows = list(csv.DictReader(sim_csv.open()))
    rows[0]["status"], rows[0]["error"] = "failed", "server crashed"
    bad = tmp_path / "one-failed.csv"
    with bad.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    rc = main(["predict", "--records", str(bad), "--profile", "thesis-2004"])
    out = capsys.readouterr().out
    assert rc == 0 and "over 1 record(s)" in out
    assert "skipped 1 record(s)" in out and "status failed: not a finished run" in out


@pytest.mark.parametrize("cmd", ["fit", "predict"])
def test_out_that_is_a_directory_is_exit_2_before_any_simulation(cmd, sim_csv, tmp_path, capsys, no_simulation):
    # It used to fit (or simulate every record) first and then die in os.replace with an
    # IsADirectoryError traceback, losing the result (fit also left a 0600 .tmp file).
    out = tmp_path / "outdir"
    out.mkdir()
    args = (["fit", "--params", "select_base"] if cmd == "fit" else ["predict", "--profile", "thesis-2004"])
    rc = main(args + ["--records", str(sim_csv), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "--out" in err and "is a directory" in err and "Traceback" not in err
    assert list(out.iterdir()) == [] and sorted(p.name for p in tmp_path.iterdir()) == ["outdir"]


def test_predict_tells_replicates_apart_by_seed(capsys):
    # the rows of one point at three seeds were printed as three identical labels
    rc = main(["predict", "--records", "realsys/results/onepacket-select-reps/results.csv", "--profile",
               "realsys-linux6", "--select", "accept_limit=1", "--select", "target_rate=6400",
               "--metrics", "replies_per_s", "--set", "scenario.warmup=0.2", "--set", "scenario.duration=0.3"])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [ln for ln in out.splitlines() if ln.startswith("userver/one-packet/select/accept-1@6400")]
    assert len(lines) == 3 and {ln.split()[1] for ln in lines} == {"seed=11", "seed=12", "seed=13"}, out


def test_predict_tells_points_of_one_label_apart_by_the_keys_they_differ_in(capsys, tmp_path):
    # a results.csv sweeping client.think_ms printed four rows "accept-1@8000" with nothing between them
    out_csv = tmp_path / "p.csv"
    rc = main(["predict", "--records", "realsys/results/specweb-think/results.csv", "--profile", "realsys-linux6",
               "--select", "accept_limit=1", "--select", "seed=2004", "--metrics", "replies_per_s",
               "--set", "scenario.warmup=0.2", "--set", "scenario.duration=0.3", "--out", str(out_csv)])
    out = capsys.readouterr().out
    assert rc == 0, out
    lines = [ln.split()[:2] for ln in out.splitlines() if ln.startswith("userver/specweb99/select/accept-1@8000")]
    assert sorted(b for _, b in lines) == sorted(f"client.think_ms={t}" for t in ("0.0", "20.0", "50.0", "100.0"))
    import csv
    rows = list(csv.DictReader(out_csv.open()))
    assert len({r["row"] for r in rows}) == 4 and all("client.think_ms=" in r["row"] for r in rows)


@pytest.mark.parametrize("flags,named", [
    (["--params", "select_base,no_such_cost"], "no_such_cost"),
    (["--params", "accept"], "accept"),                    # a cost, but not one the thesis fit fits
    (["--params", ","], "none given"),
    (["--start", "no-such-profile"], "no-such-profile"),
    (["--metrics", "replies_per_s,time_splt"], "time_splt"),
    (["--metrics", "c_avg"], "c_avg"),                     # a column, but not one the thesis fit compares
    (["--metrics", ""], "none given"),
    (["--metrics", "time_splt", "--check"], "time_splt"),
])
def test_thesis_fit_bad_params_or_start_is_exit_2_and_touches_nothing(flags, named, capsys):
    from validation.cli import main as vmain
    path = Path(simaccept.__file__).parent / "costs" / "thesis-2004.toml"
    before = path.read_bytes()
    assert vmain(["thesis-fit", "--jobs", "1", *flags]) == 2
    assert named in capsys.readouterr().err
    assert path.read_bytes() == before


def test_time_split_on_a_records_file_with_no_cpu_share_column_is_exit_2_before_simulating(sim_csv, tmp_path,
                                                                                         capsys, no_simulation):
    with open(sim_csv, newline="") as fh:
        rows = list(csv.reader(fh))
    keep = [i for i, c in enumerate(rows[0]) if not c.startswith("cpu_share_")]
    assert len(keep) < len(rows[0])
    bad = tmp_path / "no-shares.csv"
    with open(bad, "w", newline="") as fh:
        csv.writer(fh).writerows([[r[i] for i in keep] for r in rows])
    rc = main(["fit", "--records", str(bad), "--params", "select_base", "--out", str(tmp_path / "p.toml"),
               "--metrics", "replies_per_s,time_split"])
    err = capsys.readouterr().err
    assert rc == 2 and "no column cpu_share_<fn>" in err and "time_split needs one" in err, err


def test_predict_with_a_seed_set_shows_the_seed_it_simulated(one_run_csv, tmp_path):
    # --set scenario.seed=5 ran the record at seed 5 while --out showed the record's own seed (3)
    out = tmp_path / "p.csv"
    assert main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--metrics", "replies_per_s",
                 "--set", "scenario.seed=5", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["seed"] for r in rows] == ["5"], rows
    assert main(["predict", "--records", str(one_run_csv), "--profile", "thesis-2004", "--metrics", "replies_per_s",
                 "--out", str(out)]) == 0
    assert [r["seed"] for r in csv.DictReader(out.open())] == ["3"]

"""CostFitter's arguments and state: what it is given is what it saves, a failed refit leaves no
earlier fit behind, and bad arguments are refused by name before any simulation.  Found by a
fresh-user audit of the fit-your-own-runs workflow (each test says what happened before)."""
import math
from pathlib import Path

import numpy as np
import pytest

from simaccept.cli import main
from validation.fitter import CostFitter, FitError
from validation.records import load_records, simulator_supports

REPO = Path(__file__).resolve().parents[2]
SELECT = REPO / "realsys" / "results" / "onepacket-select" / "results.csv"
NGINX = REPO / "realsys" / "results" / "onepacket-nginx" / "results.csv"
SHORT = ["scenario.warmup=0.2", "scenario.duration=0.4"]


def test_a_cost_given_as_a_simulation_override_is_a_fixed_override_of_the_profile():
    # --set costs.k_syn=30 was used in every simulation, but the saved profile kept the base
    # k_syn and its header said "fixed overrides: none"
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6",
                   sim_overrides=["costs.k_syn=30", "scenario.duration=1"])
    assert f.overrides == {"k_syn": 30.0} and f.sim_overrides == ["scenario.duration=1"]


@pytest.mark.parametrize("over, msg", [
    ('costs.profile="thesis-2004"', "give the profile as base_profile"),
    ("costs.user_per_request=3", "a fitted cost"),
    ("workload.rate=100", "each record sets it from its own columns"),
    ("server.accept_limit=10", "each record sets it from its own columns"),
])
def test_simulation_overrides_that_would_hide_what_was_fitted_are_refused(over, msg):
    with pytest.raises(ValueError, match=msg):
        CostFitter(params=["user_per_request"], base_profile="realsys-linux6", sim_overrides=[over])


@pytest.mark.parametrize("kw, msg", [
    ({"weights": [1.0]}, "a mapping"),
    ({"weights": {"replies_per_s": -1}}, "finite number >= 0"),
    ({"weights": {"replies_per_s": float("nan")}}, "finite number >= 0"),
    ({"weights": {"replies_per_s": 0}}, "nothing to fit"),
    ({"bounds": (0, float("nan"))}, "NaN"),
    ({"bounds": ([0], [10, 20])}, "lowers has 1 values for 2 parameters"),
    ({"bounds": {"k_syn_drop": 5}}, "not a (lower, upper) pair"),
    ({"bounds": 5}, "not a (lower, upper) pair"),
    # a pair per cost, or scipy's (lowers, uppers)? read as the latter, silently
    ({"bounds": [(1, 50), (2, 80)]}, "two pairs read either as scipy's (lowers, uppers) or as a (lower, upper) pair"),
    ({"diff_step": 0}, "diff_step"),
    ({"n_jobs": 0}, "n_jobs"),
    # these failed inside scipy once the fit had started (or were truncated: n_jobs 2.7 ran on 2)
    ({"n_jobs": 2.7}, "n_jobs: must be an integer >= 1, got 2.7"),
    ({"n_jobs": "2"}, "n_jobs: must be an integer"),
    ({"max_nfev": 0}, "max_nfev: an integer >= 1"),
    ({"max_nfev": -1}, "max_nfev: an integer >= 1"),
    ({"max_nfev": "x"}, "max_nfev: an integer >= 1"),
    ({"max_nfev": 2.5}, "max_nfev: an integer >= 1"),
    ({"ftol": float("nan")}, "ftol: a finite number >= 0"),
    ({"ftol": -1}, "ftol: a finite number >= 0"),
    ({"xtol": "a"}, "xtol: a finite number >= 0"),
    ({"ftol": None, "xtol": None, "gtol": 0}, "at least one must be > 0"),
    ({"verbose": 5}, "verbose: 0, 1 or 2"),
    ({"verbose": "1"}, "verbose: 0, 1 or 2"),
    ({"metrics": []}, "metrics: give at least one metric"),
    ({"metrics": ["replies_per_s", "replies_per_s"]}, "metrics: given more than once: replies_per_s"),
    ({"base_profile": "no-such-profile"}, "base_profile: no cost profile named 'no-such-profile'"),
    # these were taken as numbers and printed as given ("2", True), or raised float()'s bare
    # "could not convert string to float", or let the last of two values win, or put the
    # cache's files into the working directory (Path("") is ".")
    ({"weights": {"replies_per_s": "2"}}, "weights: replies_per_s: a finite number >= 0, got '2'"),
    ({"weights": {"replies_per_s": True}}, "weights: replies_per_s: a finite number >= 0, got True"),
    ({"overrides": {"k_syn": "abc"}}, "overrides: k_syn: a finite number of µs >= 0, got 'abc'"),
    ({"overrides": {"k_syn": True}}, "overrides: k_syn: a finite number of µs >= 0, got True"),
    ({"overrides": {"k_syn": float("inf")}}, "overrides: k_syn: a finite number of µs >= 0, got inf"),
    ({"overrides": ["k_syn=1", "k_syn=2"]}, "overrides: k_syn given more than once"),
    ({"overrides": ["no_such_cost=1"]}, "overrides: unknown cost name(s): no_such_cost"),
    ({"sim_overrides": ["costs.k_syn=abc"]}, "sim_overrides: k_syn: a finite number of µs >= 0, got 'abc'"),
    ({"cache": ""}, "cache: a directory name, got ''"),
    ({"loss": "l1"}, "loss: one of linear, soft_l1, huber, cauchy, arctan"),
    ({"f_scale": 0}, "f_scale: a finite number > 0"),
    ({"f_scale": float("nan")}, "f_scale: a finite number > 0"),
    ({"cache": "  "}, "cache: a directory name, got '  '"),
    # an audit of 2026-12-05: the bound's owner was not named; text and bools were read as
    # numbers; a non-text weights key raised in the error's own join; a negative override was
    # refused later by load_costs, naming neither the argument nor --set
    ({"bounds": {"k_syn_drop": (10, 5)}}, "not so for k_syn_drop (10, 5)"),
    ({"bounds": {"k_syn_drop": ("1", 100)}}, "a bound '1' is not a number"),
    ({"bounds": {"k_syn_drop": (True, 100)}}, "a bound True is not a number"),
    ({"weights": {1: 1.0}}, "weights: for metric(s) not fitted: 1"),
    ({"overrides": {"k_syn": -5}}, "overrides: k_syn: a finite number of µs >= 0, got -5"),
    ({"sim_overrides": ["costs.k_syn=-5"]}, "sim_overrides: k_syn: a finite number of µs >= 0, got '-5'"),
])
def test_bad_arguments_are_refused_by_name(kw, msg):
    # they failed after simulating (NaN weight, diff_step 0), in numpy or scipy (bounds), or
    # silently became something else (n_jobs 0 ran as 1)
    kw = {"metrics": ["replies_per_s"], "base_profile": "realsys-linux6", **kw}
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        CostFitter(params=["user_per_request", "k_syn_drop"], **kw)


def test_verbose_true_is_scipys_level_1():
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", verbose=True)
    assert f.verbose == 1


def test_none_is_no_bound():
    f = CostFitter(params=["user_per_request", "k_syn_drop"], base_profile="realsys-linux6",
                   bounds={"k_syn_drop": (None, 50)})
    assert list(f.bounds[0]) == [0, 0] and list(f.bounds[1]) == [math.inf, 50]


def test_a_failed_refit_leaves_no_earlier_fit_behind():
    # after a fit, a refit that raised kept the old params_ beside the new result_: save()
    # wrote the old values under the new fit's header, and predict() used them
    f = CostFitter(params=["user_per_request", "k_syn_drop"], base_profile="realsys-linux6",
                   metrics=["replies_per_s"])
    f.params_, f.stderr_ = {"user_per_request": 1.0, "k_syn_drop": 2.0}, {"user_per_request": 0.1, "k_syn_drop": 0.2}
    one = [m for m in load_records(SELECT) if m.record.accept_limit == "1"][:1]
    with pytest.raises(FitError, match="underdetermined"):
        f.fit(one)                  # one residual for two costs
    assert not hasattr(f, "params_") and not hasattr(f, "stderr_")
    from validation.fitter import NotFittedError
    with pytest.raises(NotFittedError, match="not fitted"):
        f.save("/nonexistent/never-written.toml")


def test_rows_the_simulator_cannot_run_are_skipped_not_the_file_refused():
    # nginx rows made `predict` and `fit` refuse the whole file (server.kind: runs only in realsys)
    rows = [m for m in load_records(NGINX) if m.record.server == "nginx"]
    assert len(rows) >= 3
    ok, why = simulator_supports(rows[0])
    assert not ok and "nginx" in why, why
    userver = [m for m in load_records(SELECT) if m.record.accept_limit == "1"][:2]
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    f._prepare(rows[:3] + userver)
    assert [m.label for m in f._recs] == [m.label for m in userver]
    assert len(f.skipped_) == 3 and all("nginx" in why for _, why in f.skipped_)


@pytest.mark.parametrize("out", ["noext", "results.csv", "X.TOML"])
def test_fit_out_must_be_a_toml_profile(tmp_path, capsys, out):
    # "out/noext" was written and then not found as a profile; "results.csv" was replaced
    target = tmp_path / out
    if out == "results.csv":
        target.write_text("keep me\n")
    rc = main(["fit", "--records", str(SELECT), "--params", "user_per_request", "--base-profile", "realsys-linux6",
               "--out", str(target)])
    assert rc == 2 and "a cost profile is a .toml file" in capsys.readouterr().err
    assert not target.exists() or target.read_text() == "keep me\n"


def test_a_start_on_its_bound_has_a_start_residual_norm(tmp_path):
    # select_per_ready starts at 0, its lower bound; least_squares moves it inside, so the
    # lookup of the start's residuals missed and the header said "(start nan)"
    recs = [m for m in load_records(SELECT) if m.record.accept_limit == "1" and m.record.target_rate >= 5600][:2]
    f = CostFitter(params=["select_per_ready"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=SHORT, max_nfev=2, accept_max_nfev=True)
    f.fit(recs)
    assert math.isfinite(f.start_residual_norm_), f.start_residual_norm_
    assert "(start nan)" not in f.header()


def test_a_metric_no_record_measures_is_named_in_the_header():
    # the header listed it among the fitted metrics though it gave no residual (a realsys
    # select run has no poll time)
    recs = [m for m in load_records(SELECT) if m.record.accept_limit == "1" and m.record.target_rate >= 5600][:2]
    assert all(math.isnan(m.get("cpu_share_poll")) for m in recs)
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6",
                   metrics=["replies_per_s", "cpu_share_poll"], sim_overrides=SHORT, max_nfev=2,
                   accept_max_nfev=True)
    f.fit(recs)
    assert f.unmeasured_metrics_ == ["cpu_share_poll"]
    assert ("Metrics: replies_per_s, cpu_share_poll (no residual, measured by no record or 0 in every one: "
            "cpu_share_poll)") in f.header()


def test_a_base_profile_path_with_a_quote_or_backslash_is_simulated_as_given(tmp_path):
    # the override was written f'costs.profile="{path}"': a '"' or '\' in the path made it
    # another string or no TOML at all
    import re

    import simaccept
    d = tmp_path / 'my "fits" \\ here'
    d.mkdir()
    base = d / "base.toml"
    base.write_bytes((Path(simaccept.__file__).parent / "costs" / "realsys-linux6.toml").read_bytes())
    f = CostFitter(params=["user_per_request"], base_profile=str(base))
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml", f._cost_overrides({}))
    assert sc["costs"]["profile"] == str(base)
    # the other analyses build the same override: none by pasting the name into quotes
    for py in (REPO / "validation").glob("*.py"):
        assert not re.search(r"""costs\.profile=\\?["']\{""", py.read_text()), py


@pytest.mark.parametrize("arg", ["params", "metrics", "sim_overrides", "overrides"])
def test_a_str_where_a_list_belongs_is_a_type_error_naming_it(arg):
    # a str was iterated per character: params="user_per_request" was 16 unknown one-letter costs
    kw = {"params": ["user_per_request"], "metrics": ["replies_per_s"], "base_profile": "realsys-linux6",
          arg: {"params": "user_per_request", "metrics": "replies_per_s", "sim_overrides": "scenario.duration=1",
                "overrides": "k_syn=30"}[arg]}
    with pytest.raises(TypeError, match=f"^{arg}: a list of names, got the str"):
        CostFitter(**kw)


def test_a_cache_that_is_a_file_is_refused_before_the_fit(tmp_path):
    f = tmp_path / "cache"
    f.write_text("")
    with pytest.raises(ValueError, match="cache: .* exists and is not a directory"):
        CostFitter(params=["user_per_request"], base_profile="realsys-linux6", cache=f)


@pytest.mark.parametrize("records, why", [(str(SELECT), "got a path"), (SELECT, "got a path"),
                                          ([{"server": "userver"}], "item 0 is a dict")])
def test_fit_of_something_that_is_no_records_is_a_type_error(records, why):
    # fit("file.csv") and fit([{...}]) were an AttributeError deep inside
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(TypeError, match=f"records: .*{why}"):
        f.fit(records)


def test_select_records_refuses_one_str():
    from validation.records import select_records
    with pytest.raises(TypeError, match="selectors: a list of 'column=value' strings, got the str"):
        select_records(load_records(SELECT), "target_rate=4000")


def test_fit_verbose_out_of_scipys_levels_is_exit_2(tmp_path, capsys):
    # python -m validation fit ... --verbose 5 was a scipy traceback once the fit had started
    from validation.cli import main as vmain
    with pytest.raises(SystemExit) as e:
        vmain(["fit", "--records", str(SELECT), "--params", "user_per_request", "--out", str(tmp_path / "p.toml"),
               "--verbose", "5"])
    assert e.value.code == 2 and "--verbose: invalid choice: 5" in capsys.readouterr().err


def test_the_fits_pool_is_no_larger_than_the_simulations_it_runs_at_once(monkeypatch):
    # fit --jobs 40 forked 40 workers for 12 simulations (3 records, 3 parameters and the centre)
    import validation.fitter as fitter
    asked = []

    class Pool:
        def shutdown(self, **kw):
            pass
    monkeypatch.setattr(fitter, "worker_pool", lambda jobs: asked.append(jobs) or Pool())
    recs = [m for m in load_records(SELECT) if simulator_supports(m)[0]][:3]
    assert len(recs) == 3
    f = CostFitter(params=["user_per_request", "k_syn_drop", "k_syn"], base_profile="realsys-linux6",
                   metrics=["replies_per_s"], n_jobs=40)
    f._prepare(recs)
    with f._pooled(len(f.params) + 1):
        pass
    with f._pooled(1):
        pass
    assert asked == [12, 3]


def test_predict_of_a_sweep_point_keeps_its_random_stream():
    # predict(point) resolved the scenario anew, dropping the point's coordinates: another
    # random stream than simulate(point) and an empty `point` column (12,007 vs 12,348 replies/s)
    from simaccept import load_scenario, simulate
    sc = load_scenario("thesis/userver-onepacket", ["workload.rate=[12000, 14000]", "server.accept_limit=1",
                                                    "scenario.warmup=0.1", "scenario.duration=0.3"])
    point = sc.points()[0]
    f = CostFitter(params=["select_base"])
    f.params_ = dict(f.start)          # fitted to nothing: the base profile's costs, as simulate's
    got, want = f.predict(point), simulate(point)
    assert got.point == want.point == "workload.rate=12000.0"
    assert got.replies_per_s == want.replies_per_s and got.resp_ms_mean == want.resp_ms_mean


def test_the_command_lines_losses_are_the_fitters():
    from simaccept.cli import LOSSES as CLI_LOSSES
    from validation.fitter import LOSSES
    assert CLI_LOSSES == LOSSES


@pytest.mark.parametrize("argv,msg", [
    (["machine-fit", "--f-scale", "nan"], "--f-scale: a finite number > 0"),
    (["machine-fit", "--loss", "l1"], "argument --loss: invalid choice: 'l1'"),
])
def test_machine_fit_refuses_a_bad_loss_before_any_simulation(argv, msg, capsys):
    from validation.cli import main
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    assert rc == 2 and msg in capsys.readouterr().err


# --- from a review of the fitter's API (2026-12-04); each failed on the code before ---------------

def _onepacket(n=2):
    return [m for m in load_records(SELECT) if m.record.accept_limit == "1" and m.record.target_rate >= 5600][:n]


@pytest.mark.parametrize("metric", ["wall_s", "target_rate", "duration_s", "seed"])
def test_columns_that_measure_nothing_of_the_server_are_not_metrics(metric):
    # wall_s (the simulator's own time) made the fit differ between n_jobs 1 and 2; target_rate
    # added residuals of 0 that shrank the stderr; duration_s fitted the window override
    with pytest.raises(ValueError, match=f"metrics: not a measurement of the server: {metric}"):
        CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s", metric])


@pytest.mark.parametrize("change, column", [
    ({"duration_s": 0.0}, "duration_s"),        # a paper row of 0 s was simulated in the file's 10 s window
    ({"duration_s": math.nan}, "duration_s"),
    ({"source": "bogus"}, "source"),
    ({"seed": -1.0}, "seed"),                   # replaced by a hash of the record unsaid
    ({"seed": 1.5}, "seed"),                    # truncated to 1
    ({"accept_limit": "abc"}, "accept_limit"),  # a bare "could not convert string to float"
    ({"replies_per_s": "3000"}, "replies_per_s"),   # skipped as not measured
    ({"replies_per_s": True}, "replies_per_s"),
])
def test_a_record_built_in_memory_gets_the_checks_of_a_files_row(change, column):
    import dataclasses
    from validation.records import RecordError
    rec = dataclasses.replace(_onepacket(1)[0].record, **change)
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(RecordError, match=f"records item 0.*column '{column}'"):
        f.fit([rec])


def test_one_record_given_twice_is_refused():
    # the residual counted twice, and a degree of freedom: the stderr was understated
    a, b = _onepacket(2)
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(ValueError, match=r"item 1 .* repeats item 0"):
        f.fit([a, a, b])
    with pytest.raises(ValueError, match=r"item 2 .* repeats item 0"):
        f.fit([a.record, b.record, a.record])


def test_one_file_read_under_two_spellings_is_refused_as_a_repeat(tmp_path, monkeypatch):
    # /d/r.csv and r.csv (or a link to it) were two files: each row fitted twice
    import os
    import shutil
    shutil.copy(SELECT, tmp_path / "r.csv")
    os.symlink(tmp_path / "r.csv", tmp_path / "link.csv")
    monkeypatch.chdir(tmp_path)
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    for other in ("r.csv", "link.csv"):
        with pytest.raises(ValueError, match=r"item 1 .* repeats item 0"):
            f.fit(load_records(tmp_path / "r.csv")[:1] + load_records(other)[:1])


def test_residuals_after_a_fit_leave_the_fits_record_alone(tmp_path):
    # residuals() reset the fit's counts and skips: the header and the saved profile said
    # "4 simulations" for a fit of 20
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=SHORT, max_nfev=2, accept_max_nfev=True).fit(_onepacket(2))
    before = f.header().splitlines()[1:]
    f.residuals(_onepacket(1))
    assert f.header().splitlines()[1:] == before


def test_a_cost_scipy_left_on_its_bound_is_flagged(monkeypatch):
    # trf leaves an iterate strictly inside a bound: 0.00038 of bound 0 was shown without
    # "[at its lower bound 0]", which fitting.md promises
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=SHORT, max_nfev=2, accept_max_nfev=True).fit(_onepacket(2))
    f.params_["user_per_request"] = 0.00038
    f.result_.active_mask[:] = [-1]
    assert "[at its lower bound 0]" in f.header()
    f.result_.active_mask[:] = [0]
    assert "[at its lower bound 0]" not in f.header()


def test_a_start_value_is_not_called_a_fixed_override():
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   overrides={"user_per_request": 5, "k_syn": 3}, sim_overrides=SHORT, max_nfev=1,
                   accept_max_nfev=True).fit(_onepacket(2))
    assert "fixed overrides: {'k_syn': 3.0}; start values: {'user_per_request': 5.0}." in f.header()


def test_get_params_and_set_params_as_scikit_learn_estimators_have_them():
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    assert f.get_params()["params"] == ["user_per_request"] and f.get_params()["bounds"] is None
    clone = CostFitter(**f.get_params())
    assert clone.get_params() == f.get_params()
    # its own copies: a generator of names was spent by the checks, and set_params then
    # refused it; a list changed after construction changed what set_params rebuilt
    g = CostFitter(params=(p for p in ["user_per_request", "k_syn_drop"]), base_profile="realsys-linux6")
    assert g.set_params(max_nfev=5).params == ["user_per_request", "k_syn_drop"]
    names = ["user_per_request"]
    h = CostFitter(params=names, base_profile="realsys-linux6")
    names.append("accept")
    assert h.set_params(max_nfev=5).params == ["user_per_request"]
    assert "start_" not in vars(h)        # a trailing _ is for what fit() sets (scikit-learn's check_is_fitted)
    h.get_params()["params"].append("k_syn_drop")       # a copy: the fitter's own list is untouched
    assert h.set_params(max_nfev=6).params == ["user_per_request"] and not h.__sklearn_is_fitted__()
    from simaccept.costs import load_costs
    assert f.set_params(params=["k_syn_drop"]) is f
    assert f.start == {"k_syn_drop": load_costs("realsys-linux6").us["k_syn_drop"]}
    with pytest.raises(ValueError, match="weights: replies_per_s: a finite number"):
        f.set_params(weights={"replies_per_s": math.nan})
    assert f.weights == {} and f.params == ["k_syn_drop"]      # a refused value changes nothing
    with pytest.raises(ValueError, match="not an argument of CostFitter: param"):
        f.set_params(param=["x"])


def test_an_attribute_changed_by_hand_is_refused_at_fit():
    # a new params had no start value (a bare KeyError); a NaN weight failed inside scipy
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    f.params = ["k_syn_drop"]
    with pytest.raises(ValueError, match="params changed after construction: use set_params"):
        f.fit(_onepacket(2))
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    f.weights["replies_per_s"] = math.nan
    with pytest.raises(ValueError, match="weights changed after construction"):
        f.fit(_onepacket(2))


def test_a_saved_profile_reads_back_whatever_its_header_holds(tmp_path):
    # an ESC in the base profile's path went raw into a comment, which TOML forbids
    import shutil
    from simaccept.costs import load_costs
    base = tmp_path / "base\x1bx.toml"
    shutil.copy(REPO / "simaccept" / "costs" / "realsys-linux6.toml", base)
    f = CostFitter(params=["user_per_request"], base_profile=str(base), metrics=["replies_per_s"],
                   sim_overrides=SHORT, max_nfev=1, accept_max_nfev=True).fit(_onepacket(2))
    f.save(tmp_path / "out.toml")
    assert load_costs(str(tmp_path / "out.toml")).us["user_per_request"] == f.params_["user_per_request"]
    assert "base\\x1bx.toml" in (tmp_path / "out.toml").read_text()
    with pytest.raises(ValueError, match="a .toml file, in lower case"):
        f.save(tmp_path / "out.TOML")


def test_an_underdetermined_fit_is_bad_input_exit_2(capsys, tmp_path):
    rc = main(["fit", "--records", str(SELECT), "--select", "accept_limit=1", "--select", "target_rate=5600",
               "--params", "user_per_request,k_syn_drop", "--metrics", "replies_per_s", "--base-profile",
               "realsys-linux6", "--out", str(tmp_path / "p.toml")])
    assert rc == 2 and "underdetermined" in capsys.readouterr().err and not (tmp_path / "p.toml").exists()


@pytest.mark.parametrize("name", ["params", "metrics"])
def test_none_for_a_list_names_the_argument(name):
    # "'NoneType' object is not iterable", naming no argument
    kw = {"params": ["user_per_request"], name: None}
    with pytest.raises(TypeError, match=f"{name}: a list of names, got the NoneType None"):
        CostFitter(**kw)


def test_none_for_the_overrides_is_none():
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", overrides=None, sim_overrides=None)
    assert f.overrides == {} and f.sim_overrides == []


def test_fit_of_none_names_the_records():
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(TypeError, match="records: the records"):
        f.fit(None)


def _one_packet_rows(n):
    return [m for m in load_records(SELECT) if m.record.accept_limit == "1" and m.record.target_rate >= 5600][:n]


@pytest.mark.parametrize("col, value", [("duration_s", 0.0), ("duration_s", -3.0), ("seed", -7.0),
                                        ("replies_per_s", -5.0)])
def test_a_loaded_record_edited_since_is_checked_too(col, value):
    # only records built in memory were checked: a loaded one given a zero duration_s was
    # simulated in the scenario file's window (10 s), and predict checked none at all
    import dataclasses
    m = _one_packet_rows(1)[0]
    bad = dataclasses.replace(m, record=dataclasses.replace(m.record, **{col: value}))
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(ValueError, match=f"{bad.path}:{bad.line}.*column '{col}'"):
        f._prepare([bad])
    f.params_, f.stderr_ = {"user_per_request": 1.0}, {"user_per_request": 0.1}
    if col != "replies_per_s":      # predict simulates the record's scenario; a measurement is not read
        with pytest.raises(ValueError, match=f"column '{col}'"):
            f.predict(bad.record)


def test_a_row_the_same_in_every_column_as_another_of_its_file_is_refused(tmp_path):
    # it was fitted twice (a residual and a degree of freedom counted twice); replicates of a
    # point, which differ in seed or measurement, are kept
    lines = SELECT.read_text().splitlines(keepends=True)
    recs = tmp_path / "dup.csv"
    recs.write_text("".join(lines[:4]) + lines[3])
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"])
    with pytest.raises(ValueError, match=fr"{recs}:5: .* is the same in every column as {recs}:4 \(item 2\)"):
        f._prepare(load_records(recs))
    f._prepare(load_records(SELECT))         # its replicates differ in their seeds


@pytest.mark.parametrize("cmd", ["fit", "predict"])
def test_a_record_too_long_to_simulate_is_refused_naming_its_file_and_line(tmp_path, capsys, cmd):
    # a paper row is simulated over its own window: the error named workload.rate and said
    # "shorten the run", not which row of the file
    recs = tmp_path / "long.csv"
    recs.write_text("source,scenario,server,mux,accept_limit,workload,target_rate,duration_s,replies_per_s\n"
                    "paper,thesis/userver-onepacket,userver,select,1,one-packet,20000,120,9000\n"
                    "paper,thesis/userver-onepacket,userver,select,inf,one-packet,20000,1200,9000\n")
    if cmd == "fit":
        argv = ["fit", "--params", "user_per_request", "--out", str(tmp_path / "p.toml")]
    else:
        argv = ["predict", "--profile", "thesis-2004"]
    rc = main(argv + ["--records", str(recs)])
    err = capsys.readouterr().err
    assert rc == 2 and f"{recs}:3: " in err and "cannot be simulated as measured" in err, err
    assert not (tmp_path / "p.toml").exists()


def test_a_record_too_long_to_simulate_is_simulated_when_a_set_shortens_it(tmp_path, capsys):
    # the refusal advises a shorter run: --set scenario.duration repairs it, in predict and fit
    recs = tmp_path / "long.csv"
    recs.write_text("source,scenario,server,mux,accept_limit,workload,target_rate,duration_s,replies_per_s\n"
                    "paper,thesis/userver-onepacket,userver,select,inf,one-packet,20000,1200,9000\n")
    assert main(["predict", "--profile", "thesis-2004", "--records", str(recs),
                 "--set", "scenario.duration=0.3"]) == 0, capsys.readouterr().err
    f = CostFitter(params=["user_per_request"], metrics=["replies_per_s"], sim_overrides=["scenario.duration=0.3"])
    assert len(f._prepare(load_records(recs))) == 1


def test_save_makes_no_directory(tmp_path, monkeypatch):
    # save("simaccept/costs/x.toml") run elsewhere made ./simaccept/costs/, and that empty folder
    # then hid the package from every `import simaccept` run there
    f = CostFitter(params=["user_per_request"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=SHORT, max_nfev=1, accept_max_nfev=True).fit(_onepacket(2))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"^path: 'simaccept/costs' is not a directory \(save\(\) makes none"):
        f.save("simaccept/costs/my-profile.toml")
    assert list(tmp_path.iterdir()) == []
    assert f.save("my-profile.toml") == Path("my-profile.toml") and (tmp_path / "my-profile.toml").is_file()


@pytest.mark.parametrize("over,why", [
    ("scenario.durat=1", "scenario key 'scenario.durat': unknown key; did you mean 'scenario.duration'?"),
    ("scenario.duration=-1", "scenario key 'scenario.duration': must be > 0"),
    ("client.think_ms=x", "scenario key 'client.think_ms'"),
])
def test_a_bad_simulation_override_is_refused_at_construction(over, why):
    # found only at fit(), with the first record's simulation
    from simaccept.scenario import ScenarioError
    with pytest.raises(ScenarioError) as e:
        CostFitter(params=["user_per_request"], sim_overrides=[over])
    assert str(e.value).startswith(why), str(e.value)


#: The costs the μserver's one-packet select path charges, realsys-linux6's of 7 Dec 2026 to four
#: figures: the two livelock tests need the livelock's edge where it is at these costs, and each
#: refit of the shipped profile moves it (from the 21 Nov profile a fit from k_syn_drop = 100
#: overshot to 208 and stepped into it; from the 7 Dec one the same fit crept up to 157 and never
#: did, so the test's start had to move to 130), so they pin the costs instead of reading it.
LIVELOCK_COSTS = {
    "select_base": 0.425, "select_per_fd": 0.2579, "select_per_ready": 0.0, "accept": 3.0, "accept_eagain": 1.5,
    "setsockopt": 1.5, "read": 1.1369, "read_eof": 1.1369, "writev": 4.28, "close": 6.876, "user_per_request": 11.01,
    "user_per_event": 0.0, "fd_alloc_per_open": 0.0, "k_syn": 0.6534, "k_ack_establish": 0.6534, "k_ack_overflow": 0.363,
    "k_synack_retx": 0.2904, "k_data_rx": 0.2178, "k_fin_rx": 0.2904, "k_rst_rx": 0.1452, "k_tx_per_segment": 0.1089,
    "k_ack_rx": 0.2178, "k_softirq_run": 18.37}


def test_a_trial_point_that_measures_nothing_gives_scipy_a_non_finite_residual():
    # k_syn_drop = 200 livelocks the server (no call ends in a 1 s window: a MeasurementError):
    # at a trial step the fit raised and ended; now scipy gets a non-finite residual and
    # shrinks its step (trf), and the fit says so.  At the start there is nothing to go back to.
    recs = _onepacket(2)
    f = CostFitter(params=["k_syn_drop"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=["scenario.duration=1"], overrides=LIVELOCK_COSTS)
    f._prepare(recs)
    scale = f._scale()
    with f._pooled(1):
        with pytest.raises(FitError, match="MeasurementError: no server call ended"):
            f._fun(np.array([200.0]) / scale)
        ok = f._fun(np.array([20.0]) / scale)
        bad = f._fun(np.array([200.0]) / scale)
    assert np.all(np.isfinite(ok)) and len(ok) == 2
    assert bad.shape == ok.shape and np.all(np.isinf(bad))
    (vals, why), = f.rejected_trials_
    assert vals == {"k_syn_drop": pytest.approx(200.0)} and "receive livelock" in why


def test_a_fit_goes_on_past_a_step_into_a_receive_livelock():
    # A record whose replies only a k_syn_drop near the livelock's edge gives (1 % of the
    # measured): from 130 the first step (260) livelocks the server (at LIVELOCK_COSTS), and so
    # does a Jacobian step later.  The fit ended at the first; now scipy shrinks the step, the Jacobian
    # differences from the other side, and the fit converges, saying so.
    import dataclasses
    from validation.records import Measured
    rec = _onepacket(1)[0].record
    low = Measured(dataclasses.replace(rec, replies_per_s=0.01 * rec.replies_per_s))
    f = CostFitter(params=["k_syn_drop"], base_profile="realsys-linux6", metrics=["replies_per_s"],
                   sim_overrides=["scenario.duration=1"], overrides={**LIVELOCK_COSTS, "k_syn_drop": 130.0},
                   max_nfev=12)
    f.fit([low])
    assert f.result_.success and f.residual_norm_ < 0.05 < f.start_residual_norm_
    assert f.rejected_trials_ and all(v["k_syn_drop"] > f.params_["k_syn_drop"] for v, _ in f.rejected_trials_)
    assert "no server call ended" in f.rejected_trials_[0][1]
    assert f"Rejected {len(f.rejected_trials_)} trial step(s)" in f.header()
    assert len(f.summary()["rejected_trials"]) == len(f.rejected_trials_)

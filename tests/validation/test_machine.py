"""The machine profile (realsys-linux6) and the realsys held-out figures of the report.

No fits and no sweeps here: the profile is checked as a file (and its kernel costs by four
short simulations), the held-out figures are computed from stand-in simulations
(monkeypatched) and from the committed rows.
"""
import csv
import dataclasses
import json
import math
import statistics
import tomllib
from pathlib import Path

import pytest

from simaccept.costs import COST_NAMES, available_profiles, load_costs, scenario_costs
from simaccept.record import RunRecord
from validation import machine, realsys_report
from validation.records import load_records, scenario_for

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "validation"


def test_profile_loads():
    assert "realsys-linux6" in available_profiles()
    c = load_costs("realsys-linux6").us
    assert set(c) == set(COST_NAMES)
    assert all(math.isfinite(v) and v >= 0 for v in c.values())
    text = (ROOT / "simaccept" / "costs" / "realsys-linux6.toml").read_text()
    assert "Fitted by validation.CostFitter" in text and "Fitted (value +- 1 stderr" in text
    doc = tomllib.loads(text)
    for p in machine.FIT_PARAMS:          # every fitted cost is in the file
        assert p in doc["costs"]


def test_the_threaded_servers_costs_are_this_machines():
    """thread_switch is the block-and-wake measured beside the runs (realsys switch-cost), and
    Capriccio's scheduler pass is 0 (the pthread server runs none); the profile and its fit's
    record say the same.  Runs without a measurement keep the reference's values."""
    from realsys.switchcost import FILE_NAME, read
    t = machine.thread_costs()
    measured = read(machine.RESULTS / FILE_NAME)["switch_us"]
    assert t == {"thread_switch": round(measured, 4), "sched_base": 0.0, "sched_per_blocked": 0.0,
                 "sched_per_ready": 0.0}
    prof, ref = load_costs("realsys-linux6").us, load_costs(machine.REFERENCE).us
    assert {k: prof[k] for k in t} == t
    assert ref["thread_switch"] == 6.0 and t["thread_switch"] < ref["thread_switch"]
    assert json.loads(machine.FIT_JSON.read_text())["threads"] == t
    text = (ROOT / "simaccept" / "costs" / "realsys-linux6.toml").read_text()
    assert "# " + machine.thread_header(t) + "\n" in text


def test_thread_costs_without_a_measurement_and_with_a_bad_one(tmp_path):
    from realsys.switchcost import FILE_NAME
    assert machine.thread_costs(tmp_path) == {}
    assert "not this machine's" in machine.thread_header({})
    (tmp_path / FILE_NAME).write_text('{"switch_us": -1}')
    with pytest.raises(ValueError, match=f"{tmp_path / FILE_NAME}.*positive number, got -1"):
        machine.thread_costs(tmp_path)


def test_realsys_spin_is_user_work():
    m = next(m for m in load_records(ROOT / "realsys/results/onepacket-select/results.csv")
             if m.record.accept_limit == "1")
    sc = scenario_for(m, overrides=['costs.profile="realsys-linux6"'])
    base = load_costs("realsys-linux6").us["user_per_request"]
    assert sc["realsys"]["spin_us"] == 200.0
    assert scenario_costs(sc).us["user_per_request"] == pytest.approx(base + 200.0)
    # applied once, on top of an explicit override too
    sc2 = scenario_for(m, overrides=['costs.profile="realsys-linux6"', "costs.user_per_request=7"])
    assert scenario_costs(sc2).us["user_per_request"] == pytest.approx(207.0)


def test_realsys_records_keep_the_timer_their_generator_had():
    """Runs recorded before client.timeout_from existed: loadgen timed from the first SYN,
    httperf from the connect; a config that names it keeps it."""
    loadgen = next(iter(load_records(ROOT / "realsys/results/onepacket-select/results.csv")))
    httperf = next(m for m in load_records(ROOT / "realsys/results/httperf-check/results.csv")
                   if json.loads(m.record.config)["realsys"]["httperf"])
    assert "timeout_from" not in json.loads(loadgen.record.config)["client"]
    assert scenario_for(loadgen)["client"]["timeout_from"] == "first-syn"
    assert scenario_for(httperf)["client"]["timeout_from"] == "connect"
    doc = json.loads(loadgen.record.config)
    doc["client"]["timeout_from"] = "connect"
    named = dataclasses.replace(loadgen, record=dataclasses.replace(loadgen.record, config=json.dumps(doc)))
    assert scenario_for(named)["client"]["timeout_from"] == "connect"


def test_heldout_groups():
    recs = load_records(ROOT / "realsys/results/onepacket-select/results.csv")
    groups = {(m.record.accept_limit, machine.heldout_group(m)) for m in recs}
    assert groups == {("1", None), ("inf", None), ("10", "AL10")}
    knot = load_records(ROOT / "realsys/results/onepacket-knot/results.csv")
    assert {machine.heldout_group(m) for m in knot} == {"knot"}
    fit = machine.fit_records()
    assert fit and all(m.record.mux == "select" and m.record.accept_limit in ("1", "inf") for m in fit)


def test_kernel_time_per_reply_matches_the_dilation_per_policy():
    """The profile's kernel costs give the kernel time per reply the measurements imply, per policy.

    The per-packet costs are the reference's times one calibrated scale, and the per-run cost
    is positive (docs/validation/realsys-fit.json says both).  The 32 fit runs (accept-1 and
    accept-inf, 4 rates x 4 seeds) simulated with the shipped profile: for each policy the
    median simulated kernel time per reply is within 15 % of the median (1 - 1/dilation) /
    replies_per_s, and accept-1 costs more per reply than accept-inf, as measured, because
    its packets start more softirq runs.
    """
    fit = json.loads((DOCS / "realsys-fit.json").read_text())
    thesis, prof = load_costs(machine.REFERENCE).us, load_costs("realsys-linux6").us
    for k in machine.KERNEL_COSTS:
        assert prof[k] == pytest.approx(thesis[k] * fit["kernel_scale"], abs=1e-3)
    assert prof["k_softirq_run"] == pytest.approx(fit["kernel_calibration"]["k_softirq_run"]) and prof["k_softirq_run"] > 0
    recs = machine.fit_records()
    assert len(recs) == 32
    sims = realsys_report.simulate_records(recs, "realsys-linux6", 2)
    sim, meas = {}, {}
    for al in ("1", "inf"):
        mine = [(m, s) for m, s in zip(recs, sims) if m.record.accept_limit == al]
        meas[al] = machine.kernel_us_per_reply([m for m, _ in mine])
        sim[al] = statistics.median(s.cpu_share_kernel_net / s.replies_per_s * 1e6 for _, s in mine)
        assert sim[al] == pytest.approx(meas[al], rel=0.15), (al, sim[al], meas[al])
    assert meas["1"] > meas["inf"] and sim["1"] > sim["inf"], (sim, meas)
    runs = {al: statistics.median(s.softirq_runs_per_s / s.replies_per_s for m, s in zip(recs, sims)
                                  if m.record.accept_limit == al) for al in ("1", "inf")}
    assert runs["1"] > 1.2 * runs["inf"], runs


def _rows(rate, pol, meas, sims):
    return [{"rate": rate, "policy": pol, "measured": a, "predicted": b} for a, b in zip(meas, sims)]


def test_order_check_ties_preserved_inverted():
    rows = (_rows(1000.0, "accept-1", [900, 905, 895], [950, 950, 950])      # saturated
            + _rows(1000.0, "accept-10", [700, 705, 695], [800, 800, 800])   # clearly below accept-1
            + _rows(1000.0, "accept-inf", [902, 890, 910], [700, 700, 700])  # tie with accept-1
            + _rows(500.0, "accept-1", [500, 500], [500, 500]) + _rows(500.0, "accept-10", [500, 500], [500, 500])
            + _rows(500.0, "accept-inf", [500, 500], [500, 500]))
    oc = realsys_report.order_check(rows)
    assert oc["saturation_rate"] == 1000.0
    st = {(p["a"], p["b"]): p["status"] for p in oc["pairs"]}
    assert st[("accept-1", "accept-10")] == "preserved"
    assert st[("accept-1", "accept-inf")] == "tie"
    assert st[("accept-10", "accept-inf")] == "inverted"     # measured inf > 10, sim 10 > inf
    assert oc["preserved"] is False and oc["pairs_inverted"] == 1 and oc["pairs_tied"] == 1


def test_heldout_figures_are_computed_from_rows(monkeypatch):
    """Stand-in simulations at +5 % of the measurement give a median error of exactly 5 %."""
    def fake(recs, profile, jobs, sim_overrides=(), cache=None):
        return [RunRecord(source="sim", status="ok", replies_per_s=1.05 * m.record.replies_per_s) for m in recs]
    monkeypatch.setattr(realsys_report, "simulate_records", fake)
    paths = [str(ROOT / "realsys/results/onepacket-select/results.csv"),
             str(ROOT / "realsys/results/onepacket-knot/results.csv")]
    info = realsys_report.realsys_heldout(paths, "realsys-linux6")
    assert info["median_abs_throughput_error"] == pytest.approx(0.05)
    assert set(info["groups"]) == {"AL10", "knot"}
    assert info["n"] == sum(d["past_saturation"] for d in info["rows"] if d["role"] == "held-out") > 0
    # these two files hold no pair of policies whose measured order is beyond two standard errors
    assert info["policy_order_preserved"] is None
    # the replicated runs do: the same sign everywhere keeps their order, and a simulation that
    # ranks them the other way round (replies/s falling as the measured rise) does not
    reps = [str(ROOT / "realsys/results/onepacket-select-reps/results.csv")]
    assert realsys_report.realsys_heldout(reps, "realsys-linux6")["policy_order_preserved"] is True

    def inverted(recs, profile, jobs, sim_overrides=(), cache=None):
        return [RunRecord(source="sim", status="ok", replies_per_s=1e8 / m.record.replies_per_s) for m in recs]
    monkeypatch.setattr(realsys_report, "simulate_records", inverted)
    assert realsys_report.realsys_heldout(reps, "realsys-linux6")["policy_order_preserved"] is False
    # replies/s is every reply received in the window (as the simulator counts), not only
    # those to connections launched in it, which is never more
    new = [d for d in info["rows"] if d["recv_in_window"] == d["recv_in_window"]]
    assert new, "no realsys point with replies_recv_in_window"
    for d in new:
        assert d["measured"] == pytest.approx(d["recv_in_window"])
        assert d["launched_in_window"] <= d["recv_in_window"]


def test_loop_table_compares_the_servers_loop_past_saturation(monkeypatch):
    """Stand-in simulations: accept-inf's C_avg 10 % high, a finite limit's exact, getevents calls 20 %
    low, fds per call as measured.  The headline C_avg error is over accept-inf runs only (a finite
    accept-limit sets C_avg by itself), the table has one row per group and policy past saturation."""
    def fake(recs, profile, jobs, sim_overrides=(), cache=None):
        out = []
        for m in recs:
            r = m.record
            inf = realsys_report._policy(r) == "accept-inf"
            out.append(RunRecord(source="sim", status="ok", replies_per_s=r.replies_per_s,
                                 c_avg=r.c_avg * (1.1 if inf else 1.0),
                                 select_calls_per_s=0.8 * r.select_calls_per_s, fds_per_select=r.fds_per_select))
        return out
    monkeypatch.setattr(realsys_report, "simulate_records", fake)
    paths = [str(ROOT / "realsys/results/onepacket-select/results.csv"),
             str(ROOT / "realsys/results/onepacket-poll/results.csv")]
    info = realsys_report.realsys_heldout(paths, "realsys-linux6")
    text = "\n".join(realsys_report.loop_table(info))
    n_inf = sum(1 for d in info["rows"] if d["role"] == "held-out" and d["past_saturation"]
                and d["policy"] == "accept-inf")
    n_all = sum(1 for d in info["rows"] if d["role"] == "held-out" and d["past_saturation"])
    assert 0 < n_inf < n_all
    assert f"C_avg (accepts per accept-phase) 10.0 % ({n_inf} runs)" in text
    assert f"getevents calls/s 20.0 % ({n_all} runs)" in text
    assert f"fds per getevents call 0.0 % ({n_all} runs)" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and not ln.startswith("| group")]
    groups = {(ln.split(" | ")[0][2:], ln.split(" | ")[1]) for ln in rows}
    assert groups == {("select (fit)", "accept-1"), ("select (fit)", "accept-inf"), ("AL10", "accept-10"),
                      ("poll", "accept-1"), ("poll", "accept-10"), ("poll", "accept-inf")}
    poll_inf = next(ln for ln in rows if ln.startswith("| poll | accept-inf"))
    assert "(10.0 %)" in poll_inf and "(20.0 %)" in poll_inf and "(0.0 %)" in poll_inf
    assert realsys_report.loop_table({"rows": []}) == []
    errs = realsys_report.loop_errors(info)
    assert errs["c_avg"] == {"median_abs_error": pytest.approx(0.1), "runs": n_inf}
    assert errs["select_calls_per_s"] == {"median_abs_error": pytest.approx(0.2), "runs": n_all}


def test_summary_json_fields_match_rows():
    s = json.loads((DOCS / "summary.json").read_text())
    for k in ("heldout_median_abs_throughput_error", "policy_order_preserved", "policy_order_definition",
              "heldout_by_group", "realsys_policy_order"):
        assert k in s, k
    # the committed report has its realsys part: a report written without it (no
    # --real-profile) would leave these checks with nothing to check
    assert s["heldout_median_abs_throughput_error"] is not None, "the committed report lacks its realsys part"
    rows = list(csv.DictReader((DOCS / "realsys-heldout.csv").open()))
    past = [abs(float(r["error"])) for r in rows if r["role"] == "held-out" and r["past_saturation"] == "True" and r["error"] != ""]
    assert s["heldout_runs"] == len(past)
    assert s["heldout_median_abs_throughput_error"] == pytest.approx(statistics.median(past))
    for g, gi in s["heldout_by_group"].items():
        gp = [abs(float(r["error"])) for r in rows if r["group"] == g and r["past_saturation"] == "True" and r["error"] != ""]
        assert gi["median_abs_error_past_saturation"] == pytest.approx(statistics.median(gp))
    pairs = [p for g in s["realsys_policy_order"].values() for p in g["pairs"]]
    ordered = [p for p in pairs if p["status"] != "tie"]
    assert s["policy_order_preserved"] == (all(p["status"] == "preserved" for p in ordered) if ordered else None)
    for p in pairs:   # status follows from the numbers
        sig = abs(p["measured_diff"]) > 2 * p["measured_se"]
        assert (p["status"] == "tie") == (not sig)
        if sig:
            assert (p["status"] == "preserved") == (p["measured_diff"] * p["sim_diff"] > 0)


# ------------------------------------------------------------------ another machine's runs
def _copy_runs(dst: Path, name: str = "onepacket-select", keep=lambda row: True, host: str = "") -> Path:
    """A copy of a committed results folder (rows kept by ``keep``, every point file) under ``dst``;
    ``host``: a folder of another machine's runs under realsys/results (xeon-2026-11-26)."""
    import shutil
    src = ROOT / "realsys/results" / host / name
    d = dst / name
    shutil.copytree(src / "points", d / "points")
    with (src / "results.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    with (d / "results.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if keep(r))
    return d


def test_fit_set_starts_at_the_measured_saturation():
    """The fit set is the runs past saturation by the report's own definition: 4,000 req/s for the
    committed runs, where it was a constant; runs that never saturate cannot be fitted."""
    assert machine.fit_min_rate() == machine.FIT_MIN_RATE == 4000.0
    assert min(m.record.target_rate for m in machine.fit_records()) == 4000.0


@pytest.mark.parametrize("results, fit_json", [
    (None, DOCS / "realsys-fit.json"),
    ("realsys/results/xeon-2026-11-26", "realsys/results/xeon-2026-11-26/realsys-linux6-xeon-fit.json"),
    ("realsys/results/epyc-2026-12-04", "realsys/results/epyc-2026-12-04/realsys-linux6-2026-12-04-fit.json"),
])
def test_the_measured_costs_are_the_fit_runs_not_the_heldout_accept_10(results, fit_json):
    """The fit folders hold the held-out accept-10 runs beside the fit's accept-1 and inf: the
    fixed read, the epoll scale and the measured table are medians over the fit runs alone (until
    7 Dec 2026 over the folders whole), and each committed fit record was made so."""
    res = ROOT / results if results else None
    every = machine.measured_syscalls(machine.fit_dirs(res), min_rate=machine.fit_min_rate(res))
    only = machine.measured_syscalls(machine.fit_dirs(res), min_rate=machine.fit_min_rate(res),
                                     limits=machine.FIT_LIMITS)
    assert 0 < only["points"] < every["points"]
    fixed = machine.fixed_costs(res)
    assert fixed["read"] == fixed["read_eof"] == round(only["per_call_us"]["read"], 4)
    assert fixed["read"] != round(every["per_call_us"]["read"], 4)
    assert machine.syscall_scale(fixed, res) == machine.syscall_scale(fixed, res, limits=machine.FIT_LIMITS) \
        != machine.syscall_scale(fixed, res, limits=None)
    fit = json.loads((ROOT / fit_json).read_text())
    assert fit["measured_limits"] == list(machine.FIT_LIMITS)
    assert fit["measured_fit_set"]["points"] == only["points"]
    assert fit["fixed"]["read"] == fixed["read"]
    assert fit["syscall_scale"] == pytest.approx(machine.syscall_scale(fixed, res))


def test_the_fit_table_says_its_medians_are_the_fit_runs():
    """A record made since 7 Dec 2026 (measured_limits) says its medians are over the fit runs and
    gets no held-out-timings warning; one made before (no measured_limits) gets it, with both sets
    of figures read from the committed point files."""
    fit = json.loads((DOCS / "realsys-fit.json").read_text())
    page = "\n".join(realsys_report.fit_markdown(fit))
    assert "over the fit runs past saturation (32 points: accept-limit 1 and inf;" in page
    assert "accept-10's included" not in page and "Held-out timings in the profile" not in page
    assert "Reading: the fitted accept" in page        # the committed runs' fit, read against them
    old = {k: v for k, v in fit.items() if k != "measured_limits"}
    page = "\n".join(realsys_report.fit_markdown(old))
    assert "the held-out accept-10's included" in page and "Held-out timings in the profile" in page
    assert "Over the fit runs' 32 points alone" in page


def test_a_fit_record_names_its_runs_from_the_checkout_whatever_the_working_directory(tmp_path, monkeypatch):
    xeon = ROOT / "realsys/results/xeon-2026-11-26"
    assert machine._results_label(None) == "realsys/results"
    assert machine._results_label(xeon) == "realsys/results/xeon-2026-11-26"
    monkeypatch.chdir(ROOT / "realsys")
    assert machine._results_label("results/xeon-2026-11-26") == "realsys/results/xeon-2026-11-26"
    assert machine._results_label(tmp_path / "mybox") == str((tmp_path / "mybox").resolve())
    # read back from another directory, the committed runs' record is still the committed runs'
    fit = json.loads((DOCS / "realsys-fit.json").read_text())
    assert fit["results"] == "realsys/results"
    assert any("Reading: the fitted accept" in ln for ln in realsys_report.fit_markdown(fit))


def test_runs_that_never_saturate_are_refused(tmp_path):
    for name in machine.FIT_DIRS:
        _copy_runs(tmp_path, name, keep=lambda r: float(r["target_rate"]) <= 3000)
    with pytest.raises(ValueError, match="no rate past saturation"):
        machine.fit_records(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such results file"):
        machine.fit_min_rate(tmp_path / "nothing")


def test_a_record_reads_the_point_files_of_its_own_folder(tmp_path):
    """Runs kept outside realsys/results (another machine's) were matched with the committed
    folder of the same name, or none: their dilation and contamination came from other runs."""
    d = _copy_runs(tmp_path / "mybox")
    m = next(m for m in load_records(d / "results.csv") if m.record.target_rate == 6400.0
             and m.record.accept_limit == "1")
    j = machine.point_json(m)
    assert j is not None and j["hash"]
    pf = next(p for p in (d / "points").glob("*.json") if json.loads(p.read_text())["hash"] == j["hash"])
    doc = json.loads(pf.read_text())
    doc["server_stats"]["spin_s"] *= 2            # this copy's own dilation, twice the committed one
    pf.write_text(json.dumps(doc))
    import os
    os.utime(d / "points", ns=(1, 1))             # the point cache is keyed by the folder's mtime
    assert machine.dilation(machine.point_json(m)) == pytest.approx(2 * machine.dilation(j))
    assert machine.corrected(m).record.cpu_share_select == pytest.approx(
        m.record.cpu_share_select / machine.dilation(machine.point_json(m)))


def test_machine_fit_refuses_before_simulating(tmp_path, capsys):
    from validation.cli import main
    _copy_runs(tmp_path, "onepacket-select")
    cases = [
        (["--results", str(tmp_path)], "--profile: required with --results"),
        (["--results", str(tmp_path), "--profile", "../x"], "not a profile name"),
        (["--results", str(tmp_path), "--profile", "thesis-2004"], "shipped profile"),
        (["--results", str(tmp_path), "--profile", "realsys-linux6"], "shipped profile"),
        (["--results", str(tmp_path / "none"), "--profile", "mybox"], "no such directory"),
        (["--results", str(tmp_path), "--profile", "mybox"], "onepacket-select-reps/results.csv: no such results file"),
        (["--profile", "mybox", "--fit-json", "x.txt"], "must end in .json"),
    ]
    # a point file of the runs as --fit-json: the fit went ahead and would have replaced it with
    # its record at the end
    for name in ("onepacket-select", "onepacket-select-reps"):
        _copy_runs(tmp_path / "both", name)
    point = sorted((tmp_path / "both" / "onepacket-select" / "points").glob("*.json"))[0]
    cases.append((["--results", str(tmp_path / "both"), "--profile", "mybox", "--fit-json", str(point)],
                  "is in a results folder's points/"))
    for argv, msg in cases:
        assert main(["machine-fit", *argv]) == 2, argv
        assert msg in capsys.readouterr().err, argv
    assert not (ROOT / "simaccept/costs/mybox.toml").exists()


def test_machine_fit_given_one_run_folder_says_to_pass_its_parent(tmp_path, capsys):
    """--results realsys/results/onepacket-select (a run folder) was refused with only
    ".../onepacket-select/onepacket-select/results.csv: no such results file"."""
    from validation.cli import main
    run = _copy_runs(tmp_path, "onepacket-select")
    assert main(["machine-fit", "--results", str(run), "--profile", "mybox"]) == 2
    err = capsys.readouterr().err
    assert f"{run / 'onepacket-select' / 'results.csv'}: no such results file" in err, err
    assert "--results is the folder holding the run folders onepacket-select/ and onepacket-select-reps/" in err, err
    # its parent lacks onepacket-select-reps/: passing it would be refused again
    assert f"{run} holds a results.csv itself, so it is one run folder" in err and "pass its parent" not in err, err
    _copy_runs(tmp_path, "onepacket-select-reps")
    assert main(["machine-fit", "--results", str(run), "--profile", "mybox"]) == 2
    assert f"so it is one run folder: pass its parent, {tmp_path.resolve()}" in capsys.readouterr().err
    # given as ".", the parent is named, not "."
    import os
    old = os.getcwd()
    os.chdir(run)
    try:
        assert main(["machine-fit", "--results", ".", "--profile", "mybox"]) == 2
    finally:
        os.chdir(old)
    assert f"pass its parent, {tmp_path.resolve()}" in capsys.readouterr().err
    # an empty folder: what it should hold, and no "pass its parent"
    (tmp_path / "empty").mkdir()
    assert main(["machine-fit", "--results", str(tmp_path / "empty"), "--profile", "mybox"]) == 2
    err = capsys.readouterr().err
    assert "the folder holding the run folders onepacket-select/ and onepacket-select-reps/" in err, err
    assert "pass its parent" not in err, err
    assert not (ROOT / "simaccept/costs/mybox.toml").exists()


def test_where_machine_fit_writes_a_profile_and_machine_check_finds_it(tmp_path, monkeypatch):
    """In a checkout a machine's profile goes into simaccept/costs (loadable by name, committed
    like realsys-linux6-xeon); installed, beside its runs, where machine-check looks for it by name;
    the fit's record is named after the profile either way."""
    from validation import records
    runs = tmp_path / "mybox"
    runs.mkdir()
    assert machine.profile_file(runs, "mine") == ROOT / "simaccept/costs/mine.toml"
    monkeypatch.setattr(records, "CHECKOUT", False)
    assert machine.profile_file(runs, "mine") == runs / "mine.toml"
    assert machine.resolve_profile(runs, "mine") is None
    (runs / "mine.toml").write_text((ROOT / "simaccept/costs/realsys-linux6-xeon.toml").read_text())
    assert machine.resolve_profile(runs, "mine") == str(runs / "mine.toml")
    assert machine.resolve_profile(tmp_path, "mine") is None              # another folder's runs
    assert machine.resolve_profile(tmp_path, str(runs / "mine.toml")) == str(runs / "mine.toml")
    assert machine.resolve_profile(runs, "realsys-linux6") == "realsys-linux6"       # shipped: by name
    assert machine.default_fit_json(runs, "mine") == machine.default_fit_json(runs, str(runs / "mine.toml")) \
        == runs / "mine-fit.json"
    # the whole check, by name, with the profile beside the runs and its fit's record (the Xeon's pair)
    from validation.cli import main
    _copy_runs(runs, keep=lambda r: r["accept_limit"] == "10" and float(r["target_rate"]) >= 4800)
    fit = json.loads((ROOT / "realsys/results/xeon-2026-11-26/realsys-linux6-xeon-fit.json").read_text())
    (runs / "mine-fit.json").write_text(json.dumps(fit))
    assert main(["machine-check", "--results", str(runs), "--profile", "mine", "--out", str(tmp_path / "o")]) == 0
    out = json.loads((tmp_path / "o" / "machine-check.json").read_text())
    assert out["profile"] == str(runs / "mine.toml") and out["heldout_runs"] == 3
    assert out["sim_overrides"] == machine.fit_sim_overrides(fit)


def _bad_json(tmp_path):
    (tmp_path / "bad.json").write_text("not json")
    return tmp_path / "bad.json"


def test_machine_check_refusals(tmp_path, capsys):
    from validation.cli import main
    cases = [
        (["--results", str(tmp_path), "--profile", "nope", "--out", str(tmp_path / "o")], "no cost profile 'nope'"),
        (["--results", str(tmp_path / "none"), "--profile", "realsys-linux6", "--out", str(tmp_path / "o")],
         "no such directory"),
        (["--results", str(tmp_path), "--profile", "realsys-linux6", "--out", str(tmp_path / "o")],
         "none of the held-out results folders"),
        (["--results", str(tmp_path), "--profile", "realsys-linux6", "--out", ""], "--out"),
        (["--results", str(tmp_path), "--profile", "realsys-linux6", "--out", str(tmp_path / "o"),
          "--fit-json", str(tmp_path / "none.json")], "none.json: No such file"),
        (["--results", str(tmp_path), "--profile", "realsys-linux6", "--out", str(tmp_path / "o"),
          "--fit-json", str(_bad_json(tmp_path))], "bad.json: Expecting value"),
    ]
    for argv, msg in cases:
        assert main(["machine-check", *argv]) == 2, argv
        assert msg in capsys.readouterr().err, argv
    # a held-out folder whose results.csv has a header and no run: the message's brackets were empty
    empty = tmp_path / "empty"
    (empty / "onepacket-select").mkdir(parents=True)
    (empty / "onepacket-select" / "results.csv").write_text(
        "source,scenario,server,mux,accept_limit,workload,target_rate,duration_s,replies_per_s\n")
    assert main(["machine-check", "--results", str(empty), "--profile", "realsys-linux6",
                 "--out", str(tmp_path / "o")]) == 2
    assert ("no held-out run past saturation to compare (0 held-out runs read from 1 results files"
            in capsys.readouterr().err)



@pytest.mark.parametrize("make,why", [
    (lambda f: f.write_text("garbage"), "not a point file (Expecting value"),
    (lambda f: f.mkdir(), "not a point file (a directory)"),
    (lambda f: f.write_text('{"server_stats": [1]}'), "server_stats is a JSON list, not an object"),
])
@pytest.mark.parametrize("cmd", ["machine-fit", "machine-check"])
def test_a_damaged_point_file_is_refused_naming_it(tmp_path, capsys, make, why, cmd):
    # machine-fit and machine-check ended in a traceback (IsADirectoryError, AttributeError) or
    # exit 2 with json's bare "Expecting value: line 1 column 1 (char 0)", naming no file
    from validation.cli import main
    for name in ("onepacket-select", "onepacket-select-reps"):
        _copy_runs(tmp_path, name)
    bad = tmp_path / "onepacket-select" / "points" / "0000-damaged.json"
    make(bad)
    argv = (["machine-fit", "--results", str(tmp_path), "--profile", "mybox-damaged"] if cmd == "machine-fit" else
            ["machine-check", "--results", str(tmp_path), "--profile", "realsys-linux6", "--out", str(tmp_path / "o")])
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{bad}: " in err and why in err, err
    assert not (ROOT / "simaccept/costs/mybox-damaged.toml").exists() and not (tmp_path / "o").exists()


@pytest.mark.parametrize("content,why", [
    (None, "/dev/zero: not a regular file, not a fit's record"),
    ("[1, 2]", "a JSON list, not a fit's record"),
    ('{"sim_overrides": 5}', "sim_overrides: 5 is not a list of SECTION.KEY=VALUE strings"),
    (b"\xff\xfe{}", "not UTF-8"),
])
@pytest.mark.parametrize("given", [True, False])
def test_machine_check_refuses_a_fit_record_that_is_not_one(tmp_path, capsys, content, why, given):
    # --fit-json /dev/zero was read until MemoryError; a list or "sim_overrides": 5 ended in a
    # traceback (AttributeError, TypeError); the default DIR/NAME-fit.json, damaged, was exit 2 with
    # json's bare "Expecting value", naming no file
    from validation.cli import main
    runs = tmp_path / "mybox"
    _copy_runs(runs, keep=lambda r: r["accept_limit"] == "10" and float(r["target_rate"]) >= 4800)
    f = Path("/dev/zero") if content is None else runs / "realsys-linux6-fit.json"
    if content is None and not given:
        (runs / "realsys-linux6-fit.json").symlink_to("/dev/zero")
        f = runs / "realsys-linux6-fit.json"
        why = "not a regular file, not a fit's record"
    elif isinstance(content, bytes):
        f.write_bytes(content)
    elif content is not None:
        f.write_text(content)
    argv = ["machine-check", "--results", str(runs), "--profile", "realsys-linux6", "--out", str(tmp_path / "o")]
    assert main(argv + (["--fit-json", str(f)] if given else [])) == 2
    err = capsys.readouterr().err
    assert f"--fit-json: {f}: " in err and why in err, err
    assert not (tmp_path / "o").exists()

# every committed fit record beside the profile its fit wrote
COMMITTED_FIT_PAIRS = [
    ("realsys-linux6", "docs/validation/realsys-fit.json"),
    ("thesis-2004", "docs/validation/thesis-fit.json"),
    ("realsys-linux6-xeon", "realsys/results/xeon-2026-11-26/realsys-linux6-xeon-fit.json"),
    ("realsys-linux6-2026-12-04", "realsys/results/epyc-2026-12-04/realsys-linux6-2026-12-04-fit.json"),
]


@pytest.mark.parametrize("profile,record", COMMITTED_FIT_PAIRS)
def test_each_committed_fit_record_is_of_its_profile(profile, record):
    rec = json.loads((ROOT / record).read_text())
    assert machine.fit_record_disagrees(rec, profile) is None
    assert machine.read_fit_record_of(ROOT / record, profile) == rec


def _record_moved(tmp_path, key="user_per_request", by=1.0) -> Path:
    """realsys-linux6's record with one fitted cost moved: the record of another fit."""
    rec = json.loads(machine.FIT_JSON.read_text())
    rec["fit"]["params"][key] += by
    f = tmp_path / "moved-fit.json"
    f.write_text(json.dumps(rec))
    return f


@pytest.mark.parametrize("part", ["params", "fixed", "derived", "threads", "hand_set_after_fit", "unknown cost"])
def test_a_fit_record_of_another_fit_is_told_from_its_profile(part):
    rec = json.loads(machine.FIT_JSON.read_text())
    if part == "params":
        rec["fit"]["params"]["close"] = 7.0
    elif part == "hand_set_after_fit":          # thesis-fit's: set by hand over the fitted value
        rec["hand_set_after_fit"] = {"close": 7.0}
    elif part == "unknown cost":
        rec["derived"]["no_such_cost"] = 1.0
    else:
        k = next(iter(rec[part]))
        rec[part][k] += 0.5
    why = machine.fit_record_disagrees(rec, "realsys-linux6")
    assert why and "the record of another fit" in why, why
    assert ("no such cost" in why) == (part == "unknown cost"), why


def test_machine_check_refuses_the_record_of_another_fit(tmp_path, capsys):
    # machine-fit writes the profile, then the record: stopped between the two, the new profile
    # stood beside the last fit's record, and machine-check simulated with its link delay and
    # printed its per-syscall table as the profile's
    from validation.cli import main
    runs = tmp_path / "mybox"
    _copy_runs(runs, keep=lambda r: r["accept_limit"] == "10" and float(r["target_rate"]) >= 4800)
    moved = _record_moved(tmp_path)
    argv = ["machine-check", "--results", str(runs), "--profile", "realsys-linux6", "--out", str(tmp_path / "o")]
    assert main(argv + ["--fit-json", str(moved)]) == 2
    err = capsys.readouterr().err
    assert f"--fit-json: {moved}: the record gives user_per_request = " in err and "another fit" in err, err
    (runs / "realsys-linux6-fit.json").write_bytes(moved.read_bytes())     # the default path too
    assert main(argv) == 2
    assert f"{runs / 'realsys-linux6-fit.json'}: the record gives" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
    with pytest.raises(ValueError, match="the record gives user_per_request"):     # the library call too
        realsys_report.check(runs, "realsys-linux6", tmp_path / "o", jobs=1, log=lambda *a: None)


def test_the_report_refuses_a_machine_profile_beside_another_fits_record(tmp_path):
    from validation.report import ReportError, check_real
    runs = _copy_runs(tmp_path / "mybox", keep=lambda r: r["accept_limit"] == "10")
    check_real([str(runs / "results.csv")], "realsys-linux6-xeon")      # no record there: nothing to check
    (tmp_path / "mybox" / "realsys-linux6-xeon-fit.json").write_bytes(machine.FIT_JSON.read_bytes())
    with pytest.raises(ReportError, match="--real-profile: .*realsys-linux6-xeon-fit.json: the record gives"):
        check_real([str(runs / "results.csv")], "realsys-linux6-xeon")


def test_the_thesis_profile_section_flags_a_record_of_another_fit(tmp_path, monkeypatch):
    from validation import report, thesis_fit
    assert not any("Not thesis-2004's fit" in x for x in report.thesis_fit_markdown())
    rec = json.loads(thesis_fit.FIT_JSON.read_text())
    rec["fit"]["params"]["select_base"] += 1.0
    (tmp_path / "thesis-fit.json").write_text(json.dumps(rec))
    monkeypatch.setattr(thesis_fit, "FIT_JSON", tmp_path / "thesis-fit.json")
    flagged = [x for x in report.thesis_fit_markdown() if "Not thesis-2004's fit" in x]
    assert len(flagged) == 1 and "the record gives select_base = " in flagged[0], flagged


def test_machine_check_writes_the_heldout_figures(tmp_path):
    """Held-out runs kept in a folder of one's own, predicted with a profile: the page, the plot and
    the headline JSON, the median computed from the rows it simulated."""
    runs = tmp_path / "mybox"
    _copy_runs(runs, keep=lambda r: r["accept_limit"] == "10" and float(r["target_rate"]) >= 4800)
    s = realsys_report.check(runs, "realsys-linux6", tmp_path / "check", jobs=2, log=lambda *a: None)
    out = json.loads((tmp_path / "check" / "machine-check.json").read_text())
    assert out["heldout_runs"] == s["heldout_runs"] == 3 and out["profile"] == "realsys-linux6"
    assert set(out["heldout_by_group"]) == {"AL10"}
    assert "AMD EPYC" in out["machine"]
    md = (tmp_path / "check" / "realsys.md").read_text()
    assert f"{100 * out['heldout_median_abs_throughput_error']:.1f} %" in md
    assert (tmp_path / "check" / "realsys-select.png").stat().st_size > 0
    assert 0 <= out["heldout_median_abs_throughput_error"] < 0.2
    loop = out["heldout_loop_median_abs_error"]
    # accept-10 sets C_avg itself: no run counts for it; the loop's other figures are real simulations
    assert loop["c_avg"] == {"median_abs_error": None, "runs": 0}
    assert loop["select_calls_per_s"]["runs"] == loop["fds_per_select"]["runs"] == 3
    assert 0 <= loop["fds_per_select"]["median_abs_error"] < 0.1
    assert "### The server's loop" in md and "| AL10 | accept-10 | 3 |" in md


def test_another_machines_fit_starts_from_its_own_timings():
    """measured_start: the per-call medians for accept/writev/close, select's line through the
    measured accept-1 and accept-inf calls, the user time left over by the server's clock."""
    xeon = ROOT / "realsys/results/xeon-2026-11-26"
    st = machine.measured_start(xeon)
    lo = machine.fit_min_rate(xeon)
    per = machine.measured_syscalls(machine.fit_dirs(xeon), min_rate=lo, limits=machine.FIT_LIMITS)["per_call_us"]
    for k in ("accept", "writev", "close"):
        assert st[k] == pytest.approx(per[k], abs=1e-4)
    sel = {d["accept_limit"]: d for d in machine.select_by_interest(machine.fit_dirs(xeon), min_rate=lo)}
    line = lambda d: max(st["select_base"], 0.05) + st["select_per_fd"] * d["interest_set"]  # noqa: E731
    assert line(sel["inf"]) == pytest.approx(sel["inf"]["us_per_call"], rel=0.02)
    assert 0 < st["user_per_request"] < 20 and st["k_syn_drop"] == machine.HISTORY_START["k_syn_drop"]
    assert lo == 4800.0           # the Xeon saturates later than the committed EPYC runs (4,000)
    prof = tomllib.loads((ROOT / "simaccept/costs/realsys-linux6-xeon.toml").read_text())["costs"]
    fit = json.loads((xeon / "realsys-linux6-xeon-fit.json").read_text())
    assert fit["fit"]["start"] == pytest.approx({k: st[k] for k in machine.FIT_PARAMS})
    assert all(prof[k] == pytest.approx(v) for k, v in fit["fit"]["params"].items())
    assert fit["machine"].startswith("2 CPU Intel(R) Xeon(R)")


def test_the_report_shows_the_fit_of_the_profile_it_predicts_with():
    """report --real ... --real-profile P: the per-syscall table is P's fit (beside the runs, where
    machine-fit writes it), not the committed realsys-linux6 fit; none when P has no fit record."""
    from validation.report import _machine_fit_info
    xeon = ROOT / "realsys/results/xeon-2026-11-26"
    info = {"profile": "realsys-linux6-xeon", "files": [str(xeon / "onepacket-select/results.csv")],
            "groups": {}, "rows": []}
    fit = _machine_fit_info(info)
    assert fit is not None and fit["profile"] == "realsys-linux6-xeon" and fit["machine"].startswith("2 CPU Intel")
    assert _machine_fit_info({**info, "profile": "thesis-2004-hand"}) is None
    committed = _machine_fit_info({**info, "profile": "realsys-linux6"})
    assert committed["profile"] == "realsys-linux6" and committed["results"] == "realsys/results"
    assert committed["machine"].startswith("2 CPU AMD EPYC")


def test_another_machines_fit_simulates_its_own_measured_link_delay():
    """measured_link_delay: half the median first-SYN-to-established time of the fit runs (the veth
    round trip is the host's: 83 us on the EPYC, 29 us on the Xeon); the Xeon fit simulated with it
    and says so, the committed fit keeps the scenario files' delay."""
    xeon = ROOT / "realsys/results/xeon-2026-11-26"
    p50 = []
    for pth in [*(xeon / "onepacket-select").glob("points/*.json"), *(xeon / "onepacket-select-reps").glob("points/*.json")]:
        j = json.loads(pth.read_text())
        al, rate = j["point"].split(";")
        if al.split("=")[1] in ("1", "inf") and float(rate.split("=")[1]) >= 4800:
            p50.append(j["generator"]["connect_ms"]["p50"])
    link = machine.measured_link_delay(xeon)
    assert link["runs"] == len(p50) == 72
    assert link["delay_ms"] == pytest.approx(statistics.median(p50) / 2, abs=1e-4)
    assert 0.005 < link["delay_ms"] < 0.025 < machine.measured_link_delay()["delay_ms"] < 0.05
    fit = json.loads((xeon / "realsys-linux6-xeon-fit.json").read_text())
    assert machine.fit_sim_overrides(fit) == [f"network.delay_ms={link['delay_ms']!r}"]
    head = (ROOT / "simaccept/costs/realsys-linux6-xeon.toml").read_text()
    assert f"simulation overrides: {machine.fit_sim_overrides(fit)!r}" in head      # what CostFitter simulated
    assert f"network.delay_ms = {link['delay_ms']:g}" in head
    assert machine.fit_sim_overrides(json.loads(machine.FIT_JSON.read_text())) == []


def test_machine_check_and_the_report_simulate_with_the_fits_overrides(tmp_path):
    """What the fit simulated with, its held-out runs are simulated with: machine-check reads the
    fit record's sim_overrides (and reports them), the report's --real-profile path too, --set after."""
    from validation.report import realsys_heldout
    runs = tmp_path / "xeonbox"
    _copy_runs(runs, "onepacket-select-reps", keep=lambda r: r["accept_limit"] == "10"
               and float(r["target_rate"]) == 4800 and r["seed"] in ("21.0", "22.0"), host="xeon-2026-11-26")
    fit = json.loads((ROOT / "realsys/results/xeon-2026-11-26/realsys-linux6-xeon-fit.json").read_text())
    over = machine.fit_sim_overrides(fit)
    assert over and over[0].startswith("network.delay_ms=")
    quiet = lambda *a: None  # noqa: E731
    plain = realsys_report.check(runs, "realsys-linux6-xeon", tmp_path / "plain", jobs=2, log=quiet)
    (runs / "realsys-linux6-xeon-fit.json").write_text(json.dumps(fit))
    fitted = realsys_report.check(runs, "realsys-linux6-xeon", tmp_path / "fitted", jobs=2, log=quiet)
    assert plain["sim_overrides"] == [] and fitted["sim_overrides"] == over
    assert " ".join(over) in (tmp_path / "fitted" / "realsys.md").read_text()
    # the overrides reach the simulations: the short link halves the ACK-time overflows (448 -> 254 /s)
    lo = {}
    for name in ("plain", "fitted"):
        row = [ln for ln in (tmp_path / name / "realsys.md").read_text().splitlines()
               if ln.startswith("| select | accept-10 | 2 |")]
        lo[name] = float(row[0].split("|")[10].split("/")[1].replace(",", ""))
    assert lo["fitted"] < 0.8 * lo["plain"], lo
    info = realsys_heldout([str(runs / "onepacket-select-reps" / "results.csv")], "realsys-linux6-xeon", 2,
                           ["client.timeout=2.0"])
    assert info["sim_overrides"] == over + ["client.timeout=2.0"]


def test_the_fit_table_says_which_runs_the_fit_saw():
    """The per-syscall table's header counts the fit's own records (rates and seeds); it said
    "4 seeds" and "-6,400" whatever the fit was (the Xeon refit has 12 seeds)."""
    pages = {}
    for name, path in (("committed", machine.FIT_JSON),
                       ("xeon", ROOT / "realsys/results/xeon-2026-11-26/realsys-linux6-xeon-fit.json")):
        fit = json.loads(path.read_text())
        pages[name] = next(ln for ln in realsys_report.fit_markdown(fit) if "Fitted by" in ln)
    assert "32 records: select accept-1 and accept-inf at 4,000-6,400 req/s, 4 seeds;" in pages["committed"]
    assert "72 records: select accept-1 and accept-inf at 4,800-6,400 req/s, 12 seeds;" in pages["xeon"]


def test_the_profile_fitted_to_the_runs_of_4_dec_is_its_fit_record():
    """realsys-linux6-2026-12-04: the shipped costs are the fit record's, fitted with the Cauchy loss
    to that day's runs (realsys/results/README.md, *epyc-2026-12-04*), with one residual per seed."""
    day = ROOT / "realsys/results/epyc-2026-12-04"
    prof = tomllib.loads((ROOT / "simaccept/costs/realsys-linux6-2026-12-04.toml").read_text())["costs"]
    fit = json.loads((day / "realsys-linux6-2026-12-04-fit.json").read_text())
    assert all(prof[k] == pytest.approx(v) for k, v in fit["fit"]["params"].items())
    assert fit["fit"]["loss"] == "cauchy" and fit["fit"]["f_scale"] == 0.1
    assert len(fit["fit"]["residuals"]) == len(fit["fit_records"]) * len(machine.FIT_METRICS)
    assert fit["machine"].startswith("2 CPU AMD EPYC") and fit["results"] == "realsys/results/epyc-2026-12-04"
    head = (ROOT / "simaccept/costs/realsys-linux6-2026-12-04.toml").read_text()
    assert "loss: cauchy (f_scale 0.1)" in head
    check = json.loads((day / "check-refit/machine-check.json").read_text())
    assert check["profile"] == "realsys-linux6-2026-12-04" and check["heldout_median_abs_throughput_error"] < 0.10


def test_machine_check_keeps_its_simulations_in_a_cache_and_reuses_them(tmp_path, monkeypatch):
    # without one, a check stopped by Ctrl-C or SIGTERM had simulated everything for nothing
    from validation import machine
    from validation.cli import main
    runs = tmp_path / "mybox"
    _copy_runs(runs, keep=lambda r: r["accept_limit"] == "10" and float(r["target_rate"]) >= 4800)
    argv = ["machine-check", "--results", str(runs), "--profile", "realsys-linux6", "--jobs", "2"]
    cache = tmp_path / "cache"
    assert main(argv + ["--out", str(tmp_path / "a"), "--cache", str(cache)]) in (None, 0)
    first = json.loads((tmp_path / "a" / "machine-check.json").read_text())
    kept = sorted(p.name for p in cache.rglob("*.json"))
    assert len(kept) == 3, kept
    # run again: every simulation is read back, none is run, the figures are the same
    import validation.fitter as fitter

    def no_simulation(*a, **k):
        raise AssertionError("a cached simulation was run again")
    monkeypatch.setattr(fitter, "_simulate_json", no_simulation)
    main(argv + ["--out", str(tmp_path / "b"), "--cache", str(cache)])
    again = json.loads((tmp_path / "b" / "machine-check.json").read_text())
    assert again["heldout_median_abs_throughput_error"] == first["heldout_median_abs_throughput_error"]
    assert sorted(p.name for p in cache.rglob("*.json")) == kept
    # and by default they go under out/validation-cache/machine-check
    seen = {}
    monkeypatch.setattr(realsys_report, "realsys_heldout",
                        lambda *a, **k: seen.update(k) or {"median_abs_throughput_error": None, "note": "stop"})
    main(argv + ["--out", str(tmp_path / "c")])
    assert seen["cache"] == machine.CHECK_CACHE


def test_machine_fit_passes_its_cache_to_every_simulation(tmp_path, monkeypatch):
    # the kernel calibration and the fit simulated without one: a stopped fit lost all of it
    import validation.fitter as fitter
    from validation import machine
    from validation.cli import main
    caches = []

    class Stop(Exception):
        pass

    def fake(recs, profile, jobs, sim_overrides=(), source="<report>", cache=None):
        caches.append(cache)
        raise Stop
    monkeypatch.setattr(fitter, "simulate_records", fake)
    with pytest.raises(Stop):
        machine.fit(jobs=1, max_nfev=1, verbose=0, cache=tmp_path / "c")
    assert caches == [tmp_path / "c"]
    # the fit's own simulations too
    monkeypatch.setattr(machine, "calibrate_kernel", lambda *a, **k: {"costs": {}} if a[6] == tmp_path / "c" else None)

    def fitter_of(**kw):
        caches.append(kw.get("cache"))
        raise Stop
    monkeypatch.setattr(fitter, "CostFitter", fitter_of)
    with pytest.raises(Stop):
        machine.fit(jobs=1, max_nfev=1, verbose=0, cache=tmp_path / "c")
    assert caches == [tmp_path / "c"] * 2
    got = {}
    monkeypatch.setattr(machine, "fit", lambda *a, **k: got.update(k) or {})
    main(["machine-fit", "--cache", str(tmp_path / "d")])
    assert got["cache"] == str(tmp_path / "d")
    main(["machine-fit"])
    assert got["cache"] == machine.FIT_CACHE

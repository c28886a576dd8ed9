"""validation.phases: the μserver's Accept-Inf accept-phases, one at a time."""
from __future__ import annotations

import json
import math

import pytest

from simaccept.sim import simulate
from validation import phases
from validation.cli import main
from validation.records import load_thesis, record_seed, scenario_for


def _row(overrides=(), duration=4.0, label=phases.ROW):
    m = next(m for m in load_thesis() if m.label == label)
    return scenario_for(m, overrides=['costs.profile="thesis-2004"', f"scenario.duration={duration}", *overrides],
                        seed=record_seed(m.record))


@pytest.fixture(scope="module")
def traced():
    sc = _row()
    return sc, phases.trace_phases(sc, t_from=1.0)


def test_the_probe_leaves_the_run_as_simulate_runs_it(traced):
    sc, res = traced
    plain = simulate(sc, raise_errors=True).to_dict()
    for k in ("replies_per_s", "accept_rate", "select_calls_per_s", "fds_per_select", "c_avg",
              "drops_acceptq_full", "drops_drop_request", "drops_listen_overflow"):
        assert res["record"][k] == plain[k], k


def test_every_phase_takes_its_queue_and_what_completes_during_it(traced):
    _, res = traced
    p = res["phases"]
    assert p["phases"] > 50
    assert p["unbalanced_phases"] == 0 and p["left_queue_otherwise"] == 0
    assert p["accepted_mean"] == pytest.approx(p["q0_mean"] + p["completions_mean"])
    # completions inside phases, counted per event kind, are the phases' completions
    n_in = sum(e["completions_per_s_in"] for e in res["events"].values()) * p["in_phase_s"]
    assert n_in == pytest.approx(p["completions_mean"] * p["phases"], rel=1e-9)
    # each accept costs at least its nominal accept + setsockopt; the kernel only stretches it
    assert p["per_accept_us"] >= p["nominal_accept_us"] * 0.999
    assert 0 < p["kernel_share_in_phase"] < 1
    # only handshake-completing events put connections in the queue
    makers = {k for k, e in res["events"].items() if e["completions_per_s_in"] + e["completions_per_s_out"] > 0}
    assert makers and makers <= {"handshake ACK", "request retransmitted", "duplicate ACK", "FIN", "request"}


@pytest.mark.parametrize("override, key", [
    ("server.accept_limit=10", "server.accept_limit"),
    ('server.kind="knot"', "server.kind"),
])
def test_other_servers_and_limits_are_refused_by_name(override, key):
    with pytest.raises(phases.PhasesError, match=key.replace(".", r"\.")):
        phases.trace_phases(_row([override], duration=1.0), t_from=0.0)


def test_tux_phases_end_at_the_first_closed_child_and_balance():
    sc = _row(duration=4.0, label="tux/one-packet/-/accept-inf@23000")
    res = phases.trace_phases(sc, t_from=0.0)
    plain = simulate(sc, raise_errors=True).to_dict()
    for k in ("replies_per_s", "accept_rate", "c_avg"):
        assert res["record"][k] == plain[k], k
    p = res["phases"]
    assert p["unbalanced_phases"] == 0 and p["left_queue_otherwise"] == 0
    # the thesis's clients close some connections before TUX reaches them: those end phases
    assert 0 < p["ended_by_closed_share"] < 1 and p["left_in_queue_mean"] > 0
    # the probe's phases are TUX's own: traced from 0, as the record counts them (no warm-up),
    # their mean is the record's C_avg, released children uncounted
    assert p["accepted_mean"] == pytest.approx(res["record"]["c_avg"], rel=1e-12)


def test_a_start_past_the_run_is_refused():
    with pytest.raises(phases.PhasesError, match="--from"):
        phases.trace_phases(_row(duration=1.0), t_from=5.0)


def test_cli_refuses_bad_seeds_and_a_file_as_cache(tmp_path, capsys):
    f = tmp_path / "f"
    f.write_text("")
    assert main(["phases", "--out", str(tmp_path / "o"), "--cache", str(f)]) == 2
    assert "not a directory" in capsys.readouterr().err
    assert main(["phases", "--out", str(tmp_path / "o"), "--seeds", "0", "--cache", str(tmp_path / "c")]) == 2
    assert "--seeds" in capsys.readouterr().err
    assert main(["phases", "--out", str(tmp_path / "o"), "--seeds", "1000000000", "--cache", str(tmp_path / "c")]) == 2
    assert "more than 100,000" in capsys.readouterr().err
    assert main(["phases", "--out", str(tmp_path / "o"), "--from", "500", "--cache", str(tmp_path / "c")]) == 2
    assert "--from" in capsys.readouterr().err
    assert main(["phases", "--out", str(tmp_path / "o"), "--rows", "no/such/row", "--cache", str(tmp_path / "c")]) == 2
    assert "--rows: no thesis row no/such/row" in capsys.readouterr().err
    assert not (tmp_path / "o" / "phases.md").exists()


# ------------------------------------------------------------------ a scenario of one's own
_OWN = ["workload.rate=27000", "server.accept_limit=inf", "scenario.warmup=1", "scenario.duration=2"]


def test_a_scenario_of_ones_own_is_traced_over_its_own_window(tmp_path):
    from simaccept.scenario import load_scenario
    res = phases.run(out=tmp_path / "o", jobs=1, n_seeds=1, profile=None, cache=tmp_path / "c", t_from=None,
                     scenario="thesis/userver-onepacket", overrides=_OWN)
    label = "thesis/userver-onepacket " + " ".join(_OWN)
    assert res["rows"] == [label] and res["thesis"] == {label: None}
    assert res["from_s"] == 1.0 and res["window"] == "the scenario's: 1 s warm-up + 2 s"
    assert res["profile"] == "thesis-2004"          # the file's own
    # the race's three client settings all differ for this file: each traced once, seed 2004
    assert [(r["clients"], r["seed"]) for r in res["runs"]] == [(c, 2004) for c in phases.CLIENTS]
    shipped = res["runs"][0]
    plain = simulate(load_scenario("thesis/userver-onepacket", overrides=_OWN), raise_errors=True).to_dict()
    assert shipped["record"]["replies_per_s"] == plain["replies_per_s"]
    assert shipped["phases"]["unbalanced_phases"] == 0 and shipped["phases"]["phases"] > 10
    md = (tmp_path / "o" / "phases.md").read_text()
    assert f"## {label}" in md and "Scenario `thesis/userver-onepacket` with `workload.rate=27000`" in md
    assert "Thesis:" not in md


@pytest.mark.parametrize("argv, msg", [
    (["--scenario", "thesis/userver-onepacket", "--set", "workload.rate=27000"], "server.accept_limit"),
    (["--scenario", "thesis/userver-onepacket", "--set", "server.accept_limit=inf"], "workload.rate: a sweep axis"),
    (["--scenario", "thesis/userver-onepacket", "--set", "server.accept_limt=inf"], "accept_limt"),
    (["--scenario", "no/such/scenario.toml"], "--scenario no/such/scenario.toml"),
    (["--set", "workload.rate=27000"], "--set: only with --scenario"),
    (["--scenario", "thesis/knot-onepacket", "--set", "workload.rate=27000", "--set", "server.accept_limit=inf"],
     "server.kind"),
])
def test_a_scenario_that_cannot_be_traced_is_refused_by_name_before_any_run(tmp_path, capsys, argv, msg):
    assert main(["phases", "--out", str(tmp_path / "o"), "--cache", str(tmp_path / "c"), *argv]) == 2
    assert msg in capsys.readouterr().err
    assert not (tmp_path / "o" / "phases.md").exists() and not (tmp_path / "c").exists()


def test_rows_and_a_scenario_exclude_each_other_and_a_partial_run_keeps_off_the_committed_page(capsys):
    from validation.cli import _parser, _partial_phases
    with pytest.raises(SystemExit) as e:
        main(["phases", "--rows", phases.ROW, "--scenario", "thesis/userver-onepacket"])
    assert e.value.code == 2 and "not allowed with" in capsys.readouterr().err
    p = _parser()
    assert not _partial_phases(p.parse_args(["phases"]))
    assert not _partial_phases(p.parse_args(["phases", "--rows", ",".join(phases.ROWS), "--from", "20"]))
    for argv in (["--rows", phases.ROW], ["--scenario", "x.toml"], ["--profile", "realsys-linux6"], ["--from", "5"]):
        assert _partial_phases(p.parse_args(["phases", *argv])), argv

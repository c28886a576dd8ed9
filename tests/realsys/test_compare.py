"""realsys.compare: the same runs measured twice, paired by folder, point and seed."""
from __future__ import annotations

import json

import pytest

from realsys.compare import compare, main, markdown
from realsys.runner import append_record
from simaccept.record import RunRecord

P = "server.accept_limit={al};workload.rate={rate}"


def _rec(al, rate, replies, seed=2004.0, status="ok"):
    return RunRecord(source="real", point=P.format(al=al, rate=rate), server="userver", mux="select",
                     accept_limit=al, target_rate=rate, replies_per_s=replies, conn_attempts_per_s=rate,
                     duration_s=4.0, status=status, seed=seed)


def _folder(root, name, recs):
    d = root / name
    d.mkdir(parents=True)
    for r in recs:
        append_record(d / "results.csv", r)
    return d


def test_pairs_by_point_and_seed_and_summarises_past_the_rate(tmp_path):
    _folder(tmp_path / "a", "sel", [_rec("1", 2000.0, 2000.0), _rec("1", 4000.0, 3000.0),
                                    _rec("1", 4000.0, 3200.0, seed=11.0), _rec("inf", 4000.0, 3500.0)])
    _folder(tmp_path / "b", "sel", [_rec("1", 2000.0, 2000.0), _rec("1", 4000.0, 3300.0),
                                    _rec("1", 4000.0, 3200.0, seed=11.0), _rec("inf", 4000.0, 0.0, status="failed"),
                                    _rec("1", 4800.0, 3400.0)])
    c = compare(tmp_path / "a", tmp_path / "b", from_rate=4000.0)
    s = {r["series"]: r for r in c["series"]}
    assert set(s) == {"userver/select/accept-1"}            # the inf pair did not finish after
    one = s["userver/select/accept-1"]
    assert one["all"] == {"n": 3, "median": 1.0, "min": 1.0, "max": 1.1}
    assert one["past"]["n"] == 2 and one["past"]["median"] == pytest.approx(1.05)   # seed 11 (1.0) with 2004 (1.1)
    assert c["unpaired"] == {"before_only": 0, "after_only": 1, "not_ok": 1}
    assert "| sel | userver/select/accept-1 | 1.000 | 1.000 – 1.100 | 3 | 1.050 |" in markdown(c)


def test_a_zero_before_has_no_ratio_and_the_json_is_strict(tmp_path, capsys):
    _folder(tmp_path / "a", "x", [_rec("1", 4000.0, 0.0)])
    _folder(tmp_path / "b", "x", [_rec("1", 4000.0, 10.0)])
    assert main([str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 0
    out = capsys.readouterr().out
    c = json.loads(out, parse_constant=lambda k: pytest.fail(f"{k} in the JSON"))
    assert c["pairs"][0]["ratio"] is None and c["overall"]["all"]["n"] == 0


def test_two_results_folders_compare_directly(tmp_path):
    a = _folder(tmp_path / "a", "run1", [_rec("10", 4000.0, 3000.0)])
    b = _folder(tmp_path / "b", "run2", [_rec("10", 4000.0, 3300.0)])
    c = compare(a, b)
    assert c["overall"]["all"]["median"] == pytest.approx(1.1)   # folders paired although named apart


@pytest.mark.parametrize("make,msg", [
    (lambda t: (t / "nope", t), "nope: no such folder"),
    (lambda t: (_folder(t / "a", "x", [_rec("1", 1.0, 1.0)]).parent,
                _folder(t / "b", "y", [_rec("1", 1.0, 1.0)]).parent), "no results folder in both"),
    # a text column and a rate of nan gave tables of dashes and exit 0
    (lambda t: (_folder(t / "a", "x", [_rec("1", 1.0, 1.0)]), _folder(t / "b", "x", [_rec("1", 1.0, 1.0)]),
                "--metric", "status"), "--metric 'status' is not a numeric column (a row holds 'ok')"),
    (lambda t: (_folder(t / "a", "x", [_rec("1", 1.0, 1.0)]), _folder(t / "b", "x", [_rec("1", 1.0, 1.0)]),
                "--from-rate", "nan"), "--from-rate: must be a finite rate > 0, got nan"),
    # an audit of 2026-12-05: a column headed "from -1 req/s", an empty one (exit 0), "no such folder"
    (lambda t: (_folder(t / "a", "x", [_rec("1", 1.0, 1.0)]), _folder(t / "b", "x", [_rec("1", 1.0, 1.0)]),
                "--from-rate", "-1"), "--from-rate: must be a finite rate > 0, got -1.0"),
    (lambda t: (_folder(t / "a", "x", [_rec("1", 4000.0, 1.0)]), _folder(t / "b", "x", [_rec("1", 4000.0, 1.0)]),
                "--from-rate", "1e12"), "--from-rate: 1e+12 req/s is above every paired run's target rate "
                                        "(the highest: 4000)"),
    (lambda t: ((t / "f.csv", (t / "f.csv").write_text("x\n"))[0], t), "f.csv: a file, not a results folder"),
])
def test_refusals_name_the_reason(tmp_path, capsys, make, msg):
    a, b, *opts = make(tmp_path)
    assert main([str(a), str(b), *opts]) == 2
    assert msg in capsys.readouterr().err


def test_two_series_of_one_point_in_a_folder_are_refused_not_paired_at_random(tmp_path, capsys):
    # rows of another --set realsys.spin_us in one folder: the last row of each point stood for
    # both, and every pair was of the other series (ratio 0.5 throughout, exit 0)
    import dataclasses
    a = _folder(tmp_path / "a", "x", [_rec("1", 4000.0, 3000.0)])
    b = _folder(tmp_path / "b", "x", [_rec("1", 4000.0, 3000.0),
                                      dataclasses.replace(_rec("1", 4000.0, 1500.0), config='{"realsys": {"spin_us": 400}}')])
    assert main([str(a), str(b)]) == 2
    assert "has two finished rows of other configs or sources" in capsys.readouterr().err
    # a rerun's finished row replaces a failed one of the same point
    c = _folder(tmp_path / "c", "x", [_rec("1", 4000.0, 0.0, status="failed"), _rec("1", 4000.0, 3300.0)])
    assert compare(a, c)["overall"]["all"]["median"] == pytest.approx(1.1)


def test_no_pair_finished_on_both_sides_is_exit_1(tmp_path, capsys):
    # a table of dashes and status 0 (report says 1 when nothing finished)
    a = _folder(tmp_path / "a", "x", [_rec("1", 4000.0, 3000.0)])
    b = _folder(tmp_path / "b", "x", [_rec("1", 4000.0, 0.0, status="failed")])
    assert main([str(a), str(b)]) == 1
    assert "no point finished on both sides" in capsys.readouterr().err


def test_a_folder_one_side_lacks_is_named_in_the_table(tmp_path):
    # it was listed only in --json: the table said "unpaired: 0 before only" with a folder missing
    for side, names in (("a", ("onepacket-select", "onepacket-poll")), ("b", ("onepacket-select", "onepacket-epoll"))):
        for n in names:
            _folder(tmp_path / side, n, [_rec("1", 4000.0, 3000.0)])
    head = markdown(compare(tmp_path / "a", tmp_path / "b")).splitlines()[0]
    assert "folders before only: onepacket-poll" in head and "folders after only: onepacket-epoll" in head, head
    _folder(tmp_path / "c", "onepacket-select", [_rec("1", 4000.0, 3000.0)])
    _folder(tmp_path / "d", "onepacket-select", [_rec("1", 4000.0, 3000.0)])
    assert "folders" not in markdown(compare(tmp_path / "c", tmp_path / "d")).splitlines()[0]


def test_the_readme_says_an_httperf_rows_replies_are_the_servers_window_count():
    # the page said httperf's own whole-run count; the runner takes the server's 2xx count in the
    # window (realsys/results/README.md, httperf-overload, said so): nginx's only is httperf's
    from pathlib import Path
    text = (Path(__file__).resolve().parents[2] / "realsys" / "README.md").read_text(encoding="utf-8")
    para = text[text.index("`replies_per_s`: 2xx"):text.index("`conn_attempts_per_s`: the achieved")]
    assert "the server's own count of 2xx replies sent in the" in " ".join(para.split())
    assert "`realsys.httperf = true` it, `client_timeouts`" not in " ".join(para.split())


def test_pairs_of_other_configs_are_said_to_be(tmp_path):
    # a folder measured at another realsys.spin_us and window paired point for point, and the
    # table read as the same runs measured twice (a review's 1.410)
    from simaccept.scenario import load_scenario
    pt = load_scenario("realsys/onepacket-select", ["workload.rate=4800", "server.accept_limit=1"]).points()[0]
    other = load_scenario("realsys/onepacket-select", ["workload.rate=4800", "server.accept_limit=1",
                                                       "realsys.spin_us=100", "scenario.duration=2"]).points()[0]
    r1, r2 = _rec("1", 4800.0, 3400.0), _rec("1", 4800.0, 4800.0)
    r1.config, r2.config = pt.to_json(), other.to_json()
    _folder(tmp_path / "a", "sel", [r1])
    _folder(tmp_path / "b", "sel", [r2])
    c = compare(tmp_path / "a", tmp_path / "b")
    assert c["config_differs"] == {"realsys.spin_us": 1, "scenario.duration": 1} and c["pairs_config_differs"] == 1
    assert "the configs of 1 of the 1 pairs differ" in markdown(c) and "realsys.spin_us (1 pairs)" in markdown(c)
    # the same config, one row written before client.orphans existed: no difference
    old = json.loads(pt.to_json())
    del old["client"]["orphans"]
    r2.config = json.dumps(old)
    _folder(tmp_path / "c", "sel", [r2])
    c = compare(tmp_path / "a", tmp_path / "c")
    assert c["config_differs"] == {} and "Not the same" not in markdown(c)


def test_replicates_made_as_a_seed_axis_pair_with_one_run_per_seed(tmp_path):
    """A seed axis labels its points with ``scenario.seed=``, and those rows paired with
    nothing in a folder of one run per seed (the committed ``*-reps``): 0 pairs, 2 unpaired
    each side.  The label's seed term is left out of the pairing key, the seed column is not."""
    reps = [_rec("1", 4000.0, 3000.0, seed=11.0), _rec("1", 4000.0, 3300.0, seed=12.0)]
    axis = [_rec("1", 4000.0, 3300.0, seed=11.0), _rec("1", 4000.0, 3300.0, seed=12.0)]
    for r in axis:
        r.point = f"scenario.seed={r.seed:g};" + r.point
    c = compare(_folder(tmp_path / "a", "sel", reps), _folder(tmp_path / "b", "sel", axis))
    assert c["unpaired"] == {"before_only": 0, "after_only": 0, "not_ok": 0}
    assert sorted((p["seed"], p["ratio"]) for p in c["pairs"]) == [("11.0", pytest.approx(1.1)), ("12.0", 1.0)]
    assert {p["point"] for p in c["pairs"]} == {P.format(al="1", rate=4000.0)}

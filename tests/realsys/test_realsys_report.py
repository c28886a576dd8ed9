"""realsys.report: which rows are repetitions of one point and which are series of their own."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from realsys.loadgen import requests_per_conn
from realsys.report import summarize
from realsys.runner import append_record
from simaccept.record import RunRecord


def _rec(point, limit, rate, replies, status="ok", seed=2004.0, spin=None):
    config = ("" if spin is None else
              json.dumps({"realsys": {"spin_us": spin}, "scenario": {"seed": seed}, "workload": {"rate": rate}}))
    return RunRecord(source="real", point=point, server="userver", mux="select", accept_limit=limit,
                     target_rate=rate, replies_per_s=replies, conn_attempts_per_s=rate, duration_s=4.0,
                     status=status, seed=seed, config=config)


@pytest.mark.parametrize("rows,want", [
    # seeds are repetitions: one series, mean of the two
    ([_rec("server.accept_limit=1;workload.rate=4800.0", "1", 4800.0, 3400.0, seed=11.0),
      _rec("server.accept_limit=1;workload.rate=4800.0", "1", 4800.0, 3600.0, seed=12.0)],
     {"userver/select/accept-1": (3500.0, 2)}),
    # another swept axis is a series of its own, not a repetition
    ([_rec("server.accept_limit=1;workload.rate=4800.0;client.timeout=0.25", "1", 4800.0, 3505.0),
      _rec("server.accept_limit=1;workload.rate=4800.0;client.timeout=10.0", "1", 4800.0, 3085.0)],
     {"userver/select/accept-1/client.timeout=0.25": (3505.0, 1),
      "userver/select/accept-1/client.timeout=10.0": (3085.0, 1)}),
    # two runs into one folder with another --set realsys.spin_us are two series, not
    # repetitions (they were averaged: 395 +- 148); seeds alone still are repetitions
    ([_rec("workload.rate=500.0", "1", 500.0, 500.0, spin=200.0, seed=1.0),
      _rec("workload.rate=500.0", "1", 500.0, 290.0, spin=3000.0, seed=1.0),
      _rec("workload.rate=500.0", "1", 500.0, 280.0, spin=3000.0, seed=2.0)],
     {"userver/select/accept-1/realsys.spin_us=200.0": (500.0, 1),
      "userver/select/accept-1/realsys.spin_us=3000.0": (285.0, 2)}),
    # a row written before a key existed is no different for lacking it
    ([_rec("workload.rate=500.0", "1", 500.0, 500.0, spin=200.0, seed=1.0),
      _rec("workload.rate=500.0", "1", 500.0, 490.0, seed=2.0)],
     {"userver/select/accept-1": (495.0, 2)}),
    # a failed row (measured off its window) is left out
    ([_rec("server.accept_limit=inf;workload.rate=2800.0", "inf", 2800.0, 2800.0),
      _rec("server.accept_limit=inf;workload.rate=2800.0", "inf", 2800.0, 2801.0, status="failed")],
     {"userver/select/accept-inf": (2800.0, 1)}),
])
def test_series(tmp_path, rows, want):
    for r in rows:
        append_record(tmp_path / "results.csv", r)
    pol = summarize(tmp_path)["policies"]
    got = {lab: (p["replies_per_s"][next(iter(p["replies_per_s"]))], next(iter(p["runs_per_rate"].values())))
           for lab, p in pol.items()}
    assert got == want


def _folder(tmp_path, rows):
    for r in rows:
        append_record(tmp_path / "results.csv", r)
    return tmp_path


def _main_exit(argv, capsys):
    from realsys.report import main
    try:
        rc = main(argv)
    except SystemExit as e:
        rc = e.code
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_a_damaged_number_is_exit_2_naming_line_and_column(tmp_path, capsys):
    # a hand-edited cell ended the report in float()'s traceback
    d = _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0)])
    csv_path = d / "results.csv"
    lines = csv_path.read_text().splitlines()
    header = lines[0].split(",")
    cells = lines[1].split(",")
    cells[header.index("replies_per_s")] = "abc"
    csv_path.write_text("\n".join([lines[0], ",".join(cells)]) + "\n")
    rc, _, err = _main_exit([str(d)], capsys)
    assert rc == 2 and "line 2, column replies_per_s: 'abc' is not a number" in err, err


@pytest.mark.parametrize("column,value", [("replies_per_s", "nan"), ("duration_s", "0"), ("target_rate", "inf"),
                                          ("replies_per_s", "-3")])
def test_a_finished_row_measuring_nothing_is_exit_2(tmp_path, capsys, column, value):
    # "nan" passed float(): "peak nan replies/s", exit 0; a zero-length window was summarized
    d = _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0)])
    csv_path = d / "results.csv"
    lines = csv_path.read_text().splitlines()
    cells = lines[1].split(",")
    cells[lines[0].split(",").index(column)] = value
    csv_path.write_text("\n".join([lines[0], ",".join(cells)]) + "\n")
    rc, _, err = _main_exit([str(d)], capsys)
    assert rc == 2 and f"line 2, column {column}: {value!r} in a finished row (status ok)" in err, err
    from realsys.compare import main as compare_main
    assert compare_main([str(d), str(d)]) == 2
    assert f"line 2, column {column}" in capsys.readouterr().err


def test_an_empty_results_file_is_named_empty(tmp_path, capsys):
    (tmp_path / "results.csv").write_text("")
    rc, _, err = _main_exit([str(tmp_path)], capsys)
    assert rc == 2 and "results.csv is empty" in err, err


def test_a_row_cut_short_is_exit_2(tmp_path, capsys):
    # a file cut off mid-row was summarized without a word
    d = _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0), _rec("workload.rate=600.0", "1", 600.0, 590.0)])
    text = (d / "results.csv").read_text()
    (d / "results.csv").write_text(text[: text.rindex("\n", 0, len(text) - 1) + 40])
    rc, _, err = _main_exit([str(d)], capsys)
    assert rc == 2 and "line 3 has fewer fields than the header" in err, err


@pytest.mark.parametrize("rate", ["-5", "nan", "99999"])
def test_a_drops_rate_with_no_point_is_exit_2(tmp_path, capsys, rate):
    # the drops section was left out without a word, which read as no drops; a rate that
    # cannot be one was told it had no point past saturation
    d = _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0), _rec("workload.rate=600.0", "1", 600.0, 400.0)])
    rc, _, err = _main_exit([str(d), "--drops-rate", rate], capsys)
    if rate == "99999":
        assert rc == 2 and "has no finished point past saturation at that rate" in err and "600" in err, err
    else:
        assert rc == 2 and f"--drops-rate {rate}: must be a finite target rate > 0" in err, err


def test_failed_rows_are_counted_and_none_finished_is_exit_1(tmp_path, capsys):
    d = _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0, status="failed")])
    rc, out, _ = _main_exit([str(d)], capsys)
    assert rc == 1 and "0 finished rows; 1 failed rows, left out" in out, out
    _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0)])
    rc, out, _ = _main_exit([str(d)], capsys)
    assert rc == 0 and "1 finished rows; 1 failed rows" in out, out


@pytest.mark.parametrize("workload,launched,want", [
    ("one-packet", 8000.0, 0.0),
    ("one-packet", 7600.0, 0.05),
    # 8,000 requests/s of SPECweb99-like sessions (7.3 requests each) is 1,096 launches/s:
    # once compared with 8,000 and reported as an 86 % generator error
    ("specweb99", 8000.0 / 7.3, 0.0),
    ("specweb99", 0.95 * 8000.0 / 7.3, 0.05),
])
def test_the_generator_error_compares_launches_with_the_sessions_the_target_asks_for(tmp_path, workload,
                                                                                     launched, want):
    r = _rec("server.accept_limit=1;workload.rate=8000.0", "1", 8000.0, 4000.0)
    r.workload, r.conn_attempts_per_s = workload, launched
    append_record(tmp_path / "results.csv", r)
    err = summarize(tmp_path)["policies"]["userver/select/accept-1"]["generator_max_rel_error"]
    assert err == pytest.approx(want, abs=1e-9)


@pytest.mark.parametrize("workload,replies,want", [
    ("one-packet", 90, 10.0),
    # 7.3 replies per accepted session: once printed as "-630 % accepted-unanswered"
    ("specweb99", 730, None),
])
def test_accepted_unanswered_only_where_a_connection_carries_one_request(tmp_path, workload, replies, want):
    for rate in (4000.0, 8000.0):
        r = _rec(f"server.accept_limit=1;workload.rate={rate}", "1", rate, 3000.0)
        r.workload, r.conn_attempts_per_s = workload, rate / requests_per_conn(workload)
        append_record(tmp_path / "results.csv", r)
    (tmp_path / "points").mkdir()
    (tmp_path / "points" / "p.json").write_text(json.dumps({
        "point": "server.accept_limit=1;workload.rate=8000.0", "sysctls": {},
        "drops": {"AcceptQFull": 1, "DropRequest": 0, "ListenOverflow": 0, "SynQFull": 0, "total": 1},
        "server_stats": {"accepts": 100, "replies": replies, "open_conns_now": 3}}))
    t = summarize(tmp_path, 8000.0)["drops"]["userver/select/accept-1"]
    assert t["accepted_unanswered_pct"] == (pytest.approx(want) if want is not None else None)
    assert t["open_conns_at_end"] == 3


def _with_points(tmp_path):
    """A copy of a committed folder with points past saturation (the drops table reads their files)."""
    import shutil
    d = tmp_path / "sel"
    shutil.copytree(Path(__file__).resolve().parents[2] / "realsys" / "results" / "onepacket-select", d)
    return d


@pytest.mark.parametrize("make,why", [
    (lambda f: f.write_text("garbage"), "not a point file (Expecting value"),
    (lambda f: f.mkdir(), "not a point file (a directory)"),
    (lambda f: f.write_bytes(b"\xff\xfe\x00garbage"), "not a point file ('utf-8' codec"),
    (lambda f: f.write_text("[1, 2]"), "not a point file (a JSON list, not an object)"),
    (lambda f: f.write_text('{"drops": 5}'), "drops is a JSON int, not an object"),
    (lambda f: f.symlink_to("/dev/zero"), "not a regular file"),
])
def test_a_damaged_point_file_is_exit_2_naming_it(tmp_path, capsys, make, why):
    # it ended the report in a traceback (JSONDecodeError, IsADirectoryError, UnicodeDecodeError,
    # AttributeError); /dev/zero was read until MemoryError
    d = _with_points(tmp_path)
    bad = d / "points" / "0000-damaged.json"
    make(bad)
    rc, _, err = _main_exit([str(d)], capsys)
    assert rc == 2 and f"{bad}: " in err and why in err and "Traceback" not in err, err


def test_ctrl_c_is_exit_130_without_a_traceback(tmp_path, capsys, monkeypatch):
    # Ctrl-C over a big folder printed a KeyboardInterrupt traceback (exit -2)
    import realsys.report as report
    d = _with_points(tmp_path)

    def interrupted(*a, **k):
        raise KeyboardInterrupt
    monkeypatch.setattr(report, "summarize", interrupted)
    assert report.main([str(d)]) == 130
    assert capsys.readouterr().err.strip() == "python -m realsys.report: interrupted"


def test_every_report_argument_says_what_it_takes():
    # `python -m realsys --help` sends the reader to `report DIR --help`, which listed
    # DIRS, --drops-rate and --json with no word on any of them
    from realsys.report import _parser
    p = _parser("python -m realsys report")
    bare = [a.option_strings or a.dest for a in p._actions if a.dest != "help" and not a.help]
    assert not bare, f"no help: {bare}"
    drops = next(a for a in p._actions if a.dest == "drops_rate")
    assert "default" in drops.help


# --- from a review of realsys's orchestration (2026-12-04); each failed on the code before -------

def test_simulated_rows_are_not_repetitions_of_measured_ones(tmp_path):
    import dataclasses
    real = _rec("workload.rate=200.0", "1", 200.0, 200.0, spin=200.0)
    _folder(tmp_path, [real, dataclasses.replace(real, source="sim", replies_per_s=150.0)])
    pol = summarize(tmp_path)["policies"]
    assert {lab: p["replies_per_s"][200.0] for lab, p in pol.items()} == {
        "userver/select/accept-1": 200.0, "userver/select/accept-1/sim": 150.0}


def test_a_row_with_no_launch_rate_is_not_a_traceback(tmp_path):
    import dataclasses
    import math
    _folder(tmp_path, [dataclasses.replace(_rec("workload.rate=200.0", "1", 200.0, 200.0),
                                           conn_attempts_per_s=math.nan)])
    p = summarize(tmp_path)["policies"]["userver/select/accept-1"]
    assert math.isnan(p["generator_max_rel_error"])


def test_the_drops_of_a_series_are_its_own_configs(tmp_path):
    # two series of one point label (another --set realsys.spin_us): both were shown the drops of
    # the first point file with that label
    import csv
    d = _with_points(tmp_path)
    with open(d / "results.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    spun = []
    for r in rows:
        cfg = json.loads(r["config"])
        cfg["realsys"]["spin_us"] = 400.0
        spun.append({**r, "config": json.dumps(cfg), "replies_per_s": str(float(r["replies_per_s"]) / 2)})
        for f in (d / "points").glob("*.json"):
            x = json.loads(f.read_text())
            if x.get("point") == r["point"] and x.get("sysctls") is not None:
                # the first series' point files are gone: only the other series' remain
                x["config"] = json.dumps(cfg)
                x["drops"] = {k: 999999 for k in ("AcceptQFull", "DropRequest", "ListenOverflow", "total")}
                f.write_text(json.dumps(x))
    with open(d / "results.csv", "a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), lineterminator="\n")
        w.writerows(spun)
    drops = summarize(d)["drops"]
    assert [lab for lab, t in drops.items() if t.get("total") == 999999] == \
        [lab for lab in drops if "spin_us=400" in lab] != []


def test_report_json_is_json_with_null_for_what_one_run_cannot_give(capsys):
    # the spread of a single run was printed as NaN, which strict JSON readers refuse
    from realsys.report import main
    assert main([str(Path(__file__).resolve().parents[2] / "realsys" / "results" / "onepacket-select"), "--json"]) == 0

    def refuse(c):
        raise ValueError(f"not JSON: {c}")
    s = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert s


def test_report_json_of_several_folders_is_one_document(capsys):
    # each folder's object was printed after the other: "Extra data" to any JSON reader
    from realsys.report import main
    res = Path(__file__).resolve().parents[2] / "realsys" / "results"
    assert main([str(res / "onepacket-select"), str(res / "onepacket-poll"), "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert isinstance(s, list) and len(s) == 2
    assert s[0]["rows_ok"] == 24 and s[0]["saturation_rate"] == 4000.0


def test_a_folder_that_never_saturated_says_so(tmp_path, capsys):
    # it printed "saturation at None; past it: []"
    from realsys.report import main
    _folder(tmp_path, [_rec("workload.rate=500.0", "1", 500.0, 500.0), _rec("workload.rate=900.0", "1", 900.0, 899.0)])
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "no saturation: every policy replied at least 97 %" in out and "None" not in out


def test_an_empty_duration_the_check_lets_through_is_no_traceback(tmp_path, capsys):
    # _check_numbers takes an empty duration_s as not measured; the drops table then float()ed it
    import csv
    import shutil
    from realsys.report import main
    src = Path(__file__).resolve().parents[2] / "realsys" / "results" / "onepacket-select"
    shutil.copytree(src, tmp_path / "r")
    rows = list(csv.DictReader(open(tmp_path / "r" / "results.csv", newline="")))
    for r in rows:
        r["duration_s"] = ""
    with open(tmp_path / "r" / "results.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main([str(tmp_path / "r")]) == 0


def _lag_folder(tmp_path, lags_ms, rates=None):
    """A results folder of one label at len(lags_ms) seeds, each point file with its launch lag p99."""
    d = tmp_path / "lag"
    (d / "points").mkdir(parents=True)
    lab = "server.accept_limit=1;workload.rate=4800.0"
    for i, ms in enumerate(lags_ms):
        rate = rates[i] if rates else 4800.0
        r = _rec(lab, "1", 4800.0, 3000.0 + i, seed=float(i))
        r.conn_attempts_per_s = rate
        append_record(d / "results.csv", r)
        (d / "points" / f"p{i}.json").write_text(json.dumps({
            "point": lab, "sysctls": {}, "drops": {"total": i},
            "generator": {"achieved_rate_mid": rate, "launch_lag_us": {"p99": ms * 1e3, "max": ms * 2e3}}}))
    return d


def test_the_generators_launch_lag_is_summarised_over_every_point_file(tmp_path, capsys):
    # a generator that fell behind its schedule sent what was due in one burst, and nothing said
    # so: the report names the worst point and counts those past the runner's note
    from realsys.report import main
    from realsys.runner import LAUNCH_LAG_NOTE_MS
    d = _lag_folder(tmp_path, [1.0, 85.0, 3.0])
    lag = summarize(d)["generator_launch_lag"]
    assert lag == {"points": 3, "p99_ms_median": 3.0, "p99_ms_max": 85.0,
                   "worst_point": "server.accept_limit=1;workload.rate=4800.0", "note_ms": LAUNCH_LAG_NOTE_MS,
                   "points_over_note": 1}
    assert main([str(d)]) == 0
    assert "generator launch lag p99: median 3.0 ms, max 85.0 ms" in capsys.readouterr().out


def test_a_row_is_matched_to_its_own_seeds_point_file_by_its_launch_rate(tmp_path):
    # point files before 2026-12-04 carry no config: every seed's row was shown the first
    # seed's file; the launch rate the runner copies into the row tells them apart
    from realsys.report import _point_file_of, read_point_file, read_rows
    d = _lag_folder(tmp_path, [1.0, 2.0, 3.0], rates=[4790.5, 4801.25, 4799.0])
    files = [read_point_file(f) for f in sorted((d / "points").glob("*.json"))]
    got = [_point_file_of(r, files)["drops"]["total"] for r in read_rows(d / "results.csv")]
    assert got == [0, 1, 2]


@pytest.mark.parametrize("lag,said", [
    ({"p99": 85000.0, "max": 97000.0}, "launch lag p99 85.0 ms, max 97.0 ms"),
    ({"p99": 9000.0, "max": 50000.0}, None),
    ({}, None),                             # httperf's points have no histogram
    ({"p99": float("nan")}, None),
])
def test_the_runner_notes_a_generator_that_fell_behind(lag, said):
    from realsys.runner import launch_lag_note
    note = launch_lag_note({"launch_lag_us": lag})
    assert (note is None) if said is None else (said in note), note


def test_ratios_are_later_policy_over_earlier_with_numbers_as_numbers(tmp_path):
    """The ratios were alphabetical a / b: accept-1 / accept-inf where the results page
    tabulates inf/1, and accept-10 before accept-2.  Past saturation each later label is
    over each earlier one, a label's numbers compared as numbers and inf after them."""
    replies = {"1": 3000.0, "2": 3300.0, "10": 3600.0, "inf": 3900.0}
    for limit, rep in replies.items():
        for rate in (1000.0, 4000.0):
            append_record(tmp_path / "results.csv",
                          _rec(f"server.accept_limit={limit};workload.rate={rate}", limit, rate, min(rate, rep)))
    ratios = summarize(tmp_path)["ratios_past_saturation"]
    lab = "userver/select/accept-{}".format
    order = ["1", "2", "10", "inf"]
    assert list(ratios) == [f"{lab(b)} / {lab(a)}" for i, a in enumerate(order) for b in order[i + 1:]]
    assert ratios[f"{lab('inf')} / {lab('1')}"] == {4000.0: pytest.approx(1.3)}


def test_label_order_reads_decimals_as_numbers():
    # split on digit runs, 0.5 sorted before 0.25 and 2.5 before 2.25: a decimal axis's ratio
    # came out earlier over later
    from realsys.report import label_order
    labels = ["u/accept-1/client.timeout=0.5", "u/accept-1/client.timeout=0.25", "u/accept-inf", "u/accept-10",
              "u/accept-2"]
    assert sorted(labels, key=label_order) == ["u/accept-1/client.timeout=0.25", "u/accept-1/client.timeout=0.5",
                                               "u/accept-2", "u/accept-10", "u/accept-inf"]

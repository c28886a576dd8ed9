"""Records files: thesis.csv loads with its extra columns; bad rows are refused with the column named."""
import csv
import io
import json
import math
from pathlib import Path

import pytest

from simaccept.record import COLUMNS
from validation.records import (REQUIRED, NotSimulable, RecordError, load_records, load_thesis, record_window,
                                record_seed, scenario_for, select_records, simulator_supports)


def _write(tmp_path, rows, fields=None, name="r.csv"):
    fields = fields or list(rows[0])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(r)
    p = tmp_path / name
    p.write_text(buf.getvalue())
    return p


GOOD = dict(source="paper", scenario="thesis/userver-onepacket", server="userver", mux="select",
            accept_limit="1", workload="one-packet", target_rate="27000", duration_s="120",
            replies_per_s="9442", cite="table 4.7")


def test_thesis_csv_loads_with_extras():
    ms = load_thesis()
    assert len(ms) == 29
    row = next(m for m in ms if m.server == "userver" and m.workload == "one-packet"
               and m.accept_limit == "inf" and m.target_rate == 27000)
    assert row.replies_per_s == 15918
    assert row.extras["total_accepts"] == "2271144" and row.get("total_accepts") == 2271144
    assert row.get("drops_total") == 3053755
    assert "table 5.1" in row.extras["cite"]
    assert set(row.extras) == {"total_accepts", "drops_total", "conn_reqs_per_s", "peak_replies_per_s",
                               "pct_of_peak", "cite", "note"}
    assert set(row.extras).isdisjoint(COLUMNS)
    peak = next(m for m in ms if m.server == "userver" and m.accept_limit == "1" and math.isnan(m.target_rate))
    assert peak.get("peak_replies_per_s") == 19500


def test_scenario_for_thesis_row_fixes_rate_limit_and_seed():
    ms = load_thesis()
    m = next(m for m in ms if m.server == "userver" and m.workload == "one-packet"
             and m.accept_limit == "10" and m.target_rate == 27000)
    sc = scenario_for(m, overrides=["costs.select_base=12.5", "scenario.duration=5"])
    assert not sc.axes
    assert sc["workload"]["rate"] == 27000.0 and sc["server"]["accept_limit"] == 10
    assert sc["server"]["kind"] == "userver" and sc["server"]["mux"] == "select"
    assert sc["workload"]["kind"] == "one-packet" and sc["kernel"]["profile"] == "linux-2.4"
    assert sc["costs"]["select_base"] == 12.5 and sc["scenario"]["duration"] == 5
    # pinned: the committed report's runs of this row used this seed (docs/validation/seeds.json);
    # a change to how a paper row's seed is derived moves every thesis run's random stream
    assert sc["scenario"]["seed"] == record_seed(m.record) == 577893832
    spec = next(m for m in ms if m.server == "userver" and m.workload == "specweb99"
                and m.accept_limit == "1" and m.target_rate == 26000)
    assert record_seed(spec.record) == 151506397
    # without overrides a paper row runs over the thesis's window: 120 s from idle, not the file's 10 + 10 s
    own = scenario_for(m)
    assert own["scenario"]["warmup"] == 0 and own["scenario"]["duration"] == 120.0 == m.record.duration_s
    assert record_window(m) == ["scenario.warmup=0", "scenario.duration=120.0"]
    sw = next(m for m in ms if m.workload == "specweb99" and m.server == "userver" and m.accept_limit == "inf")
    assert scenario_for(sw)["workload"]["kind"] == "specweb99"
    assert scenario_for(sw)["server"]["accept_limit"] == "inf"


def test_unsimulable_rows_say_why():
    ms = load_thesis()
    demand = next(m for m in ms if not m.server)
    with pytest.raises(NotSimulable, match="no server"):
        scenario_for(demand)
    peak = next(m for m in ms if m.server and math.isnan(m.target_rate))
    with pytest.raises(NotSimulable, match="no target rate"):
        scenario_for(peak)
    assert simulator_supports(demand) == (False, "no server (client-side demand row)")
    ok, why = simulator_supports(next(m for m in ms if m.server == "userver"))
    assert ok and why == ""


@pytest.mark.parametrize("missing", REQUIRED)
def test_missing_required_column_refused(tmp_path, missing):
    row = {k: v for k, v in GOOD.items() if k != missing}
    p = _write(tmp_path, [row])
    with pytest.raises(RecordError, match=f"missing required column.*{missing}") as e:
        load_records(p)
    assert e.value.column == missing


@pytest.mark.parametrize("dur", ["0", "-5", "nan", ""])
def test_bad_duration_with_a_rate_refused(tmp_path, dur):
    p = _write(tmp_path, [GOOD, {**GOOD, "duration_s": dur}])
    with pytest.raises(RecordError, match="duration_s.*positive, finite") as e:
        load_records(p)
    assert e.value.column == "duration_s" and e.value.line == 3
    assert f"{p}:3" in str(e.value)
    # the cell is echoed as written: a "nan" cell was reported as "got empty"
    assert str(e.value).endswith(f"got {dur!r}" if dur else "got empty")


def test_duration_not_needed_without_rates(tmp_path):
    row = {k: "" for k in GOOD}
    row.update(source="paper", scenario="x", server="knot", accept_limit="100", workload="one-packet",
               duration_s="0")
    assert load_records(_write(tmp_path, [row]))[0].server == "knot"


@pytest.mark.parametrize("col,val,msg", [
    ("server", "apache", "unknown server 'apache'"),
    ("workload", "specweb2005", "unknown workload"),
    ("mux", "kqueue", "unknown mux"),
    ("accept_limit", "0", "accept_limit"),
    ("source", "guess", "source"),
    ("replies_per_s", "lots", "not a number"),
    ("target_rate", "-1", "positive"),
    # a seed is no measured rate, count, time or share, as the message said
    ("seed", "-1", r"must be an integer >= 0 \(a random seed\); got '-1'"),
    ("seed", "2.5", r"must be an integer >= 0 \(a random seed\)"),
])
def test_bad_values_refused(tmp_path, col, val, msg):
    p = _write(tmp_path, [{**GOOD, col: val}])
    with pytest.raises(RecordError, match=msg) as e:
        load_records(p)
    assert e.value.column == col and e.value.line == 2


@pytest.mark.parametrize("cut, msg", [(-2, "fewer cells than header columns"), (None, "more cells than header columns")])
def test_a_row_with_another_number_of_cells_is_refused(tmp_path, cut, msg):
    # a short row was padded with "not measured": predict showed measured nan and exited 0
    p = _write(tmp_path, [GOOD, GOOD])
    lines = p.read_text().splitlines()
    cells = lines[2].split(",")
    lines[2] = ",".join(cells[:cut] if cut else cells + ["extra"])
    p.write_text("\n".join(lines) + "\n")
    with pytest.raises(RecordError, match=msg) as e:
        load_records(p)
    assert e.value.line == 3


def test_unreadable_and_empty_files(tmp_path):
    with pytest.raises(RecordError, match="cannot read"):
        load_records(tmp_path / "nope.csv")
    (tmp_path / "e.csv").write_text("")
    with pytest.raises(RecordError, match="empty"):
        load_records(tmp_path / "e.csv")


@pytest.mark.parametrize("val", ["19,500", "abc", "inf", "1e400"])
def test_a_peak_that_is_not_a_finite_number_is_refused_by_column(tmp_path, val):
    # it read as no value, so the peak row was skipped as having no target rate, naming no cell
    row = {**GOOD, "target_rate": "", "replies_per_s": "", "peak_replies_per_s": val}
    with pytest.raises(RecordError, match="must be a finite number") as e:
        load_records(_write(tmp_path, [row]))
    assert e.value.column == "peak_replies_per_s" and e.value.line == 2
    assert load_records(_write(tmp_path, [{**row, "peak_replies_per_s": "19500"}]))[0].get("peak_replies_per_s") == 19500


def test_an_int_seed_is_the_records_own():
    # RunRecord(seed=2004) from Python ran at a seed derived from the record's identity
    import dataclasses
    from simaccept.record import RunRecord
    r = RunRecord(source="paper", server="userver", workload="one-packet", target_rate=27000.0)
    assert record_seed(dataclasses.replace(r, seed=2004)) == 2004 == record_seed(dataclasses.replace(r, seed=2004.0))
    assert record_seed(r) == record_seed(dataclasses.replace(r, seed=math.nan)) != 2004


def test_a_profile_given_replaces_the_costs_a_records_config_set(tmp_path):
    # A row of a sweep over costs.k_syn_drop, fitted or predicted with a profile: its own 50 stayed
    # in every simulation while the saved profile had the base profile's (3,436 replies/s against
    # the fit's 3,269 in the review's run)
    import simaccept
    from simaccept.costs import load_costs
    from simaccept.sweep import records_to_csv
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 ["workload.rate=[5000, 6000]", "costs.k_syn_drop=50.0", "scenario.warmup=0",
                                  "scenario.duration=0.2"])
    pt = list(sc.points())[1]
    rec = simaccept.simulate(pt)
    p = tmp_path / "results.csv"
    p.write_text(records_to_csv([rec]))
    (m,) = load_records(p)
    assert scenario_for(m)["costs"]["k_syn_drop"] == 50.0           # alone, the row is as it ran
    base = load_costs("thesis-2004").us
    for over in (['costs.profile="thesis-2004"'], ['costs.profile="thesis-2004"', "costs.select_base=3.0"]):
        again = scenario_for(m, overrides=over)
        assert again["costs"].get("k_syn_drop", base["k_syn_drop"]) == base["k_syn_drop"]
        assert again.point_key == pt.point_key     # the sweep point's random stream all the same
    assert scenario_for(m, overrides=['costs.profile="thesis-2004"', "costs.select_base=3.0"])["costs"]["select_base"] == 3.0
    from validation import CostFitter
    f = CostFitter(params=["user_per_request"], metrics=("replies_per_s",), n_jobs=1).fit([m])
    run = f.predict(m)
    assert run.config and json.loads(run.config)["costs"].get("k_syn_drop", base["k_syn_drop"]) == base["k_syn_drop"]


def test_results_csv_roundtrip(tmp_path):
    """A results.csv as simaccept writes it (all COLUMNS, config JSON) loads and maps back to its scenario."""
    import simaccept
    from simaccept.sweep import records_to_csv
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 ["workload.rate=5000", "server.accept_limit=10", "scenario.warmup=0.2",
                                  "scenario.duration=0.3"])
    rec = simaccept.simulate(sc)
    p = tmp_path / "results.csv"
    p.write_text(records_to_csv([rec]))
    (m,) = load_records(p)
    assert m.extras == {} and m.source == "sim"
    again = scenario_for(m)
    assert record_window(m) == []                    # a sim record carries its own window in its config
    assert again["scenario"]["duration"] == 0.3 and again["workload"]["rate"] == 5000.0
    assert again["server"]["accept_limit"] == 10
    assert simaccept.simulate(again).replies_per_s == rec.replies_per_s


@pytest.mark.parametrize("sel,why", [
    ("target_rate==27000", "'==' is not an operator"),
    ("target_rate=>27000", "'=>' is not an operator"),
    ("server==userver", "'==' is not an operator"),
    ("target_rate=27000=2", "'27000=2' is not a number"),
    ("replies_per_s!=lots", "'lots' is not a number"),
    ("accept_limit=one", "'one' is not an accept limit"),
    ("accept_limit=0", "'0' is not an accept limit"),
])
def test_a_select_that_cannot_be_read_is_refused_naming_it(tmp_path, sel, why):
    # each of these matched nothing, and the error said only "no record to predict"
    recs = load_records(_write(tmp_path, [GOOD]))
    with pytest.raises(ValueError, match=why) as e:
        select_records(recs, [sel])
    assert f"selector {sel!r}" in str(e.value)


@pytest.mark.parametrize("sel,kept", [("accept_limit=01", ["1"]), ("accept_limit=1.0", ["1"]),
                                      ("accept_limit!=01", ["inf"]), ("accept_limit=INF", ["inf"]),
                                      ("accept_limit=10", [])])
def test_select_compares_accept_limits_as_limits(tmp_path, sel, kept):
    # accept_limit=01 kept nothing: the column is text, compared as written
    recs = load_records(_write(tmp_path, [GOOD, {**GOOD, "accept_limit": "inf"}]))
    assert [m.record.accept_limit for m in select_records(recs, [sel])] == kept


def test_why_none_selected_names_the_selectors_that_emptied_it(tmp_path):
    from validation.records import why_none_selected
    recs = load_records(_write(tmp_path, [GOOD, {**GOOD, "accept_limit": "10", "target_rate": "20000"}]))
    assert why_none_selected(recs, ["accept_limit=1", "target_rate>=99999"]) == (
        "selector 'target_rate>=99999' matches none of its 2 records")
    assert why_none_selected(recs, ["accept_limit=10", "target_rate>20000", "server=userver"]) == (
        "selector 'accept_limit=10' with selector 'target_rate>20000' together match none of its 2 records")
    # the CLI names the flag that gave them
    assert why_none_selected(recs, ["accept_limit=1", "target_rate>=99999"], "--select") == (
        "--select 'target_rate>=99999' matches none of its 2 records")


def test_thesis_names_the_packaged_records_where_no_file_is_there(tmp_path, monkeypatch):
    from validation.records import THESIS_CSV, record_columns
    monkeypatch.chdir(tmp_path)
    by_name, by_path = load_records("thesis"), load_records(THESIS_CSV)
    assert len(by_name) == len(by_path) > 20
    assert [m.record.to_dict() for m in by_name] == [m.record.to_dict() for m in by_path]
    assert record_columns("thesis") == record_columns(THESIS_CSV)
    (tmp_path / "thesis").mkdir()      # a folder so named is no records file (scenarios/thesis/)
    assert len(load_records("thesis")) == len(by_path)
    (tmp_path / "thesis").rmdir()
    _write(tmp_path, [GOOD], name="thesis")          # a file of the user's named so wins
    assert len(load_records("thesis")) == 1
    for other in ("Thesis", "thesis.csv", "./thesiss"):
        with pytest.raises(RecordError, match="cannot read"):
            load_records(other)


def test_a_committed_realsys_results_path_is_found_from_anywhere(tmp_path, monkeypatch):
    # The README's `fit --records realsys/results/onepacket-select/results.csv` from another
    # directory (or an installed package, which carries the files: tests/test_packaging.py).
    from validation.records import REALSYS_RESULTS, record_columns, records_path
    monkeypatch.chdir(tmp_path)
    real = REALSYS_RESULTS / "onepacket-select" / "results.csv"
    for name in ("realsys/results/onepacket-select/results.csv", "./realsys/results/onepacket-select/results.csv",
                 Path("realsys/results/onepacket-select/results.csv")):
        assert records_path(name) == real
    assert records_path("realsys/results/xeon-2026-11-26/onepacket-select/results.csv") == \
        REALSYS_RESULTS / "xeon-2026-11-26" / "onepacket-select" / "results.csv"
    assert [m.record.to_dict() for m in load_records("realsys/results/onepacket-select/results.csv")] == \
        [m.record.to_dict() for m in load_records(real)]
    assert record_columns("realsys/results/onepacket-select/results.csv") == record_columns(real)
    # only committed results, only by that path; anything else is the user's path, refused as before
    for other in ("realsys/results/nosuch/results.csv", "realsys/results/onepacket-select/../onepacket-poll/results.csv",
                  "results/onepacket-select/results.csv", "realsys/results/onepacket-select", "onepacket-select"):
        assert records_path(other) == Path(other)
        with pytest.raises(RecordError, match="cannot read"):
            load_records(other)
    # a file of the user's at that path wins
    (tmp_path / "realsys/results/onepacket-select").mkdir(parents=True)
    _write(tmp_path / "realsys/results/onepacket-select", [GOOD], name="results.csv")
    assert len(load_records("realsys/results/onepacket-select/results.csv")) == 1


@pytest.mark.parametrize("where, why", [("/dev/zero", "not a regular file"), ("dir", "is a directory"),
                                        ("dir.parquet", "is a directory")])
def test_a_records_path_that_is_no_file_is_refused_unread(tmp_path, where, why):
    # /dev/zero was read until a MemoryError; a directory named *.parquet was "missing required column(s)"
    p = Path(where) if where.startswith("/") else tmp_path / where
    if not where.startswith("/"):
        p.mkdir()
    with pytest.raises(RecordError, match=why):
        load_records(p)


def test_a_records_file_past_the_size_cap_is_refused(tmp_path, monkeypatch):
    import validation.records as records
    p = _write(tmp_path, [GOOD])
    monkeypatch.setattr(records, "MAX_RECORDS_BYTES", p.stat().st_size - 1)
    with pytest.raises(RecordError, match="larger than"):
        load_records(p)
    monkeypatch.setattr(records, "MAX_RECORDS_BYTES", p.stat().st_size)
    assert len(load_records(p)) == 1


def test_a_cell_csv_cannot_read_is_a_record_error_with_its_line(tmp_path):
    # a cell over 131,072 characters was a _csv.Error traceback
    p = _write(tmp_path, [GOOD, dict(GOOD, cite="x" * 200_000)])
    with pytest.raises(RecordError, match="field larger than field limit") as e:
        load_records(p)
    assert e.value.line == 3 and str(e.value).startswith(f"{p}:3:")


def test_a_parquet_file_with_a_duplicate_column_says_so(tmp_path):
    # read_table refused it with a 70-line dump of the schema
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    p = tmp_path / "dup.parquet"
    cols = list(GOOD) + ["cite"]
    pq.write_table(pa.Table.from_arrays([pa.array([GOOD[c]]) for c in cols], names=cols), p)
    with pytest.raises(RecordError, match=r"duplicate column\(s\): cite") as e:
        load_records(p)
    assert len(str(e.value).splitlines()) == 1


@pytest.mark.parametrize("sel,close", [("acceptlimit=1", "accept_limit"), ("target_rat>=1", "target_rate")])
def test_a_misspelled_select_column_names_the_close_ones(tmp_path, sel, close):
    # `--select acceptlimit=10` said only "unknown record column 'acceptlimit'"
    recs = load_records(_write(tmp_path, [GOOD]))
    with pytest.raises(ValueError, match="unknown record column") as e:
        select_records(recs, [sel])
    assert f"(close: {close}" in str(e.value)


def test_a_record_built_in_python_with_ints_is_measured():
    # RunRecord(replies_per_s=2950) read as not measured (Measured.get: NaN), so a fit of such
    # records skipped them all ("no measured value"), and --select replies_per_s>=1 raised a TypeError
    from simaccept.record import RunRecord
    from validation.records import Measured
    recs = [Measured(RunRecord(source="real", server="userver", mux="select", accept_limit="1",
                               workload="one-packet", target_rate=rate, duration_s=4, replies_per_s=got))
            for rate, got in ((3000, 2950), (6000, 3400), (9000, 0.0))]
    assert recs[0].get("replies_per_s") == 2950.0 and recs[0].get("target_rate") == 3000.0
    assert [m.record.target_rate for m in select_records(recs, ["replies_per_s>=3000"])] == [6000]
    assert [m.record.target_rate for m in select_records(recs, ["target_rate<6000"])] == [3000]
    assert len(select_records(recs, ["replies_per_s=nan"])) == 0
    # a bool is not a number: True as a rate reads as not measured
    assert math.isnan(Measured(RunRecord(replies_per_s=True)).get("replies_per_s"))


def test_a_text_cell_with_a_unicode_line_separator_reads_as_one_row(tmp_path):
    # str.splitlines broke the row at U+2028 (and \f, \x1c, ...), which csv writes unquoted: a
    # sweep's results.csv with such a scenario name could not be read by predict or fit
    p = _write(tmp_path, [dict(GOOD, cite="a\u2028b\x0cc"), GOOD])
    ms = load_records(p)
    assert [m.extras["cite"] for m in ms] == ["a\u2028b\x0cc", "table 4.7"]
    assert [m.line for m in ms] == [2, 3]


def test_a_row_after_a_cell_with_line_breaks_is_named_by_its_own_line(tmp_path):
    # a failed point's error spans lines inside its quotes: the rows after it were numbered
    # as if every row were one line
    p = _write(tmp_path, [dict(GOOD, cite="one\ntwo\r\nthree"), dict(GOOD, target_rate="-5")])
    with pytest.raises(RecordError, match="target_rate") as e:
        load_records(p)
    assert e.value.line == 5
    assert [m.line for m in load_records(_write(tmp_path, [dict(GOOD, cite="x\ny"), GOOD], name="ok.csv"))] == [2, 4]


@pytest.mark.parametrize("al", ["1e400", "1e309", "-inf"])
def test_an_accept_limit_past_a_float_is_refused_by_name(tmp_path, al):
    # int(float("1e400")) raised OverflowError: a traceback from predict and fit
    with pytest.raises(RecordError, match='accept_limit.*integer >= 1 or "inf"') as e:
        load_records(_write(tmp_path, [dict(GOOD, accept_limit=al)]))
    assert e.value.column == "accept_limit" and e.value.line == 2


def test_a_config_nested_past_the_recursion_limit_is_refused_by_name(tmp_path):
    # json's decoder recurses per level: a RecursionError traceback from predict and fit
    deep = '{"scenario": ' + "[" * 60_000 + "]" * 60_000 + "}"
    with pytest.raises(RecordError, match="nested too deeply") as e:
        load_records(_write(tmp_path, [dict(GOOD, config=deep)]))
    assert e.value.column == "config" and e.value.line == 2


def _real_row(**cells):
    """A committed realsys row (it carries its config), with some cells edited."""
    src = Path(__file__).parents[2] / "realsys" / "results" / "onepacket-select" / "results.csv"
    with open(src, newline="") as f:
        row = next(csv.DictReader(f))
    row.update(cells)
    return row


@pytest.mark.parametrize("column,cell,key", [
    ("mux", "epoll", "server.mux"), ("server", "knot", "server.kind"), ("policy", "no-such-policy", "server.policy"),
    ("workload", "specweb99", "workload.kind"), ("kernel_profile", "linux-2.4", "kernel.profile"),
])
def test_a_column_its_config_contradicts_is_refused_by_name(tmp_path, column, cell, key):
    """A review's case: only the rate, accept-limit and seed columns were applied over a row's
    config, so a row whose mux was edited to epoll was predicted as the select server it had
    been (the same numbers), and a Knot-C row or another policy's ran as the config's."""
    (m,) = load_records(_write(tmp_path, [_real_row()]))
    scenario_for(m)                                          # as committed: its columns agree
    (m,) = load_records(_write(tmp_path, [_real_row(**{column: cell})]))
    with pytest.raises(RecordError, match=rf"column '{column}': says '{cell}', but the row's config ran {key} = ") as e:
        scenario_for(m)
    assert e.value.line == 2 and e.value.column == column


def _own(tmp_path, **cells):
    row = dict(source="real", scenario="mybox", server="userver", mux="poll", accept_limit="10",
               policy="", workload="one-packet", target_rate="4000", duration_s="3", replies_per_s="3500")
    row.update(cells)
    return row


def test_a_row_without_config_names_its_scenario_by_name_path_or_bundled_name(tmp_path):
    """fitting.md's columns alone were refused unless the scenario column held a bundled file's
    internal [scenario] name; the name `simaccept scenarios` lists and a path to the user's own
    file were 'no file', and CostFitter's base_dir was never searched."""
    mine = tmp_path / "scens"
    mine.mkdir()
    (mine / "box.toml").write_text('[scenario]\nname = "mybox"\nwarmup = 0.5\n[workload]\nrate = 100\n')
    for name, base in (("realsys/onepacket-select", None), ("scens/box.toml", None), ("mybox", mine)):
        (m,) = load_records(_write(tmp_path, [_own(tmp_path, scenario=name)]))
        sc = scenario_for(m, base_dir=base)
        assert (sc["server"]["mux"], sc["server"]["accept_limit"], sc["workload"]["rate"]) == ("poll", 10, 4000.0)
        # the measured window is the row's, and so are its policy and kernel profile when given
        assert sc["scenario"]["duration"] == 3.0
        if base is not None:
            assert sc["scenario"]["warmup"] == 0.5
    (m,) = load_records(_write(tmp_path, [_own(tmp_path, scenario="realsys/onepacket-select", policy="queue-aware",
                                                    kernel_profile="linux-2.4")]))
    sc = scenario_for(m)
    assert (sc["server"]["policy"], sc["kernel"]["profile"]) == ("queue-aware", "linux-2.4")


@pytest.mark.parametrize("cells,column,why", [
    # a typo was skipped as "not simulable" and the fit went on without the row, exit 0
    (dict(scenario="mybx"), "scenario", "names no scenario among the bundled ones, and the row has no config"),
    (dict(scenario="realsys/onepacket-select", policy="no-such-policy"), "policy", "server.policy"),
    (dict(scenario="realsys/onepacket-select", kernel_profile="linux-9"), "kernel_profile", "kernel.profile"),
])
def test_a_row_without_config_is_refused_by_its_column(tmp_path, cells, column, why):
    (m,) = load_records(_write(tmp_path, [_own(tmp_path, **cells)]))
    with pytest.raises(RecordError, match=f"column '{column}':") as e:
        scenario_for(m)
    assert why in str(e.value) and e.value.line == 2

"""realsys.rowconfig: a committed folder's rows are recognised by the points that measured
them, keys added since the rows were written or not."""
import csv
import json

import pytest

from realsys.rowconfig import as_measured, resolved_now
from realsys.runner import REPO, done_keys
from simaccept.scenario import load_scenario

DEFAULTS = load_scenario(text="").values


@pytest.mark.parametrize("name", ["onepacket-select", "onepacket-poll", "onepacket-epoll", "onepacket-knot",
                                  "dead-accepts"])
def test_a_committed_folder_resumes_with_nothing_to_measure(name):
    # before rowconfig every row's config lacked keys added since (client.orphans,
    # client.timeout_from, ...), and a resumed run measured all of its points again
    rows = list(csv.DictReader(open(REPO / "realsys" / "results" / name / "results.csv", encoding="utf-8")))
    missing = {k for r in rows for s, keys in DEFAULTS.items() for k in keys
               if k not in json.loads(r["config"]).get(s, {})}
    assert missing, "the folder's rows have every key: this test shows nothing"
    done = done_keys(rows)
    pts = load_scenario(f"realsys/{name}").points()
    assert [p.point_label() for p in pts if (p.point_label(), p.to_json()) not in done] == []


def test_a_row_measured_at_other_settings_is_measured_again():
    # httperf-check's loadgen rows predate client.timeout_from, measured from the first SYN;
    # its scenario now asks for connect: those three points are new, its httperf rows not
    rows = list(csv.DictReader(open(REPO / "realsys" / "results" / "httperf-check" / "results.csv", encoding="utf-8")))
    done = done_keys(rows)
    todo = [p.point_label() for p in load_scenario("realsys/httperf-check").points()
            if (p.point_label(), p.to_json()) not in done]
    assert len(todo) == 3 and all(t.endswith("realsys.httperf=False") for t in todo), todo


@pytest.mark.parametrize("httperf,want", [(False, "first-syn"), (True, "connect")])
def test_timeout_from_is_what_the_generator_did_before_the_key(httperf, want):
    doc = {"client": {"timeout": 10.0}, "realsys": {"httperf": httperf}}
    assert as_measured(doc)["client"]["timeout_from"] == want
    doc = {"client": {"timeout_from": "connect"}, "realsys": {"httperf": False}}
    assert as_measured(doc)["client"]["timeout_from"] == "connect"      # a row that has it keeps it


def test_a_key_the_schema_lost_keeps_the_row_from_matching():
    point = load_scenario(text="").points()[0]
    doc = json.loads(point.to_json())
    assert resolved_now(point.to_json(), DEFAULTS) == point.to_json()
    doc["server"]["gone_key"] = 1
    assert resolved_now(json.dumps(doc), DEFAULTS) != point.to_json()


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", "3", "[" * 100_000])
def test_text_that_is_not_a_json_table_is_returned_as_it_is(text):
    assert resolved_now(text, DEFAULTS) == text

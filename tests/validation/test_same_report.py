"""tools/same_report.py: two report directories compared cell by cell; a one-digit change in any
table or summary key is found, the run's own keys and the keys only one summary has are not."""
import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "same_report.py"
COMMITTED = ROOT / "docs" / "validation"


def run(*args):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=60)


@pytest.fixture
def copy(tmp_path):
    d = tmp_path / "again"
    d.mkdir()
    for f in ("cells.csv", "realsys-heldout.csv", "summary.json"):
        shutil.copy(COMMITTED / f, d / f)
    return d


def _edit_summary(d, fn):
    s = json.loads((d / "summary.json").read_text())
    fn(s)
    (d / "summary.json").write_text(json.dumps(s, indent=1))


def test_the_committed_report_is_the_same_as_itself_re_run(copy):
    # what a re-simulation from an empty directory gives: a new time stamp and fingerprint, and
    # no headlines of the analyses the report copies from files of its directory
    def rerun(s):
        s["generated_at"], s["model_fingerprint"] = "2099-01-01T00:00:00+00:00", "0" * 16
        for k in ("seeds", "window", "sensitivity", "specweb_idle"):
            s[k] = None
    _edit_summary(copy, rerun)
    r = run(COMMITTED, copy)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "summary.json seeds: only in the first (read from its directory's files)" in r.stdout
    rows = {name: len(list(csv.DictReader((COMMITTED / name).open(newline=""))))
            for name in ("cells.csv", "realsys-heldout.csv")}
    assert rows["cells.csv"] > 0 and rows["realsys-heldout.csv"] > 0
    assert (f"the same: cells.csv {rows['cells.csv']} rows, realsys-heldout.csv {rows['realsys-heldout.csv']} rows; "
            "0 differences") in r.stdout


@pytest.mark.parametrize("name", ["cells.csv", "realsys-heldout.csv"])
def test_one_changed_digit_in_a_table_is_a_difference(copy, name):
    lines = (copy / name).read_text().splitlines(keepends=True)
    row = lines[7]
    i = next(k for k, ch in enumerate(row) if ch.isdigit())
    lines[7] = row[:i] + str((int(row[i]) + 1) % 10) + row[i + 1:]
    (copy / name).write_text("".join(lines))
    r = run(COMMITTED, copy)
    assert r.returncode == 1
    assert [ln for ln in r.stdout.splitlines() if ln.startswith(name)] and f"{name} row 7:" in r.stdout
    assert "DIFFERENT" in r.stdout


def test_a_headline_of_the_report_s_own_that_is_null_is_a_difference(copy):
    _edit_summary(copy, lambda s: s.update(policy_order_preserved=None))
    r = run(COMMITTED, copy)
    assert r.returncode == 1 and "summary.json policy_order_preserved: true != null" in r.stdout


def test_a_missing_row_and_a_changed_headline_are_differences(copy):
    lines = (copy / "cells.csv").read_text().splitlines(keepends=True)
    (copy / "cells.csv").write_text("".join(lines[:-1]))
    _edit_summary(copy, lambda s: s.update(heldout_median_abs_throughput_error=s["heldout_median_abs_throughput_error"] + 1e-12))
    r = run(COMMITTED, copy)
    assert r.returncode == 1
    assert f"cells.csv row {len(lines) - 1}:" in r.stdout and "!= None" in r.stdout
    assert "summary.json heldout_median_abs_throughput_error:" in r.stdout


def test_a_directory_without_the_files_is_refused(tmp_path):
    r = run(COMMITTED, tmp_path)
    assert r.returncode == 2 and "cells.csv: no such file" in r.stderr


def test_a_report_file_that_is_a_directory_is_refused(copy):
    (copy / "summary.json").unlink()
    (copy / "summary.json").mkdir()
    r = run(COMMITTED, copy)
    assert r.returncode == 2 and "summary.json: Is a directory" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("name,content,msg", [
    ("summary.json", "[1, 2]", "summary.json: not a report summary (a JSON list, not an object)"),
    ("summary.json", "not json", "summary.json: not a report summary (Expecting value"),
    ("cells.csv", b"\xff\xfe,1\n", "cells.csv: not a report table ('utf-8' codec"),
])
def test_a_report_file_that_is_not_one_is_refused_naming_it(copy, name, content, msg):
    # a summary.json that is a JSON list ended in an AttributeError traceback; the others were
    # "error: unreadable report file: Expecting value: line 1 column 1 (char 0)", naming no file
    (copy / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    r = run(copy, COMMITTED)
    assert r.returncode == 2 and f"{copy / name}: " in r.stderr and msg in r.stderr, r.stderr


@pytest.mark.parametrize("name", ["summary.json", "cells.csv"])
def test_a_report_file_that_is_a_device_is_refused(copy, name):
    # one linked to /dev/zero was read until MemoryError
    (copy / name).unlink()
    (copy / name).symlink_to("/dev/zero")
    r = run(copy, COMMITTED)
    assert r.returncode == 2 and f"{copy / name}: not a regular file" in r.stderr, r.stderr


def _open_cells_moved(d):
    lines = (d / "cells.csv").read_text().splitlines(keepends=True)
    i = next(k for k, ln in enumerate(lines) if ",open_conns_mean," in ln)
    cols = lines[i].split(",")
    cols[7] = str(float(cols[7]) * 0.5)           # predicted (the error left as it was: not checked)
    lines[i] = ",".join(cols)
    (d / "cells.csv").write_text("".join(lines))
    _edit_summary(d, lambda s: s["thesis_other_within_tolerance"]["open_conns_mean"].update(within=0, fraction=0.0))
    return i


def test_a_declared_moved_field_is_listed_and_every_other_cell_still_checked(copy):
    i = _open_cells_moved(copy)
    r = run(COMMITTED, copy)
    assert r.returncode == 1 and f"cells.csv row {i}:" in r.stdout     # undeclared: a difference
    r = run(COMMITTED, copy, "--moved", "open_conns_mean")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"cells.csv row {i}: moved as declared" in r.stdout
    assert "summary.json thesis_other_within_tolerance/open_conns_mean/within: moved as declared: 1 != 0" in r.stdout
    # the same declaration does not excuse another metric's cell, nor another summary value
    lines = (copy / "cells.csv").read_text().splitlines(keepends=True)
    j = next(k for k, ln in enumerate(lines) if ",replies_per_s," in ln)
    cols = lines[j].split(",")
    cols[7] = str(float(cols[7]) + 1)
    lines[j] = ",".join(cols)
    (copy / "cells.csv").write_text("".join(lines))
    _edit_summary(copy, lambda s: s["thesis_other_within_tolerance"]["c_avg"].update(within=-1))
    r = run(COMMITTED, copy, "--moved", "open_conns_mean")
    assert r.returncode == 1 and f"cells.csv row {j}: [" in r.stdout
    assert "summary.json thesis_other_within_tolerance: {" in r.stdout


def test_a_moved_field_that_is_not_a_record_field_is_refused(copy):
    r = run(COMMITTED, copy, "--moved", "open_conns")
    assert r.returncode == 2 and "--moved open_conns: not a field of the run's record" in r.stderr


def test_empty_tables_on_both_sides_are_refused(tmp_path):
    # two directories with 0-byte tables were "the same: cells.csv -1 rows, ...", exit 0
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
        for f in ("cells.csv", "realsys-heldout.csv"):
            (tmp_path / d / f).write_text("")
        (tmp_path / d / "summary.json").write_text("{}")
    r = run(tmp_path / "a", tmp_path / "b")
    assert r.returncode == 2 and "cells.csv: empty, not a report table" in r.stderr, r.stdout + r.stderr

"""RunRecord rows, the workloads and batch_ci called directly, with input they must refuse."""
import json
import math

import numpy as np
import pytest

from simaccept.metrics import batch_ci
from simaccept.record import RunRecord
from simaccept.workloads import OnePacket, SpecWeb99, make_workload


def test_a_text_cell_pandas_read_as_nan_is_empty():
    # pandas gives NaN for an empty text cell of results.csv: status and mux became "nan"
    rec = RunRecord.from_dict({"mux": math.nan, "error": math.nan, "status": "ok"})
    assert rec.mux == "" and rec.error == "" and rec.status == "ok"


@pytest.mark.parametrize("row, err, why", [
    (None, TypeError, "a record row is a mapping of column to value, got NoneType"),
    ({"replies_per_s": True}, ValueError, "record column 'replies_per_s': not a number: True"),
    ({"replies_per_s": 10**400}, ValueError, "record column 'replies_per_s': not a number: 1000"),
])
def test_a_row_that_is_no_record_is_refused(row, err, why):
    with pytest.raises(err, match=why):
        RunRecord.from_dict(row)


def test_numpy_values_set_on_a_record_write_as_json():
    rec = RunRecord(replies_per_s=np.float32(1.5), conn_attempts_per_s=np.float32("nan"), n_accept_phases=np.int64(3))
    d = json.loads(rec.to_json())
    assert d["replies_per_s"] == 1.5 and d["conn_attempts_per_s"] is None and d["n_accept_phases"] == 3


@pytest.mark.parametrize("make, why", [
    (lambda: SpecWeb99(math.nan), "zipf_alpha: a finite number >= 0, got nan"),
    (lambda: SpecWeb99(-1), "zipf_alpha: a finite number >= 0, got -1"),
    (lambda: SpecWeb99(1, p_single=2), r"p_single: a probability in \[0, 1\], got 2"),
    (lambda: SpecWeb99(1, keepalive_range=(15, 5)), r"keepalive_range: .* got \(15, 5\)"),
    (lambda: SpecWeb99(1, keepalive_range=5), "keepalive_range: .* got 5"),
    (lambda: OnePacket(-5), "reply_bytes: an integer >= 1, got -5"),
    (lambda: make_workload({"kind": "specweb"}), "workload kind 'specweb': not one-packet or specweb99"),
])
def test_a_workload_refuses_what_it_cannot_draw(make, why):
    with pytest.raises(ValueError, match=why):
        make()


def test_a_workload_draws_as_configured():
    n, sizes = SpecWeb99(1.0, keepalive_range=(7, 7), p_single=0.0).draw(np.random.default_rng(1), 100)
    assert (n == 7).all() and len(sizes) == 700


def test_batch_ci_takes_a_list():
    # a list was "only integer scalar arrays can be converted to a scalar index"
    assert batch_ci([1.0, 2.0, 3.0]) == pytest.approx(batch_ci(np.array([1.0, 2.0, 3.0])))
    assert batch_ci([1.0, 2.0, 3.0]) == pytest.approx(2.484, abs=1e-3)

"""Peak rows: the thesis quotes peak replies/s without a target rate; the fitter fits them.

A peak row is simulated at 0.9, 1.0, 1.1 and 1.2 x its measured peak and the largest
reply rate is its simulated peak (validation.records.PEAK_FACTORS).  The recovery test
builds a peak row from the simulator itself (Accept-1, where the peak is set by the
per-connection select cost) and fits select_base back from a start 30 % too high.
"""
import math

import pytest

import simaccept
from simaccept.record import RunRecord
from validation import CostFitter
from validation.fitter import PEAK
from validation.records import (PEAK_FACTORS, Measured, NotSimulable, load_records, peak_rates, peak_scenarios,
                                THESIS_CSV)

SHORT = ["scenario.warmup=1", "scenario.duration=2"]


def _peak_row(peak, al="1"):
    rec = RunRecord(source="paper", scenario="thesis/userver-onepacket", server="userver", mux="select",
                    accept_limit=al, workload="one-packet", duration_s=120.0)
    return Measured(rec, {PEAK: repr(peak)})


def test_peak_rates_are_multiples_of_the_measured_peak():
    assert peak_rates(_peak_row(20000.0)) == [f * 20000.0 for f in PEAK_FACTORS]
    scs = peak_scenarios(_peak_row(20000.0, "inf"))
    assert [s["workload"]["rate"] for s in scs] == [18000.0, 20000.0, 22000.0, 24000.0]
    assert {s["server"]["accept_limit"] for s in scs} == {"inf"}
    assert len({s["scenario"]["seed"] for s in scs}) == 1


def test_rows_that_are_not_peak_rows_refused():
    with pytest.raises(NotSimulable, match="no measured peak"):
        peak_rates(Measured(_peak_row(1.0).record, {}))
    rated = _peak_row(20000.0)
    rated.record.target_rate = 27000.0
    with pytest.raises(NotSimulable, match="has a target rate"):
        peak_rates(rated)


def test_thesis_peak_rows_are_fitted_only_when_asked():
    recs = [m for m in load_records(THESIS_CSV) if m.server == "userver" and m.workload == "one-packet"]
    f = CostFitter(params=["select_base"], metrics=(PEAK, "replies_per_s"))
    assert [t[0] for t in f._targets(recs[0])] == [PEAK] and math.isnan(recs[0].target_rate)
    f2 = CostFitter(params=["select_base"], metrics=("replies_per_s",))
    assert f2._targets(recs[0]) == []


def test_peak_residual_is_the_largest_simulated_reply_rate():
    f = CostFitter(params=["select_base"], metrics=(PEAK, "replies_per_s"), weights={PEAK: 2.0})
    peak = _peak_row(20000.0)
    rated = Measured(RunRecord(source="paper", server="userver", workload="one-packet", accept_limit="1",
                               target_rate=27000.0, duration_s=120.0, replies_per_s=10000.0))
    f._recs = [peak, rated]
    line = [RunRecord(target_rate=x, replies_per_s=y, status="ok")
            for x, y in [(18000, 18000.0), (20000, 19000.0), (22000, 18000.0), (24000, 17000.0)]]
    r = f._residuals([line, [RunRecord(target_rate=27000.0, replies_per_s=11000.0, status="ok")]])
    assert r.tolist() == pytest.approx([2.0 * (19000 - 20000) / 20000, (11000 - 10000) / 10000])


@pytest.mark.parametrize("start", [1.3])
def test_recovers_select_base_from_an_accept1_peak(start):
    true_sb = 11.0
    over = SHORT + ["scenario.seed=5"]
    # the row's peak: the simulator's own, found on a fine grid with the true cost
    rates = [16000.0 + 250.0 * i for i in range(13)]
    base = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                   ["server.accept_limit=1", f"costs.select_base={true_sb}"] + over)
    line = [simaccept.simulate(base.with_overrides([f"workload.rate={x}"])) for x in rates]
    true_peak = max(r.replies_per_s for r in line)
    assert line[0].replies_per_s < true_peak > line[-1].replies_per_s, "peak not inside the grid"
    row = _peak_row(true_peak)
    f = CostFitter(params=["select_base"], metrics=(PEAK,), overrides={"select_base": start * true_sb},
                   sim_overrides=over, n_jobs=2, ftol=1e-2, xtol=1e-2)
    f.fit([row])
    assert f.start_residual_norm_ > 0.03          # 30 % too dear: the peak is several % low
    assert f.residual_norm_ < 0.01, f.summary()
    # a 1-residual fit has no stderr (m == n) but must land near the true cost
    assert abs(f.params_["select_base"] / true_sb - 1) < 0.10, f.params_
    assert math.isnan(f.stderr_["select_base"])

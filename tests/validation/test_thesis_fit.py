"""thesis-2004 is fitted to the μserver one-packet rows only, and the shipped files agree."""
import json

import pytest

from simaccept.costs import load_costs
from validation import CostFitter, thesis_fit
from validation.records import simulable


def test_fit_records_are_the_userver_one_packet_rows():
    recs = thesis_fit.fit_records()
    assert recs and {(m.server, m.workload) for m in recs} == {("userver", "one-packet")}
    f = CostFitter(params=list(thesis_fit.FIT_PARAMS), metrics=list(thesis_fit.FIT_METRICS),
                   base_profile=thesis_fit.BASE)
    used = [m.label for m in recs if simulable(m, peaks=True)[0] and f._targets(m)]
    # the two peaks of sec. 4.2.1, table 4.7's three policies at 27k, Accept-1 at 30k
    assert sorted(used) == sorted([
        "userver/one-packet/select/accept-1@peak", "userver/one-packet/select/accept-10@peak",
        "userver/one-packet/select/accept-1@27000", "userver/one-packet/select/accept-10@27000",
        "userver/one-packet/select/accept-inf@27000", "userver/one-packet/select/accept-1@30000"])


def test_shipped_profile_is_the_recorded_fit():
    rec = json.loads(thesis_fit.FIT_JSON.read_text())
    fitted, hand = load_costs("thesis-2004").us, load_costs(thesis_fit.BASE).us
    # A full fit starts from the hand profile and fits every FIT_PARAMS; a partial refit (thesis-fit
    # --params --start, after a model change) fits some of them from the profile as it was, whose other
    # costs it keeps: those were fitted from the hand profile, so the rule below still holds.
    # The start may also be a committed profile file (a scratch point of lower residual), whose costs
    # the record's start column must be.
    partial = rec["base_profile"] != thesis_fit.BASE
    if rec["base_profile"] not in (thesis_fit.BASE, thesis_fit.PROFILE):
        start_file = thesis_fit.ROOT / rec["base_profile"]
        assert start_file.is_file(), f"the fit's start {rec['base_profile']} is not in the checkout"
        start = load_costs(str(start_file)).us
        for k, v in rec["fit"]["start"].items():
            assert start[k] == pytest.approx(v, rel=1e-12)
    assert set(rec["fit"]["params"]) <= set(thesis_fit.FIT_PARAMS)
    assert partial or set(rec["fit"]["params"]) == set(thesis_fit.FIT_PARAMS)
    for k, v in rec["fit"]["params"].items():
        assert fitted[k] == pytest.approx(v, rel=1e-12)
        if not partial:
            assert rec["fit"]["start"][k] == pytest.approx(hand[k])
    # every cost not fitted keeps its hand value (Knot's included), except TUX's two hand-set
    # constants, set again on the TUX peak rows with the fitted kernel costs
    assert {k for k in fitted if fitted[k] != hand[k]} <= set(thesis_fit.FIT_PARAMS) | set(thesis_fit.TUX_HAND_SET)
    assert rec["hand_set_after_fit"] == thesis_fit.TUX_HAND_SET
    assert all(fitted[k] == v for k, v in thesis_fit.TUX_HAND_SET.items())
    assert rec["fit"]["residual_norm"] < rec["fit"]["start_residual_norm"]

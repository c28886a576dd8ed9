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
        # a refit from a file changes only the costs it fits (and TUX's hand-set pair); the
        # rule below, against the hand profile, exempts every FIT_PARAMS, so a k_syn this
        # refit left out could have differed from its start unseen
        moved = {k for k in fitted if fitted[k] != start[k]}
        assert moved <= set(rec["fit"]["params"]) | set(thesis_fit.TUX_HAND_SET), moved
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
    # least_squares accepts only steps that lower the objective: a fit may keep its start (stop 58's
    # did: every step it tried from the committed start was worse) but never end above it
    assert rec["fit"]["residual_norm"] <= rec["fit"]["start_residual_norm"]


def test_time_split_adds_table_4_9s_split_of_the_userver_time_as_fractions():
    # table 4.9 gives the one-packet Accept-1 and Accept-Inf rows at 27,000 a gprof split of five
    # functions; each becomes one residual, a difference of shares of those five together
    f = CostFitter(params=["select_per_fd"], metrics=["replies_per_s", "time_split"], base_profile=thesis_fit.BASE)
    by = {m.label: f._targets(m) for m in thesis_fit.fit_records()}
    a1 = dict((k, v) for k, v, _ in by["userver/one-packet/select/accept-1@27000"])
    times = {k: v for k, v in a1.items() if k.startswith("time:")}
    assert set(times) == {"time:select", "time:accept", "time:read", "time:close", "time:setsockopt"}
    assert sum(times.values()) == pytest.approx(1.0) and times["time:select"] == pytest.approx(0.5909, abs=1e-3)
    assert not [k for k, _, _ in by["userver/one-packet/select/accept-10@27000"] if k.startswith("time:")]
    # the simulator's split is read over the row's five functions only (its writev and write are left out)
    from simaccept.record import RunRecord
    m = next(m for m in thesis_fit.fit_records() if m.label == "userver/one-packet/select/accept-1@27000")
    sim = RunRecord(status="ok", replies_per_s=a1["replies_per_s"], cpu_share_select=0.3, cpu_share_accept=0.1,
                    cpu_share_read=0.1, cpu_share_close=0.05, cpu_share_setsockopt=0.05, cpu_share_writev=0.4)
    f._recs = [m]
    r = dict(zip([k for k, _, _ in f._targets(m)], f._residuals([[sim]])))
    assert r["replies_per_s"] == pytest.approx(0.0)
    assert r["time:select"] == pytest.approx(0.5 - times["time:select"])
    assert sum(v for k, v in r.items() if k.startswith("time:")) == pytest.approx(0.0, abs=1e-12)


def test_an_unknown_metric_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="metrics: unknown metric.*time_splt.*'time_split'"):
        CostFitter(params=["select_per_fd"], metrics=["time_splt"])


def test_committed_start_points_differ_from_the_hand_profile_only_in_fitted_costs():
    # validation/data keeps the iterates a fit was (or can be) continued from (--start); one that moved
    # a cost the fit does not own would carry an unrecorded hand change into the next fit
    hand = load_costs(thesis_fit.BASE).us
    files = sorted((thesis_fit.ROOT / "validation" / "data").glob("thesis-fit-start-*.toml"))
    assert len(files) >= 4
    for p in files:
        moved = {k for k, v in load_costs(str(p)).us.items() if v != hand[k]}
        assert moved <= set(thesis_fit.FIT_PARAMS) | set(thesis_fit.TUX_HAND_SET), p.name
        # a start fitted with a simulation override is useless without it: its header must say so
        overrides = [ln for ln in p.read_text().splitlines() if "simulation overrides:" in ln]
        if "orphans" in p.name:
            assert overrides and "client.orphans=true" in overrides[0], p.name

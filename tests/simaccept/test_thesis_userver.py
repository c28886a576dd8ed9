"""The μserver results of thesis 4.2.1 and 5.1.1, as the simulator reproduces them.

These are the core issue's acceptance numbers, kept as a regression test:
they are properties of the model and the thesis-2004 profile, and can fail.
"""
import pytest

from simaccept import load_scenario, simulate


def point(path, rate, limit):
    sc = load_scenario(path, overrides=[f"workload.rate={rate}", f"server.accept_limit={limit}"])
    assert sc["scenario"]["duration"] >= 10
    rec = simulate(sc, raise_errors=True)
    assert rec.status == "ok"
    # the window opens at the first loop boundary after warm-up
    assert rec.duration_s > 9.5
    return rec


@pytest.fixture(scope="module")
def onepacket_30k():
    return {lim: point("scenarios/thesis/userver-onepacket.toml", 30000, lim) for lim in ("1", "inf")}


def drops(rec):
    return {"AcceptQFull": rec.drops_acceptq_full, "DropRequest": rec.drops_drop_request,
            "ListenOverflow": rec.drops_listen_overflow, "SynQFull": rec.drops_synq_full}


def test_accept_inf_beats_accept_1_at_30k(onepacket_30k):
    a1, ainf = onepacket_30k["1"], onepacket_30k["inf"]
    assert ainf.replies_per_s >= 1.4 * a1.replies_per_s


def test_accept_1_pays_select_per_connection(onepacket_30k):
    a1, ainf = onepacket_30k["1"], onepacket_30k["inf"]
    assert a1.select_calls_per_s >= 10 * ainf.select_calls_per_s
    assert ainf.fds_per_select > 10 * a1.fds_per_select
    assert a1.c_avg == pytest.approx(1.0, abs=0.05)


def test_drop_categories_table_5_1(onepacket_30k):
    d1, dinf = drops(onepacket_30k["1"]), drops(onepacket_30k["inf"])
    assert max(d1, key=d1.get) == "DropRequest"
    assert max(dinf, key=dinf.get) == "AcceptQFull"
    assert d1["SynQFull"] == 0 and dinf["SynQFull"] == 0      # syncookies off


@pytest.mark.parametrize("limit", ["1", "10", "inf"])
def test_below_saturation_every_policy_delivers_the_target(limit):
    rec = point("scenarios/thesis/userver-onepacket.toml", 10000, limit)
    assert rec.replies_per_s == pytest.approx(10000, rel=0.02)
    assert rec.qdrops_per_s == 0


def test_specweb_gap_smaller_than_onepacket(onepacket_30k):
    s1 = point("scenarios/thesis/userver-specweb.toml", 30000, "1")
    sinf = point("scenarios/thesis/userver-specweb.toml", 30000, "inf")
    # Direction only: with the fitted thesis-2004 of an earlier stop (select_per_fd 0.21 us) Accept-Inf led by
    # ~3 % at 30k, inside the two runs' CIs; the thesis's ~38 % gap (26k) is a held-out miss
    # listed in docs/validation (the simulator's select set cost for HTTP/1.1 is too low).
    assert sinf.replies_per_s > s1.replies_per_s
    gap_spec = sinf.replies_per_s / s1.replies_per_s
    gap_one = onepacket_30k["inf"].replies_per_s / onepacket_30k["1"].replies_per_s
    assert gap_spec < gap_one

"""The TUX one-packet results of thesis 4.2.2 (fig. 4.17, 4.19, table 4.10) and
the work_pending contrast of tables 4.4/4.5, as the simulator reproduces them.

Properties of the TUX model (simaccept.servers.tux, cache warmth) and the
thesis-2004 profile; they can fail.  Short windows (3 s warm-up, 5 s
measured) at five target rates keep the file well under a minute; the full
scenario (10 s + 10 s, 11 rates) is in docs/guides/tux.md.
"""
import pytest

from simaccept import load_scenario, simulate

SCENARIO = "scenarios/thesis/tux-onepacket.toml"
RATES = (20000, 22000, 24000, 26000, 28000)
ABOVE_20K = [r for r in RATES if r > 20000]


def point(rate, limit):
    sc = load_scenario(SCENARIO, overrides=[f"workload.rate={rate}", f"server.accept_limit={limit}",
                                            "scenario.warmup=3", "scenario.duration=5"])
    rec = simulate(sc, raise_errors=True)
    assert rec.status == "ok"
    return rec


@pytest.fixture(scope="module")
def runs():
    return {(lim, r): point(r, lim) for lim in ("1", "inf") for r in RATES}


def test_scenario_is_the_thesis_setup():
    sc = load_scenario(SCENARIO)
    assert sc["kernel"]["profile"] == "linux-2.4" and sc["kernel"]["backlog"] == 128
    assert sc["kernel"]["max_syn_backlog"] == 1024 and not sc["kernel"]["syncookies"]
    assert sc["costs"]["profile"] == "thesis-2004"


def test_accept_1_peak_beats_accept_inf(runs):
    """Thesis: 25,001 vs 20,457 replies/s (+22 %)."""
    peak = {lim: max(runs[lim, r].replies_per_s for r in RATES) for lim in ("1", "inf")}
    assert peak["1"] >= 1.1 * peak["inf"], peak


def test_below_saturation_both_deliver_the_target(runs):
    for lim in ("1", "inf"):
        assert runs[lim, RATES[0]].replies_per_s == pytest.approx(RATES[0], rel=0.03), lim


@pytest.mark.parametrize("rate", ABOVE_20K)
def test_accept_phases_and_work_phases(runs, rate):
    """Tables 4.4, 4.5, 4.10: Accept-1 runs far more accept-phases, C_avg ~ 1,
    and far fewer work items per work-phase than Accept-Inf.

    Table 4.10 (23,000 req/s): 11.6x the accept-phases, Accept-Inf's C_avg 9.54.  The
    sim gives 37.6x and 34.25 at 22,000 req/s in this window (11.7x and 10.05 before the
    connect race of 2026-11-30); further past Accept-Inf's peak its phases end sooner at
    connections their clients have closed (TUX releases them at accept,
    simaccept.servers.tux): 13.0x and C_avg 9.86 at 28,000 (4.4x and 2.9 before)."""
    a1, ainf = runs["1", rate], runs["inf", rate]
    assert a1.n_accept_phases >= 4 * ainf.n_accept_phases
    assert a1.c_avg == pytest.approx(1.0, abs=0.12)
    assert ainf.c_avg >= 2.5
    assert a1.work_items_per_phase * 2.5 <= ainf.work_items_per_phase
    # Accept-1 accepts faster (eq. 4.1): more phases outweigh the smaller C_avg
    assert a1.accept_rate > ainf.accept_rate


@pytest.mark.parametrize("rate", [r for r in ABOVE_20K if r <= 26000])
def test_accept_1_lower_response_time_above_20k(runs, rate):
    """Fig. 4.19: Accept-1's mean response time is lower above 20,000 req/s.

    Up to 26,000 only: at 28,000 the sim's Accept-1 is past its peak (25,001) and
    responded slower than Accept-Inf before the connect race of 2026-11-30 (28 ms against
    21 ms in this window), which the figure does not show (docs/validation/index.md, *The
    clients' timeout*); with it the two are close (34.9 against 36.6 ms)."""
    assert runs["1", rate].resp_ms_mean < runs["inf", rate].resp_ms_mean


def test_accept_inf_overflows_the_accept_queue(runs):
    """Table 5.2: Accept-Inf's drops are mostly AcceptQFull; Accept-1 has far fewer."""
    a1, ainf = runs["1", 26000], runs["inf", 26000]
    dinf = {"AcceptQFull": ainf.drops_acceptq_full, "DropRequest": ainf.drops_drop_request,
            "ListenOverflow": ainf.drops_listen_overflow}
    assert max(dinf, key=dinf.get) == "AcceptQFull"
    assert a1.drops_acceptq_full * 3 < ainf.drops_acceptq_full

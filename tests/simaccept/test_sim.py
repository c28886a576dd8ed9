"""simulate(): what a finished run leaves behind."""
import gc

import simaccept.sim as sim_mod
from simaccept import load_scenario, simulate
from simaccept.host import Host


def _live_hosts():
    return [o for o in gc.get_objects() if isinstance(o, Host)]


def test_a_large_run_leaves_no_host_behind(monkeypatch):
    # A run's objects form cycles; without the collection at the end of simulate() a
    # batch worker kept every large run's host (~200 MB each at 27,000 req/s) until the
    # OOM killer came.  The threshold is lowered so that a small run counts as large.
    monkeypatch.setattr(sim_mod, "COLLECT_AFTER_CONNECTIONS", 1000)
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml",
                       ["server.accept_limit=1", "workload.rate=20000", "scenario.warmup=0.05",
                        "scenario.duration=0.1"])
    gc.collect()
    gc.disable()          # only simulate() may collect: an automatic collection would hide a leak
    try:
        assert _live_hosts() == []
        rec = simulate(sc)
        assert rec.status == "ok" and rec.conn_attempts_per_s * 0.15 >= 1000
        assert _live_hosts() == []
        rec, host = simulate(sc, return_host=True)     # the caller asked for it: kept
        assert isinstance(host, Host) and len(_live_hosts()) == 1
    finally:
        gc.enable()


def test_a_small_run_is_not_followed_by_a_collection(monkeypatch):
    calls = []
    monkeypatch.setattr(sim_mod.gc, "collect", lambda *a: calls.append(a) or 0)
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml",
                       ["server.accept_limit=1", "workload.rate=1000", "scenario.warmup=0.05",
                        "scenario.duration=0.1"])
    assert simulate(sc).status == "ok"
    assert calls == []

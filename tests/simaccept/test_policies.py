"""Each policy's decision, traced on hand-made views."""
import math

from simaccept import load_scenario, simulate
from simaccept.servers.policies import (REGISTRY, AcceptLimit, AdaptiveClosed, PhaseView, QueueAware,
                                        TimeBudget)


def view(q=0, ready=0, open_=0, closed=0, limit=math.inf):
    return PhaseView(q, ready, open_, closed, limit)


def test_accept_limit_is_the_limit():
    assert AcceptLimit(10).quota(view(q=500)) == 10
    assert AcceptLimit(math.inf).quota(view(q=500)) == math.inf


def test_adaptive_closed_follows_closures_only_when_saturated():
    p = AdaptiveClosed(math.inf)
    assert p.quota(view(q=0, ready=5, closed=3)) == math.inf         # not saturated: aggressive
    assert p.quota(view(q=120, ready=40, closed=17)) == 17            # saturated: replace closures
    assert p.quota(view(q=120, ready=40, closed=0)) == 1              # never starve


def test_queue_aware_shares_by_queue_versus_ready():
    p = QueueAware(math.inf)
    assert p.quota(view(q=100, ready=10)) == math.inf                 # little ready work: drain
    assert p.quota(view(q=10, ready=100)) == 1                        # 10*10/100
    assert p.quota(view(q=50, ready=100)) == 25                       # 50*50/100


def test_time_budget_stops_an_accept_phase():
    p = TimeBudget(math.inf, 50.0)
    assert math.isclose(p.budget_s, 50e-6) and p.quota(view(q=128)) == math.inf
    ov = ["workload.rate=30000", "scenario.warmup=2", "scenario.duration=2", "server.policy=time-budget",
          "server.phase_budget_us=40"]
    budget = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml",
                                    overrides=ov + ["server.accept_limit=inf"]), raise_errors=True)
    plain = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml",
                                   overrides=ov[:3] + ["server.accept_limit=inf"]), raise_errors=True)
    # 40 µs buys ~10 accept+setsockopt calls: phases are capped well below Accept-Inf's
    assert budget.c_avg < 16 < plain.c_avg


def test_unknown_policy_refused_and_registry_extensible():
    import pytest
    from simaccept.scenario import ScenarioError
    with pytest.raises(ScenarioError, match="server.policy"):
        load_scenario(text='[server]\npolicy = "greedy"')

    class Two(AcceptLimit):
        def quota(self, v):
            return 2
    REGISTRY["two"] = Two
    try:
        rec = simulate(load_scenario(text='[server]\npolicy = "two"\n[scenario]\nduration=1\nwarmup=0.5\n'
                                          '[workload]\nrate=30000'), raise_errors=True)
        assert 1.5 < rec.c_avg <= 2.0
    finally:
        del REGISTRY["two"]

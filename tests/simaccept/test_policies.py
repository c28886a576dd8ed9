"""Each policy's decision, traced on hand-made views."""
import math

import pytest

from simaccept import load_scenario, simulate
from simaccept.scenario import ScenarioError
from simaccept.servers.policies import (REGISTRY, AcceptLimit, AdaptiveClosed, PhaseView, PolicyError, QueueAware,
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


SHORT = ["scenario.warmup=0.1", "scenario.duration=0.2", "workload.rate=2000", "server.accept_limit=1"]


@pytest.mark.parametrize("kind", ["userver", "tux", "knot"])
@pytest.mark.parametrize("bad", [0, -1, math.nan, None, "3"])
def test_a_quota_that_breaks_the_contract_fails_the_run_naming_the_policy(kind, bad):
    # 0, -1 and NaN ran "ok" at 0 replies/s; None was a TypeError deep inside the server
    class Broken(AcceptLimit):
        name = "broken"

        def quota(self, v):
            return bad
    REGISTRY["broken"] = Broken
    try:
        sc = load_scenario(f"scenarios/thesis/{kind}-onepacket.toml", SHORT + ["server.policy=broken"])
        rec = simulate(sc)
        assert rec.status == "failed"
        assert rec.error.startswith(f"PolicyError: policy 'broken' (Broken).quota() returned {bad!r}: "
                                    "it must be a number >= 1, or inf")
        with pytest.raises(PolicyError):
            simulate(sc, raise_errors=True)
    finally:
        del REGISTRY["broken"]


class _NotAPolicy:
    def __init__(self, accept_limit):
        pass


class _NeedsMore(AcceptLimit):
    def __init__(self, accept_limit, k):
        super().__init__(accept_limit)


@pytest.mark.parametrize("entry, at_load, why", [
    (lambda lim: AcceptLimit(lim), True, "must be a subclass of simaccept.servers.policies.AcceptPolicy"),
    (_NotAPolicy, True, "must be a subclass of simaccept.servers.policies.AcceptPolicy"),
    (_NeedsMore, False, r"_NeedsMore\(accept_limit\) failed: TypeError: .*missing 1 required"),
])
def test_a_registry_entry_that_is_no_policy_is_refused_before_the_run(entry, at_load, why):
    # each had passed loading and then failed mid-run, in the server, as a bare traceback
    REGISTRY["odd"] = entry
    try:
        with pytest.raises(ScenarioError, match=why) as e:
            simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", SHORT + ["server.policy=odd"]))
        assert e.value.key == "server.policy"
        if at_load:
            with pytest.raises(ScenarioError, match=why):
                load_scenario("scenarios/thesis/userver-onepacket.toml", ["server.policy=odd"])
    finally:
        del REGISTRY["odd"]


@pytest.mark.parametrize("kind, setting, key", [
    ("knot", "server.policy=time-budget", "server.policy"),
    ("knot", "server.service_dist=exponential", "server.service_dist"),
    ("tux", "server.service_dist=exponential", "server.service_dist"),
    ("knot", "workload.idle_conns=5000", "workload.idle_conns"),
    ("tux", "workload.idle_conns=5000", "workload.idle_conns"),
    # neither has a getevents phase: the mux was read by no one
    ("tux", "server.mux=epoll", "server.mux"),
    ("tux", "server.mux=poll", "server.mux"),
    ("knot", "server.mux=epoll", "server.mux"),
])
def test_a_setting_the_servers_model_does_not_read_is_refused(kind, setting, key, tmp_path):
    # each ran "ok" with a record identical in every field to the default's
    from simaccept import run_sweep
    sc = load_scenario(f"scenarios/thesis/{kind}-onepacket.toml", SHORT + [setting])
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    assert e.value.key == key and kind in str(e.value)
    # a sweep refuses it before its first point, here the userver's, which reads it
    sw = load_scenario(f"scenarios/thesis/{kind}-onepacket.toml", SHORT + [setting, f'server.kind=["userver","{kind}"]'])
    with pytest.raises(ScenarioError) as e:
        run_sweep(sw, tmp_path / "out", plots=False)
    assert e.value.key == key
    assert not list((tmp_path / "out" / "points").glob("*.json"))


def test_tux_honours_a_time_budget():
    ov = SHORT[:2] + ["workload.rate=30000", "server.policy=time-budget", "server.phase_budget_us=40",
                      "server.accept_limit=inf"]
    budget = simulate(load_scenario("scenarios/thesis/tux-onepacket.toml", ov), raise_errors=True)
    plain = simulate(load_scenario("scenarios/thesis/tux-onepacket.toml", ov[:3] + ["server.accept_limit=inf"]),
                     raise_errors=True)
    assert budget.c_avg < plain.c_avg


@pytest.mark.parametrize("server", ["userver", "tux", "knot"])
def test_a_policy_that_overrides_only_work_phase_done_is_called_back_on_every_server(monkeypatch, server):
    """policies.py: every server calls ``work_phase_done`` after each work-phase.  The μserver's
    fast path for a plain accept-limit skipped a policy that overrides only that hook (0 calls
    where TUX made 1,998 and Knot-C 999, docs/known-defects.md, 4 Dec 2026)."""
    calls = []

    class Feedback(AcceptLimit):
        def work_phase_done(self, closed, items):
            calls.append((closed, items))

    monkeypatch.setitem(REGISTRY, "feedback-only", Feedback)
    sc = load_scenario(text=f'[server]\nkind = "{server}"\npolicy = "feedback-only"\naccept_limit = 1\n'
                            '[scenario]\nduration = 0.5\nwarmup = 0.0\n[workload]\nrate = 2000')
    simulate(sc, raise_errors=True)
    assert len(calls) > 500, len(calls)


@pytest.mark.parametrize("kind", ["userver", "tux", "knot"])
def test_what_a_policy_sees_is_what_the_policies_guide_says(kind):
    # docs/guides/policies.md, "What a policy sees, model by model": quota only with a connection
    # queued (on Knot-C at every thread's accept, queued or not); work_phase_done with the
    # connections closed, and items (on Knot-C a thread's since its accept; 0 until 6 Dec 2026)
    views, feedback = [], []

    class Recording(AcceptLimit):
        name = "recording"

        def quota(self, v):
            views.append(v)
            return self.accept_limit

        def work_phase_done(self, closed, items):
            feedback.append((closed, items))
    REGISTRY["recording"] = Recording
    try:
        sc = load_scenario(f"scenarios/thesis/{kind}-onepacket.toml",
                           ["scenario.warmup=0.1", "scenario.duration=0.3", "workload.rate=20000",
                            "server.accept_limit=10", "server.policy=recording"])
        rec = simulate(sc, raise_errors=True)
    finally:
        del REGISTRY["recording"]
    assert rec.replies_per_s > 0 and views and feedback
    assert all(v.accept_limit == 10 and v.open_conns >= 0 and v.ready >= 0 for v in views)
    empty = sum(v.acceptq_len == 0 for v in views)
    assert (empty > 0) == (kind == "knot"), empty
    assert sum(c for c, _ in feedback) > 0
    items = [i for _, i in feedback]
    assert sum(items) > 0 and min(items) >= 0, sum(items)
    if kind == "knot":
        # a thread goes back to accept only after serving what it took: one read at least each
        assert min(items) >= 1, min(items)


class _OnTheInstance(AcceptLimit):
    """Sets its hooks on the instance, as ``self.quota = ...`` in ``__init__`` does."""

    def __init__(self, accept_limit):
        super().__init__(accept_limit)
        self.quotas = self.feedback = 0

        def quota(v):
            self.quotas += 1
            return 2

        def work_phase_done(closed, items):
            self.feedback += 1
        self.quota, self.work_phase_done = quota, work_phase_done


@pytest.mark.parametrize("kind", ["userver", "tux", "knot"])
def test_hooks_set_on_the_instance_are_called_on_every_server(kind, monkeypatch):
    # the μserver read a class whose quota was AcceptPolicy's as plain Accept-N and never called
    # an instance's (Accept-inf here: 2 a phase on TUX and Knot-C, unbounded on the μserver)
    made = []

    class Spy(_OnTheInstance):
        def __init__(self, accept_limit):
            super().__init__(accept_limit)
            made.append(self)
    monkeypatch.setitem(REGISTRY, "on-the-instance", Spy)
    sc = load_scenario(f"scenarios/thesis/{kind}-onepacket.toml",
                       ["scenario.warmup=0.1", "scenario.duration=0.3", "workload.rate=20000",
                        "server.accept_limit=inf", "server.policy=on-the-instance"])
    rec = simulate(sc, raise_errors=True)
    (p,) = made
    assert p.quotas > 100 and p.feedback > 100, (p.quotas, p.feedback)
    if kind != "knot":      # Knot-C's thread accepts one at a time whatever the quota
        assert rec.c_avg <= 2.0


def test_is_plain_accept_limit_looks_at_the_instance_too():
    from simaccept.servers.policies import is_plain_accept_limit
    assert is_plain_accept_limit(AcceptLimit(10))
    assert not is_plain_accept_limit(_OnTheInstance(10))
    assert not is_plain_accept_limit(QueueAware(10)) and not is_plain_accept_limit(TimeBudget(10, 40))
    borrowed = AcceptLimit(10)
    borrowed.quota = AcceptLimit(1).quota       # another policy's bound hook: its limit, not this one's
    assert not is_plain_accept_limit(borrowed)


def test_an_error_names_the_policy_by_its_registered_name_not_an_inherited_one(monkeypatch):
    # MyQA inherits name = "queue-aware": the error named the shipped policy
    class MyQA(QueueAware):
        def quota(self, v):
            return None
    monkeypatch.setitem(REGISTRY, "my-qa", MyQA)
    rec = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", SHORT + ["server.policy=my-qa"]))
    assert rec.status == "failed"
    assert rec.error.startswith("PolicyError: policy 'my-qa' (MyQA).quota() returned None"), rec.error
    from simaccept.servers.policies import checked_quota, policy_label
    assert policy_label(MyQA(1)) == "policy 'my-qa' (MyQA)"

    class Unregistered(QueueAware):
        pass
    assert policy_label(Unregistered(1)) == "policy class Unregistered"
    with pytest.raises(PolicyError, match=r"^policy class Unregistered\.quota\(\) returned 0"):
        checked_quota(Unregistered(1), 0)


@pytest.mark.parametrize("how", [
    lambda r: r.__setitem__("accept-limit", QueueAware),
    lambda r: r.update({"queue-aware": AcceptLimit}),
    lambda r: r.update(**{"time-budget": AcceptLimit}),
    lambda r: r.__ior__({"adaptive-closed": AcceptLimit}),
    lambda r: r.__delitem__("accept-limit"),
    lambda r: r.pop("queue-aware"),
    lambda r: r.popitem(),
])
def test_a_shipped_policy_cannot_be_registered_over_or_removed(how):
    # REGISTRY["accept-limit"] = Mine made every scenario at the default policy run Mine,
    # recorded as accept-limit
    before = dict(REGISTRY)
    with pytest.raises(PolicyError, match="REGISTRY"):
        how(REGISTRY)
    assert dict(REGISTRY) == before
    rec = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", SHORT), raise_errors=True)
    assert rec.policy == "accept-limit" and rec.c_avg <= 1.0


def test_the_registry_still_takes_ones_own_and_survives_pickling(monkeypatch):
    import pickle

    class Mine(AcceptLimit):
        pass
    REGISTRY["accept-limit"] = AcceptLimit         # the same class again: no change, allowed
    REGISTRY.setdefault("mine", Mine)
    try:
        assert REGISTRY["mine"] is Mine
        back = pickle.loads(pickle.dumps({k: v for k, v in REGISTRY.items() if k != "mine"}))
        back = pickle.loads(pickle.dumps(type(REGISTRY)(back)))
        assert type(back) is type(REGISTRY) and dict(back) == {k: v for k, v in REGISTRY.items() if k != "mine"}
        with pytest.raises(PolicyError):
            back["accept-limit"] = QueueAware
        back["mine"] = Mine
        back.clear()                               # removes one's own, keeps the shipped
        assert "mine" not in back and {"accept-limit", "queue-aware"} <= set(back)
    finally:
        REGISTRY.pop("mine", None)


def test_a_raising_policys_record_keeps_its_own_frames():
    # the five outermost frames (simulate, SimPy's, the server's call) left out the policy's
    class Raises(AcceptLimit):
        def quota(self, v):
            return self.helper_that_fails(v)

        def helper_that_fails(self, v):
            raise RuntimeError("boom")
    REGISTRY["raises"] = Raises
    try:
        rec = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", SHORT + ["server.policy=raises"]))
    finally:
        del REGISTRY["raises"]
    assert rec.status == "failed" and rec.error.startswith("RuntimeError: boom")
    assert "in helper_that_fails" in rec.error and "in quota" in rec.error, rec.error


def test_a_refused_registry_update_changes_nothing():
    class Mine(AcceptLimit):
        pass
    before = dict(REGISTRY)
    with pytest.raises(PolicyError, match="'accept-limit'"):
        REGISTRY.update({"mine-first": Mine, "accept-limit": Mine})
    assert dict(REGISTRY) == before and "mine-first" not in REGISTRY


def test_a_class_registered_twice_is_named_by_both(monkeypatch):
    from simaccept.servers.policies import policy_label

    class Both(AcceptLimit):
        pass
    monkeypatch.setitem(REGISTRY, "both-a", Both)
    monkeypatch.setitem(REGISTRY, "both-b", Both)
    assert policy_label(Both(1)) == "policy 'both-a' or 'both-b' (Both)"

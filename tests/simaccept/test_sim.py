"""simulate(): what a finished run leaves behind."""
import gc

import pytest

import simaccept.sim as sim_mod
from simaccept import load_scenario, simulate
from simaccept.host import Host
from simaccept.scenario import ScenarioError


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


def test_a_realsys_spin_is_simulated_as_user_work_per_request():
    # One scenario file means one experiment in both halves: the real servers burn
    # realsys.spin_us of CPU on every request, so the simulated server must too (it used
    # to ignore [realsys]: `simaccept run scenarios/realsys/onepacket-select.toml` at
    # 6,000 req/s answered all 6,000, where with the spin it saturates at ~3,800).
    import json
    from simaccept.costs import load_costs
    over = ["scenario.warmup=0.2", "scenario.duration=0.5", "server.accept_limit=1", "workload.rate=6000"]
    spun = simulate(load_scenario("scenarios/realsys/onepacket-select.toml", over))
    base = load_costs("thesis-2004").us["user_per_request"]
    by_cost = simulate(load_scenario("scenarios/realsys/onepacket-select.toml",
                                     over + ["realsys.spin_us=0", f"costs.user_per_request={base + 200.0!r}"]))
    bare = simulate(load_scenario("scenarios/realsys/onepacket-select.toml", over + ["realsys.spin_us=0"]))
    strip = ("config", "started_at", "wall_s")
    a, b = ({k: v for k, v in r.to_dict().items() if k not in strip} for r in (spun, by_cost))
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert bare.replies_per_s > 1.4 * spun.replies_per_s     # the spin saturates it: ~1/(200 us + own work)


@pytest.mark.parametrize("server", ["userver", "tux", "knot"])
@pytest.mark.parametrize("rate", [0.5, 20.0])
def test_a_sparse_run_measures_its_whole_window(server, rate):
    # The warm-up snapshot was taken at the server's first wake-up after warm-up: at 0.5
    # req/s the μserver measured 0.34 s of a 1 s window and reported 3 replies/s.  It is
    # now taken at the end of warm-up, so the window is the scenario's, and at this light
    # load every connection that arrives in it is answered in it (in well under a
    # millisecond) but one arriving at its very end.
    sc = load_scenario(f"scenarios/thesis/{server}-onepacket.toml",
                       ["scenario.duration=8", "scenario.warmup=0.5", f"workload.rate={rate}",
                        "server.accept_limit=1", "scenario.seed=7"])
    rec, host = simulate(sc, return_host=True)
    assert rec.status == "ok"
    assert rec.duration_s == pytest.approx(8.0, abs=1e-9)
    arrived = sum(1 for t in host.t0 if 0.5 <= t < 8.5)
    assert arrived >= 0.5 * rate * 8
    replies = round(rec.replies_per_s * rec.duration_s)
    assert arrived - 1 <= replies <= arrived


def test_simulate_refuses_what_is_not_a_scenario():
    # a dict or a path raised AttributeError: 'dict' object has no attribute 'axes'
    for bad in ({"workload": {"rate": 1000}}, "scenarios/thesis/userver-onepacket.toml", None):
        with pytest.raises(TypeError, match=r"simulate\(\) takes a Scenario"):
            simulate(bad)


def test_a_scenario_changed_after_loading_is_checked_again():
    # a negative rate set after loading ran with status "ok" and 0 replies/s
    sc = load_scenario(text="[scenario]\nduration = 0.2\nwarmup = 0.1\n[workload]\nrate = 1000\n")
    sc["workload"]["rate"] = -5
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    assert e.value.key == "workload.rate"
    sc["workload"]["rate"] = 1000.0
    assert simulate(sc).status == "ok"


def test_values_set_after_loading_run_as_loading_would_have_read_them():
    # An np.float32 rate failed as JSON (the record embeds the config), and accept_limit =
    # math.inf, which check() lets through, failed mid-run with an OverflowError.
    import json
    import math

    import numpy as np
    base = ["scenario.warmup=0.1", "scenario.duration=0.2", "workload.rate=2000"]
    loaded = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", base + ["server.accept_limit=inf"]))
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml", base)
    sc["workload"]["rate"] = np.float32(2000.0)
    sc["server"]["accept_limit"] = math.inf
    rec = simulate(sc)
    assert rec.status == "ok", rec.error
    assert rec.replies_per_s == loaded.replies_per_s and rec.accept_limit == "inf"
    assert json.loads(rec.config)["workload"]["rate"] == 2000.0
    assert sc["server"]["accept_limit"] == math.inf      # the caller's scenario is not changed


def test_a_scenario_with_sweep_axes_is_refused_naming_every_axis_and_the_overrides_that_fix_them():
    # it named the first axis only and suggested run_sweep; fixing that one was refused again
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml", ["scenario.seed=[1, 2]"])
    with pytest.raises(ScenarioError) as e:
        simulate(sc)
    names = [k for k, _ in sc.axes]
    assert len(names) == 3 and e.value.key == names[0]
    assert all(n in e.value.reason for n in names)
    assert "run_sweep" in e.value.reason
    fix = eval(e.value.reason.split("overrides=", 1)[1].split("]))", 1)[0] + "]")
    assert [f.split("=", 1)[0] for f in fix] == names
    assert not load_scenario("scenarios/thesis/userver-onepacket.toml", ["scenario.seed=[1, 2]"] + fix).axes


def _probe_scenario():
    return load_scenario("thesis/userver-onepacket", ["server.accept_limit=inf", "workload.rate=27000",
                                                      "scenario.warmup=0.5", "scenario.duration=1"])


def _results(rec):
    d = rec.to_dict()
    for k in ("wall_s", "started_at"):
        d.pop(k)
    return d


def test_a_probe_that_only_reads_leaves_the_run_the_same():
    sc = _probe_scenario()
    seen = []

    def probe(env, host, server):
        def sample():
            while True:
                yield env.timeout(0.01)
                seen.append((env.now, len(host.lsock.acceptq), host.lsock.synq_len))
        env.process(sample())

    plain = simulate(sc, raise_errors=True)
    probed = simulate(sc, raise_errors=True, probe=probe)
    assert _results(probed) == _results(plain)
    # it ran through the whole run, from its set-up, and saw the queues move
    assert 145 <= len(seen) <= 151 and seen[0][0] == pytest.approx(0.01)
    assert len({q for _, q, _ in seen}) > 1 and max(s for _, _, s in seen) > 0


def test_a_probe_that_fails_fails_the_run_as_any_failure_does():
    sc = _probe_scenario()

    def probe(env, host, server):
        raise RuntimeError("the probe broke")

    rec = simulate(sc, probe=probe)
    assert rec.status == "failed" and "RuntimeError: the probe broke" in rec.error
    with pytest.raises(RuntimeError, match="the probe broke"):
        simulate(sc, probe=probe, raise_errors=True)


class _ProbeObject:
    def __call__(self, env, host, server):
        self.seen = (type(env).__name__, type(host).__name__, type(server).__name__)


@pytest.mark.parametrize("probe, says", [
    (5, r"got 5 \(int\)"),
    ("sample", r"got 'sample' \(str\)"),
    (list(range(1000)), r"got \[0, 1, 2, .{50,70}\.\.\. \(list\)$"),     # the value shortened, not 4,000 characters
    (lambda env: None, r"<lambda>\(env\) cannot be called so: too many positional arguments"),
    (lambda env, host, server, every: None, r"cannot be called so: missing a required argument: 'every'"),
    (_ProbeObject, r"_ProbeObject\(\) cannot be called so"),    # the class, not an instance of it
])
def test_a_probe_that_cannot_be_called_so_is_refused_by_name_before_the_run(probe, says):
    # 5 ran the set-up and came back a failed record, "TypeError: 'int' object is not callable"
    import re
    sc = _probe_scenario()
    for call in (sim_mod.simulate, simulate):
        for raise_errors in (False, True):
            with pytest.raises(TypeError, match=r"^probe: must be a function called as probe\(env, host, server\)") as e:
                call(sc, probe=probe, raise_errors=raise_errors)
            assert re.search(says, str(e.value)), str(e.value)


def test_a_probe_may_be_any_callable_that_takes_the_three():
    import functools
    sc = _probe_scenario()
    seen = []
    obj = _ProbeObject()
    for probe in (obj, functools.partial(lambda box, env, host, server: box.append(1), seen),
                  lambda *a: seen.append(len(a)), lambda env, host, server, every=0.01: seen.append(every)):
        assert simulate(sc, raise_errors=True, probe=probe).status == "ok"
    assert seen == [1, 3, 0.01] and obj.seen == ("Environment", "Host", "UServer")


def test_a_record_carries_the_costs_it_charged_not_only_the_profiles_name():
    # config names the profile; a row simulated before the profile was refitted read as one after
    import json

    from simaccept.costs import load_costs
    from simaccept.record import RunRecord
    ov = ["server.accept_limit=1", "workload.rate=5000", "scenario.warmup=0.05", "scenario.duration=0.1"]
    plain = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", ov), raise_errors=True)
    assert json.loads(plain.costs) == load_costs("thesis-2004").as_dict()
    mine = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", ov + ["costs.select_base=99"]),
                    raise_errors=True)
    got = json.loads(mine.costs)
    assert got["select_base"] == 99 and got == load_costs("thesis-2004", {"select_base": 99}).as_dict()
    assert mine.cost_profile == plain.cost_profile and mine.replies_per_s != plain.replies_per_s
    assert RunRecord.from_dict(json.loads(mine.to_json())) == mine     # a text column: read back as written
    def fails(env, host, server):
        raise RuntimeError("probe")
    failed = simulate(load_scenario("scenarios/thesis/userver-onepacket.toml", ov), probe=fails)
    assert failed.status == "failed" and json.loads(failed.costs) == json.loads(plain.costs)


def test_git_rev_is_the_checkouts_own_or_nothing(tmp_path, monkeypatch):
    # installed into site-packages inside a user's own repository, it recorded that repository's commit
    import os
    import subprocess
    from pathlib import Path
    # run from a git hook (a worktree's), GIT_DIR and GIT_INDEX_FILE are set: git would then
    # commit below into the developer's repository, and --show-toplevel answers any folder
    for k in [k for k in os.environ if k.startswith("GIT_")]:
        monkeypatch.delenv(k)
    root = Path(sim_mod.__file__).resolve().parent.parent
    own = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    assert sim_mod.git_rev() == own
    assert sim_mod.checkout_rev(root) == own
    repo = tmp_path / "theirs"
    (repo / "lib").mkdir(parents=True)
    for cmd in (["init", "-q"], ["-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty",
                                 "-m", "x"]):
        subprocess.run(["git", "-C", str(repo), *cmd], check=True)
    assert sim_mod.checkout_rev(repo) != ""                 # its own top level
    assert sim_mod.checkout_rev(repo / "lib") == ""         # a directory inside it: not a checkout
    assert sim_mod.checkout_rev(tmp_path / "nowhere") == ""

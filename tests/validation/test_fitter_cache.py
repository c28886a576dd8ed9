"""simulate_cached: a cached run is reused only for the same resolved costs.

The scenario JSON names a cost profile, not its values; a profile refitted in place
(thesis-fit rewrites thesis-2004.toml) must not be answered from the old profile's runs.
"""
import json
import shutil

import simaccept
import simaccept.costs as costs_mod
from validation.fitter import simulate_cached


def _json(profile):
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 ["workload.rate=3000", "server.accept_limit=1", "scenario.warmup=0.05",
                                  "scenario.duration=0.2", f'costs.profile="{profile}"'])
    return sc.to_json()


def test_a_profile_edited_in_place_is_simulated_again(tmp_path, monkeypatch):
    prof_dir = tmp_path / "costs"
    prof_dir.mkdir()
    for p in costs_mod.HERE.glob("*.toml"):
        shutil.copy(p, prof_dir / p.name)
    shutil.copy(costs_mod.HERE / "thesis-2004.toml", prof_dir / "cachetest.toml")
    monkeypatch.setattr(costs_mod, "HERE", prof_dir)
    js = _json("cachetest")
    ran = []
    first = simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))[js]
    again = simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))[js]
    assert len(ran) == 1 and json.dumps(again, sort_keys=True) == json.dumps(first, sort_keys=True)

    text = (prof_dir / "cachetest.toml").read_text()
    old = next(line for line in text.splitlines() if line.startswith("user_per_request ="))
    (prof_dir / "cachetest.toml").write_text(text.replace(old, "user_per_request = 40.0"))
    # no cache_clear(): an edit in a live process must be seen (a notebook editing a profile)
    assert _json("cachetest") == js        # same JSON: only the profile's contents changed
    edited = simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))[js]
    assert len(ran) == 2
    assert edited["cpu_share_user"] > 2 * first["cpu_share_user"]
    assert len(list((tmp_path / "cache").glob("*.json"))) == 2


def _policy_json(policy):
    # 30,000 req/s: past the μserver's one-packet peak (thesis: 19,500-22,000) at any plausible
    # fit of thesis-2004, so the accept queue holds more than one connection per accept-phase
    # and a quota of 1 shows; 12,000 did only while the fitted costs were high enough
    return simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                   ["workload.rate=30000", f'server.policy="{policy}"', 'server.accept_limit="inf"',
                                    "scenario.warmup=0.1", "scenario.duration=0.3"]).to_json()


def test_an_edited_user_policy_is_simulated_again(tmp_path, monkeypatch, register_policy, policy_source):
    # the validation cache (fit --cache, window, seeds, sensitivity) was keyed by the scenario
    # and the model only: an edited quota() got the old policy's runs back, as sweeps once did
    from simaccept.servers import policies
    monkeypatch.setitem(policies.REGISTRY, "cached-edited", policies.AcceptLimit)
    register_policy(policy_source("cached-edited", "view.acceptq_len"), "cached_policy_a")
    js = _policy_json("cached-edited")
    ran = []
    first = simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))[js]
    simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))
    assert len(ran) == 1                                 # unchanged: cached
    register_policy(policy_source("cached-edited", "1"), "cached_policy_b")        # quota() edited
    again = simulate_cached([js], tmp_path / "cache", on_done=lambda j, d: ran.append(d))[js]
    assert len(ran) == 2 and again["c_avg"] <= 1.0 < first["c_avg"]


def test_a_policy_typed_at_a_prompt_is_keyed_by_its_code_and_one_with_no_stable_value_never(
        tmp_path, monkeypatch, policy_source):
    # it was never cached (no source file); its loaded code is its key now (simaccept.sweep.policy_key)
    from simaccept.servers import policies
    ran = []
    for quota, cache, tool in (("1", "c", None), ("1", "c", None), ("2", "c", None), ("1", "u", object())):
        ns: dict = {}
        exec(policy_source("cached-edited", quota, register=False), ns)
        if tool is not None:
            ns["UserPolicy"].tool = tool            # prints as its address: no stable form
        monkeypatch.setitem(policies.REGISTRY, "prompt-cached", ns["UserPolicy"])
        simulate_cached([_policy_json("prompt-cached")], tmp_path / cache,
                        on_done=lambda j, d: ran.append((quota, cache)))
    assert ran == [("1", "c"), ("2", "c"), ("1", "u")]
    assert len(list((tmp_path / "c").glob("*.json"))) == 2 and not list((tmp_path / "u").glob("*.json"))


def test_simulate_records_with_a_cache_reads_what_it_kept(tmp_path, monkeypatch):
    # the report's realsys part: a rerun (a note edited, a crash part-way) simulates nothing again
    from validation import fitter, machine
    recs = machine.fit_records()[:3]
    short = ["scenario.warmup=0.05", "scenario.duration=0.2"]
    plain = fitter.simulate_records(recs, "realsys-linux6", 1, short)
    ran = []
    real_sim = fitter._simulate_json
    monkeypatch.setattr(fitter, "_simulate_json", lambda js, src: ran.append(js) or real_sim(js, src))
    first = fitter.simulate_records(recs, "realsys-linux6", 1, short, cache=tmp_path / "c")
    again = fitter.simulate_records(recs, "realsys-linux6", 1, short, cache=tmp_path / "c")
    assert len(ran) == len(set(ran)) == 3 and len(list((tmp_path / "c").glob("*.json"))) == 3
    key = lambda r: (r.seed, r.target_rate, r.replies_per_s, r.accept_rate)    # noqa: E731
    assert [key(r) for r in plain] == [key(r) for r in first] == [key(r) for r in again]
    assert all(r.status == "ok" and r.replies_per_s > 0 for r in again)


def test_progress_counts_what_is_run_and_what_was_cached(tmp_path):
    # an hours-long refresh (sensitivity, seeds) said nothing until it ended
    def js(rate):
        return simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                       [f"workload.rate={rate}", "server.accept_limit=1", "scenario.warmup=0.05",
                                        "scenario.duration=0.2"]).to_json()
    a, b, c = js(2000), js(3000), js(4000)
    simulate_cached([a], tmp_path / "cache")
    said = []
    done = simulate_cached([a, b, c], tmp_path / "cache", progress=said.append, every=0.0, source="<t>")
    assert set(done) == {a, b, c}
    assert said[0] == "<t>: 2 simulations to run, 1 cached, 1 at a time"
    assert said[1].startswith("<t>: 1/2 simulated in ") and "left at this pace" in said[1]
    assert said[2].startswith("<t>: 2/2 simulated in ") and len(said) == 3
    quiet = []
    simulate_cached([a, b, c], tmp_path / "cache", progress=quiet.append, every=0.0)
    assert quiet == []                                   # all cached: nothing to report
    slow = []
    simulate_cached([js(5000), js(6000)], tmp_path / "cache", progress=slow.append, every=3600.0)
    assert len(slow) == 2                                # start and end only: no line within the hour


def test_a_torn_or_incomplete_cache_file_is_simulated_again_and_rewritten(tmp_path):
    # a truncated file was a JSONDecodeError traceback, [1] a TypeError, and {"status": "ok"} a
    # run of nans that fit blamed on the simulation
    js = _json("thesis-2004")
    good = simulate_cached([js], tmp_path)[js]
    f, = tmp_path.glob("*.json")
    whole = f.read_text()
    for junk in (whole[: len(whole) // 2], "[1]", '{"status": "ok"}', "", json.dumps({**good, "extra": 1})):
        f.write_text(junk)
        again = simulate_cached([js], tmp_path)[js]
        assert again["status"] == "ok" and again["replies_per_s"] == good["replies_per_s"], junk[:40]
        assert json.loads(f.read_text())["replies_per_s"] == good["replies_per_s"]

"""Scenario files: every key checked before anything runs."""
import json
import math
from pathlib import Path

import numpy as np
import pytest

from simaccept.scenario import SCHEMA, ScenarioError, load_scenario

ROWS = [
    # (toml text, overrides, key named in the error, fragment of the reason)
    ("[workload]\nrate = -5", [], "workload.rate", "> 0"),
    ("[workload]\nrate = 0", [], "workload.rate", "> 0"),
    ("[workload]\nrate = nan", [], "workload.rate", "finite"),
    ("[workload]\nrate = inf", [], "workload.rate", "finite"),
    ("[workload]\nrate = \"fast\"", [], "workload.rate", "number"),
    ("[workload]\nrate = true", [], "workload.rate", "number"),
    ("[workload]\nrate = []", [], "workload.rate", "empty list"),
    ("[workload]\nrate = [1, 1]", [], "workload.rate", "duplicate"),
    # one in-memory record per connection: 1e8 req/s ran until memory ran out (9.5 GB seen)
    ("[workload]\nrate = 1e8", [], "workload.rate", "more than the 20,000,000 a run may"),
    ("[scenario]\nduration = 1000\nwarmup = 0\n[workload]\nrate = [100, 20001]", [], "workload.rate",
     "offers 20,001,000 requests"),
    ("[workload]\nrat = 5", [], "workload.rat", "unknown key"),
    ("[wrkload]\nrate = 5", [], "wrkload", "unknown section"),
    ("[server]\naccept_limit = 0", [], "server.accept_limit", ">= 1"),
    ("[server]\naccept_limit = 2.5", [], "server.accept_limit", "integer"),
    ("[server]\naccept_limit = \"many\"", [], "server.accept_limit", "inf"),
    ("[server]\nmux = \"kqueue\"", [], "server.mux", "one of"),
    ("[kernel]\nprofile = \"linux-3\"", [], "kernel.profile", "one of"),
    ("[kernel]\nbacklog = 1.5", [], "kernel.backlog", "integer"),
    ("[kernel]\nsyncookies = 1", [], "kernel.syncookies", "true or false"),
    ("[scenario]\nname = [\"a\", \"b\"]", [], "scenario.name", "sweep axis"),
    ("[costs]\nprofile = \"nope\"", [], "costs.profile", "no cost profile"),
    ("[costs]\nselect_bse = 1.0", [], "costs.select_bse", "unknown key"),
    ("[costs]\nselect_base = -1.0", [], "costs.select_base", ">= 0"),
    ("[workload]\nrate = { a = 1 }", [], "workload.rate", "not a table"),
    ("scenario = 3", [], "scenario", "table"),
    ("", ["workload.rate=-1"], "workload.rate", "> 0"),
    ("", ["nosuch"], "nosuch", "section.key=value"),
    ("", ["workload=3"], "workload", "section.key"),
    ("", ["server.accept_limit=abc"], "server.accept_limit", "inf"),
    # -1 means "the profile's default"; any other value outside the range is refused, not
    # read as the default (-0.5) or run until "measured window is empty" (0)
    ("", ["client.syn_rto=-0.5"], "client.syn_rto", "> 0 (or -1 for the profile's default)"),
    ("", ["client.syn_rto=0"], "client.syn_rto", "> 0"),
    ("", ["kernel.max_syn_backlog=0"], "kernel.max_syn_backlog", ">= 1 (or -1"),
    ("", ["kernel.max_syn_backlog=-2"], "kernel.max_syn_backlog", ">= 1"),
    # integers no float holds, or past Python's 4,300-digit conversion limit (tracebacks until 2026-11-26)
    ("[workload]\nrate = 1" + "0" * 400, [], "workload.rate", "finite, got an integer of about 401 digits"),
    ("", ["workload.rate=1" + "0" * 400], "workload.rate", "about 401 digits"),
    ("[scenario]\nseed = 1" + "0" * 400, [], "scenario.seed", "<= 9223372036854775807, got an integer of about 401"),
    # integer bounds in full: :g showed backlog's as 1.04858e+06, one its refused 1048577 seemed to meet
    ("", ["kernel.backlog=1048577"], "kernel.backlog", "<= 1048576, got 1048577"),
    ("", ["scenario.seed=9223372036854775808"], "scenario.seed", "<= 9223372036854775807, got 9223372036854775808"),
    # the key and the length, not Python's advice to raise its limit (the file's key from its line)
    ("", ["scenario.seed=1" + "0" * 5000], "scenario.seed", "an integer of 5,001 digits, more than the 4,300"),
    ("[scenario]\nseed = 1" + "0" * 5000, [], "scenario.seed", "line 2: an integer of 5,001 digits"),
    ("[scenario]\nseed = 1_" + "0" * 5000, [], "scenario.seed", "line 2: an integer of 5,001 digits"),
    # text that is not UTF-8, from a shell argument (surrogates): results.csv failed to write it
    # once every point had run
    ("", ["scenario.name=a\udcffb"], "scenario.name", "must be UTF-8 text"),
    ("", ["costs.profile=/tmp/p\udcff.toml"], "costs.profile", "must be UTF-8 text"),
    # -0.0 is 0.0: one point named twice, not two points
    ("[scenario]\nwarmup = [0.0, -0.0]", [], "scenario.warmup", "duplicate"),
    # a key set twice is named (tomllib's message gives only the line and column)
    ("[scenario]\nduration = 3.0\nwarmup = 1.0\nduration = 4.0", [], "scenario.duration", "again at line 4"),
    ("[workload]\nrate = 5\n[workload]\nrate = 6", [], "workload", "again at line 3"),
    # under a header with a comment: the key was named "workload]   # the load.rate"
    ("[workload]   # the load\nrate = 5\nrate = 6", [], "workload.rate", "again at line 3"),
    ("[workload]# x\nrate = 5\nrate = 6", [], "workload.rate", "again at line 3"),
    ("[workload] # x\nrate = 5\n[workload] # y\nrate = 6", [], "workload", "again at line 3"),
    # a --set value that goes on to set more keys: they were dropped unread, never refused
    ("", ["workload.rate=1000\nserver.accept_limit=5"], "workload.rate", "goes on to set server: give each"),
    ("", ['scenario.name="x"\n[costs]\nprofile="nope"'], "scenario.name", "goes on to set costs"),
    # a profile path that cannot be a file's
    ("", ['costs.profile="~nosuchuser-simaccept/p.toml"'], "costs.profile", "cannot be a file's path"),
    ("", ['costs.profile="a\\u0000b.toml"'], "costs.profile", "null byte"),
    ("", ['costs.profile="' + "x" * 300 + '.toml"'], "costs.profile", "cannot be opened"),
    # a directory, by name or as a .toml path: said so, where it was "no cost profile named"
    ("", ['costs.profile="/"'], "costs.profile", "\"/\" is a directory: name a packaged profile ("),
    ("", ['costs.profile="{tmp}/d.toml"'], "costs.profile", "d.toml' is a directory, not a .toml file"),
]


@pytest.mark.parametrize("text,overrides,key,reason", ROWS)
def test_bad_input_is_refused_naming_the_key(text, overrides, key, reason, tmp_path):
    (tmp_path / "d.toml").mkdir()
    overrides = [o.replace("{tmp}", str(tmp_path)) for o in overrides]
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text=text, overrides=overrides)
    assert ei.value.key == key
    assert reason in str(ei.value)


def test_not_toml_and_not_utf8():
    with pytest.raises(ScenarioError, match="not valid TOML"):
        load_scenario(text="[scenario\n")
    # the refused line is quoted
    with pytest.raises(ScenarioError, match="'rate = 5 5'"):
        load_scenario(text="[workload]\nrate = 5 5\n")
    with pytest.raises(ScenarioError, match="not UTF-8"):
        load_scenario(text=b"[scenario]\nname = \"\xff\"\n")


def test_a_file_not_utf8_is_named(tmp_path):
    p = tmp_path / "latin1.toml"
    p.write_bytes(b"[scenario]\nname = \"caf\xe9\"\n")
    with pytest.raises(ScenarioError, match=r"latin1\.toml' is not UTF-8 \(byte offset 22\)"):
        load_scenario(p)


@pytest.mark.parametrize("doc", [None, 5, "[workload]\nrate = 5", [("workload", {"rate": 5})]])
def test_scenario_from_dict_refuses_what_is_not_a_mapping(doc):
    from simaccept.scenario import scenario_from_dict
    with pytest.raises(ScenarioError, match=f"must be a mapping .* got {type(doc).__name__}") as e:
        scenario_from_dict(doc)
    assert e.value.key == "<document>"


def test_a_file_that_never_ends_is_refused_not_read_to_the_end():
    # /dev/zero was read until the OOM killer stopped it at 24 GB
    with pytest.raises(ScenarioError, match="larger than 1,048,576 bytes") as e:
        load_scenario("/dev/zero")
    assert e.value.key == "<file>"


def test_the_file_and_a_flag_are_not_named_as_scenario_keys(tmp_path):
    with pytest.raises(ScenarioError) as e:
        load_scenario(tmp_path / "missing.toml")
    assert str(e.value).startswith("scenario file: cannot read") and e.value.key == "<file>"
    assert str(ScenarioError("--jobs", "must be >= 1")) == "--jobs: must be >= 1"
    assert str(ScenarioError("workload.rate", "must be > 0")) == "scenario key 'workload.rate': must be > 0"


def test_one_string_of_overrides_is_a_type_error_not_one_override_per_character():
    # it said "scenario key 'w': override must look like section.key=value"
    with pytest.raises(TypeError, match="list of 'section.key=value' strings"):
        load_scenario(text="", overrides="workload.rate=5000")
    assert load_scenario(text="", overrides=iter(["workload.rate=5000"]))["workload"]["rate"] == 5000


@pytest.mark.parametrize("call,key,reason", [
    # each raised a bare TypeError, AttributeError or ValueError from inside the loader
    (lambda: load_scenario(3), "<path>", "must be a file's path (str or os.PathLike), got 3"),
    (lambda: load_scenario(""), "<path>", "the path is empty"),          # it said: cannot read '.'
    (lambda: load_scenario(text=5), "<document>", "text must be TOML as a str or bytes, got int"),
    (lambda: load_scenario(text="").get("workload"), "workload", "must be section.key"),
])
def test_a_misused_loader_raises_a_scenario_error(call, key, reason):
    with pytest.raises(ScenarioError) as e:
        call()
    assert e.value.key == key and reason in e.value.reason


def test_overrides_none_is_no_override_and_a_non_list_is_a_type_error():
    assert load_scenario(text="[workload]\nrate = 700\n", overrides=None)["workload"]["rate"] == 700
    with pytest.raises(TypeError, match="list of 'section.key=value' strings, got 5"):
        load_scenario(text="", overrides=5)


@pytest.mark.parametrize("key,value,want", [
    # np.arange / DataFrame cells: np.float32 and np.int64 were refused ("must be a number, got
    # np.float32(1000.0)") while np.float64, a float subclass, was accepted
    ("workload.rate", np.float32(1000), 1000.0),
    ("workload.rate", np.int64(1000), 1000.0),
    ("kernel.backlog", np.int64(5), 5),
    ("kernel.backlog", np.uint16(7), 7),
    ("server.accept_limit", np.int32(10), 10),
    ("kernel.syncookies", np.bool_(True), True),
])
def test_numpy_scalars_are_taken_as_the_numbers_they_are(key, value, want):
    from simaccept.scenario import scenario_from_dict
    s, k = key.split(".")
    sc = scenario_from_dict({s: {k: value}})
    got = sc.get(key)
    assert got == want and type(got) is type(want)
    assert json.loads(sc.to_json())[s][k] == want


@pytest.mark.parametrize("key,value,reason", [
    ("kernel.backlog", np.float32(5.5), "must be an integer"),
    ("kernel.backlog", np.bool_(True), "must be an integer"),
    ("workload.rate", np.float32(-3), "must be > 0"),
    ("workload.rate", np.datetime64("2026-01-01"), "must be a number"),
])
def test_numpy_scalars_are_checked_like_any_value(key, value, reason):
    from simaccept.scenario import scenario_from_dict
    s, k = key.split(".")
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict({s: {k: value}})
    assert e.value.key == key and reason in e.value.reason


def test_the_default_sentinel_and_a_byte_order_mark_are_accepted():
    sc = load_scenario(text="\ufeff[client]\nsyn_rto = -1\n[kernel]\nmax_syn_backlog = -1\n")
    assert sc["client"]["syn_rto"] == -1.0 and sc["kernel"]["max_syn_backlog"] == -1
    assert load_scenario(text="", overrides=["client.syn_rto=0.5"])["client"]["syn_rto"] == 0.5


def test_one_profile_spelled_two_ways_is_not_two_sweep_points(tmp_path, monkeypatch):
    (tmp_path / "p.toml").write_text("[costs]\nk_syn = 1.0\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=['costs.profile=["p.toml", "./p.toml"]'])
    assert ei.value.key == "costs.profile" and "duplicate" in ei.value.reason


def test_defaults_fill_every_key():
    sc = load_scenario(text="")
    for section, keys in SCHEMA.items():
        assert set(keys) <= set(sc[section])


def test_overrides_are_typed_toml():
    sc = load_scenario(text="", overrides=["workload.rate=[100, 200]", "server.accept_limit=inf",
                                           "kernel.syncookies=true", "server.mux=poll"])
    assert sc["workload"]["rate"] == [100.0, 200.0]
    assert sc["server"]["accept_limit"] == "inf"
    assert sc["kernel"]["syncookies"] is True
    assert sc["server"]["mux"] == "poll"


def test_grid_is_product_and_seeds_follow_coordinates():
    sc = load_scenario(text="[workload]\nrate=[100,200,300]\n[server]\naccept_limit=[1,\"inf\"]")
    pts = sc.points()
    assert len(pts) == 6
    assert len({p.point_key for p in pts}) == 6
    # adding a rate does not change the other points' seeds
    sc2 = load_scenario(text="[workload]\nrate=[100,200,300,400]\n[server]\naccept_limit=[1,\"inf\"]")
    keys2 = {p.point_label(): p.point_key for p in sc2.points()}
    for p in pts:
        assert keys2[p.point_label()] == p.point_key


def test_two_swept_costs_written_in_either_order_are_the_same_points():
    one = load_scenario(text="", overrides=["costs.accept=[4.0, 5.0]", "costs.read=[4.0, 6.0]"]).points()
    other = load_scenario(text="", overrides=["costs.read=[4.0, 6.0]", "costs.accept=[4.0, 5.0]"]).points()
    assert [(p.point_label(), p.point_key, p.content_hash()) for p in one] == \
        [(p.point_label(), p.point_key, p.content_hash()) for p in other]
    assert one[1].point_label() == "costs.accept=4.0;costs.read=6.0"


def test_a_point_with_overrides_keeps_its_stream_and_label():
    pts = {q.point_label(): q for q in load_scenario(
        text="[workload]\nrate=[2000.0, 3000.0]\n[server]\naccept_limit=[1, 10]").points()}
    p = pts["server.accept_limit=10;workload.rate=2000.0"]
    tweaked = p.with_overrides(["costs.accept=7.0"])
    assert (tweaked.point_key, tweaked.coords) == (p.point_key, p.coords)
    assert tweaked.seed_sequence().generate_state(4).tolist() == p.seed_sequence().generate_state(4).tolist()
    assert tweaked["costs"]["accept"] == 7.0
    assert p.with_overrides([]).point_key == p.point_key
    # a coordinate set to another value takes that grid point's stream and label
    moved = p.with_overrides(["workload.rate=3000"])
    there = pts["server.accept_limit=10;workload.rate=3000.0"]
    assert (moved.point_key, moved.point_label()) == (there.point_key, there.point_label())
    # made a sweep axis again, it is a sweep, not a point
    again = p.with_overrides(["workload.rate=[2000.0, 3000.0]"])
    assert (again.point_key, again.coords) == ((), ())
    assert [q.point_key for q in again.points()] == [q.point_key for q in load_scenario(
        text="[workload]\nrate=[2000.0, 3000.0]\n[server]\naccept_limit=10").points()]


@pytest.mark.parametrize("doc, key", [
    ({"workload": {1: 2, "x": 3}}, "workload.1"),
    ({"workload": {"x": 3, 1: 2}}, "workload.1"),
    ({"costs": {2.5: 1.0, "bogus": 1.0}}, "costs.2.5"),
])
def test_a_key_that_is_no_text_is_named_not_a_type_error(doc, key):
    from simaccept.scenario import scenario_from_dict
    with pytest.raises(ScenarioError) as e:
        scenario_from_dict(doc)
    assert e.value.key == key


def test_shipped_thesis_scenarios_load():
    for name in ("userver-onepacket", "userver-specweb"):
        sc = load_scenario(f"scenarios/thesis/{name}.toml")
        assert sc["kernel"]["backlog"] == 128
        assert sc["kernel"]["profile"] == "linux-2.4"
        assert sc["kernel"]["syncookies"] is False
        assert sc["kernel"]["max_syn_backlog"] == 1024
        assert sc["network"]["nics"] == 2
        assert [p.get("server.accept_limit") for p in sc.points()][:1] == [1]
        assert math.isclose(min(sc["workload"]["rate"]), 10000)
        assert math.isclose(max(sc["workload"]["rate"]), 30000)


_REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


# from the checkout's root whatever the working directory (a relative glob found none from tests/,
# and an empty parameter set is a skip)
@pytest.mark.parametrize("path", sorted(p.relative_to(_REPO).as_posix() for p in (_REPO / "scenarios").rglob("*.toml")))
def test_every_shipped_scenario_loads(path):
    sc = load_scenario(_REPO / path)
    assert sc.points()
    if path.startswith("scenarios/thesis/"):
        assert sc["kernel"]["profile"] == "linux-2.4" and sc["kernel"]["backlog"] == 128


def test_model_fingerprint_follows_the_model_code_only(tmp_path):
    # A copy of the package hashes the same; a changed statement in a model module (or a
    # new model module) changes it; a change to plotting, the CLI or the fingerprint's own
    # code does not, nor a comment, a docstring or a blank line anywhere.  No cache_clear()
    # between edits: a live process (a notebook with %autoreload) sees them.
    import shutil
    import simaccept
    from simaccept.scenario import model_fingerprint
    pkg = Path(simaccept.__file__).resolve().parent
    copy_ = tmp_path / "simaccept"
    shutil.copytree(pkg, copy_, ignore=shutil.ignore_patterns("__pycache__"))
    same = model_fingerprint(str(copy_))
    assert same == model_fingerprint()

    def edit(rel, old, new):
        f = copy_ / rel
        text = f.read_text()
        assert old in text, (rel, old)
        f.write_text(text.replace(old, new, 1))

    (copy_ / "plots.py").write_text((copy_ / "plots.py").read_text() + "\ndef tweak():\n    return 1\n")
    (copy_ / "cli.py").write_text((copy_ / "cli.py").read_text() + "\nX = 2\n")
    (copy_ / "fingerprint.py").write_text((copy_ / "fingerprint.py").read_text() + "\nY = 3\n")
    assert model_fingerprint(str(copy_)) == same
    edit("servers/userver.py", '"""The μserver', '"""The μ-server, mended docstring')
    edit("servers/userver.py", "YIELD_QUANTUM = 1e-3", "YIELD_QUANTUM = 1e-3   # a comment with a \"quote\"")
    edit("host.py", "\n\n", "\n\n\n   \n")
    edit("kernel.py", "\n", "\n# a comment line\n")
    assert model_fingerprint(str(copy_)) == same
    edit("servers/userver.py", "YIELD_QUANTUM = 1e-3", "YIELD_QUANTUM = 2e-3")
    edited = model_fingerprint(str(copy_))
    assert edited != same
    (copy_ / "servers" / "adaptive.py").write_text("X = 1\n")
    assert model_fingerprint(str(copy_)) not in (same, edited)


MODEL_SOURCE_ROWS = [
    # (source, what model_source keeps)
    ('"""doc"""\nx = 1\n', "x = 1\n"),
    ("x = 1  # why\n\n\ny = 2\n", "x = 1\ny = 2\n"),
    ('s = "# not a comment"\n', 's = "# not a comment"\n'),
    ('def f():\n    """doc\n    two lines"""\n    return 1\n', "def f():\n    return 1\n"),
    ('class A:\n    "doc"\n    x = "doc"\n', 'class A:\n    x = "doc"\n'),       # only the first string is one
    ('def f():\n    x = 1\n    "not a docstring"\n', 'def f():\n    x = 1\n    "not a docstring"\n'),
    ('é = "ü"  # ä\n"""late string"""\n', 'é = "ü"\n"""late string"""\n'),
    ("x = f'{1}' # c\r\ny = 2\r\n", "x = f'{1}'\ny = 2\n"),
    ("def (:\n", "def (:\n"),                                            # does not parse: kept whole
]


@pytest.mark.parametrize("src,kept", MODEL_SOURCE_ROWS)
def test_model_source_drops_what_cannot_change_a_result(src, kept):
    from simaccept.fingerprint import model_source
    assert model_source(src) == kept


def test_content_hash_covers_the_model_but_realsys_names_do_not(monkeypatch):
    import simaccept.scenario as scenario_mod
    sc = load_scenario(text='[workload]\nrate = 1000\n')
    sim_key, real_key = sc.content_hash(), sc.content_hash(simulator=False)
    monkeypatch.setattr(scenario_mod, "model_fingerprint", lambda root=None: "an-edited-model")
    assert sc.content_hash() != sim_key
    assert sc.content_hash(simulator=False) == real_key


BAD_PROFILE_FILES = [
    # (file text or None for "no file", fragment of the reason)
    (None, "no cost profile file"),
    ("[costs\nk_syn = 1\n", "not a TOML file"),
    (b"[costs]\nk_syn = 1\xff\n", "not a TOML file"),
    ("[costs]\nk_sin = 1.0\n", "unknown cost(s) ['k_sin']"),
    ("[costs]\nk_syn = -1.0\n", "'k_syn' must be a finite number >= 0"),
    ("[costs]\nk_syn = nan\n", "'k_syn' must be a finite number >= 0"),
    ("[costs]\nk_syn = \"5\"\n", "'k_syn' must be a finite number >= 0"),
    ("[costs]\nk_syn = true\n", "'k_syn' must be a finite number >= 0"),
    ("costs = 3\n", "[costs] must be a table"),
    ("x = 1\n", "no [costs] table"),           # every cost would silently be the default
    ("[cost]\nk_syn = 1.0\n", "no [costs] table"),
    # a misspelt second table, or a cost above [costs], kept its default silently
    ("[costs]\naccept = 3.0\n[cost]\nread = 100.0\n", "'cost' outside the [costs] table"),
    ("k_syn = 1.0\n[costs]\naccept = 3.0\n", "'k_syn' outside the [costs] table"),
    ("[costs]\nk_syn = 1" + "0" * 400 + "\n", "got an integer of about 401 digits"),
    ("[costs]\nk_syn = 1" + "0" * 5000 + "\n", "not a usable number"),
    ("[costs]\nk_syn = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply to read"),   # was a RecursionError
]


@pytest.mark.parametrize("text,reason", BAD_PROFILE_FILES)
def test_a_bad_profile_file_is_refused_naming_costs_profile(tmp_path, text, reason):
    path = tmp_path / "mine.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    elif text is not None:
        path.write_text(text)
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text='[workload]\nrate = 1000\n', overrides=[f'costs.profile="{path}"'])
    assert ei.value.key == "costs.profile" and reason in ei.value.reason


def test_a_profile_named_by_path_is_used_and_resolved_against_the_working_directory(tmp_path, monkeypatch):
    # What `simaccept fit --out my.toml` wrote is usable without copying it into the package.
    import json
    from simaccept import simulate
    from simaccept.costs import load_costs
    (tmp_path / "mine.toml").write_text("[costs]\nuser_per_request = 40.0\n")
    monkeypatch.chdir(tmp_path)
    over = ["scenario.duration=1", "scenario.warmup=0.5", "workload.rate=2000", "server.accept_limit=1"]
    sc = load_scenario(text='[workload]\nrate = 1000\n',
                       overrides=over + ['costs.profile="mine.toml"'])
    assert sc["costs"]["profile"] == str((tmp_path / "mine.toml").resolve())       # absolute: workers agree
    assert load_costs(sc["costs"]["profile"]).us["user_per_request"] == 40.0
    base = load_scenario(text='[workload]\nrate = 1000\n', overrides=over)
    mine, stock = simulate(sc), simulate(base)
    assert mine.cost_profile == str((tmp_path / "mine.toml").resolve())
    assert json.loads(mine.config)["costs"]["profile"] == str((tmp_path / "mine.toml").resolve())
    assert mine.cpu_share_user > 2 * stock.cpu_share_user
    key = sc.content_hash()
    (tmp_path / "mine.toml").write_text("[costs]\nuser_per_request = 41.0\n")
    assert sc.content_hash() != key                  # an edited profile file is a new point


def test_a_profile_rewritten_with_its_size_and_mtime_kept_is_read_again(tmp_path):
    # An edit within one clock tick that keeps the size used to be answered from the first
    # reading; the key now has the inode and the ctime too.
    import os
    from simaccept.costs import read_profile
    path = tmp_path / "mine.toml"
    path.write_text("[costs]\nk_syn = 1.0\n")
    st = path.stat()
    assert read_profile(str(path))["k_syn"] == 1.0
    path.write_text("[costs]\nk_syn = 2.0\n")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    assert read_profile(str(path))["k_syn"] == 2.0
    tmp = tmp_path / "new.toml"                          # an editor that replaces the file
    tmp.write_text("[costs]\nk_syn = 3.0\n")
    os.utime(tmp, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(tmp, path)
    assert read_profile(str(path))["k_syn"] == 3.0


def test_save_profile_writes_a_readable_file_and_leaves_nothing_on_failure(tmp_path, monkeypatch):
    import os
    from simaccept import costs
    out = costs.save_profile(tmp_path / "fit.toml", {"k_syn": 1.5}, header="fitted")
    assert out.stat().st_mode & 0o777 == 0o644 and costs.read_profile(str(out)) == {"k_syn": 1.5}

    def full(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError):
        costs.save_profile(tmp_path / "fit.toml", {"k_syn": 9.0})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.toml"]
    assert costs.read_profile(str(out)) == {"k_syn": 1.5}


def test_load_costs_refuses_a_path_that_cannot_be_one():
    """The library entry point too (not only scenario files): KeyError with the path."""
    from simaccept.costs import load_costs
    for bad in ("~nosuchuser-simaccept/p.toml", "a\x00b.toml", "x" * 300 + ".toml"):
        with pytest.raises(KeyError, match="cost profile") as ei:
            load_costs(bad)
        assert repr(bad)[1:12] in ei.value.args[0]


@pytest.mark.parametrize("value, shown", [("abc", "'abc'"), (None, "None"), (10**400, "1000"), (True, "True")])
def test_a_cost_override_that_is_no_number_is_named(value, shown):
    from simaccept.costs import load_costs
    with pytest.raises(ValueError, match=f"cost 'read' must be a finite number of µs >= 0, got {shown}"):
        load_costs("thesis-2004", {"read": value})
    with pytest.raises(TypeError, match="overrides: a mapping of cost name to µs, got list"):
        load_costs("thesis-2004", [("read", 1.0)])


def test_a_misspelt_key_or_section_is_named():
    from simaccept.scenario import UnknownKey
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml")
    for call, key, why in [(lambda: sc.get("workload.rat"), "workload.rat", r"unknown key \(known in \[workload\]: kind"),
                           (lambda: sc.get("wrkload.rate"), "wrkload.rate", "unknown section 'wrkload'"),
                           (lambda: sc["wrkload"], "wrkload", r"unknown section \(known: scenario, ")]:
        with pytest.raises(UnknownKey, match=why) as e:
            call()
        assert e.value.key == key and isinstance(e.value, KeyError) and isinstance(e.value, ScenarioError)
        assert str(e.value).startswith(f"scenario key '{key}': unknown")   # not KeyError's quoted repr



@pytest.mark.parametrize("text,overrides,key,reason", [
    # each said only "unknown key" / listed every section
    ("", ["workload.rat=30000"], "workload.rat", "unknown key; did you mean 'workload.rate'?"),
    ("[server]\nacceptlimit = 1", [], "server.acceptlimit", "unknown key; did you mean 'server.accept_limit'?"),
    ("[server]\nrate = 1", [], "server.rate", "unknown key in [server]; did you mean 'workload.rate'?"),
    ("[costs]\nselect_bse = 1.0", [], "costs.select_bse", "did you mean 'costs.select_base'"),
    # nothing close: the section's keys, as Scenario.get names them
    ("[server]\nzzz = 1", [], "server.zzz", "unknown key (known in [server]: kind, mux, accept_limit,"),
    ("[costs]\nqqqqq = 1.0", [], "costs.qqqqq", "unknown key (known in [costs]: profile, select_base, select_per_fd,"),
    ("", ["wrkload.rate=30000"], "wrkload", "unknown section; did you mean [workload]?"),
    ("[zzzz]\nrate = 1", [], "zzzz", "unknown section (known: scenario, kernel, network, server,"),
])
def test_an_unknown_key_or_section_names_the_close_ones(text, overrides, key, reason):
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text=text, overrides=overrides)
    assert ei.value.key == key
    assert reason in ei.value.reason


@pytest.mark.parametrize("profile,reason", [
    # a packaged name given as a file: it said "no cost profile file '.../thesis-2004.toml'" alone
    ('"thesis-2004.toml"', "did you mean the packaged profile 'thesis-2004'? (a packaged profile is named without .toml)"),
    # a misspelled name: the close packaged names
    ("thesis-2040", "no cost profile named \"thesis-2040\"; did you mean the packaged profile 'thesis-2004'"),
    ('"thesis-2040.toml"', "did you mean the packaged profile 'thesis-2004'"),
])
def test_a_missing_profile_suggests_the_packaged_one(tmp_path, monkeypatch, profile, reason):
    from simaccept.costs import read_profile
    monkeypatch.chdir(tmp_path)         # no such file here
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[f"costs.profile={profile}"])
    assert ei.value.key == "costs.profile" and reason in ei.value.reason
    with pytest.raises(KeyError) as ki:
        read_profile(profile.strip('"'))
    assert "did you mean the packaged profile 'thesis-2004'" in ki.value.args[0]


@pytest.mark.parametrize("overrides,why", [
    # a dict said "scenario key 'workload.rate': override must look like section.key=value"
    ({"workload.rate": 30000}, "list of 'section.key=value' strings, not a dict: give ['workload.rate=30000']"),
    ({"workload": {"rate": 30000}, "server.accept_limit": math.inf},
     "give ['workload.rate=30000', 'server.accept_limit=inf']"),
    # a pair said "scenario key '('workload.rate', 30000)'"
    ([("workload.rate", 30000)], "one is the tuple ('workload.rate', 30000): give 'workload.rate=30000'"),
])
def test_overrides_as_a_dict_or_pairs_are_refused_showing_the_strings(overrides, why):
    with pytest.raises(TypeError) as e:
        load_scenario(text="", overrides=overrides)
    assert why in str(e.value)
    # the strings shown are taken
    shown = eval(str(e.value).split("give ", 1)[1])
    sc = load_scenario(text="", overrides=[shown] if isinstance(shown, str) else shown)
    assert sc["workload"]["rate"] == 30000
    # a list or tuple of strings is taken as before
    assert load_scenario(text="", overrides=("workload.rate=30000",))["workload"]["rate"] == 30000


@pytest.mark.parametrize("override,axis", [
    # it said only 'must be a number, got "10000,20000"'
    ("workload.rate=10000,20000", [10000.0, 20000.0]),
    ("server.accept_limit=1,inf", [1, "inf"]),
    ("scenario.seed=1,2", [1, 2]),
])
def test_a_comma_separated_number_shows_the_sweep_axis_list(override, axis):
    import re
    key = override.split("=", 1)[0]
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[override])
    assert ei.value.key == key and "a sweep axis is a list: --set '" in ei.value.reason
    # what it quotes is taken, as an override and in a file
    shown = re.search(r"--set '([^']*)'", ei.value.reason).group(1)
    assert shown == key + "=[" + override.split("=", 1)[1] + "]"
    assert dict(load_scenario(text="", overrides=[shown]).axes)[key] == axis
    in_file = re.search(r"', or (.*) in the file$", ei.value.reason).group(1)
    section = key.split(".")[0]
    assert dict(load_scenario(text=f"[{section}]\n{in_file}\n").axes)[key] == axis
    # values that would not read as a list get no hint
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[f"{key}=a,b"])
    assert "sweep axis" not in ei.value.reason


@pytest.mark.parametrize("key,setting", [("server.service_dist", "server.service_dist=exponential"),
                                         ("workload.idle_conns", "workload.idle_conns=10")])
def test_the_help_of_a_key_only_the_userver_model_reads_says_so_and_the_others_refuse_it(key, setting):
    from simaccept.sim import simulate
    section, name = key.split(".")
    doc = SCHEMA[section][name].doc
    assert "μserver (userver) model only" in doc and "tux or knot point" in doc and "refused" in doc
    for kind in ("tux", "knot"):       # as the help says
        with pytest.raises(ScenarioError) as e:
            simulate(load_scenario(text="", overrides=[f"server.kind={kind}", setting, "scenario.duration=0.1"]))
        assert e.value.key == key


def test_a_comma_separated_value_nested_past_the_recursion_limit_is_refused_not_a_traceback():
    deep = "[" * 5000 + "1,2"
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[f'workload.rate="{deep}"'])
    assert ei.value.key == "workload.rate" and "sweep axis" not in ei.value.reason
    with pytest.raises(ScenarioError):
        load_scenario(text=f'[workload]\nrate = "{deep}"\n')


@pytest.mark.parametrize("override", ["workload.rate=1e4,-5", "workload.rate=1e4,inf", "server.accept_limit=1,0"])
def test_a_comma_separated_value_whose_list_the_key_refuses_gets_no_sweep_axis_hint(override):
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[override])
    assert "sweep axis" not in ei.value.reason


def test_the_overrides_shown_for_a_dict_with_inf_in_a_list_are_taken():
    with pytest.raises(TypeError) as e:
        load_scenario(text="", overrides={"server.accept_limit": [1, math.inf], "scenario.seed": 3})
    shown = eval(str(e.value).split("give ", 1)[1])
    assert shown == ["server.accept_limit=[1, inf]", "scenario.seed=3"]
    sc = load_scenario(text="", overrides=shown)
    assert dict(sc.axes)["server.accept_limit"] == [1, "inf"] and sc["scenario"]["seed"] == 3


def test_a_dict_of_override_strings_without_values_is_taken_as_before():
    # iterating a dict gives its keys, and these were always taken as the overrides
    sc = load_scenario(text="", overrides=dict.fromkeys(["workload.rate=100"]))
    assert sc["workload"]["rate"] == 100


def test_a_missing_profile_file_in_a_folder_is_not_sent_to_the_packaged_one(tmp_path):
    from simaccept.costs import read_profile
    mine = tmp_path / "fits" / "thesis-2004.toml"     # the user's own fit, not there: other costs than ours
    with pytest.raises(KeyError) as ki:
        read_profile(str(mine))
    assert "packaged" not in ki.value.args[0] and str(mine) in ki.value.args[0]
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text="", overrides=[f'costs.profile="{mine}"'])
    assert "packaged" not in ei.value.reason


DEEP = "[" * 5000 + "]" * 5000


@pytest.mark.parametrize("text,overrides,key", [
    (f"[workload]\nrate = {DEEP}\n", [], "<file>"),
    ("[workload]\nrate = {a={a={a=1}}}\n".replace("{a=1}", "{a=" * 3000 + "1" + "}" * 3000), [], "<file>"),
    ("[workload]\nrate = 1000\n", [f"workload.rate={DEEP}"], "workload.rate"),
])
def test_a_value_nested_past_the_recursion_limit_is_a_scenario_error(text, overrides, key):
    # tomllib recurses per level: load_scenario raised RecursionError
    with pytest.raises(ScenarioError, match="nested too deeply to read") as ei:
        load_scenario(text=text, overrides=overrides)
    assert ei.value.key == key


@pytest.mark.parametrize("value", [(1 << 22) + 1, 10 ** 400, 10 ** 5000], ids=["2^22+1", "1e400", "1e5000"])
def test_an_accept_limit_past_any_queue_is_refused_naming_the_key(value):
    # it was taken whole into the record (4,001 digits), and 10**5000 failed simulate() outside its record
    import simaccept
    from simaccept.scenario import scenario_from_dict
    with pytest.raises(ScenarioError, match='must be <= 4,194,304') as ei:
        scenario_from_dict({"server": {"accept_limit": value}})
    assert ei.value.key == "server.accept_limit"
    sc = load_scenario(text="[workload]\nrate = 1000\n")
    sc["server"]["accept_limit"] = value
    with pytest.raises(ScenarioError, match="must be <= 4,194,304"):
        simaccept.simulate(sc)
    assert load_scenario(text="[workload]\nrate = 1000\n", overrides=[f"server.accept_limit={1 << 22}"])


@pytest.mark.parametrize("text,says", [
    ("# a\u2028b\n[scenario]\nduration = 1.0\nwarmup = 0.5\nduration = 2.0\n", "'scenario.duration': set twice"),
    ("# a\u2028b\u2029c\n[scenario]\nduration = 1.0\nwarmup = = 2\n", "(at line 4, column 10): 'warmup = = 2'"),
])
def test_a_toml_error_names_the_line_tomllib_means(text, says):
    # splitlines() also broke lines at U+2028 and \f: the error named warmup as set twice, or
    # quoted the line above the bad one
    with pytest.raises(ScenarioError) as ei:
        load_scenario(text=text)
    assert says in str(ei.value), str(ei.value)


def test_a_run_too_large_says_its_size_in_a_few_digits():
    # "offers 20,000,000,000,000,001,050,095,205,..." -- 300 digits
    with pytest.raises(ScenarioError, match=r"offers 1\.2e\+301 requests") as ei:     # 12 s: warm-up + duration
        load_scenario(text="[workload]\nrate = 1e300\n")
    assert len(str(ei.value)) < 250


def test_every_shipped_scenario_is_collected_from_any_directory():
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                        "simaccept/test_scenario.py", "-k", "every_shipped_scenario_loads"],
                       cwd=_REPO / "tests", capture_output=True, text=True)
    n = len(list((_REPO / "scenarios").rglob("*.toml")))
    assert n and f"{n}/" in p.stdout and "empty parameter set" not in p.stdout + p.stderr, p.stdout[-800:]


def test_setting_an_attribute_a_scenario_does_not_have_is_refused():
    # sc.duration = 0.3 made an attribute nothing read: the run used the file's duration
    sc = load_scenario("scenarios/thesis/userver-onepacket.toml")
    with pytest.raises(AttributeError, match=r"no attribute 'duration' to set: .*sc\[\"scenario\"\]\[\"duration\"\]"):
        sc.duration = 0.3
    sc.source = "mine"                                      # its own fields still can be
    assert sc.source == "mine"


def test_a_toml_error_in_a_file_names_the_file(tmp_path):
    # from a file the user did not know was read, "scenario file: not valid TOML" named nothing
    bad = tmp_path / "bad.toml"
    bad.write_text("[scenario\nduration = 1\n")
    with pytest.raises(ScenarioError, match=r"'.*bad\.toml' is not valid TOML: .*'\[scenario'"):
        load_scenario(bad)
    twice = tmp_path / "twice.toml"
    twice.write_text("[scenario]\nduration = 1.0\nduration = 2.0\n")
    with pytest.raises(ScenarioError, match=r"set twice in '.*twice\.toml' \(again at line 3\)") as e:
        load_scenario(twice)
    assert e.value.key == "scenario.duration"
    long = tmp_path / "long.toml"
    long.write_text("[workload]\nrate = " + "1" * 5000 + "\n")
    with pytest.raises(ScenarioError, match=r"'.*long\.toml', line 2: ") as e:
        load_scenario(long)
    assert e.value.key == "workload.rate"

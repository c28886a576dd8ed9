"""Scenarios that come with simaccept, loaded by name (simaccept.bundled).

The installed-wheel case (no checkout at all) is tests/test_packaging.py's; these run on the
checkout, where the bundled folder is the top-level scenarios/.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from simaccept import ScenarioError, bundled, cli, load_scenario

REPO = Path(__file__).resolve().parents[2]
SHIPPED = sorted(p.relative_to(REPO / "scenarios").with_suffix("").as_posix()
                 for p in (REPO / "scenarios").rglob("*.toml"))


def test_the_bundled_folder_of_a_checkout_is_its_scenarios():
    assert bundled.scenario_dir() == REPO / "scenarios"
    assert bundled.names() == SHIPPED and "thesis/userver-onepacket" in SHIPPED


@pytest.mark.parametrize("name,file", [
    ("thesis/userver-onepacket", "thesis/userver-onepacket.toml"),
    ("thesis/userver-onepacket.toml", "thesis/userver-onepacket.toml"),
    ("userver-onepacket", "thesis/userver-onepacket.toml"),           # unique file name
    ("smoke.toml", "realsys/smoke.toml"),
    ("scenarios/thesis/tux-specweb.toml", "thesis/tux-specweb.toml"),  # a README path, from elsewhere
    ("./scenarios/realsys/smoke.toml", "realsys/smoke.toml"),
    (Path("thesis/knot-specweb"), "thesis/knot-specweb.toml"),
])
def test_a_name_finds_its_file(name, file):
    assert bundled.find(name) == REPO / "scenarios" / file


@pytest.mark.parametrize("name", [
    "", "thesis", "thesis/", "nosuch", "thesis/nosuch", "../scenarios/thesis/userver-onepacket",
    "thesis/../thesis/userver-onepacket", "/thesis/userver-onepacket", "*", "u*-onepacket", "[a-z]*",
    "realsys/userver-onepacket",        # the file name exists, but in another folder
])
def test_what_names_no_bundled_file_finds_none(name):
    assert bundled.find(name) is None


def test_load_scenario_takes_a_name_when_no_file_is_there(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    by_name = load_scenario("thesis/userver-onepacket", overrides=["workload.rate=5000"])
    by_path = load_scenario(REPO / "scenarios/thesis/userver-onepacket.toml", overrides=["workload.rate=5000"])
    assert by_name.to_json() == by_path.to_json()
    assert by_name.content_hash() == by_path.content_hash()


def test_a_file_of_the_users_wins_over_a_bundled_name(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis/userver-onepacket.toml").write_text('[scenario]\nname = "mine"\n')
    assert load_scenario("thesis/userver-onepacket.toml").name == "mine"
    # the exact path only: no .toml is added to a path of the user's
    assert load_scenario("thesis/userver-onepacket").name == "thesis/userver-onepacket"


def test_a_name_that_is_nothing_is_refused_with_the_close_names(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as e:
        load_scenario("thesis/userver-onepackt")
    msg = str(e.value)
    assert msg.startswith("scenario file: cannot read 'thesis/userver-onepackt': No such file")
    assert "close name" in msg and "thesis/userver-onepacket" in msg and e.value.key == "<file>"
    with pytest.raises(ScenarioError, match=r"one of the \d+ bundled scenarios \(`simaccept scenarios`"):
        load_scenario("zzzzzzzz/qqqqqq.toml")


def test_a_directory_is_not_taken_for_a_name(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(tmp_path)


def _without_dac_override():
    """For a child process: drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from the capability
    bounding set (prctl PR_CAPBSET_DROP), so that root, after exec, is refused a mode-000
    file as any user is.  Only a permission refusal makes a bundled file unreadable."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):                      # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def test_a_bundled_file_that_cannot_be_read_is_refused_by_name(tmp_path):
    # An install whose permissions went wrong: load_scenario used to read the bundled file it
    # found with no guard and raise a bare PermissionError.  Real files and a real refusal.
    import os
    import subprocess
    import sys
    (tmp_path / "thesis").mkdir()
    locked = tmp_path / "thesis" / "locked.toml"
    locked.write_text('[scenario]\nname = "locked"\n')
    locked.chmod(0)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from simaccept import ScenarioError, bundled, load_scenario\n"
        f"bundled.scenario_dir = lambda: Path({str(tmp_path)!r})\n"
        "try:\n"
        "    load_scenario('thesis/locked')\n"
        "except ScenarioError as e:\n"
        "    print(e.key, '|', e)\n"
        "    sys.exit(3)\n")
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120,
                       preexec_fn=_without_dac_override if os.geteuid() == 0 else None)
    assert p.returncode == 3, p.stderr
    assert p.stdout.startswith("<file> | scenario file: cannot read the bundled scenario "), p.stdout
    assert str(locked) in p.stdout and "Permission denied" in p.stdout


def test_cli_lists_the_scenarios_and_runs_one_by_name(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["scenarios"]) == 0
    out, err = capsys.readouterr()
    rows = out.splitlines()
    assert [r.split()[0] for r in rows] == SHIPPED
    assert "Thesis figures 4.17-4.19, table 4.10: tux, one-packet workload." in \
        next(r for r in rows if r.startswith("thesis/tux-onepacket "))
    assert f"({len(SHIPPED)} files under {REPO / 'scenarios'})" in err
    assert cli.main(["run", "tux-onepacket", "--set", "server.accept_limit=1", "--set", "workload.rate=5000",
                     "--set", "scenario.warmup=0.2", "--set", "scenario.duration=0.3"]) == 0
    assert capsys.readouterr().out.startswith("thesis/tux-onepacket: ")


def test_cli_lists_each_scenario_with_a_whole_sentence(capsys):
    # the first comment line was printed, cut mid-sentence: "Does the real stack accept
    # connections it never answers (thesis table 4.8: 14-17 % of"
    assert cli.main(["scenarios"]) == 0
    rows = dict(r.split(None, 1) for r in capsys.readouterr().out.splitlines())
    assert rows["realsys/dead-accepts"] == "Does the real stack accept connections it never answers?"
    assert rows["realsys/dead-accepts-httperf"] == "dead-accepts.toml with httperf 0.9.0 itself as the client."
    for name, text in rows.items():
        assert len(text) <= cli.DESCRIBE_MAX and text.endswith((".", "?", "...")), (name, text)
        if text.endswith("..."):        # cut after a word, outside any parenthesis
            assert text[-4] not in " ,;:(" and text.count("(") == text.count(")"), (name, text)


def test_describe_cuts_a_long_sentence_after_a_word():
    text = "# " + " ".join(["word"] * 40) + " (a note\n# that goes on).  Second sentence.\nx = 1\n"
    assert cli.describe(text, limit=30) == "word word word word word..."
    assert cli.describe("# Short (ch. 4.2.1): one.  Two.\n", limit=30) == "Short (ch. 4.2.1): one."
    assert cli.describe("# " + "x " * 20 + "(a long parenthesis here).\n", limit=45) == "x " * 19 + "x."


def _rc(argv):
    try:
        return cli.main(argv)
    except SystemExit as e:         # argparse's refusal
        return e.code


def test_cli_lists_the_scenarios_whose_name_contains_a_filter(capsys):
    assert _rc(["scenarios", "thesis"]) == 0
    out, err = capsys.readouterr()
    assert [r.split()[0] for r in out.splitlines()] == [n for n in SHIPPED if "thesis" in n]
    assert f"({len([n for n in SHIPPED if 'thesis' in n])} of {len(SHIPPED)} files under" in err
    assert _rc(["scenarios", "OnePacket"]) == 0       # any case
    assert {r.split()[0] for r in capsys.readouterr().out.splitlines()} == {n for n in SHIPPED if "onepacket" in n}
    assert _rc(["scenarios", "nosuch"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: no bundled scenario's name contains 'nosuch' "
                                        f"(`simaccept scenarios` lists all {len(SHIPPED)}; "), err

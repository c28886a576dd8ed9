"""Where realsys reads and writes when it runs installed, not from a checkout: the committed
results by their repository path, a run's default folder under the working directory, and the
C programs built under the user's cache (both were inside site-packages)."""
from pathlib import Path

import pytest

import realsys
from realsys import runner

ROOT = Path(__file__).resolve().parents[2]


def test_committed_results_are_found_by_their_repository_path_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    got = realsys.results_path("realsys/results/onepacket-select")
    assert got == ROOT / "realsys" / "results" / "onepacket-select" and (got / "results.csv").is_file()
    assert realsys.results_path("./realsys/results") == ROOT / "realsys" / "results"
    for p in ("realsys/results/no-such-folder", "realsys/results/../../setup.cfg", "elsewhere/x"):
        assert realsys.results_path(p) == Path(p)
    (tmp_path / "realsys" / "results" / "onepacket-select").mkdir(parents=True)
    assert realsys.results_path("realsys/results/onepacket-select") == Path("realsys/results/onepacket-select")


def test_realsys_compare_reads_them_from_anywhere(tmp_path, monkeypatch):
    from realsys.compare import compare
    monkeypatch.chdir(tmp_path)
    out = compare("realsys/results/onepacket-select-reps", "realsys/results/onepacket-select-reps")
    assert out["folders"] == ["onepacket-select-reps"] and len(out["pairs"]) == 36
    assert all(p["ratio"] == 1.0 for p in out["pairs"]), out["pairs"][:2]


def test_a_run_without_out_writes_under_the_working_directory_when_not_in_a_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    # a source tree by its layout, git or not (a tarball; a checkout git refuses to read as root)
    assert runner.default_results_dir("x") == ROOT / "realsys" / "results" / "x"
    installed = tmp_path / "site-packages"
    installed.mkdir()
    monkeypatch.setattr(runner, "REPO", installed)
    assert runner.default_results_dir("x") == tmp_path / "realsys" / "results" / "x"
    assert runner.git_rev() == "unknown"
    tree = tmp_path / "tarball"
    (tree / "docs").mkdir(parents=True)
    (tree / "setup.cfg").write_text("")
    monkeypatch.setattr(runner, "REPO", tree)
    assert runner.default_results_dir("x") == tree / "realsys" / "results" / "x"
    assert runner.git_rev() == "unknown"


def test_report_does_not_read_the_packaged_results_it_could_not_report_whole(tmp_path, monkeypatch):
    # the package carries results.csv, not points/*.json: a report of the packaged copy left out
    # the generator's lag and the drop split, rc 0
    from realsys.report import _main
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        _main(["realsys/results/onepacket-select"])
    assert e.value.code == 2


def _packaged_c_sources() -> set[str]:
    """The realsys/c files a wheel carries, by setup.cfg's own patterns (not realsys's copy rule)."""
    import configparser
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    pats = [p.strip() for p in cfg["options.package_data"]["realsys.c"].split(",")]
    return {f.name for p in pats for f in realsys.C_DIR.glob(p) if f.is_file()}


def test_installed_the_c_programs_are_built_in_the_users_cache_not_in_site_packages(tmp_path, monkeypatch):
    import os
    import shutil
    site = tmp_path / "site-packages"
    src = site / "realsys" / "c"
    packaged = _packaged_c_sources()
    shutil.copytree(realsys.C_DIR, src, ignore=lambda d, names: [n for n in names if n not in packaged])
    cache = tmp_path / "cache"
    monkeypatch.setenv("SIMACCEPT_BUILD_DIR", str(cache))
    assert realsys.bin_dir(src, ROOT) == src          # a source tree builds in place, as before
    where = realsys.bin_dir(src, site)
    assert where.parent == cache and where.name.startswith("realsys-c-")
    assert {f.name for f in where.iterdir()} == packaged
    assert list(cache.iterdir()) == [where]           # no temporary copy left beside it
    # the build writes nothing into the package's folder (a system install's is read-only)
    before = sorted(src.iterdir())
    said = []
    runner.ensure_built(said.append, where)
    assert said == [f"realsys: building C sources in {where}"]
    assert all(os.access(where / b, os.X_OK) for b in runner.RUN_BINARIES)
    assert sorted(src.iterdir()) == before
    runner.ensure_built(said.append, where)           # built: make says so, nothing is said
    assert len(said) == 1
    assert realsys.bin_dir(src, site) == where        # the same sources: the same folder, built
    # other sources (an upgraded package) build in a folder of their own
    (src / "common.h").write_text((src / "common.h").read_text() + "\n/* changed */\n")
    other = realsys.bin_dir(src, site)
    assert other != where and other.parent == cache and not any((other / b).exists() for b in runner.RUN_BINARIES)


def test_installed_every_program_a_run_starts_comes_from_the_build_folder(tmp_path, monkeypatch):
    # the test above calls ensure_built with the folder: this one asks the command lines
    from realsys.loadgen import loadgen_argv
    from realsys.servers import server_argv
    from simaccept.scenario import load_scenario
    monkeypatch.setattr(realsys, "in_source_tree", lambda root=None: False)
    monkeypatch.setenv("SIMACCEPT_BUILD_DIR", str(tmp_path / "cache"))
    where = realsys.bin_dir()
    assert where.parent == tmp_path / "cache"
    for kind in ("userver", "knot"):
        sc = load_scenario(text=f'[server]\nkind = "{kind}"\n' + ("threads = 4\n" if kind == "knot" else "")
                           + '[workload]\nkind = "one-packet"\nrate = 100.0\n')
        argv = server_argv(kind, sc.points()[0].values, Path("/d"), Path("/s.json"), Path("/w"))
        assert argv[0] == str(where / kind), argv[:2]
    argv = loadgen_argv(server_ip="127.0.0.1", port=1, binds=[], conn_rate=1, duration=1, warmup=0, timeout=1,
                        arrivals="deterministic", seed=1, workload="one-packet", out=tmp_path / "x")
    assert argv[0] == str(where / "loadgen")


def test_a_build_folder_that_cannot_be_made_or_trusted_is_refused_by_name(tmp_path, monkeypatch):
    import os
    monkeypatch.setattr(realsys, "in_source_tree", lambda root=None: False)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("SIMACCEPT_BUILD_DIR", str(blocker / "under"))
    with pytest.raises(realsys.BuildDirError, match="cannot make the C programs' build folder .*SIMACCEPT_BUILD_DIR"):
        realsys.bin_dir()
    monkeypatch.setenv("SIMACCEPT_BUILD_DIR", str(tmp_path / "cache"))
    where = realsys.bin_dir()
    where.chmod(0o777)                                # others could replace what runs as root
    with pytest.raises(realsys.BuildDirError, match="not yours or others can write it"):
        realsys.bin_dir()
    where.chmod(0o700)
    assert realsys.bin_dir() == where
    if os.geteuid() == 0:                             # another user's folder: only root can give one away
        os.chown(where, 65534, -1)
        with pytest.raises(realsys.BuildDirError, match="not yours"):
            realsys.bin_dir()
    # where the folder goes: SIMACCEPT_BUILD_DIR first, then an absolute XDG_CACHE_HOME, then ~/.cache
    monkeypatch.delenv("SIMACCEPT_BUILD_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert realsys.build_base() == tmp_path / "xdg" / "simaccept"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert realsys.build_base() == tmp_path / "home" / ".cache" / "simaccept"

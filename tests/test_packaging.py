"""Installing the project: setup.cfg's package list, and constraints.txt's pins.

setup.cfg lists its packages instead of finding them, so that realsys/c and
validation/data (package data, no __init__.py) are packages without setuptools' "would be
ignored" warning at every install; a new subpackage must then be added by hand, which
this checks.  `make` installs with ``-c constraints.txt`` so that a fresh clone simulates
with the NumPy, SciPy and SimPy the committed validation report was made with.  A dependency added to
setup.cfg without a pin would be installed at whatever version the index has that day.
"""
from __future__ import annotations

import configparser
import os
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def _pins(text: str) -> dict[str, Version]:
    pins = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==", f"constraints.txt:{n}: {line!r} is not name==version"
        name = canonicalize_name(req.name)
        assert name not in pins, f"constraints.txt:{n}: {req.name} pinned twice"
        pins[name] = Version(spec[0].version)
    return pins


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def _lines(value: str) -> list[str]:
    """A setup.cfg list value (one item per line) as its items."""
    return [ln.strip() for ln in value.split("\n") if ln.strip()]


def _declared() -> list[tuple[str, Requirement]]:
    cfg = _setup_cfg()
    out = [("install_requires", Requirement(r)) for r in _lines(cfg["options"]["install_requires"])]
    for extra, reqs in cfg["options.extras_require"].items():
        out += [(f"extra {extra}", Requirement(r)) for r in _lines(reqs)]
    docs = (ROOT / "docs" / "requirements.txt").read_text().splitlines()
    out += [("docs/requirements.txt", Requirement(r)) for r in docs if r.strip() and not r.startswith("#")]
    return out


def test_every_declared_requirement_is_pinned_within_its_range():
    pins = _pins((ROOT / "constraints.txt").read_text())
    declared = _declared()
    assert len(declared) >= 10      # the parse found setup.cfg's sections
    for where, req in declared:
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} ({where}) is not pinned in constraints.txt"
        assert req.specifier.contains(pins[name], prereleases=True), \
            f"{req.name} ({where}) asks {req.specifier}, constraints.txt pins {pins[name]}"


def test_pin_parser_refuses_ranges_and_duplicates():
    assert _pins("# c\nnumpy==2.4.6  # why\n\nSciPy==1.17.1\n") == {"numpy": Version("2.4.6"), "scipy": Version("1.17.1")}
    for bad in ("numpy>=2", "numpy==2.4.6\nNumPy==2.4.7", "numpy"):
        try:
            _pins(bad)
        except AssertionError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def test_make_installs_with_the_constraints():
    make = (ROOT / "Makefile").read_text()
    installs = [ln for ln in make.splitlines() if "pip install" in ln and "--upgrade pip" not in ln]
    assert len(installs) >= 3
    for ln in installs:
        assert "-c constraints.txt" in ln, ln
    assert "constraints.txt" in next(ln for ln in make.splitlines() if ln.startswith("$(STAMP):"))


def _package_dir(pkg: str) -> Path:
    """Where setup.cfg takes package ``pkg`` from: its ``package_dir`` mapping, else the dotted path."""
    cfg = _setup_cfg()
    mapping = dict(ln.split("=", 1) for ln in _lines(cfg["options"].get("package_dir", "")))
    mapping = {k.strip(): v.strip() for k, v in mapping.items()}
    parts = pkg.split(".")
    for n in range(len(parts), 0, -1):
        head = ".".join(parts[:n])
        if head in mapping:
            return ROOT / mapping[head] / "/".join(parts[n:])
    return ROOT / "/".join(parts)


def test_every_package_directory_is_listed_and_every_listed_one_exists():
    cfg = _setup_cfg()
    listed = set(_lines(cfg["options"]["packages"]))
    on_disk = {d.relative_to(ROOT).as_posix().replace("/", ".")
               for top in ("simaccept", "realsys", "validation")
               for d in [ROOT / top, *(ROOT / top).rglob("*")]
               if d.is_dir() and (d / "__init__.py").is_file()}
    assert on_disk - listed == set(), f"subpackages missing from setup.cfg's packages: {sorted(on_disk - listed)}"
    for pkg in listed:
        assert _package_dir(pkg).is_dir(), f"setup.cfg lists {pkg}, which is not a directory"
    # every folder of bundled scenarios ships (simaccept.bundled finds them by name)
    folders = {d.name for d in (ROOT / "scenarios").iterdir() if d.is_dir() and list(d.glob("*.toml"))}
    assert folders and {f"simaccept.scenarios.{f}" for f in folders} <= listed, \
        f"scenarios/ folders missing from setup.cfg's packages: {sorted(folders)}"


def test_every_package_data_pattern_names_a_listed_package_and_matches_files():
    cfg = _setup_cfg()
    listed = set(_lines(cfg["options"]["packages"]))
    for pkg, patterns in cfg["options.package_data"].items():
        assert pkg in listed, f"package_data for {pkg}, which setup.cfg does not list"
        for pat in (x.strip() for x in patterns.split(",")):
            hits = list(_package_dir(pkg).glob(pat))
            assert hits, f"{pkg}: {pat!r} matches no file"
            # A subdirectory with an importable name is a package setuptools wants listed (it warns
            # at every install); realsys/results' run folders (onepacket-select) cannot be one.
            for f in hits:
                for d in f.relative_to(_package_dir(pkg)).parent.parts:
                    assert not d.isidentifier(), \
                        f"{pkg}: {pat!r} reaches into {d}/, which could be a package; list that directory as a package"


_INSTALLED_CHECK = r"""
import json, sys
from pathlib import Path
import simaccept
from simaccept import bundled
from validation.records import load_records, thesis_scenario_file
site = Path(sys.argv[1]).resolve()
out = {"simaccept": simaccept.__file__, "dir": str(bundled.scenario_dir()), "names": bundled.names(),
       "thesis_file": str(thesis_scenario_file("tux", "one-packet")[0]), "thesis_rows": len(load_records("thesis"))}
sc = simaccept.load_scenario("thesis/userver-onepacket", overrides=[
    "server.accept_limit=1", "workload.rate=5000", "scenario.warmup=0.2", "scenario.duration=0.3"])
rec = simaccept.simulate(sc)
out["status"], out["replies"] = rec.status, rec.replies_per_s
try:
    simaccept.load_scenario("thesis/userver-onepackt")
except simaccept.ScenarioError as e:
    out["refused"] = str(e)
from validation.records import records_path
out["realsys_path"] = str(records_path("realsys/results/onepacket-select/results.csv"))
out["realsys_rows"] = len(load_records("./realsys/results/onepacket-select/results.csv"))
import importlib, os
from validation import records, report
out["checkout"], out["work"] = records.CHECKOUT, str(records.WORK)
mods = {m: importlib.import_module(f"validation.{m}") for m in ("drops", "seeds", "sensitivity", "trace", "window")}
os.chdir(sys.argv[2])       # after the import: the defaults follow the working directory of their use
out["defaults"] = [str(Path(d).resolve()) for d in [
    report.DEFAULT_OUT, report.PARTIAL_OUT, report.DEFAULT_CACHE, mods["sensitivity"].DEFAULT_OUT,
    importlib.import_module("validation.thesis_fit").FIT_CACHE] + [m.DEFAULT_CACHE for m in mods.values()]]
print(json.dumps(out))
"""


def test_an_installed_wheel_loads_its_bundled_scenarios_by_name(tmp_path):
    """Built and installed as a user gets it (a wheel, no checkout): the thesis scenarios are in
    the package, by name, and the validation package finds them (`simaccept figures`, `predict`)."""
    import json
    import shutil
    import subprocess
    import sys
    src = tmp_path / "src"        # build a copy: an in-tree build leaves build/lib behind
    src.mkdir()
    for f in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / f, src / f)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", "build", "*.o", "*.egg-info")
    for d in ("simaccept", "scenarios", "realsys", "validation"):
        shutil.copytree(ROOT / d, src / d, ignore=junk)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(src)], check=True, capture_output=True, text=True)
    wheel = next((tmp_path / "dist").glob("simaccept-*.whl"))
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, text=True)
    run = tmp_path / "elsewhere"      # not the checkout: only the installed copy can be found
    later = run / "later"
    later.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(site)}
    p = subprocess.run([sys.executable, "-c", _INSTALLED_CHECK, str(site), str(later)], cwd=run, env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert Path(got["simaccept"]).is_relative_to(site), got["simaccept"]
    assert Path(got["dir"]) == site / "simaccept" / "scenarios"
    shipped = sorted(q.relative_to(ROOT / "scenarios").with_suffix("").as_posix()
                     for q in (ROOT / "scenarios").rglob("*.toml"))
    assert got["names"] == shipped
    assert Path(got["thesis_file"]) == site / "simaccept" / "scenarios" / "thesis" / "tux-onepacket.toml"
    assert got["status"] == "ok" and got["replies"] > 0
    from validation.records import load_records
    assert got["thesis_rows"] == len(load_records(ROOT / "validation/data/thesis.csv"))
    assert "thesis/userver-onepacket" in got["refused"]           # the close name is offered
    lines = subprocess.run([sys.executable, "-m", "simaccept", "scenarios"], cwd=run, env=env,
                           capture_output=True, text=True, check=True).stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == shipped
    # The README's fit/predict examples name the measured runs by their checkout path: the
    # package carries them (realsys/results/*/results.csv), found from anywhere.
    assert Path(got["realsys_path"]) == site / "realsys/results/onepacket-select/results.csv"
    assert got["realsys_rows"] == len(load_records(ROOT / "realsys/results/onepacket-select/results.csv"))
    shipped_runs = sorted(q.relative_to(ROOT).as_posix() for q in (ROOT / "realsys/results").rglob("results.csv"))
    assert sorted(q.relative_to(site).as_posix() for q in (site / "realsys/results").rglob("results.csv")) == shipped_runs
    p = subprocess.run([sys.executable, "-m", "simaccept", "predict", "--records",
                        "realsys/results/onepacket-select/results.csv", "--profile", "realsys-linux6",
                        "--select", "accept_limit=10", "--select", "target_rate=4000"],
                       cwd=run, env=env, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "userver/one-packet/select/accept-10@4000" in p.stdout, p.stderr
    # The analyses' default outputs and caches: under the working directory, never in
    # site-packages (`python -m validation report --quick` used to write to site/out/).
    assert got["checkout"] is False and got["work"] == "."
    assert got["defaults"][0] == str(later / "out" / "validation")
    assert all(Path(d).is_relative_to(later / "out") for d in got["defaults"]), got["defaults"]
    # thesis-fit would rewrite the installed thesis-2004 profile: refused, pointing to `simaccept fit`
    p = subprocess.run([sys.executable, "-m", "validation", "thesis-fit"], cwd=run, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "source checkout" in p.stderr and "simaccept fit --records thesis" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "validation", "machine-fit"], cwd=run, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "source checkout" in p.stderr and "--results DIR --profile NAME" in p.stderr, p.stderr
    # another machine's profile goes beside its runs (DIR/NAME.toml), not into site-packages, and
    # machine-check finds it there by name; a shipped profile's name would shadow it, so it is refused
    mybox = run / "mybox"
    mybox.mkdir()
    p = subprocess.run([sys.executable, "-m", "validation", "machine-fit", "--results", "mybox", "--profile",
                        "realsys-linux6-xeon"], cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "shipped with simaccept" in p.stderr, p.stderr
    p = subprocess.run([sys.executable, "-m", "validation", "machine-fit", "--results", "mybox", "--profile",
                        "../x"], cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "it becomes mybox/NAME.toml" in p.stderr, p.stderr
    check = [sys.executable, "-m", "validation", "machine-check", "--results", "mybox", "--profile", "mine",
             "--out", "o"]
    p = subprocess.run(check, cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "mybox/mine.toml" in p.stderr, p.stderr          # named where it looked
    shutil.copy(site / "simaccept/costs/realsys-linux6.toml", mybox / "mine.toml")
    p = subprocess.run(check, cwd=run, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and "none of the held-out results folders" in p.stderr, p.stderr   # past the profile
    assert not any(site.rglob("validation-cache")) and not (site / "out").exists()
    assert sorted(q.name for q in (site / "simaccept/costs").glob("*.toml")) == sorted(
        q.name for q in (ROOT / "simaccept/costs").glob("*.toml"))

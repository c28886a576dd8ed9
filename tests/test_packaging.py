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


def test_every_package_directory_is_listed_and_every_listed_one_exists():
    cfg = _setup_cfg()
    listed = set(_lines(cfg["options"]["packages"]))
    on_disk = {d.relative_to(ROOT).as_posix().replace("/", ".")
               for top in ("simaccept", "realsys", "validation")
               for d in [ROOT / top, *(ROOT / top).rglob("*")]
               if d.is_dir() and (d / "__init__.py").is_file()}
    assert on_disk - listed == set(), f"subpackages missing from setup.cfg's packages: {sorted(on_disk - listed)}"
    for pkg in listed:
        assert (ROOT / pkg.replace(".", "/")).is_dir(), f"setup.cfg lists {pkg}, which is not a directory"


def test_every_package_data_pattern_names_a_listed_package_and_matches_files():
    cfg = _setup_cfg()
    listed = set(_lines(cfg["options"]["packages"]))
    for pkg, patterns in cfg["options.package_data"].items():
        assert pkg in listed, f"package_data for {pkg}, which setup.cfg does not list"
        for pat in (x.strip() for x in patterns.split(",")):
            assert "/" not in pat, f"{pkg}: {pat!r} reaches into a subdirectory; list that directory as a package"
            assert list((ROOT / pkg.replace(".", "/")).glob(pat)), f"{pkg}: {pat!r} matches no file"

"""The scenario files that come with simaccept, reachable by name wherever it is installed.

In a source checkout they are the repository's top-level ``scenarios/``; an installed
package (a wheel, ``pip install simaccept``) carries the same files as
``simaccept/scenarios/`` (setup.cfg maps that package to the top-level folder), because a
researcher who imports simaccept as a library has no checkout to point a path at.

A bundled scenario is named by its path under that folder without ``.toml``
(``thesis/userver-onepacket``), by its file name alone when no other bundled file has it
(``userver-onepacket``), or by the path a checkout's README gives
(``scenarios/thesis/userver-onepacket.toml``).  :func:`simaccept.load_scenario` falls back
to these names only when no file exists at the path it was given, so a file of the user's
always wins.

Not model code (:data:`simaccept.fingerprint.NOT_MODEL`): which file a name finds cannot
change what a scenario simulates, and the scenario's content is in its own hash.
"""
from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent


def scenario_dir() -> Path:
    """The folder of bundled scenarios: ``simaccept/scenarios`` in an installed package, the
    checkout's ``scenarios/`` otherwise.  Never raises (it is read at import time): an install
    that left the scenario files out gets the package's path, where no name is then found."""
    for d in (_HERE / "scenarios", _HERE.parent / "scenarios"):
        if (d / "thesis").is_dir():
            return d
    return _HERE / "scenarios"


def names() -> list[str]:
    """Every bundled scenario's name (``folder/stem``), sorted; empty if none were installed."""
    d = scenario_dir()
    return sorted(p.relative_to(d).with_suffix("").as_posix() for p in d.rglob("*.toml"))


def _stem(name: str | Path) -> str:
    """``name`` as a bundled name: no ``./``, ``scenarios/`` or ``.toml``."""
    s = Path(name).as_posix()
    s = s[2:] if s.startswith("./") else s
    s = s[len("scenarios/"):] if s.startswith("scenarios/") else s
    return s[:-len(".toml")] if s.endswith(".toml") else s


def find(name: str | Path) -> Path | None:
    """The bundled file ``name`` stands for, or None if it names none (or more than one);
    raises :class:`~simaccept.scenario.ScenarioError` if it names one that cannot be read.

    ``name``: ``thesis/userver-onepacket``, ``userver-onepacket`` (if unique), either with
    ``.toml``, or ``scenarios/thesis/userver-onepacket.toml``."""
    d = scenario_dir()
    s = _stem(name)
    if not s or s.startswith("/") or ".." in s.split("/") or any(c in s for c in "*?["):
        return None
    p = d / f"{s}.toml"
    if not p.is_file():
        if "/" in s:
            return None
        hits = [q for q in d.rglob(f"{s}.toml") if q.is_file()]
        if len(hits) != 1:
            return None
        p = hits[0]
    _check_readable(p)
    return p


def _check_readable(p: Path) -> None:
    """Refuse, as load_scenario refuses a user's file, a bundled file that cannot be opened
    (an install whose permissions went wrong): its caller would otherwise read it and raise a
    bare OSError.  Checked here, not in load_scenario, which is model code (its fingerprint
    would move for a path no simulation takes)."""
    try:
        with p.open("rb"):
            pass
    except OSError as e:
        from .scenario import ScenarioError
        raise ScenarioError("<file>", f"cannot read the bundled scenario {str(p)!r}: {e.strerror or e}") from None


def suggest(name: str | Path) -> str:
    """A hint for a scenario path that is neither a file nor a bundled name: the bundled names
    closest to it, else where to find the list."""
    import difflib
    every = names()
    if not every:
        return f"no bundled scenario either: this simaccept was installed without them ({scenario_dir()})"
    stem = _stem(name)
    close = difflib.get_close_matches(stem, every, n=3, cutoff=0.5) \
        or difflib.get_close_matches(Path(stem).name, [Path(n).name for n in every], n=3, cutoff=0.6)
    if close:
        full = [n for n in every if n in close or Path(n).name in close]
        return "bundled scenarios with a close name: " + ", ".join(full)
    return f"nor is it one of the {len(every)} bundled scenarios (`simaccept scenarios` lists them)"

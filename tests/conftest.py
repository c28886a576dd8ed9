"""Shared test configuration.

Under ``make test`` (SIMACCEPT_STRICT_SKIPS=1, the README's test command and so CI's) and
wherever CI=true, a skip that would hide a missing feature is a failure: a skipped realsys
test (the test bed must run there), and a test or module skipped because a package is missing
(``pytest.importorskip``: pyarrow, dask, matplotlib are installed by ``make venv``).  A test
skipped for another reason (a git history too shallow to check) stays a skip.
"""
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def strict_skips() -> bool:
    """Whether a skip that hides a missing feature fails (see the module's docstring)."""
    return os.environ.get("CI") == "true" or os.environ.get("SIMACCEPT_STRICT_SKIPS") == "1"


def _skip_reason(rep) -> str:
    longrepr = rep.longrepr
    return longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)


def _missing_package(rep) -> bool:
    # pytest.importorskip's reason: "could not import 'dask.distributed': No module named ..."
    return _skip_reason(rep).startswith(("could not import", "Skipped: could not import"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if not (strict_skips() and rep.skipped):
        return
    if "tests/realsys" in str(item.fspath).replace(os.sep, "/"):
        rep.outcome = "failed"
        rep.longrepr = f"realsys test skipped under make test or CI (skips are failures there): {rep.longrepr}"
    elif _missing_package(rep):
        rep.outcome = "failed"
        rep.longrepr = f"a package make venv installs is missing (skips are failures under make test): {rep.longrepr}"


#: Modules skipped whole for a missing package (a module-level importorskip) under strict skips.
#: Failed at the session's end, not at collection: a collection error stops the whole run.
_SKIPPED_MODULES: list[str] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    outcome = yield
    rep = outcome.get_result()
    if strict_skips() and rep.skipped and _missing_package(rep):
        _SKIPPED_MODULES.append(f"{rep.nodeid}: {_skip_reason(rep)}")


def pytest_terminal_summary(terminalreporter):
    for line in _SKIPPED_MODULES:
        terminalreporter.write_line(f"FAILED (module skipped, a package make venv installs is missing) {line}")


def pytest_sessionfinish(session, exitstatus):
    if _SKIPPED_MODULES and exitstatus == 0:
        session.exitstatus = 1


# CI explores a fixed set of examples (derandomized) so a landing never depends
# on luck; locally hypothesis keeps searching new ones every run.
try:
    from hypothesis import settings as _hsettings

    _hsettings.register_profile("ci", derandomize=True, print_blob=True)
    if os.environ.get("CI") == "true":
        _hsettings.load_profile("ci")
except ImportError:  # pragma: no cover
    pass


@pytest.fixture
def register_policy(tmp_path):
    """register_policy(source, modname): import ``source`` from a file as module ``modname``, as a
    user's policy module is (inspect.getsource finds a class through its file), so the caches'
    policy keys can read it; the module is dropped again afterwards."""
    import importlib.util
    names = []

    def register(source: str, modname: str):
        f = tmp_path / f"{modname}.py"
        f.write_text(source)
        spec = importlib.util.spec_from_file_location(modname, f)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[modname] = mod
        names.append(modname)
        spec.loader.exec_module(mod)
        return mod
    yield register
    for n in names:
        sys.modules.pop(n, None)


@pytest.fixture
def policy_source():
    """policy_source(name, quota, register=True): the source of a user's accept policy module whose
    quota() returns the expression ``quota``, registered as ``name`` unless ``register`` is false
    (a class typed at a prompt registers itself by hand)."""
    def source(name: str, quota: str, register: bool = True) -> str:
        return ("from simaccept.servers.policies import AcceptPolicy, REGISTRY\n\n\n"
                "class UserPolicy(AcceptPolicy):\n"
                f"    name = {name!r}\n\n"
                "    def quota(self, view):\n"
                f"        return {quota}\n"
                + (f"\n\nREGISTRY[{name!r}] = UserPolicy\n" if register else ""))
    return source

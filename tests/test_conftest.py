"""The suite's own rule (tests/conftest.py): under make test a skip that hides a missing feature
fails, and any other skip stays a skip."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FILES = {
    "test_missing.py": "import pytest\n\ndef test_a():\n    pytest.importorskip('no_such_package_simaccept')\n",
    "test_module_missing.py": "import pytest\npytest.importorskip('no_such_package_simaccept')\n\n"
                              "def test_b():\n    pass\n",
    "test_other_reason.py": "import pytest\n\ndef test_c():\n    pytest.skip('a history too shallow')\n",
    "realsys/test_bed.py": "import pytest\n\ndef test_d():\n    pytest.skip('not root')\n",
}


def _run(tmp_path: Path, strict: str | None) -> tuple[subprocess.CompletedProcess, str]:
    tests = tmp_path / "tests"
    for name, text in FILES.items():
        (tests / name).parent.mkdir(parents=True, exist_ok=True)
        (tests / name).write_text(text)
    shutil.copy(ROOT / "tests" / "conftest.py", tests / "conftest.py")
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "SIMACCEPT_STRICT_SKIPS")}
    if strict is not None:
        env["SIMACCEPT_STRICT_SKIPS"] = strict
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", "-p", "no:randomly",
                        str(tests)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    return r, r.stdout + r.stderr


@pytest.mark.parametrize("strict", ["1", None])
def test_a_skip_for_a_missing_package_or_in_realsys_fails_under_make_test_only(tmp_path, strict):
    r, out = _run(tmp_path, strict)
    if strict:
        assert "FAILED tests/test_missing.py::test_a" in out, out
        assert "FAILED (module skipped, a package make venv installs is missing) tests/test_module_missing.py" in out, out
        assert "FAILED tests/realsys/test_bed.py::test_d" in out, out
        assert "SKIPPED [1] tests/test_other_reason.py" in out, out
        assert "2 failed, 2 skipped" in out and r.returncode == 1, out
    else:
        assert "4 skipped in" in out and " failed" not in out and r.returncode == 0, out

"""The Python blocks of the README and the docs run as a reader pastes them.

The console transcripts are replayed by test_transcripts.py; these are the
```python blocks, the first thing a researcher importing simaccept copies.  Each
runs whole, in a fresh interpreter, from a scratch directory laid out as a
checkout (``scenarios/``, ``realsys/``, an empty ``out/``), so a block that
writes (``f.save("out/mybox.toml")``) leaves the repository alone.  Where a page
states what a block gives (the fitting guide's fitted costs and predicted
replies/s, the policies guide's "then ``--set server.policy=...``"), that is
checked too.  The tutorial's parquet block needs a sweep's output first:
tests/simaccept/test_sweep.py runs it after one.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if "_build" not in p.parts]
RUN_ELSEWHERE = {"results.parquet": "tests/simaccept/test_sweep.py"}


def blocks() -> list[tuple[str, int, str]]:
    """(page relative to the root, block number on that page, code) for each ```python block."""
    out = []
    for page in PAGES:
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S)):
            out.append((page.relative_to(ROOT).as_posix(), i, code))
    return out


BLOCKS = blocks()
HERE = [b for b in BLOCKS if not any(k in b[2] for k in RUN_ELSEWHERE)]


def _run(code: str, tmp_path: Path, after: str = "") -> str:
    """Run ``code`` (then ``after``) in a new interpreter from a checkout-like scratch
    directory; return its stdout, failing the test with its stderr if it fails."""
    for d in ("scenarios", "realsys"):
        (tmp_path / d).symlink_to(ROOT / d)
    (tmp_path / "out").mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg")
    p = subprocess.run([sys.executable, "-c", code + "\n" + after], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"the block failed:\n{code}\n{p.stderr}"
    return p.stdout


def test_the_pages_have_python_blocks_to_run():
    # If the pattern stopped matching, every test below would be vacuous.
    pages = {page for page, _, _ in HERE}
    assert {"README.md", "docs/tutorial.md", "docs/guides/fitting.md", "docs/guides/policies.md"} <= pages
    assert len(BLOCKS) - len(HERE) == 1      # the parquet block, run by test_sweep.py


@pytest.mark.parametrize("page,i,code", HERE, ids=[f"{p}#{i}" for p, i, _ in HERE])
def test_block_runs(page, i, code, tmp_path):
    after = ""
    if page == "docs/guides/fitting.md":
        after = ("import json\nr = f.predict(recs[0])\n"
                 "print(json.dumps({'params': f.params_, 'predicted': r.replies_per_s, "
                 "'measured': recs[0].replies_per_s, 'saved': __import__('os').path.getsize('out/mybox.toml')}))")
    elif page == "docs/guides/policies.md":
        # "then --set server.policy=half-the-queue": a scenario that names it loads and runs
        after = ("import simaccept\n"
                 "sc = simaccept.load_scenario('thesis/userver-onepacket', overrides=["
                 "'server.policy=half-the-queue', 'server.accept_limit=inf', 'workload.rate=24000',"
                 "'scenario.warmup=1', 'scenario.duration=2'])\n"
                 "r = simaccept.simulate(sc)\n"
                 "print('POLICY', r.policy, r.replies_per_s, r.c_avg)")
    shown = _run(code, tmp_path, after)
    if page == "docs/guides/fitting.md":
        _check_fitting_comments(code, json.loads(shown.strip().splitlines()[-1]))
    elif page == "docs/guides/policies.md":
        name, replies, c_avg = shown.split("POLICY")[-1].split()
        assert name == "half-the-queue"
        assert float(replies) > 0 and float(c_avg) >= 1
    elif page == "docs/tutorial.md" and ("per_connection_rows" in code or "probe=" in code):
        # the page shows the output beside the block and reads numbers off it
        assert shown.strip() == shown_after(page, code), shown
    elif "print(" in code:
        assert shown.strip(), f"{page}#{i} prints nothing"


def shown_after(page: str, code: str) -> str:
    """The ```text block that follows ``code``'s block on ``page``: the output the page shows."""
    text = (ROOT / page).read_text()
    rest = text[text.index(code) + len(code):]
    m = re.match(r"```\s*```text\n(.*?)```", rest, re.S)
    assert m, f"{page}: no ```text block right after the block"
    return m.group(1).strip()


def _check_fitting_comments(code: str, got: dict) -> None:
    """The numbers the fitting guide's comments give are the ones the block produces."""
    quoted = dict(re.findall(r"'(\w+)': ([0-9.]+)\.\.\.", code))
    assert set(quoted) == set(got["params"]), (quoted, got["params"])
    for name, prefix in quoted.items():
        assert f"{got['params'][name]:.6f}".startswith(prefix), \
            f"the guide says {name} = {prefix}..., the fit gave {got['params'][name]}"
    m = re.search(r"\(([0-9,]+) replies/s; measured ([0-9,]+)\)", code)
    assert m, "the guide no longer quotes the predicted replies/s"
    assert (f"{got['predicted']:,.0f}", f"{got['measured']:,.0f}") == m.groups()
    assert got["saved"] > 0

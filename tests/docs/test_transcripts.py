"""The pages' console transcripts are run and must print what the pages say.

The tutorial and the fitting guide quote simulator output as something a reader
can paste and reproduce (same scenario, same seed, same result).  A model change
that moves a quoted number without the page being updated fails here, instead of
leaving the page quietly wrong.  Replayed: ``simaccept run`` (tutorial), and the
guide's ``fit`` -> ``predict`` -> ``run`` chain, in order, since each uses the
profile the fit wrote.  Output is compared whole, unless the page shows a line
``...`` (output left out: the fit's header names the date and git revision);
then the quoted lines must appear in that order.  Sweeps are covered by the
package's own tests.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "tutorial.md"
FITTING = ROOT / "docs" / "guides" / "fitting.md"
REPLAYED = ("simaccept run ", "simaccept fit ", "simaccept predict ")


def transcripts(text: str) -> list[tuple[str, list[str], int | None]]:
    """Return (command, expected output lines, expected exit status or None) for each
    ``$ simaccept run|fit|predict`` command in the page's console blocks; a following
    ``$ echo $?`` supplies the exit status."""
    out: list[tuple[str, list[str], int | None]] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if not line.startswith("$ "):
                i += 1
                continue
            cmd = line[2:]
            while cmd.endswith("\\"):
                i += 1
                cmd = cmd[:-1] + " " + lines[i].strip()
            i += 1
            expected = []
            while i < len(lines) and not lines[i].startswith("$ "):
                expected.append(lines[i])
                i += 1
            if cmd.strip() == "echo $?" and out:
                prev = out[-1]
                out[-1] = (prev[0], prev[1], int(expected[0]))
            elif cmd.startswith(REPLAYED):
                out.append((re.sub(r"\s+", " ", cmd).strip(), expected, None))
    return out


CASES = transcripts(TUTORIAL.read_text())


def test_the_tutorial_has_transcripts_to_check():
    # The page quotes a refused scenario and one simulated point; if the parser
    # finds neither, this test file would pass while checking nothing.
    assert len(CASES) >= 2
    assert any(status == 2 for _, _, status in CASES)
    assert any(status is None and exp for _, exp, status in CASES)


def _replay(cmd: str, expected: list[str], status: int | None) -> None:
    argv = [sys.executable, "-m", "simaccept"] + shlex.split(cmd)[1:]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)
    printed = (p.stdout + p.stderr).strip().splitlines()
    quoted = [e for e in expected if e.strip()]
    if "..." in quoted:
        want = [e for e in quoted if e != "..."]
        it = iter(printed)
        missing = [e for e in want if not any(line == e for line in it)]
        assert not missing, f"{cmd}: the page quotes {missing[0]!r}, which was not printed (in order): {printed}"
    else:
        assert printed == quoted, f"{cmd}: the page quotes {expected}, the simulator printed {printed}"
    assert p.returncode == (0 if status is None else status), p.stderr


@pytest.mark.parametrize("cmd,expected,status", CASES, ids=[" ".join(a for a in c[0].split() if "=" in a) for c in CASES])
def test_transcript_reproduces(cmd, expected, status):
    _replay(cmd, expected, status)


def test_the_fitting_guide_reproduces():
    # fit -> predict -> run, in the page's order: the later commands read the profile
    # the fit wrote (out/mybox.toml, as the page says; out/ is the project's scratch).
    text = FITTING.read_text()
    cases = transcripts(text)
    assert [c.split()[1] for c, _, _ in cases] == ["fit", "predict", "run"]
    assert "$ mkdir -p out\n$ simaccept fit" in text     # a fresh clone has no out/ (fit --out refuses a missing dir)
    (ROOT / "out").mkdir(exist_ok=True)
    assert all(exp for _, exp, _ in cases)
    for cmd, expected, status in cases:
        _replay(cmd, expected, status)

"""tools/fuzz.sh: a SECONDS libFuzzer would read as no limit is refused; Ctrl-C ends the script
(exit 130) with the corpus as it was."""
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "realsys" / "c" / "fuzz" / "corpus" / "target_path"


def _sigint_default():
    # as at a terminal: a test run started in the background (`cmd &` in a script, as a CI's may be)
    # has SIGINT ignored, and a shell cannot trap a signal ignored on entry (POSIX)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(*args, tmp_path):
    return subprocess.Popen(["sh", "tools/fuzz.sh", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default, env={**os.environ, "TMPDIR": str(tmp_path)})


def finish(p, timeout):
    try:
        return p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.mark.parametrize("secs", ["abc", "0", "-5", "1.5"])
def test_a_bad_seconds_is_refused_before_building(secs, tmp_path):
    # -max_total_time=abc or 0 is no limit to libFuzzer: the script ran until killed
    p = start("target_path", secs, tmp_path=tmp_path)
    try:
        _, err = finish(p, 60)
    except subprocess.TimeoutExpired:
        pytest.fail(f"fuzz.sh target_path {secs} still running after 60 s")
    assert p.returncode == 2 and f"SECONDS must be a whole number > 0, got '{secs}'" in err, err


@pytest.mark.skipif(shutil.which("clang") is None, reason="libFuzzer needs clang (realsys/install-deps.sh)")
def test_ctrl_c_ends_the_script_and_keeps_the_corpus(tmp_path):
    # the INT trap removed the work folder and returned: "sed: can't read .../fuzz.log", exit 1
    # (a crash's exit status)
    before = sorted((f.name, f.read_bytes()) for f in CORPUS.iterdir())
    p = start("target_path", "120", tmp_path=tmp_path)
    deadline = time.monotonic() + 300           # the first run builds the harness
    while not list(tmp_path.glob("fuzz-target_path-*/fuzz.log")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(3)
    os.killpg(p.pid, signal.SIGINT)
    _, err = finish(p, 60)
    assert p.returncode == 130, (p.returncode, err)
    assert "can't read" not in err and "cannot open" not in err, err
    assert sorted((f.name, f.read_bytes()) for f in CORPUS.iterdir()) == before
    assert not list(tmp_path.glob("fuzz-target_path-*"))

"""Replay the checked-in libFuzzer corpora (realsys/c/fuzz/corpus/NAME/) under ASan/UBSan.

The harnesses' LLVMFuzzerTestOneInput is linked with a small main() (fuzz/replay_main.c)
by the ordinary C compiler, so this test does not need clang or libFuzzer.  Each input is
run once; a sanitizer report or a failed contract check (trap) fails the test.
tools/fuzz.sh NAME SECONDS grows the corpora (needs clang)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

C_DIR = Path(__file__).resolve().parents[2] / "realsys" / "c"

HARNESSES = ["http_parse", "target_path"]


@pytest.fixture(scope="module")
def replay_bins():
    p = subprocess.run(["make", "-s", "-C", str(C_DIR), "fuzz-replay"], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    return C_DIR / "fuzz"


@pytest.mark.parametrize("name", HARNESSES)
def test_corpus_is_small(name):
    files = [f for f in (C_DIR / "fuzz" / "corpus" / name).iterdir() if f.is_file()]
    assert 10 <= len(files) <= 200
    assert sum(f.stat().st_size for f in files) <= 200 * 1024


@pytest.mark.parametrize("name", HARNESSES)
def test_replay_corpus_under_sanitizers(replay_bins, name, tmp_path):
    corpus = C_DIR / "fuzz" / "corpus" / name
    n = sum(1 for f in corpus.iterdir() if f.is_file() and not f.name.startswith("."))
    env = dict(os.environ, TMPDIR=str(tmp_path),
               ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:halt_on_error=1",
               UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1")
    p = subprocess.run([str(replay_bins / f"replay_{name}"), str(corpus)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-4000:]
    assert "AddressSanitizer" not in p.stderr and "runtime error" not in p.stderr, p.stderr[-4000:]
    assert f"replayed {n} inputs" in p.stdout


@pytest.mark.parametrize("name,data", [
    ("target_path", b"/../../etc/passwd"), ("target_path", b"/%2e%2e/%2e%2e/etc/passwd"),
    ("target_path", b"/%252e%252e/etc/passwd"), ("target_path", b"//etc/passwd"),
    ("target_path", b"/./../secret"), ("target_path", b"/..\\..\\secret"), ("target_path", b"/a%00/../x"),
    ("target_path", b"/escape"), ("target_path", b"/a/up"), ("target_path", b"/a/c/d.html?q"),
    ("http_parse", b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 70 + b"\r\n"),
    ("http_parse", b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\n\r\n"),
])
def test_replay_known_hostile_inputs(replay_bins, name, data, tmp_path):
    """Hand-written traversal and oversize inputs through the same harness checks."""
    f = tmp_path / "input"
    f.write_bytes(data)
    env = dict(os.environ, TMPDIR=str(tmp_path), ASAN_OPTIONS="detect_leaks=1")
    p = subprocess.run([str(replay_bins / f"replay_{name}"), str(f)], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0 and "replayed 1 inputs" in p.stdout, p.stderr[-4000:]

"""The getevents backends (realsys/c/ev_*.c) through ev_test: every wait() returns every ready fd.

The μserver's phase loop runs an accept-phase only in a loop whose getevents returned the
listener, and its work-phase serves what getevents returned; a backend that returns part of
the ready set changes the policy being measured.  epoll did, past 4,096 ready fds (its
maxevents was 4,096 and level-triggered epoll returns fds it has just reported behind the
rest, so the listener, registered last, was missed every other call).  The rows straddle
glibc's FD_SETSIZE (1,024: select's bitmaps are sized by hand) and that old maxevents."""
from __future__ import annotations

import json
import resource
import subprocess

import pytest


def wait_rounds(cbuild, backend: str, ready: int, rounds: int = 2) -> dict:
    p = subprocess.run([str(cbuild / "ev_test-asan"), backend, str(ready - 1), str(rounds)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode()
    assert b"ERROR: AddressSanitizer" not in p.stderr and b"runtime error" not in p.stderr, p.stderr.decode()
    return json.loads(p.stdout)


@pytest.mark.parametrize("backend", ["select", "poll", "epoll"])
@pytest.mark.parametrize("ready", [1, 3, 1025, 4097, 5001])
def test_every_wait_returns_every_ready_fd_and_the_listener(cbuild, backend, ready):
    if 2 * ready + 64 > resource.getrlimit(resource.RLIMIT_NOFILE)[1]:
        pytest.fail(f"RLIMIT_NOFILE's hard limit is below the {2 * ready + 64} fds this row needs")
    out = wait_rounds(cbuild, backend, ready, rounds=3)
    assert out["backend"] == backend and out["ready"] == ready
    for r in out["rounds"]:
        assert r == {"fired": ready, "distinct": ready, "listener": True, "without_read": 0}, out

"""One pthread block-and-wake on this machine: the threaded server's ``thread_switch``.

The model of the threaded server (:mod:`simaccept.servers.knot`) charges ``thread_switch`` each
time a thread that blocked runs again.  Its value in the thesis-era profiles (6 us) is
Capriccio's: a user-level switch, its blocking-graph bookkeeping and the retried call, never
measured on this machine.  ``realsys/c/knot.c`` runs pthreads that block in the kernel, so the
same event is the blocking call's way into the scheduler, the waker's wake-up, the context
switch and the call's return: what ``realsys/c/switchcost`` times (its header says how).  The
measurement goes beside a machine's runs as ``thread-switch.json``, where
:func:`validation.machine.thread_costs` reads it for the machine profile.

    python -m realsys switch-cost [--out DIR/thread-switch.json] [--rounds 9] [--iterations 100000]
"""
from __future__ import annotations

import json
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from . import bin_dir
from .runner import provenance

#: The file name a machine's measurement has beside its runs (validation.machine reads it there).
FILE_NAME = "thread-switch.json"
#: Far above a measurement's size (about 80 bytes a round, 1,000 rounds at most).
MAX_BYTES = 1 << 20


def measure(rounds: int = 9, iterations: int = 100_000, log=print) -> dict:
    """Build and run ``switchcost``; its JSON plus where and when it ran.  Raises RuntimeError
    when the build or the program fails (with its message), ValueError on output that is not
    its JSON."""
    where = bin_dir()
    p = subprocess.run(["make", "-s", "-C", str(where), "switchcost"], capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"make -C {where} switchcost failed:\n{p.stderr[-2000:]}")
    log(f"realsys: timing {rounds} round(s) of {iterations} pthread round trips on one CPU")
    p = subprocess.run([str(where / "switchcost"), "--rounds", str(rounds), "--iterations", str(iterations)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"switchcost exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    out = json.loads(p.stdout)
    if not (isinstance(out, dict) and out.get("tool") == "switchcost" and out.get("switch_us", 0) > 0):
        raise ValueError(f"switchcost printed no positive switch_us: {p.stdout[:300]!r}")
    out["measured_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out["provenance"] = provenance()
    return out


def read(path: str | Path) -> dict:
    """A ``thread-switch.json`` as :func:`measure` wrote it.  Raises ValueError naming the file when it
    is not one: not a regular file of at most :data:`MAX_BYTES`, not JSON, or no positive
    ``switch_us``."""
    from simaccept.sweep import read_regular
    path = Path(path)
    try:
        d = json.loads(read_regular(path, MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError) as e:
        raise ValueError(f"{path}: not a switchcost measurement ({e})") from None
    v = d.get("switch_us") if isinstance(d, dict) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
        raise ValueError(f"{path}: not a switchcost measurement (switch_us must be a positive number, got {v!r})")
    return d

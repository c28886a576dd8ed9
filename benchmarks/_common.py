"""Shared helpers for the benchmarks: repo path, machine info, load, JSON line."""
from __future__ import annotations

import json
import os
import platform
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def loadavg() -> tuple[float, float, float]:
    try:
        return os.getloadavg()
    except OSError:
        return (float("nan"),) * 3


def cpu_pressure() -> str:
    """Linux PSI: share of time some task waited for a CPU (avg10/avg60), '' if unavailable."""
    try:
        f = open("/proc/pressure/cpu").readline().split()
        d = dict(x.split("=") for x in f[1:])
        return f"CPU pressure (some) avg10 {d['avg10']} % avg60 {d['avg60']} %"
    except (OSError, ValueError, KeyError, IndexError):
        return ""


def versions() -> dict:
    out = {"python": platform.python_version()}
    for mod in ("simpy", "numpy", "ciw", "pyinstrument", "scipy"):
        try:
            m = __import__(mod)
            out[mod] = getattr(m, "__version__", "?")
        except ImportError:
            out[mod] = None
    return out


def git_rev() -> str:
    import subprocess
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                           text=True, timeout=5).stdout.strip()
        d = subprocess.run(["git", "status", "--porcelain", "--", "simaccept"], cwd=ROOT,
                           capture_output=True, text=True, timeout=5).stdout.strip()
        return r + ("+dirty" if d else "")
    except Exception:
        return ""


class Machine:
    """Prints machine info at start; ``end()`` prints the load at the end."""

    def __init__(self, name: str, quick: bool):
        self.name = name
        self.quick = quick
        self.load_start = loadavg()
        self.info = dict(cpu=cpu_model(), cores=os.cpu_count(), platform=platform.platform(),
                         git=git_rev(), **versions())
        print(f"== {name}{' (--quick)' if quick else ''}")
        print(f"machine: {self.info['cpu']}, {self.info['cores']} cores, {self.info['platform']}")
        v = ", ".join(f"{k} {self.info[k]}" for k in ("python", "simpy", "numpy", "ciw", "pyinstrument")
                      if self.info.get(k))
        print(f"versions: {v}; simaccept git {self.info['git']}")
        print("load average at start (1/5/15 min): %.2f %.2f %.2f" % self.load_start, cpu_pressure())
        sys.stdout.flush()

    def end(self) -> dict:
        self.load_end = loadavg()
        print("load average at end   (1/5/15 min): %.2f %.2f %.2f" % self.load_end, cpu_pressure())
        return dict(cpu=self.info["cpu"], cores=self.info["cores"], python=self.info["python"],
                    simpy=self.info["simpy"], numpy=self.info["numpy"], git=self.info["git"],
                    load_start=round(self.load_start[0], 2), load_end=round(self.load_end[0], 2),
                    quick=self.quick)


def emit_json(d: dict) -> None:
    """The last line of every benchmark: one line of JSON."""
    sys.stdout.flush()
    print(json.dumps(d, sort_keys=False, default=float))
    sys.stdout.flush()


def quick_flag(argv=None) -> bool:
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="short run for development")
    return ap.parse_args(argv).quick


def run(main) -> int:
    """``main()``'s exit status for ``sys.exit``.  Ctrl-C ends a benchmark with 130 and a line
    saying so, not a traceback (a benchmark that can summarise what finished, as sim_rate's
    repetitions, does so itself first)."""
    try:
        return main() or 0
    except KeyboardInterrupt:
        print("\ninterrupted: no summary; the lines above are what finished", file=sys.stderr)
        return 130

"""tools/traced_point.sh: a rerun into an OUT that already holds a label is refused, not traced
over (bpftrace, realsys and mountpoint are stubbed: no test bed, no probes)."""
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

BPFTRACE = """#!/usr/bin/python3
import signal, sys, time
signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
print("simaccept-bpf-ready", flush=True)
print("@pkts: 0", flush=True)
while True:
    time.sleep(0.1)
"""


def _stubs(tmp_path, run_status=0):
    stubs = tmp_path / "bin"
    stubs.mkdir()
    # the point's run: `$PYTHON -m realsys run ...` (PYTHON is this stub), its exit status given
    for name, text in (("bpftrace", BPFTRACE), ("python3", f"#!/bin/sh\nexit {run_status}\n"),
                       ("mountpoint", "#!/bin/sh\nexit 0\n")):
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    return stubs


def _traced(stubs, out):
    return subprocess.run(["sh", "-c", f". tools/traced_point.sh; traced_point x.bt '{out}' 1 s.toml"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "PYTHON": str(stubs / "python3")})


def test_an_out_that_holds_the_label_is_refused_and_kept(tmp_path):
    stubs = _stubs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "bt-1.txt").write_text("@runs[-1]: 1234\n")      # the maps of an earlier run
    (out / "run-1").mkdir()
    r = _traced(stubs, out)
    assert r.returncode == 2 and "already holds run 1" in r.stderr, (r.returncode, r.stderr)
    assert (out / "bt-1.txt").read_text() == "@runs[-1]: 1234\n"


def test_the_maps_are_named_bt_label_only_once_the_point_has_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    r = _traced(_stubs(tmp_path), out)
    assert r.returncode == 0, r.stderr
    assert (out / "bt-1.txt").read_text() == "simaccept-bpf-ready\n@pkts: 0\n"
    assert not (out / ".bt-1.part").exists()


def test_a_point_that_failed_leaves_no_bt_label(tmp_path):
    # its maps were in bt-1.txt, read as a finished point's by the summaries (bt-*.txt)
    out = tmp_path / "out"
    out.mkdir()
    r = _traced(_stubs(tmp_path, run_status=1), out)
    assert r.returncode == 2
    assert not (out / "bt-1.txt").exists() and (out / ".bt-1.part").exists()

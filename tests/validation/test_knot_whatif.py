"""tools/knot_whatif.py: Knot's thesis rows simulated with one cost changed, as the report builds
them; points are cached and reused; bad arguments are refused by name."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "knot_whatif.py"


def run(*args, timeout=300):
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=timeout)


def table(out: str) -> list[list[str]]:
    return [[c.strip() for c in ln.strip("|").split("|")] for ln in out.splitlines()[2:] if ln.startswith("|")]


def test_a_dearer_resume_lowers_accept50_and_the_points_are_cached(tmp_path):
    quick = ("--set", "scenario.duration=1", "--accept50", "14000", "--accept1", "12000", "--cache", str(tmp_path))
    r = run("--cost", "thread_switch", "--values", "6,60", *quick)
    assert r.returncode == 0, r.stderr
    rows = table(r.stdout)
    assert [(x[0], x[1]) for x in rows] == [("6", "accept-50 peak"), ("6", "accept-50 @15000"), ("6", "accept-1 peak"),
                                            ("60", "accept-50 peak"), ("60", "accept-50 @15000"), ("60", "accept-1 peak")]
    served = {(x[0], x[1]): float(x[3].replace(",", "")) for x in rows}
    # ten times Capriccio's resume cost cannot leave Accept-50's throughput where it was
    assert served[("60", "accept-50 peak")] < 0.9 * served[("6", "accept-50 peak")]
    files = sorted(p.name for p in tmp_path.glob("*.json"))
    assert len(files) == 6 and any(f.startswith("50-rate-15000-thread_switch=60-") for f in files)
    # a cached point is read back, not simulated again: edit one and the table shows the edit
    (p,) = tmp_path.glob("1-peak-12000-thread_switch=6-*.json")
    d = json.loads(p.read_text())
    d["replies_per_s"] = 1234.0
    p.write_text(json.dumps(d))
    again = run("--cost", "thread_switch", "--values", "6", *quick)
    assert again.returncode == 0, again.stderr
    assert table(again.stdout)[2][3] == "1,234"
    # another scenario (here a --set; likewise another model or profile) is not answered from it
    other = run("--cost", "thread_switch", "--values", "6", *quick, "--set", "client.think_ms=40")
    assert other.returncode == 0, other.stderr
    assert table(other.stdout)[2][3] != "1,234" and len(list(tmp_path.glob("*.json"))) == 9


@pytest.mark.parametrize("args,msg", [
    (("--cost", "nope", "--values", "1"), "--cost: no cost named 'nope'"),
    (("--cost", "thread_switch", "--values", "-1"), "each must be a finite number >= 0"),
    (("--cost", "thread_switch", "--values", "a,b"), "not a comma-separated list of numbers"),
    (("--cost", "thread_switch", "--values", "6", "--accept50", "nan"), "each must be a finite number >= 0"),
    (("--values", "6",), "--cost"),
])
def test_bad_arguments_are_refused(args, msg, tmp_path):
    r = run(*args, "--cache", str(tmp_path))
    assert r.returncode == 2 and msg in r.stderr, r.stderr
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("args,msg", [
    # --cache a file or under /proc ended in mkdir's traceback (FileExistsError, FileNotFoundError),
    # a bad --set in a worker's ScenarioError traceback after the pool had started
    (("--cache", "{tmp}/afile"), "--cache '{tmp}/afile': '{tmp}/afile' exists and is not a directory"),
    (("--cache", "/proc/x"), "--cache '/proc/x': cannot write in '/proc'"),
    (("--set", "nosuch.key=1"), "--set: scenario key 'nosuch': unknown section"),
    (("--set", "scenario.duration=abc"), "--set: scenario key 'scenario.duration'"),
])
def test_a_bad_cache_or_set_is_refused_before_simulating(args, msg, tmp_path):
    (tmp_path / "afile").write_text("x")
    args = [x.format(tmp=tmp_path) for x in args]
    r = run("--cost", "thread_switch", "--values", "6", "--cache", str(tmp_path / "c"), *args, timeout=60)
    assert r.returncode == 2 and msg.format(tmp=tmp_path) in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_ctrl_c_is_exit_130_without_a_traceback(tmp_path, capsys, monkeypatch):
    # Ctrl-C printed a KeyboardInterrupt traceback from the pool's map (exit -2)
    import importlib.util
    spec = importlib.util.spec_from_file_location("knot_whatif", TOOL)
    kw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kw)

    class Interrupted:
        def __init__(self, *a):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def map(self, *a):
            raise KeyboardInterrupt

        def shutdown(self, *a, **k):
            pass
    monkeypatch.setattr(kw, "worker_pool", Interrupted)
    assert kw.main(["--cost", "thread_switch", "--values", "6", "--cache", str(tmp_path)]) == 130
    assert "knot_whatif: interrupted" in capsys.readouterr().err


@pytest.mark.parametrize("args,msg", [
    # only the first --accept50 rate and the first value were checked: the others ended in a
    # worker's ScenarioError traceback (exit 1) after the other points had been simulated
    (("--accept1", "0"), "--accept1: scenario key 'workload.rate': must be > 0"),
    (("--accept50", "14000,0"), "--accept50: scenario key 'workload.rate': must be > 0"),
    (("--accept50", "100", "--set", "scenario.duration=1500"), "--set: scenario key 'workload.rate'"),
])
def test_every_point_is_checked_before_simulating(args, msg, tmp_path):
    r = run("--cost", "thread_switch", "--values", "6", "--cache", str(tmp_path), *args, timeout=60)
    assert r.returncode == 2 and msg in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not list(tmp_path.glob("*.json"))


def test_a_set_of_the_varied_cost_is_refused(tmp_path):
    # --set costs.thread_switch=99 came after --cost's value: every row ran at 99 and the table
    # labelled it 6
    r = run("--cost", "thread_switch", "--values", "6", "--cache", str(tmp_path),
            "--set", "costs.thread_switch=99", timeout=60)
    assert r.returncode == 2 and "--set 'costs.thread_switch=99': sets the cost --cost varies" in r.stderr, r.stderr
    assert not list(tmp_path.glob("*.json"))


def test_sigterm_stops_the_workers(tmp_path):
    # a plain ProcessPoolExecutor: SIGTERM killed the parent alone and its two workers went on
    # simulating 120 s windows, orphaned, for minutes
    import os
    import signal
    import time
    p = subprocess.Popen([sys.executable, str(TOOL), "--cost", "thread_switch", "--values", "7",
                          "--accept50", "14000", "--accept1", "12000", "--cache", str(tmp_path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def children():
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    stat = open(f"/proc/{d}/stat").read()
                except OSError:
                    continue
                if int(stat.rsplit(")", 1)[1].split()[1]) == p.pid:
                    out.append(int(d))
        return out
    kids = []
    try:
        deadline = time.monotonic() + 60
        while len(kids := children()) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(kids) >= 2, kids
        time.sleep(2)
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 128 + signal.SIGTERM and "knot_whatif: interrupted" in err, err
        time.sleep(1)
        alive = [k for k in kids if os.path.exists(f"/proc/{k}") and
                 open(f"/proc/{k}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"]
        assert not alive, alive
    finally:
        for k in children():
            os.kill(k, signal.SIGKILL)
        p.kill()
        p.wait()
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except ProcessLookupError:
                pass

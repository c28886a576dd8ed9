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
    monkeypatch.setattr(kw, "ProcessPoolExecutor", Interrupted)
    assert kw.main(["--cost", "thread_switch", "--values", "6", "--cache", str(tmp_path)]) == 130
    assert "knot_whatif: interrupted" in capsys.readouterr().err

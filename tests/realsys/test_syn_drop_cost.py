"""tools/syn_drop_cost.py: every SYN to a full accept queue is dropped, counted and timed on the
server's CPU; bad arguments are refused before anything is built."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "syn_drop_cost.py"
COMMITTED = ROOT / "realsys" / "results" / "xeon-2026-11-26" / "traces" / "syn-drop-cost.json"


def run(*args, timeout=240):
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True, timeout=timeout)


@pytest.mark.root
def test_syns_to_a_full_accept_queue_are_dropped_counted_and_timed(tmp_path):
    out = tmp_path / "sdc.json"
    r = run("--rates", "300", "--duration", "1", "--out", str(out))
    assert r.returncode == 0, r.stderr
    p, = json.loads(out.read_text())["points"]
    assert p["connects"] == 300
    # the accept queue holds two handshakes; every other SYN (retransmissions only add) is
    # dropped at the accept-queue check, which counts ListenOverflows and ListenDrops alike
    assert p["listen_overflows"] >= 298 and p["listen_drops"] == p["listen_overflows"]
    # each TCP segment the server namespace received was processed on the server's NIC, plus ARP:
    # the first exchange and at most a reachability re-probe (one fresh-machine run had 3 packets
    # more than segments, 2026-11-27).  The tracepoint program can miss a packet: the kernel skips
    # a BPF program while another one runs on that CPU (trace_call_bpf's bpf_prog_active).  Here
    # 10 runs saw 304-305 packets for 304 segments; a fresh-machine CI run (2 Dec 2026) saw 299 on
    # the server's CPU for 305 segments, which the tool did not then tell apart from packets RPS
    # steered to another CPU: it now counts those too.  Misses are allowed to 3 %.
    seen = p["pkts_server_nic"] + p["pkts_server_nic_other_cpus"]
    assert 0.97 * p["in_segs"] <= seen <= p["in_segs"] + 4, p
    # RPS sends them to the server's CPU, which the per-packet cost below is measured on
    assert p["pkts_server_nic"] >= 0.97 * seen, p
    # each SYN reaches an idle CPU and mostly starts a NET_RX run of its own; a few runs carry no
    # packet at all (one fresh-clone CI run had 1.003 runs per packet), so not exactly <= 1
    assert 0.5 <= p["runs_per_packet"] <= 1.1
    assert 0 < p["us_per_packet"] < 1000
    assert "syn_drop_cost" not in r.stderr


@pytest.mark.parametrize("args,msg", [
    (("--rates", "-5"), "each must be a finite number > 0"),
    # inf and nan were blamed on --duration ("--duration: must be > 0 and rate x duration <= ...")
    (("--rates", "inf"), "--rates: each must be a finite number > 0"),
    (("--rates", "100,nan"), "--rates: each must be a finite number > 0"),
    (("--rates", "a,b"), "not numbers"),
    (("--rates", ","), "at least one"),
    (("--rates", "100000", "--duration", "10"), "open files"),
    (("--duration", "0"), "--duration"),
])
def test_bad_arguments_are_refused_by_name(args, msg, tmp_path):
    r = run(*args, "--out", str(tmp_path / "x.json"), timeout=60)
    assert r.returncode == 2 and msg in r.stderr
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("out,msg", [
    ("", "give a file name"),
    ("{tmp}", "is a directory"),
    ("/proc/x/sdc.json", "cannot write in '/proc'"),
    ("{tmp}/f/sdc.json", "is not a directory"),
])
def test_an_out_that_cannot_be_written_is_refused_before_the_test_bed(tmp_path, monkeypatch, capsys, out, msg):
    # --out was first written after every rate had been measured: a directory or /proc/x there
    # ended in a traceback (IsADirectoryError, FileNotFoundError) and the measurements were lost
    sys.path.insert(0, str(ROOT / "tools"))
    import syn_drop_cost

    def built(*a, **k):
        raise AssertionError("a test bed was built")
    monkeypatch.setattr(syn_drop_cost, "TestBed", built)
    monkeypatch.setattr(syn_drop_cost, "ensure_tracefs", lambda: True)
    (tmp_path / "f").write_text("a file")
    assert syn_drop_cost.main(["--rates", "100", "--duration", "1", "--out", out.format(tmp=tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("--out ") and msg in err, err


def test_committed_points_are_consistent():
    """The figures quoted in realsys/results/README.md are this file's; its derived columns
    follow from its raw counts."""
    sys.path.insert(0, str(ROOT / "tools"))
    from syn_drop_cost import derived
    pts = json.loads(COMMITTED.read_text())["points"]
    assert len(pts) >= 3
    for p in pts:
        for k, v in derived(p).items():
            assert p[k] == pytest.approx(v)
        # the formulas written out, not only derived()'s of its own output
        assert p["us_per_packet"] == pytest.approx(p["netrx_ns"] / 1000 / p["pkts_cpu"])
        assert p["runs_per_packet"] == pytest.approx(p["netrx_runs"] / p["pkts_cpu"])
        assert p["listen_drops"] >= 0.95 * p["pkts_cpu"]    # the CPU's packets were the dropped SYNs
    # the README's table, row by row (it was checked by nothing: copied by hand)
    readme = (ROOT / "realsys" / "results" / "README.md").read_text()
    head = "| SYNs/s | connects | SYNs dropped | packets on CPU 0 | NET_RX runs per packet | NET_RX µs per packet |"
    assert readme.count(head) == 1
    rows = []
    for line in readme.split(head, 1)[1].splitlines()[2:]:
        if not line.startswith("|"):
            break
        rows.append([float(c.replace(",", "")) for c in line.strip("|").split("|")])
    assert [(r[0], r[1], r[2], r[3]) for r in rows] == \
        [(p["rate"], p["connects"], p["listen_drops"], p["pkts_cpu"]) for p in pts]
    for r, p in zip(rows, pts):
        assert (r[4], r[5]) == (round(p["runs_per_packet"], 2), round(p["us_per_packet"], 2))


@pytest.mark.parametrize("stop,rc", [(RuntimeError("client failed: x"), 2), (KeyboardInterrupt(), 130)])
def test_a_run_that_stops_early_writes_a_file_marked_incomplete(tmp_path, monkeypatch, capsys, stop, rc):
    # the finished rates were written as {"points": [...]} alone, the same as a complete run of
    # fewer rates; Ctrl-C was a KeyboardInterrupt traceback
    sys.path.insert(0, str(ROOT / "tools"))
    import syn_drop_cost

    class Bed:
        cpu_server, server_ips, server_ns = 0, ["198.18.0.1"], "srv"

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def spawn(self, *a, **k):
            pass

        def wait_listening(self, *a, **k):
            pass

    def measure(tb, rate, duration):
        if rate > 100:
            raise stop
        return {"rate": rate, "connects": 100, "listen_drops": 98, "listen_overflows": 98, "pkts_cpu": 100,
                "netrx_ns": 300000, "netrx_runs": 100}
    monkeypatch.setattr(syn_drop_cost, "TestBed", Bed)
    monkeypatch.setattr(syn_drop_cost, "measure", measure)
    monkeypatch.setattr(syn_drop_cost, "ensure_tracefs", lambda: True)
    monkeypatch.setattr(syn_drop_cost.os, "geteuid", lambda: 0)
    out = tmp_path / "sdc.json"
    assert syn_drop_cost.main(["--rates", "100,200", "--duration", "1", "--out", str(out)]) == rc
    d = json.loads(out.read_text())
    assert [p["rate"] for p in d["points"]] == [100.0]
    assert d["complete"] is False and d["rates"] == [100.0, 200.0]

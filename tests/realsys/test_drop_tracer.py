"""realsys/kernel.py's DropTracer.stop: what it makes of bpftrace's output (no root: a stand-in
process prints it)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from realsys import kernel


def _tracer_printing(monkeypatch, maps: dict, names: dict[int, str]) -> kernel.DropTracer:
    """A DropTracer whose 'bpftrace' prints ``maps`` as bpftrace -f json does on SIGINT."""
    out = json.dumps({"type": "map", "data": maps})
    code = ("import signal, sys, time\n"
            "def bye(*a):\n"
            f"    print({out!r}, flush=True); sys.exit(0)\n"
            "signal.signal(signal.SIGINT, bye)\n"
            "print('ready', flush=True)\n"
            "time.sleep(60)\n")
    t = kernel.DropTracer(enabled=False)
    t.available = True
    t.proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert t.proc.stdout.readline().strip() == "ready"
    monkeypatch.setattr(kernel, "drop_reason_names", lambda: names)
    return t


NAMES = {2: "NOT_SPECIFIED", 77: "TCP_LISTEN_OVERFLOW"}


def test_numbered_and_named_drop_reasons_both_count(monkeypatch):
    # a bpftrace that prints enum keys by name: int() of the key ended the sweep
    t = _tracer_printing(monkeypatch, {"@drop": {"77": 5, "SKB_DROP_REASON_TCP_LISTEN_OVERFLOW": 2, "2": 1}}, NAMES)
    res = t.stop()
    assert res["drop_reasons"] == {"TCP_LISTEN_OVERFLOW": 7, "NOT_SPECIFIED": 1}, res
    assert t.proc is None


def test_a_kernel_without_the_listen_overflow_reason_gets_a_counter_only_split(monkeypatch):
    # before Linux 6.15 the ACK-time overflow is freed as NOT_SPECIFIED: the split recorded a
    # measured ListenOverflow of 0 and every overflow as AcceptQFull, "counters+bpftrace"
    t = _tracer_printing(monkeypatch, {"@drop": {"2": 9}}, {2: "NOT_SPECIFIED"})
    assert t.stop() == {}
    assert "no TCP_LISTEN_OVERFLOW drop reason" in t.note and "counter-only split" in t.note


def test_an_interrupt_while_stopping_still_kills_bpftrace(monkeypatch):
    # stop() let go of the process before interrupt(): a Ctrl-C there left bpftrace attached,
    # and the runner's abort() found nothing to kill
    t = _tracer_printing(monkeypatch, {}, NAMES)
    p = t.proc

    def ctrl_c(proc, grace=30.0):
        raise KeyboardInterrupt
    monkeypatch.setattr(kernel, "interrupt", ctrl_c)
    with pytest.raises(KeyboardInterrupt):
        t.stop()
    assert p.poll() is not None and t.proc is None

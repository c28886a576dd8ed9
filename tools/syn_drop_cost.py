"""What one dropped SYN costs this kernel, measured, to hold against the fitted ``k_syn_drop``.

The machine fits (``python -m validation machine-fit``) give ``k_syn_drop`` 13-17 µs of server
CPU per dropped SYN, against ~2-4 µs for every other packet (``k_syn`` 2.2 µs on the Xeon
profile): a dropped SYN would cost more than an admitted one, which creates a request and
sends a SYN-ACK.  This measures the kernel's own cost.  In the test bed, a listener whose
accept queue holds two connections never accepts, so after the first two handshakes every SYN
is dropped at the accept-queue check (ListenOverflows).  A client on the clients' CPU opens
non-blocking connections at RATE for DURATION seconds and keeps them (no FIN, no RST; their SYN
retransmissions are dropped too).  bpftrace times every NET_RX softirq run on the server's CPU
and counts what it receives there, by device; the server namespace's counters count the drops.

Per rate it reports NET_RX µs on the server CPU per packet received there, and runs per packet.
With RPS each SYN the client sends alone reaches an idle server CPU and is a softirq run of its
own, so the per-packet figure is what the model would charge for it: ``k_syn_drop`` plus
``k_softirq_run`` (per run).  The time includes the tracepoints' own cost, a few hundred ns per
event, so it is an upper bound.

Usage (root)::

    python3 tools/syn_drop_cost.py [--rates 500,1000,2000,4000] [--duration 3] [--out FILE.json]

Prints one line per rate and writes the raw counts and maps as JSON (atomically; after a failure
or Ctrl-C, the rates finished, with ``"complete": false``).  Exit 2 on
bad arguments or when bpftrace does not attach.  The test bed is torn down on exit, Ctrl-C or
SIGTERM; after a SIGKILL, bpftrace dies with the tool and the next test bed (or ``python -m
realsys clean``) removes the namespaces left.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from realsys.kernel import (READY, _die_with_parent, bpf_maps, counter_delta, ensure_tracefs,  # noqa: E402
                            interrupt, read_counters, wait_ready)
from realsys.testbed import TestBed  # noqa: E402
from simaccept.sweep import atomic_write  # noqa: E402

PORT = 8080
#: NET_RX runs on the server's CPU, and packets received by device, on the server's CPU (key "dev,1")
#: or another (so a packet steered elsewhere is told from one the program missed) (bpftrace 0.17).
PROGRAM = r"""
BEGIN { printf("{READY}\n"); }
tracepoint:irq:softirq_entry /args->vec == 3 && cpu == {CPU}/ { @st = nsecs; }
tracepoint:irq:softirq_exit /args->vec == 3 && cpu == {CPU} && @st/ {
  @netrx_ns = sum(nsecs - @st); @netrx_runs = count(); @st = 0;
}
tracepoint:net:netif_receive_skb { @pkts[str(args->name), cpu == {CPU}] = count(); }
"""

#: The listener: accept queue of two (listen(1)), never accepting.  It exits with its namespace.
LISTENER = ("import socket, time\n"
            "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
            "s.bind(('{ip}', {port})); s.listen(1)\n"
            "time.sleep(86400)\n")

#: The client: RATE non-blocking connects per second for DURATION s, paced on the monotonic clock,
#: all kept open until the end; prints how many it opened.
CLIENT = ("import errno, resource, socket, sys, time\n"
          "rate, dur, ip, port = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], int(sys.argv[4])\n"
          "soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
          "resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))\n"
          "keep, t0 = [], time.monotonic()\n"
          "n_total = int(rate * dur)\n"
          "for i in range(n_total):\n"
          "    wait = t0 + i / rate - time.monotonic()\n"
          "    if wait > 0:\n"
          "        time.sleep(wait)\n"
          "    s = socket.socket(); s.setblocking(False)\n"
          "    e = s.connect_ex((ip, port))\n"
          "    if e not in (0, errno.EINPROGRESS):\n"
          "        sys.exit(f'connect: {errno.errorcode.get(e, e)}')\n"
          "    keep.append(s)\n"
          "rest = t0 + dur - time.monotonic()\n"
          "if rest > 0:\n"
          "    time.sleep(rest)\n"
          "print(len(keep), flush=True)\n")


def measure(tb: TestBed, rate: float, duration: float) -> dict:
    """One rate: the client's connects, the server namespace's counter deltas and the bpftrace maps."""
    prog = PROGRAM.replace("{READY}", READY).replace("{CPU}", str(tb.cpu_server))
    # the probes are global: if this tool is SIGKILLed, the kernel kills bpftrace too (as realsys's)
    bt = subprocess.Popen(["bpftrace", "-f", "json", "-e", prog], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, preexec_fn=_die_with_parent)
    try:
        if not wait_ready(bt.stdout, 60.0):
            raise RuntimeError(f"bpftrace did not attach: {bt.stderr.read()[-300:] if bt.poll() is not None else 'timeout'}")
        netfile = lambda name: tb.netfile(tb.server_ns, name)  # noqa: E731
        before = read_counters(netfile)
        t0 = time.monotonic()
        cli = tb.spawn(tb.client_ns[0], [sys.executable, "-c", CLIENT, str(rate), str(duration),
                                        tb.server_ips[0], str(PORT)], cpu=tb.cpu_clients,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        o, e = cli.communicate(timeout=duration + 60)
        wall = time.monotonic() - t0
        if cli.returncode != 0:
            raise RuntimeError(f"client failed: {e.strip()[-300:]}")
        after = read_counters(netfile)
    finally:
        out, clean = interrupt(bt)
    if not clean:
        raise RuntimeError("bpftrace did not exit cleanly: counts unknown")
    m = bpf_maps(out)
    d = counter_delta(before, after)
    by_cpu = m.get("@pkts", {}) or {}
    pkts = {k.rsplit(",", 1)[0]: v for k, v in by_cpu.items() if k.endswith(",1")}
    elsewhere = {k.rsplit(",", 1)[0]: v for k, v in by_cpu.items() if not k.endswith(",1")}
    nic = f"sa{tb.pid}s1"
    return {"rate": rate, "duration_s": duration, "wall_s": round(wall, 3), "connects": int(o.split()[-1]),
            "listen_overflows": d.get("TcpExt.ListenOverflows", 0), "listen_drops": d.get("TcpExt.ListenDrops", 0),
            "in_segs": d.get("Tcp.InSegs", 0), "pkts_by_device": pkts, "pkts_server_nic": pkts.get(nic, 0),
            "pkts_other_cpus_by_device": elsewhere, "pkts_server_nic_other_cpus": elsewhere.get(nic, 0),
            "pkts_cpu": sum(pkts.values()), "netrx_runs": m.get("@netrx_runs", 0), "netrx_ns": m.get("@netrx_ns", 0)}


def derived(r: dict) -> dict:
    """Per packet on the server CPU: NET_RX µs and runs; the share of them that were dropped SYNs."""
    p = r["pkts_cpu"]
    return {"us_per_packet": r["netrx_ns"] / p / 1000 if p else float("nan"),
            "runs_per_packet": r["netrx_runs"] / p if p else float("nan"),
            "dropped_share_of_packets": r["listen_drops"] / p if p else float("nan")}


def _out_problem(out: str | None) -> str | None:
    """Why the JSON cannot be written to ``out`` (None: it can, or no --out).  It is written after
    every rate has been measured: a directory or an unwritable place there was a traceback and the
    measurements were lost."""
    if out is None:
        return None
    if not out.strip():
        return "give a file name (the raw results as JSON)"
    if Path(out).is_dir():
        return "is a directory; give a file name"
    from simaccept.cli import _out_dir
    from simaccept.scenario import ScenarioError
    try:
        _out_dir(str(Path(out).parent))
    except ScenarioError as e:
        return e.reason
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rates", default="500,1000,2000,4000", help="SYNs per second, comma-separated")
    ap.add_argument("--duration", type=float, default=3.0, help="seconds per rate (default 3)")
    ap.add_argument("--out", default=None, help="write the raw results here as JSON")
    a = ap.parse_args(argv)
    try:
        rates = [float(x) for x in a.rates.split(",") if x.strip()]
    except ValueError:
        print(f"--rates: not numbers: {a.rates!r}", file=sys.stderr)
        return 2
    # every connection stays open for the whole point: rate x duration descriptors in the client
    limit = resource.getrlimit(resource.RLIMIT_NOFILE)[1] - 100
    bad = ("--rates: need at least one" if not rates else
           "--rates: each must be a finite number > 0" if not all(0 < r < float("inf") for r in rates) else
           f"--duration: must be > 0 and rate x duration <= {limit} (open files)"
           if not (0 < a.duration and max(rates) * a.duration <= limit) else "")
    if bad:
        print(bad, file=sys.stderr)
        return 2
    why = _out_problem(a.out)       # written after the measurements: checked before them
    if why:
        print(f"--out {a.out!r}: {why}", file=sys.stderr)
        return 2
    if os.geteuid() != 0 or not ensure_tracefs():
        print("needs root and tracefs (bpftrace tracepoints)", file=sys.stderr)
        return 2
    results = []
    try:
        with TestBed() as tb:
            tb.spawn(tb.server_ns, [sys.executable, "-c", LISTENER.format(ip=tb.server_ips[0], port=PORT)],
                     cpu=tb.cpu_server)
            tb.wait_listening(PORT)
            for rate in rates:
                r = measure(tb, rate, a.duration)
                r.update(derived(r))
                results.append(r)
                print(f"rate {rate:>6.0f}/s: {r['connects']} connects, {r['listen_drops']} dropped "
                      f"({r['listen_overflows']} ListenOverflows), {r['pkts_cpu']} packets on CPU "
                      f"{tb.cpu_server}, NET_RX {r['us_per_packet']:.2f} µs and {r['runs_per_packet']:.2f} "
                      f"runs per packet", flush=True)
    except RuntimeError as e:
        print(f"syn_drop_cost: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"syn_drop_cost: interrupted after {len(results)} of {len(rates)} rates", file=sys.stderr)
        return 130
    finally:
        # a failed or interrupted run keeps the rates it finished, marked as such (the file
        # looked like a complete run of fewer rates)
        if a.out and results:
            atomic_write(Path(a.out), json.dumps({"host": os.uname().nodename, "kernel": os.uname().release,
                                                  "rates": rates, "complete": len(results) == len(rates),
                                                  "points": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

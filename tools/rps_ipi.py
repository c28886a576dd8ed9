"""What the RPS IPIs the server's CPU sends would do to the realsys kernel calibration.

The report (docs/validation/realsys.md) finds the simulated μserver making fewer NET_RX softirq
runs per reply than the machine counts on the server's CPU (its table, select: 2.83 / 2.22 at
accept-1 / inf against 4.85 / 3.46; over the 32 fit runs alone, which this script prints, the
measured means are 4.86 / 3.47), and names the runs it lacks: on the test bed a transmit in
process context (the reply's writev, close's FIN) goes through veth to the clients' CPU by RPS,
and when that CPU's backlog is not already scheduled the server's CPU raises NET_RX locally to
send it an IPI (``rps_ipi_queued``, then ``net_rps_send_ipi`` from ``net_rx_action``): a run that
carries no packet.  The calibration (validation.machine.calibrate_kernel) then makes up for the
missing runs with a dearer run, 18.4 µs where the runs' own least squares give 13.6 ± 2.1
(tools/kernel_split.py).

This script adds those runs to the simulation *at run time*, not to the model: after each
``Host.write`` and ``Host.close`` (the μserver's transmits from process context), a transmit at
``t`` that finds the clients' backlog idle costs the server's CPU one run (``k_softirq_run``, no
packet), counted in the record's softirq runs; packets that arrive during it join it, as they
join any run.  The backlog stays scheduled from the transmit until ``window`` µs after the IPI
leaves (the run's end): the IPI's delivery and the clients' CPU draining it; a transmit inside
that time joins it and keeps it scheduled ``window`` µs past itself.  Then it simulates the fit
runs at realsys-linux6's costs for each window, and calibrates the kernel costs again at one
window.  The simulations run with ``jobs = 1``: a pool of one worker forked inside the patch, so
the patch is in every one; the script refuses a result at a window above 0 that equals the
unpatched one (a start method that does not fork would lose the patch silently).  Nothing here
changes the model, a profile or a report; a window of 0 is the model as it is, and the script
checks at the end that the unpatched simulations are what they were before it patched anything.

    python tools/rps_ipi.py [--windows 0,1,5,10,20,50] [--calibrate 5]
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import math
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from simaccept.costs import load_costs  # noqa: E402
from simaccept.host import Host  # noqa: E402
from validation import machine  # noqa: E402
from validation.fitter import simulate_records  # noqa: E402

_spec = importlib.util.spec_from_file_location("kernel_split", ROOT / "tools" / "kernel_split.py")
kernel_split = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_split)

PROFILE = "realsys-linux6"


@contextlib.contextmanager
def rps_ipis(window_us: float):
    """Host.write and Host.close send an IPI run when the peer's backlog is idle (see above)."""
    write, close = Host.write, Host.close
    w = window_us * 1e-6

    def ipi(h: Host, t: float) -> None:
        until = getattr(h, "_ipi_peer_until", -math.inf)
        if t >= until:
            if t < h.kend:                   # inside a running softirq the IPI leaves at its end
                h._ipi_peer_until = h.kend + w
                return
            h.softirq_runs += 1
            h.cpu.charge_kernel(t, h.k_run)  # the server's next operation waits for it
            h.kend = h.cpu.kbusy
            # the IPI leaves at the run's end: the clients' CPU is busy with the backlog from then
            h._ipi_peer_until = h.kend + w
        elif t + w > until:
            h._ipi_peer_until = t + w

    def write_ipi(h, t, c, nbytes):
        left = write(h, t, c, nbytes)
        ipi(h, t)
        return left

    def close_ipi(h, t, c):
        close(h, t, c)
        ipi(h, t)

    if w > 0:
        Host.write, Host.close = write_ipi, close_ipi
    try:
        yield
    finally:
        Host.write, Host.close = write, close


def profile_costs() -> dict[str, float]:
    """realsys-linux6's costs, as the report simulates its realsys runs with."""
    return dict(load_costs(PROFILE).us)


def simulate(recs, window_us: float, costs: dict[str, float]):
    """The fit runs simulated at ``costs`` with IPI runs at ``window_us`` (0: none)."""
    with rps_ipis(window_us):
        return simulate_records(recs, machine.REFERENCE, 1, [f"costs.{k}={v!r}" for k, v in costs.items()], cache=None)


def per_limit(recs, sims) -> dict[str, dict[str, float]]:
    """Per accept-limit: median kernel µs per reply, mean NET_RX runs per reply, median throughput
    error, from the simulated records (each failed simulation raises)."""
    by: dict[str, list[tuple[float, float, float]]] = {}
    for m, s in zip(recs, sims):
        if s.status != "ok" or not s.replies_per_s > 0:
            raise RuntimeError(f"{m.label}: simulation failed: {s.error}")
        by.setdefault(m.record.accept_limit, []).append(
            (s.cpu_share_kernel_net / s.replies_per_s * 1e6, s.softirq_runs_per_s / s.replies_per_s,
             s.replies_per_s / m.record.replies_per_s - 1.0))
    return {al: {"kernel_us": statistics.median(x[0] for x in v), "runs": statistics.mean(x[1] for x in v),
                 "error": statistics.median(x[2] for x in v)} for al, v in by.items()}


def measured(recs) -> dict[str, dict[str, float]]:
    """The same per accept-limit from the runs themselves (the dilation's kernel time, softirqs)."""
    rows = kernel_split.run_rows(recs)
    return {al: {"kernel_us": machine.kernel_us_per_reply([m for m in recs if m.record.accept_limit == al]),
                 "runs": statistics.mean(r["runs"] for r in rows if r["accept_limit"] == al)}
            for al in sorted({r["accept_limit"] for r in rows})}


def calibrate(recs, window_us: float) -> dict:
    """validation.machine.calibrate_kernel with IPI runs at ``window_us``, the other costs the profile's."""
    other = {k: v for k, v in profile_costs().items() if k not in machine.KERNEL_COSTS and k != "k_softirq_run"}
    with rps_ipis(window_us):
        return machine.calibrate_kernel(other, recs, jobs=1, verbose=0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--windows", default="0,1,5,10,20,50", help="µs the clients' backlog stays scheduled")
    ap.add_argument("--calibrate", type=float, default=5.0, help="calibrate the kernel costs at this window (µs)")
    a = ap.parse_args(argv)
    recs = machine.fit_records()
    costs = profile_costs()
    meas = measured(recs)
    lims = list(meas)
    print(f"{len(recs)} fit runs, {PROFILE}'s costs (k_softirq_run {costs['k_softirq_run']} us)")
    print("measured: " + "; ".join(f"accept-{al} {meas[al]['kernel_us']:.1f} us kernel, {meas[al]['runs']:.2f} "
                                   "NET_RX runs per reply" for al in lims))
    plain = per_limit(recs, simulate(recs, 0.0, costs))
    for w in [float(x) for x in a.windows.split(",")]:
        if w < 0:
            raise SystemExit(f"--windows: {w:g} us: a window cannot be negative")
        got = plain if w == 0 else per_limit(recs, simulate(recs, w, costs))
        if w > 0 and got == plain:
            raise RuntimeError(f"window {w:g} us gave the unpatched results: the patch did not reach the simulations")
        print(f"window {w:g} us: " + "; ".join(
            f"accept-{al} {got[al]['kernel_us']:.1f} us kernel, {got[al]['runs']:.2f} runs, "
            f"replies {100 * got[al]['error']:+.1f} %" for al in lims))
    cal = calibrate(recs, a.calibrate)
    print(f"calibrated at window {a.calibrate:g} us: per-packet scale x {cal['scale']:.3f}, k_softirq_run "
          f"{cal['k_softirq_run']:.2f} us (the profile: {costs['k_softirq_run']} us); kernel us per reply "
          + ", ".join(f"accept-{al} {cal['simulated_us_per_reply'][al]:.1f} "
                      f"(measured {cal['measured_us_per_reply'][al]:.1f})" for al in lims) + f", status {cal['status']}, {cal['nfev']} evaluations")
    got = per_limit(recs, simulate(recs, a.calibrate, {**costs, **cal["costs"]}))
    print("at the calibrated costs: " + "; ".join(
        f"accept-{al} {got[al]['runs']:.2f} runs per reply, replies {100 * got[al]['error']:+.1f} %" for al in lims))
    if per_limit(recs, simulate(recs, 0.0, costs)) != plain:
        raise RuntimeError("the simulations without IPI runs changed: the patch was not undone")
    return 0


if __name__ == "__main__":
    sys.exit(main())

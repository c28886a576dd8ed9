"""What the measured runs say about the kernel's per-packet and per-softirq-run costs.

machine-fit's kernel calibration (validation.machine.calibrate_kernel) solves a per-packet scale
and ``k_softirq_run`` so that the *simulated* kernel time per reply matches the measured one at
accept-1 and at accept-inf.  Two targets, two unknowns: they pin the total, and the split moved
(x 0.38 / 15.3 us to x 0.073 / 18.4 us) when a fixed cost moved by 0.18 us.  This script asks the
measurements alone.  Each fit run gives its kernel time per reply (what the dilation of the
server's fixed spin implies, validation.machine.kernel_us_per_reply's rule), its packets per
reply (softnet's packets processed on the server's CPU) and its NET_RX runs per reply
(/proc/softirqs on the server's CPU); a least-squares fit of

    kernel_us_per_reply = per_packet_us * packets_per_reply + per_run_us * runs_per_reply

over the runs gives each cost with its standard error and their correlation.  It simulates
nothing.

    python tools/kernel_split.py [--results realsys/results]
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from validation import machine  # noqa: E402


def run_rows(recs) -> list[dict]:
    """One row per fit run with a point file, a spin and replies: its accept-limit, rate, kernel µs,
    packets and NET_RX runs per reply."""
    out = []
    for m in recs:
        j = machine.point_json(m)
        r = m.record
        if not j or "softirq" not in j:
            continue
        kernel_us = machine.kernel_us_per_reply([m])      # the calibration's own rule, one run
        if math.isnan(kernel_us):                         # no spin, or no replies
            continue
        s = j["softirq"]
        cpu = s["cpu_server"]
        replies = r.replies_per_s * r.duration_s
        out.append({"accept_limit": r.accept_limit, "rate": r.target_rate, "kernel_us": kernel_us,
                    "packets": s["packets_processed_per_cpu"][cpu] / replies,
                    "runs": s["net_rx_softirqs_per_cpu"][cpu] / replies})
    return out


def split(rows: list[dict]) -> dict:
    """Least squares of kernel µs per reply on packets and runs per reply (no intercept): the two
    costs, their standard errors, their correlation and the residual sd.  ValueError with fewer
    than three rows."""
    if len(rows) < 3:
        raise ValueError(f"{len(rows)} run(s): the split needs at least three")
    a = np.array([[r["packets"], r["runs"]] for r in rows])
    y = np.array([r["kernel_us"] for r in rows])
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    resid = y - a @ coef
    s2 = float(resid @ resid) / (len(y) - 2)
    cov = s2 * np.linalg.inv(a.T @ a)
    se = np.sqrt(np.diag(cov))
    return {"n": len(rows), "per_packet_us": float(coef[0]), "per_run_us": float(coef[1]),
            "per_packet_se": float(se[0]), "per_run_se": float(se[1]),
            "correlation": float(cov[0, 1] / (se[0] * se[1])), "residual_sd": math.sqrt(s2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=None, help="the fit runs' results directory (machine-fit's --results)")
    a = ap.parse_args(argv)
    rows = run_rows(machine.fit_records(a.results))
    for al in sorted({r["accept_limit"] for r in rows}, key=lambda v: math.inf if v == "inf" else float(v)):
        g = [r for r in rows if r["accept_limit"] == al]
        print(f"accept-{al}: {len(g)} runs, medians per reply: kernel {statistics.median(r['kernel_us'] for r in g):.1f} us, "
              f"{statistics.median(r['packets'] for r in g):.2f} packets, {statistics.median(r['runs'] for r in g):.2f} "
              "NET_RX runs")
    s = split(rows)
    print(f"least squares over {s['n']} runs: {s['per_packet_us']:.2f} +- {s['per_packet_se']:.2f} us per packet, "
          f"{s['per_run_us']:.2f} +- {s['per_run_se']:.2f} us per NET_RX run (correlation {s['correlation']:.2f}, "
          f"residual sd {s['residual_sd']:.1f} us per reply)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

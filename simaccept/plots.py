"""Thesis-style figures: one metric against target rate, one line per policy."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from .sweep import atomic_write

#: Metrics of the getevents phase: TUX has none (its select calls are 0, fds per call undefined).
GETEVENTS = ("select_calls_per_s", "fds_per_select")
FIGURES = [
    ("replies_per_s", "Replies/s", "throughput"),
    ("qdrops_per_s", "Queue drops/s", "queue-drops"),
    ("resp_ms_mean", "Mean response time (ms)", "response-time"),
    ("select_calls_per_s", "getevents calls/s", "select-rate"),
    ("fds_per_select", "fds returned per call", "fds-per-select"),
]


def policy_label(r) -> str:
    lim = r.accept_limit if r.accept_limit != "inf" else "Inf"
    base = f"Accept-{lim}" if r.policy in ("", "accept-limit") else f"{r.policy} ({lim})"
    return f"{r.server} {base}" if r.server and r.server != "userver" else base


def save_figure(fig, stem: Path, formats=("png", "svg")) -> list[Path]:
    """Write ``fig`` as ``stem.<fmt>`` for each format, atomically; returns the paths.
    The suffix is appended, not replaced: ``fig4.12`` stays ``fig4.12.png``."""
    written = []
    for fmt in formats:
        p = Path(stem).parent / f"{Path(stem).name}.{fmt}"
        atomic_write(p, lambda tmp, fmt=fmt: fig.savefig(tmp, format=fmt, dpi=110))
        written.append(p)
    return written


def thesis_plots(records, out: Path, formats=("png", "svg")) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if r.status == "ok" and not math.isnan(r.target_rate)]
    lines = defaultdict(list)
    for r in ok:
        key = (policy_label(r), r.mux, r.workload, r.source)
        lines[key].append(r)
    written = []
    for metric, ylabel, stem in FIGURES:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for (label, mux, wl, src), rs in sorted(lines.items()):
            rs = sorted(rs, key=lambda r: r.target_rate)
            ys = [getattr(r, metric) for r in rs]
            if all(math.isnan(y) or (metric in GETEVENTS and y == 0) for y in ys):
                continue            # not measured, or a server with no getevents phase (TUX)
            ax.plot([r.target_rate for r in rs], ys, marker="o", ms=3, label=label)
        if not ax.get_legend_handles_labels()[0]:
            # an empty frame says nothing; one left by an earlier sweep here would say something wrong
            plt.close(fig)
            for fmt in formats:
                (Path(out) / f"{stem}.{fmt}").unlink(missing_ok=True)
            continue
        ax.set_xlabel("Target requests/s")
        ax.set_ylabel(ylabel)
        if ok:
            ax.set_title(f"{ok[0].scenario}")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        written += save_figure(fig, Path(out) / stem, formats)
        plt.close(fig)
    return written

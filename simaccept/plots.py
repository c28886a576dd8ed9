"""Thesis-style figures: one metric against target rate, one line per policy (and per
any other key the sweep varies); seed replicates drawn as their mean with a 95 % interval."""
from __future__ import annotations

import json
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



def mathtext_literal(text: str) -> str:
    """``text`` as matplotlib draws it literally.  A "$" starts mathtext there: a scenario named
    'bad $\\frac$ name' ended a finished sweep in a parse error, on every rerun."""
    return str(text).replace("$", r"\$")


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


#: Swept keys a line's label already shows through :func:`policy_label`, or that are not a
#: line of their own: the x axis, and the seed, whose points are replicates of one line.
_IN_LABEL = ("server.accept_limit", "server.policy", "server.kind")
_NOT_A_LINE = ("workload.rate", "scenario.seed", "scenario.name")


def _flat_config(r) -> dict | None:
    """The record's resolved configuration as dotted key -> JSON value, or None when it has
    none that can be read (an old CSV, a paper row)."""
    try:
        cfg = json.loads(r.config) if r.config else None
    except (ValueError, TypeError):
        return None
    if not isinstance(cfg, dict):
        return None
    return {f"{s}.{k}": json.dumps(v, sort_keys=True) for s, keys in cfg.items() if isinstance(keys, dict)
            for k, v in keys.items()}


def plot_lines(records) -> dict[str, list]:
    """The records of each line of a sweep figure, by legend label.

    A line is a policy (:func:`policy_label`) plus every other configuration key that varies
    among ``records`` (from their resolved ``config``), except the rate on the x axis and
    the seed: a sweep over ``server.mux`` has an "Accept-1, mux=poll" line beside
    "Accept-1, mux=select", where both used to be drawn as "Accept-1", and the points of a
    ``scenario.seed`` axis are replicates of one line (:func:`thesis_plots` draws their mean).
    Lines are told apart by the exact values; the label names a key by its section too
    when two sections have a key of that name.  When any record lacks a readable config,
    all are told apart by their mux, workload and source columns instead."""
    flats = [_flat_config(r) for r in records]
    if any(f is None for f in flats):
        flats = [{"server.mux": json.dumps(r.mux), "workload.kind": json.dumps(r.workload)} for r in records]
    for f, r in zip(flats, records):
        f["record.source"] = json.dumps(r.source)
    keys = sorted(set.intersection(*(set(f) for f in flats))) if flats else []
    shown = [k for k in keys if k not in _NOT_A_LINE and k not in _IN_LABEL and len({f[k] for f in flats}) > 1]
    names = [k.split(".", 1)[1] for k in shown]
    short = {k: (n if names.count(n) == 1 else k) for k, n in zip(shown, names)}
    groups: dict[tuple, list] = defaultdict(list)
    for r, f in zip(records, flats):
        groups[(policy_label(r), *(f[k] for k in shown))].append(r)
    lines: dict[str, list] = {}
    for (label, *vals), rs in groups.items():
        lines.setdefault(", ".join([label, *(f"{short[k]}={_plain(v)}" for k, v in zip(shown, vals))]), []).extend(rs)
    return lines


def throughput_table(records) -> str:
    """The sweep's replies/s as text: one row per target rate, one column per :func:`plot_lines`
    line (in the order the grid first reaches it), so the policies are read side by side as in
    the thesis's figures.  Seed replicates are shown as the mean of their finished points; a
    cell whose every point failed reads ``failed``, one the grid does not have ``-``.  Empty
    when no record has a target rate."""
    rated = [r for r in records if not math.isnan(r.target_rate)]
    if not rated:
        return ""
    lines = plot_lines(rated)
    at = {id(r): i for i, r in enumerate(rated)}
    labels = sorted(lines, key=lambda lb: min(at[id(r)] for r in lines[lb]))
    rates = sorted({r.target_rate for r in rated})
    cells = {}
    most = 1
    for lb in labels:
        by_rate = defaultdict(list)
        for r in lines[lb]:
            by_rate[r.target_rate].append(r)
        for x, rs in by_rate.items():
            most = max(most, len(rs))
            ys = [r.replies_per_s for r in rs if r.status == "ok"]
            cells[lb, x] = f"{sum(ys) / len(ys):,.0f}" if ys else "failed"
    head = ["target req/s", *labels]
    rows = [[f"{x:,.0f}", *(cells.get((lb, x), "-") for lb in labels)] for x in rates]
    width = [max(len(row[i]) for row in [head, *rows]) for i in range(len(head))]
    fmt = "  ".join(f"{{:>{w}}}" for w in width)
    title = "replies/s" + (f" (mean of up to {most} seeds)" if most > 1 else "")
    return "\n".join([title, fmt.format(*head), *(fmt.format(*row) for row in rows)])


def _plain(v: str) -> str:
    """A JSON value as a legend shows it: 30000.0 as 30000, strings unquoted, "" as -;
    other floats in full (repr), so two values are never shown alike."""
    x = json.loads(v)
    if x == "":
        return "-"
    if isinstance(x, float):
        return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)
    return str(x)


def _mean_ci(ys: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % t interval (0 for a single value)."""
    n = len(ys)
    m = sum(ys) / n
    if n < 2:
        return m, 0.0
    from scipy import stats
    sd = math.sqrt(sum((y - m) ** 2 for y in ys) / (n - 1))
    return m, float(stats.t.ppf(0.975, n - 1)) * sd / math.sqrt(n)


def thesis_plots(records, out: Path, formats=("png", "svg")) -> list[Path]:
    """One figure per metric against target rate, one line per :func:`plot_lines` label.
    Replicates (several seeds at one rate) are drawn as their mean with a 95 % interval."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in records if r.status == "ok" and not math.isnan(r.target_rate)]
    lines = plot_lines(ok)
    written = []
    for metric, ylabel, stem in FIGURES:
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        most = 1
        for label, rs in sorted(lines.items()):
            by_x: dict[float, list[float]] = defaultdict(list)
            for r in rs:
                y = getattr(r, metric)
                if not math.isnan(y):
                    by_x[r.target_rate].append(y)
            ys = [y for v in by_x.values() for y in v]
            if not ys or (metric in GETEVENTS and all(y == 0 for y in ys)):
                continue            # not measured, or a server with no getevents phase (TUX)
            xs = sorted(by_x)
            stats = [_mean_ci(by_x[x]) for x in xs]
            most = max(most, max(len(v) for v in by_x.values()))
            ax.errorbar(xs, [m for m, _ in stats], yerr=[h for _, h in stats], marker="o", ms=3, capsize=2,
                        label=mathtext_literal(label))
        if not ax.get_legend_handles_labels()[0]:
            # an empty frame says nothing; one left by an earlier sweep here would say something wrong
            plt.close(fig)
            for fmt in formats:
                (Path(out) / f"{stem}.{fmt}").unlink(missing_ok=True)
            continue
        ax.set_xlabel("Target requests/s")
        ax.set_ylabel(ylabel)
        if ok:
            ax.set_title(mathtext_literal(ok[0].scenario) + (f" (mean of up to {most} seeds, 95 % interval)" if most > 1 else ""),
                         fontsize=10)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        written += save_figure(fig, Path(out) / stem, formats)
        plt.close(fig)
    return written

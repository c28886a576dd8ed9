"""Every figure of thesis chapters 4 and 5, regenerated in simulation by one call.

Chapter 4 plots one server and one workload per figure (throughput, queue
drops, select calls, fds per select, response times against target rate, one
line per accept-limit); chapter 5 puts the μserver and TUX on the same axes and
breaks their queue drops down by category.  Both come from the six sweeps of
``scenarios/thesis/{userver,tux,knot}-{onepacket,specweb}.toml``; each sweep
keeps its points under ``OUT/<scenario>/points``, so a rerun only simulates
what changed and an interrupted run resumes.

``simaccept figures [--out DIR] [--jobs N]`` (or ``make figures``) writes
``DIR/fig4.1.png`` ... ``DIR/fig5.7.png`` and ``DIR/index.md`` (which figure
is which, the sweeps' wall times).  The thesis does not say which request
rates figure 5.5 breaks down; this module uses 22,000, 26,000 and 30,000 req/s.
"""
from __future__ import annotations

import math
import time
from pathlib import Path

from . import bundled
from .plots import policy_label, save_figure
from .sweep import atomic_write, failed_points_message, run_sweep

SCENARIO_DIR = bundled.scenario_dir() / "thesis"     # the checkout's, or the installed package's
SWEEPS = ("userver-onepacket", "userver-specweb", "tux-onepacket", "tux-specweb",
          "knot-onepacket", "knot-specweb")

_M = {"replies": ("replies_per_s", "Replies/s"),
      "drops": ("qdrops_per_s", "Queue drops/s"),
      "select": ("select_calls_per_s", "select calls/s"),
      "fds": ("fds_per_select", "fds returned per select"),
      "resp": ("resp_ms_mean", "Mean response time (ms)")}

#: thesis figure -> (sweeps drawn on it, metric, caption)
CHAPTER4 = {
    "4.1": (["userver-specweb"], "replies", "μserver throughput, SPECweb99-like"),
    "4.2": (["userver-specweb"], "drops", "μserver queue drops, SPECweb99-like"),
    "4.3": (["userver-specweb"], "select", "μserver select calls/s, SPECweb99-like"),
    "4.4": (["userver-specweb"], "fds", "μserver fds returned by select, SPECweb99-like"),
    "4.5": (["userver-specweb"], "resp", "μserver response times, SPECweb99-like"),
    "4.6": (["tux-specweb"], "replies", "TUX throughput, SPECweb99-like"),
    "4.7": (["tux-specweb"], "resp", "TUX response times, SPECweb99-like"),
    "4.8": (["tux-specweb"], "drops", "TUX queue drops, SPECweb99-like"),
    "4.9": (["knot-specweb"], "replies", "Knot throughput, SPECweb99-like"),
    "4.10": (["knot-specweb"], "drops", "Knot queue drops, SPECweb99-like"),
    "4.11": (["knot-specweb"], "resp", "Knot response times, SPECweb99-like"),
    "4.12": (["userver-onepacket"], "replies", "μserver throughput, one-packet"),
    "4.13": (["userver-onepacket"], "drops", "μserver queue drops, one-packet"),
    "4.14": (["userver-onepacket"], "select", "μserver select calls/s, one-packet"),
    "4.15": (["userver-onepacket"], "fds", "μserver fds returned by select, one-packet"),
    "4.16": (["userver-onepacket"], "resp", "μserver response times, one-packet"),
    "4.17": (["tux-onepacket"], "replies", "TUX throughput, one-packet"),
    "4.18": (["tux-onepacket"], "drops", "TUX queue drops, one-packet"),
    "4.19": (["tux-onepacket"], "resp", "TUX response times, one-packet"),
    "4.20": (["knot-onepacket"], "replies", "Knot throughput, one-packet"),
    "4.21": (["knot-onepacket"], "drops", "Knot queue drops, one-packet"),
    "4.22": (["knot-onepacket"], "resp", "Knot response times, one-packet"),
}
CHAPTER5 = {
    "5.1": (["userver-specweb", "tux-specweb"], "replies", "μserver vs TUX throughput, SPECweb99-like"),
    "5.2": (["userver-onepacket", "tux-onepacket"], "replies", "μserver vs TUX throughput, one-packet"),
    "5.3": (["userver-specweb", "tux-specweb"], "drops", "μserver and TUX queue drops, SPECweb99-like"),
    "5.4": (["userver-onepacket", "tux-onepacket"], "drops", "μserver and TUX queue drops, one-packet"),
    "5.6": (["userver-specweb", "tux-specweb"], "resp", "μserver and TUX response times, SPECweb99-like"),
    "5.7": (["userver-onepacket", "tux-onepacket"], "resp", "μserver and TUX response times, one-packet"),
}
BREAKDOWN_RATES = (22000.0, 26000.0, 30000.0)
_DROPS = (("drops_synq_full", "SynQFull"), ("drops_acceptq_full", "AcceptQFull"),
          ("drops_drop_request", "DropRequest"), ("drops_listen_overflow", "ListenOverflow"))


def _log(msg: str) -> None:
    # flushed: under nohup or a pipe a 14-minute run printed nothing until its end
    print(msg, flush=True)


def run_sweeps(out: Path, jobs: int = 1, names=SWEEPS, log=_log) -> tuple[dict, dict]:
    """Run (or resume) the thesis sweeps; returns ({name: records}, {name: wall seconds})."""
    from .scenario import load_scenario
    from .sweep import check_grid_size
    recs, walls = {}, {}
    for i, name in enumerate(names, 1):
        sc = load_scenario(SCENARIO_DIR / f"{name}.toml")
        log(f"figures: {name} ({i}/{len(names)}): {check_grid_size(sc)} points, those in {out / name} already are kept")
        w0 = time.perf_counter()
        recs[name] = run_sweep(sc, out / name, jobs=jobs, warn=False)     # said here, with the sweep's name
        walls[name] = time.perf_counter() - w0
        why = failed_points_message(recs[name])
        log(f"figures: {name}: {len(recs[name])} points in {walls[name]:.1f} s" + (f"; FAILED: {why}" if why else ""))
    return recs, walls


def line_figure(records, metric: str, ylabel: str, title: str, path: Path, formats=("png",)) -> list[Path]:
    """One line per (server, policy) of ``metric`` against target rate."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    lines: dict[str, list] = {}
    for r in records:
        if r.status == "ok":
            lines.setdefault(policy_label(r) if r.server != "userver" else f"μserver {policy_label(r)}",
                             []).append(r)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, rs in sorted(lines.items()):
        rs.sort(key=lambda r: r.target_rate)
        ys = [getattr(r, metric) for r in rs]
        if not all(math.isnan(y) for y in ys):
            ax.plot([r.target_rate for r in rs], ys, marker="o", ms=3, label=label)
    ax.set_xlabel("Target requests/s")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)
    fig.tight_layout()
    out = save_figure(fig, path, formats)
    plt.close(fig)
    return out


def drop_breakdown_figure(records, rates, title: str, path: Path, formats=("png",)) -> list[Path]:
    """Thesis fig. 5.5: stacked drops/s by category, one bar per (server, policy, rate)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bars = sorted((r for r in records if r.status == "ok" and r.target_rate in rates),
                  key=lambda r: (r.target_rate, r.server, policy_label(r)))
    fig, ax = plt.subplots(figsize=(max(6.4, 0.55 * len(bars) + 2), 4.4))
    x = range(len(bars))
    bottom = [0.0] * len(bars)
    for col, name in _DROPS:
        v = [getattr(r, col) / r.duration_s if r.duration_s else math.nan for r in bars]
        ax.bar(x, v, bottom=bottom, label=name)
        bottom = [b + (0.0 if math.isnan(y) else y) for b, y in zip(bottom, v)]
    ax.set_xticks(list(x))
    ax.set_xticklabels([f"{'μserver' if r.server == 'userver' else r.server} "
                        f"{policy_label(r).split(' ', 1)[-1]}\n{r.target_rate / 1000:g}k" for r in bars],
                       fontsize=7, rotation=60, ha="right")
    ax.set_ylabel("Queue drops/s")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = save_figure(fig, path, formats)
    plt.close(fig)
    return out


class NoMatplotlib(ImportError):
    """The figures need matplotlib (the ``plot`` extra), and it cannot be imported."""


def make_figures(out: str | Path = "out/figures", jobs: int = 1, formats=("png",), log=_log) -> dict:
    """Run the six sweeps and write every chapter-4 and chapter-5 figure; returns a summary.
    Raises :class:`NoMatplotlib` before simulating anything when matplotlib is missing (the
    sweeps take minutes, and their figures are the point)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        raise NoMatplotlib(f"the figures are drawn with matplotlib, which cannot be imported ({e}): "
                           "pip install 'simaccept[plot]'") from None
    out = Path(out)
    # the files written after the last sweep: a directory in the place of one was found only
    # then, as a traceback once every sweep had run (run_sweep checks its own files first)
    for name in [f"fig{n}.{fmt}" for n in [*CHAPTER4, *CHAPTER5, "5.5"] for fmt in formats] + ["index.md"]:
        if (out / name).is_dir():
            from .scenario import ScenarioError
            raise ScenarioError("--out", f"{str(out / name)!r} is a directory; simaccept figures writes "
                                         f"{'its index' if name == 'index.md' else 'a figure'} to that file: "
                                         "move it away")
    w0 = time.perf_counter()
    recs, walls = run_sweeps(out, jobs=jobs, log=log)
    try:
        return _draw(out, jobs, formats, log, recs, walls, w0)
    except OSError as e:        # a full disk, a file made read-only meanwhile
        from .sweep import SweepError
        raise SweepError(f"the sweeps are done and cached under {out}, but the figures could not be written: "
                         f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}; rerun to draw them "
                         "(nothing is simulated again)") from None


def _draw(out: Path, jobs: int, formats, log, recs: dict, walls: dict, w0: float) -> dict:
    """The figures and index.md of make_figures from its sweeps' records."""
    written = {}
    for num, (names, m, cap) in {**CHAPTER4, **CHAPTER5}.items():
        metric, ylabel = _M[m]
        rs = [r for n in names for r in recs[n]]
        written[num] = line_figure(rs, metric, ylabel, f"Fig. {num} (simulated): {cap}",
                                   out / f"fig{num}", formats)
    rs = [r for n in ("userver-onepacket", "tux-onepacket") for r in recs[n]]
    written["5.5"] = drop_breakdown_figure(rs, BREAKDOWN_RATES, "Fig. 5.5 (simulated): queue drops by "
                                           "category, μserver and TUX, one-packet", out / "fig5.5", formats)
    wall = time.perf_counter() - w0
    caps = {**{k: v[2] for k, v in CHAPTER4.items()}, **{k: v[2] for k, v in CHAPTER5.items()},
            "5.5": "queue drops by category, μserver and TUX, one-packet, "
                   + ", ".join(f"{r:,.0f}" for r in BREAKDOWN_RATES) + " req/s"}
    order = sorted(written, key=lambda k: tuple(int(x) for x in k.split(".")))
    lines = ["# Thesis chapters 4 and 5, simulated", "",
             f"Regenerated by `simaccept figures --out {out} --jobs {jobs}` in {wall:.1f} s wall "
             "(points already in the sweep folders are not simulated again).", "",
             "| sweep | points | wall s |", "| --- | ---: | ---: |"]
    lines += [f"| {n} | {len(recs[n])} | {walls[n]:.1f} |" for n in SWEEPS]
    lines += ["", "| figure | content | file |", "| --- | --- | --- |"]
    lines += [f"| {k} | {caps[k]} | [{written[k][0].name}]({written[k][0].name}) |" for k in order]
    atomic_write(out / "index.md", "\n".join(lines) + "\n")
    log(f"figures: {len(order)} figures in {out} ({wall:.1f} s)")
    return {"wall_s": wall, "sweep_wall_s": walls, "figures": {k: [str(p) for p in written[k]] for k in order}}

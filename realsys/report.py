"""Summaries of realsys results directories (what the issue asks to show).

    python -m realsys.report realsys/results/onepacket-select [--drops-rate R]

Prints (and with --json returns) per policy the peak reply rate, the reply rate at each
rate past saturation and the ratios between policies there, the generator's worst
offered-vs-target error, and the drop breakdown (thesis table 5.1) at one overloaded rate.
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

from .loadgen import requests_per_conn
from .runner import ResultsFileError, read_rows


#: Point-label axes a series name already carries (or, for the seed, that repetitions vary).
_NAMED_AXES = ("workload.rate", "server.kind", "server.mux", "server.accept_limit", "realsys.httperf", "scenario.seed")


#: Config keys that do not make a different series: the seed (repetitions vary it), the rate
#: (the x axis), and the scenario's name and batch count (bookkeeping).
_NOT_SERIES_KEYS = frozenset({"scenario.seed", "workload.rate", "scenario.name", "scenario.batches"})


def _flat_config(r) -> dict[str, object]:
    try:
        cfg = json.loads(r.get("config") or "{}")
    except ValueError:
        return {}
    return {f"{sec}.{k}": json.dumps(v) for sec, vals in cfg.items() if isinstance(vals, dict)
            for k, v in vals.items() if f"{sec}.{k}" not in _NOT_SERIES_KEYS}


def series_label(r) -> str:
    """A row's series by its own columns: server, mux, accept-limit, httperf, and every other axis
    its point label sweeps (``_series`` adds the config keys in which a folder's rows differ)."""
    lab = f"{r['server']}/{r['mux'] or '-'}/accept-{r['accept_limit']}"
    if r.get("config") and '"httperf": true' in r["config"]:
        lab += "/httperf"
    for part in (r.get("point") or "").split(";"):
        if "=" in part and part.split("=", 1)[0] not in _NAMED_AXES:
            lab += "/" + part
    return lab


def _series(rows):
    """Finished rows by series name and target rate.  A series is a server, mux and
    accept-limit, plus every other axis the scenario sweeps (e.g. ``client.timeout=0.25``),
    plus any other key in which its rows' configs differ: rows that differ only in their seed
    are repetitions of one point, the rest are not.  Two runs into one folder with another
    ``--set realsys.spin_us`` were averaged as repetitions (395 ± 148 replies/s of a 500/s
    and a 290/s server).  A key a row's config lacks (written before the key existed) is no
    difference."""
    grouped: dict[str, list] = {}
    for r in rows:
        if r.get("status") != "ok":
            continue
        # a simulated row of the same config is not a repetition of a measured one
        src = r.get("source") or "real"
        grouped.setdefault(series_label(r) + ("" if src == "real" else f"/{src}"), []).append(r)
    out: dict[str, dict[float, dict]] = {}
    for lab, rs in grouped.items():
        flats = [_flat_config(r) for r in rs]
        axes = set().union(*flats) - {p.split("=", 1)[0] for r in rs for p in (r.get("point") or "").split(";")}
        differ = sorted(k for k in axes if len({f[k] for f in flats if k in f}) > 1)
        for r, f in zip(rs, flats):
            name = lab + "".join(f"/{k}={json.loads(f[k]) if k in f else '?'}" for k in differ)
            out.setdefault(name, {}).setdefault(float(r["target_rate"]), []).append(r)
    return out


#: A rate is past saturation once some policy replies to less than this share of it.
SATURATED = 0.97
#: The columns a summary computes with, each a number (or empty: not measured) in an ok row.
_NUMERIC = ("target_rate", "replies_per_s", "conn_attempts_per_s", "duration_s", "select_calls_per_s")
#: The columns every finished row has measured, finite: a target, a window and what it gave.
_MEASURED = ("target_rate", "replies_per_s", "duration_s")


def _finite_or_null(o):
    """``o`` with every NaN or infinite float (nested in dicts, lists, tuples) as None: --json
    printed NaN (the spread of a single run), which JSON does not have and strict readers refuse."""
    if isinstance(o, float):
        return o if math.isfinite(o) else None
    if isinstance(o, dict):
        return {k: _finite_or_null(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_finite_or_null(v) for v in o]
    return o


def _check_numbers(path: Path, rows) -> None:
    """Raise ResultsFileError naming the line and column of an ok row whose number is not one
    (a file edited by hand): it used to end the report in a float() traceback."""
    for i, r in enumerate(rows, start=2):
        if r.get("status") != "ok":
            continue
        for k in _NUMERIC:
            v = r.get(k)
            if v in (None, "") and k not in ("target_rate", "replies_per_s"):
                continue
            try:
                x = float(v)
            except (TypeError, ValueError):
                raise ResultsFileError(f"{path}: line {i}, column {k}: {v!r} is not a number") from None
            # "nan" passed float(): "peak nan replies/s", exit 0; a zero duration, a rate of nothing
            if k in _MEASURED and not (math.isfinite(x) and (x > 0 if k != "replies_per_s" else x >= 0)):
                raise ResultsFileError(f"{path}: line {i}, column {k}: {v!r} in a finished row (status ok): "
                                       f"must be a finite number {'>= 0' if k == 'replies_per_s' else '> 0'}")


#: A point file is a few kB; anything past this is not one (``/dev/zero`` read until MemoryError).
MAX_POINT_BYTES = 64 << 20


def read_point_file(f: Path) -> dict:
    """A ``points/*.json`` file's object.  Raises ResultsFileError naming the file when it is not
    one (a directory, a device, not UTF-8 or not JSON, not an object, or an object whose ``drops``
    or ``server_stats`` is not one): the report ended in a traceback."""
    from simaccept.sweep import read_regular
    try:
        x = json.loads(read_regular(f, MAX_POINT_BYTES).decode("utf-8"))
    except OSError as e:
        raise ResultsFileError(f"{f}: cannot read it ({e.strerror or e})") from None
    except ValueError as e:     # read_regular's refusals, UnicodeDecodeError and JSONDecodeError
        raise ResultsFileError(f"{f}: not a point file ({e}); move it away") from None
    if not isinstance(x, dict):
        raise ResultsFileError(f"{f}: not a point file (a JSON {type(x).__name__}, not an object); move it away")
    for k in ("drops", "server_stats"):
        if x.get(k) is not None and not isinstance(x[k], dict):
            raise ResultsFileError(f"{f}: not a point file ({k} is a JSON {type(x[k]).__name__}, not an object); "
                                   "move it away")
    return x


def _mean(rows, key):
    v = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    return sum(v) / len(v) if v else math.nan


def _sd(rows, key):
    v = [float(r[key]) for r in rows if r.get(key) not in (None, "")]
    if len(v) < 2:
        return math.nan
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def _point_file_of(row: dict, point_files: list[dict]) -> dict | None:
    """The point file of a results.csv row: by its label and by config too (two series of one
    point label, another --set realsys.spin_us, were both shown the first one's).  Point files
    before 2026-12-04 lack the config, and the seeds of one label share it: among several, the
    one whose generators' launch rate is the row's ``conn_attempts_per_s`` (the runner copies
    it), else the first (every seed's row was shown the first seed's file)."""
    same = [x for x in point_files if x.get("point") == row["point"] and x.get("sysctls") is not None
            and x.get("config", row.get("config")) == row.get("config")]
    if len(same) > 1:
        try:
            want = float(row.get("conn_attempts_per_s") or "nan")
        except ValueError:
            want = math.nan
        for x in same:
            g = x.get("generator") or {}
            got = g.get("achieved_rate_mid") or g.get("achieved_rate_window") or g.get("achieved_rate")
            if isinstance(got, (int, float)) and math.isclose(got, want, rel_tol=1e-9):
                return x
    return same[0] if same else None


def launch_lag_summary(rows: list[dict], point_files: list[dict]) -> dict:
    """How late our generators launched against their schedule: over the point files of the
    labels of the finished rows, those with the histogram (httperf's have none), the points,
    the median and the largest 99th percentile (ms), and how many points' passed the runner's
    :data:`~realsys.runner.LAUNCH_LAG_NOTE_MS` (the worst named).  By file, not by row: the
    seeds of one label share it, and point files before 2026-12-04 give no way to tell which
    seed's row a file is (deterministic arrivals launch at the same rate at every seed)."""
    from .runner import LAUNCH_LAG_NOTE_MS
    labels = {row["point"] for row in rows if row.get("status") == "ok"}
    lags = []
    for x in point_files:
        lag = (x.get("generator") or {}).get("launch_lag_us")
        p99 = lag.get("p99") if isinstance(lag, dict) else None
        if x.get("point") in labels and isinstance(p99, (int, float)) and math.isfinite(p99):
            lags.append((p99 / 1e3, x.get("point")))
    if not lags:
        return {"points": 0}
    ms = sorted(x for x, _ in lags)
    worst = max(lags)
    return {"points": len(ms), "p99_ms_median": ms[len(ms) // 2], "p99_ms_max": worst[0], "worst_point": worst[1],
            "note_ms": LAUNCH_LAG_NOTE_MS, "points_over_note": sum(x > LAUNCH_LAG_NOTE_MS for x in ms)}


def label_order(label: str) -> tuple:
    """A point label's sort key: its numbers as numbers (decimals too: 0.25 before 0.5), and
    ``inf`` after every number (accept-1, accept-2, accept-10, accept-inf)."""
    out = []
    for t in re.split(r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|(?<![A-Za-z])inf(?![A-Za-z]))", label):
        if not t:
            continue
        if t == "inf":
            out.append((1, math.inf, ""))
        elif t[0].isdigit():
            out.append((0, float(t), ""))
        else:
            out.append((2, 0.0, t))
    return tuple(out)


def summarize(results_dir: str | Path, drops_rate: float | None = None) -> dict:
    d = Path(results_dir)
    rows = read_rows(d / "results.csv")
    _check_numbers(d / "results.csv", rows)
    ser = _series(rows)
    summary: dict = {"dir": str(d), "policies": {}, "rows_ok": sum(r.get("status") == "ok" for r in rows),
                     "rows_failed": sum(r.get("status") == "failed" for r in rows)}
    peak_all = 0.0
    for lab, pts in ser.items():
        rates = sorted(pts)
        rep = {r: _mean(pts[r], "replies_per_s") for r in rates}
        sd = {r: _sd(pts[r], "replies_per_s") for r in rates}
        peak_r = max(rep, key=rep.get)
        peak_all = max(peak_all, rep[peak_r])
        # launches against the connections the target asks for: a SPECweb99-like target of
        # 8,000 requests/s is 8,000 / 7.3 sessions/s (it was compared with 8,000: "86 % error")
        # (an empty cell is "not measured": with none, nan, not a traceback)
        worst = max((abs(float(x["conn_attempts_per_s"]) - c) / c for r in rates for x in pts[r]
                     if x["conn_attempts_per_s"] for c in (r / requests_per_conn(x.get("workload", "one-packet")),)),
                    default=math.nan)
        summary["policies"][lab] = {"peak_replies_per_s": rep[peak_r], "peak_at_rate": peak_r,
                                    "replies_per_s": rep, "replies_per_s_sd": sd, "runs_per_rate":
                                    {r: len(pts[r]) for r in rates}, "generator_max_rel_error": worst}
    # saturation: the lowest rate where some policy replies < SATURATED of the target
    all_rates = sorted({r for pts in ser.values() for r in pts})
    sat = next((r for r in all_rates if any(r in p and _mean(p[r], "replies_per_s") < SATURATED * r
                                            for p in ser.values())), None)
    summary["saturation_rate"] = sat
    past = [r for r in all_rates if sat is not None and r >= sat]
    summary["rates_past_saturation"] = past
    # later label over earlier, numbers in a label compared as numbers: accept-10 / accept-1,
    # accept-inf / accept-10, as the results page tabulates them (alphabetical a / b gave
    # accept-1 / accept-inf, and put accept-10 before accept-2)
    labs = sorted(ser, key=label_order)
    ratios = {}
    for i, a in enumerate(labs):
        for b in labs[i + 1:]:
            rr = {r: _mean(ser[b][r], "replies_per_s") / _mean(ser[a][r], "replies_per_s")
                  for r in past if r in ser[a] and r in ser[b] and _mean(ser[a][r], "replies_per_s") > 0}
            if rr:
                ratios[f"{b} / {a}"] = rr
    summary["ratios_past_saturation"] = ratios
    point_files = None
    if (d / "points").is_dir():     # each read once, in the directory's order (the first match is shown)
        point_files = [read_point_file(f) for f in (d / "points").glob("*.json")]
    summary["generator_launch_lag"] = launch_lag_summary(rows, point_files or [])
    # drop breakdown at one overloaded rate
    if past:
        dr = drops_rate if drops_rate is not None else past[min(len(past) - 1, 2)]
        table = {}
        for lab, pts in ser.items():
            if dr not in pts:
                continue
            # by config too: two series of one point label (another --set realsys.spin_us) were
            # both shown the first one's drops; point files before 2026-12-04 lack it (label alone)
            row = pts[dr][0]
            h = _point_file_of(row, point_files or [])
            if h:
                dd = h.get("drops") or {}
                table[lab] = {k: dd.get(k) for k in ("AcceptQFull", "DropRequest", "ListenOverflow", "SynQFull",
                                                     "total", "ListenDrops", "ListenOverflows", "source")}
                table[lab]["duration_s"] = float(pts[dr][0]["duration_s"] or math.nan)   # empty: not measured
                ss = h.get("server_stats") or {}
                table[lab]["select_calls_per_s"] = float(pts[dr][0]["select_calls_per_s"] or math.nan)
                table[lab]["replies_per_s"] = float(pts[dr][0]["replies_per_s"])
                table[lab]["work_items_per_phase"] = ss.get("work_items_per_phase")
                table[lab]["c_avg"] = ss.get("c_avg")
                # thesis table 4.8's "accepted, never completed": accepts and replies in one window.
                # It is also what a server still holds at the window's end (knot's threads hold
                # thousands), so the connections open then are printed beside it.  Only where a
                # connection carries one request: a SPECweb99-like session's 7.3 replies per
                # accept printed as "-625 % unanswered"
                acc = ss.get("accepts")
                one_req = requests_per_conn(pts[dr][0].get("workload", "one-packet")) == 1
                table[lab]["accepted_unanswered_pct"] = (100.0 * (acc - ss.get("replies", 0)) / acc
                                                         if acc and one_req else None)
                table[lab]["open_conns_at_end"] = ss.get("open_conns_now")
        summary["drops_at_rate"] = dr
        summary["drops"] = table
    return summary


def main(argv=None, prog: str = "python -m realsys.report") -> int:
    try:
        return _main(argv, prog)
    except KeyboardInterrupt:       # a big folder takes a while: Ctrl-C printed a traceback
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130


def _parser(prog: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=prog, description="a results folder's summary: peaks, ratios past "
                                 "saturation, drops")
    ap.add_argument("dirs", nargs="+", metavar="DIR",
                    help="results folder of python -m realsys run --out DIR (its results.csv and points/); several "
                         "are summarised one after another")
    ap.add_argument("--drops-rate", type=float, default=None, metavar="REQ_PER_S",
                    help="target rate whose queue drops are broken down per policy; it must be one of the folder's "
                         "rates past saturation (default: the third of them, or the highest when fewer)")
    ap.add_argument("--json", action="store_true", help="print the folder's summary as one JSON object; "
                    "with several folders, one JSON list of them, in the order given")
    return ap


def _main(argv=None, prog: str = "python -m realsys.report") -> int:
    ap = _parser(prog)
    a = ap.parse_args(argv)
    if a.drops_rate is not None and not (math.isfinite(a.drops_rate) and a.drops_rate > 0):
        ap.error(f"--drops-rate {a.drops_rate:g}: must be a finite target rate > 0 (req/s)")
    for d in a.dirs:        # a typo must not read as an empty result
        if not (Path(d) / "results.csv").is_file():
            ap.error(f"{d}: no results.csv there (a results directory of python -m realsys run --out DIR)")
        if (Path(d) / "results.csv").stat().st_size == 0:     # it read as "0 finished rows"
            ap.error(f"{d}: results.csv is empty (not even a header)")
    rc = 0
    summaries: list[dict] = []
    for d in a.dirs:
        try:
            s = summarize(d, a.drops_rate)
        except ResultsFileError as e:
            ap.error(str(e))
        if a.drops_rate is not None and a.drops_rate not in s["rates_past_saturation"]:
            # a drops section silently left out read as "no drops"
            ap.error(f"--drops-rate {a.drops_rate:g}: {d} has no finished point past saturation at that rate "
                     f"(rates past saturation: {', '.join(f'{r:g}' for r in s['rates_past_saturation']) or 'none'})")
        if not s["rows_ok"]:
            rc = 1
        if a.json:      # several were printed one after another: no JSON reader took them
            summaries.append(_finite_or_null(s))
            continue
        print(f"== {d}")
        if s["rows_failed"] or not s["rows_ok"]:
            print(f"  {s['rows_ok']} finished rows; {s['rows_failed']} failed rows, left out (the error column of "
                  f"results.csv says why; a rerun measures their points again)")
        for lab, p in sorted(s["policies"].items()):
            print(f"  {lab:32s} peak {p['peak_replies_per_s']:8.0f} replies/s at {p['peak_at_rate']:g}; "
                  f"generator max error {100 * p['generator_max_rel_error']:.2f} %")
            print("      " + ", ".join(f"{r:g}: {v:.0f}" + (f"±{p['replies_per_s_sd'][r]:.0f}"
                                                              if not math.isnan(p['replies_per_s_sd'][r]) else "")
                                       for r, v in p["replies_per_s"].items()))
        lag = s["generator_launch_lag"]
        if lag["points"]:
            print(f"  generator launch lag p99: median {lag['p99_ms_median']:.1f} ms, max {lag['p99_ms_max']:.1f} ms "
                  + (f"({lag['worst_point']})" if lag["worst_point"] else "")
                  + f"; {lag['points_over_note']} of {lag['points']} points over "
                  f"{lag['note_ms']:g} ms")
        if s["saturation_rate"] is None:     # it printed "saturation at None; past it: []"
            print(f"  no saturation: every policy replied at least {100 * SATURATED:.0f} % of the target rate at every rate")
        else:
            print(f"  saturation at {s['saturation_rate']:g} req/s; past it: "
                  + ", ".join(f"{r:g}" for r in s["rates_past_saturation"]))
        for k, rr in s["ratios_past_saturation"].items():
            print(f"  {k}: " + ", ".join(f"{r:g}: {v:.3f}" for r, v in rr.items()))
        if s.get("drops"):
            print(f"  drops at {s['drops_at_rate']:g} req/s (counts over the measured window):")
            for lab, t in sorted(s["drops"].items()):
                print(f"    {lab:32s} AcceptQFull {t['AcceptQFull']}  DropRequest {t['DropRequest']}  "
                      f"ListenOverflow {t['ListenOverflow']}  SynQFull {t['SynQFull']}  total {t['total']}  "
                      f"select/s {t['select_calls_per_s']:.0f}  work/phase {t['work_items_per_phase']}"
                      + (f"  accepted-unanswered-in-window {t['accepted_unanswered_pct']:.2f} %"
                         + (f" (open at its end {t['open_conns_at_end']})" if t.get("open_conns_at_end") is not None
                            else "")
                         # accepts less replies in one window: the window's replies to warm-up
                         # accepts make it negative (-0.04 % beside 389 open read as a contradiction)
                         + (" (below 0: replies in the window to connections accepted before it)"
                            if t["accepted_unanswered_pct"] < 0 else "")
                         if t.get("accepted_unanswered_pct") is not None else "")
                      + ("  [counters only, no bpftrace: AcceptQFull includes ListenOverflow]"
                         if t.get("source") == "counters only" else ""))
    if a.json:
        print(json.dumps(summaries[0] if len(summaries) == 1 else summaries, indent=1, default=str, allow_nan=False))
    return rc


if __name__ == "__main__":
    raise SystemExit(main())

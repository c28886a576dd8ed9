"""Two measurements of the same realsys scenarios side by side: does a host reproduce its runs?

    python -m realsys.compare BEFORE AFTER [--metric replies_per_s] [--from-rate R] [--json]

BEFORE and AFTER each hold results folders by name (``realsys/results`` and the ``RESULTS=DIR``
of ``validation/measure_realsys.sh``), or are two results folders themselves.  Rows are paired
by folder, point label (less a seed axis) and seed, and only finished rows (``status = ok``) pair; a folder or a
row that one side lacks is counted, not guessed.  For each folder and series (server, event
mechanism, accept-limit) it gives the ratio AFTER / BEFORE of the metric: median, smallest and
largest, at every rate and at rates of at least ``--from-rate`` (past saturation, where the
policies differ and the noise is largest).

A VM's speed moves from day to day (a bare SimPy loop ran 0.997 M events/s on 1 Dec and 2.45 M
on 24 Nov, benchmarks/README.md), and a host's cost profile is fitted to one day's runs: this is
how far that day's figures carry to another.
"""
from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

from . import results_path
from .report import _check_numbers, series_label
from .rowconfig import resolved_doc
from .runner import ResultsFileError, read_rows


def _folders(root: Path) -> dict[str, Path]:
    """Results folders under ``root`` by name (``root`` itself if it is one)."""
    if (root / "results.csv").is_file():
        return {root.name: root}
    return {d.name: d for d in sorted(root.iterdir()) if (d / "results.csv").is_file()} if root.is_dir() else {}


def _num(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _key(r: dict) -> tuple[str, str]:
    """A row's pairing key: its point label less any ``scenario.seed`` term, and its seed.
    Replicates made as a seed axis (``scenario.seed=[11,12,13]``) label their points with it,
    and paired with nothing in a folder of one run per seed (the committed ``*-reps``)."""
    label = ";".join(t for t in (r["point"] or "").split(";") if not t.startswith("scenario.seed="))
    return label, r.get("seed") or ""


def _config_diff(a: str, b: str, defaults: dict) -> list[str]:
    """The ``section.key`` names whose values differ between two rows' configs, each read as
    this version writes it (a key one row predates at its default); ``["config"]`` when either
    is not a JSON table."""
    da, db = resolved_doc(a, defaults), resolved_doc(b, defaults)
    if da is None or db is None:
        return [] if a == b else ["config"]
    out = []
    for sec in sorted(set(da) | set(db)):
        va, vb = da.get(sec), db.get(sec)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += [f"{sec}.{k}" for k in sorted(set(va) | set(vb), key=str) if va.get(k) != vb.get(k)]
        elif va != vb:
            out.append(sec)
    return out


def _by_key(path: Path) -> dict:
    """A results file's rows by (point, seed).  Two finished rows of one key with another config
    or source are refused (ValueError): the last one silently stood for both, so a folder of two
    series (another --set realsys.spin_us) paired every point with the other series.  A rerun's
    finished row replaces a failed one."""
    out: dict = {}
    rows = read_rows(path)
    _check_numbers(path, rows)          # a finished row's NaN paired as nothing, exit 0
    for r in rows:
        k = _key(r)
        old = out.get(k)
        if old is not None and old.get("status") == "ok" and r.get("status") == "ok" and \
                (old.get("config"), old.get("source")) != (r.get("config"), r.get("source")):
            raise ValueError(f"{path}: point {k[0] or '(single point)'} seed {k[1] or '-'} has two finished rows "
                             f"of other configs or sources; compare folders of one configuration each")
        if old is None or r.get("status") == "ok" or old.get("status") != "ok":
            out[k] = r
    return out


def compare(before: str | Path, after: str | Path, metric: str = "replies_per_s",
            from_rate: float | None = None) -> dict:
    """Pairs and ratio summaries (see the module docstring).  Raises ResultsFileError for a
    results file that is not one, ValueError when the two sides share no folder."""
    if from_rate is not None and not (math.isfinite(from_rate) and from_rate > 0):
        # -1 gave a column headed "from -1 req/s", the same as every rate
        raise ValueError(f"--from-rate: must be a finite rate > 0, got {from_rate!r}")
    before, after = results_path(before), results_path(after)
    for side in (before, after):
        if not Path(side).is_dir():
            raise ValueError(f"{side}: " + ("a file, not a results folder" if Path(side).exists() else "no such folder"))
    bf, af = _folders(Path(before)), _folders(Path(after))
    if (Path(before) / "results.csv").is_file() and (Path(after) / "results.csv").is_file():
        af = {Path(before).name: Path(after)}      # two results folders: each other's, whatever the names
    common = sorted(set(bf) & set(af))
    if not common:
        raise ValueError(f"no results folder in both {before} ({', '.join(bf) or 'none'}) and "
                         f"{after} ({', '.join(af) or 'none'})")
    pairs, unpaired = [], {"before_only": 0, "after_only": 0, "not_ok": 0}
    # pairs whose configs differ (another realsys.spin_us, scenario.duration): compared, but
    # said, since the table reads as the same runs measured twice
    differs: dict[str, int] = {}
    n_differ = 0
    from simaccept.scenario import load_scenario
    defaults = load_scenario(text="").values
    for name in common:
        rb, ra = _by_key(bf[name] / "results.csv"), _by_key(af[name] / "results.csv")
        unpaired["before_only"] += len(rb.keys() - ra.keys())
        unpaired["after_only"] += len(ra.keys() - rb.keys())
        for k in sorted(rb.keys() & ra.keys()):
            b, a = rb[k], ra[k]
            if b.get("status") != "ok" or a.get("status") != "ok":
                unpaired["not_ok"] += 1
                continue
            if metric not in b or metric not in a:
                raise ValueError(f"{name}: no {metric!r} column")
            vb, va = _num(b[metric]), _num(a[metric])
            for v, x in ((vb, b[metric]), (va, a[metric])):
                if math.isnan(v) and x.strip().lower() not in ("", "nan"):
                    # a text column (host, error) gave a table of dashes and exit 0
                    raise ValueError(f"{name}: --metric {metric!r} is not a numeric column (a row holds {x[:40]!r})")
            ok = math.isfinite(vb) and vb > 0 and math.isfinite(va)
            keys = _config_diff(b.get("config") or "", a.get("config") or "", defaults)
            n_differ += bool(keys)
            for key in keys:
                differs[key] = differs.get(key, 0) + 1
            pairs.append({"folder": name, "series": series_label(b), "point": k[0], "seed": k[1],
                          "target_rate": _num(b.get("target_rate")),
                          "before": vb if math.isfinite(vb) else None, "after": va if math.isfinite(va) else None,
                          "ratio": va / vb if ok else None})

    def summary(ps):
        rs = sorted(p["ratio"] for p in ps if p["ratio"] is not None)
        if not rs:
            return {"n": 0, "median": None, "min": None, "max": None}
        return {"n": len(rs), "median": statistics.median(rs), "min": rs[0], "max": rs[-1]}

    groups: dict[tuple[str, str], list[dict]] = {}
    for p in pairs:
        groups.setdefault((p["folder"], p["series"]), []).append(p)
    past = (lambda p: p["target_rate"] >= from_rate) if from_rate is not None else (lambda p: True)
    if from_rate is not None and pairs and not any(past(p) for p in pairs):
        # above every rate: an empty column and exit 0
        raise ValueError(f"--from-rate: {from_rate:g} req/s is above every paired run's target rate "
                         f"(the highest: {max(p['target_rate'] for p in pairs):g})")
    rows = [{"folder": f, "series": s, "all": summary(ps), "past": summary([p for p in ps if past(p)])}
            for (f, s), ps in groups.items()]
    return {"before": str(before), "after": str(after), "metric": metric, "from_rate": from_rate,
            "folders": common, "folders_before_only": sorted(set(bf) - set(af)),
            "folders_after_only": sorted(set(af) - set(bf)), "unpaired": unpaired,
            "config_differs": dict(sorted(differs.items())), "pairs_config_differs": n_differ,
            "overall": {"all": summary(pairs), "past": summary([p for p in pairs if past(p)])},
            "series": rows, "pairs": pairs}


def markdown(c: dict) -> str:
    def f(s):
        if not s["n"]:
            return "– | – | 0"
        return f"{s['median']:.3f} | {s['min']:.3f} – {s['max']:.3f} | {s['n']}"
    fr = c["from_rate"]
    past = f"from {fr:g} req/s" if fr is not None else "every rate"
    L = [f"`{c['metric']}` after / before ({c['after']} over {c['before']}); pairs by folder, point "
         "(less a seed axis) and seed; "
         f"unpaired: {c['unpaired']['before_only']} before only, {c['unpaired']['after_only']} after only, "
         f"{c['unpaired']['not_ok']} not finished on one side"
         # a folder one side lacks was listed only in --json: the table looked complete
         + "".join(f"; folders {side} only: {', '.join(c[k])}" for side, k in
                   (("before", "folders_before_only"), ("after", "folders_after_only")) if c[k]) + ".", "",
         f"| folder | series | median (all rates) | range | pairs | median ({past}) | range | pairs |",
         "|---|---|---|---|---|---|---|---|"]
    for r in c["series"]:
        L.append(f"| {r['folder']} | {r['series']} | {f(r['all'])} | {f(r['past'])} |")
    L.append(f"| **all** | | {f(c['overall']['all'])} | {f(c['overall']['past'])} |")
    if c.get("config_differs"):
        L += ["", f"Not the same runs measured twice: the configs of {c['pairs_config_differs']} of the "
                  f"{len(c['pairs'])} pairs differ, in "
              + ", ".join(f"{k} ({v} pairs)" for k, v in c["config_differs"].items()) + "."]
    return "\n".join(L) + "\n"


def main(argv=None, prog: str = "python -m realsys.compare") -> int:
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    ap.add_argument("before", help="folder of results folders (or one results folder): the earlier runs")
    ap.add_argument("after", help="the same layout: the runs to compare with them")
    ap.add_argument("--metric", default="replies_per_s", help="results.csv column (default replies_per_s)")
    ap.add_argument("--from-rate", type=float, default=None,
                    help="also summarise the pairs at target rates >= this (past saturation)")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON (every pair)")
    a = ap.parse_args(argv)
    try:
        c = compare(a.before, a.after, a.metric, a.from_rate)
    except (ResultsFileError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.json:
        print(json.dumps(c, indent=1))
    else:
        sys.stdout.write(markdown(c))
    if not c["pairs"]:
        # a table of dashes and status 0 read as a comparison made (report: 1 when none finished)
        print("error: no point finished on both sides: nothing compared", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Are two `python -m validation report` directories the same results?  The check behind
`validation.report.SAME_RESULTS` (docs/guarantees.md, *Determinism*).

A change to model code moves the model fingerprint, and every committed analysis then reads as
stale.  A change that only raises where a run went ahead before, or only checks input, can be
shown to move no result: simulate the whole report again from an empty cache at the new code,

    python -m validation report --real-profile realsys-linux6 --out NEW --cache EMPTY --jobs 2

(about 100 min on two idle CPUs), then

    python tools/same_report.py docs/validation NEW

compares, value by value, every cell of `cells.csv`, every row of `realsys-heldout.csv` and
every key of `summary.json` but the two that name the run (`generated_at`,
`model_fingerprint`).  The headlines the report copies from the other analyses' files in its own
directory (seeds, window, sensitivity, SPECweb99 idle) are null in a fresh output directory,
which has no such files: one that is null or absent on one side is listed, not failed.

A change shown to move only some fields of the record (`validation.report.SAME_RESULTS_BUT`) is
compared with `--moved FIELD` (repeatable): a `cells.csv` row of that metric may differ in its
prediction, error and verdict, and a summary value whose key path names the field may differ;
each such change is listed, not failed.  Every other cell must still be the same.

Exit 0: the same.  Exit 1: something differs (each difference printed).  Exit 2: a directory
lacks a file or one cannot be read.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from simaccept.record import RunRecord  # noqa: E402
from validation.report import DIRECTORY_SUMMARIES  # noqa: E402

TABLES = ("cells.csv", "realsys-heldout.csv")
#: Summary keys that name the run, not its results.
RUN_KEYS = ("generated_at", "model_fingerprint")
#: Summary keys copied from other analyses' files in the report's directory (null without them).
DIRECTORY_KEYS = tuple(DIRECTORY_SUMMARIES)


class ReportFileError(ValueError):
    """A report file that is not one; the message names it."""


#: No report file comes near this (cells.csv is about 100 kB); /dev/zero was read until MemoryError.
MAX_BYTES = 256 << 20


def _regular(path: Path) -> None:
    """ReportFileError unless ``path`` is a regular file no larger than :data:`MAX_BYTES` (a missing
    one, or a directory, is left to open(), which names it)."""
    import stat
    try:
        st = path.stat()
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
        raise ReportFileError(f"{path}: not a regular file")
    if st.st_size > MAX_BYTES:
        raise ReportFileError(f"{path}: larger than {MAX_BYTES:,} bytes, not a report file")


def _rows(path: Path) -> list[list[str]]:
    _regular(path)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except (UnicodeDecodeError, csv.Error) as e:
        raise ReportFileError(f"{path}: not a report table ({e})") from None
    if not rows:        # two empty files were "the same: cells.csv -1 rows"
        raise ReportFileError(f"{path}: empty, not a report table (no header row)")
    return rows


def _summary(path: Path) -> dict:
    _regular(path)
    try:
        s = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ReportFileError(f"{path}: not a report summary ({e})") from None
    if not isinstance(s, dict):
        raise ReportFileError(f"{path}: not a report summary (a JSON {type(s).__name__}, not an object)")
    return s


#: The columns of a table row a moved metric may change: the simulated value and what follows from it.
MOVED_COLUMNS = ("predicted", "error", "ok")


def _moved_row(header: list[str], x: list[str] | None, y: list[str] | None, moved: tuple[str, ...]) -> bool:
    """True if rows ``x`` and ``y`` are one cell of a moved metric differing only in :data:`MOVED_COLUMNS`."""
    if not moved or x is None or y is None or "metric" not in header or len(x) != len(header) or len(y) != len(header):
        return False
    m = header.index("metric")
    if x[m] != y[m] or x[m] not in moved:
        return False
    return all(u == v for h, u, v in zip(header, x, y) if h not in MOVED_COLUMNS)


def table_differences(name: str, a: list[list[str]], b: list[list[str]],
                      moved: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(differences, notes): one line per row of ``a`` and ``b`` that differs (a row present in one
    only included), a note where the row is a ``moved`` metric's and differs only in its
    :data:`MOVED_COLUMNS`; ([], []) when the tables are equal, header and all."""
    out, notes = [], []
    header = a[0] if a else []
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x != y:
            what = "header" if i == 0 else f"row {i}"
            if i > 0 and a[0:1] == b[0:1] and _moved_row(header, x, y, moved):
                notes.append(f"{name} {what}: moved as declared: {x} != {y}")
            else:
                out.append(f"{name} {what}: {x} != {y}")
    return out, notes


_ABSENT = object()


def _leaves(v, path: str = "") -> dict[str, object]:
    if isinstance(v, dict):
        return {k: x for key, sub in v.items() for k, x in _leaves(sub, f"{path}/{key}").items()}
    if isinstance(v, list):
        return {k: x for i, sub in enumerate(v) for k, x in _leaves(sub, f"{path}[{i}]").items()}
    return {path: v}


def summary_differences(a: dict, b: dict, moved: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(differences, notes): every key but :data:`RUN_KEYS` is compared, except that a
    :data:`DIRECTORY_KEYS` key null or absent on one side is a note, and so is a key whose
    differing values all lie under a path naming a ``moved`` field."""
    diff, notes = [], []
    for k in sorted(a.keys() | b.keys()):
        x, y = a.get(k), b.get(k)
        if k in RUN_KEYS or x == y:
            continue
        if k in DIRECTORY_KEYS and (x is None or y is None):
            notes.append(f"summary.json {k}: only in the {'first' if y is None else 'second'} "
                         "(read from its directory's files)")
            continue
        if moved:
            lx, ly = _leaves(x, k), _leaves(y, k)
            paths = sorted(p for p in lx.keys() | ly.keys() if lx.get(p, _ABSENT) != ly.get(p, _ABSENT))
            if paths and all(any(f in p.split("/") for f in moved) for p in paths):
                notes += [f"summary.json {p}: moved as declared: {json.dumps(lx.get(p))} != {json.dumps(ly.get(p))}"
                          for p in paths]
                continue
        diff.append(f"summary.json {k}: {json.dumps(x)[:200]} != {json.dumps(y)[:200]}")
    return diff, notes


def compare(first: Path, second: Path, moved: tuple[str, ...] = ()) -> tuple[list[str], list[str], dict[str, int]]:
    """(differences, notes, {table: data rows compared}); FileNotFoundError if a file is missing."""
    diffs, notes, counts = [], [], {}
    for name in TABLES:
        a, b = _rows(first / name), _rows(second / name)
        d, n = table_differences(name, a, b, moved)
        diffs, notes = diffs + d, notes + n
        counts[name] = max(len(a), len(b)) - 1
    sa, sb = _summary(first / "summary.json"), _summary(second / "summary.json")
    d, n = summary_differences(sa, sb, moved)
    return diffs + d, notes + n, counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("first", type=Path, help="a report directory (e.g. docs/validation)")
    ap.add_argument("second", type=Path, help="another one, e.g. simulated again at a new fingerprint")
    ap.add_argument("--moved", action="append", default=[], metavar="FIELD",
                    help="a record field the change is declared to move (e.g. open_conns_mean); repeatable")
    args = ap.parse_args(argv)
    fields = {f.name for f in dataclasses.fields(RunRecord)}
    for f in args.moved:
        if f not in fields:
            ap.error(f"--moved {f}: not a field of the run's record (simaccept.record.RunRecord)")
    try:
        diffs, notes, counts = compare(args.first, args.second, tuple(args.moved))
    except FileNotFoundError as e:
        print(f"error: {e.filename}: no such file (not a report directory?)", file=sys.stderr)
        return 2
    except OSError as e:        # a directory or an unreadable file where a report file should be
        print(f"error: {e.filename}: {e.strerror}", file=sys.stderr)
        return 2
    except ReportFileError as e:    # a summary that is a list ended in a traceback; others named no file
        print(f"error: {e}", file=sys.stderr)
        return 2
    for line in diffs + notes:
        print(line)
    rows = ", ".join(f"{n} {c} rows" for n, c in counts.items())
    print(f"{'DIFFERENT' if diffs else 'the same'}: {rows}; {len(diffs)} differences")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())

"""Measured records: load a records CSV and map each row to the simulator scenario that reproduces it.

A records CSV is either the thesis's transcription (``validation/data/thesis.csv``,
``source = paper``) or any ``results.csv`` written by ``simaccept sweep`` or
``realsys`` (``source = sim | real``).  Every row becomes a :class:`Measured`:
the :class:`~simaccept.record.RunRecord` built from the schema's columns plus
``extras``, the columns that are not RunRecord columns (thesis.csv has
``total_accepts``, ``drops_total``, ``conn_reqs_per_s``,
``peak_replies_per_s``, ``pct_of_peak``, ``cite``, ``note``), kept as text.

Bad input is refused before anything runs, with :class:`RecordError` naming the
file, line and column: a missing required column, a non-number where a number
belongs, a zero / negative / NaN ``duration_s`` on a row that gives a rate, an
unknown ``server``, ``workload``, ``mux``, ``accept_limit`` or ``source``.

:func:`scenario_for` maps a record to a scalar :class:`~simaccept.Scenario`:

* thesis rows (``source = paper``) -> ``scenarios/thesis/<server>-<workload>.toml``
  if it exists, else ``scenarios/thesis/userver-<workload>.toml`` with
  ``server.kind`` set; rate, accept-limit and mux fixed by overrides;
* rows that carry their resolved scenario (the ``config`` column of sim and real
  records) -> that scenario, rate and accept-limit fixed;
* otherwise a scenario file under ``scenarios/`` whose ``[scenario] name`` is the
  record's ``scenario``.

Whether the simulator can run a record's server is asked of the simulator itself
(:func:`simulator_supports`: a tiny run; ``NotImplementedError`` means "not simulated
yet"), so TUX and Knot rows are picked up as soon as ``simaccept.simulate`` stops
raising for them.
"""
from __future__ import annotations

import copy
import csv
import dataclasses
import functools
import io
import json
import math
import operator
import warnings
import zlib
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from simaccept import bundled
from simaccept.costs import COST_NAMES
from simaccept.record import COLUMNS, RunRecord, _TEXT
from simaccept.scenario import SCHEMA, Scenario, ScenarioError, load_scenario, scenario_from_dict

ROOT = Path(__file__).resolve().parent.parent
#: True when this package runs from a source checkout (setup.cfg and docs/ beside it); False
#: when it is installed (a wheel: ROOT is then site-packages).
CHECKOUT = (ROOT / "setup.cfg").is_file() and (ROOT / "docs").is_dir()
#: Where the analyses' default outputs and caches go: the checkout's root, or, installed, the
#: working directory (never site-packages, where `report --quick` used to write).  Installed it is
#: the relative Path("."), so every default under it is resolved when it is used: a notebook that
#: imports validation and then changes directory writes into the new one.
WORK = ROOT if CHECKOUT else Path()
#: The analyses' default output folder: the checkout's committed docs/validation, or, installed,
#: ./out/validation (there is no docs/ to put it in).
DOCS_OUT = ROOT / "docs" / "validation" if CHECKOUT else WORK / "out" / "validation"
THESIS_CSV = Path(__file__).resolve().parent / "data" / "thesis.csv"
SCENARIO_DIR = bundled.scenario_dir()       # the checkout's scenarios/, or the installed package's

#: Columns every records file must have (the identity of a run).
REQUIRED = ("source", "scenario", "server", "mux", "accept_limit", "workload", "target_rate", "duration_s")

#: Columns that are rates: a row giving any of them needs a positive, finite ``duration_s``.
RATE_COLUMNS = ("target_rate", "replies_per_s", "conn_attempts_per_s", "accept_rate", "select_calls_per_s",
                "fd_rate", "qdrops_per_s", "client_timeouts", "client_resets", "conn_reqs_per_s",
                "peak_replies_per_s")

SOURCES = ("sim", "real", "paper")
SERVERS = SCHEMA["server"]["kind"].choices
MUXES = SCHEMA["server"]["mux"].choices
WORKLOADS = SCHEMA["workload"]["kind"].choices

#: Workload kind -> the stem its thesis scenario files use.
_WL_STEM = {"one-packet": ("onepacket", "one-packet"), "specweb99": ("specweb", "specweb99")}


def repo_path(p) -> str:
    """``p`` relative to the repository when it is inside it: committed files (the report's
    summary, a fitted profile's header) must not name the directory they happened to be made in."""
    try:
        return Path(p).resolve().relative_to(ROOT).as_posix()
    except (ValueError, OSError):
        return str(p)


class RecordError(ValueError):
    """A records file or row is unusable; names the file, line and column."""

    def __init__(self, reason: str, *, path: str = "", line: int | None = None, column: str = ""):
        self.reason, self.path, self.line, self.column = reason, path, line, column
        where = path or "<records>"
        if line is not None:
            where += f":{line}"
        col = f" column {column!r}:" if column else ""
        super().__init__(f"{where}:{col} {reason}")


class NotSimulable(Exception):
    """The record cannot be simulated (no server, no target rate, server not simulated yet)."""


def _number(v) -> float:
    """A numeric column's value as a float: a record built in Python may hold an int (2950 for
    2950.0), which read as not measured; anything else (text, None, a bool) is NaN."""
    import numbers
    return float(v) if isinstance(v, numbers.Real) and not isinstance(v, bool) else math.nan


@dataclasses.dataclass
class Measured:
    """One row of a records file: the RunRecord plus the non-schema columns."""

    record: RunRecord
    extras: dict[str, str] = dataclasses.field(default_factory=dict)
    line: int = 0
    path: str = ""

    def get(self, name: str) -> float:
        """A numeric value from the record or the extras; NaN when empty or absent."""
        if name in COLUMNS:
            return _number(getattr(self.record, name))
        text = self.extras.get(name, "")
        try:
            return float(text) if text not in ("", None) else math.nan
        except ValueError:
            return math.nan

    @property
    def label(self) -> str:
        r = self.record
        rate = "peak" if math.isnan(r.target_rate) else f"{r.target_rate:g}"
        al = r.accept_limit or "-"
        return f"{r.server or 'demand'}/{r.workload}/{r.mux or '-'}/accept-{al}@{rate}"

    def __getattr__(self, name: str) -> Any:  # convenience: m.replies_per_s
        if name.startswith("__") or name in ("record", "extras", "line", "path"):
            raise AttributeError(name)
        return getattr(self.record, name)


def _as_measured(rec: RunRecord | Measured) -> Measured:
    return rec if isinstance(rec, Measured) else Measured(rec)


def _shown(raw: Mapping[str, Any] | None, column: str, value: float) -> str:
    """How a bad numeric cell is echoed: its text as read, or "empty"."""
    text = None if raw is None else raw.get(column)
    if text is None or (isinstance(text, str) and not text.strip()):
        return "empty" if math.isnan(value) else repr(value)
    return repr(text) if isinstance(text, str) else repr(value)


def _check_row(m: Measured, path: str, line: int, raw: Mapping[str, Any] | None = None) -> None:
    """Raise RecordError naming the first bad cell of ``m``; ``raw`` is the row as read, for echoing
    a cell's text (a "nan" cell parses to the same NaN as an empty one)."""
    r = m.record

    def bad(column: str, reason: str) -> RecordError:
        return RecordError(reason, path=path, line=line, column=column)

    if r.source not in SOURCES:
        raise bad("source", f"must be one of {', '.join(SOURCES)}; got {r.source!r}")
    if r.server and r.server not in SERVERS:
        raise bad("server", f"unknown server {r.server!r} (known: {', '.join(SERVERS)})")
    if r.workload and r.workload not in WORKLOADS:
        raise bad("workload", f"unknown workload {r.workload!r} (known: {', '.join(WORKLOADS)})")
    if r.mux and r.mux not in MUXES:
        raise bad("mux", f"unknown mux {r.mux!r} (known: {', '.join(MUXES)})")
    if r.accept_limit:
        al = r.accept_limit.strip().lower()
        if al not in ("inf", "infinity"):
            try:
                ok = int(float(al)) == float(al) and float(al) >= 1
            except (ValueError, OverflowError):     # "1e400", "-inf": int() of an infinity
                ok = False
            if not ok:
                raise bad("accept_limit", f'must be an integer >= 1 or "inf"; got {r.accept_limit!r}')
    if not math.isnan(r.target_rate) and not (math.isfinite(r.target_rate) and r.target_rate > 0):
        raise bad("target_rate", f"must be a positive number; got {r.target_rate!r}")
    rates = [c for c in RATE_COLUMNS if not math.isnan(m.get(c))]
    if rates:
        d = r.duration_s
        if not (math.isfinite(d) and d > 0):
            raise bad("duration_s", f"must be a positive, finite number of seconds when a rate is given "
                                    f"({rates[0]}); got {_shown(raw, 'duration_s', d)}")
    if not math.isnan(r.seed) and not (r.seed >= 0 and float(r.seed).is_integer()):
        # numpy's SeedSequence takes no negative seed, and record_seed truncated a fraction
        raise bad("seed", f"must be an integer >= 0 (a random seed); got {_shown(raw, 'seed', r.seed)}")
    for c in COLUMNS:
        v = getattr(r, c)
        if c not in _TEXT and isinstance(v, float) and math.isinf(v):
            raise bad(c, f"must be finite; got {v!r}")
        # every measured column is a rate, count, time or share: a negative one (a sign slip)
        # made a residual 20-700 times the others, since residuals divide by |measured|
        if c not in _TEXT and isinstance(v, float) and v < -1e-9:     # (a share 1 - sum may round below 0)
            raise bad(c, f"must be >= 0 (a measured rate, count, time or share); got {_shown(raw, c, v)}")
    for c in RATE_COLUMNS:
        text = str(m.extras.get(c, "")).strip()
        if c not in COLUMNS and text and text.lower() != "nan" and not math.isfinite(m.get(c)):
            # "19,500", "abc" or "inf" read as no value: the peak row was skipped as having no
            # target rate, and a fit of that row alone failed naming no cell
            raise bad(c, f"must be a finite number (a measured rate); got {text!r}")
        if c not in COLUMNS and m.get(c) < -1e-9:
            raise bad(c, f"must be >= 0 (a measured rate); got {_shown(raw, c, m.get(c))}")
    if r.config:
        try:
            doc = json.loads(r.config)
        except ValueError as e:
            raise bad("config", f"not JSON: {e}") from None
        except RecursionError:      # json's decoder recurses per level: thousands of [ or {
            raise bad("config", "nested too deeply to read (not a resolved scenario)") from None
        if not isinstance(doc, dict):
            raise bad("config", f"must be a JSON object (the resolved scenario); got a {type(doc).__name__}")


def check_record(m: Measured, where: str) -> None:
    """Raise RecordError naming the first bad value of a record built in memory (``where`` says
    which): the types a file's parsing gives (text in a text column, a number, NaN for not
    measured, elsewhere), then the checks :func:`load_records` makes of a file's rows.  A zero
    duration or a negative seed used to reach the fit unread (a paper row of 0 s was simulated
    in the scenario file's window, not the thesis's 120 s)."""
    import numbers
    r = m.record
    for c in COLUMNS:
        v = getattr(r, c)
        if c in _TEXT:
            ok, want = isinstance(v, str), "text"
        else:
            ok, want = isinstance(v, numbers.Real) and not isinstance(v, bool), "a number (NaN: not measured)"
        if not ok:
            raise RecordError(f"must be {want}; got the {type(v).__name__} {v!r}", path=where, column=c)
    _check_row(m, f"{where} ({m.label})", None)


def parse_rows(rows: Iterable[Mapping[str, Any]], fieldnames: Sequence[str], *, path: str = "<records>",
               first_line: int = 2, lines: Sequence[int] | None = None) -> list[Measured]:
    """Validate and convert dict rows (``csv.DictReader`` output).  ``lines``: the line each row
    starts on, where a quoted cell holds a line break; else row i is on ``first_line + i``."""
    fields = list(fieldnames or [])
    missing = [c for c in REQUIRED if c not in fields]
    if missing:
        raise RecordError(f"missing required column(s): {', '.join(missing)} "
                          f"(a records file needs {', '.join(REQUIRED)})", path=path, column=missing[0])
    dup = sorted({c for c in fields if fields.count(c) > 1})
    if dup:
        raise RecordError(f"duplicate column(s): {', '.join(dup)}", path=path, column=dup[0])
    known = [c for c in fields if c in COLUMNS]
    out = []
    for i, row in enumerate(rows):
        line = lines[i] if lines is not None else first_line + i
        if None in row:
            raise RecordError("more cells than header columns", path=path, line=line)
        try:
            rec = RunRecord.from_dict({c: row.get(c) for c in known})
        except ValueError as e:
            col = str(e).split("'")[1] if "'" in str(e) else ""
            raise RecordError(str(e), path=path, line=line, column=col) from None
        extras = {c: ("" if row.get(c) is None else str(row.get(c))) for c in fields if c not in COLUMNS}
        m = Measured(rec, extras, line, path)
        _check_row(m, path, line, row)
        out.append(m)
    return out


#: The records a name stands for where no file has that path: the thesis's measured numbers come
#: with the package, so an installed simaccept can fit and predict them without a checkout.
RECORDS_BY_NAME = {"thesis": THESIS_CSV}


#: The measured realsys runs that come with the package: ``realsys/results/*/results.csv`` (and
#: one folder deeper) of a checkout, which an installed package carries at the same place.
REALSYS_RESULTS = ROOT / "realsys" / "results"


def records_path(path: str | Path) -> Path:
    """``path``; or, when no file is there, the packaged file it names: ``thesis``
    (:data:`RECORDS_BY_NAME`), or a committed realsys results file by its path in the repository
    (``realsys/results/onepacket-select/results.csv``: the README's examples, run from anywhere)."""
    p = Path(path)
    if p.exists() and not (str(path) in RECORDS_BY_NAME and p.is_dir()):
        # a folder is no records file: scenarios/thesis/ made --records thesis fail in scenarios/
        return p
    if str(path) in RECORDS_BY_NAME:
        return RECORDS_BY_NAME[str(path)]
    s = p.as_posix()
    s = s[2:] if s.startswith("./") else s
    if s.startswith("realsys/results/") and ".." not in s.split("/"):
        q = ROOT / s
        if q.is_file():
            return q
    return p


#: A records file larger than this is refused unread (``--records /dev/zero`` read until a
#: MemoryError).  Generous: a row of a sweep's results.csv is about 1.9 kB (most of it the
#: ``config`` column), so the largest sweep (:data:`simaccept.sweep.MAX_SWEEP_POINTS`, 100,000
#: points) writes about 190 MB; a scenario file's 1 MiB cap (``MAX_SCENARIO_BYTES``) would refuse
#: a sweep of a few hundred points.
MAX_RECORDS_BYTES = 256 << 20


def _check_regular(p: Path) -> None:
    """RecordError unless ``p`` is a regular file (or missing: the read then says so): a
    directory, a device (/dev/zero) or a FIFO is no records file."""
    import stat
    try:
        mode = p.stat().st_mode
    except (OSError, ValueError):
        return
    if stat.S_ISDIR(mode):
        raise RecordError("is a directory, not a records file", path=str(p))
    if not stat.S_ISREG(mode):
        raise RecordError("not a regular file (a device, FIFO or socket): not a records file", path=str(p))


def load_records(path: str | Path) -> list[Measured]:
    """Read a records CSV (thesis.csv or any results.csv) or Parquet file (a sweep's
    results.parquet; rows are numbered from 1), or ``"thesis"`` (:func:`records_path`); raise
    RecordError on bad input (also a file that is not a regular one, or larger than
    :data:`MAX_RECORDS_BYTES`)."""
    p = records_path(path)
    _check_regular(p)
    if p.suffix.lower() == ".parquet":
        return _load_parquet(p)
    try:
        with open(p, "rb") as f:
            data = f.read(MAX_RECORDS_BYTES + 1)
        if len(data) > MAX_RECORDS_BYTES:
            raise RecordError(f"larger than {MAX_RECORDS_BYTES:,} bytes: not a records file (the largest sweep "
                              "writes about 190 MB)", path=str(p))
        text = data.decode("utf-8-sig")     # -sig: a spreadsheet's byte-order mark is not part of the first column's name
    except OSError as e:
        raise RecordError(f"cannot read: {e.strerror or e}", path=str(p)) from None
    except UnicodeDecodeError as e:
        raise RecordError(f"not UTF-8 (byte offset {e.start})", path=str(p)) from None
    # Lines as csv reads them (\n, \r\n): str.splitlines also broke rows at U+2028, \f, \x1c and
    # the like, which a text cell of a sweep's results.csv may hold unquoted (a scenario name)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows, lines = [], []
    try:
        if not reader.fieldnames:
            raise RecordError("empty file (no header row)", path=str(p))
        for row in reader:
            # the line the row starts on: a quoted cell may hold line breaks (a failed point's error)
            breaks = sum(v.count("\n") for v in row.values() if isinstance(v, str))
            breaks += sum(v.count("\n") for v in row.get(None) or ())
            rows.append(row)
            lines.append(reader.line_num - breaks)
    except csv.Error as e:      # a cell over csv's field limit (131,072 characters), a NUL byte
        raise RecordError(f"not a readable CSV row: {e}", path=str(p), line=reader.line_num + 1) from None   # the line it failed in
    for row, line in zip(rows, lines):
        # DictReader pads a short row with None: it was read as "not measured" (predict showed
        # measured nan and exited 0) where a long row was refused
        if None not in row and None in row.values():
            n = sum(v is not None for v in row.values())
            raise RecordError(f"fewer cells than header columns ({n} of {len(reader.fieldnames)})",
                              path=str(p), line=line)
    return parse_rows(rows, reader.fieldnames, path=str(p), lines=lines)


def record_columns(path: str | Path) -> list[str]:
    """The header of a records file that :func:`load_records` has read: a metric it lacks is not
    "not measured" in every row but misspelt or another kind of file."""
    p = records_path(path)
    if p.suffix.lower() == ".parquet":
        from simaccept.sweep import _pyarrow
        return list(_pyarrow()[1].read_schema(p).names)
    with p.open(encoding="utf-8-sig", newline="") as f:
        return next(csv.reader(f), [])


def _load_parquet(p: Path) -> list[Measured]:
    from simaccept.sweep import _pyarrow
    try:
        _, pq = _pyarrow()
    except ImportError as e:
        raise RecordError(str(e), path=str(p)) from None
    try:
        names = list(pq.read_schema(p).names)
        dup = sorted({c for c in names if names.count(c) > 1})
        if dup:     # read_table refused them with a 70-line dump of the schema
            raise RecordError(f"duplicate column(s): {', '.join(dup)}", path=str(p), column=dup[0])
        table = pq.read_table(p)
    except OSError as e:                    # missing or unreadable
        raise RecordError(f"cannot read: {e.strerror or e}", path=str(p)) from None
    except ValueError as e:                 # pyarrow's ArrowInvalid: not a Parquet file
        raise RecordError(f"not a Parquet file: {e}", path=str(p)) from None
    return parse_rows(table.to_pylist(), table.column_names, path=str(p), first_line=1)


def nan_to_null(o: Any) -> Any:
    """``o`` with every NaN float (nested in dicts, lists, tuples) replaced by None: JSON has no NaN,
    and null is the honest "not measured"."""
    if isinstance(o, float):
        return None if math.isnan(o) else o
    if isinstance(o, dict):
        return {k: nan_to_null(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [nan_to_null(v) for v in o]
    return o


def load_thesis() -> list[Measured]:
    return load_records(THESIS_CSV)


# --------------------------------------------------------------------------- scenarios
def record_seed(rec: RunRecord) -> int:
    """A fixed seed per record: the record's own (sim records) or one derived from its identity."""
    seed = _number(rec.seed)     # an int from Python (seed=2004) is the record's own too
    if math.isfinite(seed) and seed >= 0:
        return int(seed)
    key = f"{rec.source}|{rec.scenario}|{rec.server}|{rec.mux}|{rec.accept_limit}|{rec.workload}|{rec.target_rate!r}"
    return zlib.crc32(key.encode())


def _limit_override(al: str) -> str:
    al = al.strip().lower()
    return 'server.accept_limit="inf"' if al in ("inf", "infinity") else f"server.accept_limit={int(float(al))}"


def thesis_scenario_file(server: str, workload: str, base_dir: str | Path | None = None) -> tuple[Path, bool]:
    """The thesis scenario file for (server, workload) and whether server.kind must be overridden."""
    d = Path(base_dir) if base_dir is not None else SCENARIO_DIR / "thesis"
    stems = _WL_STEM.get(workload, (workload,))
    for stem in stems:
        p = d / f"{server}-{stem}.toml"
        if p.is_file():
            return p, False
    for stem in stems:
        p = d / f"userver-{stem}.toml"
        if p.is_file():
            return p, True
    raise NotSimulable(f"no scenario file for {server}/{workload} under {d}")


@functools.lru_cache(maxsize=8)
def _scenarios_by_name(base: str) -> dict[str, Path]:
    out = {}
    for p in sorted(Path(base).rglob("*.toml")):
        try:
            out.setdefault(load_scenario(p).name, p)
        except ScenarioError:
            continue
    return out


def refuse_pasted_twice(m: Measured, i: int, same: dict) -> None:
    """Raise a :class:`RecordError` when the file row ``m`` (item ``i``) is the same in every
    column as one seen before it (``same``, which this fills: call it on each row in turn).
    Replicate runs differ in their seed or their measurements; a row the same in every column
    is one run pasted twice, and counted twice (in a fit's residual, in predict's median).
    Rows built in memory (no path) are not checked here."""
    content = (m.record.to_json(), tuple(sorted(m.extras.items())))
    if m.path and content in same:
        j, f, ln = same[content]
        raise RecordError(f"{m.label} is the same in every column as {f}:{ln} (item {j}): it would "
                          f"count twice (replicate runs differ in seed or measurement); remove one",
                          path=m.path, line=m.line)
    same.setdefault(content, (i, m.path, m.line))


def record_window(record: RunRecord | Measured) -> list[str]:
    """The overrides that simulate a paper row over the window the thesis measured it in.

    The thesis measured each point as one httperf run of ``duration_s`` (120 s) started from
    idle queues (a two-minute pause between runs let every socket leave TIME_WAIT, sec 3.2.1),
    and httperf's rates are totals over the whole run: so no warm-up, ``duration_s`` measured.
    Under one-packet overload this is not the steady state (rates keep falling for 20-30 s:
    ``python -m validation window``).  Other sources carry their own window in their config:
    ``[]``.
    """
    r = _as_measured(record).record
    if r.source != "paper" or not (math.isfinite(r.duration_s) and r.duration_s > 0):
        return []
    return ["scenario.warmup=0", f"scenario.duration={float(r.duration_s)!r}"]


def scenario_for(record: RunRecord | Measured, base_dir: str | Path | None = None,
                 overrides: Iterable[str] = (), *, seed: int | None = None, rate: float | None = None) -> Scenario:
    """The scalar simulator scenario that reproduces ``record``.

    ``base_dir`` is the directory of the thesis scenario files (default
    ``scenarios/thesis``); a paper row is simulated over its own window
    (:func:`record_window`: from idle, ``duration_s`` measured), not the file's.  A row
    with a ``config`` (sim and real rows) is that scenario, and its ``server``, ``mux``,
    ``workload``, ``policy`` and ``kernel_profile`` cells must agree with it (a RecordError
    names the one that does not).  A row without one names its scenario file in
    ``scenario`` (:func:`_named_scenario`; ``base_dir`` is searched first), and its cells
    set those keys and the window's length (``duration_s``).
    ``overrides`` (``section.key=value``) are applied last,
    e.g. ``costs.select_base=12`` or ``scenario.duration=5``; with a ``costs.profile`` among
    them, the costs a row's ``config`` set one by one are dropped first, so the row runs on
    that profile and the overrides alone (as a fit's and predict's rows do).  ``rate`` replaces the
    record's target rate (how :func:`peak_scenarios` simulates a peak row at its peak rates).
    A sweep's row (source ``sim`` with a ``point`` label) is simulated as that sweep point, with
    its random stream (:func:`_sweep_point`).  A bad value in the row's ``config`` is a
    :class:`RecordError` naming file, line and column; a bad ``overrides`` one a ScenarioError.
    Raises :class:`NotSimulable` when the record names no server or no target rate.  The scenario
    is refused as :func:`~simaccept.sim.simulate` would refuse it (a sweep axis, a setting its
    server's model does not read) here, where the error can say whose it is: a ScenarioError
    for a key ``overrides`` set, a RecordError for the row's own.
    """
    sc = _scenario_for(record, base_dir, overrides, seed, rate)
    # a worker's simulate() raised these: a traceback from predict, and from fit a message
    # naming neither the record nor the option that set the key
    e = (ScenarioError(sc.axes[0][0], "is a sweep axis (a list); a record is simulated at one point: "
                       "give one value") if sc.axes else _modelled_error(sc))
    if e is not None:
        if e.key in {str(o).split("=", 1)[0].strip() for o in overrides}:
            raise e
        m = _as_measured(record)
        raise RecordError(f"{m.label} cannot be simulated as measured: {e}", path=m.path, line=m.line or None)
    return sc


def _modelled_error(sc: Scenario) -> ScenarioError | None:
    """What :func:`simaccept.sim.check_modelled` refuses in the point ``sc``, or None."""
    from simaccept.sim import check_modelled
    try:
        check_modelled(sc.resolved())
    except ScenarioError as e:
        return e
    return None


def _scenario_for(record, base_dir, overrides, seed, rate) -> Scenario:
    """:func:`scenario_for`, before its refusals."""
    r = _as_measured(record).record
    if not r.server:
        raise NotSimulable("no server (client-side demand row)")
    if not r.workload:
        raise NotSimulable("no workload")
    if rate is None:
        if math.isnan(r.target_rate):
            # a measured run's empty cell is no peak: "a peak row" sent its owner looking for one
            raise NotSimulable("no target rate (a peak or summary row)" if r.source == "paper"
                               else "no target rate (its target_rate cell is empty)")
        rate = r.target_rate
    fix = [f"workload.rate={float(rate)!r}"]
    if r.accept_limit:
        fix.append(_limit_override(r.accept_limit))
    fix.append(f"scenario.seed={record_seed(r) if seed is None else int(seed)}")
    overrides = list(overrides)
    if r.source == "paper":
        path, set_kind = thesis_scenario_file(r.server, r.workload, base_dir)
        pre = [f'server.kind="{r.server}"'] if set_kind else []
        if r.mux:
            pre.append(f'server.mux="{r.mux}"')
        return load_scenario(path, pre + fix + record_window(r) + overrides)
    if r.config:
        m = _as_measured(record)
        try:
            doc = json.loads(r.config)
        except ValueError as e:
            raise RecordError(f"config is not JSON: {e}", path=m.path, line=m.line or None, column="config") from None
        except RecursionError:
            raise RecordError("config is nested too deeply to read", path=m.path, line=m.line or None,
                              column="config") from None
        if not isinstance(doc, dict):
            raise RecordError("config must be a JSON object (the resolved scenario)", path=m.path,
                              line=m.line or None, column="config")
        if r.source == "real":
            from realsys.rowconfig import as_measured
            as_measured(doc)        # a key the row predates that the test bed did not run at its default
        sc_seed = doc.get("scenario", {}).get("seed") if isinstance(doc.get("scenario"), dict) else None
        if seed is None and type(sc_seed) is int and float(sc_seed) == r.seed:
            fix[-1] = f"scenario.seed={sc_seed}"    # exact: the float seed column rounds past 2**53
        run_doc = doc
        if any(o.startswith("costs.profile=") for o in overrides) and isinstance(doc.get("costs"), dict):
            # a profile given replaces the record's costs whole: a cost its config set (a sweep
            # over k_syn_drop) stayed in every simulation of a fit, and the saved profile, which
            # has the base profile's, gave 3,436 replies/s where the fit had seen 3,269
            run_doc = {**doc, "costs": {k: v for k, v in doc["costs"].items() if k not in COST_NAMES}}
        try:
            sc = scenario_from_dict(run_doc, fix + overrides)
        except ScenarioError as e:
            try:        # whose fault: a --set may repair a record, so the record is blamed only alone
                scenario_from_dict(doc, fix)
            except ScenarioError as own:
                raise RecordError(str(own), path=m.path, line=m.line or None,
                                  column=_COLUMN_OF.get(own.key, "config")) from None
            raise e from None
        _check_agrees(m, sc, {str(o).split("=", 1)[0].strip() for o in overrides})
        if r.source == "sim" and r.point:
            return _sweep_point(sc, scenario_from_dict(doc, fix) if overrides else sc, r.point, m)
        return sc
    m = _as_measured(record)
    path = _named_scenario(r.scenario, m, base_dir)
    # the row's own columns, all of them: policy, kernel_profile and the measured window were
    # left at the file's (a row saying no-such-policy was simulated with the file's policy)
    pre = [f"{key}={json.dumps(getattr(r, column))}" for column, key in _ROW_KEYS.items() if getattr(r, column)]
    if math.isfinite(r.duration_s) and r.duration_s > 0:
        pre.append(f"scenario.duration={float(r.duration_s)!r}")
    try:
        load_scenario(path, pre + fix)
    except ScenarioError as own:     # the row's cell, named as a column
        raise RecordError(str(own), path=m.path, line=m.line or None,
                          column=_COLUMN_OF_NO_CONFIG.get(own.key, "scenario")) from None
    return load_scenario(path, pre + fix + overrides)


def _named_scenario(name: str, m: Measured, base_dir) -> Path:
    """The scenario file a row without a ``config`` names in its ``scenario`` column: a
    scenario file's ``[scenario] name`` under ``base_dir`` (if given), then among the
    bundled ones; else a ``.toml`` path (from the records file's folder, then the working
    directory), or a bundled scenario's name as ``simaccept scenarios`` lists it.  A name
    that is none of these is a :class:`RecordError`: it was skipped as not simulable, and a
    fit went on without the row."""
    for base in ([base_dir] if base_dir is not None else []) + [SCENARIO_DIR]:
        by_name = _scenarios_by_name(str(base))
        if name in by_name:
            return by_name[name]
    if name:
        here = Path(m.path).parent / name if m.path else None
        for p in (here, Path(name)):
            if p is not None and p.suffix == ".toml" and p.is_file():
                return p
        from simaccept import bundled
        found = bundled.find(name)
        if found is not None:
            return found
    under = f" under {base_dir} or" if base_dir is not None else ""
    raise RecordError(f"{name!r} names no scenario{under} among the bundled ones, and the row has no config: "
                      "give a scenario file's [scenario] name, a path to a .toml file, a bundled scenario "
                      "(`simaccept scenarios` lists them), or a config column (the resolved scenario, "
                      "as simaccept and realsys write it)", path=m.path, line=m.line or None,
                      column="scenario")


#: The record columns :func:`scenario_for` sets scenario keys from over a row's ``config`` (the
#: rest come from the config, and a bad value there is the config's).
_COLUMN_OF = {"workload.rate": "target_rate", "server.accept_limit": "accept_limit", "scenario.seed": "seed"}
#: The columns that describe the run, by the scenario key each stands for: set over the scenario
#: file of a row without a config, and checked against the config of a row with one (``mux`` only
#: for the μserver).
_ROW_KEYS = {"server": "server.kind", "workload": "workload.kind", "mux": "server.mux", "policy": "server.policy",
             "kernel_profile": "kernel.profile"}
#: ... so a bad value over a named scenario file is its column's.
_COLUMN_OF_NO_CONFIG = {**_COLUMN_OF, **{k: c for c, k in _ROW_KEYS.items()}, "scenario.duration": "duration_s"}


def _check_agrees(m: Measured, sc: Scenario, overridden: set[str]) -> None:
    """Refuse a row whose columns say another run than its ``config``: the config alone was
    simulated, so a row whose ``mux`` was edited to epoll, or whose ``server`` says knot, was
    predicted as the select μserver it had been, while ``--select mux=epoll`` chose it.  A key
    in ``overridden`` (a ``--set``) is the caller's choice, not checked."""
    r, v = m.record, sc.values
    for column, name in _ROW_KEYS.items():
        cell = getattr(r, column)
        sec, key = name.split(".")
        if not cell or name in overridden or (column == "mux" and v["server"]["kind"] != "userver"):
            continue
        if str(v[sec][key]) != cell:
            raise RecordError(f"says {cell!r}, but the row's config ran {sec}.{key} = {v[sec][key]!r}, and the "
                              "config is what is simulated: correct the column, or the config",
                              path=m.path, line=m.line or None, column=column)


def _sweep_point(sc: Scenario, own: Scenario, point: str, m: Measured | None = None) -> Scenario:
    """``sc`` with the seed key of the sweep point ``point`` ("server.accept_limit=1;workload.rate=3e4.0").

    A sweep point draws its random stream from the scenario's seed and its coordinates (the
    names and values of the swept keys, :meth:`Scenario.points`), which a record keeps only
    as its ``point`` label.  The key is rebuilt from ``own`` (the record's scenario before any
    ``--set`` or fitted cost, which must not move the stream): each swept key becomes a
    one-value axis again, in the label's order.  A label that cannot be rebuilt is warned
    about and ``sc`` keeps the scenario's seed alone."""
    vals, names = own.values, []
    for frag in point.split(";"):
        n = frag.split("=", 1)[0]
        s, _, k = n.partition(".")
        if "=" in frag and k and isinstance(vals.get(s), dict) and k in vals[s] and n not in names:
            names.append(n)
        # else a ';' inside the previous value (a profile path); the label check below decides
    grid: dict[str, dict] = {}
    for s in dict.fromkeys([n.split(".", 1)[0] for n in names] + list(vals)):    # the label's sections first
        swept = [n.split(".", 1)[1] for n in names if n.split(".", 1)[0] == s]
        grid[s] = {k: [vals[s][k]] for k in swept}               # axes come out in the label's order
        grid[s].update({k: copy.deepcopy(v) for k, v in vals[s].items() if k not in swept})
    p = Scenario(grid, own.source).points()[0] if names else None
    if p is None or p.point_label() != point:
        where = (f"{m.path or '<records>'}{f':{m.line}' if m.line else ''}: " if m is not None else "")
        # it named no file or line (a typo in the point column was found by its label alone)
        warnings.warn(f"{where}sweep point {point!r} could not be rebuilt from the record's config: simulated "
                      f"with the scenario's seed alone, another random stream than the sweep's", stacklevel=3)
        return sc
    return dataclasses.replace(sc, point_key=p.point_key, coords=p.coords)


#: A peak row (no target rate, a ``peak_replies_per_s``: the thesis quotes peaks in its
#: text) is simulated at these multiples of the measured peak; the simulated peak is the
#: largest reply rate among them.  Rates relative to the measured peak, not the scenario
#: file's 2,000 req/s grid, because below saturation replies/s equals the target rate:
#: on a coarse grid the maximum is often an unsaturated grid point and does not move
#: with any cost, so a fit could not see it.  With these factors the simulated peak is a
#: continuous function of the costs while it lies within 0.9-1.2 x the measured one.  The
#: report refines the peak beyond this grid (``validation.report.peak_runs``, to 1 % of the
#: measured peak): the grid's 10 % steps are the throughput tolerance itself.
PEAK_FACTORS = (0.9, 1.0, 1.1, 1.2)


def peak_rates(record: RunRecord | Measured, factors: Sequence[float] = PEAK_FACTORS) -> list[float]:
    """The target rates at which a peak row is simulated (see :data:`PEAK_FACTORS`).

    Raises :class:`NotSimulable` for a row with a target rate or without a measured peak.
    """
    m = _as_measured(record)
    if not math.isnan(m.record.target_rate):
        raise NotSimulable("has a target rate (not a peak row)")
    peak = m.get("peak_replies_per_s")
    if not (math.isfinite(peak) and peak > 0):
        raise NotSimulable("no measured peak_replies_per_s")
    return [round(f * peak, 6) for f in factors]


def peak_scenarios(record: RunRecord | Measured, base_dir: str | Path | None = None,
                   overrides: Iterable[str] = (), factors: Sequence[float] = PEAK_FACTORS) -> list[Scenario]:
    """One scalar scenario per :func:`peak_rates` rate (same seed): max replies/s = the peak."""
    return [scenario_for(record, base_dir, overrides, rate=x) for x in peak_rates(record, factors)]


@functools.lru_cache(maxsize=64)
def _supports(kind: str, workload: str, mux: str) -> tuple[bool, str]:
    from simaccept import simulate
    over = [f'server.kind="{kind}"', f'workload.kind="{workload}"', "scenario.warmup=0",
            "scenario.duration=0.001", "workload.rate=100"]
    if mux:
        over.append(f'server.mux="{mux}"')
    path, _ = thesis_scenario_file("userver", workload)
    sc = load_scenario(path, over + ['server.accept_limit="inf"'])
    try:
        rec = simulate(sc)
    except (NotImplementedError, ImportError) as e:
        return False, f"not simulated yet ({type(e).__name__}: {e})"
    except ScenarioError as e:
        # nginx: runs only in realsys.  It refused a whole records file (a results.csv of
        # nginx and userver rows) where those rows are to be skipped, as documented
        return False, f"the simulator does not model it ({e.reason})"
    if rec.status != "ok":
        first = rec.error.splitlines()[0] if rec.error else "failed"
        if first.startswith(("ModuleNotFoundError", "ImportError", "NotImplementedError")):
            return False, f"not simulated yet ({first})"
        return False, f"the simulator fails on it ({first})"
    return True, ""


def simulator_supports(record: RunRecord | Measured) -> tuple[bool, str]:
    """(True, "") if ``simaccept.simulate`` can run this record's server; else (False, why)."""
    r = _as_measured(record).record
    if not r.server:
        return False, "no server (client-side demand row)"
    if not r.workload:
        return False, "no workload"
    return _supports(r.server, r.workload, r.mux if r.server == "userver" else "")


def is_peak_row(record: RunRecord | Measured) -> bool:
    """A row with a measured peak and no target rate (the thesis quotes peaks in its text)."""
    m = _as_measured(record)
    return math.isnan(m.record.target_rate) and math.isfinite(m.get("peak_replies_per_s"))


def simulable(record: RunRecord | Measured, base_dir: str | Path | None = None,
              peaks: bool = False) -> tuple[bool, str]:
    """Whether :func:`scenario_for` + ``simulate`` will work for this record, and why not.
    With ``peaks``, a peak row counts too (simulated by :func:`peak_scenarios`)."""
    ok, why = simulator_supports(record)
    if not ok:
        return ok, why
    try:
        if peaks and is_peak_row(record):
            peak_scenarios(record, base_dir)
        else:
            scenario_for(record, base_dir)
    except NotSimulable as e:
        return False, str(e)
    return True, ""


#: ``--select`` comparisons, two-character ones first so that ``>=`` is not read as ``=``.
_SELECT_OPS = {">=": operator.ge, "<=": operator.le, "!=": operator.ne, ">": operator.gt, "<": operator.lt,
               "=": operator.eq}


def close_text(name: str, among, n: int = 3) -> str:
    """The names in ``among`` close to a misspelt ``name``, as ' (close: a, b)' for a refusal; '' if none."""
    import difflib
    close = difflib.get_close_matches(name, list(among), n=n)
    return f" (close: {', '.join(close)})" if close else ""


def select_records(records: Iterable[Measured], selectors: Iterable[str] | None,
                   name: str = "selector") -> list[Measured]:
    """Keep records that satisfy every selector: ``column=value``, or for a numeric column
    ``column>=value`` (also ``<=``, ``>``, ``<``, ``!=``), e.g. ``target_rate>=4000`` for
    the runs past saturation.  A NaN (not measured) satisfies none but ``!=``; ``column=nan``
    keeps the rows where the column was not measured and ``column!=nan`` the others.
    ``accept_limit`` compares as a limit (``01`` is 1, ``Inf`` is inf).  A value that cannot be
    one of its column's (``target_rate==1600``, ``target_rate=1600=2``) is a ValueError: it
    used to match nothing, and the error said only that no record was left.  Its messages call
    each selector ``name`` ("selector"; the CLI passes "--select", the flag that gave it)."""
    if isinstance(selectors, (str, bytes)):
        # one string was iterated character by character ("t" has no operator)
        raise TypeError(f"selectors: a list of 'column=value' strings, got the str {selectors!r} "
                        f"(put it in a list: [{selectors!r}])")
    out = list(records)
    for s in selectors or ():
        op = next((o for o in _SELECT_OPS if o in s), None)
        if op is None:
            raise ValueError(f"{name} {s!r}: must look like column=value (or >=, <=, >, <, !=)")
        col, val = s.split(op, 1)
        bad_op = (col[-1] + op if col[-1:] in ("=", "<", ">", "!") else
                  op + val[0] if val[:1] in ("=", "<", ">") else None)
        if bad_op:
            raise ValueError(f"{name} {s!r}: {bad_op!r} is not an operator (=, !=, >=, <=, >, <)")
        if col not in COLUMNS:
            raise ValueError(f"{name}: unknown record column {col!r}{close_text(col, COLUMNS)}")
        if op not in ("=", "!=") and col in _TEXT:
            raise ValueError(f"{name} {s!r}: {col} is text; only = and != compare it")
        if col not in _TEXT:
            try:
                x = float(val)
            except ValueError:
                raise ValueError(f"{name} {s!r}: {val!r} is not a number") from None
            if math.isnan(x) and op not in ("=", "!="):   # every comparison with NaN is false: it would keep nothing
                raise ValueError(f"{name} {s!r}: nan is not an order; {col}!=nan keeps the rows that "
                                 f"measured it, {col}=nan the others")
        if col == "accept_limit" and val.strip():
            if _limit_key(val) is None:
                raise ValueError(f"{name} {s!r}: {val!r} is not an accept limit (an integer >= 1, or inf)")
            val = _limit_key(val)

        def match(m, col=col, val=val, f=_SELECT_OPS[op], op=op):
            v = getattr(m.record, col)
            if col not in _TEXT:
                v = _number(v)
                x = float(val)
                if math.isnan(x):   # = / != nan: not measured / measured (op is one of them here)
                    return math.isnan(v) == (op == "=")
                return (op == "!=") if math.isnan(v) else f(v, x)
            if col == "accept_limit" and v.strip():
                v = _limit_key(v) or v
            return f(v, val)
        out = [m for m in out if match(m)]
    return out


def _limit_key(text: str) -> str | None:
    """An accept limit as one spelling ("1" for 1, 01 or 1.0; "inf" for Inf), or None if it is none."""
    t = text.strip().lower()
    if t in ("inf", "infinity"):
        return "inf"        # as records spell it; scenarios and plot legends say Inf too
    try:
        x = float(t)
    except ValueError:
        return None
    return str(int(x)) if x.is_integer() and x >= 1 else None


def why_none_selected(records: Sequence[Measured], selectors: Iterable[str] | None,
                      name: str = "selector") -> str:
    """Which of ``selectors`` left :func:`select_records` nothing of ``records``: the ones that
    alone match no record, else the first of them after which none was left, with those before it.
    Each selector is called ``name``, as in :func:`select_records`."""
    sels = list(selectors or ())
    n = f"{len(records)} record{'' if len(records) == 1 else 's'}"
    alone = [s for s in sels if not select_records(records, [s], name)]
    if alone:
        return (" and ".join(f"{name} {s!r}" for s in alone)
                + f" {'matches' if len(alone) == 1 else 'each match'} none of its {n}")
    kept = list(records)
    for i, s in enumerate(sels):
        kept = select_records(kept, [s], name)
        if not kept:
            return " with ".join(f"{name} {x!r}" for x in sels[:i + 1]) + f" together match none of its {n}"
    return ""

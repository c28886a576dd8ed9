"""Command line: simaccept run | sweep | figures | fit | predict | scenarios | keys.

Exit status: 0 success, 1 the run failed, 2 bad input (unknown scenario key,
wrong type, out-of-range value, unreadable file) -- refused before anything
runs, with the key named; 130 after Ctrl-C, 143 after SIGTERM and 129 after
SIGHUP (unless started under nohup), each with what was kept.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
import time
import tomllib
from pathlib import Path

from .scenario import SCHEMA, ScenarioError, load_scenario
from .sweep import SweepError


#: scipy least_squares' losses, as validation.fitter.LOSSES (here so that the command line does not
#: import the fitter, and scipy with it, to build its help; a test holds the two equal).
LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


def add_loss_args(p) -> None:
    """``--loss`` and ``--f-scale`` (CostFitter's ``loss`` and ``f_scale``), for every fitting command."""
    p.add_argument("--loss", default="linear", choices=LOSSES,
                   help="least_squares' loss: linear (least squares, the default) or a robust one that weighs a "
                        "residual beyond --f-scale less than its square: cauchy or arctan (redescending) when one run "
                        "sits in another regime than the simulator puts it (validation.fitter.LOSSES)")
    p.add_argument("--f-scale", type=float, default=1.0, metavar="R",
                   help="the residual where a robust --loss bends (default 1.0: 100 %%; 0.1: 10 %%)")


def add_fit_args(f) -> None:
    """The options of ``fit`` (here and in ``python -m validation``)."""
    f.add_argument("--records", required=True, help="RunRecords as CSV (e.g. your results.csv) or Parquet (a sweep's "
                   "results.parquet), or 'thesis': the thesis's measured numbers that come with the package")
    f.add_argument("--params", required=True, help="comma-separated cost names to fit")
    f.add_argument("--out", required=True, help="profile TOML to write")
    f.add_argument("--metrics", default=None, help="comma-separated metrics (default: replies_per_s,c_avg,"
                   "accept_rate,select_calls_per_s,fds_per_select); 'drop_shares' adds the drop categories, "
                   "'time_split' the split of the records' cpu_share_<fn> among the functions listed, "
                   "'peak_replies_per_s' fits peak rows")
    f.add_argument("--select", action="append", default=[], metavar="COLUMN=VALUE",
                   help="fit only these records: column=value, or column>=value (<=, >, <, !=); repeatable")
    add_set_option(f, help="scenario override for every simulated record, e.g. scenario.duration=5")
    f.add_argument("--base-profile", default="thesis-2004",
                   help="profile the fit starts from and keeps for the costs it does not fit: a name or a .toml path "
                        "(default thesis-2004, the thesis's costs; docs/guides/fitting.md starts realsys runs "
                        "from realsys-linux6)")
    f.add_argument("--jobs", type=int, default=1, help="worker processes (simulations run in parallel; results do not depend on it)")
    f.add_argument("--cache", default=None, metavar="DIR",
                   help="keep each finished simulation here: the same fit run again (after Ctrl-C) reuses them")
    f.add_argument("--max-nfev", type=int, default=None,
                   help="budget of evaluations of the residuals (each simulates every record); a fit that reaches it has not converged: exit 1 and no profile written (default: scipy's, 100 per parameter)")
    add_loss_args(f)
    f.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2),
                   help="scipy least_squares' progress: 0 none, 1 a summary, 2 every iteration (default 0)")


def add_predict_args(pr) -> None:
    """The options of ``predict`` (here and in ``python -m validation``)."""
    pr.add_argument("--records", required=True, help="RunRecords as CSV or Parquet (measured runs to predict), "
                    "or 'thesis': the thesis's measured numbers that come with the package")
    pr.add_argument("--profile", required=True, help="cost profile: a packaged name or a .toml path "
                    "(what `simaccept fit --out` wrote)")
    pr.add_argument("--metrics", default="replies_per_s", help="comma-separated record columns to compare "
                    "(default replies_per_s)")
    pr.add_argument("--select", action="append", default=[], metavar="COLUMN=VALUE",
                    help="only these records: column=value, or column>=value (<=, >, <, !=); repeatable")
    add_set_option(pr, help="scenario override for every simulation")
    pr.add_argument("--jobs", type=int, default=1, help="worker processes (simulations run in parallel; results do not depend on it)")
    pr.add_argument("--out", default=None, help="also write the rows as CSV (row, seed, metric, measured, "
                    "predicted, error, difference)")
    pr.add_argument("--cache", default=None, metavar="DIR",
                    help="keep each finished simulation here: the same predict run again (after Ctrl-C, or with "
                         "other --metrics) reuses them")


def _out_dir(path: str, option: str = "--out") -> None:
    """Refuse an output directory that cannot be one, before anything runs (a sweep would
    otherwise simulate its first point and only then fail to cache it).  Creates nothing:
    a missing directory is checked through its nearest existing ancestor."""
    if not str(path).strip():
        raise ScenarioError(option, "must name a directory, got an empty string")
    try:
        _check_out_dir(Path(path), path, option)
    except ScenarioError:
        raise
    except (OSError, ValueError) as e:      # a name too long, a NUL byte: a traceback, exit 1
        raise ScenarioError(option, f"cannot use {str(path)[:80]!r}{'...' if len(str(path)) > 80 else ''}: "
                                    f"{getattr(e, 'strerror', None) or e}") from None


def _check_out_dir(p: Path, path: str, option: str) -> None:
    if p.exists() and not p.is_dir():
        raise ScenarioError(option, f"{str(path)!r} exists and is not a directory")
    anc = p
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise ScenarioError(option, f"cannot create directory {str(path)!r}: {str(anc)!r} is not a directory")
    why = write_problem(anc, "simaccept")
    if why:
        raise ScenarioError(option, why)


def _out_problem(out: Path) -> str | None:
    """Why ``--out`` cannot be written (checked before anything runs), or None: its directory
    must exist and take a new file, and ``out`` itself must not be a directory."""
    if str(out) in ("", "."):
        return "give a file name"
    try:
        return _out_file_problem(out)
    except (OSError, ValueError) as e:      # a name too long, a NUL byte: a traceback, exit 1
        return f"cannot use it: {getattr(e, 'strerror', None) or e}"


def _out_file_problem(out: Path) -> str | None:
    if out.is_dir():
        return "is a directory; give a file name"
    if not out.parent.is_dir():
        if out.parent.exists():
            return f"{str(out.parent)!r} is not a directory"
        return f"directory {str(out.parent)!r} does not exist"
    return write_problem(out.parent, out.name)


def write_problem(d: Path, name: str) -> str | None:
    """Why no file can be made in the directory ``d``, or None.  A file named after ``name`` is
    made and removed: os.access says yes to root everywhere (`--out /proc/x` passed it and
    failed after the run); this holds for root and for read-only file systems."""
    import tempfile
    try:
        fd, probe = tempfile.mkstemp(dir=d, prefix=f".{name}.", suffix=".probe")
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        import errno
        if e.errno == errno.ENOENT and d.is_dir():
            # /proc and /sys answer a new file's name with ENOENT: "No such file or directory"
            # about a directory that is there read as a typo in the path
            return f"cannot write in {str(d)!r}: it accepts no new files ({e.strerror})"
        return f"cannot write in {str(d)!r}: {e.strerror or e}"
    return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="simaccept", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate one scenario point")
    r.add_argument("scenario", help="scenario TOML file, or a bundled scenario's name (`simaccept scenarios`)")
    add_set_option(r, help="override a scenario key, as one argument: --set server.accept_limit=1 (the value is "
                           "TOML, as in a scenario file; a bare word is a string); repeatable")
    r.add_argument("--json", action="store_true", help="print the record as one JSON object")
    r.add_argument("--connections", default=None, metavar="FILE.csv",
                   help="also write the run's connections, one row each (first SYN, SYNs that arrived, established, "
                        "accepted, closed, done, outcome, requests, replies; times in s from the run's start, warm-up "
                        "included; empty where a connection never got there); a folder in the path that does not "
                        "exist is made")
    s = sub.add_parser("sweep", help="simulate every point of the scenario's grid")
    s.add_argument("scenario", help="scenario TOML file or bundled name; its list values are the sweep's axes")
    add_set_option(s, help="override a scenario key, as one argument: --set server.accept_limit=1; a TOML list, as "
                           "in a scenario file, makes it an axis: --set 'workload.rate=[10000,20000]' (quoted for "
                           "the shell); repeatable")
    s.add_argument("--jobs", type=int, default=1, help="worker processes (default 1); results are the same "
                   "whatever the number")
    s.add_argument("--dask", default=None, metavar="ADDRESS|local",
                   help="run the points on a Dask scheduler at ADDRESS, or on a local cluster of --jobs workers")
    s.add_argument("--out", required=True, help="directory for results.csv, the figures and the point cache "
                   "(OUT/points: a rerun computes only what is missing)")
    s.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    s.add_argument("--no-table", action="store_true",
                   help="do not print the replies/s table (target rate x policy) on stdout")
    s.add_argument("--parquet", action="store_true",
                   help="also write OUT/results.parquet (typed columns; needs pyarrow, installed by make venv)")
    g = sub.add_parser("figures", help="regenerate every figure of thesis chapters 4 and 5 in simulation")
    g.add_argument("--out", default="out/figures", help="output directory (default out/figures; each sweep's "
                   "points are cached there, so a rerun only redraws)")
    g.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    add_fit_args(sub.add_parser("fit", help="fit cost parameters to records (validation package)"))
    add_predict_args(sub.add_parser("predict", help="simulate measured records with a cost profile and "
                                    "show the error (validation package)"))
    k = sub.add_parser("keys", help="list every scenario key: its type, default, range and meaning")
    k.add_argument("filter", nargs="?", default=None, metavar="TEXT",
                   help="only the keys whose name or meaning contains TEXT (e.g. workload., timeout); any case")
    k.add_argument("--markdown", action="store_true", help="as a Markdown table (docs/scenario-keys.md is this)")
    sc = sub.add_parser("scenarios", help="list the scenarios that come with simaccept (run or sweep them by name)")
    sc.add_argument("filter", nargs="?", default=None, metavar="TEXT",
                    help="only the names containing TEXT (e.g. thesis, onepacket); any case")
    return p


def shown(e: ScenarioError) -> str:
    """The message for the terminal (``str(e)``: a flag or the file is not named as a scenario key;
    a bad run_sweep argument by the flag it stands for, ``--jobs`` where Python says ``jobs``).

    Shared with ``python -m realsys``, which loads scenarios the same way."""
    from .sweep import ArgumentError
    return f"{e.key}: {e.reason}" if isinstance(e, ArgumentError) else str(e)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taken the way Ctrl-C is: a sweep's workers are stopped and its
    finished points kept.  Their default action killed the parent alone, and its pool
    workers stayed behind, blocked on its pipe, until killed by hand."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def _raise_terminated(signum, frame):
    raise Terminated(signum)


@contextlib.contextmanager
def termination_signals_as_interrupt():
    """SIGTERM and SIGHUP raise :class:`Terminated` inside the block; the handlers they replace
    are put back after it (a notebook or test calling main() keeps its own).  Shared by
    ``simaccept`` and ``python -m validation``.  Only the main thread can set handlers: from
    another the block runs with none installed."""
    old = {}
    if threading.current_thread() is threading.main_thread():
        old[signal.SIGTERM] = signal.signal(signal.SIGTERM, _raise_terminated)
        if signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # nohup's ignore stands
            old[signal.SIGHUP] = signal.signal(signal.SIGHUP, _raise_terminated)
    try:
        yield
    finally:
        for sig, h in old.items():
            if h is not None:           # None: set from C, cannot be put back from Python
                signal.signal(sig, h)


def _load(path: str, overrides):
    sc = load_scenario(path, overrides)
    # defaults are a scenario of their own, but an empty file is more often a mistake
    # (a regular file only: a pipe read again here would look empty)
    if Path(path).is_file() and not tomllib.loads(Path(path).read_text(encoding="utf-8-sig")):
        print(f"warning: {path} sets no key: every key not given with --set takes its default "
              "(`simaccept/scenario.py`, SCHEMA)", file=sys.stderr)
    return sc


def _is_bundled_name(word: str) -> bool:
    """``word`` names a bundled scenario, with or without its folder (tux-onepacket)."""
    from . import bundled
    return any(n == word or n.rsplit("/", 1)[-1] == word for n in bundled.names())


def set_without_value(argv) -> str | None:
    """The refusal of a --set whose value has no '=' (``--set server.accept_limit 1``), or None.
    argparse took the key as the whole value and refused what followed: "unrecognized
    arguments: 1", no word of --set.  Shared with ``python -m validation``."""
    argv = list(argv)
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == "--set" and i + 1 < len(argv):
            key, after = argv[i + 1], argv[i + 2:i + 3]
        elif a.startswith("--set="):
            key, after = a[len("--set="):], argv[i + 1:i + 2]
        else:
            continue
        if "=" in key or key.startswith("-"):
            continue
        # what followed, unless it is an option or the scenario (run --set KEY thesis/x, or a
        # bundled name without its folder)
        value = (after[0] if after and not after[0].startswith("-") and "/" not in after[0]
                 and not after[0].endswith(".toml") and not _is_bundled_name(after[0]) else "VALUE")
        import shlex
        return (f"--set {key}: expected SECTION.KEY=VALUE as one argument, e.g. --set "
                f"{shlex.quote(f'{key}={value}') if value != 'VALUE' else f'{key}=VALUE'}")
    return None


#: ``prog`` of every subcommand parser given --set by :func:`add_set_option` ("simaccept run",
#: "python -m validation fit"): how :func:`split_set` tells them apart without argparse's
#: private ``_actions``.
_TAKES_SET: set[str] = set()


class _SetOnce(argparse._AppendAction):
    """``--set``'s append that refuses a key given twice on one command line.  The loader lets
    the last of its overrides win (the report and the fitter put the user's --set after their
    own), but two on one line are a slip: `--set workload.rate=1000 --set workload.rate=2000`
    meant a sweep axis and ran 2000 alone."""

    def __call__(self, parser, namespace, values, option_string=None):
        key = values.split("=", 1)[0].strip() if "=" in values else None
        for earlier in getattr(namespace, self.dest, None) or ():
            if key is not None and "=" in earlier and earlier.split("=", 1)[0].strip() == key:
                first, second = earlier.split("=", 1)[1].strip(), values.split("=", 1)[1].strip()
                import shlex
                axis = ("" if first.startswith("[") or second.startswith("[") else
                        f" (a sweep takes a list: --set {shlex.quote(f'{key}=[{first}, {second}]')})")
                parser.error(f"--set {key}: given twice ({first} and {second}); give it once{axis}")
        super().__call__(parser, namespace, values, option_string)


def add_set_option(p: argparse.ArgumentParser, help: str | None = None, **kw) -> None:
    """Give subcommand parser ``p`` a repeatable ``--set SECTION.KEY=VALUE`` that :func:`split_set`
    knows of, and that refuses one key given twice.  Every CLI here adds --set through this, or a
    split --set is left to argparse."""
    p.add_argument("--set", action=_SetOnce, default=[], metavar="SECTION.KEY=VALUE", help=help, **kw)
    _TAKES_SET.add(p.prog)


def split_set(parser: argparse.ArgumentParser, argv) -> str | None:
    """:func:`set_without_value` of ``argv`` if its subcommand took --set from :func:`add_set_option`,
    else None (a subcommand without one has argparse's own refusal: the advice to join
    KEY=VALUE would be refused again).  Shared with ``python -m validation`` and realsys."""
    argv = list(argv)
    cmd = next((a for a in argv if not a.startswith("-")), None)
    # argparse names a subcommand's parser "<parent prog> <name>" when, as in every CLI here, no
    # positional comes before the subcommand
    if cmd is None or f"{parser.prog} {cmd}" not in _TAKES_SET:
        return None
    return set_without_value(argv)


def stdout_gone() -> int:
    """Status 1 after a BrokenPipeError on stdout (``simaccept scenarios | head``, which printed a
    traceback): stdout is pointed at /dev/null, so the interpreter's flush at exit fails
    quietly too (the recipe of Python's signal module documentation).  Shared with
    ``python -m validation`` and realsys."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):       # no real stdout (a test's capture)
        pass
    return 1


def main(argv=None) -> int:
    try:
        return _cli(argv)
    except BrokenPipeError:
        return stdout_gone()


def _cli(argv=None) -> int:
    why = split_set(_parser(), sys.argv[1:] if argv is None else argv)
    if why:
        print(f"error: {why}", file=sys.stderr)
        return 2
    args = _parser().parse_args(argv)
    with termination_signals_as_interrupt():
        return _main(args)


def _key_range(spec) -> str:
    """A key's values in words, as its refusals state them."""
    from .scenario import MAX_ACCEPT_LIMIT, _bound
    if spec.kind == "choice":
        return " | ".join(spec.choices)
    if spec.kind == "limit":
        return f'1-{MAX_ACCEPT_LIMIT:,} or "inf"'
    if spec.kind == "bool":
        return "true | false"
    if spec.kind == "str":
        return "text"
    lo = "" if spec.lo is None else (f"> {_bound(spec.lo)}" if spec.lo_open else f">= {_bound(spec.lo)}")
    hi = "" if spec.hi is None else f"<= {_bound(spec.hi)}"
    text = ", ".join(x for x in (lo, hi) if x) or "any"
    if spec.kind == "float_or_none":
        text += ', or "none"'
    if spec.sentinel is not None:
        text += f" (or {_bound(spec.sentinel)}: the profile's default)"
    return text


def key_rows(text: str | None = None) -> list[tuple[str, str, str, str, bool, str]]:
    """(section.key, type, default, values, sweepable, meaning) for every key of
    :data:`simaccept.scenario.SCHEMA` in schema order; ``text``: only those whose name or meaning
    contains it, any case."""
    from .scenario import _fmt
    kinds = {"float": "number", "int": "integer", "limit": "accept-limit", "float_or_none": "number"}
    rows = []
    for section, keys in SCHEMA.items():
        for name, spec in keys.items():
            full = f"{section}.{name}"
            if text and text.lower() not in f"{full} {spec.doc}".lower():
                continue
            default = "none" if spec.default is None else _fmt(spec.default)
            rows.append((full, kinds.get(spec.kind, spec.kind), default, _key_range(spec), spec.sweepable,
                         " ".join(spec.doc.split())))
        if section == "costs":
            # the per-cost keys are not in SCHEMA (too many to list there): one row for them all
            from .costs import COST_NAMES
            doc = ("One per-operation cost in µs, in place of the profile's value: "
                   + ", ".join(COST_NAMES) + ".")
            if not text or text.lower() in f"costs.<cost> {doc}".lower():
                rows.append(("costs.<cost>", "number", "the profile's", ">= 0", True, doc))
    return rows


def keys_text(rows) -> str:
    """The rows for a terminal: one key a paragraph."""
    out = []
    for full, kind, default, values, sweep, doc in rows:
        out.append(f"{full}  ({kind}, default {default}; {values}{'' if sweep else '; not a sweep axis'})\n"
                   f"    {doc}")
    return "\n".join(out)


def keys_markdown(rows) -> str:
    """The rows as the Markdown table of docs/scenario-keys.md."""
    esc = lambda x: str(x).replace("|", "\\|")  # noqa: E731
    lines = ["| key | type | default | values | sweep | meaning |", "|---|---|---|---|---|---|"]
    lines += [f"| `{full}` | {kind} | `{esc(default)}` | {esc(values)} | {'yes' if sweep else 'no'} | {esc(doc)} |"
              for full, kind, default, values, sweep, doc in rows]
    return "\n".join(lines)


#: Longest description `simaccept scenarios` prints (its names take 35 columns more).
DESCRIBE_MAX = 100


def describe(text: str, limit: int = DESCRIBE_MAX) -> str:
    """A scenario file's description: the first sentence of its leading comment.  The first
    line alone was cut mid-sentence ("... (thesis table 4.8: 14-17 % of").  A sentence longer
    than ``limit`` loses its parentheses if that is enough, else is cut after a word (not inside
    a parenthesis), with "..."."""
    import re
    lines = []
    for ln in text.splitlines():
        if not ln.strip() and not lines:
            continue            # blank lines before the comment
        if not ln.startswith("#"):
            break
        ln = ln.lstrip("#").strip()
        if not ln:
            if lines:
                break           # the first paragraph
            continue
        lines.append(ln)
    para = " ".join(lines)
    # a sentence ends at . ? ! before two spaces (the files' style) or a capital: not at
    # "ch. 4.2.1", "e.g. the", "2.4.20"
    first = re.split(r"(?<=[.?!])(?:\s{2,}|\s+(?=[A-Z]))", para, maxsplit=1)[0]
    if len(first) > limit:      # without its parentheses, if that is short enough
        bare = first
        while (shorter := re.sub(r"\s*\([^()]*\)", "", bare)) != bare:     # innermost first
            bare = shorter
        if len(bare) <= limit and "(" not in bare and ")" not in bare:
            first = bare
    if len(first) > limit:
        cut = first[:limit - 3].rsplit(" ", 1)[0]
        opened = []                                     # not inside a parenthesis
        for i, c in enumerate(cut):
            if c == "(":
                opened.append(i)
            elif c == ")" and opened:
                opened.pop()
        cut = cut[:opened[0]] if opened else cut
        first = cut.rstrip(" ,;:/-") + "..." if cut.strip(" ,;:/-") else ""
    if not first:               # all in parentheses, or no comment at the top: its first comment line
        first = next((ln.lstrip("#").strip() for ln in text.splitlines()
                      if ln.startswith("#") and ln.lstrip("#").strip()), "")
        first = first if len(first) <= limit else first[:limit - 3].rstrip() + "..."
    return first


def _list_scenarios(pattern: str | None = None) -> int:
    """Each bundled scenario's name and the first sentence of its leading comment; with
    ``pattern``, only the names containing it."""
    from . import bundled
    d = bundled.scenario_dir()
    every = bundled.names()
    if not every:
        print(f"error: {bundled.suggest('')}", file=sys.stderr)
        return 1
    shown = [n for n in every if pattern is None or pattern.lower() in n.lower()]
    if not shown:
        print(f"error: no bundled scenario's name contains {pattern!r} (`simaccept scenarios` lists all "
              f"{len(every)}; folders: {', '.join(sorted({n.split('/')[0] for n in every if '/' in n}))})",
              file=sys.stderr)
        return 2
    width = max(map(len, shown))
    for name in shown:
        print(f"{name:<{width}}  {describe((d / f'{name}.toml').read_text(encoding='utf-8-sig'))}")
    print(f"({len(shown)} of {len(every)} files under {d})" if pattern is not None
          else f"({len(every)} files under {d})", file=sys.stderr)
    return 0


def _list_hint(e: ScenarioError, overrides, cmd: str | None) -> str:
    """For a refused ``simaccept sweep --set workload.rate=10000,20000``: how a list (a sweep
    axis) is written.  The value was taken as the string "10000,20000", refused as "must be a
    number".  Only for sweep (run takes one point) and a refused value, not an unknown key;
    not when the refusal says it already.  For ``--set server.policy=[accept-limit,queue-aware]``
    (any command): TOML reads no bare word, so the whole text was one string, refused as an
    unknown policy; the hint shows the words quoted."""
    if e.reason.startswith("unknown key") or "a sweep axis is a list" in e.reason:
        return ""
    for item in overrides:
        key, _, text = item.partition("=")
        text = text.strip()
        if key.strip() != e.key:
            continue
        if text.startswith("[") and text.endswith("]"):
            if _key_kind(e.key) not in ("str", "choice"):     # quoting a word for a number leads to the next refusal
                continue
            try:        # TOML read it: its words are quoted, and the refusal is of a value
                tomllib.loads(f"v = {text}")
                continue
            except tomllib.TOMLDecodeError:
                pass
            listed = _quoted_list(text[1:-1])
            if listed is not None and listed != text:
                return f" (TOML quotes a word in a list: --set '{key.strip()}={listed}')"
        elif (cmd == "sweep" and e.reason.startswith("must be") and "," in text
              and not text.startswith(("[", '"', "'"))):
            listed = _quoted_list(text)
            if listed is not None:
                return f" (a list, a sweep axis, is written in brackets: --set '{key.strip()}={listed}')"
    return ""


def _key_kind(dotted: str) -> str | None:
    """The schema's kind of ``section.key`` (None for a cost or an unknown key)."""
    from .scenario import SCHEMA
    section, _, key = dotted.partition(".")
    spec = SCHEMA.get(section, {}).get(key)
    return spec.kind if spec is not None else None


def _quoted_list(text: str) -> str | None:
    """``text``'s comma-separated items as a TOML list, bare words quoted (a number, inf or
    true stays as written); None if even that is not TOML."""
    import json
    import tomllib
    parts = []
    for part in (p.strip() for p in text.split(",")):
        try:
            tomllib.loads(f"v = {part}")
            parts.append(part)
        except tomllib.TOMLDecodeError:
            parts.append(json.dumps(part))
    listed = "[" + ",".join(parts) + "]"
    try:
        tomllib.loads(f"v = {listed}")
    except tomllib.TOMLDecodeError:
        return None
    return listed


def _axes_reason(axes) -> str:
    """Why `simaccept run` refuses a scenario with sweep axes: every axis, not only the first
    (fixing the one named used to lead to the next refusal), with a --set for each to copy."""
    if len(axes) == 1:
        return "is a sweep axis (a list); `simaccept run` needs one point: fix it with --set, or use `simaccept sweep`"
    others = ", ".join(k for k, _ in axes[1:])
    from .sim import override_text
    example = " ".join(f"--set {k}={override_text(v[0])}" for k, v in axes)
    return (f"is a sweep axis (a list), and so {'is' if len(axes) == 2 else 'are'} {others}; `simaccept run` "
            f"needs one point: fix each with --set (e.g. {example}), or use `simaccept sweep`")


def _connections_file(path: str) -> None:
    """Refuse a --connections path no file can be written at, before the run (it may take minutes)."""
    if not str(path).strip():
        raise ScenarioError("--connections", "must name a file, got an empty string")
    p = Path(path)
    if p.is_dir():
        raise ScenarioError("--connections", f"{path!r} is a directory; give a file name (e.g. "
                                             f"{path.rstrip('/')}/connections.csv)")
    _out_dir(str(p.parent), "--connections")


def write_connections(path: str | Path, host) -> int:
    """Write :func:`simaccept.metrics.per_connection_rows` of ``host`` as CSV, atomically (a reader
    sees the old file or the whole new one), ``outcome`` by name and an empty field for NaN;
    returns the number of rows."""
    import csv
    import io
    from .host import OUTCOME_NAMES
    from .metrics import per_connection_rows
    from .sweep import atomic_write
    rows = per_connection_rows(host)
    cols = []
    for name, col in rows.items():
        if name == "outcome":
            cols.append([OUTCOME_NAMES[int(v)] for v in col.tolist()])
        elif col.dtype.kind == "f":
            cols.append(["" if v != v else repr(v) for v in col.tolist()])   # v != v: NaN
        else:
            cols.append(col.tolist())
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(rows)
    w.writerows(zip(*cols))
    atomic_write(Path(path), buf.getvalue())
    return len(cols[0]) if cols else 0


def _main(args) -> int:
    try:
        if args.cmd == "scenarios":
            return _list_scenarios(args.filter)
        if args.cmd == "keys":
            rows = key_rows(args.filter)
            if not rows:
                print(f"error: no scenario key contains {args.filter!r} (simaccept keys lists them all)",
                      file=sys.stderr)
                return 2
            print(keys_markdown(rows) if args.markdown else keys_text(rows))
            return 0
        if args.cmd == "run":
            sc = _load(args.scenario, args.set)
            if sc.axes:
                raise ScenarioError(sc.axes[0][0], _axes_reason(sc.axes))
            from .sim import simulate
            from .sweep import SIM_IGNORES
            # as a sweep along it warns: 60,000-byte requests ran as 80-byte ones without a word
            # (the realsys.* keys are not named: a realsys scenario is simulated as it is measured)
            set_idle = []
            for k in sorted(SIM_IGNORES):
                section, _, name = k.partition(".")
                if section != "realsys" and sc.get(k) != SCHEMA[section][name].default:
                    set_idle.append(k)
            if set_idle:
                print(f"warning: the simulator does not read {', '.join(set_idle)}: this run is the "
                      f"one its default gives (a simulated request is one segment whatever its size)",
                      file=sys.stderr)
            unwritten = None        # why --connections was not written
            if args.connections is not None:
                _connections_file(args.connections)
                rec, host = simulate(sc, return_host=True)
                if rec.status == "ok":
                    try:
                        n = write_connections(args.connections, host)
                        print(f"{n} connections -> {args.connections}", file=sys.stderr)
                    except OSError as e:    # a full disk: the record is still printed
                        unwritten = e.strerror or str(e)
            else:
                rec = simulate(sc)
            if args.json:
                print(rec.to_json())     # a failed record too: it carries the error and the config
            elif rec.status == "ok":
                print(f"{rec.scenario}: {rec.replies_per_s:.0f} replies/s (target {rec.target_rate:.0f}), "
                      f"drops/s {rec.qdrops_per_s:.0f}, mean response {rec.resp_ms_mean:.1f} ms")
            if rec.status != "ok":
                not_written = f" (--connections {args.connections} not written)" if args.connections else ""
                print(f"error: the run failed{not_written}: {rec.error}", file=sys.stderr)
                return 1
            if unwritten is not None:
                print(f"error: --connections {args.connections}: not written: {unwritten}", file=sys.stderr)
                return 1
            if not rec.conn_attempts_per_s > 0:
                # not an error (the record is what was asked for), but no measurement either
                print(f"warning: no connection was offered in the {rec.duration_s:g} s measured window "
                      f"(workload.rate x scenario.duration = {sc['workload']['rate'] * rec.duration_s:.3g} "
                      f"requests): its rates are of no load", file=sys.stderr)
            return 0
        if args.cmd == "sweep":
            if args.jobs < 1:
                raise ScenarioError("--jobs", f"must be >= 1, got {args.jobs}")
            sc = _load(args.scenario, args.set)
            from .sweep import _pyarrow, run_sweep
            if args.parquet:
                try:
                    _pyarrow()
                except ImportError as e:
                    raise ScenarioError("--parquet", str(e)) from None
            _out_dir(args.out)
            points = Path(args.out) / "points"
            cached = points.is_dir() and any(points.glob("*.json"))
            simulated = []          # run_sweep calls on_point for the points it simulates, not those it reuses
            args.started, args.simulated = time.time(), simulated
            from .sweep import failed_points_message
            recs = run_sweep(sc, args.out, jobs=args.jobs, dask=args.dask, progress=not args.no_progress,
                             parquet=args.parquet, on_point=simulated.append, warn=False)
            failed = [r for r in recs if r.status != "ok"]
            why = failed_points_message(recs)
            if why:                 # the count alone sent the user to results.csv's error column
                print(f"warning: {why}", file=sys.stderr)
            idle = [r for r in recs if r.status == "ok" and not r.conn_attempts_per_s > 0]
            if idle:                # as run warns: rates of no load, cached as finished points
                print(f"warning: {len(idle)} of {len(recs)} point{'' if len(recs) == 1 else 's'} offered no "
                      f"connection in the measured window (workload.rate x scenario.duration < 1 request; "
                      f"first: {idle[0].point or idle[0].scenario}): their rates are of no load",
                      file=sys.stderr)
            if not args.no_table:
                from .plots import throughput_table
                table = throughput_table(recs)
                if table:
                    print(table)
            also = " and results.parquet" if (Path(args.out) / "results.parquet").exists() else ""
            print(f"{len(recs)} point{'' if len(recs) == 1 else 's'} -> {args.out}/results.csv{also} ({len(failed)} failed)")
            if cached:              # a rerun: a silent one did not say whether the cache served it
                reused = len(recs) - len(simulated)
                why = ""
                if not reused:
                    # a policy that cannot be keyed is never cached (run_sweep said so above):
                    # blaming the cache's other scenarios would send the user looking there
                    from .sweep import policy_key
                    unread = sorted(pol for pol in {r.policy for r in recs} if policy_key(pol) is None)
                    why = (f" (policy {', '.join(unread)} is never cached: a value its class uses has no stable "
                           "form)" if unread
                           else " (the points cached there are of other scenarios, costs or model code)")
                print(f"{reused} of {len(recs)} point{'' if len(recs) == 1 else 's'} reused from {points}, "
                      f"{len(simulated)} simulated{why}", file=sys.stderr)
            return 1 if failed else 0
        if args.cmd == "figures":
            if args.jobs < 1:
                raise ScenarioError("--jobs", f"must be >= 1, got {args.jobs}")
            _out_dir(args.out)
            from .figures import NoMatplotlib, make_figures
            try:
                make_figures(args.out, jobs=args.jobs)
            except NoMatplotlib as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            return 0
        if args.cmd in ("fit", "predict"):
            try:
                from validation.cli import fit_main, predict_main
            except ImportError:
                print("error: the validation package is not installed", file=sys.stderr)
                return 2
            return (fit_main if args.cmd == "fit" else predict_main)(args)
    except ScenarioError as e:
        print(f"error: {shown(e)}{_list_hint(e, getattr(args, 'set', None) or [], args.cmd)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as e:
        by = f" by {signal.Signals(e.signum).name}" if isinstance(e, Terminated) else ""
        if args.cmd in ("sweep", "figures"):    # they cache each finished point under OUT
            print(f"interrupted{by}; {_kept_points(args)} (rerun to resume){_stale_results(args)}",
                  file=sys.stderr)
        elif args.cmd in ("fit", "predict") and getattr(args, "cache", None):
            print(f"interrupted{by}; {'no profile' if args.cmd == 'fit' else 'nothing'} written; finished "
                  f"simulations are kept in {args.cache} (rerun the same {args.cmd} to reuse them)", file=sys.stderr)
        else:                                   # run, fit, predict write nothing until the end
            print(f"interrupted{by}; nothing written ({args.cmd} keeps no partial results"
                  + (f"; {args.cmd} --cache DIR keeps its simulations" if args.cmd in ("fit", "predict") else "")
                  + ")", file=sys.stderr)
        return 128 + e.signum if isinstance(e, Terminated) else 130
    except SweepError as e:
        print(f"error: {e}{_stale_results(args)}", file=sys.stderr)
        return 1
    return 0


def _kept_points(args) -> str:
    """Which finished points an interrupted sweep or figures run kept, and where ("finished
    points are kept" was said when none had finished, and named no folder)."""
    if args.cmd != "sweep":
        return f"finished points are kept under {args.out} (one folder per figure)"
    points = Path(args.out) / "points"
    new = sum(r.status == "ok" for r in getattr(args, "simulated", ()))
    try:
        there = sum(1 for _ in points.glob("*.json"))
    except OSError:
        there = new
    earlier = f"; {points} holds {there} in all" if there != new else ""
    if not new:
        return f"no point finished in this run{earlier}"
    return f"the {new} point{'' if new == 1 else 's'} finished in this run {'is' if new == 1 else 'are'} kept in {points}{earlier}"


def _stale_results(args) -> str:
    """For a sweep that ended early: that OUT's results.csv, if there is one, is an earlier
    sweep's (results are written when every point is done), or ""."""
    started = getattr(args, "started", None)
    csv_path = Path(getattr(args, "out", None) or ".") / "results.csv"
    try:
        if started is None or args.cmd != "sweep" or csv_path.stat().st_mtime >= started:
            return ""
    except OSError:
        return ""
    return f"; {csv_path} (and the figures beside it) are still an earlier sweep's, not this one's"


if __name__ == "__main__":
    sys.exit(main())

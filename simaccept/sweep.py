"""Sweeps: the grid of a scenario's list values, run point by point.

* The grid is the product of the axes (simaccept.scenario).  Every point has
  its own seed, derived with ``numpy.random.SeedSequence`` from the base seed
  and the point's coordinates, so a result does not depend on how the sweep
  is split or on which worker ran it.
* Finished points are cached by content hash under ``OUT/points/`` (one JSON
  file per point, written atomically), so an interrupted sweep resumes and
  recomputes nothing it had finished.  The hash covers the model's code; a
  policy registered from outside simaccept is keyed by its class's own source
  too (:func:`policy_key`), so editing it recomputes its points.
* An interrupted sweep (Ctrl-C, or SIGTERM/SIGHUP through the CLI) kills its
  workers before the exception goes on, and a worker dies with its parent even
  when the parent is SIGKILLed: they used to outlive a SIGTERMed parent,
  blocked on its pipe, for good.  A worker that dies on its own (the OOM
  killer: one point may take ~12 GB) ends the sweep with a
  :class:`SweepError` that says so; the finished points are kept either way.
* Points run on a local process pool (``jobs``) or on a Dask cluster
  (``dask="local"`` or a scheduler address).
* ``OUT/results.csv`` (one row per point, the record columns, written
  atomically) and the thesis-style plots are produced at the end; with
  ``parquet=True`` also ``OUT/results.parquet``: the same rows with typed
  columns (text as strings, every number as float64, "not measured" as null,
  where a CSV has an empty cell), for pandas/Arrow users.
"""
from __future__ import annotations

import csv
import functools
import hashlib
import io
import json
import math
import numbers
import os
import re
import signal
import sys
import tempfile
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Callable, Iterable

from .record import _TEXT, COLUMNS, RunRecord
from .scenario import SCHEMA, Scenario, ScenarioError


#: A temp file of :func:`atomic_write` lives for milliseconds; one this old is an orphan.
ORPHAN_AGE_S = 60.0


def _remove_orphans(d: Path, ours: Callable[[str], bool]) -> None:
    """Remove atomic_write's temp files that a SIGKILL left in ``d`` (between the write and the
    rename: 1 kill in 31 in an audit).  Never read, they were never removed either.  Only the
    temp files of names ``ours`` says the sweep writes: a user's own ``.draft.tmp`` in an
    --out folder was removed too."""
    now = time.time()
    for f in d.glob(".*.tmp"):
        target, _, rand = f.name[1:-len(".tmp")].rpartition(".")
        if not (len(rand) == 8 and ours(target)):       # mkstemp's 8 random characters
            continue
        try:
            if now - f.stat().st_mtime > ORPHAN_AGE_S:
                f.unlink()
        except OSError:
            pass


def atomic_write(path: Path, data) -> None:
    """Write ``data`` (str, bytes, or a callable that writes a given temp path)
    to ``path`` atomically: a reader sees the old file or the whole new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if callable(data):
            os.close(fd)
            data(tmp)
            with open(tmp, "rb") as f:      # on disk before the rename, as the str and bytes writes are
                os.fsync(f.fileno())
        else:
            # UTF-8 whatever the locale: every reader here reads UTF-8 (under LC_ALL=C a records
            # file named données.csv in a profile's header was a UnicodeEncodeError)
            with (os.fdopen(fd, "wb") if isinstance(data, bytes) else os.fdopen(fd, "w", encoding="utf-8")) as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o644)        # mkstemp creates 0600; results are for sharing
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def records_to_csv(records: Iterable[RunRecord]) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in records:
        row = r.to_dict()
        w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()})
    return buf.getvalue()


def read_csv(path) -> list[RunRecord]:
    with open(path, newline="", encoding="utf-8") as f:     # as atomic_write writes it, whatever the locale
        return [RunRecord.from_dict(row) for row in csv.DictReader(f)]


def _pyarrow():
    """pyarrow and pyarrow.parquet, or ImportError saying how to install them."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("Parquet needs pyarrow: pip install 'simaccept[parquet]' (make venv installs it)") from None
    return pyarrow, pyarrow.parquet


def write_parquet(records: Iterable[RunRecord], path) -> None:
    """Write records to a Parquet file atomically: one row per record, the record
    columns in order, text as string and every number as float64 with NaN stored as
    null (the schema is fixed by RunRecord, so an all-NaN column keeps its type)."""
    pa, pq = _pyarrow()
    from . import __version__
    from .scenario import model_fingerprint
    schema = pa.schema([(c, pa.string() if c in _TEXT else pa.float64()) for c in COLUMNS],
                       metadata={"simaccept_version": __version__, "simaccept_model_fingerprint": model_fingerprint()})
    rows = [r.to_dict() for r in records]
    cols = {c: [None if isinstance(d[c], float) and math.isnan(d[c]) else d[c] for d in rows] for c in COLUMNS}
    table = pa.Table.from_pydict(cols, schema=schema)
    atomic_write(Path(path), lambda tmp: pq.write_table(table, tmp))


def read_parquet(path) -> list[RunRecord]:
    """Records from a Parquet file written by :func:`write_parquet` (or any file with
    record columns); an unknown column is refused by RunRecord.from_dict."""
    pa, pq = _pyarrow()
    table = pq.read_table(path)
    # RunRecord.from_dict takes what a CSV cell can be: text, or a number.  A binary column's
    # b"x" was read as the text "b'x'", a list or struct cell as its repr.
    from .record import _TEXT
    for field in table.schema:
        t = field.type
        text = pa.types.is_string(t) or pa.types.is_large_string(t)
        number = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
        if not (pa.types.is_null(t) or (text if field.name in _TEXT else number)):
            raise ValueError(f"{path}: record column {field.name!r} is of Parquet type {t}, not "
                             f"{'text' if field.name in _TEXT else 'a number'}")
    return [RunRecord.from_dict(row) for row in table.to_pylist()]


def _run_point(values_json: str, point_key, coords, source: str, expect: str | None = None) -> dict:
    """Simulate one point; ``expect``: its cache key as the sweep computed it at the start.

    A point reads its cost profile, and a worker imports a server's model, when it runs: a
    file edited while a long sweep ran was simulated under the key of its earlier contents,
    and once the edit was undone a rerun reused that point.  So the key is taken again before
    and after the run, and a point whose files changed meanwhile is failed, not cached."""
    from .sim import simulate
    sc = Scenario(json.loads(values_json), source, tuple(point_key), tuple(tuple(c) for c in coords))
    before = _key_now(sc) if expect is not None else None
    try:
        rec = simulate(sc)
    except ScenarioError as e:
        # the sweep checked every point before the first ran, so what is refused now changed on
        # disk since (a cost profile deleted): that point fails, where the whole sweep stopped
        # with exit 2, "refused before anything ran", and no results.csv of the points done
        from .sim import _identity
        rec = RunRecord(**_identity(sc), status="failed",
                        error=f"ScenarioError: {e} (it could be read when the sweep started)")
    if expect is not None and rec.status == "ok" and not before == _key_now(sc) == expect:
        rec.status = "failed"
        rec.error = ("a cost profile or the model's code changed on disk while this point ran, so it is not "
                     "what its cache key says: not kept; rerun the sweep")
    return rec.to_dict()


def _key_now(sc: Scenario) -> str | None:
    """The point's cache key from the files as they are now; None if they cannot be read (a
    profile deleted meanwhile: simulate() says why, and a point that ran is not kept)."""
    try:
        return sc.content_hash()
    except Exception:
        return None


#: Most points one sweep may have.  Building the grid alone took 9.3 s at 100,000 points,
#: and 1,000,000 (three 100-value axes) ran past 2.6 GB without finishing; at ~1 s of CPU a
#: point, 100,000 is already more than a day on two cores.
MAX_SWEEP_POINTS = 100_000


def check_grid_size(sc: Scenario) -> int:
    """The number of points of ``sc``'s grid; ScenarioError (naming the longest axis) past
    :data:`MAX_SWEEP_POINTS`, found from the axes' lengths before any point is built."""
    axes = sc.axes
    n = math.prod(len(v) for _, v in axes) if axes else 1
    if n > MAX_SWEEP_POINTS:
        longest = max(axes, key=lambda a: len(a[1]))[0]
        shape = " x ".join(f"{len(v)} ({k})" for k, v in axes)
        raise ScenarioError(longest, f"the sweep grid would have {n:,} points ({shape}), more than "
                            f"{MAX_SWEEP_POINTS:,}: split it into several sweeps")
    return n


#: Scenario keys the simulator does not read: those only realsys reads (realsys.spin_us is
#: simulated too: user work per request), and workload.request_bytes, since a simulated request
#: is one segment whatever its size (k_data_rx is per packet; realsys refuses the key).
SIM_IGNORES = frozenset({*(f"realsys.{k}" for k in SCHEMA["realsys"] if k != "spin_us"), "workload.request_bytes"})


class SweepError(RuntimeError):
    """A sweep that could not finish for a reason outside its scenario (a worker died), or, with
    ``run_sweep(..., raise_errors=True)``, one whose points failed."""


class ArgumentError(ScenarioError):
    """A bad argument of :func:`run_sweep` (``jobs``, ``out``, ``dask``): the message names the
    Python argument (``jobs: must be ...``); ``key`` is the command-line flag it stands for
    (``--jobs``), which the CLIs print instead (``simaccept.cli.shown``).  A ScenarioError,
    as before 2026-12-06, when its message named the flag from Python too."""

    def __init__(self, arg: str, reason: str):
        super().__init__(f"--{arg}", reason)
        self.arg = arg
        self.args = (f"{arg}: {reason}",)

    def __reduce__(self):
        return (type(self), (self.arg, self.reason))


class FailedPointsWarning(UserWarning):
    """:func:`run_sweep` returned records of points that failed (``status`` "failed", the reason
    in ``error``): their rates are NaN.  ``simaccept sweep`` says so itself and exits 1."""


def failed_points_message(records) -> str | None:
    """"N of M points failed ...; first: LABEL: ERROR", or None when none did."""
    failed = [r for r in records if r.status != "ok"]
    if not failed:
        return None
    return (f"{len(failed)} of {len(records)} point{'' if len(records) == 1 else 's'} failed (status 'failed', "
            f"rates NaN, the reason in 'error'); first: {failed[0].point or failed[0].scenario}: {failed[0].error}")


def _ours(cls: type) -> bool:
    """Whether ``cls`` is defined in simaccept (whose code the model fingerprint covers)."""
    mod = cls.__module__ or ""
    return mod == "simaccept" or mod.startswith("simaccept.")


class _Unkeyable(Exception):
    """A value a policy uses has no stable form (it prints as its address)."""


def _user_module(name: str | None) -> bool:
    """Whether the module ``name`` is the user's own: not the standard library's, an installed
    package's or simaccept's (whose code the fingerprint covers)."""
    if not name or name == "__main__":
        return True             # a function exec'd at a prompt has no module
    if name == "simaccept" or name.startswith("simaccept."):
        return False
    f = getattr(sys.modules.get(name), "__file__", None)
    if not f:
        return False            # built in, frozen, or a namespace package
    f = os.path.realpath(f)
    return not any(f.startswith(d) for d in _library_dirs())


@functools.lru_cache(maxsize=1)
def _library_dirs() -> tuple[str, ...]:
    """The standard library's and installed packages' folders (each with a trailing separator)."""
    import sysconfig
    paths = sysconfig.get_paths()
    return tuple(os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib")
                 if paths.get(k))


def _stable(v, seen: set) -> str:
    """A text that is the same for equal policy code and values in every process (no
    addresses, no hash-randomised set order); raises _Unkeyable for an object that has none.

    A function is its bytecode, constants, names, defaults, closure cells and the module
    globals its code names (a helper function, a module constant, and a user module's
    attributes it names, ``params.N``): what runs, not the file on disk, which a notebook
    edits without reloading, which holds two definitions of one class chosen at run time,
    and which a factory's or an attribute set from outside do not change.  A library's
    function or class is its name (its code is the library's version).  What it cannot
    read whole is refused (_Unkeyable): an object printed by its address or cut short
    ("..."), a bound method of an object with state."""
    import types
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return repr(v)
    if isinstance(v, (tuple, list)):
        return type(v).__name__ + "(" + ",".join(_stable(x, seen) for x in v) + ")"
    if isinstance(v, (set, frozenset)):
        return type(v).__name__ + "{" + ",".join(sorted(_stable(x, seen) for x in v)) + "}"
    if isinstance(v, dict):
        return "dict{" + ",".join(sorted(f"{_stable(k, seen)}:{_stable(x, seen)}" for k, x in v.items())) + "}"
    if isinstance(v, (staticmethod, classmethod)):
        return type(v).__name__ + ":" + _stable(v.__func__, seen)
    if isinstance(v, property):
        return "property:" + ",".join(_stable(f, seen) for f in (v.fget, v.fset, v.fdel))
    if isinstance(v, (functools.partial, functools.partialmethod)):
        return f"{type(v).__name__}:{_stable(v.func, seen)}:{_stable(v.args, seen)}:{_stable(v.keywords, seen)}"
    if isinstance(v, functools.cached_property):
        return "cached_property:" + _stable(v.func, seen)
    if isinstance(v, types.ModuleType):
        return "module:" + v.__name__
    if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "tobytes"):
        # a NumPy array prints its corners only ("...") past 1,000 elements: its bytes, whole
        return f"array:{v.dtype}:{v.shape}:{hashlib.sha256(v.tobytes()).hexdigest()}"
    if isinstance(v, type):
        import builtins     # a class exec'd at a prompt is in "builtins" too: only the real ones are short
        if (getattr(builtins, v.__name__, None) is v or _ours(v) or v in seen
                or not _user_module(v.__module__) and v.__module__ != "builtins"):
            return f"class:{v.__module__}.{v.__qualname__}"
        seen.add(v)
        # _abc_impl: an ABC's registry, printed by its address; a dataclass's field records
        # (their default's MISSING prints so too): the methods it generated carry them
        skip = ("__dict__", "__weakref__", "__doc__", "__module__", "__qualname__", "_abc_impl",
                "__dataclass_fields__", "__dataclass_params__")
        return f"class:{v.__module__}.{v.__qualname__}{{" + ",".join(
            f"{k}={_stable(x, seen)}" for k, x in sorted(vars(v).items()) if k not in skip) + "}"
    if isinstance(v, types.FunctionType):
        if v in seen or not _user_module(v.__module__):
            return f"fn:{v.__module__}.{v.__qualname__}"
        seen.add(v)
        names: list[str] = []
        out = [f"fn:{v.__module__}.{v.__qualname__}", _code(v.__code__, names),
               _stable(v.__defaults__, seen), _stable(v.__kwdefaults__, seen)]
        for cell in v.__closure__ or ():
            try:
                out.append(_stable(cell.cell_contents, seen))
            except ValueError:          # a cell not yet filled
                out.append("<empty cell>")
        g, used = v.__globals__, sorted(set(names))
        for n in used:
            if n not in g:
                continue
            out.append(f"{n}={_stable(g[n], seen)}")
            if isinstance(g[n], types.ModuleType) and _user_module(g[n].__name__):
                # params.N: the module's attributes the code names (a module is only its name)
                out += [f"{n}.{a}={_stable(getattr(g[n], a), seen)}" for a in used if hasattr(g[n], a)]
        return "(" + ";".join(out) + ")"
    wrapped = getattr(v, "__wrapped__", None)
    if wrapped is not None and callable(v):         # functools.lru_cache / cache of a helper
        return f"wrapped:{_stable(wrapped, seen)}"
    owner = getattr(v, "__self__", None)
    if callable(v) and (owner is None or isinstance(owner, types.ModuleType)):
        mod, qual = getattr(v, "__module__", None), getattr(v, "__qualname__", None)
        if mod and qual and not _user_module(mod):
            return f"ref:{mod}.{qual}"              # a library's function (np.clip, math.ceil)
    r = repr(v)
    if " at 0x" in r or " object at " in r or "..." in r:
        raise _Unkeyable(f"{type(v).__name__} {r[:60]}")
    return f"{type(v).__module__}.{type(v).__qualname__}:{r}"


def _code(co, names: list) -> str:
    """A code object's stable text (no file name or line numbers); collects the names it uses."""
    import types
    names.extend(co.co_names)
    consts = ",".join(_code(c, names) if isinstance(c, types.CodeType) else _stable(c, set()) for c in co.co_consts)
    return (f"code[{co.co_code.hex()}|{co.co_names}|{co.co_varnames}|{co.co_freevars}|{co.co_cellvars}|"
            f"{co.co_argcount},{co.co_posonlyargcount},{co.co_kwonlyargcount},{co.co_flags}|{consts}]")


def policy_key(policy: str) -> str | None:
    """What the cache key needs about ``server.policy`` beyond :func:`model_fingerprint`.

    Returns: "" for a policy whose classes are all simaccept's own (the fingerprint covers
    them); else a digest of each class in its MRO defined outside simaccept, as loaded: every
    method's code, defaults and closure, every class attribute's value, and the module
    globals (helper functions, constants) the code names (:func:`_stable`); None when a value
    there has no stable form (an object that prints as its address), and then the point is
    not cached at all.  Until 7 Dec 2026 it was the source on disk (``inspect.getsource``):
    an edited file not yet reloaded stored the old code's results under the new code's key,
    two definitions of one class shared a key, and an attribute set from outside or a
    factory's argument changed no key."""
    from .servers.policies import REGISTRY
    parts, seen = [], set()
    for c in REGISTRY[policy].__mro__:
        if c is object or _ours(c):
            continue
        try:
            parts.append(_stable(c, seen))
        except Exception:       # _Unkeyable, a repr that raises, a RecursionError: never cached
            return None
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16] if parts else ""


def _cache_name(p: Scenario, key: str | None) -> str | None:
    """The point's file under OUT/points, given its :func:`policy_key`; None: not cached."""
    if key is None:
        return None
    return f"{p.content_hash()}-{key}.json" if key else f"{p.content_hash()}.json"


def _worker_init(parent: int) -> None:
    """A worker dies of SIGTERM/SIGHUP outright (an ignored SIGHUP, nohup's, stays ignored);
    the parent turns them into an interruption and kills the workers it has left.  And it
    dies with its parent, even a SIGKILLed one: it would otherwise wait on the parent's pipe
    for good, since the other workers hold its write end open."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is not signal.SIG_IGN:
            signal.signal(sig, signal.SIG_DFL)
    if sys.platform.startswith("linux"):
        import ctypes
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:      # the parent died before the prctl: nobody to work for
            os._exit(1)


def worker_pool(jobs: int) -> ProcessPoolExecutor:
    """A process pool for simulations.  Forked where the platform can (Linux), so a policy
    registered in this process is known to the workers too (Python 3.14 defaults to
    forkserver, whose workers would not have it); workers as :func:`_worker_init` says.
    Stop it with :func:`stop_workers` when interrupted."""
    import multiprocessing
    ctx = multiprocessing.get_context("fork") if "fork" in multiprocessing.get_all_start_methods() else None
    return ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=_worker_init,
                               initargs=(os.getpid(),))


def stop_workers(ex: ProcessPoolExecutor) -> None:
    """Kill a pool's workers now: shutdown() alone lets each finish its point first (minutes
    at high rates), and a parent that dies meanwhile leaves them blocked on its pipe.  A
    second Ctrl-C/SIGTERM/SIGHUP while they are killed is ignored (it would cut the loop
    short and leave the rest running); the first one is already being acted on."""
    sigs = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    held = {}
    if threading.current_thread() is threading.main_thread():
        held = {sig: signal.signal(sig, signal.SIG_IGN) for sig in sigs}
    try:
        procs = list((getattr(ex, "_processes", None) or {}).values())    # no public handle before 3.14
        manager = getattr(ex, "_executor_manager_thread", None)
        for proc in procs:
            if proc.is_alive():
                proc.kill()
        ex.shutdown(wait=False, cancel_futures=True)
        for proc in procs:
            proc.join(5)
        # Until 3.12 the pool's manager thread closes its wake-up pipe while the interpreter's
        # exit hook may write to it unlocked: "OSError: Bad file descriptor" and a traceback
        # after Ctrl-C, in 9 of 100 exits here.  Once the thread is gone the hook skips the pipe.
        if manager is not None:
            manager.join(10)
    finally:
        for sig, h in held.items():
            if h is not None:           # None: set from C, cannot be put back from Python
                signal.signal(sig, h)


class NotAFileToRead(ValueError):
    """What :func:`read_regular` refuses; the message is the reason alone ("a directory")."""


def read_regular(path: Path, cap: int) -> bytes:
    """The bytes of ``path``, a regular file of at most ``cap`` bytes.  Raises NotAFileToRead
    ("a directory", "not a regular file", "larger than N bytes") before reading anything else:
    /dev/zero was read until MemoryError, a FIFO blocked; OSError as open() raises it."""
    import stat
    st = Path(path).stat()
    if not stat.S_ISREG(st.st_mode):
        raise NotAFileToRead("a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file")
    if st.st_size > cap:
        raise NotAFileToRead(f"larger than {cap:,} bytes")
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:             # grew since the stat
        raise NotAFileToRead(f"larger than {cap:,} bytes")
    return data


def read_cached(path: Path) -> dict | None:
    """The record dict a cache file holds, or None when it is missing, torn or incomplete (its
    run is then simulated again and the file rewritten): a JSON object with every record column
    and nothing else.  ``{"status": "ok"}`` made a RunRecord of defaults, an all-empty row of
    results.csv counted as a finished point ("0 failed")."""
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(d, dict) or set(d) != set(COLUMNS):
        return None
    # a number not measured is null (RunRecord.to_json; standard JSON, which JSON.parse and
    # strict readers take), or NaN in a file written before 7 Dec 2026
    d = {k: math.nan if v is None and k not in _TEXT else v for k, v in d.items()}
    try:
        RunRecord(**d)
    except (TypeError, ValueError):
        return None
    return d


def _load_cached(path: Path) -> RunRecord | None:
    d = read_cached(path)
    return RunRecord(**d) if d is not None else None     # None: missing, torn or incomplete: recompute


def run_sweep(sc: Scenario, out: str | Path | None = None, jobs: int = 1, dask: str | None = None,
              progress: bool = False, plots: bool = True,
              on_point: Callable[[RunRecord], None] | None = None, parquet: bool = False,
              raise_errors: bool = False, warn: bool = True) -> list[RunRecord]:
    """Run every point; return records in grid order.  ``parquet`` (needs ``out``) also
    writes ``OUT/results.parquet``; pyarrow is checked before any point runs.  A point that
    fails is a record of ``status`` "failed" (the sweep goes on): when any did, the sweep warns
    (:class:`FailedPointsWarning`, naming the first and its error) after writing its files, or
    with ``raise_errors`` raises :class:`SweepError` instead (every file written, the finished
    points kept).  With ``warn`` false it does not warn: the caller says it in its own words
    (:func:`failed_points_message` gives the line), as the CLI, figures and the validation report
    do.  Until 2026-12-06 it returned them without a word."""
    if not isinstance(sc, Scenario):    # a path was an AttributeError on its first use
        raise TypeError(f"sc: a Scenario (simaccept.load_scenario(path) reads one), got a {type(sc).__name__}"
                        + (f" {sc!r}" if isinstance(sc, (str, Path)) else ""))
    if on_point is not None:
        # on_point=5 failed once the first point had run, as a bare "'int' object is not callable"
        from .sim import check_callback
        check_callback("on_point", on_point, ("record",))
    if dask is not None and not str(dask).strip():
        # "" was taken for no --dask: the points ran locally without a word
        raise ArgumentError("dask", "must be a scheduler address or 'local', got an empty string")
    # as the CLI's --jobs: 0 or -5 ran serially and 2.5 or "2" failed later as a bare TypeError
    if not isinstance(jobs, numbers.Integral) or isinstance(jobs, bool) or jobs < 1:
        raise ArgumentError("jobs", f"must be an integer >= 1, got {jobs!r}")
    if out is not None and not isinstance(out, (str, os.PathLike)):
        # out=5 failed as Path()'s bare TypeError, naming no argument
        raise TypeError(f"out: a directory path (str or os.PathLike), got a {type(out).__name__}")
    if out is not None and not str(out).strip():
        # Path("") is "." and the results went into the working directory
        raise ArgumentError("out", "must name a directory, got an empty string")
    if parquet:
        if out is None:
            raise ValueError("parquet=True needs an out directory")
        _pyarrow()
    sc.check()      # values set after loading: [1000, 1000.0] ran twice, [1000, -5] failed at -5
    check_grid_size(sc)
    idle = [k for k, _ in sc.axes if k in SIM_IGNORES]
    if idle:
        print(f"warning: the simulator does not read {', '.join(idle)}: the points along "
              f"{'that axis' if len(idle) == 1 else 'those axes'} differ only in their random stream",
              file=sys.stderr)
    # Each point's values normalised (an np.float32 is not JSON; points() normalises a grid's,
    # a scenario without axes is itself), its seed key and coordinates kept, so a point run by
    # simulate(p) for p in sc.points() draws the same stream as here.
    points = [p.resolved() for p in sc.points()]
    from .sim import check_modelled
    for p in points:        # a setting no model reads: refused before the first point, not at it
        check_modelled(p)
    out = Path(out) if out is not None else None
    cache_dir = out / "points" if out is not None else None
    if cache_dir is not None:       # an unusable out fails now, not after the first point
        try:
            cache_dir.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ArgumentError("out", f"cannot create {str(cache_dir)!r}: {e.strerror or e}") from None
        # an OUT/points made by another user, or immutable: found after a point had run; and OUT
        # itself, where results.csv goes once every point has run (refused only then, "rerun to
        # write it", which a read-only OUT never lets)
        for where in (cache_dir, out):
            try:
                fd, probe = tempfile.mkstemp(dir=where, prefix=".simaccept.", suffix=".probe")
                os.close(fd)
                os.unlink(probe)
            except OSError as e:
                raise ArgumentError("out", f"cannot write in {str(where)!r}: {e.strerror or e}") from None
        from .plots import FIGURES
        results_files = ["results.csv", "results.parquet"]
        figure_files = [f"{stem}.{fmt}" for _, _, stem in FIGURES for fmt in ("png", "svg")]
        _remove_orphans(cache_dir, lambda n: re.fullmatch(r"[0-9a-f]{20}(-[0-9a-f]+)?\.json", n) is not None)
        # results.csv's and the plots' (a kill during the last writes)
        _remove_orphans(out, set(results_files + figure_files).__contains__)
        # the files written after the last point: a directory in their place was found only
        # then, as an IsADirectoryError traceback once every point had run
        for name in results_files + (figure_files if plots else []):
            if (out / name).is_dir():
                raise ArgumentError("out", f"{str(out / name)!r} is a directory; a sweep writes its "
                                             f"{'results' if name.startswith('results.') else 'figure'} "
                                             f"to that file: move it away")
    results: dict[int, RunRecord] = {}
    todo = []
    keys = {pol: policy_key(pol) for pol in {p["server"]["policy"] for p in points}}    # each class walked once
    if dask:
        # Dask's workers import a user's policy from its module on disk, not the class this
        # process has loaded, which is what the key is made of: an edit not yet reloaded, or
        # an attribute set from outside, would be kept under a key of other code
        keys = {pol: None if k else k for pol, k in keys.items()}
    names = ([_cache_name(p, keys[p["server"]["policy"]]) for p in points] if cache_dir is not None
             else [None] * len(points))
    unkeyed = sorted({p["server"]["policy"] for p, n in zip(points, names) if n is None})
    if cache_dir is not None and unkeyed:
        why = ("--dask runs it from its module's file, not the class loaded here" if dask else
               "a value its class uses has no stable form (an object printed by its address)")
        print(f"policy {', '.join(unkeyed)}: {why}, so its points are not cached and a rerun computes them "
              f"again", file=sys.stderr)
    for i, p in enumerate(points):
        if names[i] is not None:
            if (cache_dir / names[i]).is_dir():     # else an IsADirectoryError after simulating it
                raise ArgumentError("out", f"{str(cache_dir / names[i])!r} is a directory; a sweep "
                                             f"keeps that point's record in that file: move it away")
            cached = _load_cached(cache_dir / names[i])
            if cached is not None and cached.status == "ok":
                results[i] = cached
                continue
        todo.append(i)

    bar = _Progress(len(points), len(results), enabled=progress)

    def finish(i: int, d: dict) -> None:
        rec = RunRecord(**d)
        if names[i] is not None and rec.status == "ok":
            try:
                atomic_write(cache_dir / names[i], rec.to_json())     # NaN as null: standard JSON
            except OSError as e:        # a full disk: a traceback, with the kept points unsaid
                raise SweepError(f"cannot keep a finished point in {cache_dir}: {e.strerror or e}; the points "
                                 f"kept before it stay there (rerun to resume)") from None
        # only once it is kept: a Ctrl-C inside that write removed the temporary file, and the
        # interrupt's pass over finished points skipped this one as done
        results[i] = rec
        if on_point is not None:
            on_point(rec)
        bar.step()

    # the bar is closed however the sweep ends: on an interrupt tqdm drew it again at exit,
    # after the "interrupted" message
    try:
        args = [(points[i].to_json(), points[i].point_key, points[i].coords, points[i].source,
                 names[i] and names[i].split("-")[0].removesuffix(".json")) for i in todo]
        if not todo:
            pass        # every point cached: --dask tcp://... failed after 30 s on a scheduler it did not need
        elif dask:
            _run_dask(dask, todo, args, finish, jobs)
        elif jobs <= 1 or len(todo) <= 1:
            for i, a in zip(todo, args):
                finish(i, _run_point(*a))
        else:
            ex = worker_pool(min(jobs, len(todo)))      # no idle workers
            futs = {}
            try:
                futs = {ex.submit(_run_point, *a): i for i, a in zip(todo, args)}
                for f in as_completed(futs):
                    finish(futs[f], f.result())
            except BrokenProcessPool:
                stop_workers(ex)
                for f, i in futs.items():       # points that finished beside the dead one are kept too
                    if i not in results and f.done() and not f.cancelled() and f.exception() is None:
                        finish(i, f.result())
                n = len(results)
                kept = (f"the {n} finished point{' is' if n == 1 else 's are'} kept under {cache_dir}; rerun to resume"
                        if cache_dir else "nothing was kept (no out directory)")
                raise SweepError(f"a worker process died before its point finished (killed: by the OOM killer "
                                 f"if memory ran out, one point can take ~12 GB; fewer --jobs use less); "
                                 f"{kept}") from None
            except BaseException:
                stop_workers(ex)
                # Ctrl-C, SIGTERM: points that finished but were not yet collected are kept too
                try:
                    for f, i in futs.items():
                        if i not in results and f.done() and not f.cancelled() and f.exception() is None:
                            finish(i, f.result())
                except Exception:       # a full disk (SweepError): the first error is the one to report
                    pass
                raise
            ex.shutdown()
    finally:
        bar.close()
    records = [results[i] for i in range(len(points))]
    if out is not None:
        # An earlier sweep's parquet and figures go before results.csv is replaced: an interrupt
        # between these writes left them beside the new CSV (4 rows in the parquet, 1 in the
        # CSV; half the figures old), read as these results.  What is missing, a rerun writes.
        had_parquet = (out / "results.parquet").exists()
        for name in ["results.parquet"] + (figure_files if plots else []):
            try:
                (out / name).unlink(missing_ok=True)
            except OSError:
                pass        # its own write below fails and says so
        try:
            atomic_write(out / "results.csv", records_to_csv(records))
        except OSError as e:
            raise SweepError(f"every point is done and kept under {cache_dir}, but "
                             f"{out / 'results.csv'} could not be written: {e.strerror or e}; rerun to write it "
                             f"(nothing is simulated again)") from None
        # An earlier --parquet sweep's file next to this CSV would be read as these results
        # (fit --records, python -m validation take either), so it is rewritten too.
        if parquet or had_parquet:
            try:
                write_parquet(records, out / "results.parquet")
            except ImportError as e:
                print(f"removed {out / 'results.parquet'} of an earlier sweep, which no longer matched "
                      f"results.csv ({e})", file=sys.stderr)
            except OSError as e:        # a full disk: an earlier sweep's file would stand for these results
                (out / "results.parquet").unlink(missing_ok=True)
                raise SweepError(f"{out / 'results.csv'} is written, but {out / 'results.parquet'} could not be: "
                                 f"{e.strerror or e}; rerun to write it (the points are cached)") from None
        if plots:
            try:
                from .plots import thesis_plots
                thesis_plots(records, out)
            except ImportError as e:
                print(f"plots skipped: {e} (pip install matplotlib: simaccept's plot extra)", file=sys.stderr)
            except OSError as e:    # a full disk, a file made unwritable meanwhile: a traceback after every point ran
                raise SweepError(f"{out / 'results.csv'} is written, but the figures could not be: "
                                 f"{e.strerror or e}{f' ({e.filename})' if e.filename else ''}; rerun to draw "
                                 f"them (the points are cached)") from None
    why = failed_points_message(records)
    if why and raise_errors:
        raise SweepError(why + (f"; results.csv is written and the finished points kept under {cache_dir}"
                                if cache_dir is not None else ""))
    if why and warn:
        warnings.warn(why, FailedPointsWarning, stacklevel=2)
    return records


def _outside_policies() -> dict[str, type]:
    """REGISTRY's policies whose class is defined outside simaccept (registered by the user)."""
    from .servers.policies import REGISTRY
    return {n: c for n, c in REGISTRY.items() if not _ours(c)}


def _run_point_registering(policies: dict[str, type], *a) -> dict:
    """:func:`_run_point` in a worker that did not inherit the caller's REGISTRY (a Dask
    worker is a process of its own, or another machine's): the user's policies come along."""
    from .servers.policies import REGISTRY
    REGISTRY.update(policies)
    return _run_point(*a)


def _run_dask(address: str, todo, args, finish, jobs: int = 1) -> None:
    try:
        from dask.distributed import Client, LocalCluster, as_completed as d_as_completed
    except ImportError:  # pragma: no cover - depends on the extra
        raise ArgumentError("dask", "needs dask.distributed (pip install 'simaccept[dask]')") from None
    cluster = None
    if address == "local":
        cluster = LocalCluster(n_workers=max(1, jobs), threads_per_worker=1, processes=True)
        client = Client(cluster)
    else:
        try:
            client = Client(address)
        except (OSError, ValueError) as e:     # unreachable, or not an address at all
            raise ArgumentError("dask", f"cannot connect to the Dask scheduler at {address!r}: {e}") from None
    # A policy registered in REGISTRY had every point fail on Dask, "unknown policy", its
    # simulation time spent: the workers never saw the registration.  The classes travel with
    # the tasks (cloudpickle: by value if defined in __main__, else by reference to a module the
    # workers must be able to import, as LocalCluster's can: they start with the caller's path).
    policies = _outside_policies()
    try:
        futs = {(client.submit(_run_point_registering, policies, *a, pure=False) if policies else
                 client.submit(_run_point, *a, pure=False)): i for i, a in zip(todo, args)}
        for f in d_as_completed(list(futs)):
            try:
                d = f.result()
            except (ImportError, AttributeError) as e:
                if not policies:
                    raise
                raise SweepError(f"a Dask worker could not load the registered policies "
                                 f"({', '.join(sorted(policies))}): {type(e).__name__}: {e}; their module must be "
                                 f"importable on the workers") from None
            finish(futs[f], d)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


class _Progress:
    def __init__(self, total, done, enabled):
        self.total, self.done, self.enabled = total, done, enabled
        self.bar = None
        if enabled:
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, initial=done, unit="point", file=sys.stderr)
            except ImportError:
                self._print()

    def _print(self):
        print(f"\r{self.done}/{self.total} points", end="", file=sys.stderr, flush=True)

    def step(self):
        self.done += 1
        if self.bar is not None:
            self.bar.update(1)
        elif self.enabled:
            self._print()

    def close(self):
        if self.bar is not None:
            self.bar.close()
        elif self.enabled:
            print(file=sys.stderr)

"""Command line of the validation package.

* ``simaccept fit --records FILE.csv --params a,b,c --out PROFILE.toml``
  (simaccept/cli.py calls :func:`fit_main` with ``args.records``, ``args.params``,
  ``args.out``; the extra options below are read with defaults when absent);
* ``python -m validation fit ...``: the same, with every option;
* ``simaccept predict --records FILE --profile NAME|FILE.toml [--select COLUMN>=VALUE ...]
  [--metrics a,b] [--out ROWS.csv] [--cache DIR]`` (or ``python -m validation predict``): each record
  simulated with the profile, prediction against measurement (:func:`predict_main`);
* ``python -m validation report [--out DIR] [--profile thesis-2004] [--quick]
  [--real RESULTS.csv ...] [--real-profile realsys-linux6]`` (``--real-profile`` alone takes the
  held-out realsys results listed in :data:`validation.machine.HELDOUT`; ``--real`` needs it: a
  machine profile belongs to the host that measured the runs, so there is no default);
* ``python -m validation machine-fit [--jobs N] [--max-nfev N] [--results DIR --profile NAME] [--cache DIR]``: the
  cost profile for this machine (:mod:`validation.machine`), from the committed runs or from the
  runs ``RESULTS=DIR validation/measure_realsys.sh`` made on yours;
* ``python -m validation machine-check --results DIR --profile NAME --out DIR [--cache DIR]``: those runs'
  held-out half predicted with that profile, median error and policy order
  (:func:`validation.realsys_report.check`).  Both keep their simulations (default under
  ``out/validation-cache/``): stopped and run again, they simulate only what had not finished;
* ``python -m validation thesis-fit [--jobs N] [--max-nfev N] [--set K=V ...] [--params A,B] [--start PROFILE] [--metrics M,N] [--check]``: thesis-2004, fitted to the
  thesis's μserver one-packet records (:mod:`validation.thesis_fit`);
* ``python -m validation window [--out DIR] [--jobs N] [--cache DIR]``: every thesis row with a
  target rate simulated in the report's window and in the thesis's (120 s from idle queues)
  (:mod:`validation.window`);
* ``python -m validation specweb-idle [--out DIR] [--jobs N] [--cache DIR] [--think-ms 0,50,...] [--per-kb-factors
  1,0.7,...]``: the open connections the thesis's SPECweb99-like select statistics imply, and
  throughput by client delay, also with the per-KB send costs scaled (:mod:`validation.specweb_idle`);
* ``python -m validation seeds [--out DIR] [--seeds 4] [--jobs N]``: every held-out throughput
  cell, and every other cell on a row with a target rate, at several seeds, so that a miss can be
  told from seed noise (:mod:`validation.seeds`);
* ``python -m validation trace [--out DIR] [--seeds 4] [--step 20] [--rows LABEL,...] [--until S]``: the
  server loop (loops/s, accepts per loop, open connections, drop shares) in steps within each row's run, from runs of
  growing length at the same seed (:mod:`validation.trace`);
* ``python -m validation drops [--out DIR] [--jobs N] [--cache DIR]``: tables 5.1 and 5.2's queue-drop
  totals against the simulator's, the TUX replies/s they imply, a trace of each run's
  queues, and each row's scenario at the rates below it at two costs of a refused SYN
  (:mod:`validation.drops`);
* ``python -m validation phases [--out DIR] [--jobs N] [--seeds 2] [--from 20] [--rows LABEL,... |
  --scenario FILE [--set K=V ...]]``: the μserver's and TUX's Accept-Inf accept-phases one at a
  time, under three client settings: queued at the start, accepted, completions and the kernel's
  work inside each phase, for thesis rows or a scenario of one's own (:mod:`validation.phases`);
* ``python -m validation sensitivity [--out DIR] [--jobs N] [--step 1.25] [--rows LABELS|misses]``:
  each thesis throughput cell's elasticity to every cost its server uses, which costs the fitted
  and hand-set rows can see, and what one unidentified cost would do (:mod:`validation.sensitivity`);
  ``--rows`` runs only the named rows (or the committed report's held-out misses).

Exit status: 0 success; 1 the fit or a simulation failed; 2 bad input (unreadable
or malformed records file, unknown parameter or metric, unwritable output),
refused before anything runs, with the column or parameter named.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from simaccept.cli import _out_dir, _out_problem, add_fit_args, add_loss_args, add_predict_args, add_set_option, split_set
from simaccept.scenario import ScenarioError
from simaccept.sweep import SweepError

from .records import select_records, why_none_selected


def _err(msg: str) -> None:
    print(f"error: {msg}", file=sys.stderr)


def _same_file(a, b) -> bool:
    """Whether the paths ``a`` and ``b`` name one file (after ``./``, ``..`` and symlinks; a hard
    link too when both exist)."""
    import os
    try:
        a, b = Path(a), Path(b)
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, ValueError, RuntimeError):     # a name too long, a NUL byte, a symlink loop
        return False


def _under(path, top) -> bool:
    """Whether ``path`` is ``top`` or under it (both resolved)."""
    try:
        p, t = Path(path).resolve(), Path(top).resolve()
    except (OSError, ValueError, RuntimeError):
        return False
    return p == t or t in p.parents


def _records_problem(out: Path, records) -> str | None:
    """Why ``--out`` cannot be written because it is the ``--records`` file (resolved as
    :func:`validation.records.records_path` resolves it), or None."""
    from .records import records_path
    if _same_file(out, records_path(records)):
        return "is the --records file, which would be replaced: give another name"
    return None


def _profile_problem(out: Path, base_profile: str) -> str | None:
    """Why fit's ``--out`` must not be written because it is a profile in use, or None: a profile
    that comes with simaccept (a file beside :mod:`simaccept.costs`, used by name by every scenario
    and analysis that names it; thesis-fit and machine-fit refuse to overwrite one too) or the
    ``--base-profile`` file the fit starts from (its header would then name itself as the start)."""
    from simaccept.costs import HERE, is_profile_path
    for f in sorted(HERE.glob("*.toml")):
        if _same_file(out, f):
            return (f"is the packaged cost profile {f.stem!r}, which every scenario and analysis naming it uses: "
                    f"write the fit elsewhere (e.g. {f.stem}-refit.toml) and name it by that path")
    if is_profile_path(base_profile) and _same_file(out, Path(base_profile).expanduser()):
        return "is the --base-profile file, which the fit starts from: write the fit elsewhere"
    return None


def _dir_problem(path) -> str | None:
    """Why ``path`` cannot be an output or cache directory (checked before anything runs), or
    None: simaccept's check, reason only.  `report --out /proc/x` (root) used to fail with a
    traceback after the sweeps; a --cache under a file was blamed on --out."""
    try:
        _out_dir(str(path))         # "" too: Path("") is "." and the working directory was used
    except ScenarioError as e:
        return e.reason
    return None


def _guarded(call, error, failed):
    """``(call(), None)``, or ``(None, exit status)`` after printing why: 2 for an unknown
    profile or bad input, 1 when ``failed(message)`` says ``error`` was a failed run."""
    try:
        return call(), None
    except KeyError as e:
        _err(f"--profile: {e.args[0]}")
        return None, 2
    except error as e:
        _err(str(e))
        return None, 1 if failed(str(e)) else 2


def _numbers(text: str | None, flag: str, default, positive: bool = False):
    """``default`` when the option was not given, else its comma-separated numbers; None (after
    saying why) when one is not a number."""
    if text is None:
        return default
    items = [x.strip() for x in text.split(",")]
    try:
        vals = [float(x) for x in items]
    except ValueError:
        # an empty item was dropped unsaid ("0,,25"), and "" meant the default for one option
        # and was refused for the other
        _err(f"{flag}: not a comma-separated list of numbers: {text!r}")
        return None
    bad = [x for x, v in zip(items, vals) if not (math.isfinite(v) and (v > 0 if positive else v >= 0))]
    if bad:
        _err(f"{flag}: {', '.join(bad)}: each must be a finite number {'> 0' if positive else '>= 0'}")
        return None
    why = _twice([repr(v + 0.0) for v in vals])     # by value: 25 and 25.0 (and -0 and 0) are one
    if why:
        _err(f"{flag}: {why}")
        return None
    return vals


def _twice(names) -> str | None:
    """"given more than once: a, b" for the names ``names`` repeats, or None."""
    twice = list(dict.fromkeys(n for n in names if list(names).count(n) > 1))
    return f"given more than once: {', '.join(twice)}" if twice else None


def _absent_metrics(path, metrics) -> str | None:
    """Which of ``metrics`` the records file has no column for (with the names closest to each),
    or None; ``drop_shares`` needs the three drop columns, ``time_split`` some ``cpu_share_<fn>``."""
    from .fitter import DROP_CATEGORIES, TIME_FUNCTIONS
    from .records import close_text, record_columns
    cols = record_columns(path)
    parts = []
    for m in metrics:
        if m == "time_split":
            if not any(f"cpu_share_{fn}" in cols for fn in TIME_FUNCTIONS):
                parts.append(f"{path} has no column cpu_share_<fn> for any of {', '.join(TIME_FUNCTIONS)} "
                             "(time_split needs one)")
            continue
        for c in (DROP_CATEGORIES if m == "drop_shares" else (m,)):
            if c not in cols:
                parts.append(f"{path} has no column {c!r}" + (f" ({m} needs it)" if c != m else "")
                             + close_text(c, cols))
    return "; ".join(parts) or None


_PROFILE_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"


def machine_fit_target(args) -> dict:
    """machine-fit's --results/--profile/--fit-json, checked before any simulation: a profile
    name is a plain name; another machine's runs never overwrite a shipped profile."""
    import re

    from . import machine
    if args.profile is not None and not args.profile.strip():
        # "" was taken for no --profile: the shipped realsys-linux6 was refitted
        raise ValueError("--profile: an empty name (leave --profile out for the default)")
    results = Path(args.results) if args.results else None
    default_results = results is None or results.resolve() == machine.RESULTS.resolve()
    profile = args.profile or (machine.PROFILE if default_results else None)
    from .records import CHECKOUT
    if default_results and profile == machine.PROFILE and not CHECKOUT:
        # the package carries the committed runs (records_path), but not the fit's record, and
        # refitting would rewrite the installed profile every later report and predict uses
        raise ValueError(f"machine-fit: refits the {machine.PROFILE} profile shipped with simaccept to the "
                         "committed runs, so it runs only in a source checkout; for your own runs: "
                         "--results DIR --profile NAME (e.g. realsys-mybox)")
    if profile is None:
        raise ValueError("--profile: required with --results (the default, realsys-linux6, is fitted to the "
                         "committed runs; name this machine's profile, e.g. --profile realsys-mybox)")
    if not re.fullmatch(_PROFILE_NAME, profile):
        raise ValueError(f"--profile: {profile!r} is not a profile name (letters, digits, '.', '_', '-'; "
                         f"it becomes {machine.profile_file(results, 'NAME')})")
    # the profiles the validation report is computed with (a profile of your own may be refitted)
    if profile in ("thesis-2004", machine.REFERENCE) or (profile == machine.PROFILE and not default_results):
        raise ValueError(f"--profile: {profile!r} is a shipped profile the validation report uses; fitting it to "
                         "other runs would overwrite it")
    from simaccept.costs import available_profiles
    if not CHECKOUT and profile in available_profiles():
        # installed, the fit goes beside the runs (machine.profile_file), where the shipped profile
        # of the same name would shadow it in every later machine-check and --real-profile
        raise ValueError(f"--profile: {profile!r} is the name of a profile shipped with simaccept, which would be "
                         "used in place of yours; give another name")
    if results is not None and not results.is_dir():
        raise ValueError(f"--results: {results}: {'not a directory' if results.exists() else 'no such directory'}")
    missing = [d / "results.csv" for d in machine.fit_dirs(results) if not (d / "results.csv").is_file()]
    if missing:
        # --results realsys/results/onepacket-select (one run folder) looked for
        # onepacket-select/onepacket-select/results.csv, and said only that it was not there
        base = results if results is not None else machine.RESULTS
        why = (f"--results: {missing[0]}: no such results file; --results is the folder holding the run folders "
               + " and ".join(f"{d}/" for d in machine.FIT_DIRS)
               + ", each with a results.csv (measure them with validation/measure_realsys.sh)")
        if (base / "results.csv").is_file():
            parent = base.resolve().parent      # "." has no parent to name
            why += f"; {base} holds a results.csv itself, so it is one run folder"
            if all((parent / d / "results.csv").is_file() for d in machine.FIT_DIRS):
                why += f": pass its parent, {parent}"
        raise ValueError(why)
    try:
        machine.fit_min_rate(results)
        machine.fixed_costs(results)        # reads the fit set's point files: a damaged one is named now
    except (OSError, ValueError) as e:
        raise ValueError(f"--results: {e}") from None
    if args.fit_json and Path(args.fit_json).suffix != ".json":
        raise ValueError(f"--fit-json: {args.fit_json!r} must end in .json")
    if args.fit_json:       # written after the fit (hours): machine.fit makes its directory
        why = "is a directory" if Path(args.fit_json).is_dir() else _dir_problem(Path(args.fit_json).parent)
        # a run's point file would be replaced by the fit's record after the fit, and lost
        runs = [machine.results_dir(d, results) / "points"
                for d in dict.fromkeys(machine.FIT_DIRS + tuple(x for v in machine.HELDOUT.values() for x in v))]
        if not why and any(_under(Path(args.fit_json).parent, r) for r in runs):
            why = "is in a results folder's points/, where the runs' point files are: write the fit's record elsewhere"
        if why:
            raise ValueError(f"--fit-json {args.fit_json!r}: {why}")
    if args.start_from:
        from simaccept.costs import load_costs
        try:
            load_costs(args.start_from)
        except (OSError, ValueError, KeyError) as e:
            raise ValueError(f"--start-from: {e.args[0] if isinstance(e, KeyError) else e}") from None
    from .fitter import LOSSES
    loss, f_scale = getattr(args, "loss", "linear"), getattr(args, "f_scale", 1.0)
    if loss not in LOSSES:
        raise ValueError(f"--loss: one of {', '.join(LOSSES)}, got {loss!r}")
    if not (math.isfinite(f_scale) and f_scale > 0):
        raise ValueError(f"--f-scale: a finite number > 0, got {f_scale!r}")
    cache = args.cache if args.cache is not None else machine.FIT_CACHE
    why = _dir_problem(cache)
    if why:
        raise ValueError(f"--cache {str(cache)!r}: {why}")
    return {"results": results, "profile": profile, "fit_json": args.fit_json, "start_from": args.start_from,
            "loss": loss, "f_scale": f_scale, "cache": cache}


def machine_check_main(args) -> int:
    """python -m validation machine-check (see :func:`validation.realsys_report.check`)."""
    from simaccept.costs import available_profiles

    from .realsys_report import check
    if args.jobs < 1:
        _err(f"--jobs: must be >= 1, got {args.jobs}")
        return 2
    from .machine import resolve_profile
    if not Path(args.results).is_dir():
        _err(f"--results: {args.results}: {'not a directory' if Path(args.results).exists() else 'no such directory'}")
        return 2
    profile = resolve_profile(args.results, args.profile)
    if profile is None:
        _err(f"--profile: no cost profile {args.profile!r}: not shipped with simaccept (have: "
             f"{', '.join(sorted(available_profiles()))}), not {Path(args.results) / (args.profile + '.toml')} "
             "(where an installed simaccept's machine-fit writes it), not a .toml file")
        return 2
    why = _dir_problem(args.out)
    if why:
        _err(f"--out {str(args.out)!r}: {why}")
        return 2
    from .machine import CHECK_CACHE, default_fit_json, read_fit_record_of
    cache = args.cache if args.cache is not None else CHECK_CACHE
    why = _dir_problem(cache)
    if why:
        _err(f"--cache {str(cache)!r}: {why}")
        return 2
    fit_json = args.fit_json or default_fit_json(args.results, profile)
    if args.fit_json or Path(fit_json).exists():    # read before the simulations, not after them
        try:
            read_fit_record_of(fit_json, profile)
        except ValueError as e:
            _err(f"--fit-json: {e}")
            return 2
    try:
        check(args.results, profile, args.out, args.jobs, args.fit_json, cache=cache)
    except (FileNotFoundError, ValueError) as e:
        _err(str(e))
        return 2
    return 0


def fit_main(args) -> int:
    """``simaccept fit``: fit ``args.params`` to the records in ``args.records``; write ``args.out``."""
    from simaccept.costs import read_profile
    from .fitter import DEFAULT_METRICS, CostFitter, FitError, NoRecordsError
    from .records import RecordError, load_records
    params = [p.strip() for p in str(args.params).split(",") if p.strip()]
    given = getattr(args, "metrics", None)
    metrics = [m.strip() for m in str(given).split(",") if m.strip()] if given is not None else list(DEFAULT_METRICS)
    if not metrics:                     # '' was taken for the default metrics
        _err(f"--metrics {given!r}: give at least one metric (default: {','.join(DEFAULT_METRICS)})")
        return 2
    if not str(args.out).strip():       # Path("") is "." and was reported so
        _err("--out '': give a file name (a .toml cost profile)")
        return 2
    out = Path(args.out)
    jobs = getattr(args, "jobs", 1)
    if jobs is None or int(jobs) < 1:
        _err(f"--jobs: must be >= 1, got {jobs}")
        return 2
    max_nfev = getattr(args, "max_nfev", None)
    if max_nfev is not None and int(max_nfev) < 1:
        _err(f"--max-nfev: must be >= 1, got {max_nfev}")
        return 2
    selectors = getattr(args, "select", None)
    if isinstance(selectors, str):          # one selector given as a plain string
        selectors = [selectors]
    args.select = selectors
    base_profile = getattr(args, "base_profile", None)
    if base_profile is not None and not str(base_profile).strip():
        # "" was taken for the default: a whole fit from thesis-2004's costs
        _err("--base-profile: an empty name (leave --base-profile out for thesis-2004)")
        return 2
    base_profile = base_profile or "thesis-2004"
    try:
        read_profile(base_profile)
    except (KeyError, ValueError) as e:
        _err(f"--base-profile: {e.args[0]}")
        return 2
    try:
        fitter = CostFitter(params=params, metrics=metrics,
                            base_profile=base_profile,
                            sim_overrides=getattr(args, "set", None) or (),
                            n_jobs=int(jobs),
                            max_nfev=getattr(args, "max_nfev", None), verbose=int(getattr(args, "verbose", 0) or 0),
                            cache=getattr(args, "cache", None), loss=getattr(args, "loss", "linear"),
                            f_scale=getattr(args, "f_scale", 1.0))
    except (ValueError, KeyError) as e:
        # CostFitter's messages start with the argument at fault ("params: ...", "metrics: ...")
        msg = str(e.args[0] if isinstance(e, KeyError) and e.args else e)
        arg, _, reason = msg.partition(": ")
        flag = {"params": "--params", "metrics": "--metrics", "sim_overrides": "--set", "verbose": "--verbose",
                "max_nfev": "--max-nfev", "n_jobs": "--jobs", "base_profile": "--base-profile",
                "cache": "--cache", "loss": "--loss", "f_scale": "--f-scale"}.get(arg)
        _err(f"{flag}: {reason}" if flag else msg)
        return 2
    # the records first: the writability probe creates (and removes) a file in the records' directory
    why = _records_problem(out, args.records) or _out_problem(out)
    if not why and not str(out).endswith(".toml"):
        # a profile is named by its .toml path (costs.profile, --profile: lower case, as
        # is_profile_path reads it); "out/noext" and "X.TOML" were written and then not found
        # by name, and "results.csv" was replaced by a profile without a word
        why = "a cost profile is a .toml file, in lower case (it is then named by that path)"
    why = why or _profile_problem(out, base_profile)
    if why:
        _err(f"--out {str(out)!r}: {why}")
        return 2
    cache = getattr(args, "cache", None)
    why = _dir_problem(cache) if cache is not None else None
    if not why and cache is not None and _under(cache, out):
        # it ran the whole fit, made the cache directory there and could not write the profile
        why = "is the --out file (or under it): the cache directory would leave no place for the profile"
    if why:
        _err(f"--cache {str(cache)!r}: {why}")
        return 2
    try:
        loaded = load_records(args.records)
        records = select_records(loaded, getattr(args, "select", None), "--select")
    except ValueError as e:             # RecordError too: a bad records file or --select
        _err(str(e))
        return 2
    if given is not None:               # the defaults may be columns a kind of records file lacks
        why = _absent_metrics(args.records, metrics)
        if why:
            _err(f"--metrics: {why}")
            return 2
    if not records:
        _err(f"{args.records}: no records" + (f": {why_none_selected(loaded, args.select, '--select')}" if loaded and args.select
                                             else ""))
        return 2
    # a fit of the thesis's rows simulates each over its own 120 s window, len(params) + 1 times a
    # step: it printed nothing for ten minutes and more
    print(f"fit: {len(records)} record{'' if len(records) == 1 else 's'}, {len(params)} cost"
          f"{'' if len(params) == 1 else 's'}: every evaluation simulates each record (a paper row over its "
          f"own window), {len(params) + 1} evaluations a step"
          + ("; --verbose 1 prints each" if not fitter.verbose else ""), file=sys.stderr, flush=True)
    try:
        fitter.fit(records)
    except NoRecordsError as e:         # bad input: nothing in the file can be fitted
        _err(f"{args.records}: {e}")
        return 2
    except (ScenarioError, RecordError) as e:
        _err(str(e))
        return 2
    except FitError as e:
        _err(f"fit failed: {e}")
        return 1
    try:
        fitter.save(out)
    except OSError as e:
        _err(f"--out {str(out)!r}: cannot write: {e.strerror or e}")
        return 2
    print(fitter.header())
    print(f"wrote {out}")
    return 0


def predict_main(args) -> int:
    """``simaccept predict``: simulate every record's own scenario (its configuration, seed
    and window) with ``args.profile`` and print prediction against measurement, per record
    and metric, with the median absolute relative error: the held-out half of a fit."""
    import statistics

    from simaccept.costs import read_profile
    from simaccept.record import _TEXT, COLUMNS
    from simaccept.sweep import atomic_write
    from .fitter import _RECORD_KEYS, simulate_records
    from .records import (NotSimulable, RecordError, load_records, refuse_pasted_twice, scenario_for,
                          simulator_supports)
    given = getattr(args, "metrics", None)
    metrics = [m.strip() for m in str("replies_per_s" if given is None else given).split(",") if m.strip()]
    if not metrics:                     # '' was taken for replies_per_s
        _err(f"--metrics {given!r}: give at least one record column (default: replies_per_s)")
        return 2
    bad = [m for m in metrics if m not in COLUMNS or m in _TEXT]
    if bad:
        from .records import close_text
        numeric = [c for c in COLUMNS if c not in _TEXT]
        _err(f"--metrics: not numeric record columns: {'; '.join(m + close_text(m, numeric, n=2) for m in bad)}")
        return 2
    why = _twice(metrics)
    if why:         # every row was printed twice, and counted twice in the median
        _err(f"--metrics: {why}")
        return 2
    jobs = getattr(args, "jobs", 1)
    if jobs is None or int(jobs) < 1:
        _err(f"--jobs: must be >= 1, got {jobs}")
        return 2
    try:
        read_profile(args.profile)
    except (KeyError, ValueError) as e:
        _err(f"--profile: {e.args[0]}")
        return 2
    for o in getattr(args, "set", None) or ():
        key = str(o).split("=", 1)[0].strip()
        # as fit refuses them: workload.rate=5 compared every record with a run at 5 req/s, and
        # costs.profile replaced --profile without a word
        if key in _RECORD_KEYS:
            _err(f"--set: {key}: each record sets it from its own columns")
            return 2
        if key == "costs.profile":
            _err("--set: costs.profile: give the profile as --profile")
            return 2
    if getattr(args, "out", None) is not None and not str(args.out).strip():
        # it was taken for no --out, and nothing was written (fit refuses it)
        _err(f"--out {args.out!r}: give a file name (a CSV of the rows), or leave --out out")
        return 2
    out = Path(args.out) if getattr(args, "out", None) else None
    # the records first: the writability probe creates (and removes) a file in the records' directory
    why = (_records_problem(out, args.records) or _out_problem(out)) if out is not None else None
    if why:
        _err(f"--out {str(out)!r}: {why}")
        return 2
    cache = getattr(args, "cache", None)
    why = _dir_problem(cache) if cache is not None else None
    if not why and cache is not None and out is not None and _under(cache, out):
        why = "is the --out file (or under it): the cache directory would leave no place for the rows"
    if why:
        _err(f"--cache {str(cache)!r}: {why}")
        return 2
    if isinstance(getattr(args, "select", None), str):      # one selector given as a plain string
        args.select = [args.select]
    try:
        loaded = load_records(args.records)
        records = select_records(loaded, getattr(args, "select", None), "--select")
    except ValueError as e:             # RecordError too
        _err(str(e))
        return 2
    # a misspelt header was predicted as "not measured in these records", exit 0
    why = _absent_metrics(args.records, metrics)
    if why:
        _err(f"--metrics: {why}")
        return 2
    if not records:
        _err(f"{args.records}: no record to predict" + (f": {why_none_selected(loaded, args.select, '--select')}"
                                                        if loaded and args.select else " (no records)"))
        return 2
    same: dict = {}
    try:        # as fit refuses them: one run pasted twice counted twice in the median
        for i, m in enumerate(records):
            refuse_pasted_twice(m, i, same)
    except RecordError as e:
        _err(str(e))
        return 2
    sim_overrides = list(getattr(args, "set", None) or ())
    todo, skipped = [], []
    for m in records:
        ok, why = simulator_supports(m)
        if ok and m.record.status not in ("ok", ""):
            ok, why = False, f"status {m.record.status}: not a finished run"
        if ok and math.isnan(m.record.target_rate):
            ok, why = False, ("no target rate (a peak row)" if m.record.source == "paper"
                              else "no target rate (its target_rate cell is empty)")
        if not ok:
            skipped.append((m.label, why))
            continue
        try:
            scenario_for(m, overrides=sim_overrides)        # refuse a bad --set before any run
            todo.append(m)
        except NotSimulable as e:
            skipped.append((m.label, str(e)))
        except (ScenarioError, RecordError) as e:
            try:
                scenario_for(m)
            except RecordError as alone:        # the record's own cell (a bad config): file, line, column
                _err(str(alone))
                return 2
            except ScenarioError as alone:
                # the record's own window (1,200 s at 20,000 req/s offers too many requests): the
                # error named workload.rate, not which record (a --set scenario.duration repairs it)
                _err(f"{m.path or args.records}:{m.line}: {m.label} cannot be simulated as measured: {alone}")
                return 2
            except NotSimulable:
                pass
            _err(str(e))
            return 2
    if not todo:
        why = "".join(f"; {a}: {b}" for a, b in skipped[:3]) + ("; ..." if len(skipped) > 3 else "")
        _err(f"{args.records}: no record to predict (after --select; {len(skipped)} not simulable{why})")
        return 2
    sims = simulate_records(todo, args.profile, int(jobs), sim_overrides, source="<predict>", cache=cache)
    labels = _distinct_labels(todo)
    rows, failed = [], []
    # --set scenario.seed=5 runs every record at seed 5 (a paper row has no seed of its own): the
    # seed shown was the record's, not the one simulated
    seed_set = any(str(o).split("=", 1)[0].strip() == "scenario.seed" for o in sim_overrides)
    from .fitter import simulated_as_measured
    converted = set()       # the metrics read as the record counts them (said under the table)
    for m, s, label in zip(todo, sims, labels):
        if s.status != "ok":
            failed.append((label, (s.error or "").splitlines()[0] if s.error else s.status))
            continue
        for k in metrics:
            meas, pred, raw = float(getattr(m.record, k)), simulated_as_measured(s, m.record, k), float(getattr(s, k))
            if not (pred == raw or math.isnan(pred) and math.isnan(raw)):
                converted.add(k)
            err = (pred - meas) / abs(meas) if math.isfinite(meas) and meas != 0 and math.isfinite(pred) else math.nan
            rows.append({"row": label, "seed": _seed_text(float(s.seed) if seed_set else m.record.seed),
                         "metric": k, "measured": meas,
                         "predicted": pred, "error": err, "difference": pred - meas})
    # replicates (onepacket-select-reps: one label at several seeds) printed as identical rows
    seeds_of: dict[str, set] = {}
    for r in rows:
        seeds_of.setdefault(r["row"], set()).add(r["seed"])
    shown = {id(r): r["row"] + (f" seed={r['seed']}" if len(seeds_of[r["row"]]) > 1 else "") for r in rows}
    width = max(len(v) for v in shown.values()) if rows else 10
    print(f"{'row':<{width}}  {'metric':<20} {'measured':>12} {'predicted':>12} {'error':>8}")
    for r in rows:
        # measured 0: a relative error is undefined, and a miss there must still show
        e = (f"{100 * r['error']:+.1f}%" if not math.isnan(r["error"]) else
             f"{r['difference']:+.3g}" if r["measured"] == 0 and math.isfinite(r["predicted"]) else "")
        print(f"{shown[id(r)]:<{width}}  {r['metric']:<20} {r['measured']:>12.6g} {r['predicted']:>12.6g} {e:>8}")
    for k in metrics:
        errs = [abs(r["error"]) for r in rows if r["metric"] == k and not math.isnan(r["error"])]
        zero = [r for r in rows if r["metric"] == k and r["measured"] == 0 and math.isfinite(r["predicted"])]
        unpredicted = [r for r in rows if r["metric"] == k and math.isfinite(r["measured"])
                       and not math.isfinite(r["predicted"])]
        parts = []
        if errs:
            parts.append(f"median |error| {100 * statistics.median(errs):.1f}% over {len(errs)} record(s), "
                         f"max {100 * max(errs):.1f}%")
        if zero:
            parts.append(f"{len(zero)} record(s) measured 0 (no relative error; the error column is predicted - "
                         f"measured): predicted 0 in {sum(r['predicted'] == 0 for r in zero)}, "
                         f"largest {max(abs(r['predicted']) for r in zero):.6g}")
        if unpredicted:
            parts.append(f"{len(unpredicted)} record(s) measured but not predicted (the simulation gave no value)")
        # every simulation failed: the records' values were measured, the predictions are missing
        none = "no simulation finished" if failed and not rows else "not measured in these records"
        print(f"{k}: {'; '.join(parts) or none}")
    if "c_avg" in converted:
        print("c_avg: a thesis μserver row's is accepts per loop, as the thesis counts it; the simulation's "
              "read so too (accept_rate / select_calls_per_s; validation.report.userver_c_avg)")
    for k in sorted(converted - {"c_avg"}):
        # it blamed --set scenario.duration where the scenario file's window (a row without a
        # config) was another length
        print(f"{k}: a count over the measured window; the simulation's scaled to each record's window "
              f"(duration_s), which the simulation's was not")
    if skipped:
        print(f"skipped {len(skipped)} record(s) the simulator cannot run: "
              + "; ".join(f"{a} ({b})" for a, b in skipped[:5]) + (" ..." if len(skipped) > 5 else ""))
    if out is not None:
        import csv
        import io
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=["row", "seed", "metric", "measured", "predicted", "error", "difference"])
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()})
        try:
            atomic_write(out, buf.getvalue())
        except OSError as e:
            _err(f"--out {str(out)!r}: cannot write: {e.strerror or e}")
            return 2
        print(f"wrote {out}")
    for label, why in failed:
        _err(f"simulation failed for {label}: {why}")
    return 1 if failed else 0


#: Config keys that never tell two records of one label apart: the seed (shown on its own) and
#: the scenario's bookkeeping.
_SAME_POINT_KEYS = frozenset({"scenario.seed", "scenario.name", "scenario.batches"})


def _flat_config(record) -> dict[str, str]:
    import json
    try:
        cfg = json.loads(record.config or "{}")
    except (TypeError, ValueError, RecursionError):
        return {}
    return {f"{sec}.{k}": json.dumps(v) for sec, vals in cfg.items() if isinstance(vals, dict)
            for k, v in vals.items() if f"{sec}.{k}" not in _SAME_POINT_KEYS}


def _distinct_labels(todo) -> list[str]:
    """Each record's label, with ``key=value`` for every config key in which records of the same
    label differ (a results.csv sweeping client.think_ms printed four identical row names); a
    key a record's config lacks is no difference."""
    groups: dict[str, list[int]] = {}
    for i, m in enumerate(todo):
        groups.setdefault(m.label, []).append(i)
    out = [m.label for m in todo]
    for label, idx in groups.items():
        if len(idx) < 2:
            continue
        flats = {i: _flat_config(todo[i].record) for i in idx}
        keys = sorted(k for k in set().union(*flats.values())
                      if len({f[k] for f in flats.values() if k in f}) > 1)
        for i in idx:
            out[i] = label + "".join(f" {k}={flats[i].get(k, '?')}" for k in keys)
    return out


def _seed_text(seed: float):
    """A record's seed as written in ``--out``: 2004, not the float 2004.0 the record column holds."""
    return int(seed) if isinstance(seed, float) and seed.is_integer() else seed


_OUT_HELP = ("output directory (default docs/validation in a source checkout, else ./out/validation; "
             "out/validation-partial for a run with other options than the committed page's)")


_PROFILE_HELP = "cost profile: a packaged name or a .toml path (default thesis-2004)"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m validation", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    add_fit_args(sub.add_parser("fit", help="fit cost parameters to records (CSV or Parquet)"))
    add_predict_args(sub.add_parser("predict", help="simulate measured records with a cost profile and show "
                                     "the error (the held-out half of a fit)"))
    mf = sub.add_parser("machine-fit", help="fit simaccept/costs/realsys-linux6.toml (or --profile NAME) to "
                        "realsys runs (realsys/results, or --results DIR)")
    mf.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    mf.add_argument("--max-nfev", type=int, default=3,
                    help="budget of evaluations of the residuals (each simulates every record); unlike `fit`, a fit that reaches it still writes its profile, as not converged (default 3)")
    mf.add_argument("--results", default=None, metavar="DIR",
                    help="folder holding the runs validation/measure_realsys.sh makes (RESULTS=DIR); default "
                         "the committed realsys/results")
    mf.add_argument("--profile", default=None, metavar="NAME",
                    help="profile to write: simaccept/costs/NAME.toml in a source checkout, DIR/NAME.toml when "
                         "simaccept is installed (default realsys-linux6; required with --results)")
    mf.add_argument("--start-from", default=None, metavar="PROFILE",
                    help="start from this profile's fitted costs (name or .toml), e.g. an earlier run's "
                         "unconverged result (default: with --results, the runs' own per-call timings; else the "
                         "committed fit's history)")
    add_loss_args(mf)
    mf.add_argument("--cache", default=None, metavar="DIR", help="simulation cache: a stopped fit run again replays "
                    "its path from there (default out/validation-cache/machine-fit)")
    mf.add_argument("--fit-json", default=None, metavar="PATH",
                    help="the fit's record (default docs/validation/realsys-fit.json for realsys-linux6 fitted to "
                         "the committed runs; else RESULTS/NAME-fit.json, RESULTS being --results or realsys/results)")
    mc = sub.add_parser("machine-check", help="held-out realsys runs (measure_realsys.sh's layout) predicted with a "
                        "machine profile: median error and policy order -> OUT/realsys.md, OUT/machine-check.json")
    mc.add_argument("--results", required=True, metavar="DIR", help="folder holding the runs (RESULTS=DIR of "
                    "validation/measure_realsys.sh; realsys/results for the committed ones)")
    mc.add_argument("--profile", required=True, metavar="NAME", help="the cost profile fitted to them (machine-fit "
                    "--profile): a shipped profile, DIR/NAME.toml, or the path of a .toml file")
    mc.add_argument("--out", required=True, metavar="DIR", help="where realsys.md, its PNGs and machine-check.json go")
    mc.add_argument("--fit-json", default=None, metavar="PATH", help="the fit's record, for the per-syscall table "
                    "(default: machine-fit's default for --results and --profile)")
    mc.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    mc.add_argument("--cache", default=None, metavar="DIR", help="simulation cache: a stopped check run again reuses "
                    "what finished (default out/validation-cache/machine-check)")
    tf = sub.add_parser("thesis-fit", help="fit simaccept/costs/thesis-2004.toml to the thesis's μserver "
                        "one-packet records")
    tf.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    tf.add_argument("--max-nfev", type=int, default=12,
                    help="budget of evaluations of the residuals (each simulates every record); unlike `fit`, a fit that reaches it still writes its profile, as not converged (default 12)")
    add_set_option(tf, help="scenario override for every simulation of the fit (e.g. scenario.duration=120)")
    tf.add_argument("--params", default=None, metavar="NAME,NAME,...",
                    help="fit only these of the fit's costs (default: all of validation.thesis_fit.FIT_PARAMS)")
    tf.add_argument("--start", default=None, metavar="PROFILE",
                    help="profile the fit starts from and keeps for the costs it does not fit "
                         "(default: thesis-2004-hand)")
    tf.add_argument("--metrics", default=None, metavar="NAME,NAME,...",
                    help="what the residuals compare (default: validation.thesis_fit.FIT_METRICS; time_split adds "
                         "table 4.9's split of the μserver's time)")
    tf.add_argument("--check", action="store_true",
                    help="only print the fit's residuals at the shipped thesis-2004 values (writes no profile; "
                         "its simulations are cached under out/validation-cache)")
    si = sub.add_parser("specweb-idle", help="open connections implied by the thesis's SPECweb99-like select "
                        "statistics, and throughput by client delay -> docs/validation/specweb-idle.md")
    si.add_argument("--out", default=None, help=_OUT_HELP)
    si.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    si.add_argument("--think-ms", default=None, metavar="MS,MS,...",
                    help="client delays to sweep (default 0,25,50,75,100,125,150,200)")
    si.add_argument("--per-kb-factors", default=None, metavar="F,F,...",
                    help="factors on the per-KB send costs (sendfile_per_kb, tux_per_kb), each read again with the "
                         "delay (default 1,0.85,0.7,0.6; 1 alone: the profile as fitted only)")
    si.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    si.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/specweb-idle)")
    se = sub.add_parser("sensitivity", help="elasticity of every thesis throughput cell to each cost, and which "
                        "costs the calibration rows identify -> docs/validation/sensitivity.md")
    se.add_argument("--out", default=None, help=_OUT_HELP)
    se.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    se.add_argument("--step", type=float, default=1.25, help="factor each cost is raised by (default 1.25)")
    se.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    se.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/sensitivity)")
    se.add_argument("--rows", default=None, metavar="LABEL,LABEL,...|misses",
                    help="only these rows (report labels, e.g. 'tux/one-packet/-/accept-inf@23000'), or 'misses': the "
                         "held-out throughput cells docs/validation/cells.csv scores outside ±10 %%; no what-if runs; "
                         "-> sensitivity-rows.md")
    wi = sub.add_parser("window", help="each thesis cell simulated in the report's window and in the thesis's "
                        "(120 s from idle queues) -> docs/validation/window.md")
    wi.add_argument("--out", default=None, help=_OUT_HELP)
    wi.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    wi.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    wi.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/window)")
    sd = sub.add_parser("seeds", help="every held-out throughput cell (and every other cell at a target rate) at several seeds: "
                        "is a miss seed noise? "
                        "-> docs/validation/seeds.md")
    sd.add_argument("--out", default=None, help=_OUT_HELP)
    sd.add_argument("--seeds", type=int, default=4, help="seeds per cell: the row's own and the ones after it")
    sd.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    sd.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    sd.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/seeds)")
    tr = sub.add_parser("trace", help="the server loop in steps within a one-packet row's run (runs of growing length at "
                        "the same seed, differenced) -> docs/validation/trace.md")
    tr.add_argument("--out", default=None, help=_OUT_HELP)
    tr.add_argument("--seeds", type=int, default=4, help="seeds per row: the row's own and the ones after it")
    tr.add_argument("--step", type=float, default=20.0, help="step length in seconds (default 20)")
    tr.add_argument("--until", type=float, default=None, help="trace only the first S seconds of each row's window")
    tr.add_argument("--rows", default=None, metavar="LABEL,LABEL,...",
                    help="one-packet rows with a target rate and deterministic arrivals (report labels; default the "
                         "μserver's three at 27000 and Knot's Accept-50 at 15000)")
    tr.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    tr.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    tr.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/trace)")
    dr = sub.add_parser("drops", help="tables 5.1/5.2's queue-drop totals against the simulator's, the TUX "
                        "replies/s they imply, a trace of each run's queues, and each row's scenario at the rates below "
                        "it at two costs of a refused SYN -> docs/validation/drops.md")
    dr.add_argument("--out", default=None, help=_OUT_HELP)
    dr.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    dr.add_argument("--profile", default="thesis-2004", help=_PROFILE_HELP)
    dr.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/drops)")
    ph = sub.add_parser("phases", help="the μserver's Accept-Inf accept-phases one at a time (queued at the start, "
                        "accepted, completions and kernel work inside) -> docs/validation/phases.md")
    ph.add_argument("--out", default=None, help=_OUT_HELP[:-1] + "; out/validation-partial with --scenario "
                    "or rows other than the default)")
    ph.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    ph.add_argument("--seeds", type=int, default=2, help="seeds per client setting: the row's own and the ones after it")
    ph.add_argument("--from", dest="t_from", type=float, default=None,
                    help="trace the phases that start from this many seconds into the run on (default 20 for "
                         "thesis rows, the warm-up for --scenario)")
    which = ph.add_mutually_exclusive_group()
    which.add_argument("--rows", default=None, metavar="LABEL,LABEL,...",
                       help="μserver or TUX accept-inf rows (report labels; default the μserver's at 27000 and "
                            "TUX's at 23000)")
    which.add_argument("--scenario", default=None, metavar="FILE",
                       help="a scenario of one's own (a file or a bundled name; a μserver or TUX at accept-limit "
                            "inf, one point: --set picks it) instead of thesis rows")
    add_set_option(ph, help="with --scenario: an override (repeatable)")
    ph.add_argument("--profile", default=None,
                    help="cost profile (default thesis-2004 for thesis rows, the scenario's own for --scenario)")
    ph.add_argument("--cache", default=None, help="simulation cache (default out/validation-cache/phases)")
    r = sub.add_parser("report", help="prediction vs measurement for the thesis records -> docs/validation/")
    r.add_argument("--out", default=None, help="output directory (default docs/validation for the full report: "
                                               "--real-profile given, no --quick/--group/--set, profile thesis-2004; "
                                               "else out/validation-partial)")
    r.add_argument("--profile", default="thesis-2004",
                   help="cost profile name, or a profile TOML file (its costs are applied as overrides)")
    r.add_argument("--quick", action="store_true", help="shorter runs (10 s warm-up, 5 s measured), coarser grid")
    r.add_argument("--jobs", type=int, default=2, help="worker processes (simulations run in parallel; results do not depend on it)")
    r.add_argument("--cache", default=None, help="simulation cache directory: the sweeps and the realsys runs (default out/validation-cache)")
    add_set_option(r, help="scenario override for every simulation")
    r.add_argument("--real", action="append", default=[], metavar="RESULTS.csv",
                   help="realsys results to compare (held-out), with --real-profile")
    r.add_argument("--real-profile", default=None, help="cost profile fitted to this machine")
    r.add_argument("--group", action="append", default=[], metavar="NAME",
                   help="only these configurations (e.g. userver-one-packet-select); warms the cache in pieces")
    return p


def _partial_phases(args) -> bool:
    """A phases run other than the committed one (its rows, profile and start): it does not go over
    docs/validation/phases.md when no --out is given."""
    from .phases import ROWS, T_FROM
    rows = None if args.rows is None else [x.strip() for x in args.rows.split(",") if x.strip()]
    return (args.scenario is not None or bool(args.set) or (rows is not None and rows != list(ROWS))
            or args.profile not in (None, "thesis-2004") or args.t_from not in (None, T_FROM))


def _partial_analysis(args) -> bool:
    """A seeds, trace, window, drops, specweb-idle or sensitivity run other than the committed one
    (its profile, seeds, rows, window, grid or step): like a partial report or phases run, it does
    not go over docs/validation when no --out is given (the report reads those files)."""
    if args.cmd == "phases":
        return _partial_phases(args)
    if getattr(args, "profile", None) not in (None, "thesis-2004"):
        return True
    if args.cmd == "seeds":
        return args.seeds != 4
    if args.cmd == "trace":
        from .trace import DEFAULT_ROWS
        rows = None if args.rows is None else [x.strip() for x in args.rows.split(",") if x.strip()]
        return (args.seeds != 4 or args.step != 20.0 or args.until is not None
                or (rows is not None and rows != list(DEFAULT_ROWS)))
    if args.cmd == "specweb-idle":
        from .specweb_idle import PER_KB_FACTORS, THINK_GRID_MS

        def other(text, default) -> bool:
            try:
                return text is not None and [float(x) for x in text.split(",") if x.strip()] != list(default)
            except ValueError:
                return True             # refused below, naming the flag
        return other(args.think_ms, THINK_GRID_MS) or other(args.per_kb_factors, PER_KB_FACTORS)
    if args.cmd == "sensitivity":        # --rows writes sensitivity-rows.md, not the whole analysis's page
        from .sensitivity import STEP
        return args.step != STEP
    return False


def main(argv=None) -> int:
    from simaccept.cli import stdout_gone
    try:
        return _cli(argv)
    except BrokenPipeError:             # python -m validation ... | head
        return stdout_gone()


def _cli(argv=None) -> int:
    why = split_set(_parser(), sys.argv[1:] if argv is None else argv)
    if why:                             # argparse said only "unrecognized arguments: 1"
        _err(why)
        return 2
    args = _parser().parse_args(argv)
    import signal
    from simaccept.cli import Terminated, termination_signals_as_interrupt
    # SIGTERM and SIGHUP as Ctrl-C, as `simaccept` takes them: their default killed this process
    # at once (its workers died with it), so a worker's finished points not yet collected were
    # lost, and nothing said what had been kept
    try:
        with termination_signals_as_interrupt():
            return _main(args)
    except SweepError as e:             # a worker died (the OOM killer): one line, as `simaccept`
        _err(str(e))
        return 1
    except KeyboardInterrupt as e:      # as `simaccept`: no traceback (report, window, seeds, sensitivity and
                                        # fit --cache keep their finished simulations)
        by = f" by {signal.Signals(e.signum).name}" if isinstance(e, Terminated) else ""
        _err(f"interrupted{by}{_kept(args)}")
        return 128 + e.signum if isinstance(e, Terminated) else 130


def _kept(args) -> str:
    """What an interrupted command kept, for its last line ("interrupted" alone left the user to
    guess whether an hour of simulations was lost)."""
    cache = getattr(args, "cache", None)
    if cache is None and args.cmd not in ("fit", "predict"):
        import importlib
        module, name = {"machine-fit": ("machine", "FIT_CACHE"), "machine-check": ("machine", "CHECK_CACHE"),
                        "thesis-fit": ("thesis_fit", "FIT_CACHE")}.get(
            args.cmd, (args.cmd.replace("-", "_"), "DEFAULT_CACHE"))
        try:
            cache = getattr(importlib.import_module(f"validation.{module}"), name)
        except (ImportError, AttributeError):
            cache = None
    if cache is None:
        return f"; nothing written ({args.cmd} keeps no partial results without --cache DIR)"
    return f"; finished simulations are kept in {cache} (run the same command again to reuse them)"


def _main(args) -> int:
    if args.cmd == "fit":
        return fit_main(args)
    if args.cmd == "predict":
        return predict_main(args)
    if args.cmd == "machine-check":
        return machine_check_main(args)
    if args.cmd in ("machine-fit", "thesis-fit"):
        # checked before anything runs: the fit overwrites the shipped profile
        if args.jobs < 1 or args.max_nfev < 1:
            flag, v = ("--jobs", args.jobs) if args.jobs < 1 else ("--max-nfev", args.max_nfev)
            _err(f"{flag}: must be >= 1, got {v}")
            return 2
        from .fitter import FitError
        if args.cmd == "machine-fit":
            from .machine import fit as _mfit
            try:
                target = machine_fit_target(args)
            except ValueError as e:
                _err(str(e))
                return 2
            run_fit = lambda jobs, nfev: _mfit(jobs, nfev, **target)  # noqa: E731
        else:
            from .records import CHECKOUT, ROOT
            from .thesis_fit import check, fit as _fit
            if not CHECKOUT and not args.check:
                # it rewrites the shipped thesis-2004 profile, which every later predict uses, and
                # the committed record of that fit, which an installed package does not have
                _err(f"thesis-fit: refits the thesis-2004 profile shipped with simaccept (here {ROOT}), so it "
                     "runs only in a source checkout; for a profile of your own fitted to the thesis's rows: "
                     "simaccept fit --records thesis --select server=userver --params ... --out PROFILE.toml")
                return 2
            from .thesis_fit import BASE, EXTRA_METRICS, FIT_METRICS, FIT_PARAMS
            metrics = (tuple(m.strip() for m in args.metrics.split(",") if m.strip()) if args.metrics is not None
                       else FIT_METRICS)
            badm = [m for m in metrics if m not in FIT_METRICS + EXTRA_METRICS]
            if badm or not metrics:
                _err(f"--metrics: {', '.join(badm) or 'none given'}: not among the thesis fit's metrics "
                     f"({', '.join(FIT_METRICS + EXTRA_METRICS)})")
                return 2
            why = _twice(metrics)
            if why:
                _err(f"--metrics: {why}")
                return 2
            if args.check:
                # check() runs at the shipped values: these were read and then ignored
                given = [f for f, v in (("--params", args.params), ("--start", args.start),
                                        ("--max-nfev", args.max_nfev if args.max_nfev != 12 else None)) if v is not None]
                if given:
                    _err(f"--check: prints the residuals at the shipped thesis-2004; {', '.join(given)} "
                         f"belong to a fit")
                    return 2
            # "" was taken for no --params: the whole fit, from thesis-2004-hand
            params = (tuple(p.strip() for p in args.params.split(",") if p.strip()) if args.params is not None
                      else FIT_PARAMS)
            bad = [p for p in params if p not in FIT_PARAMS]
            if bad or not params:
                _err(f"--params: {', '.join(bad) or 'none given'}: not among the thesis fit's costs "
                     f"({', '.join(FIT_PARAMS)})")
                return 2
            if args.start is not None and not args.start.strip():
                _err("--start: an empty name (leave --start out for thesis-2004-hand)")
                return 2
            why = _twice(params)
            if why:
                _err(f"--params: {why}")
                return 2
            if args.start:
                from simaccept.costs import load_costs
                try:
                    load_costs(args.start)
                except (KeyError, ValueError) as e:
                    _err(f"--start: {e.args[0] if e.args else e}")
                    return 2
            run_fit = lambda jobs, nfev: _fit(jobs, nfev, sim_overrides=args.set, params=params,  # noqa: E731
                                              base=args.start or BASE, metrics=metrics)
        try:
            if args.cmd == "thesis-fit" and args.check:
                res = check(args.jobs, sim_overrides=args.set, metrics=metrics)
                for name, v in res["residuals"].items():
                    print(f"{v:+.4f}  {name}")
                print(f"residual norm {res['residual_norm']:.4f} at the shipped {res['profile']} "
                      f"({res['n_sims']} simulations; overrides: {', '.join(args.set) or 'none'})")
                return 0
            run_fit(args.jobs, args.max_nfev)
        except FitError as e:
            _err(f"fit failed: {e}")
            return 1
        except ValueError as e:             # a bad --set (unknown key, wrong type)
            msg = str(e)
            arg, _, reason = msg.partition(": ")
            # CostFitter names its own argument; thesis-fit's options are --set and --start
            flag = {"sim_overrides": "--set", "params": "--params", "base_profile": "--start"}.get(arg)
            if args.check and "costs.profile: give the profile as" in reason:
                reason = "costs.profile: --check runs at the shipped thesis-2004"
            _err(f"{flag}: {reason.replace('as base_profile (--base-profile)', 'as --start')}" if flag else msg)
            return 2
        return 0
    if args.jobs < 1:
        _err(f"--jobs: must be >= 1, got {args.jobs}")
        return 2
    if getattr(args, "rows", None) is not None:
        # trace --rows A,A traced A twice, its page listing each step twice
        why = _twice([x.strip() for x in args.rows.split(",") if x.strip()])
        if why:
            _err(f"--rows: {why}")
            return 2
    if args.cmd == "report":
        if args.real_profile is not None and not args.real_profile.strip():
            # "" was taken for no --real-profile: a report with no realsys section
            _err("--real-profile: an empty name (leave it out for a report without the realsys runs)")
            return 2
        import os
        seen: dict[str, str] = {}
        for p in args.real:
            # the same runs given twice were held out twice: the median and its count inflated
            if os.path.realpath(p) in seen:
                _err(f"--real: {p!r} is the file given before as {seen[os.path.realpath(p)]!r}")
                return 2
            seen[os.path.realpath(p)] = p
    if args.cmd != "report" and args.profile is not None:
        # a malformed profile file (a negative cost, no [costs] table) raised a ValueError traceback
        from simaccept.costs import load_costs
        try:
            load_costs(args.profile)
        except (KeyError, ValueError) as e:
            _err(f"--profile: {e.args[0] if e.args else e}")
            return 2
    from .report import DEFAULT_OUT, default_out
    if args.out is not None:        # an empty one was taken for the default
        out_dir = args.out
    elif args.cmd == "report":      # a partial report does not go over the committed full one
        out_dir = default_out(profile=args.profile, quick=args.quick, sim_overrides=args.set,
                              real_profile=args.real_profile, only=args.group)[0]
    elif _partial_analysis(args):
        from .report import PARTIAL_OUT
        out_dir = PARTIAL_OUT
    else:
        out_dir = DEFAULT_OUT
    dirs = [("--out", out_dir)]
    if "cache" in args:             # each command's module names its default
        import importlib
        dirs.append(("--cache", args.cache if args.cache is not None
                     else importlib.import_module(f"{__package__}.{args.cmd.replace('-', '_')}").DEFAULT_CACHE))
    for option, d in dirs:
        why = _dir_problem(d)
        if why:
            _err(f"{option} {str(d)!r}: {why}")
            return 2
    if args.cmd != "report":
        # the repository's docs/validation, not one under the working directory (as report's)
        args.out = str(out_dir)
    if args.cmd == "specweb-idle":
        from .specweb_idle import DEFAULT_CACHE as ICACHE
        from .specweb_idle import PER_KB_FACTORS, THINK_GRID_MS, IdleError, per_kb_reads, run as run_idle
        grid = _numbers(args.think_ms, "--think-ms", THINK_GRID_MS)
        kbf = _numbers(args.per_kb_factors, "--per-kb-factors", PER_KB_FACTORS, positive=True)
        if grid is None or kbf is None:
            return 2
        res, code = _guarded(lambda: run_idle(out=args.out, jobs=args.jobs, think_ms=grid, profile=args.profile,
                                              per_kb_factors=kbf, cache=args.cache or ICACHE),
                             IdleError, failed=lambda msg: not msg.startswith(("--cache", "--think-ms",
                                                                                "--per-kb-factors")))
        if code is not None:
            return code
        w0, wb = res["heldout_within_10pct_as_stated"], res["heldout_within_10pct_at_best_think"]
        rr = res["ratio_reading"]
        none = res["best_think_ms"] is None
        delays = (f"; the absolute reading infers none ({res['absolute_reading_error']})" if none
                  else f" to {res['best_think_ms']:g} ms (absolute reading)")
        at = (f"{rr['within_10pct']['within']} at that delay" if none
              else f"{rr['within_10pct']['within']} and {wb['within']} at those delays")
        print(f"inferred client delay {rr['think_ms']:g} ms (ratio reading){delays}; within 10 %: "
              f"{w0['within']}/{w0['cells']} as stated, {at}; wrote {args.out}/specweb-idle.md")
        for k in res["per_kb"][1:]:
            print(f"  per-KB send cost x{k['factor']:g}: " + ("; ".join(
                f"{w['within']}/{w['cells']} at {th:g} ms ({n})" for n, th, w in per_kb_reads(k, as_stated=False))
                or f"no delay read: {k['error']}"))
        return 0
    if args.cmd == "window":
        from .window import DEFAULT_CACHE as WCACHE, WindowError, run as run_window
        res, code = _guarded(lambda: run_window(out=args.out, jobs=args.jobs, profile=args.profile,
                                                cache=args.cache or WCACHE),
                             WindowError, failed=lambda msg: "simulation failed" in msg)
        if code is not None:
            return code
        t = res["throughput_within_10pct"]
        print(f"throughput within 10 %: {t['thesis_window']}/{t['cells']} in the thesis's window (120 s from idle, "
              f"the report's), {t['file_window']}/{t['cells']} in the scenario files'; wrote {args.out}/window.md")
        return 0
    if args.cmd == "seeds":
        from .seeds import DEFAULT_CACHE as SCACHE, SeedsError, run as run_seeds
        res, code = _guarded(lambda: run_seeds(out=args.out, n=args.seeds, jobs=args.jobs, profile=args.profile,
                                               cache=args.cache or SCACHE),
                             SeedsError, failed=lambda msg: "simulation failed" in msg)
        if code is not None:
            return code
        k = len(res["cells"])
        o = res["other_cells"]
        print(f"held-out throughput cells in band at every one of {res['n_seeds']} seeds: "
              f"{res['in_band_at_every_seed']}/{k}, at none: {res['in_band_at_no_seed']}/{k}; every other cell: "
              f"{sum(c['within_seeds'] == c['n_seeds'] for c in o)}/{len(o)} and "
              f"{sum(c['within_seeds'] == 0 for c in o)}/{len(o)}; wrote {args.out}/seeds.md")
        return 0
    if args.cmd == "trace":
        from .trace import DEFAULT_CACHE as TCACHE, DEFAULT_ROWS, TraceError, run as run_trace
        rows = DEFAULT_ROWS if args.rows is None else [x.strip() for x in args.rows.split(",") if x.strip()]
        res, code = _guarded(lambda: run_trace(out=args.out, n=args.seeds, step=args.step, rows=rows, jobs=args.jobs,
                                               profile=args.profile, cache=args.cache or TCACHE, until=args.until),
                             TraceError, failed=lambda msg: "simulation failed" in msg or "not the start" in msg)
        if code is not None:
            return code
        parts = []
        for t in res["traces"]:
            later = [s["loops_per_s"] for s in t["steps"][1:]] or [t["steps"][0]["loops_per_s"]]
            parts.append(f"{t['row']} seed {t['seed']}: {min(later):,.0f}-{max(later):,.0f} loops/s")
        print(f"after the first step: {'; '.join(parts)}; wrote {args.out}/trace.md")
        return 0
    if args.cmd == "drops":
        from .drops import DEFAULT_CACHE as DCACHE, DropsError, run as run_drops
        res, code = _guarded(lambda: run_drops(out=args.out, jobs=args.jobs, profile=args.profile,
                                               cache=args.cache or DCACHE),
                             DropsError, failed=lambda msg: "simulation failed" in msg)
        if code is not None:
            return code
        parts = [f"{c['row']} sim/thesis {c['ratio_total']:.2f}" for c in res["cells"]]
        print(f"queue-drop totals per second, simulated over the thesis's: {'; '.join(parts)}; wrote {args.out}/drops.md")
        return 0
    if args.cmd == "phases":
        from .phases import DEFAULT_CACHE as PCACHE, ROWS as PROWS, PhasesError, run as run_phases
        prows = PROWS if args.rows is None else [x.strip() for x in args.rows.split(",") if x.strip()]
        res, code = _guarded(lambda: run_phases(out=args.out, jobs=args.jobs, n_seeds=args.seeds,
                                                profile=args.profile,
                                                cache=args.cache or PCACHE, t_from=args.t_from, rows=prows,
                                                scenario=args.scenario, overrides=args.set),
                             PhasesError, failed=lambda msg: "simulation failed" in msg)
        if code is not None:
            return code
        parts = [f"{r['row']} {r['clients']} seed {r['seed']}: {r['phases']['accepted_mean']:.0f} a phase "
                 f"(q0 {r['phases']['q0_mean']:.0f}, r·d {r['phases']['r_times_d']:.2f})" for r in res["runs"]]
        print(f"{'; '.join(parts)}; wrote {args.out}/phases.md")
        return 0
    if args.cmd == "sensitivity":
        from .sensitivity import DEFAULT_CACHE, SensitivityError, run as run_sens
        rows = None if args.rows is None else [x.strip() for x in args.rows.split(",") if x.strip()]
        res, code = _guarded(lambda: run_sens(out=args.out, jobs=args.jobs, step=args.step, profile=args.profile,
                                              cache=args.cache or DEFAULT_CACHE, rows=rows),
                             SensitivityError, failed=lambda msg: "simulation failed" in msg)
        if code is not None:
            return code
        held = [r for r in res["rows"] if r["role"] == "held-out"]
        unid = [p for p, s in res["params"].items() if s["status"] == "unidentified"]
        print(f"{len(res['rows'])} cells, {len(held)} held-out ({sum(not r['ok'] for r in held)} miss); "
              + (f"{len(unid)} of {len(res['params'])} costs unidentified; wrote {args.out}/sensitivity.md"
                 if rows is None else f"partial run; wrote {args.out}/sensitivity-rows.md"))
        return 0
    from .report import ReportError, run_report
    try:
        return run_report(out=args.out, profile=args.profile, quick=args.quick, jobs=args.jobs,
                          cache=args.cache, sim_overrides=args.set, real=args.real, real_profile=args.real_profile,
                          only=args.group)
    except (ReportError, ScenarioError, ValueError) as e:
        _err(str(e))
        return 2

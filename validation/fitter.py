"""CostFitter: fit the simulator's per-operation costs to measured records.

The scikit-learn / SciPy shape::

    from validation import CostFitter, load_records
    recs = [m for m in load_records("validation/data/thesis.csv")
            if m.server == "userver" and m.workload == "one-packet"]
    f = CostFitter(params=["select_base", "k_syn_drop"], n_jobs=2).fit(recs)
    f.params_, f.stderr_, f.result_          # values, 1-sigma errors, the OptimizeResult
    f.predict(scenario)                      # -> RunRecord with the fitted costs
    f.save("my-profile.toml")                # [costs] profile = "my-profile.toml" selects it

How the objective is built
--------------------------
For every record with a target rate and a server the simulator has, the record's
scenario (:func:`validation.records.scenario_for`) is simulated with the current cost
values as ``costs.<name>=`` overrides.  The residuals are, per record and metric,

* relative: ``w * (sim - measured) / |measured|`` for any numeric record column
  (``replies_per_s``, ``c_avg``, ``accept_rate``, ``select_calls_per_s``,
  ``fds_per_select``, ...); a NaN (not measured) or zero target is skipped;
* ``peak_replies_per_s``: for a *peak row* (no target rate, a measured peak: the
  thesis quotes peaks in its text), ``w * (sim peak - peak) / peak`` where the simulated
  peak is the largest reply rate over target rates of 0.9, 1.0, 1.1 and 1.2 x the
  measured peak (:data:`validation.records.PEAK_FACTORS`; 4 simulations);
* ``drop_shares``: ``w * (sim share - measured share)`` of each of the three
  drop categories (AcceptQFull, DropRequest, ListenOverflow) in their sum,
  as fractions (0.10 = 10 percentage points).  Shares, because the thesis gives
  run totals and the simulator counts over its own (shorter) period;
* ``time_split``: ``w * (sim share - measured share)`` of each server function a
  record gives a share of its time for (``cpu_share_<fn>``: the thesis's gprof tables
  4.3 and 4.9), both sides as a share of the time the listed functions take together
  (:func:`time_split`), as fractions.  The one calibration number that reads the
  getevents cost against the others directly rather than through throughput.

The fit minimises the sum of squared residuals (``loss="linear"``), or with a robust
``loss`` (``soft_l1``, ``huber``, ``cauchy``, ``arctan``: :data:`LOSSES`) a sum that grows
more slowly beyond ``f_scale`` (1.0, a residual of 100 %), as scipy's least_squares does.
A run the simulator puts in another regime than the machine did is such a residual; a
redescending loss (``cauchy``, ``arctan``) lets go of it where ``soft_l1`` does not (see
:data:`LOSSES`); ``f_scale=0.1`` bends at 10 %.  The standard errors are then those of the
robust cost (scipy's modified Jacobian, ``s^2`` from ``2 * result_.cost``).

Each record keeps one seed (:func:`validation.records.record_seed`) for the whole
fit, so the objective is a deterministic function of the costs.  It is still
*piecewise constant* at small scales (a different cost reorders discrete events),
so finite differences must step well past that noise: the fitter works in
normalised coordinates ``u = cost / start`` (so ``x_scale`` is 1) and takes
forward-difference steps of ``diff_step`` (default 0.05, i.e. 5 % of the start
value); ``xtol`` / ``ftol`` are correspondingly loose (1e-3).  Jacobian columns
(one simulation per record per parameter) run in parallel on ``n_jobs`` processes.

Uncertainties: ``stderr_ = sqrt(diag((J^T J)^-1) * s^2)`` with
``s^2 = sum(r^2) / (m - n)``, m the residuals of weight > 0 (NaN when there are no more
of them than parameters), converted back to cost units.  It is a *local, linear* estimate at the end
point, and on this piecewise-constant objective it can understate the error several-fold:
records simulated at realsys-linux6's (21 Nov fit) user_per_request 11.389 and k_syn_drop 13.299 (2 s
windows), fitted from 8 and 20, stopped ("xtol satisfied") at 10.085 +- 0.283 and
14.606 +- 0.147, 4.6 and 8.9 standard errors from the truth.  Fits from several starts,
or over records at other seeds, show the spread that matters.  The residuals of one
record's ``drop_shares`` or ``time_split`` group sum to 0, so such a group has one fewer
independent residual than m counts: thesis-2004 (22 residuals in 4 groups, 4 parameters)
divides by 18 where 14 is arguable, so its ``stderr_`` is about 13 % smaller (x sqrt(14/18))
than with that count; its values are unaffected (an audit, 2026-12-01; left as fitted,
since counting so would change the committed profile's header).  ``result_`` is scipy's
OptimizeResult in the normalised coordinates: ``result_.x`` and ``result_.jac`` are per
unit of cost / start (``params_`` and ``stderr_`` are in µs).  A fit that does not converge
(``result.success`` false) or whose Jacobian is singular (a parameter that moves
none of the chosen metrics) raises :class:`FitError`; nothing is swallowed.
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import datetime as _dt
import json
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable as _Iterable
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from simaccept.costs import COST_NAMES, load_costs, save_profile
from simaccept.record import COLUMNS, RunRecord, _TEXT
from simaccept.scenario import Scenario, ScenarioError, load_scenario
from simaccept.sweep import stop_workers, worker_pool

from .records import (PEAK_FACTORS, Measured, NotSimulable, RecordError, _as_measured, check_record, is_peak_row,
                      refuse_pasted_twice, peak_scenarios, repo_path, scenario_for,
                      simulable)

DEFAULT_METRICS = ("replies_per_s", "c_avg", "accept_rate", "select_calls_per_s", "fds_per_select")
DROP_CATEGORIES = ("drops_acceptq_full", "drops_drop_request", "drops_listen_overflow")
PEAK = "peak_replies_per_s"
#: Metrics that stand for a group of residuals, each a difference of fractions.
GROUPED = ("drop_shares", "time_split")
#: Numeric record columns that are not measurements of the server: the run's identity and window,
#: which the simulation copies from the record or the overrides (a residual of 0, counted as a
#: degree of freedom, or of the window override), and the simulator's own wall-clock time (a fit
#: to it differed between n_jobs 1 and 2).
NOT_METRICS = ("target_rate", "duration_s", "seed", "wall_s")


class FitError(RuntimeError):
    """The fit did not converge, its Jacobian is singular, or a simulation failed."""


class _UnmeasurableTrial(FitError):
    """A simulation at the point tried measured nothing of the server: no server call ended in
    its window (simaccept.sim's ``MeasurementError`` of a receive livelock, e.g. at a bold step
    of k_syn_drop): the model's outcome there, not a bug, and a point the fit cannot use."""


#: The start of the one failure :class:`_UnmeasurableTrial` takes (an empty window, the other
#: MeasurementError, means a bug: simulate() prevents it).
UNMEASURABLE = "MeasurementError: no server call ended"


class NotFittedError(ValueError, AttributeError):
    """A fitted attribute or :meth:`CostFitter.predict` before a fit (or after one that raised):
    scikit-learn's ``NotFittedError`` has the same two bases."""


class NoRecordsError(FitError):
    """No record can be fitted (none simulable, none finished ``ok``, or none measures the
    chosen metrics): bad input, refused before any simulation."""


#: Columns that are counts over the measured window, not rates (simaccept.record).
COUNT_COLUMNS = ("n_accept_phases", "accepts_eagain", "drops_synq_full", "drops_acceptq_full",
                 "drops_drop_request", "drops_listen_overflow")


def simulated_as_measured(sim: RunRecord, measured: RunRecord, metric: str) -> float:
    """The simulation's ``metric`` as the measured record counts it.  A thesis μserver row's
    ``c_avg`` is accepts per loop (:func:`validation.report.userver_c_avg`, as the report
    compares it; the simulator's is per loop that found the listener ready: Accept-1's is 1.0,
    the thesis's 0.97-0.99, and Accept-Inf at 27,000 showed +102 %).  A count over a simulated
    window of another length than the record's (``--set scenario.duration``) is scaled to the
    record's window: 11,633 drops in 2 s were compared with 2.87 million in 120 s."""
    v = float(getattr(sim, metric))
    if metric == "c_avg" and measured.source == "paper" and measured.server == "userver":
        from .report import userver_c_avg
        return userver_c_avg(sim)
    if metric in COUNT_COLUMNS and sim.duration_s > 0 and measured.duration_s > 0 \
            and abs(sim.duration_s / measured.duration_s - 1) > 0.01:
        return v * measured.duration_s / sim.duration_s
    return v


def drop_shares(get) -> dict[str, float]:
    """Shares of the three drop categories in their sum (NaN if any is missing or the sum is 0)."""
    vals = [get(c) for c in DROP_CATEGORIES]
    tot = sum(vals)
    if any(math.isnan(v) for v in vals) or not tot > 0:
        return {c: math.nan for c in DROP_CATEGORIES}
    return {c: v / tot for c, v in zip(DROP_CATEGORIES, vals)}


#: The μserver functions the thesis's gprof tables (4.3, 4.9) give a share of the server's time for.
#: writev is left out of the split: table 4.9 gives it 0.02-0.04 %, under a 100-byte reply, against
#: 6-19 % for read of a 60-byte request; no cost for either call reproduces that, so we read it as
#: gprof attributing writev's time elsewhere, not as a measurement of writev.
TIME_FUNCTIONS = ("select", "accept", "read", "write", "sendfile", "close", "setsockopt")


def time_split(get, functions: tuple[str, ...] | None = None) -> dict[str, float]:
    """Each function's share of the time ``functions`` take together; {} if they take none.

    ``get(column)`` reads ``cpu_share_<fn>``.  ``functions`` defaults to those of TIME_FUNCTIONS
    with a value (the ones a thesis table lists); the simulator is read over the thesis row's list,
    a function it never ran counting 0.  Normalising removes gprof's denominator, which is not
    known: under ITIMER_PROF on a uniprocessor every tick, softirq packet work included, is charged
    to the one server process at whatever function it was in, while the simulator keeps kernel
    packet work apart (``cpu_share_kernel_net``).
    """
    if functions is None:
        functions = tuple(fn for fn in TIME_FUNCTIONS if not math.isnan(get(f"cpu_share_{fn}")))
    vals = {fn: v if not math.isnan(v := get(f"cpu_share_{fn}")) else 0.0 for fn in functions}
    total = sum(vals.values())
    return {fn: v / total for fn, v in vals.items()} if total > 0 else {}


#: The member of a scenario's JSON that carries a sweep point's seed key and coordinates,
#: which :meth:`Scenario.to_json` (the values only) leaves out.
SWEEP_POINT = "__sweep_point__"


def scenario_json(sc: Scenario) -> str:
    """``sc`` as the JSON the fitter's workers and cache take: its values, and for a sweep
    point (see :func:`validation.records.scenario_for`) its seed key, without which the
    point would draw another random stream than the sweep that wrote the record."""
    if not sc.point_key:
        return sc.to_json()
    point = {"key": list(sc.point_key), "coords": [list(c) for c in sc.coords]}
    return json.dumps({SWEEP_POINT: point, **sc.values}, sort_keys=True)


def scenario_from_json(js: str, source: str) -> Scenario:
    """The inverse of :func:`scenario_json`."""
    doc = json.loads(js)
    point = doc.pop(SWEEP_POINT, None)
    if point is None:
        return Scenario(doc, source)
    return Scenario(doc, source, tuple(point["key"]), tuple(tuple(c) for c in point["coords"]))


def _simulate_json(values_json: str, source: str) -> dict:
    from simaccept.sim import simulate
    return simulate(scenario_from_json(values_json, source)).to_dict()


def _worker_died(kept: str) -> Exception:
    """The error a dead worker (the OOM killer) becomes, as in a sweep: exit 1 and one line
    from the CLIs, where fit and predict gave a BrokenProcessPool traceback."""
    from simaccept.sweep import SweepError
    return SweepError(f"a worker process died before its simulation finished (killed: by the OOM killer if "
                      f"memory ran out; fewer --jobs use less); {kept}")


def simulate_records(recs, profile: str, jobs: int, sim_overrides=(), source: str = "<report>",
                     cache: str | Path | None = None) -> list[RunRecord]:
    """Each record's own scenario (:func:`scenario_for`) simulated with cost ``profile`` (a
    name or a ``.toml`` path) and ``sim_overrides``, on ``jobs`` processes, in order.
    With ``cache`` (a directory), runs go through :func:`simulate_cached`: a run already
    there is read, not simulated, and an interrupted batch keeps what finished."""
    over = [f"costs.profile={json.dumps(str(profile))}"] + list(sim_overrides)
    scs = [scenario_json(scenario_for(m, overrides=over)) for m in recs]
    if cache is not None:
        done = simulate_cached(scs, Path(cache), max(1, jobs), source)
        return [RunRecord(**done[js]) for js in scs]
    ex = worker_pool(max(1, min(jobs, len(scs))))   # no idle workers
    try:
        out = [RunRecord(**d) for d in ex.map(_simulate_json, scs, [source] * len(scs))]
    except BrokenProcessPool:
        stop_workers(ex)
        raise _worker_died("nothing was kept (predict keeps no partial results)") from None
    except BaseException:
        # Ctrl-C, SIGTERM (or a failure): kill the running simulations, drop the queued ones
        stop_workers(ex)
        raise
    ex.shutdown()
    return out


def check_run_inputs(profile: str, cache: str | Path, error: type[Exception]) -> Path:
    """The cache directory as a Path, after refusing (before any run) an unknown profile
    (KeyError from load_costs) or a ``--cache`` that is not a directory (``error``)."""
    from simaccept.costs import load_costs
    load_costs(profile)
    cache = Path(cache)
    if cache.exists() and not cache.is_dir():
        raise error(f"--cache {cache}: not a directory")
    return cache


def check_run_count(n_runs: int, what: str, error: type[Exception]) -> int:
    """``n_runs`` after refusing (``error`` naming ``what``, the option that sets it) more
    simulations than one sweep may have (:data:`simaccept.sweep.MAX_SWEEP_POINTS`), counted before
    any plan is built: ``--seeds 1e9`` ran out of memory building its plan, not simulating it."""
    from simaccept.sweep import MAX_SWEEP_POINTS
    if n_runs > MAX_SWEEP_POINTS:
        raise error(f"{what}: {n_runs:,} simulations, more than {MAX_SWEEP_POINTS:,} (the sweep's limit): "
                    f"ask for fewer")
    return n_runs


def raise_if_failed(runs: Iterable[tuple[str, dict]], error: type[Exception]) -> None:
    """Raise ``error`` naming every label whose run (a record dict, as :func:`simulate_cached`
    returns) did not finish ``ok``, with the first one's error line: an analysis writes no table
    with holes in it."""
    bad = {lab: d.get("error") or "no error text" for lab, d in runs if d.get("status") != "ok"}
    if bad:
        lab = sorted(bad)[0]
        raise error(f"simulation failed for {sorted(bad)}: {lab}: {bad[lab].splitlines()[0]}")


def simulate_cached(jsons: Iterable[str], cache: Path, jobs: int = 1, source: str = "<cached>",
                    on_done=None, progress: Callable[[str], None] | None = None,
                    every: float = 60.0) -> dict[str, dict]:
    """{scenario JSON: record dict} for ``jsons``, simulating only those not in ``cache``.

    Files are named by :meth:`Scenario.content_hash`, which covers the *resolved* cost values
    and the simulator's code (:func:`simaccept.scenario.model_fingerprint`): the JSON names a
    profile but not its costs, so a refitted profile (or a changed simulator) must not be
    answered from runs made with the old one.
    A run that finished ``ok`` is written (atomically) as soon as it finishes, so an
    interrupted batch keeps what it did.  Failed runs are returned, not cached.  A cache file
    that cannot be read whole (torn, not a complete record: :func:`simaccept.sweep.read_cached`)
    counts as missing: its run is simulated again and the file rewritten.
    ``on_done(js, d)`` is called for each run simulated here.
    ``progress(msg)``, if given, is told how many runs are to be simulated and how many were
    cached before the first starts, then how many are done at most once per ``every`` seconds,
    with the time left at the batch's mean pace so far (runs differ in length: a rough guide).
    A sensitivity or seeds refresh is hours of simulations; without it the log says nothing
    until the end.
    """
    from concurrent.futures import as_completed

    from simaccept.sweep import _cache_name, atomic_write, policy_key, read_cached
    cache = Path(cache)
    out, todo = {}, []
    keys: dict[str, str | None] = {}
    for js in dict.fromkeys(jsons):
        sc = scenario_from_json(js, source)
        # named as a sweep names its points: a user-registered policy's loaded code and values
        # are part of the key (an edited quota() was answered from the old runs here), and a
        # policy that cannot be keyed (simaccept.sweep.policy_key: None) is never cached
        pol = sc["server"]["policy"]
        if pol not in keys:
            keys[pol] = policy_key(pol)
        name = _cache_name(sc, keys[pol])
        f = cache / name if name is not None else None
        d = read_cached(f) if f is not None and f.is_file() else None
        if d is not None and d.get("status") == "ok":
            out[js] = d
        else:       # not there, or torn or incomplete (a JSONDecodeError, a TypeError, or a run of nans): simulated again
            todo.append((js, f))
    if not todo:
        return out
    cache.mkdir(parents=True, exist_ok=True)
    n_todo, n_cached = len(todo), len(out)
    t0 = last = time.monotonic()
    n_done = 0
    if progress is not None:
        progress(f"{source}: {n_todo} simulations to run, {n_cached} cached, {min(jobs, n_todo)} at a time")

    def keep(js, f, d):
        nonlocal n_done, last
        if d.get("status") == "ok" and f is not None:
            atomic_write(f, RunRecord(**d).to_json())      # NaN as null, as a sweep keeps its points
        out[js] = d
        n_done += 1
        if on_done is not None:
            on_done(js, d)
        now = time.monotonic()
        if progress is not None and n_done < n_todo and now - last >= every:
            last = now
            left = (now - t0) / n_done * (n_todo - n_done)
            progress(f"{source}: {n_done}/{n_todo} simulated in {_hms(now - t0)}, "
                     f"about {_hms(left)} left at this pace")

    if jobs > 1 and len(todo) > 1:
        ex = worker_pool(min(jobs, len(todo)))
        futs = {ex.submit(_simulate_json, js, source): (js, f) for js, f in todo}
        try:
            for fut in as_completed(futs):
                keep(*futs[fut], fut.result())
        except BrokenProcessPool:
            stop_workers(ex)
            raise _worker_died(f"the {len(out)} finished simulations are kept under {cache}; rerun to "
                               f"reuse them") from None
        except BaseException:       # Ctrl-C, SIGTERM: what finished is cached; the rest is stopped
            stop_workers(ex)
            raise
        ex.shutdown()
    else:
        for js, f in todo:
            keep(js, f, _simulate_json(js, source))
    if progress is not None:
        progress(f"{source}: {n_todo}/{n_todo} simulated in {_hms(time.monotonic() - t0)}")
    return out


def _hms(secs: float) -> str:
    m, s = divmod(int(round(secs)), 60)
    return f"{m // 60}h{m % 60:02d}m" if m >= 60 else f"{m}m{s:02d}s"


def stderr_progress(msg: str) -> None:
    """``progress`` for :func:`simulate_cached` that writes to stderr (stdout stays the result)."""
    print(msg, file=sys.stderr, flush=True)


def _own(v: Any) -> Any:
    """A constructor argument as the fitter keeps it: a mapping or an iterable copied (numpy
    scalars and strings as Python's), anything else (a str, None, a number) as it is, for the
    checks to name."""
    def plain(x):
        return x.item() if isinstance(x, np.generic) else x
    if isinstance(v, Mapping):
        return {plain(k): plain(x) for k, x in v.items()}
    if v is None or isinstance(v, (str, bytes)) or not isinstance(v, _Iterable):
        return v
    return [plain(x) for x in v]


def _cost_items(spec: Mapping[str, Any] | Iterable[str] | None, what: str = "overrides") -> dict[str, float]:
    """``{"a": 1}`` or ``["a=1", "costs.b=2"]`` -> {name: value}.  Raises ValueError naming
    ``what`` (the argument) and the cost for an unknown name, a value that is not a finite
    number (a bool is not one) and a name given twice in a list (the last one silently won)."""
    if not spec:
        return {}
    if isinstance(spec, Mapping):
        items = list(spec.items())
    else:
        items = []
        for s in spec:
            if "=" not in str(s):
                raise ValueError(f"{what}: cost override {s!r} must look like name=value")
            k, v = str(s).split("=", 1)
            items.append((k.strip().removeprefix("costs."), v.strip()))
    out = {}
    for k, v in items:
        if k not in COST_NAMES:
            raise ValueError(f"{what}: unknown cost name(s): {k} (known: {', '.join(COST_NAMES)})")
        if k in out:
            raise ValueError(f"{what}: {k} given more than once")
        try:
            x = float(v) if _is_number(v) or isinstance(v, str) else math.nan
        except ValueError:
            x = math.nan
        if not (math.isfinite(x) and x >= 0):
            # a negative one was refused later by load_costs, naming neither this argument nor --set
            raise ValueError(f"{what}: {k}: a finite number of µs >= 0, got {v!r}")
        out[k] = x
    return out


def _is_int(v) -> bool:
    import numbers
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v) -> bool:
    import numbers
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


#: Scenario keys :func:`~validation.records.scenario_for` takes from each record's own columns.
_RECORD_KEYS = frozenset({"workload.rate", "workload.kind", "server.kind", "server.mux", "server.accept_limit"})


#: scipy.optimize.least_squares' losses.  ``linear`` is least squares; the others weigh a
#: residual beyond ``f_scale`` less than its square.  For one run the simulator puts in another
#: regime (a near-saturation point it simulates in the short loop where the run took the long
#: one: a relative residual of 41 among residuals of 0.1) take a redescending one, ``cauchy`` or
#: ``arctan``: a relative residual's Jacobian row is divided by the measured value too, so the
#: small value that makes the residual large makes its row large, and ``soft_l1`` and ``huber``,
#: which only cap the residual's weight, are still pulled by it (tests/validation/
#: test_fitter_numerics.py: a record at 1/42 of its simulation; cauchy at f_scale 0.1 ends within
#: 3 % of the truth, soft_l1 and linear on a bound).
LOSSES = ("linear", "soft_l1", "huber", "cauchy", "arctan")


def _seed_tag(m) -> str:
    seed = getattr(m.record, "seed", None)
    if seed is None or (isinstance(seed, float) and math.isnan(seed)):
        return f"#line{m.line}" if getattr(m, "line", None) is not None else ""
    return f"#seed={seed:g}" if isinstance(seed, float) else f"#seed={seed}"


class CostFitter:
    """Least-squares fit of named costs (how the objective is built: the module docstring).

    Every argument is checked here, a bad one refused with a ValueError (a scenario override's
    key with a :class:`~simaccept.scenario.ScenarioError`) that names it; :meth:`fit` refuses to
    run after an attribute was changed by hand (use :meth:`set_params`).

    :param params: the costs to fit, names of :data:`simaccept.costs.COST_NAMES` (µs).
    :param bounds: ``None`` (each cost in [0, inf)); ``{cost: (lower, upper)}``; or
        ``(lowers, uppers)`` as scipy takes them, a number for all or one per cost; ``None`` for
        a bound is none.
    :param weights: ``{metric: weight}``, each finite and >= 0; a metric not named weighs 1.
    :param metrics: what the residuals compare: numeric record columns (default
        :data:`DEFAULT_METRICS`), ``"drop_shares"``, ``"time_split"``, ``"peak_replies_per_s"``.
    :param base_profile: the profile the fit starts from and keeps for every cost it does not
        fit: a packaged name or a ``.toml`` path.
    :param overrides: fixed costs, ``{cost: µs}`` or ``["cost=µs", ...]``: applied in every
        simulation and written into the saved profile.
    :param sim_overrides: scenario overrides for every simulation, ``["section.key=value", ...]``
        (``scenario.duration=5`` for shorter runs); a ``costs.`` one is a fixed override, and a
        key the records set themselves (rate, server, policy, ...) is refused.
    :param n_jobs: worker processes; the result does not depend on it.
    :param diff_step: the relative step of the finite-difference Jacobian (scipy's ``diff_step``;
        0.05: a simulation's noise would swamp a smaller one).
    :param max_nfev: the budget of evaluations (each simulates every record); ``None``: scipy's.
        Reaching it raises :class:`FitError`, unless ``accept_max_nfev``.
    :param ftol, xtol, gtol: scipy's tolerances (``None`` turns one off; at least one > 0).
    :param base_dir: a directory of scenario files: the thesis's for ``paper`` rows (default
        ``scenarios/thesis``), and searched first for the ``[scenario] name`` a row without a
        ``config`` gives (:func:`validation.records.scenario_for`).
    :param verbose: scipy's progress output, 0, 1 or 2.
    :param accept_max_nfev: keep the last iterate at ``max_nfev`` instead of raising; the header
        and :meth:`summary` say it did not converge (``stopped_at_max_nfev_``).
    :param cache: a directory of finished simulations: a stopped fit run again replays from it.
    :param loss, f_scale: scipy's loss (``"linear"`` or a robust one of :data:`LOSSES`) and the
        residual where a robust one bends.

    ``start`` ({cost: µs}, the base profile's with ``overrides``) is set at construction.  After
    :meth:`fit`: ``params_`` and ``stderr_`` ({cost: µs}), ``cov_``, ``result_`` (scipy's
    ``OptimizeResult``), ``records_`` (those fitted), ``residual_names_``, ``residual_norm_`` and
    ``start_residual_norm_``, ``stopped_at_max_nfev_``, ``rejected_trials_`` (trial steps whose
    simulation measured nothing, a receive livelock: scipy got a non-finite residual there and
    tried nearer, or a Jacobian step was differenced from the other side; the header and
    :meth:`summary` list them).  A fit that raises (no convergence, a
    singular Jacobian) leaves ``result_``, ``records_`` and ``residual_names_`` to look into, and
    no ``params_``: :meth:`predict`, :meth:`save` and the other fitted reads raise
    :class:`NotFittedError`."""

    def __init__(self, params: Sequence[str], bounds=None, weights: Mapping[str, float] | None = None,
                 metrics: Sequence[str] = DEFAULT_METRICS, base_profile: str = "thesis-2004",
                 overrides: Mapping[str, float] | Iterable[str] = (), sim_overrides: Iterable[str] = (),
                 n_jobs: int = 1, diff_step: float = 0.05, max_nfev: int | None = None,
                 ftol: float = 1e-3, xtol: float = 1e-3, gtol: float = 1e-8, base_dir=None, verbose: int = 0,
                 accept_max_nfev: bool = False, cache: str | Path | None = None, loss: str = "linear",
                 f_scale: float = 1.0):
        # as given, for get_params / set_params (bounds and overrides are stored resolved), but
        # copies: a generator of params was spent by the checks below, and a list the caller
        # went on to change changed what set_params rebuilt (scikit-learn's clone rebuilds
        # from get_params too)
        params, metrics, weights, overrides, sim_overrides = (
            _own(params), _own(metrics), _own(weights), _own(overrides), _own(sim_overrides))
        try:
            bounds = copy.deepcopy(bounds)
        except TypeError:               # a generator: left for the bounds check to name
            pass
        self._init_args = {k: v for k, v in locals().items() if k != "self"}
        for name, v in (("params", params), ("metrics", metrics), ("sim_overrides", sim_overrides),
                        ("overrides", overrides)):
            if isinstance(v, (str, bytes)):
                # a str was iterated character by character: "user_per_request" was 16 unknown costs
                raise TypeError(f"{name}: a list of names, got the str {v!r} (put it in a list: [{v!r}])")
            if v is None and name in ("overrides", "sim_overrides"):
                continue                # none, as () is
            if not isinstance(v, _Iterable):
                # None was "'NoneType' object is not iterable", naming no argument
                raise TypeError(f"{name}: a list of names, got the {type(v).__name__} {v!r}")
        sim_overrides = () if sim_overrides is None else sim_overrides
        params = list(params)
        if not params:
            raise ValueError("params: give at least one cost name")
        unknown = [p for p in params if p not in COST_NAMES]
        if unknown:
            raise ValueError(f"params: unknown cost parameter(s): {', '.join(map(str, unknown))} "
                             f"(known: {', '.join(COST_NAMES)})")
        if len(set(params)) != len(params):
            raise ValueError("params: duplicate names")
        metrics = list(metrics)
        if not metrics:
            raise ValueError(f"metrics: give at least one metric (default: {', '.join(DEFAULT_METRICS)})")
        twice = list(dict.fromkeys(m for m in metrics if metrics.count(m) > 1))
        if twice:       # its residuals counted twice: a weight of 2 nobody asked for
            raise ValueError(f"metrics: given more than once: {', '.join(map(str, twice))}")
        bad = [m for m in metrics if m not in GROUPED + (PEAK,) and (m not in COLUMNS or m in _TEXT)]
        if bad:
            raise ValueError(f"metrics: unknown metric(s): {', '.join(map(str, bad))} "
                             f"(numeric record columns, {', '.join(map(repr, GROUPED))} or '{PEAK}')")
        bad = [m for m in metrics if m in NOT_METRICS]
        if bad:
            raise ValueError(f"metrics: not a measurement of the server: {', '.join(bad)} (the run's identity "
                             f"and window, or the simulator's wall-clock time)")
        self.params = params
        self.metrics = metrics
        if weights is not None and not isinstance(weights, Mapping):
            raise ValueError(f"weights: a mapping {{metric: weight}}, got a {type(weights).__name__}")
        self.weights = dict(weights or {})
        badw = [k for k in self.weights if k not in metrics]
        if badw:
            # map(str): a key 1 failed in the join, a TypeError naming nothing
            raise ValueError(f"weights: for metric(s) not fitted: {', '.join(map(str, badw))}")
        for k, w in self.weights.items():
            # checked here: a NaN or text weight failed only after the first simulations
            # a bool or a str ("2") was taken as a number and printed as given in the header
            if not (_is_number(w) and math.isfinite(float(w)) and float(w) >= 0):
                raise ValueError(f"weights: {k}: a finite number >= 0, got {w!r}")
        if self.weights and all(float(self.weights.get(m, 1.0)) == 0 for m in metrics):
            raise ValueError("weights: every fitted metric has weight 0: nothing to fit")
        self.base_profile = base_profile
        self.overrides = _cost_items(overrides, "overrides")
        # A cost given as a simulation override ("costs.k_syn=30") was applied in every
        # simulation but left out of the saved profile and its header ("fixed overrides:
        # none"), so the profile predicted other numbers than the fit saw.  It is a fixed
        # override; the base profile and the fitted costs have arguments of their own.
        self.sim_overrides = []
        for o in sim_overrides:
            key = str(o).split("=", 1)[0].strip()
            if key in _RECORD_KEYS:
                # it replaced every record's own value: the fit then compared each record with
                # a simulation of another configuration
                raise ValueError(f"sim_overrides: {key}: each record sets it from its own columns")
            if not key.startswith("costs."):
                self.sim_overrides.append(o)
            elif key == "costs.profile":
                raise ValueError("sim_overrides: costs.profile: give the profile as base_profile "
                                 "(--base-profile), so the saved profile records it")
            elif key.removeprefix("costs.") in params:
                raise ValueError(f"sim_overrides: {key}: a fitted cost, started at the base profile's "
                                 "value; to start it elsewhere, give as the base profile a .toml file "
                                 "with that value (or, from Python, overrides={cost: µs})")
            else:
                self.overrides.update(_cost_items([o], "sim_overrides"))
        # each key's name, type and range, as any scenario takes it: a misspelt key ("scenario.durat")
        # was found only at fit(), with the record's simulation (what a record's server does not
        # read is still refused there, per record)
        load_scenario(text="", overrides=self.sim_overrides)
        # checked here, as run_sweep checks its jobs: 2.7 was truncated to 2, and a bad max_nfev,
        # tolerance or verbose failed inside scipy once the fit started (--verbose 5: a traceback)
        if not _is_int(n_jobs) or n_jobs < 1:
            raise ValueError(f"n_jobs: must be an integer >= 1, got {n_jobs!r}")
        self.n_jobs = int(n_jobs)
        if not _is_number(diff_step) or not (math.isfinite(float(diff_step)) and float(diff_step) > 0):
            raise ValueError(f"diff_step: a finite number > 0, got {diff_step!r}")
        self.diff_step = float(diff_step)
        if max_nfev is not None and (not _is_int(max_nfev) or max_nfev < 1):
            raise ValueError(f"max_nfev: an integer >= 1 (or None: scipy's default), got {max_nfev!r}")
        self.max_nfev = None if max_nfev is None else int(max_nfev)
        for name, tol in (("ftol", ftol), ("xtol", xtol), ("gtol", gtol)):
            if tol is not None and (not _is_number(tol) or not (math.isfinite(float(tol)) and float(tol) >= 0)):
                raise ValueError(f"{name}: a finite number >= 0 (or None: that test off), got {tol!r}")
        if not any(t for t in (ftol, xtol, gtol)):
            raise ValueError("ftol, xtol, gtol: at least one must be > 0, or the fit never stops but at max_nfev")
        self.ftol, self.xtol, self.gtol = ftol, xtol, gtol
        if loss not in LOSSES:
            raise ValueError(f"loss: one of {', '.join(LOSSES)} (scipy's least_squares), got {loss!r}")
        self.loss = loss
        if not _is_number(f_scale) or not (math.isfinite(float(f_scale)) and float(f_scale) > 0):
            raise ValueError(f"f_scale: a finite number > 0 (the residual where a robust loss bends), got {f_scale!r}")
        self.f_scale = float(f_scale)
        self.base_dir = base_dir
        if not (_is_int(verbose) or isinstance(verbose, bool)) or verbose not in (0, 1, 2):   # True: 1, as scipy
            raise ValueError(f"verbose: 0, 1 or 2 (scipy's least_squares levels), got {verbose!r}")
        self.verbose = int(verbose)
        #: Keep the last iterate when least_squares stops at max_nfev (status 0) instead of
        #: raising; the header and summary say so (``stopped_at_max_nfev_``).
        self.accept_max_nfev = bool(accept_max_nfev)
        #: Directory of finished simulations (:func:`simulate_cached`): a fit that is stopped keeps
        #: them, and the same fit run again replays its deterministic path from them and goes on.
        if cache is not None and not str(cache).strip():
            # Path("") is ".": the cache's files went into the working directory (run_sweep refuses it too)
            raise ValueError(f"cache: a directory name, got {str(cache)!r}")
        self.cache = Path(cache) if cache is not None else None
        if self.cache is not None and self.cache.exists() and not self.cache.is_dir():
            # it failed only at the first simulation, once the fit had started
            raise ValueError(f"cache: {str(cache)!r} exists and is not a directory")
        try:
            start_costs = load_costs(base_profile, self.overrides).us
        except KeyError as e:       # an unknown profile: a bad argument, named like the others
            raise ValueError(f"base_profile: {e.args[0] if e.args else e}") from None
        self.start = {p: float(start_costs[p]) for p in params}
        self.bounds = self._bounds(bounds)
        self._checked = self._config()

    #: The attributes __init__ checked and resolved; fit() refuses to run after one was changed.
    _CONFIG = ("params", "metrics", "weights", "base_profile", "overrides", "sim_overrides", "bounds", "n_jobs",
               "diff_step", "max_nfev", "ftol", "xtol", "gtol", "loss", "f_scale", "base_dir", "verbose",
               "accept_max_nfev", "cache")

    def _config(self) -> dict[str, Any]:
        def frozen(v):
            if isinstance(v, tuple) and all(isinstance(a, np.ndarray) for a in v):
                return tuple(tuple(a.tolist()) for a in v)
            return repr(v)
        return {k: frozen(getattr(self, k)) for k in self._CONFIG}

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's arguments, as given (scikit-learn's estimator interface): copies,
        so that changing one changes nothing set_params rebuilds."""
        return copy.deepcopy(self._init_args)

    def __sklearn_is_fitted__(self) -> bool:
        """scikit-learn's ``check_is_fitted`` asks this: a failed fit or a ``residuals`` call
        leaves attributes ending in ``_`` (``result_``, ``skipped_``), but no ``params_``."""
        return hasattr(self, "params_")

    def set_params(self, **params: Any) -> "CostFitter":
        """Change constructor arguments, checked again as at construction (a refused one changes
        nothing).  Clears a fit."""
        unknown = sorted(set(params) - set(self._init_args))
        if unknown:
            raise ValueError(f"set_params: not an argument of CostFitter: {', '.join(unknown)} "
                             f"(known: {', '.join(self._init_args)})")
        new = type(self)(**{**self._init_args, **params})     # a refused value leaves this one as it was
        self.__dict__.clear()
        self.__dict__.update(new.__dict__)
        return self

    # ------------------------------------------------------------------ set-up
    def _bounds(self, bounds) -> tuple[np.ndarray, np.ndarray]:
        """``None``; ``{param: (lower, upper)}``; or ``(lowers, uppers)`` as scipy takes them (not for
        two parameters given two pairs, which read either way: the dict form says which), each
        a number for every parameter or a sequence of one per parameter.  ``None`` for a bound
        is none (lower 0, upper inf).  Refused with a ValueError saying which form was meant:
        a NaN, a wrong length or a bare number used to fail inside numpy or scipy."""
        n = len(self.params)
        lo, hi = np.zeros(n), np.full(n, np.inf)
        form = "bounds: {param: (lower, upper)} or (lowers, uppers)"

        def num(v, default):
            if v is None:
                return default
            if not _is_number(v):
                # "1" and True were read as 1.0, where weights refuses them
                raise ValueError(f"{form}; a bound {v!r} is not a number")
            x = float(v)
            if math.isnan(x):
                raise ValueError(f"{form}; a bound is NaN")
            return x

        def pair(v, what):
            if not isinstance(v, (tuple, list, np.ndarray)) or len(v) != 2:
                raise ValueError(f"{form}; {what} is {v!r}, not a (lower, upper) pair")
            return v
        if bounds is None:
            pass
        elif isinstance(bounds, Mapping):
            unknown = [k for k in bounds if k not in self.params]
            if unknown:
                raise ValueError(f"bounds: for name(s) not in params: {', '.join(unknown)}")
            for i, p in enumerate(self.params):
                if p in bounds:
                    b0, b1 = pair(bounds[p], f"the entry for {p}")
                    lo[i], hi[i] = num(b0, 0.0), num(b1, np.inf)
        else:
            b0, b1 = pair(bounds, "the argument")
            seq = lambda v: isinstance(v, (tuple, list, np.ndarray)) and len(v) == 2  # noqa: E731
            if n == 2 and seq(b0) and seq(b1):
                # [(1, 5), (2, 8)] for two costs reads as scipy's (lowers, uppers), [1, 5] and
                # [2, 8], where a pair per cost may have been meant: [1, 2] and [5, 8]
                raise ValueError(f"bounds: for 2 parameters, two pairs read either as scipy's (lowers, uppers) or "
                                 f"as a (lower, upper) pair per parameter; give {{{self.params[0]!r}: (lower, upper), "
                                 f"{self.params[1]!r}: (lower, upper)}}")
            for side, b, arr, dflt in (("lowers", b0, lo, 0.0), ("uppers", b1, hi, np.inf)):
                vals = list(b) if isinstance(b, (tuple, list, np.ndarray)) else [b] * n
                if len(vals) != n:
                    raise ValueError(f"{form}; {side} has {len(vals)} values for {n} parameters "
                                     f"({', '.join(self.params)})")
                arr[:] = [num(v, dflt) for v in vals]
        bad = [f"{p} ({a:g}, {b:g})" for p, a, b in zip(self.params, lo, hi) if not 0 <= a < b]
        if bad:
            raise ValueError(f"bounds: need 0 <= lower < upper for every parameter; not so for {', '.join(bad)}")
        x0 = np.array([self.start[p] for p in self.params])
        if np.any(x0 < lo) or np.any(x0 > hi):
            outside = [p for p, v, a, b in zip(self.params, x0, lo, hi) if not a <= v <= b]
            raise ValueError(f"bounds: start value(s) outside them: {', '.join(outside)}")
        return lo, hi

    def _scale(self) -> np.ndarray:
        return np.array([self.start[p] if self.start[p] > 0 else 1.0 for p in self.params])

    def _cost_overrides(self, values: Mapping[str, float]) -> list[str]:
        allc = dict(self.overrides)
        allc.update(values)
        return [f"costs.profile={json.dumps(str(self.base_profile))}"] + [f"costs.{k}={float(v)!r}" for k, v in allc.items()]

    def _targets(self, m: Measured) -> list[tuple[str, float, float]]:
        """(metric, measured value, weight) for every residual this record gives."""
        out = []
        if is_peak_row(m):
            # a peak row has no rate of its own: its peak is its only target
            if PEAK in self.metrics:
                out.append((PEAK, m.get(PEAK), float(self.weights.get(PEAK, 1.0))))
            return out
        for metric in self.metrics:
            w = float(self.weights.get(metric, 1.0))
            if metric == "drop_shares":
                for c, v in drop_shares(m.get).items():
                    if not math.isnan(v):
                        out.append((f"share:{c}", v, w))
            elif metric == "time_split":
                for fn, v in time_split(m.get).items():
                    out.append((f"time:{fn}", v, w))
            elif metric == PEAK:
                continue            # peak rows only (above)
            else:
                v = m.get(metric)
                if not math.isnan(v) and v != 0:
                    out.append((metric, v, w))
        return out

    def _bad_measured(self, m: Measured) -> tuple[str, float] | None:
        """The first measured value the chosen metrics read from ``m`` that is infinite or
        negative (every one is a rate, count, time or share), as (column, value); else None."""
        if is_peak_row(m):
            return None         # its peak is finite (is_peak_row) and > 0 (simulable)
        cols = [k for k in self.metrics if k not in GROUPED + (PEAK,)]
        if "drop_shares" in self.metrics:
            cols += DROP_CATEGORIES
        if "time_split" in self.metrics:
            cols += [f"cpu_share_{fn}" for fn in TIME_FUNCTIONS]
        for c in cols:
            v = m.get(c)
            if math.isinf(v) or v < -1e-9:      # as load_records: a share 1 - sum may round below 0
                return c, v
        return None

    # ------------------------------------------------------------------ objective
    def _scenarios(self, u: np.ndarray) -> list[list[str]]:
        """Per record, the scenarios to simulate: one, or one per peak rate of a peak row."""
        values = dict(zip(self.params, (u * self._scale()).tolist()))
        over = self.sim_overrides + self._cost_overrides(values)
        return [[scenario_json(sc) for sc in peak_scenarios(m, self.base_dir, over)] if is_peak_row(m)
                else [scenario_json(scenario_for(m, self.base_dir, over))] for m in self._recs]

    def _run_many(self, us: list[np.ndarray]) -> list[np.ndarray]:
        """Residual vectors for several points, all simulations submitted at once."""
        todo, keys = [], []
        for u in us:
            key = tuple(np.round(u, 12).tolist())
            keys.append(key)
            if key not in self._memo and key not in [k for k, _ in todo]:
                todo.append((key, self._scenarios(u)))
        jobs = [(k, i, js) for k, scs in todo for i, jss in enumerate(scs) for js in jss]
        ran = len(jobs)
        if self.cache is not None and jobs:
            fresh = []
            done = simulate_cached([js for _, _, js in jobs], self.cache, self.n_jobs, "<fit>",
                                   on_done=lambda js, d: fresh.append(js))
            results = [done[js] for _, _, js in jobs]
            ran = len(fresh)
            self.n_cached_ += len(done) - ran
        elif self._pool is not None and len(jobs) > 1:
            futs = [self._pool.submit(_simulate_json, js, "<fit>") for _, _, js in jobs]
            try:
                results = [f.result() for f in futs]
            except BrokenProcessPool:
                raise _worker_died("no profile written" + ("" if self.cache is not None else
                                                           " (fit --cache DIR keeps finished simulations)")) from None
        else:
            results = [_simulate_json(js, "<fit>") for _, _, js in jobs]
        self.n_sims_ += ran
        per: dict[tuple, list] = {}
        for (k, i, _), d in zip(jobs, results):
            per.setdefault(k, [[] for _ in self._recs])[i].append(RunRecord(**d))
        for k, recs in per.items():
            self._memo[k] = self._residuals(recs)
            if self.verbose:
                vals = ", ".join(f"{p}={v:.4g}" for p, v in zip(self.params, np.asarray(k) * self._scale()))
                print(f"[fit] {vals}: |r| = {np.linalg.norm(self._memo[k]):.4g}", file=sys.stderr, flush=True)
        return [self._memo[k] for k in keys]

    def _residuals(self, sims: list[list[RunRecord]]) -> np.ndarray:
        res = []
        for m, group in zip(self._recs, sims):
            for sim in group:
                if sim.status != "ok":
                    # a MeasurementError's record carries no traceback: the model's outcome, not a bug
                    unmeasurable = sim.error.startswith(UNMEASURABLE) and "\n" not in sim.error.strip()
                    raise (_UnmeasurableTrial if unmeasurable else FitError)(
                        f"simulation of {m.label} (rate {sim.target_rate:g}) failed: "
                        f"{sim.error.splitlines()[0] if sim.error else ''}")
            if is_peak_row(m):
                # only the peak metric applies to a peak row (it has no rate of its own)
                (metric, target, w), = self._targets(m)
                v = max(s.replies_per_s for s in group)
                res.append(w * (v - target) / abs(target))
                continue
            sim, = group
            sget = lambda c, s=sim: float(getattr(s, c))  # noqa: E731
            sim_shares = None
            targets = self._targets(m)
            # the simulator's split is read over the functions the record lists, as the report reads it
            timed = tuple(t[5:] for t, _, _ in targets if t.startswith("time:"))
            sim_time = time_split(sget, timed) if timed else {}
            for metric, target, w in targets:
                if metric.startswith("share:"):
                    if sim_shares is None:
                        sim_shares = drop_shares(sget)
                    v = sim_shares[metric[6:]]
                    if math.isnan(v):   # no drops at all in the simulation: every share is 0
                        v = 0.0
                    res.append(w * (v - target))
                elif metric.startswith("time:"):
                    if not sim_time:
                        raise FitError(f"simulation of {m.label} spends no time in {', '.join(timed)}")
                    res.append(w * (sim_time[metric[5:]] - target))
                else:
                    v = simulated_as_measured(sim, m.record, metric)
                    if not math.isfinite(v):
                        raise FitError(f"simulation of {m.label} gives {metric} = {v} (measured {target:g})")
                    res.append(w * (v - target) / abs(target))
        return np.asarray(res, float)

    def _fun(self, u):
        try:
            f = self._run_many([np.asarray(u, float)])[0]
        except _UnmeasurableTrial as e:
            if self._first_f is None:       # the start itself: nothing to fall back on
                raise FitError(str(e)) from None
            # A trial step scipy may take back: a non-finite residual makes trf shrink its trust
            # region and try nearer (scipy/optimize/_lsq/trf.py), where raising ended the fit.
            self._reject(u, str(e))
            return np.full(len(self._first_f), np.inf)
        if self._first_f is None:
            self._first_f = f
        return f

    def _reject(self, u, why: str) -> None:
        """Keep a point (scaled, as scipy sees it) whose simulation measured nothing, and why."""
        vals = np.asarray(u, float) * self._scale()
        self.rejected_trials_.append(({p: float(v) for p, v in zip(self.params, vals)}, why))
        if self.verbose:
            print(f"[fit] step rejected: {why}", file=sys.stderr, flush=True)

    def _jac(self, u):
        u = np.asarray(u, float)
        lb, ub = self._ubounds
        steps, pts = [], []
        for j in range(len(u)):
            h = self.diff_step * max(1.0, abs(u[j]))
            if u[j] + h > ub[j]:
                if u[j] - h >= lb[j]:
                    h = -h
                else:
                    # bounds narrower than two steps: a step down left them too (13.3 for bounds
                    # 13.8..14.2 at 14), and the simulator ran costs they exclude; step as far as
                    # they allow, to the side with more room
                    h = ub[j] - u[j] if ub[j] - u[j] >= u[j] - lb[j] else lb[j] - u[j]
            p = u.copy()
            p[j] += h
            steps.append(p[j] - u[j])
            pts.append(p)
        try:
            f0, *fs = self._run_many([u] + pts)
        except _UnmeasurableTrial:
            # a step into a receive livelock (the centre, just accepted, is memoised and measured):
            # each point again, one that measures nothing differenced from the other side
            f0, fs = self._run_many([u])[0], []
            for j, p in enumerate(pts):
                try:
                    fs.append(self._run_many([p])[0])
                except _UnmeasurableTrial:
                    q = u.copy()
                    q[j] -= steps[j]
                    if not lb[j] <= q[j] <= ub[j]:
                        raise
                    fs.append(self._run_many([q])[0])       # that side too: the fit ends with it
                    steps[j] = -steps[j]
                    self._reject(p, "a Jacobian step, taken from the other side")
        J = np.empty((len(f0), len(u)))
        for j, (fj, h) in enumerate(zip(fs, steps)):
            J[:, j] = (fj - f0) / h
        return J

    # ------------------------------------------------------------------ fit
    @contextlib.contextmanager
    def _pooled(self, points: int):
        """Worker processes for the simulations of one fit or residual call (none with a cache:
        :func:`simulate_cached` runs its own): no more than ``points`` residual vectors' worth of
        simulations run at once (a fit's Jacobian: one point per parameter and the centre), so
        ``--jobs 40`` forked 40 workers for 12 simulations."""
        per_point = sum(len(PEAK_FACTORS) if is_peak_row(m) else 1 for m in self._recs)
        jobs = min(self.n_jobs, per_point * points)
        self._pool = worker_pool(jobs) if jobs > 1 and self.cache is None else None
        try:
            yield
        except BaseException:
            if self._pool is not None:      # Ctrl-C, SIGTERM: do not wait for the running simulations
                stop_workers(self._pool)
            raise
        else:
            if self._pool is not None:
                self._pool.shutdown(cancel_futures=True)
        finally:
            self._pool = None

    def _prepare(self, records: Iterable[RunRecord | Measured]) -> list[Measured]:
        """The records that can be simulated and have a target (the rest in ``skipped_``); FitError if none."""
        if isinstance(records, (str, bytes, Path)):
            raise TypeError(f"records: the records themselves (load_records({str(records)!r})), got a path")
        if not isinstance(records, _Iterable):
            raise TypeError(f"records: the records (load_records(path)), got the {type(records).__name__} {records!r}")
        recs, skipped = [], []
        seen: dict[tuple, int] = {}
        same: dict[tuple, int] = {}
        for i, r in enumerate(records):
            if not isinstance(r, (RunRecord, Measured)):
                # a dict or a CSV row was an AttributeError deep inside
                raise TypeError(f"records: item {i} is a {type(r).__name__}, not a Measured or RunRecord "
                                f"(load_records(path) reads a records file)")
            m = _as_measured(r)
            # every one, not only those built in memory: a loaded record edited since (a zero
            # duration_s) was simulated in the scenario file's window, not refused
            check_record(m, f"records item {i}" + (f" ({m.path}:{m.line})" if m.path else ""))
            # a file's row by its place (two rows alike in a file are the file's to keep; the
            # file by its real path, or /d/a.csv and a.csv were two files), one built in memory
            # by its content
            key = ((os.path.realpath(m.path), m.line) if m.path
                   else ("", m.record.to_json(), tuple(sorted(m.extras.items()))))
            if key in seen:
                # concatenated selections that overlap: the residual counted twice, a degree of
                # freedom too (stderr understated), and summary()'s residuals, a dict, kept one
                raise ValueError(f"records: item {i} ({m.label}) repeats item {seen[key]}: it would count twice")
            seen[key] = i
            refuse_pasted_twice(m, i, same)
            try:
                ok, why = simulable(m, self.base_dir, peaks=PEAK in self.metrics)
            except ScenarioError as e:
                try:
                    # a sim_overrides may repair it (scenario.duration for a run too long to simulate)
                    scenario_for(m, self.base_dir, self.sim_overrides)
                    ok, why = True, ""
                except (ScenarioError, NotSimulable):
                    # a 1,200 s run at 20,000 req/s is past what one simulation may offer: the error
                    # named workload.rate and advised a shorter run, not which record
                    raise RecordError(f"{m.label} cannot be simulated as measured: {e}",
                                      path=m.path or f"records item {i}", line=m.line if m.path else None) from None
            if not ok:
                skipped.append((m.label, why))
            elif m.record.status not in ("ok", ""):      # as predict: a failed run measured nothing to fit
                skipped.append((m.label, f"status {m.record.status}: not a finished run"))
            elif bad := self._bad_measured(m):
                # load_records refuses these; a record built in memory reached scipy, whose
                # "Residuals are not finite in the initial point" named no record (inf), or was
                # fitted against its absolute value (negative)
                c, v = bad
                raise ValueError(f"records: item {i} ({m.label}): {c} = {v!r}: a measured value must be "
                                 f"finite and >= 0")
            elif not self._targets(m):
                zero = [k for k in self.metrics if k not in GROUPED + (PEAK,) and m.get(k) == 0]
                skipped.append((m.label, f"{', '.join(zero)} measured 0: a relative residual needs a nonzero value"
                                if zero else f"no measured value for {', '.join(self.metrics)}"))
            else:
                recs.append(m)
        self.skipped_ = skipped
        if not recs:
            raise NoRecordsError("no record can be simulated and has a target for the chosen metrics"
                           + (f" (skipped: {'; '.join(f'{a}: {b}' for a, b in skipped[:5])})" if skipped else ""))
        self._recs = recs
        self._memo: dict[tuple, np.ndarray] = {}
        self._first_f = None
        self.n_sims_ = 0
        self.n_cached_ = 0
        self.rejected_trials_: list[tuple[dict, str]] = []
        return recs

    def residuals(self, records: Iterable[RunRecord | Measured],
                  values: Mapping[str, float] | None = None) -> tuple[list[str], np.ndarray]:
        """The residuals the fit would see at ``values`` (default: the start values), without fitting.

        Returns (names, residual vector) in the fit's order and weighting: how far a profile is
        from ``records`` under this fitter's metrics and simulation overrides (e.g. another
        measurement window).  Raises FitError as :meth:`fit` does.  A fitted fitter keeps the
        record of its own fit (its header counted this call's simulations and skips).
        """
        kept = {k: self.__dict__[k] for k in self._PER_CALL if k in self.__dict__}
        try:
            unknown = set(values or {}) - set(self.params)
            if unknown:
                raise ValueError(f"values: for parameters not fitted here: {sorted(unknown)}")
            recs = self._prepare(records)
            v = dict(self.start)
            v.update(values or {})
            u = np.array([v[p] for p in self.params]) / self._scale()
            with self._pooled(1):
                r = self._fun(u)
            return self._residual_names(recs), r
        finally:
            if hasattr(self, "params_"):
                self.__dict__.update(kept)

    #: What :meth:`_prepare` resets for one fit or residuals call.
    _PER_CALL = ("skipped_", "n_sims_", "n_cached_", "_recs", "_memo", "_first_f", "rejected_trials_")

    def _residual_names(self, recs: list[Measured]) -> list[str]:
        """"label:metric" per residual, in the residual vector's order; a label that several records
        share (one point at several seeds) carries each record's seed, so that no two residuals
        share a name (the fit record's residuals, a dict by name, kept one seed's of each)."""
        twice = {lab for lab, k in Counter(m.label for m in recs).items() if k > 1}
        return [f"{m.label}{_seed_tag(m) if m.label in twice else ''}:{name}"
                for m in recs for name, _, _ in self._targets(m)]

    #: What a fit sets.  A failed refit used to keep the earlier fit's params_ beside the new
    #: result_ and records_, so save() wrote old values under the new fit's header.
    _FITTED = ("params_", "stderr_", "cov_", "result_", "records_", "residual_names_", "stopped_at_max_nfev_",
               "residual_norm_", "start_residual_norm_", "unmeasured_metrics_", "n_residuals_")

    def fit(self, records: Iterable[RunRecord | Measured]) -> "CostFitter":
        """Fit the costs to ``records`` (measured :class:`RunRecord` rows, e.g. from
        :func:`validation.records.load_records`) by simulating each one's scenario; returns ``self``.

        Raises :class:`NoRecordsError` when no record can be fitted (before any simulation),
        :class:`FitError` when the fit fails (no convergence, a singular Jacobian, a simulation
        that failed, the budget spent without ``accept_max_nfev``), ValueError for a record that
        is not one (a zero ``duration_s``, a row given twice).  Nothing is swallowed: a fit that
        raised leaves no ``params_``."""
        from scipy.optimize import least_squares
        for a in self._FITTED:
            self.__dict__.pop(a, None)
        now = self._config()
        changed = [k for k in self._CONFIG if now[k] != self._checked[k]]
        if changed:
            # __init__ checks and resolves them (a new params has no start value, a NaN weight
            # failed inside scipy): an attribute set by hand skipped that
            raise ValueError(f"{', '.join(changed)} changed after construction: use set_params(...), "
                             f"which checks the new value(s)")
        recs = self._prepare(records)
        # a residual of weight 0 is always 0 and its Jacobian row too: it measures nothing, so it
        # counts neither here nor in the degrees of freedom of the stderr (m in s^2 below)
        n_res = sum(1 for m in recs for _, _, w in self._targets(m) if w != 0)
        if n_res < len(self.params):
            # bad input, known before any simulation (NoRecordsError: exit 2 from the CLIs)
            raise NoRecordsError(f"{n_res} residual(s) of weight > 0 for {len(self.params)} parameter(s): "
                                 f"underdetermined")
        scale = self._scale()
        lo, hi = self.bounds
        self._ubounds = (lo / scale, hi / scale)
        u0 = np.array([self.start[p] for p in self.params]) / scale
        with self._pooled(len(self.params) + 1):
            kw = {} if self.max_nfev is None else {"max_nfev": self.max_nfev}
            res = least_squares(self._fun, u0, jac=self._jac, bounds=self._ubounds, method="trf", x_scale=1.0,
                                ftol=self.ftol, xtol=self.xtol, gtol=self.gtol, verbose=self.verbose,
                                loss=self.loss, f_scale=self.f_scale, **kw)
        self.result_ = res
        self.records_ = recs
        self.residual_names_ = self._residual_names(recs)
        # a metric no record measures adds no residual: the header says so (it listed the metric
        # as fitted, e.g. a --metrics column the file does not have)
        seen = set()
        group = {"share": "drop_shares", "time": "time_split"}
        for name in self.residual_names_:       # "label:metric", "label:share:<category>" or "label:time:<fn>"
            parts = name.split(":")
            seen.add(group[parts[-2]] if len(parts) >= 3 and parts[-2] in group else parts[-1])
        self.unmeasured_metrics_ = [k for k in self.metrics if k not in seen]
        self.stopped_at_max_nfev_ = res.status == 0
        J = np.asarray(res.jac, float)
        col_norm = np.linalg.norm(J, axis=0)
        dead = [p for p, c in zip(self.params, col_norm) if not c > 1e-12]
        if not res.success and not (self.accept_max_nfev and res.status == 0):
            # a cost that changes nothing was named only after a converged fit; a budget spent
            # first gave "did not converge" alone, after the whole wait
            why = (f"; parameter(s) {', '.join(dead)} changed none of the fitted metrics at the last "
                   "Jacobian: leave them out" if dead and J.size else "")
            raise FitError(f"least_squares did not converge: status {res.status}: {res.message}{why}")
        if dead:
            raise FitError(f"singular Jacobian: parameter(s) {', '.join(dead)} change none of the fitted "
                           f"metrics ({', '.join(self.metrics)}) on these records")
        JTJ = J.T @ J
        if np.linalg.matrix_rank(J) < len(self.params) or np.linalg.cond(JTJ) > 1e12:
            raise FitError(f"singular Jacobian (cond(J^T J) = {np.linalg.cond(JTJ):.3g}): the parameters "
                           f"{', '.join(self.params)} are not separately identifiable from these records")
        m, n = n_res, len(self.params)
        self.n_residuals_ = n_res
        # with a robust loss scipy's res.jac is the Jacobian of the robust cost (its rho folded
        # in), so s^2 is that cost's too (2 res.cost; = sum(r^2) for the linear loss)
        ss = float(res.fun @ res.fun) if self.loss == "linear" else 2.0 * float(res.cost)
        s2 = ss / (m - n) if m > n else math.nan
        cov_u = np.linalg.inv(JTJ) * s2
        sd = np.sqrt(np.clip(np.diag(cov_u), 0, None)) * scale
        x = res.x * scale
        self.params_ = {p: float(v) for p, v in zip(self.params, x)}
        self.stderr_ = {p: float(v) for p, v in zip(self.params, sd)}
        self.cov_ = cov_u * np.outer(scale, scale)
        self.residual_norm_ = float(np.linalg.norm(res.fun))
        # least_squares moves a start on a bound strictly inside: its first evaluation is of
        # that point, not of u0 (the lookup of u0 missed and the header said "start nan")
        f0 = self._memo.get(tuple(np.round(u0, 12).tolist()), self._first_f)
        self.start_residual_norm_ = float(np.linalg.norm(f0)) if f0 is not None else math.nan
        return self

    # ------------------------------------------------------------------ use
    def _check_fitted(self):
        if not hasattr(self, "params_"):
            raise NotFittedError("CostFitter is not fitted yet; call .fit(records) first")

    def costs_(self) -> dict[str, float]:
        """Every cost of the fitted profile: base profile, fixed overrides, fitted values."""
        self._check_fitted()
        return load_costs(self.base_profile, {**self.overrides, **self.params_}).as_dict()

    def predict(self, scenario: Scenario | RunRecord | Measured) -> RunRecord:
        """Simulate ``scenario`` (or a record's scenario) with the fitted costs.

        A :class:`~simaccept.scenario.Scenario` is simulated as given, costs apart: a sweep's point
        keeps its coordinates and so its random stream (the same as ``simulate(point)`` draws),
        and the fit's ``sim_overrides`` are not applied to it.  A record is simulated as the fit
        simulated the records, ``sim_overrides`` included.  The record returned is the
        simulation's own: the fit compared :func:`simulated_as_measured` (a thesis μserver
        row's ``c_avg`` per loop; a count scaled to the record's window), as ``predict`` on the
        command line prints it; apply it to compare with a record as the fit did."""
        self._check_fitted()
        from simaccept.sim import simulate
        over = self._cost_overrides(self.params_)
        if isinstance(scenario, Scenario):
            if scenario.axes:
                raise ValueError(f"{scenario.axes[0][0]} is a sweep axis; predict one point (Scenario.points())")
            # the point's own key and coordinates, even where a fitted cost is one of them
            # (with_overrides would give that coordinate the fitted value's stream)
            sc = dataclasses.replace(scenario.with_overrides(over), point_key=scenario.point_key,
                                     coords=scenario.coords)
        elif isinstance(scenario, (RunRecord, Measured)):
            m = _as_measured(scenario)
            check_record(m, "predict" + (f" ({m.path}:{m.line})" if m.path else ""))
            sc = scenario_for(scenario, self.base_dir, self.sim_overrides + over)
        else:
            raise TypeError(f"predict: a Scenario, RunRecord or Measured, got the {type(scenario).__name__}")
        return simulate(sc)

    def header(self) -> str:
        """The fit in words, as the saved profile's comment: when and on what it ran, the fitted
        values with their errors, residual norms, what was skipped."""
        self._check_fitted()
        from simaccept.sim import git_rev
        lines = [
            f"Fitted by validation.CostFitter on {_dt.datetime.now(_dt.timezone.utc).isoformat(timespec='seconds')}"
            f" (git {git_rev() or '?'}).",
            f"Base profile: {self.base_profile}; fixed overrides: "
            f"{ {k: v for k, v in self.overrides.items() if k not in self.params} or 'none'}"
            + (f"; start values: { {k: v for k, v in self.overrides.items() if k in self.params} }"
               if any(k in self.params for k in self.overrides) else "") + ".",
            f"Fitted to {len(self.records_)} record(s): " + ", ".join(m.label for m in self.records_) + ".",
            "Record files: " + ", ".join(sorted({repo_path(m.path) for m in self.records_ if m.path})
                                         or ["(in memory)"]) + ".",
            f"Metrics: {', '.join(self.metrics)}"
            + (f" (no residual, measured by no record or 0 in every one: {', '.join(self.unmeasured_metrics_)})"
               if getattr(self, "unmeasured_metrics_", None) else "")
            + f"; weights: {self.weights or 'all 1'}; "
            f"simulation overrides: {self.sim_overrides or 'none'}"
            + (f"; loss: {self.loss} (f_scale {self.f_scale:g})" if self.loss != "linear" else "") + ".",
            f"Residual norm: {self.residual_norm_:.4g} (start {self.start_residual_norm_:.4g}) over "
            f"{len(self.result_.fun)} residuals; {self.result_.nfev} evaluations, {self.n_sims_} simulations"
            + (f" (+{self.n_cached_} from the cache)" if self.n_cached_ else "") + "; "
            f"status {self.result_.status}: {self.result_.message}"
            + (" (NOT converged: stopped at max_nfev, last iterate kept)" if self.stopped_at_max_nfev_ else ""),
            "Fitted (value +- 1 stderr from the Jacobian, start):",
        ]
        lo, hi = self.bounds
        lines += [f"  {p} = {self.params_[p]:.6g} +- {self.stderr_[p]:.3g}  (start {self.start[p]:.6g})"
                  + self._caveat(p, lo[i], hi[i]) for i, p in enumerate(self.params)]
        if self.skipped_:
            lines.append(f"Skipped {len(self.skipped_)} record(s): " +
                         "; ".join(f"{a} ({b})" for a, b in self.skipped_))
        if self.rejected_trials_:
            vals, why = self.rejected_trials_[0]
            lines.append(f"Rejected {len(self.rejected_trials_)} trial step(s) whose simulation measured nothing "
                         f"(scipy tried nearer), first at " + ", ".join(f"{k}={v:.4g}" for k, v in vals.items())
                         + f": {why}")
        return "\n".join(lines)

    def _caveat(self, p: str, lo: float, hi: float) -> str:
        """What a reader of one fitted line must know: a value on its bound (its stderr then
        says nothing of how far the fit wanted to go), or a stderr without spare residuals."""
        v, tol = self.params_[p], 1e-6 * max(1.0, abs(self.start[p]))
        # scipy's own word first: trf leaves an iterate strictly inside, farther from the bound
        # than any tolerance (0.00038 of bound 0 for a start of 11)
        active = int(self.result_.active_mask[self.params.index(p)])
        why = []
        if active < 0 or v - lo <= tol:
            why.append(f"at its lower bound {lo:g}")
        elif active > 0 or (math.isfinite(hi) and hi - v <= tol):
            why.append(f"at its upper bound {hi:g}")
        if math.isnan(self.stderr_[p]):
            k = getattr(self, "n_residuals_", len(self.result_.fun))
            why.append(f"no stderr: {k} residuals{' of weight > 0' if k != len(self.result_.fun) else ''} "
                       f"for {len(self.params)} parameters, none spare")
        return f"  [{'; '.join(why)}]" if why else ""

    def save(self, path: str | Path) -> Path:
        """Write the fitted profile (every cost) as TOML with a header recording the fit, atomically:
        after an error or Ctrl-C ``path`` is the old file or none, and no temporary file is left."""
        if not str(path).endswith(".toml"):
            raise ValueError(f"path: a cost profile is a .toml file, in lower case, as costs.profile names it; "
                             f"got {str(path)!r}")
        # a comment line may hold no control character but tab (a record file's or the base
        # profile's path with an ESC in it made a profile nothing could read back)
        header = "".join(c if c in "\t\n" or (ord(c) >= 0x20 and c != "\x7f") else f"\\x{ord(c):02x}"
                         for c in self.header())
        if not Path(path).parent.is_dir():
            # as `simaccept fit --out`: it made the folders, and a ./simaccept/costs/ it made hid the
            # package from every import run in that directory afterwards
            raise ValueError(f"path: {str(Path(path).parent)!r} is not a directory (save() makes none; create "
                             f"it first); got {str(path)!r}")
        return save_profile(path, self.costs_(), header=header)

    def summary(self) -> dict[str, Any]:
        """The fit as JSON-ready values (what ``thesis-fit`` and ``machine-fit`` keep)."""
        self._check_fitted()
        return {"params": self.params_, "stderr": self.stderr_, "start": self.start,
                "residual_norm": self.residual_norm_, "start_residual_norm": self.start_residual_norm_,
                "nfev": int(self.result_.nfev), "n_sims": self.n_sims_, "n_cached": self.n_cached_, "status": int(self.result_.status),
                "stopped_at_max_nfev": self.stopped_at_max_nfev_,
                **({"loss": self.loss, "f_scale": self.f_scale} if self.loss != "linear" else {}),
                "records": [m.label for m in self.records_], "skipped": self.skipped_,
                **({"rejected_trials": [{"values": v, "why": w} for v, w in self.rejected_trials_]}
                   if self.rejected_trials_ else {}),
                "residuals": dict(zip(self.residual_names_, map(float, self.result_.fun)))}

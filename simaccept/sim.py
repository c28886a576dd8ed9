"""simulate(): one scenario point -> one RunRecord.

Like desmod, one environment owns the resolved config, the seeded RNG and
the duration.  The record embeds the resolved config and is produced even
when the run fails (``status = "failed"`` and the error), so a sweep never
loses a point silently.
"""
from __future__ import annotations

import datetime as _dt
import gc
import json
import inspect
import socket
import subprocess
import time
import traceback
from pathlib import Path

import numpy as np
import simpy

from . import metrics
from .costs import scenario_costs
from .host import Host
from .record import RunRecord
from .scenario import SCHEMA, Scenario, ScenarioError
from .servers import make_server


SIMULATED_SERVERS = ("userver", "tux", "knot")


def check_callback(name: str, f, params: tuple[str, ...]) -> None:
    """Raise TypeError, naming ``name``, unless ``f`` can be called with the arguments ``params``
    names; return None if it can, or if its signature cannot be read (a C builtin's: the call
    tells).  Before the run, since until 2026-12-07 ``simulate(sc, probe=5)`` ran its set-up and
    came back a failed record, "TypeError: 'int' object is not callable", naming no argument."""
    call = f"{name}({', '.join(params)})"
    if not callable(f):
        got = repr(f)
        got = got if len(got) <= 80 else got[:77] + "..."         # a long list's repr would bury the call
        raise TypeError(f"{name}: must be a function called as {call}, got {got} ({type(f).__name__})")
    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return
    try:
        sig.bind(*params)
    except TypeError as e:
        raise TypeError(f"{name}: must be a function called as {call}, but "
                        f"{getattr(f, '__qualname__', type(f).__name__)}{sig} cannot be called so: {e}") from None


def check_modelled(sc: Scenario):
    """The point's accept policy (:func:`~simaccept.servers.policies.make_policy`), which the run
    then uses; ScenarioError if the point ``sc`` sets something its server's model does not read:
    a run would otherwise be the default's, "ok", under the setting's name.  Only the μserver
    model draws per-request work from ``server.service_dist``, holds ``workload.idle_conns``
    and has a getevents phase (``server.mux``: TUX and Knot-C have none); Knot-C's
    accept-phase has no CPU budget (a time-budget policy)."""
    from .servers.policies import INF, PolicyError, make_policy
    kind = sc["server"]["kind"]
    if kind not in SIMULATED_SERVERS:
        raise ScenarioError("server.kind", f"{kind!r} runs only in realsys; the simulator "
                            f"models {', '.join(SIMULATED_SERVERS)}")
    try:
        policy = make_policy(sc["server"])
    except PolicyError as e:
        raise ScenarioError("server.policy", str(e)) from None
    if kind == "knot" and policy.budget_s < INF:
        raise ScenarioError("server.policy", f"{sc['server']['policy']!r} bounds an accept-phase's CPU time, "
                            "which the knot model (Knot-C) does not: a thread accepts up to its quota")
    if kind != "userver":
        if sc["server"]["service_dist"] != "deterministic":
            raise ScenarioError("server.service_dist", f"only the userver model draws per-request work; "
                                f"{kind} charges costs.user_per_request exactly")
        if sc["workload"]["idle_conns"]:
            raise ScenarioError("workload.idle_conns", f"only the userver model holds idle connections "
                                f"(in its interest set); {kind} has none")
        mux, default_mux = sc["server"]["mux"], SCHEMA["server"]["mux"].default
        if mux != default_mux:
            raise ScenarioError("server.mux", f"only the userver model has a getevents phase (select, poll, "
                                f"epoll); {kind} has none, so {mux!r} would change nothing: leave it "
                                f"{default_mux!r}")
    return policy


class Meter:
    """Takes the counter snapshots at the end of warm-up and at the stop time."""

    def __init__(self, host, t_warm, t_stop):
        self.host = host
        self.t_warm = t_warm
        self.t_stop = t_stop
        self.server = None
        self.warm = None

    def tick(self, t):
        if self.warm is None and t >= self.t_warm:
            self.warm = metrics.snapshot(t, self.host, self.server)


_GIT_REV = None


def git_rev() -> str:
    """The short commit of the simaccept checkout this module runs from, or "" when it is not
    run from one (an installed package: site-packages inside a user's own repository gave that
    repository's commit)."""
    global _GIT_REV
    if _GIT_REV is None:
        _GIT_REV = checkout_rev(Path(__file__).resolve().parent.parent)
    return _GIT_REV


def checkout_rev(root: Path, describe: bool = False) -> str:
    """``git rev-parse --short HEAD`` (or ``git describe --always --dirty --abbrev=12``) of the repository
    whose top level is ``root``, or "" when ``root`` is not a repository's top level (a
    directory inside another repository is not its own) or git fails."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=5).stdout.strip()
    try:
        top = git("rev-parse", "--show-toplevel")
        if not top or Path(top).resolve() != root.resolve():
            return ""
        return (git("describe", "--always", "--dirty", "--abbrev=12") if describe
                else git("rev-parse", "--short", "HEAD"))
    except Exception:       # noqa: BLE001 - no git, a timeout: provenance unknown, not a failure
        return ""


def _identity(sc: Scenario) -> dict:
    srv, wl = sc["server"], sc["workload"]
    return dict(source="sim", scenario=sc.name, point=sc.point_label(), server=srv["kind"],
                mux=srv["mux"] if srv["kind"] == "userver" else "",
                accept_limit=str(srv["accept_limit"]), policy=srv["policy"], workload=wl["kind"],
                target_rate=float(wl["rate"]), seed=float(sc["scenario"]["seed"]),
                kernel_profile=sc["kernel"]["profile"], cost_profile=sc["costs"]["profile"],
                git_rev=git_rev(), host=socket.gethostname(),
                started_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                config=sc.to_json())


#: Runs with at least this many connection attempts are followed by a full garbage
#: collection (see the end of :func:`simulate`); smaller runs leave little garbage.
COLLECT_AFTER_CONNECTIONS = 50_000


def _no_call_in_window(host, t_warm: float, t_stop: float, t_call_end: float) -> metrics.MeasurementError:
    """The server's counters are read when a call ends (Meter.tick); one call that ran from
    before the end of warm-up to after the stop leaves nothing to difference.  Under receive
    livelock kernel packet work preempts the server for the whole window, so a longer
    duration does not help there; a window shorter than one call is the other cause."""
    kernel = sum(host.cpu.kernel_time.values()) / t_call_end if t_call_end > 0 else float("nan")
    return metrics.MeasurementError(
        f"no server call ended between the end of warm-up ({t_warm:g} s) and the stop ({t_stop:g} s): "
        f"the one in progress ended at {t_call_end:.6g} s, so the server's counters cannot be measured "
        f"in this window.  Kernel packet work took {kernel:.0%} of the CPU over the run: near 100 % the "
        f"server is livelocked at this rate (receive livelock: lower workload.rate); "
        f"otherwise scenario.duration is shorter than one of the server's calls")


def override_text(v) -> str:
    """``v`` as an override (``--set KEY=...``, ``overrides=["KEY=..."]``) takes it back: a TOML
    literal, a bare string.  Shared by the refusals here and in the CLI."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def _axes_reason(axes) -> str:
    """Why simulate() refuses a scenario with sweep axes: every axis, not only the first (fixing
    the one named led to the next refusal), with the overrides that fix them to copy."""
    fix = ", ".join(repr(f"{k}={override_text(v[0])}") for k, v in axes)
    others = ", ".join(k for k, _ in axes[1:])
    also = f", and so {'is' if len(axes) == 2 else 'are'} {others}" if others else ""
    return (f"is a sweep axis (a list){also}; simulate() runs one point: fix "
            f"{'it' if len(axes) == 1 else 'each'} with overrides (load_scenario(..., overrides=[{fix}])), "
            f"simulate one of sc.points(), or run them all with simaccept.run_sweep() (`simaccept sweep`)")


def simulate(sc: Scenario, *, raise_errors: bool = False, return_host: bool = False, probe=None):
    """Run one point.  Returns a RunRecord, or ``(record, host)`` if ``return_host``
    (:func:`simaccept.metrics.per_connection_rows` reads the host).  A failure inside the run is
    the record's ``status``/``error`` unless ``raise_errors``; a ScenarioError or
    NotImplementedError (what the model cannot run) always raises, as does a TypeError for an
    ``sc`` that is not a Scenario or a ``probe`` that cannot be called as below.

    ``probe(env, host, server)``, if given, is called once the run is set up, before its first
    event: it may start processes in ``env`` that sample the host, or wrap the host's methods,
    and must not change what they do (validation.drops and validation.phases trace runs this
    way, and their tests hold the probed record equal to the plain one)."""
    if not isinstance(sc, Scenario):
        raise TypeError(f"simulate() takes a Scenario (simaccept.load_scenario or scenario_from_dict), "
                        f"got {type(sc).__name__}")
    if probe is not None:
        check_callback("probe", probe, ("env", "host", "server"))
    # Checked again and normalised: sc["workload"]["rate"] = -5 after loading ran "ok" with 0
    # replies/s, an np.float32 failed as JSON, and a float inf accept-limit failed mid-run.
    sc = sc.resolved()
    if sc.axes:
        raise ScenarioError(sc.axes[0][0], _axes_reason(sc.axes))
    policy = check_modelled(sc)
    rec = RunRecord(**_identity(sc))
    wall0 = time.perf_counter()
    host = None
    try:
        rng = np.random.default_rng(sc.seed_sequence())
        costs = scenario_costs(sc)
        rec.costs = json.dumps(costs.as_dict(), sort_keys=True)
        warm = sc["scenario"]["warmup"]
        t_stop = warm + sc["scenario"]["duration"]
        env = simpy.Environment()
        host = Host(sc, rng, costs, t_stop)
        meter = Meter(host, warm, t_stop)
        server = make_server(env, host, sc, costs, meter, policy)
        meter.server = server
        if probe is not None:
            probe(env, host, server)
        env.run(until=server.proc)
        if meter.warm is None:
            meter.tick(warm)
        if meter.warm["t"] >= t_stop:
            raise _no_call_in_window(host, warm, t_stop, meter.warm["t"])
        end = metrics.snapshot(max(env.now, t_stop), host, server)
        for k, v in metrics.compute(sc, host, server, meter.warm, end).items():
            setattr(rec, k, v)
    except Exception as e:  # noqa: BLE001 - the record carries the failure
        if raise_errors or isinstance(e, (ScenarioError, NotImplementedError)):
            raise
        rec.status = "failed"
        rec.error = f"{type(e).__name__}: {e}"
        if not isinstance(e, metrics.MeasurementError):     # a bug: keep where it happened
            rec.error += "\n" + traceback.format_exc(limit=-5)     # the innermost frames: where it failed
    rec.wall_s = time.perf_counter() - wall0
    if return_host:
        return rec, host
    if host is not None and len(host.t0) >= COLLECT_AFTER_CONNECTIONS:
        # A run's object graph is cyclic (host, server and meter hold each other's bound
        # methods; SimPy's environment holds the server's process), so reference counting
        # does not free it, and the generational GC leaves it to a rare full collection.
        # A worker running many large points grew by ~200 MB per point until the OOM
        # killer took it (12 GB, during a thesis fit).  One full collection here frees it:
        # ~0.3 s after a 27,000 req/s, 20 s run, which took 3-6 s to simulate.
        host = server = meter = env = None  # noqa: F841 - drop this frame's references
        gc.collect()
    return rec

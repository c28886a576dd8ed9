"""``python -m validation phases``: what sets the length of the μserver's Accept-Inf accept-phase.

Past saturation the simulated μserver's Accept-Inf runs a longer loop than the thesis's
(report: fds/select of ``userver/one-packet/select/accept-inf@27000``), and how long follows
the clients' model (docs/background/connect-race.md).  This traces the loop one accept-phase
at a time, to say why.

**Domain model of a phase.**  An Accept-Inf accept-phase accepts until accept() says EAGAIN,
so it takes the ``q0`` connections queued when it starts plus every handshake that completes
while it runs.  While it runs the accept queue has room: a SYN is admitted (not refused
AcceptQFull) and its final ACK, one round trip later, completes into the queue.  Each
accept costs ``d0`` (accept + setsockopt) and is stretched by the kernel work that arrives
meanwhile, so with completions at rate ``r`` and the kernel's share of the CPU ``k`` during
the phase, ``d = d0 / (1 - k)`` per accept and

    n = q0 / (1 - r * d)

connections a phase.  Over the traced phases ``r * d`` is the share of the accepted that
completed during their phase, so with the phases' means this is an identity, not a model to
test; what the trace adds is which factor moves between runs: ``r``, what completes (it
follows the SYNs that arrive, first and retransmitted, now that the queue has room), or
``d``, how far the kernel's work stretches an accept (each completion is kernel work too, so
the two grow together: ``d = d0 / (1 - k0 - r * c)`` with ``c`` the kernel's cost of a
completion).  A full queue (``q0`` = backlog + 1) and ``r * d`` near 1/3 give n ~ 1.5
queues.  The trace measures ``q0``, ``n``, the phase's duration, and what the kernel did
inside phases and outside them, per kind of host event (first SYNs, retransmitted SYNs,
handshake ACKs, FINs, ...), with the completions each kind made.

**The probe.**  :func:`trace_phases` runs :func:`simaccept.sim.simulate` with a ``probe`` (as
``drops.trace_run`` does) that wraps the Host's methods *on that instance*: ``accept`` (a
phase starts at the first call, ends at the call that returns None), ``_process_next``
(each host event's kind and kernel cost; a completion is the accept queue growing by one
across the event) and ``close`` (below).  The wrappers read state and draw no random number, so the run is the
same run (tests/validation/test_phases.py checks the record against simulate()'s); and
every phase satisfies ``n = q0 + completions during it`` (counted in
``unbalanced_phases``, 0 when the bookkeeping holds).

The μserver and TUX, at accept-limit inf only: a finite limit ends a phase at the limit
without a call the probe sees, and Knot-C has no accept-phase of this kind.  TUX's phase also
ends at the first child its client has closed, which it releases uncounted (``close`` inside
a phase, wrapped too); such a phase leaves the rest of its queue, so for TUX the balance is
``accepted + released + left in the queue = q0 + completions``.

``python -m validation phases [--out DIR] [--jobs N] [--seeds N] [--from S] [--rows LABEL,...]
[--cache DIR]`` traces each row (default :data:`ROWS`) under three client settings (as
shipped, which for a one-packet row is the connect race; the race off; the 10 ms tick alone,
every connection that gets in answered; a setting that changes nothing in a row's scenario
is skipped), at ``--seeds`` seeds each (the row's own and the ones after it), over the thesis's window (120 s from idle queues), phases from
``--from`` seconds on (default 20: trace.md has the long loop from then), into
``phases.md`` and ``phases.json`` (default ``docs/validation``).  Runs are cached as they
finish (``out/validation-cache/phases``).

``--scenario FILE [--set SECTION.KEY=VALUE ...]`` traces a scenario of one's own instead of thesis
rows (a μserver or TUX at accept-limit inf; the file's own cost profile unless ``--profile`` is
given), over its own warm-up and duration, phases from ``--from`` (default: its warm-up) on, under
the same client settings and at ``--seeds`` seeds from the scenario's.  Like ``--rows`` other than
the default, it writes to ``out/validation-partial``, not over the committed ``docs/validation``.
"""
from __future__ import annotations

import collections
import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from simaccept.costs import load_costs
from simaccept.scenario import model_fingerprint
from simaccept.sweep import atomic_write

from .fitter import check_run_count, check_run_inputs, raise_if_failed, scenario_from_json, scenario_json
from .records import WORK, load_thesis, nan_to_null, record_seed, scenario_for

DEFAULT_CACHE = WORK / "out" / "validation-cache" / "phases"
ROW = "userver/one-packet/select/accept-inf@27000"
#: Rows traced by default: the μserver's long loop (fds/select) and TUX's batches (C_avg).
ROWS = (ROW, "tux/one-packet/-/accept-inf@23000")
RECORD_KEYS = ("replies_per_s", "accept_rate", "select_calls_per_s", "fds_per_select", "c_avg")
T_FROM = 20.0
PHASES_FORMAT = 3             # in a cached trace's name: a trace written by other code is not read back
#: Client settings traced: name -> scenario overrides (connect-race.md's three).
CLIENTS: dict[str, list[str]] = {
    "as shipped": [],           # one-packet rows: the connect race (client.syn_tick_ms = loop_ms = 10)
    "race off": ["client.syn_tick_ms=0.0", "client.loop_ms=0.0"],
    "tick alone": ["client.loop_ms=0.0"],
}
#: Host event kinds, by the source Host._process_next takes them from (0-2) or heap kind (10+).
EVENT_NAMES = {0: "SYN (first)", 1: "client deadline (first)", 2: "handshake ACK",
               10: "SYN (retransmitted)", 11: "duplicate ACK", 12: "request retransmitted",
               13: "SYN-ACK timer", 14: "FIN", 15: "request", 16: "writable", 17: "client deadline"}


class PhasesError(ValueError):
    pass


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, 100 * q)) if xs else math.nan


def check_traceable(sc) -> None:
    """Raise :class:`PhasesError`, naming the key, unless ``sc`` is a μserver or TUX at the plain
    accept-limit inf (a finite limit ends a phase without a call the probe sees)."""
    from simaccept.servers.policies import AcceptLimit, make_policy
    srv = sc["server"]
    if srv["kind"] not in ("userver", "tux"):
        raise PhasesError(f"server.kind: the phase probe traces the μserver and TUX, got {srv['kind']!r}")
    policy = make_policy(srv)
    if not (type(policy) is AcceptLimit and policy.accept_limit == math.inf):
        raise PhasesError(f"server.accept_limit: the phase probe needs the plain inf policy (each phase ending "
                          f"at the EAGAIN it sees), got {srv['accept_limit']!r} ({type(policy).__name__})")


def trace_phases(sc, t_from: float = T_FROM) -> dict[str, Any]:
    """Simulate ``sc`` (the μserver at accept-limit inf) with the phase probe.

    Returns {"record": the RunRecord as a dict, "phases": summary of the accept-phases that
    start at or after ``t_from`` (see :func:`_summary`), "events": {event name: kernel CPU
    share, events/s and completions/s, inside phases and outside them, from ``t_from``}}."""
    from .drops import probed_run

    check_traceable(sc)
    srv = sc["server"]
    t_stop = sc["scenario"]["warmup"] + sc["scenario"]["duration"]
    if not 0 <= t_from < t_stop:
        raise PhasesError(f"--from: must be in [0, {t_stop:g}) s (the run's end), got {t_from!r}")

    # (start, q0, accepted, end, completions, ended by a closed connection, left in the queue)
    phases: list[tuple[float, int, int, float, int, bool, int]] = []
    cur: list | None = None                                   # the phase in progress, as above
    k_cost = {True: collections.Counter(), False: collections.Counter()}
    k_count = {True: collections.Counter(), False: collections.Counter()}
    k_done = {True: collections.Counter(), False: collections.Counter()}
    # The events of the phase in progress, kept apart until it ends: they are "inside" only if
    # the phase is one of those summarized (started at or after t_from, and ended).  A phase
    # that straddles t_from, or is cut by the run's end, is time the summary counts as outside
    # the phases, so its events are counted there too.
    cur_k = (collections.Counter(), collections.Counter(), collections.Counter())

    def settle(inside: bool) -> None:
        for total, mine in zip((k_cost, k_count, k_done), cur_k):
            total[inside].update(mine)
            mine.clear()
    left = 0                          # connections that left the accept queue but by accept()

    def probe(env, host, server):
        acceptq = host.lsock.acceptq
        plain_accept, plain_next, plain_close = host.accept, host._process_next, host.close

        def end_phase(t, closed):
            nonlocal cur
            cur[3], cur[5], cur[6] = t, closed, len(acceptq)
            if cur[0] >= t_from:
                phases.append(tuple(cur))
            settle(cur[0] >= t_from)
            cur = None

        def accept(t):
            nonlocal cur
            if cur is None:
                cur = [t, len(acceptq), 0, t, 0, False, 0]
            cur[3] = t                      # the phase's last accept so far
            c = plain_accept(t)
            if c is None:
                end_phase(t, False)
            else:
                cur[2] += 1
            return c

        def close(t, c):
            # Inside an accept-phase only TUX closes: a child its client has closed is released
            # uncounted and ends the phase (simaccept.servers.tux).  The phase ends at its last
            # accept (its release, tux_accept + tux_close, left out), as before close() had a time.
            if cur is not None:
                cur[2] -= 1
                end_phase(cur[3], True)
            return plain_close(t, c)

        def process_next():
            nonlocal left
            src = host.nsrc
            kind = src if src < 3 else 10 + host.heap[0][2]
            t = host.nt
            before = len(acceptq)
            cost = plain_next()
            grew = len(acceptq) - before
            inside = cur is not None
            if grew > 0 and inside:
                cur[4] += grew
            elif grew < 0:
                left -= grew
            if t >= t_from:
                cost_c, count_c, done_c = cur_k if inside else (k_cost[False], k_count[False], k_done[False])
                cost_c[kind] += cost
                count_c[kind] += 1
                if grew > 0:
                    done_c[kind] += grew
            return cost

        host.accept, host._process_next, host.close = accept, process_next, close

    rec, host, end = probed_run(sc, probe)
    settle(False)                     # a phase the run's end cut: not summarized
    if not phases:
        raise PhasesError(f"no accept-phase started after {t_from:g} s: the server never found its "
                          f"listening socket readable (is the rate past saturation?)")
    span = min(end["t"], t_stop) - t_from
    costs = host.costs
    d0 = costs.tux_accept if srv["kind"] == "tux" else costs.accept + costs.setsockopt
    summary = _summary(phases, span, d0=d0, backlog=host.lsock.backlog,
                       k_in=sum(k_cost[True].values()))
    summary["left_queue_otherwise"] = left
    inside_s, outside_s = summary["in_phase_s"], span - summary["in_phase_s"]
    events = {}
    for kind in sorted(set(k_count[True]) | set(k_count[False])):
        events[EVENT_NAMES.get(kind, str(kind))] = {
            "kernel_share_in": k_cost[True][kind] / inside_s, "kernel_share_out": k_cost[False][kind] / outside_s,
            "per_s_in": k_count[True][kind] / inside_s, "per_s_out": k_count[False][kind] / outside_s,
            "completions_per_s_in": k_done[True][kind] / inside_s,
            "completions_per_s_out": k_done[False][kind] / outside_s,
        }
    return {"record": rec.to_dict(), "phases": summary, "events": events}


def _summary(phases, span: float, d0: float, backlog: int, k_in: float) -> dict[str, float]:
    """The phases' statistics.  ``d0``: an accept's own cost (s; the μserver's accept +
    setsockopt, TUX's tux_accept); ``k_in``: kernel CPU seconds inside phases; ``span``:
    seconds traced."""
    start = [p[0] for p in phases]
    q0 = [p[1] for p in phases]
    n = [p[2] for p in phases]
    dur = [p[3] - p[0] for p in phases]
    done = [p[4] for p in phases]
    inside = sum(dur)
    loops = [b - a for a, b in zip(start, start[1:])]
    r = sum(done) / inside if inside > 0 else math.nan
    taken = sum(n) + sum(1 for p in phases if p[5])       # TUX's released children took an accept too
    d = inside / taken if taken else math.nan
    q0_mean = sum(q0) / len(q0)
    return {
        "phases": len(phases), "phases_per_s": len(phases) / span, "traced_s": span,
        "accepted_mean": sum(n) / len(n),
        "accepted_p10": _pct(n, 0.1), "accepted_p50": _pct(n, 0.5), "accepted_p90": _pct(n, 0.9),
        "q0_mean": q0_mean, "start_full_share": sum(1 for q in q0 if q > backlog) / len(q0),
        "completions_mean": sum(done) / len(done),
        "in_phase_s": inside, "phase_ms": 1e3 * inside / len(phases),
        "loop_ms": 1e3 * sum(loops) / len(loops) if loops else math.nan,
        "per_accept_us": 1e6 * d, "nominal_accept_us": 1e6 * d0,
        "kernel_share_in_phase": k_in / inside if inside > 0 else math.nan,
        "completions_per_s_in_phase": r,
        # r d = completions / accepted over the phases: n = q0 / (1 - r d) is then an identity of the
        # means; what the trace adds is which factor moves, r (what completes) or d (what stretches)
        "r_times_d": r * d,
        "ended_by_closed_share": sum(1 for p in phases if p[5]) / len(phases),
        "left_in_queue_mean": sum(p[6] for p in phases) / len(phases),
        # accepted + the released one + those left queued = queued at the start + completions
        "unbalanced_phases": sum(1 for p in phases if p[2] + p[5] + p[6] != p[1] + p[4]),
    }


class _PhasesWorker:
    """:func:`trace_phases` of a scenario JSON in a worker process, ``t_from`` bound (a worker
    takes no lambda); a run that raises comes back as a failed record, as simulate's do."""

    def __init__(self, t_from: float):
        self.t_from = t_from

    def __call__(self, js: str) -> dict:
        import traceback
        try:
            return trace_phases(scenario_from_json(js, "<phases>"), self.t_from)
        except Exception as e:  # noqa: BLE001 - run() names the failed run
            return {"record": {"status": "failed",
                               "error": f"{type(e).__name__}: {e}\n{traceback.format_exc(limit=5)}"}}


def _row_targets(rows: Sequence[str], profile: str) -> list[tuple[str, Any, int, Any]]:
    """[(label, the row's scenario, its first seed, make(overrides, seed) -> scenario)] for thesis
    rows, each checked traceable."""
    by_label = {m.label: m for m in load_thesis()}
    unknown = [r for r in rows if r not in by_label]
    if unknown or not rows:
        raise PhasesError(f"--rows: no thesis row {unknown[0] if unknown else '(none given)'}; the probe takes "
                          f"μserver or TUX accept-inf rows, such as {', '.join(ROWS)}")
    out = []
    for label in rows:
        m = by_label[label]

        def make(over, seed, m=m):
            return scenario_for(m, overrides=[f"costs.profile={json.dumps(profile)}"] + list(over), seed=seed)
        sc = make([], record_seed(m.record))
        try:
            check_traceable(sc)
        except PhasesError as e:
            raise PhasesError(f"--rows: {label}: {e}") from None
        out.append((label, sc, record_seed(m.record), make))
    return out


def _scenario_targets(path: str, overrides: Sequence[str], profile: str | None):
    """([(label, scenario, first seed, make)] as :func:`_row_targets`, the window in words) for a
    scenario file or bundled name."""
    from simaccept.scenario import ScenarioError, load_scenario
    base = list(overrides) + ([f"costs.profile={json.dumps(profile)}"] if profile else [])

    def make(over, seed=None):
        return load_scenario(path, overrides=base + list(over) + ([] if seed is None else [f"scenario.seed={seed}"]))
    try:
        sc = make([])
    except (ScenarioError, OSError) as e:
        raise PhasesError(f"--scenario {path}: {e}") from None
    if sc.axes:
        raise PhasesError(f"--scenario {path}: {', '.join(a for a, _ in sc.axes)}: a sweep axis; give one "
                          f"value with --set")
    check_traceable(sc)
    label = sc.name + "".join(f" {o}" for o in overrides)
    s = sc["scenario"]
    return ([(label, sc, int(s["seed"]), make)],
            f"the scenario's: {s['warmup']:g} s warm-up + {s['duration']:g} s")


def run(out: str | Path = "docs/validation", jobs: int = 1, n_seeds: int = 2, profile: str | None = "thesis-2004",
        cache: str | Path = DEFAULT_CACHE, t_from: float | None = T_FROM, rows: Sequence[str] = ROWS,
        scenario: str | None = None, overrides: Sequence[str] = ()) -> dict:
    """Trace each of ``rows`` (thesis.csv labels), or the one ``scenario`` (a file or a bundled
    name, with ``overrides``), under every :data:`CLIENTS` setting at ``n_seeds`` seeds; write
    phases.json and phases.md into ``out``.  ``profile`` None: thesis-2004 for rows, the
    scenario's own for a scenario.  ``t_from`` None: :data:`T_FROM` for rows, the scenario's warm-up."""
    from .drops import _traced
    cache = check_run_inputs(profile or "thesis-2004", cache, PhasesError)
    if n_seeds < 1:
        raise PhasesError(f"--seeds: must be >= 1, got {n_seeds}")
    if overrides and scenario is None:
        raise PhasesError("--set: only with --scenario (a thesis row is simulated as the thesis ran it)")
    if scenario is not None:
        targets, window = _scenario_targets(scenario, overrides, profile)
        t_from = targets[0][1]["scenario"]["warmup"] if t_from is None else t_from
    else:
        targets = _row_targets(rows, profile or "thesis-2004")
        window = "the thesis's: 120 s from idle queues"
        t_from = T_FROM if t_from is None else t_from
    check_run_count(n_seeds * len(targets), "--seeds", PhasesError)     # x each client setting, below
    plan = []
    for label, base, seed0, make in targets:
        end = base["scenario"]["warmup"] + base["scenario"]["duration"]
        if not 0 <= t_from < end:
            raise PhasesError(f"--from: must be in [0, {end:g}) s ({label}'s window), got {t_from!r}")
        seen = set()
        for name, over in CLIENTS.items():
            jsons = [scenario_json(make(over, seed0 + k)) for k in range(n_seeds)]
            if jsons[0] in seen:        # a setting this row's clients already have (SPECweb99-like: no race)
                continue
            seen.update(jsons)
            plan += [(label, name, seed0 + k, over, js) for k, js in enumerate(jsons)]
    got = _traced([js for *_, js in plan], cache, jobs, worker=_PhasesWorker(t_from),
                  prefix=f"phases{PHASES_FORMAT}-from{t_from:g}")
    raise_if_failed(((f"{label} {name} seed {seed}", got[js]["record"]) for label, name, seed, _, js in plan),
                    PhasesError)
    runs = [{"row": label, "clients": name, "overrides": over, "seed": seed,
             "record": {k: got[js]["record"].get(k) for k in RECORD_KEYS},
             "phases": got[js]["phases"], "events": got[js]["events"]}
            for label, name, seed, over, js in plan]
    labels = [label for label, *_ in targets]
    if scenario is not None:        # a scenario of one's own has no thesis figures
        thesis = {label: None for label in labels}
    else:
        by_label = {m.label: m for m in load_thesis()}
        thesis = {label: {k: by_label[label].get(k) for k in RECORD_KEYS} for label in labels}
    used = targets[0][1]["costs"]["profile"]
    result = {
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "model_fingerprint": model_fingerprint(),
        "profile": used, "costs": dict(load_costs(used).us),
        "rows": labels, "window": window, "from_s": t_from,
        "thesis": thesis, "scenario": scenario, "overrides": list(overrides),
        "runs": runs,
    }
    out = Path(out)
    atomic_write(out / "phases.json", json.dumps(nan_to_null(result), indent=2, allow_nan=False) + "\n")
    atomic_write(out / "phases.md", markdown(result))
    return result


def _f(x, fmt="{:,.1f}") -> str:
    return "–" if x is None or (isinstance(x, float) and not math.isfinite(x)) else fmt.format(x)


def markdown(res: dict) -> str:
    L = ["---", "orphan: true", "---", "",
         "# Accept-Inf accept-phases, one phase at a time", "",
         f"Generated {res['generated_at']} by `python -m validation phases` (profile `{res['profile']}`, model "
         f"`{res['model_fingerprint']}`).  Method in `validation/phases.py`.  Each row's window is {res['window']}; "
         f"phases that start from {res['from_s']:g} s on.", "",
         "A phase takes the `q0` connections queued when it starts and every handshake that completes while "
         "it runs; with completions at `r` a second and `d` seconds per accept (the accept's own cost, "
         "stretched by the kernel's work), `n = q0 / (1 - r d)` when it runs until the queue is empty: over "
         "the phases `r d` is then the share of the accepted that completed during their phase, so the "
         "table's columns multiply out exactly; which of `q0`, `r` and `d` differs between settings is the "
         "point.  TUX's phase also ends at the first child its client has closed (*ended by a closed one*), "
         "leaving the rest queued.  SYNs in phase: first and retransmitted SYNs arriving a second during "
         "phases, whose handshakes (one round trip later) make most completions; kernel µs per completion: "
         "the handshake ACKs' kernel time over the completions they made.  A client setting that leaves a "
         "row's scenario as it is (the SPECweb99-like clients have no race to turn off) is not run again.  "
         "*as shipped*: the row's scenario, for a one-packet row the connect race "
         "(`client.syn_tick_ms` = `client.loop_ms` = 10).", ""]
    for row in res["rows"]:
        th = res["thesis"][row]
        if th is None:          # a scenario of one's own (--scenario): no thesis figures to show
            what = (f"Scenario `{res['scenario']}`" + (" with " + ", ".join(f"`{o}`" for o in res["overrides"])
                                                        if res.get("overrides") else "") + ".")
        else:
            known = [f"{_f(th['replies_per_s'], '{:,.0f}')} replies/s"] if th.get("replies_per_s") is not None else []
            known += [f"{_f(th[k], fmt)} {what}" for k, fmt, what in (
                ("c_avg", "{:,.2f}", "accepted per phase"), ("accept_rate", "{:,.0f}", "accepts/s"),
                ("select_calls_per_s", "{:,.0f}", "selects/s"), ("fds_per_select", "{:,.1f}", "fds per select"))
                if th.get(k) is not None and math.isfinite(th[k])]
            what = f"Thesis: {', '.join(known)}."
        L += [f"## {row}", "", what, "",
              "| clients | seed | replies/s | phases/s | accepted per phase (p10 / p50 / p90) | q0 | starts full "
              "| ended by a closed one | phase ms | loop ms | µs per accept (nominal) | kernel share in phase "
              "| SYNs/s in phase | completions/s in phase (r) | kernel µs per completion | r·d |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        runs = [r for r in res["runs"] if r["row"] == row]
        for r in runs:
            p, ev = r["phases"], r["events"]
            syns = sum(ev.get(k, {}).get("per_s_in", 0.0) for k in ("SYN (first)", "SYN (retransmitted)"))
            ack = ev.get("handshake ACK", {})
            per_done = (1e6 * ack["kernel_share_in"] / ack["completions_per_s_in"]
                        if ack.get("completions_per_s_in") else math.nan)
            L.append(f"| {r['clients']} | {r['seed']} | {_f(r['record']['replies_per_s'], '{:,.0f}')} "
                     f"| {_f(p['phases_per_s'])} | {_f(p['accepted_mean'])} ({_f(p['accepted_p10'], '{:.0f}')} / "
                     f"{_f(p['accepted_p50'], '{:.0f}')} / {_f(p['accepted_p90'], '{:.0f}')}) | {_f(p['q0_mean'])} "
                     f"| {_f(100 * p['start_full_share'], '{:.0f} %')} "
                     f"| {_f(100 * p['ended_by_closed_share'], '{:.0f} %')} | {_f(p['phase_ms'], '{:.2f}')} "
                     f"| {_f(p['loop_ms'], '{:.2f}')} | {_f(p['per_accept_us'])} ({_f(p['nominal_accept_us'])}) "
                     f"| {_f(100 * p['kernel_share_in_phase'], '{:.0f} %')} | {_f(syns, '{:,.0f}')} "
                     f"| {_f(p['completions_per_s_in_phase'], '{:,.0f}')} | {_f(per_done)} "
                     f"| {_f(p['r_times_d'], '{:.3f}')} |")
        bad = [r for r in runs if r["phases"]["unbalanced_phases"] or r["phases"]["left_queue_otherwise"]]
        L += ["", "Every phase balanced: accepted, released and left in the queue make up `q0` and the "
              "completions during it." if not bad else
              f"**Bookkeeping:** {len(bad)} run(s) with unbalanced phases or connections that left the accept "
              f"queue otherwise: " + ", ".join(
                  f"{r['clients']} seed {r['seed']} ({r['phases']['unbalanced_phases']} phases, "
                  f"{r['phases']['left_queue_otherwise']} left)" for r in bad), "",
              "The kernel's work inside accept-phases and outside them, per kind of host event, at each "
              "setting's first seed: its share of the CPU, events a second and the completions "
              "(connections into the accept queue) it made a second.", ""]
        seen = set()
        for r in runs:
            if r["clients"] in seen:
                continue
            seen.add(r["clients"])
            L += [f"**{r['clients']}** (seed {r['seed']}; overrides: "
                  f"{', '.join('`' + o + '`' for o in r['overrides']) or 'none'})", "",
                  "| event | CPU share in | CPU share out | /s in | /s out | completions/s in | completions/s out |",
                  "|---|---|---|---|---|---|---|"]
            for name, e in sorted(r["events"].items(), key=lambda kv: -kv[1]["kernel_share_in"]):
                L.append(f"| {name} | {_f(100 * e['kernel_share_in'], '{:.1f} %')} "
                         f"| {_f(100 * e['kernel_share_out'], '{:.1f} %')} | {_f(e['per_s_in'], '{:,.0f}')} "
                         f"| {_f(e['per_s_out'], '{:,.0f}')} | {_f(e['completions_per_s_in'], '{:,.0f}')} "
                         f"| {_f(e['completions_per_s_out'], '{:,.0f}')} |")
            L.append("")
    return "\n".join(L) + "\n"

"""Held-out realsys runs predicted with the machine profile: errors, policy order with noise, plots.

Used by ``python -m validation report --real RESULTS.csv ... --real-profile realsys-linux6``.

* Every realsys record (source = real, status ok, with a target rate) is simulated with
  the profile, with its own scenario (the record's ``config``), its seed, and its
  ``realsys.spin_us`` charged as user work (:func:`simaccept.costs.scenario_costs`).
* A record is *held out* unless it is one of the fit's records (select at accept-limit
  1 or inf, :mod:`validation.machine`); held-out records fall in groups (AL10, poll,
  epoll, knot; :func:`validation.machine.heldout_group`).  The policy order is checked per
  mechanism (select, poll, epoll; knot), with the fit's select records taking part so that
  select's order includes the held-out accept-10 (:func:`validation.machine.order_group`).
* **Throughput error** of a record: (simulated - measured) / measured replies/s.  The
  headline ``heldout_median_abs_throughput_error`` is the median ``|error|`` over held-out
  records **past saturation** (target rate >= the group's saturation rate); below
  saturation every server answers what is offered and the error is trivially ~0, so
  counting those rows would flatter the figure.  The all-rates median is reported beside it.
* Runs during which another process took the server's CPU (:func:`validation.machine.contaminated`)
  are excluded and listed.
* **Saturation** of an order group: the lowest target rate at which the mean measured
  replies/s of some policy is below 95 % of the target; a held-out record is past
  saturation when its rate is at or above its order group's saturation rate.
* **Policy order, with measurement noise**: at each rate past saturation where every
  policy of the group has >= 2 replicate runs, for each pair of policies (a, b): the
  measured difference of the means d = mean_a - mean_b and its standard error
  se = sqrt(sd_a^2/n_a + sd_b^2/n_b).  If ``|d| > 2 se`` the pair is *ordered* and the
  simulated means (one simulation per replicate record, each with the record's seed)
  must have the same sign: *preserved* or *inverted*; else the pair is a *tie* (within
  noise) and is not checked.  ``policy_order_preserved`` is true when no ordered pair is
  inverted (null if no pair could be checked).
"""
from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from simaccept.record import RunRecord

from .fitter import simulate_records
from .records import load_records

ORDER_DEFINITION = (
    "At each target rate past saturation (saturation: the lowest rate where some policy's mean measured "
    "replies/s < 95 % of the target) where every policy has >= 2 replicate runs, each pair of policies (a, b) "
    "is 'ordered' if the measured difference of mean replies/s exceeds 2 x its standard error "
    "sqrt(sd_a^2/n_a + sd_b^2/n_b), else a 'tie' (within noise, not checked).  An ordered pair is 'preserved' if "
    "the simulated means (one simulation per replicate, same seed and scenario) differ with the same sign, else "
    "'inverted'.  Preserved overall = no ordered pair inverted.")


#: The server loop's figures compared in :func:`loop_table`: RunRecord field -> column heading.
LOOP_METRICS = {"c_avg": "C_avg (accepts per accept-phase)", "select_calls_per_s": "getevents calls/s",
                "fds_per_select": "fds per getevents call"}


def _lim(al) -> str:
    s = str(al).strip().lower()
    return "inf" if s in ("inf", "infinity") else str(int(float(s)))


def _policy(r: RunRecord) -> str:
    return f"accept-{_lim(r.accept_limit or 'inf')}"


def _mean_sd(xs):
    n = len(xs)
    m = sum(xs) / n
    sd = statistics.stdev(xs) if n > 1 else math.nan
    return m, sd, n


def order_check(rows: list[dict]) -> dict[str, Any]:
    """Policy order with noise for one group (rows: group, policy, rate, measured, predicted)."""
    cell = defaultdict(lambda: {"m": [], "s": []})
    for d in rows:
        c = cell[(d["rate"], d["policy"])]
        c["m"].append(d["measured"])
        c["s"].append(d["predicted"])
    rates = sorted({r for r, _ in cell})
    pols = sorted({p for _, p in cell}, key=lambda p: (p == "accept-inf", int(p.split("-")[1]) if p != "accept-inf" else 0))
    sat = next((r for r in rates if any(sum(cell[(r, p)]["m"]) / len(cell[(r, p)]["m"]) < 0.95 * r
                                        for p in pols if (r, p) in cell)), None)
    per_rate, pairs, unchecked = [], [], []
    for r in rates:
        if sat is None or r < sat:
            continue
        if not all((r, p) in cell and len(cell[(r, p)]["m"]) >= 2 for p in pols):
            unchecked.append({"rate": r, "why": "fewer than 2 replicate runs for some policy",
                              "runs": {p: len(cell[(r, p)]["m"]) if (r, p) in cell else 0 for p in pols}})
            continue
        stats = {}
        for p in pols:
            m, sd, n = _mean_sd(cell[(r, p)]["m"])
            sm = sum(cell[(r, p)]["s"]) / len(cell[(r, p)]["s"])
            ssd = statistics.stdev(cell[(r, p)]["s"]) if n > 1 else math.nan
            stats[p] = {"measured_mean": m, "measured_sd": sd, "n": n, "sim_mean": sm, "sim_sd": ssd}
        per_rate.append({"rate": r, **stats})
        for i, a in enumerate(pols):
            for b in pols[i + 1:]:
                A, B = stats[a], stats[b]
                d = A["measured_mean"] - B["measured_mean"]
                se = math.sqrt(A["measured_sd"] ** 2 / A["n"] + B["measured_sd"] ** 2 / B["n"])
                ds = A["sim_mean"] - B["sim_mean"]
                sse = math.sqrt(A["sim_sd"] ** 2 / A["n"] + B["sim_sd"] ** 2 / B["n"])
                if abs(d) > 2 * se:
                    status = "preserved" if ds * d > 0 else "inverted"
                else:
                    status = "tie"
                pairs.append({"rate": r, "a": a, "b": b, "measured_diff": d, "measured_se": se,
                              "sim_diff": ds, "sim_se": sse, "status": status})
    ordered = [p for p in pairs if p["status"] != "tie"]
    return {"saturation_rate": sat, "policies": pols,
            "preserved": (all(p["status"] == "preserved" for p in ordered) if ordered else None),
            "pairs_ordered": len(ordered), "pairs_preserved": sum(p["status"] == "preserved" for p in ordered),
            "pairs_inverted": sum(p["status"] == "inverted" for p in ordered),
            # "preserved" is the sign alone: a simulated gap of 15 % of the measured one, within the
            # simulation's own noise, counted the same as one that matches it
            "pairs_preserved_clear": sum(p["status"] == "preserved" and abs(p["sim_diff"]) > 2 * p["sim_se"]
                                         for p in ordered),
            "pairs_tied": sum(p["status"] == "tie" for p in pairs),
            "pairs": pairs, "per_rate": per_rate, "unchecked_rates": unchecked}


def _counts(m) -> dict[str, float]:
    """The point file's other reply counts for a record (NaN where the point predates them)."""
    from . import machine
    j = machine.point_json(m) or {}
    g, sv = j.get("generator") or {}, j.get("server_stats") or {}
    win = g.get("window_s") or math.nan
    nan = math.nan
    return {"launched_in_window": g["replies_in_window"] / win if "replies_in_window" in g else nan,
            "recv_in_window": g["replies_recv_in_window"] / win if "replies_recv_in_window" in g else nan,
            "server_replies": sv["replies"] / sv["wall_s"] if sv.get("wall_s") else nan,
            "total_ms_mean": (g.get("total_ms") or {}).get("mean", nan),
            "net_rx_per_reply": _net_rx_per_reply(j),
            "close_us_raw": _per_call_us(sv, "close")}


def _net_rx_per_reply(j) -> float:
    """NET_RX softirq runs on the server's CPU per reply: how well the kernel batches packets."""
    sirq, sv = j.get("softirq") or {}, j.get("server_stats") or {}
    runs, cpu = sirq.get("net_rx_softirqs_per_cpu"), sirq.get("cpu_server")
    if not runs or cpu is None or not sv.get("replies"):
        return math.nan
    return runs[cpu] / sv["replies"]


def _per_call_us(sv, name) -> float:
    c = ((sv or {}).get("syscalls") or {}).get(name) or {}
    return 1e6 * c["s"] / c["calls"] if c.get("calls") else math.nan


def realsys_heldout(paths: Iterable[str], profile: str | None, jobs: int = 2, sim_overrides=(),
                    cache: str | Path | None = None) -> dict[str, Any]:
    """The held-out comparison (module docstring); with ``cache``, simulations are kept there by
    scenario hash (:func:`validation.fitter.simulate_cached`), so a rerun simulates only what changed."""
    from . import machine
    paths = [str(p) for p in paths]
    if not paths or not profile:
        return {"median_abs_throughput_error": None,
                "note": "null until realsys held-out runs are predicted with a cost profile fitted to this machine "
                        "(--real RESULTS.csv ... --real-profile realsys-linux6)"}
    recs, excluded = [], []
    for p in paths:
        for m in load_records(p):
            r = m.record
            if r.source == "real" and r.status == "ok" and not math.isnan(r.target_rate):
                g = machine.heldout_group(m)
                og = machine.order_group(m)
                if not g and not og:
                    continue
                bad, why = machine.contaminated(m)
                if bad:
                    excluded.append({"group": g or og, "row": m.label, "seed": int(r.seed), "file": Path(m.path).parent.name,
                                     "measured": r.replies_per_s, "why": why})
                    continue
                recs.append((g, og, m))
    sims = simulate_records([m for _, _, m in recs], profile, jobs, sim_overrides, cache=cache)
    rows = []
    for (g, og, m), s in zip(recs, sims):
        r = m.record
        meas = r.replies_per_s
        pred = s.replies_per_s if s.status == "ok" else math.nan
        err = (pred - meas) / meas if meas > 0 and not math.isnan(pred) else math.nan
        rows.append({"group": g or "", "role": "held-out" if g else "fit", "order_group": og or "", "row": m.label, "seed": int(r.seed) if not math.isnan(r.seed) else None,
                     "policy": _policy(r), "rate": r.target_rate, "measured": meas, "predicted": pred,
                     "error": err, "file": str(Path(m.path).parent.name), "dir": str(Path(m.path).resolve().parent),
                     "measured_accept": r.accept_rate, "predicted_accept": s.accept_rate if s.status == "ok" else math.nan,
                     "measured_p99_ms": r.resp_ms_p99, "predicted_p99_ms": s.resp_ms_p99 if s.status == "ok" else math.nan,
                     "measured_resp_ms": r.resp_ms_mean, "predicted_resp_ms": s.resp_ms_mean if s.status == "ok" else math.nan,
                     # ACK-time accept-queue overflows per second (the kernel's count over the measured period)
                     "measured_lo_per_s": _per_s(r.drops_listen_overflow, r.duration_s),
                     "predicted_lo_per_s": _per_s(s.drops_listen_overflow, s.duration_s) if s.status == "ok" else math.nan,
                     "measured_kernel_share": r.cpu_share_kernel_net,
                     "predicted_kernel_share": s.cpu_share_kernel_net if s.status == "ok" else math.nan,
                     "predicted_runs_per_reply": (s.softirq_runs_per_s / s.replies_per_s
                                                  if s.status == "ok" and s.replies_per_s > 0 else math.nan),
                     # the server's loop: connections per accept-phase, getevents calls a second, fds a call
                     **{f"{w}_{k}": v for k in LOOP_METRICS
                        for w, v in (("measured", getattr(r, k)),
                                     ("predicted", getattr(s, k) if s.status == "ok" else math.nan))},
                     **_counts(m),
                     "sim_status": s.status, "sim_error": (s.error or "").splitlines()[0] if s.error else ""})
    orders = {og: order_check([d for d in rows if d["order_group"] == og])
              for og in sorted({d["order_group"] for d in rows if d["order_group"]})}
    for d in rows:
        sat = orders[d["order_group"]]["saturation_rate"] if d["order_group"] else None
        d["past_saturation"] = sat is not None and d["rate"] >= sat
    groups = {}
    for g in sorted({d["group"] for d in rows if d["group"]}):
        grows = [d for d in rows if d["group"] == g]
        sat = min((d["rate"] for d in grows if d["past_saturation"]), default=None)
        past = [d for d in grows if d["past_saturation"] and not math.isnan(d["error"])]
        allr = [d for d in grows if not math.isnan(d["error"])]
        groups[g] = {"saturation_rate": sat,
                     "median_abs_error_past_saturation": statistics.median(abs(d["error"]) for d in past) if past else None,
                     "n_past_saturation": len(past),
                     "max_abs_error_past_saturation": max((abs(d["error"]) for d in past), default=None),
                     "median_abs_error_all_rates": statistics.median(abs(d["error"]) for d in allr) if allr else None,
                     "n_all_rates": len(allr)}
    held = [d for d in rows if d["role"] == "held-out"]
    past_all = [abs(d["error"]) for d in held if d["past_saturation"] and not math.isnan(d["error"])]
    all_all = [abs(d["error"]) for d in held if not math.isnan(d["error"])]
    checks = [v["preserved"] for v in orders.values() if v["preserved"] is not None]
    return {"median_abs_throughput_error": statistics.median(past_all) if past_all else None,
            "n": len(past_all),
            "median_abs_throughput_error_all_rates": statistics.median(all_all) if all_all else None,
            "n_all_rates": len(all_all), "profile": profile, "files": paths, "rows": rows, "groups": groups,
            "excluded": excluded, "orders": orders, "sim_overrides": list(sim_overrides),
            "policy_order_preserved": all(checks) if checks else None,
            "order_definition": ORDER_DEFINITION}


def plot(out: Path, info: dict[str, Any]) -> list[str]:
    """One PNG per held-out group: measured mean ± sd (points) and simulated means (lines) per policy."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .report import _atomic_savefig
    cols = {"accept-1": "tab:blue", "accept-10": "tab:orange", "accept-inf": "tab:green"}
    names = []
    for g, gi in info.get("orders", {}).items():
        rows = [d for d in info["rows"] if d["order_group"] == g]
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for pol in sorted({d["policy"] for d in rows}):
            by = defaultdict(lambda: ([], []))
            for d in rows:
                if d["policy"] == pol:
                    by[d["rate"]][0].append(d["measured"])
                    by[d["rate"]][1].append(d["predicted"])
            rates = sorted(by)
            mm = [sum(by[r][0]) / len(by[r][0]) for r in rates]
            sd = [statistics.stdev(by[r][0]) if len(by[r][0]) > 1 else 0.0 for r in rates]
            sm = [sum(by[r][1]) / len(by[r][1]) for r in rates]
            c = cols.get(pol)
            role = "fit" if any(d["role"] == "fit" for d in rows if d["policy"] == pol) else "held-out"
            ax.errorbar(rates, mm, yerr=sd, fmt="o" if role == "held-out" else "s", color=c, mfc="none", mew=2,
                        capsize=3, label=f"realsys {pol} ({role})")
            ax.plot(rates, sm, "-", color=c, lw=1.5, label=f"sim {pol}")
        if gi["saturation_rate"]:
            ax.axvline(gi["saturation_rate"], color="grey", ls=":", lw=1)
        ax.set_xlabel("target requests/s")
        ax.set_ylabel("replies/s")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=2)
        ax.set_title(f"realsys {g} (mean ± sd of replicates) vs sim ({info['profile']}); "
                     f"order preserved: {gi['preserved']}", fontsize=9)
        fig.tight_layout()
        name = f"realsys-{g}.png"
        _atomic_savefig(fig, out / name)
        plt.close(fig)
        names.append(name)
    return names


def markdown(info: dict[str, Any], fit: dict[str, Any] | None, pngs: list[str],
             fit_json_name: str = "realsys-fit.json") -> list[str]:
    L = ["## Realsys (this machine): held-out runs with the machine profile\n"]
    if info.get("median_abs_throughput_error") is None:
        L.append(f"Not available: {info.get('note', '')}.\n")
        return L
    L.append(f"Profile `{info['profile']}` (fitted to userver select at accept-limit 1 and inf only, past "
             f"saturation: `python -m validation machine-fit`; details in `{fit_json_name}`).  Realsys files: "
             + ", ".join(f"`{Path(p).parent.name}`" for p in info["files"]) + ".\n")
    L.append(f"**Median |throughput error| over {info['n']} held-out runs past saturation: "
             f"{100 * info['median_abs_throughput_error']:.1f} %** (target ≤ 10 %); over all "
             f"{info['n_all_rates']} held-out runs including the unsaturated rates: "
             f"{100 * info['median_abs_throughput_error_all_rates']:.1f} %.\n")
    f = lambda v: "–" if v is None else f"{100 * v:.1f} %"  # noqa: E731
    L.append("| held-out group | from rate (req/s) | runs past sat. | median abs err past sat. | max abs err past sat. | "
             "median abs err all rates (runs) |\n|---|---|---|---|---|---|")
    for g, gi in info["groups"].items():
        L.append(f"| {g} | {gi['saturation_rate'] or 0:g} | {gi['n_past_saturation']} | "
                 f"{f(gi['median_abs_error_past_saturation'])} | {f(gi['max_abs_error_past_saturation'])} | "
                 f"{f(gi['median_abs_error_all_rates'])} ({gi['n_all_rates']}) |")
    L.append("")
    L.append(f"**Policy order preserved (realsys): {info['policy_order_preserved']}.**  Definition: "
             f"{info['order_definition']}\n")
    clear = sum(o.get("pairs_preserved_clear", 0) for o in info["orders"].values())
    kept = sum(o["pairs_preserved"] for o in info["orders"].values())
    L.append(f"*Preserved* is the sign of the simulated difference alone: {clear} of the {kept} preserved pairs "
             "have a simulated difference beyond 2 of its own standard errors (the last column).  The select "
             "group's pairs include its accept-1 and accept-inf runs, which the profile was fitted to.\n")
    L.append("| order group | saturation | pairs ordered | preserved | inverted | ties (within noise) | preserved, "
             "simulated beyond 2 se |\n|---|---|---|---|---|---|---|")
    for g, o in info["orders"].items():
        L.append(f"| {g} | {o['saturation_rate']} | {o['pairs_ordered']} | {o['pairs_preserved']} | "
                 f"{o['pairs_inverted']} | {o['pairs_tied']} | {o.get('pairs_preserved_clear', '–')} |")
    L.append("")
    L.append("| order group | rate | pair a − b | measured diff ± se (replies/s) | simulated diff ± se | status |\n"
             "|---|---|---|---|---|---|")
    for g, o in info["orders"].items():
        for p in o["pairs"]:
            st = p["status"] if p["status"] != "inverted" else "**inverted**"
            L.append(f"| {g} | {p['rate']:g} | {p['a']} − {p['b']} | {p['measured_diff']:+,.0f} ± "
                     f"{p['measured_se']:,.0f} | {p['sim_diff']:+,.0f} ± {p['sim_se']:,.0f} | {st} |")
        for u in o["unchecked_rates"]:
            L.append(f"| {g} | {u['rate']:g} | – | – | – | not checked: {u['why']} {u['runs']} |")
    L.append("")
    L += loop_table(info)
    L += mechanism_table(info)
    for name in pngs:
        L.append(f"![{name}]({name})\n")
    if info.get("excluded"):
        L.append(f"**Excluded runs** ({len(info['excluded'])}): another process ran on the server's CPU while it was "
                 f"saturated (foreign user time > {100 * 0.05:.0f} % of CPU 0 with no idle time; the machine is shared).\n")
        L.append("| group | run | seed | measured replies/s | why |\n|---|---|---|---|---|")
        for d in info["excluded"]:
            L.append(f"| {d['group']} | {d['row']} | {d['seed']} | {d['measured']:,.0f} | {d['why']} |")
        L.append("")
    L.append("<details><summary>Every held-out run</summary>\n")
    L.append("| group | role | run | seed | measured | simulated | error | past sat. |\n|---|---|---|---|---|---|---|---|")
    for d in sorted(info["rows"], key=lambda d: (d["order_group"], d["group"], d["policy"], d["rate"], d["seed"] or 0)):
        e = "–" if math.isnan(d["error"]) else f"{100 * d['error']:+.1f} %"
        L.append(f"| {d['group'] or d['order_group']} | {d['role']} | {d['row']} | {d['seed']} | {d['measured']:,.0f} | "
                 f"{d['predicted']:,.0f} | {e} | {'yes' if d.get('past_saturation') else 'no'} |")
    L.append("\n</details>\n")
    if fit:
        L += fit_markdown(fit)
    return L


def with_heldout_syscalls(fit: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """The machine fit's record plus the measured per-call costs of each held-out group (its runs past saturation)."""
    from . import machine
    cols = ["select", "poll", "epoll_wait", "epoll_ctl", "accept", "read", "writev", "close"]
    held = {}
    for g, gi in info.get("groups", {}).items():
        sat = gi["saturation_rate"] or 0.0
        dirs = sorted({d.get("dir") or d["file"] for d in info["rows"] if d["group"] == g})
        kw = {"limits": ("10",)} if g == "AL10" else {}
        m = machine.measured_syscalls(dirs, min_rate=sat, **kw)
        held[g] = {**m["per_call_us"], "dilation": m["dilation"]}
    return {**fit, "heldout_syscalls": held, "heldout_syscalls_cols": cols + ["dilation"]}


def check(results: str | Path, profile: str, out: str | Path, jobs: int = 2, fit_json: str | Path | None = None,
          log=print, cache: str | Path | None = None) -> dict[str, Any]:
    """``python -m validation machine-check``: the held-out realsys runs under ``results`` (the
    layout ``validation/measure_realsys.sh`` writes) predicted with ``profile``, written to
    ``out``: ``realsys.md``, one PNG per order group, and ``machine-check.json`` (the headline
    figures).  The report's realsys section, for runs measured on another machine."""
    import datetime
    import json

    from simaccept.scenario import model_fingerprint
    from simaccept.sweep import atomic_write

    from . import machine
    from .records import nan_to_null
    paths = machine.heldout_files(results)
    if not paths:
        raise FileNotFoundError(f"{results}: none of the held-out results folders ("
                                + ", ".join(sorted({d for v in machine.HELDOUT.values() for d in v}))
                                + ") has a results.csv (measure them with validation/measure_realsys.sh)")
    fit_json = Path(fit_json) if fit_json else machine.default_fit_json(results, profile)
    # a --fit-json given is read whatever it is (machine_check_main has checked it); the default only if there
    fit_rec = machine.read_fit_record_of(fit_json, profile) if fit_json.exists() else None
    # What the fit simulated with (its measured link delay), the held-out runs are simulated with.
    over = machine.fit_sim_overrides(fit_rec)
    log(f"machine-check: simulating the runs of {len(paths)} results files with {profile}"
        + (f" and {' '.join(over)} (the fit's)" if over else ""))
    info = realsys_heldout(paths, profile, jobs, over, cache=cache)
    if info.get("median_abs_throughput_error") is None:
        held = [d for d in info.get("rows", []) if d.get("role") == "held-out"]
        # a folder with a header-only results.csv said "(...)" with nothing in the brackets
        note = info.get("note") or (f"{len(held)} held-out runs read from {len(paths)} results files, none past "
                                    "its group's saturation rate")
        raise ValueError(f"{results}: no held-out run past saturation to compare ({note})")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    pngs = plot(out, info)
    fit = with_heldout_syscalls(fit_rec, info) if fit_rec is not None else None
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    summary = {"generated_at": now, "profile": profile, "results": str(results), "model_fingerprint": model_fingerprint(),
               "machine": machine.machine_of([m for p in paths for m in load_records(p)]),
               "heldout_median_abs_throughput_error": info["median_abs_throughput_error"], "heldout_runs": info["n"],
               "heldout_median_abs_throughput_error_all_rates": info["median_abs_throughput_error_all_rates"],
               "heldout_by_group": {g: gi["median_abs_error_past_saturation"] for g, gi in info["groups"].items()},
               "policy_order_preserved": info["policy_order_preserved"],
               "heldout_loop_median_abs_error": loop_errors(info),
               "policy_order": {g: {k: o[k] for k in ("saturation_rate", "preserved", "pairs_ordered",
                                                       "pairs_preserved", "pairs_inverted", "pairs_tied",
                                                       "pairs_preserved_clear")}
                                for g, o in info["orders"].items()},
               "excluded_runs": info["excluded"], "fit_json": str(fit_json) if fit else None,
               "sim_overrides": over}
    head = (f"# Held-out realsys runs vs the simulator: {results}\n\nGenerated by `python -m validation machine-check "
            f"--results {results} --profile {profile}` on {now} (simulator model fingerprint "
            f"`{summary['model_fingerprint']}`).  Runs measured on: {summary['machine']}.  Headline figures in "
            "`machine-check.json`.\n"
            + (f"\nSimulated with `{' '.join(over)}`, as the fit was ({fit_json.name}, `sim_overrides`: the link "
               "delay measured on these runs, `validation.machine.measured_link_delay`).\n" if over else ""))
    atomic_write(out / "realsys.md", head + "\n".join(markdown(info, fit, pngs, fit_json.name)) + "\n")
    atomic_write(out / "machine-check.json", json.dumps(nan_to_null(summary), indent=2) + "\n")
    log(f"median |throughput error| over {info['n']} held-out runs past saturation: "
        f"{100 * info['median_abs_throughput_error']:.1f} %; policy order preserved: {info['policy_order_preserved']}")
    log(f"wrote {out / 'realsys.md'} and {out / 'machine-check.json'}")
    return summary


def fit_markdown(fit: dict[str, Any]) -> list[str]:
    from . import machine
    f = fit["fit"]
    L = ["### The machine profile: fitted and measured per-syscall costs\n"]
    # fit_records: "<row label>@<rate>/seed<n>", one per record the fit simulated
    rates = sorted({float(r.rsplit("@", 1)[1].split("/")[0]) for r in fit["fit_records"]})
    seeds = {r.rsplit("/seed", 1)[1] for r in fit["fit_records"]}
    L.append(f"Fitted by `python -m validation machine-fit` (CostFitter, {len(f['records'])} records: select accept-1 "
             f"and accept-inf at {rates[0]:,.0f}-{rates[-1]:,.0f} req/s, {len(seeds)} seeds; residual norm {f['residual_norm']:.3g}, start "
             f"{f['start_residual_norm']:.3g}).  Measured: the server's own clock_gettime timings per call, median "
             + (f"over the fit runs past saturation ({fit['measured_fit_set']['points']} points: accept-limit "
                + " and ".join(fit["measured_limits"]) + "; the held-out accept-10 runs in the same folders set "
                "none of the costs, and their select row below is shown, not used); " if fit.get("measured_limits") else
                f"over the fit folders' runs past saturation ({fit['measured_fit_set']['points']} points: every "
                "accept-limit in them, the held-out accept-10's included; see the reading below); ")
             + "*corrected* "
             f"divides each point by its dilation (spin wall / "
             f"nominal, median {fit['measured_fit_set']['dilation']:.2f}: softirq work that interrupts a call "
             f"is inside its wall time, the simulator charges it to the kernel).\n")
    meas = fit["measured_fit_set"]["per_call_us"]
    raw = fit["measured_fit_set"]["per_call_us_raw"]
    L.append("| cost (µs) | profile | ± stderr | how | measured per call (corrected) | measured raw |\n"
             "|---|---|---|---|---|---|")
    sel = {d["accept_limit"]: d for d in fit["select_by_interest"]}
    for k in f["params"]:
        v, e = f["params"][k], f["stderr"][k]
        if k in ("accept", "writev", "close"):
            mc, mr = f"{meas.get(k, math.nan):.2f}", f"{raw.get(k, math.nan):.2f}"
        elif k == "select_base":
            mc, mr = "see select rows below", ""
        elif k == "select_per_fd":
            mc, mr = "see select rows below", ""
        else:
            mc, mr = "–", "–"
        L.append(f"| {k} | {v:.3g} | {e:.2g} | fitted | {mc} | {mr} |")
    for k, v in fit["fixed"].items():
        if k == "select_per_ready":
            L.append(f"| {k} | {v:.3g} | – | fixed (collinear with select_per_fd: past saturation every fd is "
                     f"ready) | – | – |")
        elif not k.startswith("k_"):
            L.append(f"| {k} | {v:.3g} | – | fixed = measured | {meas.get(k.replace('_eof', ''), math.nan):.2f} | "
                     f"{raw.get(k.replace('_eof', ''), math.nan):.2f} |")
    p = f["params"]
    for al, d in sel.items():
        pred = p.get("select_base", math.nan) + p.get("select_per_fd", math.nan) * d["interest_set"]
        L.append(f"| select call, accept-{al} ({d['interest_set']:.0f} fds) | {pred:.3g} | – | fitted base + "
                 f"per_fd × fds | {d['us_per_call']:.2f} | – |")
    for k, v in fit["derived"].items():
        L.append(f"| {k} | {v:.3g} | – | derived, held out | see below | |")
    cal = fit.get("kernel_calibration") or {}
    if cal:
        kk = ", ".join(f"accept-{al} {cal['simulated_us_per_reply'][al]:.1f} (after the fit "
                       f"{cal.get('after_fit_us_per_reply', {}).get(al, math.nan):.1f})"
                       for al in sorted(cal["measured_us_per_reply"]))
        km = ", ".join(f"accept-{al} {v:.1f}" for al, v in sorted(cal["measured_us_per_reply"].items()))
        L.append(f"| k_* per packet (except k_syn_drop) | {machine.REFERENCE} × {fit['kernel_scale']:.3g} | – | "
                 f"calibrated: kernel µs per reply {kk} | dilation: {km} | – |")
        L.append(f"| k_softirq_run | {cal['k_softirq_run']:.3g} | – | calibrated with the scale (same two targets) | "
                 f"NET_RX runs per reply: see the table above | – |\n")
    else:
        L.append(f"| k_* (kernel, except k_syn_drop) | {machine.REFERENCE} × {fit['kernel_scale']} | – | fixed | – | – |\n")
    if fit.get("heldout_syscalls"):
        L.append("Held-out mechanisms, measured per call (corrected, median over runs past saturation):\n")
        L.append("| group | " + " | ".join(fit["heldout_syscalls_cols"]) + " |\n|---|" +
                 "---|" * len(fit["heldout_syscalls_cols"]))
        for g, d in fit["heldout_syscalls"].items():
            L.append(f"| {g} | " + " | ".join("–" if c not in d or d[c] is None or math.isnan(d[c]) else f"{d[c]:.2f}"
                                              for c in fit["heldout_syscalls_cols"]) + " |")
        L.append("knot's poll and read block (threads wait in them) and its threads preempt each other's spin, "
                 "so its per-call times and dilation are not CPU costs; they are listed, not compared.\n")
    fit_results = Path(fit.get("results") or machine.RESULTS)
    if (fit_results if fit_results.is_absolute() else machine.ROOT / fit_results).resolve() != machine.RESULTS.resolve():
        return L        # the reading below is of the committed runs' fit
    pct = {k: 100 * (f["params"][k] / meas[k] - 1) for k in ("accept", "writev", "close")
           if k in f["params"] and meas.get(k)}
    sel_txt = ", ".join(f"{d['us_per_call']:.1f} µs at {d['interest_set']:.0f} fds" for d in fit["select_by_interest"])
    L.append("Reading: the fitted " + ", ".join(f"{k} is {v:+.0f} %" for k, v in pct.items()) + " off the server's "
             "own (dilation-corrected) timing; the linear select model (base + per fd) cannot follow the measured "
             f"select, which grows faster than linearly with the set ({sel_txt}), so the fit over-charges small "
             "sets and under-charges accept-inf's large ones (a small share of the CPU either way: under 1 %).  "
             "user_per_request holds what the server does per request outside the timed calls, beyond the spin.\n")
    if fit.get("measured_limits"):
        return L
    # A fit made before 7 Dec 2026 took its medians over the fit folders whole: accept-10's runs,
    # held out, set the fixed read/read_eof and the epoll costs' scale too.  What the fit runs
    # alone give, read here from the same point files, says how far that reached.
    try:
        only = machine.fit_run_timings()
        om = only["per_call_us"]
        scale_only = machine.syscall_scale({}, limits=machine.FIT_LIMITS)
    except (OSError, KeyError, ValueError):
        return L        # the committed runs' point files are not here (simaccept installed from a wheel)
    pct_only = {k: 100 * (f["params"][k] / om[k] - 1) for k in pct if om.get(k)}
    L.append(f"Held-out timings in the profile: the medians above, and with them `read` = `read_eof` "
             f"({fit['fixed'].get('read', math.nan):.3g} µs) and the epoll costs' scale "
             f"({fit.get('syscall_scale', math.nan):.3g} × {machine.REFERENCE}), are over "
             f"{fit['measured_fit_set']['points']} points, accept-10's among them, where the fit set is accept-1 "
             f"and accept-inf only.  Over the fit runs' {only['points']} points alone: `read` {om.get('read', math.nan):.3g} µs, "
             f"the scale {scale_only:.3g}, and the fitted "
             + ", ".join(f"{k} {v:+.0f} %" for k, v in pct_only.items())
             + " off the measured.  `read` is about 1 µs of a request's ~290 µs; the epoll group's "
             "costs are the ones the scale sets (docs/known-defects.md; taking the fit runs only means "
             "fitting the committed profiles again).\n")
    return L


def _loop_err(d: dict[str, Any], k: str) -> float:
    m, p = d.get(f"measured_{k}", math.nan), d.get(f"predicted_{k}", math.nan)
    return abs(p - m) / m if m > 0 and not math.isnan(p) else math.nan


def loop_errors(info: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """{loop metric: {"median_abs_error", "runs"}} over the held-out runs past saturation where both
    the measurement and the simulation have it (median None without any run).  A finite accept-limit
    sets C_avg by itself past saturation (every phase finds the limit queued), so C_avg's is over the
    accept-inf runs only: the others' 0 % would flatter it."""
    out = {}
    for k in LOOP_METRICS:
        es = [_loop_err(d, k) for d in info.get("rows", [])
              if d["role"] == "held-out" and d.get("past_saturation") and not math.isnan(_loop_err(d, k))
              and (k != "c_avg" or d["policy"] == "accept-inf")]
        out[k] = {"median_abs_error": statistics.median(es) if es else None, "runs": len(es)}
    return out


def loop_table(info: dict[str, Any]) -> list[str]:
    """The server's loop, measured vs simulated, past saturation: the mechanism the thesis's accept
    policies act through, which throughput alone does not show (a run can reach the right replies/s
    with the wrong loop)."""
    cells = defaultdict(list)
    for d in info["rows"]:
        if d.get("past_saturation") and d["order_group"]:
            cells[(d["group"] or f"{d['order_group']} (fit)", d["policy"])].append(d)
    if not cells:
        return []

    def stats(ds, k):
        """(mean measured, mean simulated, median |error|) over the runs where both are numbers."""
        both = [d for d in ds if not math.isnan(_loop_err(d, k))]
        if not both:
            return math.nan, math.nan, math.nan
        return (sum(d[f"measured_{k}"] for d in both) / len(both), sum(d[f"predicted_{k}"] for d in both) / len(both),
                statistics.median(_loop_err(d, k) for d in both))

    def f(v):
        return "–" if math.isnan(v) else f"{v:,.0f}" if abs(v) >= 100 else f"{v:,.1f}"

    held = loop_errors(info)
    L = ["### The server's loop: measured vs simulated\n",
         "The accept policies act through the loop: how many connections an accept-phase takes, how often "
         "getevents runs and how many descriptors it returns.  Means over the runs past saturation, measured / "
         "simulated, and the median |error| of the runs (the same simulations as the throughput above; a "
         "threaded Knot server has no getevents loop).  Over the held-out runs past saturation, median |error| "
         "(C_avg over the accept-inf runs: a finite accept-limit sets it): "
         + "; ".join(f"{LOOP_METRICS[k]} {100 * v['median_abs_error']:.1f} % ({v['runs']} runs)"
                     for k, v in held.items() if v["runs"]) + ".\n",
         "| group | policy | runs | " + " | ".join(f"{h} meas. / sim (median abs err)" for h in LOOP_METRICS.values())
         + " |", "|---|---|---|" + "---|" * len(LOOP_METRICS)]
    for (g, pol), ds in sorted(cells.items()):
        cols = []
        for k in LOOP_METRICS:
            m, p, e = stats(ds, k)
            cols.append("–" if math.isnan(e) else f"{f(m)} / {f(p)} ({100 * e:.1f} %)")
        L.append(f"| {g} | {pol} | {len(ds)} | " + " | ".join(cols) + " |")
    L.append("")
    return L


def _per_s(count: float, duration: float) -> float:
    return count / duration if duration and duration > 0 and not math.isnan(count) else math.nan


def mechanism_table(info: dict[str, Any]) -> list[str]:
    """How replies are counted, and the response times, measured vs simulated, past saturation."""
    L = ["### Counting replies: every reply received in the window\n",
         "Until stop 3 a realsys run's replies/s counted only replies to connections *launched* in the "
         "measured window, so a reply to a connection launched during the warm-up was lost and the count fell "
         "short by about replies/s x (mean time from first SYN to reply) / window.  Accept-inf keeps clients "
         "waiting longest, so it lost most (about 8 % at 6,400 req/s against 2-3 % for accept-1 and accept-10), and "
         "that, not the server, made it look 3-10 % worse than the simulator said.  The simulator, like httperf, "
         "counts every reply received in the window, and so does loadgen now (`replies_recv_in_window`, and "
         "since stop 32 its 2xx part `replies_ok_recv_in_window`, which a newer point's replies/s is; the old "
         "count is kept as `replies_in_window`).  Response time is now from the request sent to the full reply "
         "(httperf's and the simulator's definition); first SYN to reply is `total_ms` in the point files.\n",
         "Means over the runs past saturation: replies/s as counted now, the old launched-in-window count, the "
         "server's own replies/s; accepts − replies (work on connections whose reply was not received in time); "
         "response times.\n",
         "| order group | policy | runs | replies/s | old count | server's | accepts − replies meas. / sim | "
         "mean resp ms meas. / sim | p99 resp ms meas. / sim | ListenOverflow/s meas. / sim | first SYN → reply ms |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    cells = defaultdict(list)
    for d in info["rows"]:
        if d.get("past_saturation") and d["order_group"]:
            cells[(d["order_group"], d["policy"])].append(d)

    def mean(ds, k):
        """Mean of column k (a name, or a function of the row) over rows where it is a number."""
        get = k if callable(k) else (lambda d: d.get(k, math.nan))
        xs = [v for v in map(get, ds) if not math.isnan(v)]
        return sum(xs) / len(xs) if xs else math.nan

    f = lambda v: "–" if math.isnan(v) else f"{v:,.0f}"  # noqa: E731
    for (g, pol), ds in sorted(cells.items()):
        wm = mean(ds, lambda d: d["measured_accept"] - d["measured"])
        ws = mean(ds, lambda d: d["predicted_accept"] - d["predicted"])
        L.append(f"| {g} | {pol} | {len(ds)} | {f(mean(ds, 'measured'))} | {f(mean(ds, 'launched_in_window'))} | "
                 f"{f(mean(ds, 'server_replies'))} | {f(wm)} / {f(ws)} | {f(mean(ds, 'measured_resp_ms'))} / "
                 f"{f(mean(ds, 'predicted_resp_ms'))} | {f(mean(ds, 'measured_p99_ms'))} / "
                 f"{f(mean(ds, 'predicted_p99_ms'))} | {f(mean(ds, 'measured_lo_per_s'))} / "
                 f"{f(mean(ds, 'predicted_lo_per_s'))} | {f(mean(ds, 'total_ms_mean'))} |")
    L.append("")
    lo = {pol: (mean(ds, "measured_lo_per_s"), mean(ds, "predicted_lo_per_s"))
          for (g, pol), ds in cells.items() if g == "select"}
    if "accept-1" in lo and "accept-inf" in lo:
        L.append(
            "The p99 columns sit on a knife edge.  A request whose handshake-completing ACK meets a full accept "
            "queue (ListenOverflow) is dropped with it and waits for the client's data retransmission, at least "
            "the 200 ms RTO minimum, so p99 is either tens of milliseconds or over 200 ms depending on whether "
            "more than 1 % of the replies met an overflow (in one simulated select accept-1 run at 6,400 req/s, "
            "0.99 % did, and its p99 was 241 ms; `simaccept run` with the machine profile, 2026-11-21).  The "
            "overflow rates say where the simulator parts from the kernel: at select accept-1 it overflows "
            f"{lo['accept-1'][1]:,.0f}/s against the measured {lo['accept-1'][0]:,.0f}/s, at accept-inf "
            f"{lo['accept-inf'][1]:,.0f}/s against {lo['accept-inf'][0]:,.0f}/s.  An ACK-time overflow needs a "
            "request admitted while the accept queue had room and completed after it filled; the simulator "
            "admits each SYN against the queue as it is at that SYN's arrival and completes it one round trip "
            "(0.1 ms) later, so after accept-inf drains the queue few requests are in flight when it fills again.  "
            "The measured rate needs about ten times as many in flight each time the queue refills; which "
            "kernel behaviour does that is not known here (not packet work deferred to ksoftirqd: in one "
            "select accept-inf run at 6,400 req/s, 1,810 overflows, ksoftirqd on the server's CPU ran 30 ms of "
            "the 11.5 s run).  It is why the simulated accept-inf tail is short.\n")
    L += ["### Accept-1's kernel cost: softirq runs\n",
          "Past saturation the real accept-1 answers 4-10 % less than accept-10 and accept-inf.  The packets per "
          "reply on the server's CPU are the same (7.1); the NET_RX softirq runs per reply are not (/proc/softirqs, "
          "table below), and the dilation puts accept-1's kernel time at 71 µs per reply against accept-inf's 55 "
          "(fit runs, medians).  On this VM a run starts with an IPI: the clients' CPU sends one when the server "
          "CPU's backlog was empty (RPS), and the server's CPU runs NET_RX locally to send one when it transmits "
          "into an empty client backlog.  `tools/softirq_context.sh` shows where the runs land (realsys/results/"
          "README.md); one traced run each (select, 6,400 req/s; tracing slows the server, so only the two are "
          "compared; runs per reply from the server's writev count in the same trace): per reply, accept-1 "
          "has 3.83 runs interrupting the server's user code against accept-10's 3.44, and 0.80 inside close() "
          "against 0.42, most of those carrying no packet (the local run that sends the IPI), which is the dearer "
          "close() below.\n",
          "The simulator models a softirq run as a busy period of kernel packet work: a packet that finds the "
          "kernel idle starts one and pays `k_softirq_run`, one that arrives while it runs joins it.  Its accept-1 "
          "batches less as well (runs per reply below; it has no transmit-side IPIs, so fewer runs than measured).  "
          "`k_softirq_run` and the per-packet scale are calibrated on accept-1 and accept-inf's kernel time per "
          "reply only (realsys-fit.json); accept-10, poll and epoll are predicted with them.\n",
          "| order group | policy | softirq share meas. / sim | NET_RX runs per reply meas. / sim | "
          "close() µs per call (raw) |",
          "|---|---|---|---|---|"]
    for (g, pol), ds in sorted(cells.items()):
        ms, ss = mean(ds, "measured_kernel_share"), mean(ds, "predicted_kernel_share")
        nr, cl = mean(ds, "net_rx_per_reply"), mean(ds, "close_us_raw")
        ns = mean(ds, "predicted_runs_per_reply")
        h = lambda v, p=2: "–" if math.isnan(v) else f"{v:.{p}f}"  # noqa: E731
        L.append(f"| {g} | {pol} | {h(ms)} / {h(ss)} | {h(nr)} / {h(ns)} | {h(cl, 1)} |")
    L.append("")
    return L

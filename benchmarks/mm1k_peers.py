"""mm1k_peers: simaccept's M/M/1/K configuration vs Ciw vs a plain SimPy model.

ρ = 0.9, μ = 10,000/s (λ = 9,000/s), K = 10 (simaccept: backlog 8, accept
queue backlog+1 = 9, plus the one connection in service, see
tests/simaccept/test_model.py::test_mm1k_oracle), about 1,000,000 customers
each: every model simulates T = 1e6/λ s, the first 1 s is warm-up.

* simaccept: tests/simaccept/mm1k_oracle.py::mm1k_scenario (zero kernel costs,
  exponential service, accept-limit 1, max_conns 1, no timeouts), via
  simaccept.simulate; data = host.t0/t_est (blocked = never established) and
  host.resp_t/resp_v.
* Ciw: one node, Exponential(λ) arrivals, Exponential(μ) service, 1 server,
  queue capacity K-1 (waiting room; the system holds K); data = service and
  rejection records (Simulation.get_all_records()).
* plain SimPy: a source process and one process per admitted customer on a
  simpy.Resource(capacity=1); a customer is blocked when count + queue >= K;
  inter-arrival and service times pre-drawn with NumPy.

Each model's blocking probability (batches by arrival time) and mean sojourn
(batches by completion time), 20 batch means over [1 s, T), 99 % t intervals,
against the M/M/1/K formula; wall times (model run + extraction of the
per-customer data; the common analysis excluded) and their ratios.

Usage: python benchmarks/mm1k_peers.py [--quick]
"""
from __future__ import annotations

import gc
import importlib.util
import math
import statistics
import sys
import time

import _common
from _common import Machine, emit_json

import numpy as np
from scipy import stats as sps

RHO, MU, K = 0.9, 10_000.0, 10
LAM = RHO * MU
BACKLOG = K - 2
WARM = 1.0
B = 20


def load_oracle():
    # the oracle's module alone: test_model.py imports pytest and hypothesis, which the
    # bench extra does not install
    p = _common.ROOT / "tests" / "simaccept" / "mm1k_oracle.py"
    spec = importlib.util.spec_from_file_location("_bench_mm1k_oracle", p)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def batch_means(t, v, tw, te):
    edges = np.linspace(tw, te, B + 1)
    m = (t >= tw) & (t < te)
    idx = np.searchsorted(edges, t[m], side="right") - 1
    return np.bincount(idx, weights=v[m], minlength=B) / np.bincount(idx, minlength=B)


def ci99(x):
    return float(sps.t.ppf(0.995, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x)))


# ------------------------------------------------------------------ the models
def run_simaccept(T, seed, tm):
    import simaccept
    sc = tm.mm1k_scenario(LAM, 1e6 / MU, BACKLOG, T - WARM, seed=seed)
    gc.collect()
    w0 = time.perf_counter()
    rec, host = simaccept.simulate(sc, raise_errors=True, return_host=True)
    t_arr = np.asarray(host.t0)
    blocked = (np.asarray(host.t_est) < 0).astype(float)
    t_dep, soj = np.asarray(host.resp_t), np.asarray(host.resp_v)
    wall = time.perf_counter() - w0
    return wall, t_arr, blocked, t_dep, soj


def run_ciw(T, seed):
    import ciw
    gc.collect()
    w0 = time.perf_counter()
    N = ciw.create_network(arrival_distributions=[ciw.dists.Exponential(rate=LAM)],
                           service_distributions=[ciw.dists.Exponential(rate=MU)],
                           number_of_servers=[1], queue_capacities=[K - 1])
    ciw.seed(seed)
    Q = ciw.Simulation(N)
    Q.simulate_until_max_time(T)
    w_sim = time.perf_counter() - w0
    recs = Q.get_all_records()
    arr, blk, dep, soj = [], [], [], []
    for r in recs:
        if r.record_type == "service":
            arr.append(r.arrival_date)
            blk.append(0.0)
            dep.append(r.exit_date)
            soj.append(r.exit_date - r.arrival_date)
        elif r.record_type == "rejection":
            arr.append(r.arrival_date)
            blk.append(1.0)
    # customers still in the system at T have no record: they are neither
    # blocked nor complete; count them as admitted arrivals
    for ind in Q.get_all_individuals():
        if ind.node != -1 and not ind.data_records:
            arr.append(ind.arrival_date)
            blk.append(0.0)
    wall = time.perf_counter() - w0
    return wall, w_sim, np.asarray(arr), np.asarray(blk), np.asarray(dep), np.asarray(soj)


def run_simpy(T, seed):
    import simpy
    gc.collect()
    w0 = time.perf_counter()
    rng = np.random.default_rng(seed)
    n = int(LAM * T * 1.05 + 10 * math.sqrt(LAM * T) + 100)
    ia = rng.exponential(1.0 / LAM, n).tolist()
    sv = rng.exponential(1.0 / MU, n).tolist()
    env = simpy.Environment()
    res = simpy.Resource(env, capacity=1)
    t_arr, blocked, t_dep, soj = [], [], [], []

    def customer(t0, s):
        with res.request() as req:
            yield req
            yield env.timeout(s)
        t_dep.append(env.now)
        soj.append(env.now - t0)

    def source():
        for i in range(n):
            yield env.timeout(ia[i])
            now = env.now
            t_arr.append(now)
            if res.count + len(res.queue) >= K:
                blocked.append(1.0)
            else:
                blocked.append(0.0)
                env.process(customer(now, sv[i]))

    env.process(source())
    env.run(until=T)
    wall = time.perf_counter() - w0
    return wall, np.asarray(t_arr), np.asarray(blocked), np.asarray(t_dep), np.asarray(soj)


def analyse(name, T, t_arr, blocked, t_dep, soj, pk, W):
    pb = batch_means(t_arr, blocked, WARM, T)
    wb = batch_means(t_dep, soj, WARM, T)
    r = dict(model=name, customers=int(len(t_arr)), pk=float(pb.mean()), pk_ci=ci99(pb),
             W=float(wb.mean()), W_ci=ci99(wb))
    r["pk_ok"] = abs(r["pk"] - pk) <= r["pk_ci"]
    r["W_ok"] = abs(r["W"] - W) <= r["W_ci"]
    return r


def _args():
    import argparse
    ap = argparse.ArgumentParser(description="M/M/1/K: simaccept against Ciw and plain SimPy, side by side")
    ap.add_argument("--quick", action="store_true", help="100,000 customers instead of 1,000,000")
    ap.add_argument("--rounds", type=int, default=3,
                    help="rounds of the three models, each round in another order (default 3): the speed-up "
                         "is the median of the rounds' ratios, with their spread")
    a = ap.parse_args()
    if a.rounds < 1:
        ap.error(f"--rounds: must be at least 1, got {a.rounds}")
    return a


def main():
    a = _args()
    quick = a.quick
    try:        # checked first: it used to run the simaccept part, then die in run_ciw's import
        import ciw  # noqa: F401
    except ImportError:
        raise SystemExit("mm1k_peers: needs Ciw, the peer it compares with: pip install ciw")
    m = Machine("mm1k_peers", quick)
    n_cust = 100_000 if quick else 1_000_000
    T = n_cust / LAM
    tm = load_oracle()
    pk, W = tm.mm1k(LAM, MU, K)
    print(f"M/M/1/K: λ={LAM:g}/s μ={MU:g}/s ρ={RHO} K={K}; simulated T={T:.2f} s (~{n_cust:,} customers), "
          f"warm-up {WARM:g} s, {B} batches, 99 % t intervals; {a.rounds} rounds in rotation")
    print(f"formula: blocking P_K = {pk:.6f}, mean sojourn W = {W * 1e6:.3f} µs")
    seed = 7
    models = ("simaccept", "ciw", "simpy")
    # One run of each was 1.34x, 1.69x and 2.04x vs Ciw in three back-to-back quick runs on a
    # loaded machine: rounds, each in another order, and the median of their ratios.
    walls: dict[str, list[float]] = {k: [] for k in models}
    cpus: dict[str, list[float]] = {k: [] for k in models}
    data = {}
    for rnd in range(a.rounds):
        order = models[rnd % 3:] + models[:rnd % 3]
        for k in order:
            c0 = time.process_time()
            if k == "simaccept":
                w, *d = run_simaccept(T, seed, tm)
                extra = ""
            elif k == "ciw":
                w, w_sim, *d = run_ciw(T, seed)
                extra = f" ({w_sim:.2f} s simulate_until_max_time + {w - w_sim:.2f} s records)"
            else:
                w, *d = run_simpy(T, seed)
                extra = ""
            cpus[k].append(time.process_time() - c0)
            walls[k].append(w)
            if k not in data:
                data[k] = d
            elif k == "simaccept" and not all(np.array_equal(x, y) for x, y in zip(data[k], d)):
                raise SystemExit("mm1k_peers: simaccept gave another result at the same seed in another round")
            print(f"  round {rnd + 1} {k}: {w:.2f} s wall{extra}, {cpus[k][-1]:.2f} s CPU", flush=True)

    rows = [analyse(k, T, *data[k], pk, W) for k in ("simaccept", "ciw", "simpy")]
    print()
    print(f"{'model':10s} {'customers':>9s} {'wall s':>7s} {'cust/s':>8s} {'P_block':>9s} {'±99%':>8s} {'ok':>3s}"
          f" {'W µs':>8s} {'±99%':>6s} {'ok':>3s}")
    print(f"{'formula':10s} {'':>9s} {'':>7s} {'':>8s} {pk:9.5f} {'':>8s} {'':>3s} {W * 1e6:8.2f}")
    for r in rows:
        wl = statistics.median(walls[r["model"]])
        print(f"{r['model']:10s} {r['customers']:9d} {wl:7.2f} {r['customers'] / wl:8,.0f} {r['pk']:9.5f}"
              f" {r['pk_ci']:8.5f} {'yes' if r['pk_ok'] else 'NO':>3s} {r['W'] * 1e6:8.2f} {r['W_ci'] * 1e6:6.2f}"
              f" {'yes' if r['W_ok'] else 'NO':>3s}")
    def ratios(times, other):
        return sorted(o / s for o, s in zip(times[other], times["simaccept"]))
    r_ciw, r_simpy, r_ciw_cpu = ratios(walls, "ciw"), ratios(walls, "simpy"), ratios(cpus, "ciw")
    sp_ciw, sp_simpy, sp_ciw_cpu = (statistics.median(r) for r in (r_ciw, r_simpy, r_ciw_cpu))
    verdict = ("met" if r_ciw[0] >= 2 else "NOT met" if r_ciw[-1] < 2 else
               "undecided: the rounds' ratios straddle it")
    print()
    print(f"speed-up of simaccept, median of {a.rounds} rounds (range): {sp_ciw:.2f}x vs Ciw "
          f"({r_ciw[0]:.2f}-{r_ciw[-1]:.2f}; bar: 2x, {verdict}), {sp_simpy:.2f}x vs plain SimPy "
          f"({r_simpy[0]:.2f}-{r_simpy[-1]:.2f})")
    print(f"by CPU time (less sensitive to machine load): {sp_ciw_cpu:.2f}x vs Ciw ({r_ciw_cpu[0]:.2f}-{r_ciw_cpu[-1]:.2f})")
    ok = {r["model"]: bool(r["pk_ok"] and r["W_ok"]) for r in rows}
    mach = m.end()
    emit_json(dict(benchmark="mm1k_peers", customers=n_cust, rounds=a.rounds,
                   simaccept_wall_s=round(statistics.median(walls["simaccept"]), 3),
                   ciw_wall_s=round(statistics.median(walls["ciw"]), 3),
                   simpy_wall_s=round(statistics.median(walls["simpy"]), 3), speedup_vs_ciw=round(sp_ciw, 3),
                   speedup_vs_ciw_range=[round(r_ciw[0], 3), round(r_ciw[-1], 3)], speedup_vs_ciw_verdict=verdict,
                   speedup_vs_simpy=round(sp_simpy, 3),
                   cpu_s={k: [round(v, 3) for v in vs] for k, vs in cpus.items()},
                   speedup_vs_ciw_cpu=round(sp_ciw_cpu, 3),
                   simaccept_within_ci=ok["simaccept"], ciw_within_ci=ok["ciw"], simpy_within_ci=ok["simpy"],
                   formula=dict(pk=pk, W=W),
                   results={r["model"]: dict(pk=r["pk"], pk_ci99=r["pk_ci"], pk_ok=bool(r["pk_ok"]), W=r["W"],
                                             W_ci99=r["W_ci"], W_ok=bool(r["W_ok"])) for r in rows},
                   **mach))


if __name__ == "__main__":
    sys.exit(_common.run(main))

"""The M/M/1/K oracle: a scenario the simulator runs as an M/M/1/K queue, and the queue's
formulas.  Shared by tests/simaccept/test_model.py::test_mm1k_oracle and
benchmarks/mm1k_peers.py, which loads this file alone (it needs neither pytest nor
hypothesis)."""
import numpy as np

from simaccept.costs import COST_NAMES
from simaccept.scenario import load_scenario


def mm1k(lam, mu, K):
    rho = lam / mu
    n = np.arange(K + 1)
    p = rho ** n
    p /= p.sum()
    L = float((n * p).sum())
    pk = float(p[-1])
    W = L / (lam * (1 - pk))
    return pk, W


def mm1k_scenario(lam, mean_service_us, backlog, duration, seed=7):
    ov = [f"costs.{n}=0" for n in COST_NAMES if n != "user_per_request"]
    ov += [f"costs.user_per_request={mean_service_us}", "server.service_dist=exponential",
           "server.accept_limit=1", "server.max_conns=1", "kernel.profile=linux-6",
           f"kernel.backlog={backlog}", "kernel.syncookies=false", "network.delay_ms=0",
           "network.bandwidth_mbps=1e12", "workload.arrivals=poisson", f"workload.rate={lam}",
           "client.timeout=1e9", "client.syn_rto=1e9", f"scenario.duration={duration}",
           "scenario.warmup=1", f"scenario.seed={seed}", "scenario.batches=20"]
    return load_scenario(text="", overrides=ov)

"""simaccept: simulate how a server accepts new connections under overload.

Quick use::

    import simaccept
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 overrides=["workload.rate=30000", "server.accept_limit=1"])
    rec = simaccept.simulate(sc)      # -> RunRecord
    print(rec.replies_per_s, rec.drops_drop_request)
"""
from .record import COLUMNS, RunRecord
from .scenario import Scenario, ScenarioError, load_scenario, scenario_from_dict

__all__ = ["COLUMNS", "RunRecord", "Scenario", "ScenarioError", "load_scenario",
           "scenario_from_dict", "simulate", "sweep"]
__version__ = "0.1.0"


def simulate(scenario, **kw):
    """Run one scenario point and return its :class:`RunRecord` (see simaccept.sim)."""
    from .sim import simulate as _simulate
    return _simulate(scenario, **kw)


def sweep(scenario, **kw):
    """Run every point of a scenario's grid (see simaccept.sweep.run_sweep)."""
    from .sweep import run_sweep
    return run_sweep(scenario, **kw)

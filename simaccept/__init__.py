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
           "run_sweep", "scenario_from_dict", "simulate"]
__version__ = "0.1.0"


def simulate(scenario, *, raise_errors=False, return_host=False, probe=None):
    """Run one scenario point and return its :class:`RunRecord` (see simaccept.sim).

    A run that fails returns a record with ``status = "failed"`` and the reason in ``error``
    (a sweep keeps going); ``raise_errors=True`` raises instead.  A scenario the model refuses
    raises :class:`ScenarioError` either way, and one it cannot run ``NotImplementedError``.
    ``return_host=True`` returns ``(record, host)``: ``simaccept.metrics.per_connection_rows(host)``
    is the run's table of connections, one row each (docs/tutorial.md, *One row per
    connection*).  ``probe(env, host, server)`` is called once the run is set up, before it starts:
    a process that samples the host joins the run there (see simaccept.sim.simulate)."""
    # The signatures are spelled out, not (*args, **kw): they are what inspect, help() and
    # editors show, and the package must import without SimPy's modules.
    # tests/simaccept/test_init.py holds them equal to sim.simulate's and sweep.run_sweep's.
    from .sim import simulate as _simulate
    return _simulate(scenario, raise_errors=raise_errors, return_host=return_host, probe=probe)


def run_sweep(scenario, out=None, jobs=1, dask=None, progress=False, plots=True, on_point=None,
              parquet=False, raise_errors=False, warn=True):
    """Run every point of a scenario's grid (see :func:`simaccept.sweep.run_sweep`; ``out``,
    the output folder, may be given by position as there: it was a TypeError here)."""
    from .sweep import run_sweep as _run_sweep
    return _run_sweep(scenario, out, jobs=jobs, dask=dask, progress=progress, plots=plots,
                      on_point=on_point, parquet=parquet, raise_errors=raise_errors, warn=warn)

# Not a function named ``sweep``: importing the submodule simaccept.sweep (as the first
# call did, and as ``import simaccept.sweep`` does) rebinds the package's ``sweep`` to the
# module, so such a function worked once and then was "'module' object is not callable".

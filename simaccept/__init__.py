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


def simulate(scenario, *args, **kw):
    """Run one scenario point and return its :class:`RunRecord` (see simaccept.sim).

    ``simulate(scenario, *, raise_errors=False, return_host=False)``.  A run that fails returns
    a record with ``status = "failed"`` and the reason in ``error`` (a sweep keeps going);
    ``raise_errors=True`` raises instead.  A scenario the model refuses raises
    :class:`ScenarioError` either way, and one it cannot run ``NotImplementedError``.  ``return_host=True`` returns ``(record, host)``:
    ``simaccept.metrics.per_connection_rows(host)`` is the run's table of connections, one row
    each (docs/tutorial.md, *One row per connection*)."""
    from .sim import simulate as _simulate
    return _simulate(scenario, *args, **kw)


def run_sweep(scenario, *args, **kw):
    """Run every point of a scenario's grid (see :func:`simaccept.sweep.run_sweep`; ``out``,
    the output folder, may be given by position as there: it was a TypeError here)."""
    from .sweep import run_sweep as _run_sweep
    return _run_sweep(scenario, *args, **kw)

# Not a function named ``sweep``: importing the submodule simaccept.sweep (as the first
# call did, and as ``import simaccept.sweep`` does) rebinds the package's ``sweep`` to the
# module, so such a function worked once and then was "'module' object is not callable".

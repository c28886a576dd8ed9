"""Server architectures: one module per model, one accept-policy interface (policies.py)."""
from __future__ import annotations


def make_server(env, host, sc, costs, meter, policy=None):
    """The server model of ``sc["server"]["kind"]``; ``policy``: its accept policy, when the
    caller has already made it (simulate() makes it once, in check_modelled)."""
    kind = sc["server"]["kind"]
    if policy is None:
        from .policies import make_policy
        policy = make_policy(sc["server"])
    if kind == "userver":
        from .userver import UServer
        return UServer(env, host, sc, costs, policy, meter)
    if kind == "tux":
        from .tux import TUX
        return TUX(env, host, sc, costs, policy, meter)
    if kind == "knot":
        from .knot import Knot
        return Knot(env, host, sc, costs, policy, meter)
    raise NotImplementedError(f"server.kind = {kind!r} is not simulated yet")

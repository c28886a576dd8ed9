"""Accept policies: how many connections to accept in one accept-phase.

A policy is a small object with one decision method, :meth:`quota`, called
at the start of every accept-phase with a :class:`PhaseView` of what a real
server can know at that moment, and one feedback hook,
:meth:`work_phase_done`.  Every server model uses the same interface.

* ``accept-limit`` (thesis 3.1): accept up to N consecutively, N = 1..inf.
* ``adaptive-closed`` (thesis ch. 6): until the server saturates, accept
  aggressively (the accept-limit); after, accept as many as the previous
  work-phase closed, so the number of open connections stays level.
* ``queue-aware`` (thesis ch. 6, "how many connections are readable, writable
  and pending"): accept the whole accept queue when there is little ready
  work, otherwise a share of it in proportion to queue length versus ready
  set, so neither queue starves.  On Linux the accept-queue length of a
  listening socket is ``tcpi_unacked`` from TCP_INFO.
* ``time-budget`` (thesis 4.2.2, "limits should be placed on the amount of
  time spent in each phase"): accept until the phase has used its CPU budget.
"""
from __future__ import annotations

import dataclasses
import math
import numbers

INF = math.inf


@dataclasses.dataclass
class PhaseView:
    """What :meth:`AcceptPolicy.quota` sees at the start of an accept-phase; each field's
    meaning on the μserver, TUX and Knot-C models: docs/guides/policies.md, *What a policy
    sees, model by model*."""

    acceptq_len: int          # connections waiting in the accept queue
    ready: int                # descriptors the last getevents returned (excluding the listener)
    open_conns: int
    closed_last_work_phase: int
    accept_limit: float


class AcceptPolicy:
    name = "accept-limit"
    budget_s: float = INF     # CPU seconds an accept-phase may use

    def __init__(self, accept_limit: float):
        self.accept_limit = accept_limit

    def quota(self, view: PhaseView) -> float:
        """Maximum connections to accept in this accept-phase (>= 1, may be inf)."""
        return self.accept_limit

    def work_phase_done(self, closed: int, items: int) -> None:
        """Feedback after each work-phase: the connections it closed and the items it served
        (per model: docs/guides/policies.md; on Knot-C the items of the thread that goes back to accept)."""


class AcceptLimit(AcceptPolicy):
    name = "accept-limit"


class AdaptiveClosed(AcceptPolicy):
    name = "adaptive-closed"

    def __init__(self, accept_limit: float, floor: int = 1):
        super().__init__(accept_limit)
        self.floor = floor

    def quota(self, view: PhaseView) -> float:
        # Saturated = the accept queue was not drained last time: it holds a
        # backlog.  Then admit what the last work-phase retired.
        if view.acceptq_len > 1 and view.ready > 0:
            return max(self.floor, view.closed_last_work_phase)
        return self.accept_limit


class QueueAware(AcceptPolicy):
    name = "queue-aware"

    def quota(self, view: PhaseView) -> float:
        if view.ready <= view.acceptq_len:
            return self.accept_limit
        share = view.acceptq_len * view.acceptq_len / max(1, view.ready)
        return max(1, min(self.accept_limit, math.ceil(share)))


class TimeBudget(AcceptPolicy):
    name = "time-budget"

    def __init__(self, accept_limit: float, budget_us: float):
        super().__init__(accept_limit)
        self.budget_s = budget_us * 1e-6


class PolicyError(ValueError):
    """A registered policy is not an :class:`AcceptPolicy` class, or its ``quota`` broke the
    contract (a number >= 1, or inf), or a shipped policy's name was registered over."""


#: The policies simaccept ships; their names cannot be registered over or removed.
SHIPPED: dict[str, type[AcceptPolicy]] = {
    "accept-limit": AcceptLimit,
    "adaptive-closed": AdaptiveClosed,
    "queue-aware": QueueAware,
    "time-budget": TimeBudget,
}


class _Registry(dict):
    """A dict of policy name -> class that refuses to rebind or remove a shipped name:
    ``REGISTRY["accept-limit"] = Mine`` silently made every scenario that leaves
    ``server.policy`` at its default run ``Mine``, recorded as ``accept-limit``."""

    def _check(self, name) -> None:
        if name in SHIPPED:
            raise PolicyError(f"REGISTRY[{name!r}] is a shipped policy and cannot be replaced or removed: "
                              f"register yours under a name of its own")

    def __setitem__(self, name, cls) -> None:
        if SHIPPED.get(name, cls) is not cls:
            self._check(name)
        super().__setitem__(name, cls)

    def __delitem__(self, name) -> None:
        self._check(name)
        super().__delitem__(name)

    def update(self, *args, **kw) -> None:
        new = dict(*args, **kw)
        for name, cls in new.items():       # all checked first: a refused update changes nothing
            if SHIPPED.get(name, cls) is not cls:
                self._check(name)
        for name, cls in new.items():
            self[name] = cls

    def __ior__(self, other):
        self.update(other)
        return self

    def setdefault(self, name, cls=None):
        if name not in self:
            self[name] = cls
        return self[name]

    def pop(self, name, *default):
        self._check(name)
        return super().pop(name, *default)

    def popitem(self):
        raise PolicyError("REGISTRY.popitem() would remove a policy it cannot choose; delete by name")

    def clear(self) -> None:
        for name in list(self):
            if name not in SHIPPED:
                super().__delitem__(name)

    def __reduce__(self):
        # explicit, though a dict subclass pickles as itself without it (Dask, a worker's spawn)
        return (_Registry, (dict(self),))


#: Policy name -> class.  Register your own here (``REGISTRY["mine"] = Mine``);
#: ``server.policy`` accepts any key.  A shipped name cannot be registered over.
REGISTRY: dict[str, type[AcceptPolicy]] = _Registry(SHIPPED)


def policy_label(policy: AcceptPolicy) -> str:
    """How an error names ``policy``: the names its class is registered under and the class
    (``policy 'broken' (Broken)``, ``policy 'a' or 'b' (Both)``); its ``name`` attribute may be
    inherited from a shipped class, and then named that policy instead."""
    cls = type(policy)
    names = [n for n, c in REGISTRY.items() if c is cls]     # a class may be registered twice
    return (f"policy {' or '.join(map(repr, names))} ({cls.__name__})" if names
            else f"policy class {cls.__name__}")


def policy_class(name: str) -> type[AcceptPolicy]:
    """``REGISTRY[name]``; PolicyError if it is not an AcceptPolicy subclass (a function or an
    unrelated class registered there failed mid-run, deep inside a server)."""
    cls = REGISTRY[name]
    if not (isinstance(cls, type) and issubclass(cls, AcceptPolicy)):
        raise PolicyError(f"REGISTRY[{name!r}] must be a subclass of simaccept.servers.policies.AcceptPolicy, "
                          f"got {cls!r}")
    return cls


def make_policy(server: dict) -> AcceptPolicy:
    """The policy ``server`` (a resolved ``[server]`` table) names; PolicyError if it cannot be made."""
    lim = server["accept_limit"]
    lim = INF if lim == "inf" else int(lim)
    cls = policy_class(server["policy"])
    try:
        if issubclass(cls, TimeBudget):
            return cls(lim, server["phase_budget_us"])
        return cls(lim)
    except Exception as e:   # noqa: BLE001 - a user's class; say which and why
        raise PolicyError(f"policy {server['policy']!r}: {cls.__name__}(accept_limit) failed: "
                          f"{type(e).__name__}: {e}") from e


def is_plain_accept_limit(policy: AcceptPolicy) -> bool:
    """True if ``policy`` is Accept-N as :class:`AcceptPolicy` defines it: neither hook
    overridden, on its class or on the instance, and no budget.  A server may then skip both
    hooks; ``p.quota = f`` set on an instance was read as plain Accept-N when only the class
    was looked at."""
    def own(hook: str) -> bool:
        m = getattr(policy, hook)
        return getattr(m, "__func__", None) is getattr(AcceptPolicy, hook) and getattr(m, "__self__", None) is policy
    return own("quota") and own("work_phase_done") and policy.budget_s == INF


def checked_quota(policy: AcceptPolicy, quota) -> float:
    """``quota`` if a number >= 1 (inf allowed), else PolicyError.  The servers call this only
    when a quota is not a plain int or float >= 1: 0, -1 or NaN made a run with 0 replies/s
    and status "ok"."""
    if isinstance(quota, numbers.Real) and not isinstance(quota, bool) and quota >= 1:
        return quota
    raise PolicyError(f"{policy_label(policy)}.quota() returned {quota!r}: "
                      "it must be a number >= 1, or inf")

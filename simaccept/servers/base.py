"""What every server model shares: its place in the run and its statistics.

A server model is one SimPy process (``self.proc``) that runs the
architecture's loop against the :class:`~simaccept.host.Host`.  Its
``stats`` counters are the thesis's server statistics; the run's
:class:`~simaccept.sim.Meter` snapshots them when the warm-up ends and when
the run stops, and :mod:`simaccept.metrics` turns the difference into the
record.
"""
from __future__ import annotations

STAT_NAMES = ("getevents_calls", "fds_returned", "accept_phases", "accepts", "accepts_eagain",
              "work_phases", "work_items", "closed", "accepts_discarded")


class ServerModel:
    def __init__(self, env, host, sc, costs, policy, meter):
        self.env = env
        self.host = host
        self.costs = costs
        self.policy = policy
        self.meter = meter
        self.max_conns = sc["server"]["max_conns"]
        self.stats = {name: 0 for name in STAT_NAMES}

    def start(self):
        self.proc = self.env.process(self.loop())
        return self

    def sleep_until_ready(self, t: float, listening: bool):
        """Block at ``t`` until the host has something ready (``yield from`` it);
        returns the time the server runs again, ticking the meter on the way."""
        meter = self.meter
        if meter.warm is None and t < meter.t_warm:
            # A wait that spans the end of warm-up stops there for the snapshot: taken at
            # the first wake-up after it, a sparse run (0.5 req/s) measured 0.34 s of a
            # 1 s window and the events that woke the server as if before it.
            t_w = self.host.wait_ready(t, meter.t_warm, listening)
            if t_w < meter.t_warm:
                if t_w > t:
                    yield self.env.timeout(t_w - t)
                return t_w
            yield self.env.timeout(meter.t_warm - t)
            meter.tick(meter.t_warm)
            t = meter.t_warm
        t_w = self.host.wait_ready(t, meter.t_stop, listening)
        if t_w > t:
            yield self.env.timeout(t_w - t)
            self.meter.tick(t_w)
            return t_w
        return t

    def sleep_next_event(self, t: float):
        """Block at ``t`` until the host's next event (``yield from`` it); returns the time
        the server runs again, ticking the meter on the way (and stopping at the end of
        warm-up for its snapshot, as :meth:`sleep_until_ready`)."""
        meter = self.meter
        limit = meter.t_warm if (meter.warm is None and t < meter.t_warm) else meter.t_stop
        t_w = self.host.wait_next(t, limit)
        if t_w > t:
            yield self.env.timeout(t_w - t)
            meter.tick(t_w)
        return t_w

    def loop(self):  # pragma: no cover - each model defines its loop
        raise NotImplementedError

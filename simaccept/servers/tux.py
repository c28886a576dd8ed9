"""TUX: the in-kernel web server's loop, thesis fig. 3.2.

TUX has no getevents-phase and makes no system-call crossings: it reads the
listening socket's accept queue and its own ``work_pending`` queue directly.
Each iteration is

1. **accept-phase**: accept up to the accept-limit (Accept-Inf drains the
   queue, including connections that complete while it drains);
2. **work-phase**: process ``work_pending`` until it is empty.  The queue
   keeps growing while it is drained: a reply that completes lets the client
   close, a closed connection becomes a new item, a request that arrives on an
   accepted connection becomes a new item.  With Accept-Inf a long
   accept-phase is followed by an even longer work-phase, during which nothing
   is accepted and the kernel's queues overflow (thesis 4.1.2, tables 4.4,
   4.5, 4.10).

Costs (simaccept.costs): ``tux_accept``, ``tux_request`` (read, parse and send
a reply in the kernel, zero-copy), ``tux_per_kb`` for file bytes,
``tux_close``, and ``tux_phase`` per phase switch.  The kernel's packet work is
the same as for a user-level server.

**Why Accept-1 wins: cache warmth.**  With equal per-operation costs a
work-conserving loop delivers the same replies/s whatever its accept-limit
(Accept-Inf even saves phase switches), so the queue rules alone cannot give
the thesis's ordering (checked: with warmth off Accept-Inf delivers slightly
*more* than Accept-1 past saturation).  What the thesis describes is *when* a
connection is served: Accept-1 parses, answers and closes a connection right
after accepting it ("connections receive service quickly", 4.2.2);
Accept-Inf accepts a batch of up to the whole accept queue and reaches a
connection's request only after the rest of the batch has been accepted and
the work items queued ahead of it have run.  On the thesis's 2.4 GHz Xeon
(512 KB L2) the per-connection state TUX re-reads at that point (child
socket, request skb, TUX request) has by then been pushed out of the cache
by the state of the other connections, and each such re-read costs
``tux_cold`` (~40 lines x ~150 ns = 6 us).  The model counts
*connection-state touches* (the kernel building a child socket; a TUX accept;
a TUX work item): an item on a connection whose last touch is more than
``tux_cache_touches`` touches ago pays ``tux_cold``.  The accept itself
touches freshly allocated (slab-hot) objects and pays nothing extra.

This gives Accept-Inf a positive feedback that Accept-1 does not have: a
burst of arrivals makes a long accept-phase, its connections go cold, the
work-phase runs ~30 % slower, more connections pile up for the next batch,
and Accept-Inf settles in a regime of batches of ~100 connections, work-phases
of ~150 items and a full accept queue (AcceptQFull drops, table 5.2) at
14,000-18,000 replies/s, while Accept-1 keeps its warm cost (~39 us per
connection) up to ~24,000-25,000 replies/s.  Below saturation both keep up with
small batches.  The bursts that tip Accept-Inf over come from the arrival
process: the thesis scenarios use Poisson arrivals (8 httperf clients); with a
perfectly periodic stream batches never grow below saturation and both
policies peak alike.

**A connection its client has closed ends the accept-phase.**  TUX's
``accept_requests()`` (net/tux/accept.c) releases a child socket that is no
longer ESTABLISHED (its client's FIN is in: CLOSE_WAIT) and returns, without
making a request of it.  So such a connection is not counted as accepted
(table 4.10: TUX's accept rate is its reply rate, where the μserver's runs
14-17 % ahead of its replies, table 4.8), and an Accept-Inf batch stops at the
first one.  With the thesis's clients (``client.timer_lag_ms``, simaccept.clients)
such connections are a sixth of the μserver's accepts past saturation (table
4.8), so Accept-Inf's batches stay moderate (table 4.10: C_avg 9.54 at 23,000
req/s) instead of taking a whole accept queue.

The host's ready set plays the role of work_pending: an accepted connection
with its request in, or with the client's FIN in, is a work item.
"""
from __future__ import annotations

import math

from ..host import S_READ, S_WRITE
from .base import ServerModel
from .policies import PhaseView, checked_quota
from .warmth import CacheWarmth

INF = math.inf


class TUX(ServerModel):
    def __init__(self, env, host, sc, costs, policy, meter):
        super().__init__(env, host, sc, costs, policy, meter)
        self.warmth = CacheWarmth(host, costs)       # see the module docstring
        self.start()

    def loop(self):
        env, h, c, st = self.env, self.host, self.costs, self.stats
        meter = self.meter
        t_stop = meter.t_stop
        ls = h.lsock
        ready = h.ready
        warmth = self.warmth
        closed_last = 0
        while True:
            t = env.now
            meter.tick(t)
            if t >= t_stop:
                return
            listening = h.n_open < self.max_conns
            if not ready and not (listening and ls.acceptq):
                t = yield from self.sleep_until_ready(t, listening)
                if t >= t_stop:
                    return
            # ---------------------------------------------------------- accept-phase
            if ls.acceptq and listening:
                view = PhaseView(len(ls.acceptq), len(ready), h.n_open, closed_last,
                                 self.policy.accept_limit)
                quota = self.policy.quota(view)
                if quota.__class__ not in (int, float) or not quota >= 1:
                    quota = checked_quota(self.policy, quota)
                budget = self.policy.budget_s
                # the budget is of TUX's own CPU: kernel packet work that preempts the
                # accept-phase stretches it in time but is not counted
                used = c.tux_phase
                n = 0
                t = h.run(t, c.tux_phase, "user")
                while n < quota and h.n_open < self.max_conns:
                    warmth.sync()
                    conn = h.accept(t)
                    if conn is None:
                        break             # in-kernel: no EAGAIN system call to pay
                    warmth.accepted(conn)
                    t = h.run(t, c.tux_accept, "accept")
                    if h.eof[conn]:
                        # accept_requests(): a child no longer ESTABLISHED (its client has
                        # closed) is released, and the accept-phase ends there (goto err).
                        # No request is made of it, so it is not counted as accepted.
                        t = h.run(t, c.tux_close, "close")
                        h.close(t, conn)
                        st["accepts_discarded"] += 1
                        break
                    n += 1
                    used += c.tux_accept
                    if used >= budget:
                        break
                st["accept_phases"] += 1
                st["accepts"] += n
            # ---------------------------------------------------------- work-phase
            # Drain work_pending, including items that arrive while draining.
            closed = 0
            items = 0
            t = h.run(t, c.tux_phase, "user")
            sst = h.sst
            while ready:
                conn = next(iter(ready))
                s = sst[conn]
                cold = warmth.step(conn)
                if s == S_READ:
                    r = h.read(conn)
                    if r == 1:
                        t = self._reply(t, conn, cold)
                    elif r == 0:
                        t = h.run(t, c.tux_close + cold, "close")
                        h.close(t, conn)
                        closed += 1
                    else:
                        ready.pop(conn, None)
                elif s == S_WRITE:
                    t = self._send(t, conn, cold)
                else:
                    ready.pop(conn, None)
                items += 1
                if t >= t_stop:
                    break
            st["work_phases"] += 1
            st["work_items"] += items
            st["closed"] += closed
            closed_last = closed
            self.policy.work_phase_done(closed, items)
            if t > env.now:
                yield env.timeout(t - env.now)

    def _reply(self, t, conn, cold=0.0):
        """Parse the request and start the reply (in-kernel, zero-copy)."""
        h, c = self.host, self.costs
        t = h.run(t, c.tux_request + cold, "user")
        return self._send(t, conn)

    def _send(self, t, conn, cold=0.0):
        h, c = self.host, self.costs
        chunk = min(h.rem[conn], h.send_space(t, conn))
        t = h.run(t, c.tux_per_kb * (chunk / 1024.0) + cold, "sendfile")
        k = h.reply_kernel_cost(conn, chunk)
        h.write(t, conn, chunk)
        return h.run_kernel(t, k)

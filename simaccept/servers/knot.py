"""Knot-C: a fixed pool of cooperatively scheduled threads (Capriccio), thesis 3.1.2.

Each of ``server.threads`` threads loops:

1. **accept-phase**: accept up to the accept-limit without blocking; if none
   could be accepted, block on the listening socket;
2. **work-phase**: serve every accepted connection to completion, one after
   the other: read the request (block on the socket if it is not there), write
   the reply with write() (Knot cannot use sendfile: the copy costs
   ``sendfile_per_kb``), keep reading the keep-alive connection until the
   client closes it, close it, next connection.

Capriccio runs threads round-robin.  When no thread is runnable its scheduler
polls every descriptor a thread is blocked on (Capriccio's do_scheduler polls
when the run queue is empty; its sockio_poll re-issues the blocked call for
each thread poll() reports): the poll costs ``sched_base`` plus
``sched_per_blocked`` per blocked thread *and* per open connection, plus
``sched_per_ready`` per ready descriptor, and each resumed thread costs a
``thread_switch`` (switch, blocking-graph bookkeeping, the retried call).
Capriccio's poll() set holds only the outstanding requests, one per blocked
thread (sockio_poll_add_request), and is polled with a zero timeout (an idle
scheduler spins on poll + sched_yield); so the per-open-connection part of
the pass is not poll() but stands for the library overheads the thesis
suspects grow with connections (4.1.3).  Charging the kernel's poll() over
the blocked descriptors on top moves the Accept-50 peak by under 5 %
(docs/validation, the Knot miss).

Why the accept-limit matters (thesis 4.2.3).  A thread holds its connections
while their clients react: the request comes ``client.request_delay_ms`` after
the handshake and the FIN ``client.think_ms`` after the reply (cluster 2's
slow clients).  With Accept-1 a thread waits for both on every connection, so
the 1,000 threads bound throughput (threads / per-connection hold time).  A
batch overlaps the request waits (the later requests arrive while the thread
waits on the first), so Accept-50 reaches the CPU bound instead; but every
accepted connection stays open until its thread gets to it, so open
connections grow with the limit (Accept-50 ~25,000, Accept-100 44,000-48,000
in the thesis) and with them the scheduler's per-pass cost: Accept-100 loses
throughput past saturation.

**Cache warmth** (simaccept.servers.warmth; on main since 2026-11-27, docs/guides/knot.md).
Cluster 2's server is the same 2.4 GHz Xeon as cluster 1's (thesis 3.2), so Knot's
connection state goes cold as TUX's does, with TUX's constants (``tux_cold``,
``tux_cache_touches``), not set on any Knot row.  A thread that waits
``client.request_delay_ms`` for its request and ``client.think_ms`` for the FIN
finds the connection cold at both, at every policy: two ``tux_cold`` per
connection.

**A pthread server** (realsys/c/knot.c; the ``realsys-linux6`` profile) has no scheduler
pass: the kernel wakes each thread from its own socket, at the cost of a block-and-wake
(``thread_switch``, measured there), and an idle CPU sleeps.  With the three ``sched_*``
costs at 0 a pass takes no time, and one that finds no thread to run waits for the host's
next event rather than polling again at the same instant.

One SimPy process plays the scheduler; threads are plain records, so a
thousand threads cost no SimPy processes.
"""
from __future__ import annotations

import collections
import math

from ..host import S_READ, S_WRITE
from .base import ServerModel
from .policies import PhaseView, checked_quota
from .warmth import CacheWarmth

INF = math.inf

T_ACCEPT, T_SERVE = 0, 1


class Knot(ServerModel):
    def __init__(self, env, host, sc, costs, policy, meter):
        super().__init__(env, host, sc, costs, policy, meter)
        self.n_threads = sc["server"]["threads"]
        self.stats["thread_switches"] = 0
        # per-thread state
        self.state = [T_ACCEPT] * self.n_threads
        self.conns = [collections.deque() for _ in range(self.n_threads)]
        # work items a thread has run since its last accept-phase: its work-phase's, for the policy
        self.items = [0] * self.n_threads
        self.warmth = CacheWarmth(host, costs)       # TUX's cache model and constants
        self.start()

    def loop(self):
        env, h, c, st = self.env, self.host, self.costs, self.stats
        meter = self.meter
        t_stop = meter.t_stop
        ls = h.lsock
        ready = h.ready
        warmth = self.warmth
        runq = collections.deque(range(self.n_threads))
        blocked_accept: collections.deque[int] = collections.deque()
        blocked_on: dict[int, int] = {}          # conn -> thread blocked on it
        closed_last = 0
        while True:
            t = env.now
            meter.tick(t)
            if t >= t_stop:
                return
            if not runq:
                # ---------------------------------------------- scheduler poll
                listening = bool(blocked_accept) and h.n_open < self.max_conns
                woken = [conn for conn in ready if conn in blocked_on]
                if not woken and not (listening and ls.acceptq):
                    t = yield from self.sleep_until_ready(t, listening)
                    if t >= t_stop:
                        return
                    woken = [conn for conn in ready if conn in blocked_on]
                n_blocked = len(blocked_on) + len(blocked_accept)
                n_ready = len(woken) + (1 if (listening and ls.acceptq) else 0)
                cost = c.sched_base + c.sched_per_blocked * (n_blocked + h.n_open) + c.sched_per_ready * n_ready
                t_pass = t
                t = h.run(t, cost, "poll")
                if c.user_per_event:
                    t = h.run(t, c.user_per_event * n_ready, "user")
                st["getevents_calls"] += 1
                st["fds_returned"] += n_ready
                for conn in woken:
                    runq.append(blocked_on.pop(conn))
                if listening and ls.acceptq:
                    # wake as many accepting threads as there are connections
                    for _ in range(min(len(ls.acceptq), len(blocked_accept))):
                        runq.append(blocked_accept.popleft())
                elif not woken and t == t_pass:
                    # Nothing to run, and the pass took no time (no scheduler pass costs: a
                    # pthread server, whose kernel wakes a thread from its own socket).  What
                    # woke the scheduler is ready but no thread waits on it (a connection of a
                    # batch not yet served), so polling again would find the same at the same
                    # instant, for ever: wait for the next event instead.  A pass that costs
                    # time never gets here (Capriccio's scheduler spins, pass after pass).
                    t = yield from self.sleep_next_event(t)
                    continue
                if t > env.now:
                    yield env.timeout(t - env.now)
                continue
            # ------------------------------------------------------ run a thread
            th = runq.popleft()
            t = h.run(t, c.thread_switch, "user")
            st["thread_switches"] += 1
            while True:
                if self.state[th] == T_ACCEPT:
                    view = PhaseView(len(ls.acceptq), len(ready), h.n_open, closed_last,
                                     self.policy.accept_limit)
                    quota = self.policy.quota(view)
                    if quota.__class__ not in (int, float) or not quota >= 1:
                        quota = checked_quota(self.policy, quota)
                    q = self.conns[th]
                    budget = self.policy.budget_s
                    used = 0.0          # the thread's own CPU in this accept-phase
                    n = 0
                    while n < quota and h.n_open < self.max_conns:
                        warmth.sync()
                        conn = h.accept(t)
                        if conn is None:
                            t = h.run(t, c.accept_eagain, "accept")
                            st["accepts_eagain"] += 1
                            break
                        warmth.accepted(conn)
                        # the new descriptor's allocation scans the ones open (seed 003)
                        c_acc = c.accept + c.fd_alloc_per_open * (h.n_open - 1)
                        t = h.run2(t, c_acc, "accept", c.setsockopt, "setsockopt")
                        q.append(conn)
                        n += 1
                        used += c_acc + c.setsockopt
                        if used >= budget:
                            break
                    st["accept_phases"] += 1
                    st["accepts"] += n
                    if n == 0:
                        blocked_accept.append(th)
                        break
                    self.state[th] = T_SERVE
                    st["work_phases"] += 1
                    closed_last = 0
                    self.items[th] = 0
                # serve the accepted connections to completion, in order
                q = self.conns[th]
                blocked = False
                while q:
                    conn = q[0]
                    s = h.sst[conn]
                    if s == S_READ:
                        r = h.read(conn)
                        st["work_items"] += 1
                        self.items[th] += 1
                        cold = warmth.step(conn)
                        if cold:
                            t = h.run(t, cold, "user")
                        if r == 1:
                            t = h.run2(t, c.read, "read", c.user_per_request, "user")
                            t = self._write(t, conn)
                            if h.sst[conn] == S_WRITE:       # reply not all written
                                blocked_on[conn] = th
                                blocked = True
                                break
                        elif r == 0:
                            t = h.run2(t, c.read_eof, "read", c.close, "close")
                            h.close(t, conn)
                            q.popleft()
                            st["closed"] += 1
                            closed_last += 1
                        else:
                            t = h.run(t, c.read_eof, "read")       # EAGAIN: block
                            blocked_on[conn] = th
                            blocked = True
                            break
                    elif s == S_WRITE:
                        if conn not in ready:
                            blocked_on[conn] = th
                            blocked = True
                            break
                        st["work_items"] += 1
                        self.items[th] += 1
                        cold = warmth.step(conn)
                        if cold:
                            t = h.run(t, cold, "user")
                        t = self._write(t, conn)
                        if h.sst[conn] == S_WRITE:
                            blocked_on[conn] = th
                            blocked = True
                            break
                    else:                                      # closed under us
                        q.popleft()
                if blocked:
                    break
                self.state[th] = T_ACCEPT                      # loop back to accept
                self.policy.work_phase_done(closed_last, self.items[th])
                if t >= t_stop:
                    break
            if t > env.now:
                yield env.timeout(t - env.now)

    def _write(self, t, conn):
        """write() the reply (copying) until done or the send buffer is full."""
        h, c = self.host, self.costs
        chunk = min(h.rem[conn], h.send_space(t, conn))
        t = h.run(t, c.write + c.sendfile_per_kb * (chunk / 1024.0), "write")
        k = h.reply_kernel_cost(conn, chunk)
        h.write(t, conn, chunk)
        return h.run_kernel(t, k)

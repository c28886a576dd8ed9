"""The μserver: a single-process event-driven (SPED) loop, thesis fig. 3.1.

Each iteration has three phases:

1. **getevents-phase**: one select/poll/epoll_wait call over the interest
   set (every open connection plus the listening socket).  select and poll
   cost a base plus a term per descriptor in the interest set plus a term per
   ready descriptor; epoll costs a base plus a term per ready event, and an
   epoll_ctl per interest change.
2. **accept-phase**, if the listening socket was readable: accept up to the
   policy's quota (the accept-limit).  Accept-Inf stops at the EAGAIN that
   says the queue is drained; a finite limit stops at the limit.  Each new
   connection gets setsockopt(TCP_NODELAY).
3. **work-phase** over the descriptors getevents returned, never the ones
   just accepted: read the request (then wait for writability), write the
   reply (writev for one packet; CORK + write + sendfile + UNCORK for files,
   in chunks of the send buffer), read EOF and close.

One SimPy timeout per loop iteration (the phases of one process need no
events of their own); every system call inside is a :meth:`Host.run` that
kernel work preempts.
"""
from __future__ import annotations

import math

from ..host import S_READ, S_WRITE
from .policies import PhaseView

INF = math.inf


class UServer:
    def __init__(self, env, host, sc, costs, policy, meter):
        self.env = env
        self.host = host
        self.costs = costs
        self.policy = policy
        self.meter = meter
        srv = sc["server"]
        self.mux = srv["mux"]
        self.max_conns = srv["max_conns"]
        self.idle_conns = sc["workload"]["idle_conns"]
        self.one_packet = sc["workload"]["kind"] == "one-packet"
        self.sndbuf = srv["sndbuf"]
        self.stats = dict(getevents_calls=0, fds_returned=0, accept_phases=0, accepts=0,
                          accepts_eagain=0, work_phases=0, work_items=0, open_integral=0.0,
                          closed=0, replies_written=0)
        self.t_last = 0.0
        self.exp_service = srv["service_dist"] == "exponential"
        self.rng = host.rng
        self.proc = env.process(self.loop())

    # getevents cost ----------------------------------------------------------
    def getevents_cost(self, n_interest: int, n_ready: int) -> float:
        c = self.costs
        if self.mux == "select":
            return c.select_base + c.select_per_fd * n_interest + c.select_per_ready * n_ready
        if self.mux == "poll":
            return c.poll_base + c.poll_per_fd * n_interest + c.poll_per_ready * n_ready
        return c.epoll_base + c.epoll_per_ready * n_ready

    def service_time(self) -> float:
        """Per-request user-level work: the profile's mean, optionally exponential."""
        m = self.costs.user_per_request
        if self.exp_service and m > 0:
            return float(self.rng.exponential(m))
        return m

    def loop(self):
        env, h, c, st = self.env, self.host, self.costs, self.stats
        meter = self.meter
        t_stop = meter.t_stop
        mux = self.mux
        epoll = mux == "epoll"
        ls = h.lsock
        closed_last = 0
        while True:
            t = env.now
            meter.tick(t)
            if t >= t_stop:
                return
            # ---------------------------------------------------------------- getevents
            # At max_conns the listener leaves the interest set (else select
            # would report it readable forever and the loop would spin).
            listening = h.n_open < self.max_conns
            if not h.ready and not (listening and ls.acceptq):
                t_w = h.wait_ready(t, t_stop, listening)
                if t_w > t:
                    yield env.timeout(t_w - t)
                    t = t_w
                    meter.tick(t)
                if t >= t_stop:
                    return
            snapshot = list(h.ready)
            listen_ready = bool(ls.acceptq) and h.n_open < self.max_conns
            n_ready = len(snapshot) + (1 if listen_ready else 0)
            n_interest = h.n_open + 1 + self.idle_conns
            # time-average of open connections, sampled at each getevents
            st["open_integral"] += h.n_open * (t - self.t_last)
            self.t_last = t
            t = h.run(t, self.getevents_cost(n_interest, n_ready), mux)
            st["getevents_calls"] += 1
            st["fds_returned"] += n_ready
            # ---------------------------------------------------------------- accept-phase
            if listen_ready:
                view = PhaseView(len(ls.acceptq), len(snapshot), h.n_open, closed_last,
                                 self.policy.accept_limit)
                quota = self.policy.quota(view)
                budget = self.policy.budget_s
                t_phase = t
                n = 0
                per_accept = c.accept + c.setsockopt + (c.epoll_ctl if epoll else 0.0)
                while n < quota and h.n_open < self.max_conns:
                    conn = h.accept(t)
                    if conn is None:
                        t = h.run(t, c.accept_eagain, "accept")
                        st["accepts_eagain"] += 1
                        break
                    t = h.run2(t, c.accept, "accept", c.setsockopt, "setsockopt")
                    if epoll:
                        t = h.run(t, c.epoll_ctl, "epoll")
                    n += 1
                    if t - t_phase >= budget:
                        break
                st["accept_phases"] += 1
                st["accepts"] += n
            # ---------------------------------------------------------------- work-phase
            closed = 0
            sst = h.sst
            for conn in snapshot:
                s = sst[conn]
                if s == S_READ:
                    r = h.read(conn)
                    if r == 1:
                        t = h.run2(t, c.read, "read", self.service_time(), "user")
                        if epoll:
                            t = h.run(t, c.epoll_ctl, "epoll")
                    elif r == 0:
                        t = h.run2(t, c.read_eof, "read", c.close, "close")
                        h.close(conn)
                        closed += 1
                    else:
                        t = h.run(t, c.read_eof, "read")       # EAGAIN costs like a short read
                elif s == S_WRITE:
                    t = self._write(t, conn)
                st["work_items"] += 1
            st["work_phases"] += 1
            st["closed"] += closed
            closed_last = closed
            self.policy.work_phase_done(closed, len(snapshot))
            if t > env.now:
                yield env.timeout(t - env.now)

    def _write(self, t, conn):
        h, c = self.host, self.costs
        if self.one_packet:
            nbytes = h.rem[conn]
            t = h.run(t, c.writev, "writev")
            h.write(t, conn, nbytes)
        else:
            size = h.reply_size(conn)
            first = h.rem[conn] == size
            if first:
                t = h.run(t, c.setsockopt, "setsockopt")     # TCP_CORK
                t = h.run(t, c.write, "write")               # header
            chunk = min(h.rem[conn], self.sndbuf)
            t = h.run(t, c.sendfile + c.sendfile_per_kb * (chunk / 1024.0), "sendfile")
            left = h.write(t, conn, chunk)
            segs = -(-chunk // h.mss)
            t = h.run_kernel(t, c.k_tx_per_segment * segs)
            if left == 0:
                t = h.run(t, c.setsockopt, "setsockopt")     # TCP_UNCORK
        if self.mux == "epoll" and h.sst[conn] == S_READ:
            t = h.run(t, c.epoll_ctl, "epoll")
        return t

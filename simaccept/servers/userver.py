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
   each sendfile what the send buffer has free, :meth:`Host.send_space`),
   read EOF and close.

One SimPy timeout per loop iteration (the phases of one process need no
events of their own); every system call inside is a :meth:`Host.run` that
kernel work preempts.
"""
from __future__ import annotations

import math

from ..host import S_READ, S_WRITE
from .base import ServerModel
from .policies import PhaseView, checked_quota, is_plain_accept_limit

INF = math.inf

#: Simulated seconds the loop may run ahead of SimPy's clock between yields.
YIELD_QUANTUM = 1e-3


class UServer(ServerModel):
    def __init__(self, env, host, sc, costs, policy, meter):
        super().__init__(env, host, sc, costs, policy, meter)
        srv = sc["server"]
        self.mux = srv["mux"]
        self.idle_conns = sc["workload"]["idle_conns"]
        self.one_packet = sc["workload"]["kind"] == "one-packet"
        self.exp_service = srv["service_dist"] == "exponential"
        self.rng = host.rng
        self._draws: list[float] = []
        self.start()

    def loop(self):
        env, h, c, st = self.env, self.host, self.costs, self.stats
        meter = self.meter
        t_stop, t_warm = meter.t_stop, meter.t_warm
        mux = self.mux
        epoll = mux == "epoll"
        if mux == "select":
            g_base, g_fd, g_ready = c.select_base, c.select_per_fd, c.select_per_ready
        elif mux == "poll":
            g_base, g_fd, g_ready = c.poll_base, c.poll_per_fd, c.poll_per_ready
        else:
            g_base, g_fd, g_ready = c.epoll_base, 0.0, c.epoll_per_ready
        ls = h.lsock
        acceptq = ls.acceptq
        ready = h.ready
        sst = h.sst
        rem = h.rem
        cpu = h.cpu
        policy = self.policy
        # The fast path skips both hooks: only for a policy that overrides neither
        plain_limit = is_plain_accept_limit(policy)
        max_conns = self.max_conns
        idle = self.idle_conns + 1
        wait_ready, write, accept, read, close = h.wait_ready, h.write, h.accept, h.read, h.close
        stretch = h._stretch
        one_packet = self.one_packet
        c_accept, c_sso, c_ctl, c_writev = c.accept, c.setsockopt, c.epoll_ctl, c.writev
        c_read, c_eof, c_close, c_eagain = c.read, c.read_eof, c.close, c.accept_eagain
        c_event, c_fd = c.user_per_event, c.fd_alloc_per_open
        # per-request user work: fixed, or exponential drawn in blocks of 4096
        m_service = c.user_per_request
        exp_service = self.exp_service and m_service > 0
        draws = self._draws
        rng = self.rng
        # Hot-loop bookkeeping lives in plain locals and is written back at the
        # snapshots (end of warm-up, stop) and around _write, the only other
        # place that charges these categories; each category's additions keep
        # their order, so the sums are bit-identical to Host.run's.  Every
        # category this loop charges is present from the start (0.0 if unused).
        # epoll_ctl shares the "epoll" category with epoll_wait, so it is
        # charged to a_get.
        sd = cpu.server_time
        for k in (mux, "accept", "setsockopt", "read", "user", "close"):
            sd.setdefault(k, 0.0)
        if one_packet:
            sd.setdefault("writev", 0.0)
        a_get, a_acc, a_sso, a_read, a_user, a_close = (sd[k] for k in (mux, "accept", "setsockopt", "read",
                                                                         "user", "close"))
        a_wv = sd.get("writev", 0.0)
        n_get = n_fds = n_aph = n_acc = n_eagain = n_wph = n_items = n_closed = 0
        closed_last = 0

        # The loop keeps its own clock ``t`` and hands control to SimPy only
        # when it has run ahead by a quantum: it is the only process that
        # acts, so fewer yields change nothing but the event count.  Each
        # system call is Host.run inlined: it starts when the kernel's queued
        # work is done and is stretched by every host event before its end.
        quantum = YIELD_QUANTUM
        t = t_env = env.now             # t_env: SimPy's clock (env.now) without the property call
        t_check = t_warm if meter.warm is None else t_stop
        while True:
            if t >= t_check:
                sd[mux], sd["accept"], sd["setsockopt"], sd["read"] = a_get, a_acc, a_sso, a_read
                sd["user"], sd["close"] = a_user, a_close
                if one_packet:
                    sd["writev"] = a_wv
                st["getevents_calls"] += n_get
                st["fds_returned"] += n_fds
                st["accept_phases"] += n_aph
                st["accepts"] += n_acc
                st["accepts_eagain"] += n_eagain
                st["work_phases"] += n_wph
                st["work_items"] += n_items
                st["closed"] += n_closed
                n_get = n_fds = n_aph = n_acc = n_eagain = n_wph = n_items = n_closed = 0
                meter.tick(t)
                if t >= t_stop:
                    if t > t_env:
                        yield env.timeout(t - t_env)
                    return
                t_check = t_stop
            # ---------------------------------------------------------------- getevents
            # At max_conns the listener leaves the interest set (else select
            # would report it readable forever and the loop would spin).
            n_open = h.n_open
            listening = n_open < max_conns
            if not ready and not (listening and acceptq):
                # to t_check, not t_stop: a wait spanning the end of warm-up stops there, so
                # the snapshot is of it and not of the first wake-up after it (sparse runs)
                t = wait_ready(t, t_check, listening)
                if t - t_env >= quantum:
                    yield env.timeout(t - t_env)
                    t_env = t
                continue                # re-check the clock, then getevents
            snapshot = list(ready)
            listen_ready = listening and bool(acceptq)
            n_snap = len(snapshot)
            n_ready = n_snap + 1 if listen_ready else n_snap
            # time-average of open connections, sampled at each getevents
            cost = g_base + g_fd * (n_open + idle) + g_ready * n_ready
            a_get += cost
            ev = c_event * n_ready              # the loop's own work per event returned
            a_user += ev
            kb = cpu.kbusy
            end = (t if t > kb else kb) + cost + ev
            t = end if h.nt >= end else stretch(end)
            n_get += 1
            n_fds += n_ready
            # ---------------------------------------------------------------- accept-phase
            if listen_ready:
                if plain_limit:
                    quota = policy.accept_limit
                    budget = INF
                else:
                    quota = policy.quota(PhaseView(len(acceptq), n_snap, h.n_open, closed_last,
                                                   policy.accept_limit))
                    if quota.__class__ not in (int, float) or not quota >= 1:
                        quota = checked_quota(policy, quota)
                    budget = policy.budget_s
                # the budget is of the server's own CPU: kernel packet work that preempts
                # the accept-phase stretches it in time but is not counted
                used = 0.0
                n = 0
                while n < quota and h.n_open < max_conns:
                    conn = accept(t)
                    if conn is None:
                        a_acc += c_eagain
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + c_eagain
                        t = end if h.nt >= end else stretch(end)
                        n_eagain += 1
                        break
                    # the new descriptor's allocation scans the ones open (seed 003)
                    c_acc = c_accept + c_fd * (h.n_open - 1 + idle)
                    a_acc += c_acc
                    a_sso += c_sso
                    kb = cpu.kbusy
                    end = (t if t > kb else kb) + (c_acc + c_sso)
                    t = end if h.nt >= end else stretch(end)
                    step = c_acc + c_sso
                    if epoll:
                        a_get += c_ctl
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + c_ctl
                        t = end if h.nt >= end else stretch(end)
                        step += c_ctl
                    n += 1
                    used += step
                    if used >= budget:
                        break
                n_aph += 1
                n_acc += n
            # ---------------------------------------------------------------- work-phase
            closed = 0
            for conn in snapshot:
                s = sst[conn]
                if s == S_READ:
                    r = read(conn)
                    if r == 1:
                        if exp_service:
                            if not draws:
                                draws.extend(rng.exponential(m_service, size=4096).tolist())
                                draws.reverse()
                            svc = draws.pop()
                        else:
                            svc = m_service
                        a_read += c_read
                        a_user += svc
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + (c_read + svc)
                        t = end if h.nt >= end else stretch(end)
                        if epoll:
                            a_get += c_ctl
                            kb = cpu.kbusy
                            end = (t if t > kb else kb) + c_ctl
                            t = end if h.nt >= end else stretch(end)
                    elif r == 0:
                        a_read += c_eof
                        a_close += c_close
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + (c_eof + c_close)
                        t = end if h.nt >= end else stretch(end)
                        close(t, conn)
                        closed += 1
                    else:
                        a_read += c_eof                 # EAGAIN costs like a short read
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + c_eof
                        t = end if h.nt >= end else stretch(end)
                elif s == S_WRITE:
                    if one_packet:
                        nbytes = rem[conn]
                        a_wv += c_writev
                        kb = cpu.kbusy
                        end = (t if t > kb else kb) + c_writev
                        t = end if h.nt >= end else stretch(end)
                        write(t, conn, nbytes)
                        if epoll and sst[conn] == S_READ:
                            a_get += c_ctl
                            kb = cpu.kbusy
                            end = (t if t > kb else kb) + c_ctl
                            t = end if h.nt >= end else stretch(end)
                    else:
                        sd["setsockopt"], sd[mux] = a_sso, a_get
                        t = self._write(t, conn)
                        a_sso, a_get = sd["setsockopt"], sd[mux]
            n_items += n_snap
            n_wph += 1
            n_closed += closed
            closed_last = closed
            if not plain_limit:
                policy.work_phase_done(closed, n_snap)
            if t - t_env >= quantum:
                yield env.timeout(t - t_env)
                t_env = t

    def _write(self, t, conn):
        """One step of a file reply (one-packet replies are written inline in the loop)."""
        h, c = self.host, self.costs
        size = h.reply_size(conn)
        first = h.rem[conn] == size
        if first:
            t = h.run(t, c.setsockopt, "setsockopt")     # TCP_CORK
            t = h.run(t, c.write, "write")               # header
        chunk = min(h.rem[conn], h.send_space(t, conn))
        t = h.run(t, c.sendfile + c.sendfile_per_kb * (chunk / 1024.0), "sendfile")
        k = h.reply_kernel_cost(conn, chunk)
        left = h.write(t, conn, chunk)
        t = h.run_kernel(t, k)
        if left == 0:
            t = h.run(t, c.setsockopt, "setsockopt")     # TCP_UNCORK
        if self.mux == "epoll" and h.sst[conn] == S_READ:
            t = h.run(t, c.epoll_ctl, "epoll")
        return t

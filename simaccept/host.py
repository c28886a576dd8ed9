"""The server host as the server sees it: kernel, NICs and the clients behind them.

Domain model: everything that happens outside the server process (packets
arriving, the listen socket's decisions, client retransmissions and
timeouts, replies leaving the NICs) is a *host event*.  Host events are not
SimPy events: they are processed lazily, in time order, whenever the server
process asks the host to run a CPU operation (:meth:`Host.run`) or to block
until something is ready (:meth:`Host.wait_ready`).  That is how kernel work
preempts the server without one scheduled event per packet (simaccept.cpu).
Packets that arrive while kernel work is still running join that softirq run;
a packet that finds the kernel idle starts a new one and pays
``k_softirq_run`` (how well the server's timing lets packets batch).

Event sources, merged by time:

* the arrival stream (first SYN of connection i, NumPy-drawn, sorted),
* the first deadlines (first SYN + timeout, sorted the same way; with
  ``timeout_from = "connect"`` an established connection's deadline is
  request issued + timeout, later, and goes on the heap when its first
  deadline finds it still in flight),
* the handshake ACKs (SYN queued + one round trip; FIFO, already sorted),
* a heap for the rest (retransmissions, FINs, later requests, timers).

Connection state lives in flat per-connection lists (struct of arrays),
which is also what the per-connection records are built from (Ciw style:
one row per connection; metrics are computed from the rows).
"""
from __future__ import annotations

import collections
import heapq
import math
import random

from .clients import arrival_times
from .costs import CostModel
from .cpu import CPU
from .kernel import PROFILES, Drop, ListenSocket, SynVerdict

_QUEUED, _DROPPED = SynVerdict.QUEUED, SynVerdict.DROPPED
from .network import make_nics
from .workloads import make_workload

INF = math.inf

# kernel-side state of a connection
K_NONE, K_SYNQ, K_COOKIE, K_ACCEPTQ, K_OPEN, K_CLOSED, K_DEAD = range(7)
# server-side interest
S_NONE, S_READ, S_WRITE = range(3)
# client outcome
O_INFLIGHT, O_COMPLETED, O_TIMEDOUT, O_ABANDONED = range(4)
OUTCOME_NAMES = ("in_flight", "completed", "timed_out", "abandoned")

# heap event kinds
E_SYN, E_ACK_DUP, E_DATA_RETX, E_SYNACK_TIMER, E_FIN, E_REQ, E_WRITABLE, E_DEADLINE = range(8)

# net.ipv4.tcp_retries2: an open socket's retransmissions of unacknowledged data
_RETRIES2 = 15


class Host:
    """Kernel + network + clients of one run.  See the module docstring."""

    def __init__(self, sc, rng, costs: CostModel, t_stop: float):
        kern = sc["kernel"]
        prof = PROFILES[kern["profile"]]
        self.profile = prof
        self.lsock = ListenSocket(prof, kern["backlog"], kern["syncookies"],
                                  kern["somaxconn"], kern["max_syn_backlog"])
        self.synack_retries = prof.synack_retries if kern["synack_retries"] < 0 else kern["synack_retries"]
        self.synack_rto = prof.synack_rto
        self._prune_acked = prof.synack_prune_acked
        cl = sc["client"]
        self.syn_rto = prof.syn_rto if cl["syn_rto"] < 0 else cl["syn_rto"]
        self.syn_retries = prof.syn_retries
        self._syn_off = [0.0] + [prof.syn_send_offset(k, self.syn_rto) for k in range(1, prof.syn_retries + 1)]
        self.data_rto = cl["data_rto"]
        # A client that closes with its request unanswered leaves an orphan in FIN_WAIT_1 that
        # goes on sending the request (the FIN merged in) until this many retransmissions in
        # all: tcp_orphan_retries, whose 0 both kernels read as 8 (tcp_orphan_retries(), 2.4
        # and 6.x).  A packet trace of a 2.4.25 client (linux-kernel, 29 Apr 2004) shows the
        # request at +0.21, 0.63, 1.47, 3.15, 6.5, 13.2 and 26.7 s.
        # Off by default (client.orphans): the shipped profiles were fitted without it, and it
        # moves them (docs/known-defects.md, *Found on 6 Dec 2026*).
        self.orphans = cl["orphans"]
        self.orphan_retries = 8 if cl["orphan_retries"] < 0 else cl["orphan_retries"]
        self.timeout = cl["timeout"]
        # The client acts on a connect deadline timer_lag late: the kernel goes on
        # retransmitting its SYN until then, and closes the socket only then.
        self.lag = cl["timer_lag_ms"] / 1000.0
        self.close_after = self.timeout + self.lag
        # The connect race (docs/background/connect-race.md): a retransmitted SYN leaves up
        # to one clients'-kernel tick early, and the client reaches an established socket up
        # to one loop late.  Its own stream, spawned from the run's seed, so runs without
        # the race draw exactly what they drew before it existed.
        self.syn_tick = cl["syn_tick_ms"] / 1000.0
        self.loop = cl["loop_ms"] / 1000.0
        self._race = None
        if self.syn_tick or self.loop:
            state = sc.seed_sequence().spawn(1)[0].generate_state(4)
            self._race = random.Random(int.from_bytes(state.tobytes(), "little"))
        self.restart_at_connect = cl["timeout_from"] == "connect"
        self.think = cl["think_ms"] / 1000.0
        self.req_delay = cl["request_delay_ms"] / 1000.0
        net = sc["network"]
        self.nics = make_nics(net["nics"], net["bandwidth_mbps"], net["delay_ms"])
        self.delay = net["delay_ms"] / 1000.0
        self.mss = net["mss"]
        self.sndbuf = sc["server"]["sndbuf"]
        # A reply's chunks the client may not have acknowledged yet: conn -> [(first
        # byte leaves the NIC, last byte leaves, bytes), ...], oldest first.  Only while
        # a reply is part-written: the client's next request acknowledges the whole reply.
        self.unacked: dict[int, list] = {}
        self.ack_clocked = sc["server"]["sndbuf_freed"] == "acked"
        self.cpu = CPU()
        self.costs = costs
        self.rng = rng
        self.t_stop = t_stop

        wl = make_workload(sc["workload"])
        self.workload = wl
        conn_rate = sc["workload"]["rate"] / wl.requests_per_conn_mean
        self.conn_rate = conn_rate
        t_arr = arrival_times(rng, conn_rate, t_stop, sc["workload"]["arrivals"], cl["hosts"])
        nreq, sizes = wl.draw(rng, len(t_arr))
        n = len(t_arr)
        self.n = n
        self.t0 = t_arr.tolist()
        self.nreq = nreq.tolist()
        self.sizes = sizes.tolist()
        off = [0] * n
        acc = 0
        for i, k in enumerate(self.nreq):
            off[i] = acc
            acc += k
        self.req_off = off
        self.nic_of = [i % len(self.nics) for i in range(n)]

        # per-connection state (struct of arrays)
        self.kst = [K_NONE] * n
        self.young = [False] * n
        self.acked = [False] * n
        self.synack_k = [0] * n
        self.syn_k = [0] * n
        self.syn_phase = [-1.0] * n if self.syn_tick else None
        self.t_est = [-1.0] * n          # client established (SYN-ACK received)
        self.data_k = [0] * n
        self.retx_due = [-1.0] * n      # when the armed retransmission arrives; -1 if none is armed
        self.got_req = [False] * n      # the first request reached the server's socket
        self.data_in = [False] * n       # current request is in the server socket
        self.eof = [False] * n
        self.outcome = [O_INFLIGHT] * n
        self.sst = [S_NONE] * n
        self.rq = [0] * n                # index of the current request
        self.rem = [0] * n               # reply bytes still to write
        self.t_req = [-1.0] * n          # when the client sent the current request
        self.dl = [0.0] * n              # client's current deadline
        self.t_acc = [-1.0] * n
        self.t_closed = [-1.0] * n       # the server's close() returned: open from t_acc to here
        self.t_done = [-1.0] * n         # last reply received / gave up
        self.no_req = [False] * n        # established after its deadline: closed without a request
        self.replies = [0] * n

        # per-request results: (time reply fully received, response seconds)
        self.resp_t: list[float] = []
        self.resp_v: list[float] = []

        self.ready: dict[int, None] = {}   # accepted conns ready for their interest
        self.n_open = 0
        self.accepted_dead = 0             # accepted after the client gave up

        # event sources
        self.ai = 0                         # next first-SYN
        self.di = 0                         # next first deadline
        self.ackq: collections.deque = collections.deque()
        self.heap: list = []
        self.seq = 0
        self.k_run = costs.k_softirq_run
        self.kend = -INF                    # when the current softirq run ends
        self.softirq_runs = 0
        self.nt = INF
        self.nsrc = -1
        self._recompute_next()

    # ------------------------------------------------------------------ events
    def _push(self, t, kind, c):
        self.seq += 1
        heapq.heappush(self.heap, (t, self.seq, kind, c))
        if t < self.nt:
            self.nt = t
            self.nsrc = 3

    def _recompute_next(self) -> None:
        """Cache the earliest pending event time (and which source holds it)."""
        d = self.delay
        ai, di, n = self.ai, self.di, self.n
        t0 = self.t0
        best, src = INF, -1
        if ai < n:
            best, src = t0[ai] + d, 0
        if di < n:
            # A finished connection's deadline would be ignored: skip it here.
            out = self.outcome
            while di < n and out[di] != O_INFLIGHT:
                di += 1
            self.di = di
            if di < n:
                td = t0[di] + self.close_after
                if td < best:
                    best, src = td, 1
        ackq = self.ackq
        if ackq and ackq[0][0] < best:
            best, src = ackq[0][0], 2
        heap = self.heap
        if heap and heap[0][0] < best:
            best, src = heap[0][0], 3
        self.nt = best
        self.nsrc = src

    def _process_next(self) -> float:
        """Process the earliest event (time ``self.nt``); return its kernel cost.

        The cache (nt, nsrc) is kept exact: recomputed after every event and
        lowered by every push with a strict ``<``, so ties go to the sources in
        the fixed order arrivals, deadlines, handshake ACKs, heap.
        """
        best = self.nt
        src = self.nsrc
        if src == 0:
            ai = self.ai
            self.ai = ai + 1
            cost = self._syn(best, ai)
        elif src == 1:
            di = self.di
            self.di = di + 1
            cost = self._deadline(best, di, first=True)
        elif src == 2:
            _, c = self.ackq.popleft()
            if self.outcome[c] == O_ABANDONED:
                cost = self._rst_to_synack(c)
            else:
                cost = self._ack(best, c, not self.req_delay and not self.no_req[c], False, True)
        else:
            _, _, kind, c = heapq.heappop(self.heap)
            cost = self._dispatch(best, kind, c)
        if cost > 0.0:
            # Softirq runs: a packet that finds the kernel idle starts a run and pays
            # its fixed cost; one arriving while a run is busy joins it.  Kernel work
            # preempts the server, so run boundaries follow from arrival times and
            # costs alone (packets are processed in time order).
            if best >= self.kend:
                self.softirq_runs += 1
                cost += self.k_run
                self.kend = best + cost
            else:
                self.kend += cost
        # _recompute_next, inlined (keep the two in step): this runs once per host
        # event, and the call alone cost 11 % of the M/M/1/K benchmark (9.74 s vs 8.65 s).
        ai, di, n = self.ai, self.di, self.n
        t0 = self.t0
        best, src = INF, -1
        if ai < n:
            best, src = t0[ai] + self.delay, 0
        if di < n:
            out = self.outcome
            while di < n and out[di] != O_INFLIGHT:
                di += 1
            self.di = di
            if di < n:
                td = t0[di] + self.close_after
                if td < best:
                    best, src = td, 1
        ackq = self.ackq
        if ackq and ackq[0][0] < best:
            best, src = ackq[0][0], 2
        heap = self.heap
        if heap and heap[0][0] < best:
            best, src = heap[0][0], 3
        self.nt = best
        self.nsrc = src
        return cost

    def _dispatch(self, t, kind, c):
        if kind == E_SYN:
            return self._syn(t, c)
        if kind == E_ACK_DUP:
            return self._ack(t, c, False, False)
        if kind == E_DATA_RETX:
            if t != self.retx_due[c]:
                return 0.0          # superseded: a delayed request the client closed before sending
            self.retx_due[c] = -1.0
            return self._data_retx(t, c)
        if kind == E_SYNACK_TIMER:
            return self._synack_timer(t, c)
        if kind == E_FIN:
            return self._fin(t, c)
        if kind == E_REQ:
            return self._req(t, c)
        if kind == E_WRITABLE:
            if self.kst[c] == K_OPEN and self.sst[c] == S_WRITE:
                self.ready[c] = None
            return 0.0
        if kind == E_DEADLINE:
            return self._deadline(t, c, first=False)
        raise AssertionError(kind)

    # ------------------------------------------------------------ kernel rules
    def _syn(self, t, c):
        if self.outcome[c] != O_INFLIGHT or self.kst[c] != K_NONE:
            return 0.0
        self.syn_k[c] += 1
        v = self.lsock.on_syn()
        cs = self.costs
        if v is not _DROPPED:
            queued = v is _QUEUED
            self.kst[c] = K_SYNQ if queued else K_COOKIE
            self.young[c] = queued
            d = self.delay
            self.t_est[c] = t + d
            # the client's kernel completes the handshake whatever the client then does
            self.ackq.append((t + 2 * d, c))
            if t + 2 * d < self.nt:
                self.nt = t + 2 * d
                self.nsrc = 2
            seen = t + d
            if self.loop and seen + self.loop > self.t0[c] + self.timeout:
                # httperf cancels the deadline only when its loop reaches the socket
                # (core.c core_loop); drawn only where the draw can decide the race.
                seen += self._race.random() * self.loop
            if (self.lag or self.loop) and seen > self.t0[c] + self.timeout:
                # Established after the deadline, before the client acted on it (or just
                # before it, and the client got to the socket too late): the handshake
                # completes in its kernel, the client closes without a request.
                self.no_req[c] = True
                return cs.k_syn
            self.t_req[c] = t + d          # the request follows the ACK at once
            if self.req_delay:
                # slow client: the request leaves req_delay after the ACK (it
                # arrives as a segment of its own, like a retransmission would)
                self.t_req[c] = t + d + self.req_delay
                self.retx_due[c] = t + 2 * d + self.req_delay
                self._push(t + 2 * d + self.req_delay, E_DATA_RETX, c)
            if self.restart_at_connect:
                # httperf: the connect timer is cancelled at establishment and a new one
                # armed when the request is issued.  It is later than the first
                # deadline, so it goes on the heap only when that one fires with the
                # connection still in flight (_deadline): a push per connection cost
                # 19 % of the M/M/1/K benchmark.
                self.dl[c] = self.t_req[c] + self.timeout
            return cs.k_syn
        # dropped: the client retransmits while its deadline allows
        k = self.syn_k[c]
        if k <= self.syn_retries:
            t_send = self.t0[c] + self._syn_off[k]
            if self.syn_tick:
                # The timer runs on the tick that makes jiffies reach jiffies + rto (Linux
                # 2.4's tcp_reset_xmit_timer): the first retransmission leaves early by the
                # first SYN's phase within its tick, and the later ones, armed on a tick,
                # keep that offset.
                ph = self.syn_phase[c]
                if ph < 0.0:
                    ph = self.syn_phase[c] = self._race.random() * self.syn_tick
                t_send -= ph
            if t_send < self.t0[c] + self.close_after:
                self._push(t_send + self.delay, E_SYN, c)
        return cs.k_syn_drop

    def _ack(self, t, c, data, fin, first=False):
        """An ACK-bearing segment for a request or cookie: try to complete the handshake."""
        s = self.kst[c]
        cs = self.costs
        if s == K_SYNQ or s == K_COOKIE:
            ls = self.lsock
            if ls.on_ack(c, s == K_SYNQ, self.young[c]):
                self.young[c] = False
                self.kst[c] = K_ACCEPTQ
                cost = cs.k_ack_establish
                if data:
                    self.data_in[c] = True
                    cost += cs.k_data_rx
                    self.got_req[c] = True
                if fin and (data or not self.orphans or not self._request_owed(c)):
                    self.eof[c] = True
                    cost += cs.k_fin_rx
                elif not data:
                    # The request comes with the next retransmission; a FIN beyond it is held
                    # out of order by the receiver until it does (tcp_data_queue's ofo queue).
                    self._sched_data_retx(c)
                    if fin:
                        cost += cs.k_fin_rx
                return cost
            # ListenOverflow: the request stays; the SYN-ACK timer will resend.
            # A first attempt that carries the request is two segments (the ACK, then
            # the request right behind it); both meet the full queue and both are
            # counted.  A first ACK without it (a delayed request, or none) is one: the
            # request counts when it arrives (_data_retx).  k_ack_overflow is charged
            # once per attempt, as every profile was fitted; per segment would be
            # truer, and moves the fitted μserver rows (docs/known-defects.md).
            if first and data:
                ls.drops[Drop.LISTEN_OVERFLOW] += 1
            if s == K_SYNQ and not self.acked[c]:
                self.acked[c] = True
                self._push(self.t_est[c] - self.delay + self.synack_rto, E_SYNACK_TIMER, c)
            if data or (fin and self.orphans):
                self._sched_data_retx(c)
            return cs.k_ack_overflow
        if s == K_ACCEPTQ or s == K_OPEN:
            if data and self._request_owed(c):
                return self._deliver(c)
            return cs.k_data_rx
        return 0.0

    def _rst_to_synack(self, c):
        """The client gave up before its SYN-ACK arrived: its kernel answers the SYN-ACK with
        a reset instead of the ACK, and the request (if the SYN got one) leaves the SYN queue.
        Arrives when the ACK would have (the SYN-ACK's round trip)."""
        s = self.kst[c]
        if s == K_SYNQ:
            self.lsock.remove_request(self.young[c])
            self.young[c] = False
        elif s != K_COOKIE:
            return 0.0
        self.kst[c] = K_DEAD
        return self.costs.k_rst_rx

    def _request_owed(self, c) -> bool:
        """Has the client sent a first request the server's socket has not received?"""
        return not self.got_req[c] and not self.no_req[c]

    def _fin_held(self, c) -> bool:
        """With client.orphans: is the closed client's FIN waiting behind its request?  It goes
        alone only while the congestion window has room for it.  Once the request has been sent
        again (its RTO set cwnd to 1) the unacknowledged request fills the window:
        tcp_send_fin merges the FIN only into a segment not yet sent, so it gets one of its
        own, which the cwnd test (tcp_write_xmit; 2.4's tcp_snd_test) holds until the request
        is acknowledged.  The orphan's retransmissions of the request carry it."""
        return self.orphans and self._request_owed(c) and self.t_done[c] >= self.t_req[c] + self.data_rto

    def _orphan_gone(self, c) -> float:
        """When a timed-out client's orphan gives up: one backed-off RTO after its last
        retransmission (tcp_write_timeout), without a reset; after that a resent SYN-ACK
        finds no socket and is answered with one."""
        return self.t_req[c] + self.data_rto * ((1 << (self.orphan_retries + 1)) - 1)

    def _sched_data_retx(self, c):
        """Arm the retransmission of what the client sent and the server has not acknowledged:
        its first request, and once it has closed (an orphan, with client.orphans) its FIN."""
        if not self.orphans:
            self._sched_data_retx_until_deadline(c)
            return
        out = self.outcome[c]
        if self.retx_due[c] >= 0.0 or out == O_COMPLETED or out == O_ABANDONED:
            return
        if out == O_INFLIGHT and self.no_req[c]:
            return                  # established past its deadline: the client sends nothing until it acts
        k = self.data_k[c] + 1
        if k > (self.orphan_retries if out != O_INFLIGHT else _RETRIES2):
            return
        # No Karn penalty: Linux seeds a new connection's RTT from the route's
        # cached metric (tcp_init_metrics), and every client talks to one server.
        rto = self.data_rto
        # counted from the first send (the request's: later than the handshake by the
        # client's request delay, if any; a FIN sent alone, from the close)
        self._arm_retx(c, k, self.t_req[c] + rto * ((1 << k) - 1))

    def _sched_data_retx_until_deadline(self, c):
        """Without client.orphans: the request's retransmissions stop at the client's deadline."""
        if self.retx_due[c] >= 0.0 or self.outcome[c] != O_INFLIGHT or self.no_req[c]:
            return
        k = self.data_k[c] + 1
        t_send = self.t_req[c] + self.data_rto * ((1 << k) - 1)
        if t_send < self.dl[c] or (self.dl[c] == 0.0 and t_send < self.t0[c] + self.close_after):
            self._arm_retx(c, k, t_send)

    def _arm_retx(self, c, k, t_send):
        """The client's k-th retransmission of its request (or orphan's FIN) leaves at t_send."""
        self.data_k[c] = k
        self.retx_due[c] = t_send + self.delay
        self._push(t_send + self.delay, E_DATA_RETX, c)

    def _data_retx(self, t, c):
        if not self.orphans:
            if self.outcome[c] != O_INFLIGHT:
                return 0.0
            s = self.kst[c]
            if s == K_SYNQ or s == K_COOKIE:
                return self._ack(t, c, True, False)
            if (s == K_ACCEPTQ or s == K_OPEN) and not self.data_in[c] and self.rq[c] == 0:
                return self._deliver(c)
            return 0.0
        out = self.outcome[c]
        if out == O_COMPLETED or out == O_ABANDONED:
            return 0.0
        orphan = out != O_INFLIGHT
        if orphan and self.data_k[c] > self.orphan_retries:
            return 0.0              # armed before the close, due after the orphan's last
        s = self.kst[c]
        if s == K_SYNQ or s == K_COOKIE:
            return self._ack(t, c, not self.no_req[c], orphan)
        if s == K_ACCEPTQ or s == K_OPEN:
            cost = 0.0
            if self._request_owed(c):
                cost = self._deliver(c)
            if orphan and not self.eof[c]:
                cost += self._fin(t, c)
            return cost
        return 0.0

    def _deliver(self, c):
        self.got_req[c] = True
        self.data_in[c] = True
        if self.kst[c] == K_OPEN and self.sst[c] == S_READ:
            self.ready[c] = None
        return self.costs.k_data_rx

    def _synack_timer(self, t, c):
        if self.kst[c] != K_SYNQ:
            return 0.0
        ls = self.lsock
        if self.synack_k[c] < (ls.synack_retries_now(self.synack_retries) if self._prune_acked
                                else self.synack_retries):
            self.synack_k[c] += 1
            if self.young[c]:
                ls.synack_retransmitted(True)
                self.young[c] = False
            cost = self.costs.k_synack_retx
            if self.outcome[c] == O_INFLIGHT:
                self._push(t + 2 * self.delay, E_ACK_DUP, c)     # the client re-ACKs
            elif self.outcome[c] == O_TIMEDOUT and (not self.orphans or t + self.delay < self._orphan_gone(c)):
                # Established, then timed out: the client's socket is in FIN_WAIT_1, not
                # gone.  The resent SYN-ACK is an old duplicate to it, answered with an
                # ACK (Linux 6: a challenge ACK) that tcp_check_req tries against the
                # accept queue again; a FIN on its way makes the retry the FIN, and one held
                # behind the request (_fin_held) leaves the ACK bare.
                self._push(t + 2 * self.delay, E_ACK_DUP if self._fin_held(c) else E_FIN, c)
            else:
                # the client has closed its socket: it answers with a reset
                ls.remove_request(False)
                self.kst[c] = K_DEAD
                return cost + self.costs.k_rst_rx
            self._push(t + self.synack_rto * (1 << self.synack_k[c]), E_SYNACK_TIMER, c)
            return cost
        ls.remove_request(self.young[c])
        self.young[c] = False
        self.kst[c] = K_DEAD
        return 0.0

    def _deadline(self, t, c, first):
        if self.outcome[c] != O_INFLIGHT:
            return 0.0
        if first and self.dl[c] != 0.0:
            # A later deadline applies: a later request's, already on the heap, or
            # the connect-restarted one, which is not (a second entry at the same
            # time, when both apply, is harmless: whichever runs second finds it
            # decided).  Only connections still in flight a whole timeout after
            # their first SYN get here.
            if not self.restart_at_connect:
                return 0.0
            if self.dl[c] > t:
                self._push(self.dl[c], E_DEADLINE, c)
                return 0.0
            # The restarted deadline has passed already: this timer fires timer_lag_ms
            # late, which can be longer than the handshake took.  Pushed, it would be
            # processed before events already handled; the client acts now.
        elif not first and t != self.dl[c]:
            return 0.0              # stale
        est = self.t_est[c]
        self.outcome[c] = O_TIMEDOUT if 0.0 <= est <= t else O_ABANDONED
        self.t_done[c] = t
        s = self.kst[c]
        # established at the client, not yet at the server: the client has a socket to close
        client_est = (s == K_SYNQ or s == K_COOKIE) and 0.0 <= est <= t
        if not self.orphans:
            if client_est or s == K_ACCEPTQ or s == K_OPEN:
                self._push(t + self.delay, E_FIN, c)
            return 0.0
        if 0.0 <= est <= t and self.rq[c] == 0 and (self.no_req[c] or self.t_req[c] > t):
            # Closed before its request left (established past the deadline, or a delayed
            # request not yet due): the FIN goes alone, and the orphan resends it from now.
            self.no_req[c] = True
            self.t_req[c] = t
            self.data_k[c] = 0
            self.retx_due[c] = -1.0             # a delayed request's send, now never made
        if client_est or s == K_ACCEPTQ or s == K_OPEN:
            if not self._fin_held(c):
                self._push(t + self.delay, E_FIN, c)
            if client_est or self._request_owed(c):
                self._sched_data_retx(c)
        return 0.0

    def _fin(self, t, c):
        s = self.kst[c]
        if s == K_SYNQ or s == K_COOKIE:
            return self._ack(t, c, False, True)
        if s == K_ACCEPTQ or s == K_OPEN:
            if not self.orphans or not self._request_owed(c):
                # else the FIN lies beyond the missing request: held out of order until
                # the orphan sends the request again
                self.eof[c] = True
                if s == K_OPEN and self.sst[c] == S_READ:
                    self.ready[c] = None
            return self.costs.k_fin_rx
        return self.costs.k_rst_rx

    def _req(self, t, c):
        if self.kst[c] != K_OPEN or self.outcome[c] != O_INFLIGHT:
            return 0.0
        return self._deliver(c)

    # --------------------------------------------------------------- CPU use
    def run(self, t0: float, cost: float, category: str) -> float:
        """Run a server operation of CPU ``cost`` from ``t0``; return when it ends.

        Kernel work queued before ``t0`` runs first; kernel work arriving
        during the operation preempts it and stretches it.
        """
        cpu = self.cpu
        st = cpu.server_time
        st[category] = st.get(category, 0.0) + cost
        kb = cpu.kbusy
        end = (t0 if t0 > kb else kb) + cost
        if self.nt >= end:          # nothing arrives during the operation
            return end
        return self._stretch(end)

    def run2(self, t0: float, cost_a: float, cat_a: str, cost_b: float, cat_b: str) -> float:
        """Two back-to-back operations (e.g. accept + setsockopt) as one preemptible run."""
        cpu = self.cpu
        st = cpu.server_time
        st[cat_a] = st.get(cat_a, 0.0) + cost_a
        st[cat_b] = st.get(cat_b, 0.0) + cost_b
        kb = cpu.kbusy
        end = (t0 if t0 > kb else kb) + (cost_a + cost_b)
        if self.nt >= end:
            return end
        return self._stretch(end)

    def _stretch(self, end: float) -> float:
        """Process the host events that arrive before ``end``, each pushing it later."""
        kt = 0.0
        process = self._process_next
        t_stop = self.t_stop
        while self.nt < end:
            kc = process()
            end += kc
            kt += kc
            if end > t_stop:
                break
        if kt:
            k = self.cpu.kernel_time
            k["kernel_net"] = k.get("kernel_net", 0.0) + kt
        return end

    def run_kernel(self, t0: float, cost: float) -> float:
        """Kernel work done on the server's behalf (e.g. segmenting and the
        client's ACKs of a reply): takes CPU like a server operation but is
        accounted as kernel_net."""
        end = self.run(t0, cost, "_k")
        st = self.cpu.server_time
        st["_k"] -= cost
        k = self.cpu.kernel_time
        k["kernel_net"] = k.get("kernel_net", 0.0) + cost
        return end

    def wait_ready(self, t: float, limit: float, listen: bool = True) -> float:
        """The server blocks at ``t``: process events until something it waits for is ready.

        Returns the time the server can run again (after the kernel work that
        woke it), or ``limit``.
        """
        cpu = self.cpu
        ls = self.lsock
        last = t
        ready, acceptq = self.ready, ls.acceptq
        process = self._process_next
        while not ready and not (listen and acceptq):
            te = self.nt
            if te >= limit:
                return limit
            kc = process()
            last = te
            if kc:
                cpu.charge_kernel(te, kc)
        # the server runs once the waking packet (and any kernel backlog) is done
        return cpu.kbusy if cpu.kbusy > last else last

    def wait_next(self, t: float, limit: float) -> float:
        """The server blocks at ``t`` until the next event, whatever it brings: process it.

        Returns the time the server can run again (after the kernel work that event
        made), or ``limit`` when there is none before it.  For a server whose own test of
        readiness is narrower than :meth:`wait_ready`'s, which returns at once while
        anything at all is ready.
        """
        te = self.nt
        if te >= limit:
            return limit
        kc = self._process_next()
        cpu = self.cpu
        if kc:
            cpu.charge_kernel(te, kc)
        last = te if te > t else t
        return cpu.kbusy if cpu.kbusy > last else last

    # --------------------------------------------------------- server actions
    def accept(self, t: float):
        """accept(): the next established connection (now open), or None."""
        c = self.lsock.accept()
        if c is None:
            return None
        self.kst[c] = K_OPEN
        self.sst[c] = S_READ
        self.t_acc[c] = t
        self.n_open += 1
        if self.outcome[c] != O_INFLIGHT:
            self.accepted_dead += 1
        if self.data_in[c] or self.eof[c]:
            self.ready[c] = None
        return c

    def read(self, c: int) -> int:
        """read(): 1 = a request, 0 = EOF, -1 = EAGAIN."""
        if self.data_in[c]:
            self.data_in[c] = False
            self.sst[c] = S_WRITE
            self.rem[c] = self.sizes[self.req_off[c] + self.rq[c]]
            return 1              # writable at once: stays in the ready set
        if self.eof[c]:
            return 0
        self.ready.pop(c, None)
        return -1

    def reply_size(self, c: int) -> int:
        return self.sizes[self.req_off[c] + self.rq[c]]

    def reply_kernel_cost(self, c: int, nbytes: int) -> float:
        """Kernel CPU (s) for sending the next ``nbytes`` of ``c``'s reply (call before
        :meth:`write`): ``k_tx_per_segment`` per segment of the chunk, and ``k_ack_rx`` per
        pure ACK the client returns.

        A receiver ACKs at least every second full-sized segment (RFC 1122 4.2.3.2; Linux's
        __tcp_ack_snd_check), so a reply of n segments draws n // 2 ACKs; an odd last
        segment's ACK waits (delayed ACK) and rides on the client's next request or FIN,
        whose cost is already charged.  ACKs are counted over the whole reply, as TCP_CORK
        and sendfile coalesce across the server's chunks.  Not modelled: Linux's quick-ACK
        mode, which ACKs each of the first segments of a connection.
        """
        mss, cs = self.mss, self.costs
        sent = self.reply_size(c) - self.rem[c]
        acks = (-(-(sent + nbytes) // mss) >> 1) - (-(-sent // mss) >> 1)
        return cs.k_tx_per_segment * -(-nbytes // mss) + cs.k_ack_rx * acks

    def _unacked_bytes(self, t: float, c: int) -> float:
        """Bytes of ``c``'s reply queued in its send buffer at ``t``: written, not yet
        acknowledged.  A byte is acknowledged one round trip after it left the NIC, read
        per byte along each chunk's time on the wire (the client ACKs every second
        segment, so this runs ahead of the kernel by two segments at most)."""
        rtt = 2.0 * self.delay
        q = 0.0
        for start, end, n in self.unacked.get(c, ()):
            x = t - rtt - start
            if x <= 0.0:
                q += n
            elif x < end - start:
                q += n * (1.0 - x / (end - start))
        return q

    def send_space(self, t: float, c: int) -> int:
        """Bytes a send call at ``t`` can queue on ``c``: the send buffer less what the
        client has not acknowledged (Linux charges ``wmem_queued`` until the ACK frees
        the skb, ``tcp_clean_rtx_queue``); at least one byte, so a call always moves.
        With ``server.sndbuf_freed = "sent"`` the whole buffer, every time."""
        if not self.ack_clocked:
            return self.sndbuf
        free = round(self.sndbuf - self._unacked_bytes(t, c), 6)    # not a rounding error's byte short
        return int(free) if free >= 1.0 else 1

    def _writable_at(self, c: int) -> float:
        """When ``c``'s send buffer is writable again by ``tcp_poll``'s rule: free space
        at least half of what is queued (``tcp_wspace >= tcp_min_write_space``, the
        same test that wakes a blocked writer and TUX's write-space callback), i.e.
        queued <= 2/3 of the buffer."""
        chunks = self.unacked[c]
        need = sum(n for _, _, n in chunks) - 2.0 * self.sndbuf / 3.0   # bytes to be ACKed
        if need <= 0.0:
            return -INF
        rtt = 2.0 * self.delay
        last = len(chunks) - 1
        for i, (start, end, n) in enumerate(chunks):
            # need < the bytes queued, so the last chunk holds what is left of it
            if need <= n or i == last:
                return start + rtt + (end - start) * (need / n)
            need -= n

    def write(self, t: float, c: int, nbytes: int) -> int:
        """The server hands ``nbytes`` of the current reply to the kernel at ``t``
        (at most :meth:`send_space`)."""
        nic = self.nics[self.nic_of[c]]
        free_at = nic.free_at
        tx_done = nic.transmit(t, nbytes, 66, self.mss)
        rem = self.rem
        left = rem[c] - nbytes
        rem[c] = left
        if left > 0:
            if not self.ack_clocked:
                self.ready.pop(c, None)
                self._push(tx_done, E_WRITABLE, c)
                return left
            # The rest waits for send-buffer space, which only the client's ACKs free:
            # how much the next call writes depends on how soon the server comes back.
            chunks = self.unacked.setdefault(c, [])
            chunks.append((free_at if free_at > t else t, tx_done, nbytes))
            if len(chunks) > 1 and chunks[0][1] + 2.0 * self.delay <= t:
                chunks[:] = [ch for ch in chunks if ch[1] + 2.0 * self.delay > t]
            self.ready.pop(c, None)
            wake = self._writable_at(c)
            self._push(wake if wake > t else t, E_WRITABLE, c)
            return left
        if c in self.unacked:
            del self.unacked[c]
        # reply complete
        d = self.delay
        t_recv = tx_done + d
        self.sst[c] = S_READ
        if not self.eof[c]:
            self.ready.pop(c, None)
        rq = self.rq[c] + 1
        self.rq[c] = rq
        if self.outcome[c] == O_INFLIGHT:
            dl = self.dl[c]
            deadline = dl if dl else self.t0[c] + self.timeout
            if t_recv <= deadline:
                self.replies[c] += 1
                self.resp_t.append(t_recv)
                self.resp_v.append(t_recv - self.t_req[c])
                t_next = t_recv + self.think                # the client acts after its think time
                if rq >= self.nreq[c]:
                    self.outcome[c] = O_COMPLETED
                    self.t_done[c] = t_recv
                    self._push(t_next + d, E_FIN, c)        # client closes
                else:
                    self.t_req[c] = t_next                  # next request
                    self.dl[c] = t_next + self.timeout
                    self._push(t_next + d, E_REQ, c)
                    self._push(self.dl[c], E_DEADLINE, c)
        return 0

    def close(self, t: float, c: int) -> None:
        self.t_closed[c] = t
        self.kst[c] = K_CLOSED
        self.sst[c] = S_NONE
        self.n_open -= 1
        self.ready.pop(c, None)
        if self.ack_clocked:
            self.unacked.pop(c, None)       # closed mid-reply: it never writes again

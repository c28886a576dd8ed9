"""The listening socket: a SYN queue, an accept queue, and the drop rules.

Domain model (thesis 2.3 and 5.1.1; kernel sources cited in
docs/background/queue-rules.md):

* A SYN that is admitted creates a *request* in the SYN queue and is answered
  with a SYN-ACK.  The client's final ACK moves the request to the accept
  queue as an established connection, where it waits for ``accept()``.
* Four drop categories (thesis 5.1.1):

  - **SynQFull**: the SYN queue is full when the SYN arrives.  With
    syncookies on the SYN is answered with a cookie and gets no queue entry
    (the thesis counts these as SynQFull); without cookies it is dropped.
  - **AcceptQFull**: the accept queue is full when the SYN arrives.  Linux
    2.4 drops only if more than one *young* request (no SYN-ACK retransmitted
    yet) is queued (``tcp_synq_young(sk) > 1``); Linux >= 4.10 drops
    unconditionally and counts it in ListenOverflows.
  - **DropRequest**: without syncookies, a SYN is dropped when fewer than a
    quarter of ``tcp_max_syn_backlog`` slots remain free (the "3/4 full"
    rule; "Kill the following clause, if you dislike this way").
  - **ListenOverflow**: the accept queue is full when the final ACK arrives.
    The ACK is ignored, the request stays (marked *acked*) and the SYN-ACK is
    retransmitted on its timer; any later ACK-bearing segment from the client
    (a data retransmission, the ACK answering a retransmitted SYN-ACK, or its
    FIN) tries again.

* The accept queue is full when it holds *more than* ``backlog`` entries
  (``ack_backlog > max_ack_backlog``), so it holds ``backlog + 1``.

A :class:`KernelProfile` fixes the sizes, timers and rule variants.  The
:class:`ListenSocket` applies them; it knows nothing about time or CPU, so
each rule can be trace-tested on its own (tests/simaccept/test_kernel.py).
"""
from __future__ import annotations

import collections
import dataclasses
import enum


class Drop(enum.IntEnum):
    """Why a SYN or final ACK was refused (thesis 5.1.1)."""

    SYNQ_FULL = 0
    ACCEPTQ_FULL = 1
    DROP_REQUEST = 2
    LISTEN_OVERFLOW = 3


class SynVerdict(enum.IntEnum):
    QUEUED = 0        # request queued, SYN-ACK sent
    COOKIE = 1        # SYN queue full, answered with a syncookie (no state kept)
    DROPPED = 2       # see ListenSocket.last_drop


# module-level aliases: attribute lookups on the enums cost per SYN
_QUEUED, _COOKIE, _DROPPED = SynVerdict.QUEUED, SynVerdict.COOKIE, SynVerdict.DROPPED
_SYNQ_FULL, _ACCEPTQ_FULL, _DROP_REQUEST = Drop.SYNQ_FULL, Drop.ACCEPTQ_FULL, Drop.DROP_REQUEST


@dataclasses.dataclass(frozen=True)
class KernelProfile:
    """Sizes, timers and rule variants of one kernel."""

    name: str
    somaxconn: int              # clamp on listen()'s backlog
    max_syn_backlog: int        # net.ipv4.tcp_max_syn_backlog
    synq_is_backlog: bool       # SYN queue limit = accept backlog (Linux >= 4.4)
    acceptq_young_rule: bool    # AcceptQFull only when > 1 young request (2.4)
    # the kernel's own net.ipv4.tcp_syncookies default: what a ListenSocket built without
    # a value uses.  A scenario always gives one (kernel.syncookies, default off for every
    # profile, as the thesis ran; realsys sets the sysctl from the same key).
    syncookies_default: bool
    syn_rto: float              # client's initial SYN RTO (s), doubles
    syn_retries: int
    synack_rto: float           # server's initial SYN-ACK RTO (s), doubles
    synack_retries: int
    synq_full_gt: bool = False  # SYN queue full at len > limit (6.18) instead of >=
    # SYN queue limit rounded up to a power of two >= 64 (2.4's tcp_listen_start sizes
    # max_qlen_log so; the 3/4 rule still reads tcp_max_syn_backlog itself)
    synq_pow2: bool = False
    syn_linear_timeouts: int = 0  # first N SYN retransmits one RTO apart (tcp_syn_linear_timeouts)
    # reqsk_timer_handler (Linux >= 4.4) expires an ACKed (ListenOverflowed) request after
    # thresh retransmissions like any other, and lowers thresh toward 2 while more than half
    # the listener's backlog is SYN queue and few of its requests are young.  2.4's
    # tcp_synack_timer keeps all tcp_synack_retries for an ACKed request.
    synack_prune_acked: bool = False

    def syn_send_offset(self, k: int, rto: float) -> float:
        """Offset from the first SYN of the k-th retransmission (k >= 1)."""
        lin = self.syn_linear_timeouts
        if k <= lin:
            return rto * k
        return rto * lin + rto * ((1 << (k - lin)) - 1)


PROFILES: dict[str, KernelProfile] = {
    # Thesis's server: Linux 2.4.20 (TCP_TIMEOUT_INIT = 3 s).
    "linux-2.4": KernelProfile("linux-2.4", somaxconn=128, max_syn_backlog=1024,
                               synq_is_backlog=False, acceptq_young_rule=True,
                               syncookies_default=False, syn_rto=3.0, syn_retries=5,
                               synack_rto=3.0, synack_retries=5, synq_pow2=True),
    # This machine's kernel family (6.18: TCP_TIMEOUT_INIT = 1 s, somaxconn 4096
    # since 5.4, tcp_max_syn_backlog = max(128, ehash/128) = 2048 here, SYN queue
    # test `>` since a 2025 patch, first 4 SYN retransmits linear).
    "linux-6": KernelProfile("linux-6", somaxconn=4096, max_syn_backlog=2048,
                             synq_is_backlog=True, acceptq_young_rule=False,
                             syncookies_default=True, syn_rto=1.0, syn_retries=6,
                             synack_rto=1.0, synack_retries=5, synq_full_gt=True,
                             syn_linear_timeouts=4, synack_prune_acked=True),
}


class ListenSocket:
    """SYN queue + accept queue of one listening socket, with drop counters.

    The SYN queue is tracked by counts (``synq_len``, ``young``); which
    requests are in it is the caller's business.  The accept queue is a FIFO
    of connection ids.
    """

    __slots__ = ("profile", "backlog", "syncookies", "max_syn_backlog", "synq_max",
                 "synq_len", "young", "acceptq", "drops", "cookies", "last_drop",
                 "synq_peak", "acceptq_peak", "_synq_gt", "_young_rule")

    def __init__(self, profile: KernelProfile, backlog: int, syncookies: bool | None = None,
                 somaxconn: int | None = None, max_syn_backlog: int | None = None):
        self.profile = profile
        smc = profile.somaxconn if somaxconn is None or somaxconn < 0 else somaxconn
        self.backlog = min(backlog, smc)          # listen() silently clamps
        self.syncookies = profile.syncookies_default if syncookies is None else syncookies
        self.max_syn_backlog = (profile.max_syn_backlog if max_syn_backlog is None or max_syn_backlog < 0
                                else max_syn_backlog)
        if profile.synq_is_backlog:
            self.synq_max = self.backlog
        elif profile.synq_pow2:
            # for (max_qlen_log = 6; ; max_qlen_log++) if ((1 << max_qlen_log) >= sysctl_max_syn_backlog) break;
            # Without syncookies the 3/4 rule keeps the queue below it; with them a SYN is
            # answered with a cookie only once this, not tcp_max_syn_backlog, is reached.
            self.synq_max = 1 << max(6, (self.max_syn_backlog - 1).bit_length())
        else:
            self.synq_max = self.max_syn_backlog
        self.synq_len = 0
        self.young = 0
        self.acceptq: collections.deque[int] = collections.deque()
        self.drops = [0, 0, 0, 0]                 # indexed by Drop
        self.cookies = 0
        self.last_drop: Drop | None = None
        self.synq_peak = 0
        self.acceptq_peak = 0
        self._synq_gt = profile.synq_full_gt
        self._young_rule = profile.acceptq_young_rule

    # -- predicates -----------------------------------------------------------
    def acceptq_full(self) -> bool:
        # ack_backlog > max_ack_backlog: the queue holds backlog + 1.
        return len(self.acceptq) > self.backlog

    def synq_full(self) -> bool:
        if self.profile.synq_full_gt:
            return self.synq_len > self.synq_max
        return self.synq_len >= self.synq_max

    def three_quarters_full(self) -> bool:
        m = self.max_syn_backlog
        return m - self.synq_len < (m >> 2)

    # -- packets ----------------------------------------------------------------
    def on_syn(self) -> SynVerdict:
        """A SYN arrives.  QUEUED: a request was added (caller tracks it).
        COOKIE: answered statelessly.  DROPPED: ``last_drop`` says why."""
        # The predicates above, inlined: this runs for every SYN.
        n = self.synq_len
        want_cookie = False
        if (n > self.synq_max) if self._synq_gt else (n >= self.synq_max):
            if self.syncookies:
                want_cookie = True
            else:
                self.drops[_SYNQ_FULL] += 1
                self.last_drop = _SYNQ_FULL
                return _DROPPED
        if len(self.acceptq) > self.backlog and (not self._young_rule or self.young > 1):
            self.drops[_ACCEPTQ_FULL] += 1
            self.last_drop = _ACCEPTQ_FULL
            return _DROPPED
        if want_cookie:
            self.cookies += 1
            self.drops[_SYNQ_FULL] += 1     # thesis counts a cookie as a SynQFull drop
            self.last_drop = _SYNQ_FULL
            return _COOKIE
        m = self.max_syn_backlog
        if not self.syncookies and m - n < (m >> 2):
            self.drops[_DROP_REQUEST] += 1
            self.last_drop = _DROP_REQUEST
            return _DROPPED
        self.synq_len = n + 1
        self.young += 1
        if n + 1 > self.synq_peak:
            self.synq_peak = n + 1
        return _QUEUED

    def on_ack(self, cid: int, from_synq: bool, young: bool) -> bool:
        """An ACK-bearing segment completes a handshake (request or cookie).

        True: the connection is now at the tail of the accept queue (and its
        request left the SYN queue).  False: ListenOverflow; the request stays.
        """
        if self.acceptq_full():
            self.drops[Drop.LISTEN_OVERFLOW] += 1
            self.last_drop = Drop.LISTEN_OVERFLOW
            return False
        if from_synq:
            self.remove_request(young)
        self.acceptq.append(cid)
        if len(self.acceptq) > self.acceptq_peak:
            self.acceptq_peak = len(self.acceptq)
        return True

    def synack_retransmitted(self, was_young: bool) -> None:
        """The request's first SYN-ACK retransmission makes it no longer young."""
        if was_young:
            self.young -= 1

    def remove_request(self, young: bool) -> None:
        """A request leaves the SYN queue (established, expired or reset)."""
        self.synq_len -= 1
        if young:
            self.young -= 1

    def accept(self) -> int | None:
        """accept(): the oldest established connection, or None (EAGAIN)."""
        return self.acceptq.popleft() if self.acceptq else None

    def synack_retries_now(self, synack_retries: int) -> int:
        """Retransmissions a request gets at this timeout (Linux >= 4.4): all of
        tcp_synack_retries, or down to 2 while the SYN queue is more than half the
        backlog and young requests are at most half, a quarter, an eighth of it.

        reqsk_timer_handler: ``if ((qlen << 1) > max(8U, sk_max_ack_backlog)) { young =
        reqsk_queue_len_young << 1; while (max_syn_ack_retries > 2) { if (qlen < young) break;
        max_syn_ack_retries--; young <<= 1; } }``, read before this request stops being
        young; without TCP_DEFER_ACCEPT, syn_ack_recalc expires at it, ACKed or not.  So a
        ListenOverflowed request whose client stays silent is gone at its third timeout,
        1 + 2 + 4 = 7 s after its SYN-ACK, where 2.4 keeps it to the sixth.
        """
        thresh = synack_retries
        qlen = self.synq_len
        if 2 * qlen > max(8, self.backlog):
            young = self.young << 1
            while thresh > 2 and qlen >= young:
                thresh -= 1
                young <<= 1
        return thresh

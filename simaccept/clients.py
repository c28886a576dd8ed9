"""Open-loop, httperf-like clients.

Domain model (thesis 3.3.1, httperf): connections start at the target rate
whatever the server does.  A timer (``--timeout``) covers the connect from the
first SYN; httperf cancels it when the connection is established and arms a new
one when it issues the request (``client.timeout_from = "connect"``, httperf's
core.c; with httperf 0.9.0 here, a connection established 1.03 s after its
first SYN gave up at 3.04 s with ``--timeout 2``).  ``"first-syn"`` keeps one
deadline from the first SYN to the full reply (realsys/c/loadgen's
``--timeout-from first-syn``).  httperf also re-arms the timer when the
reply's first bytes arrive; not modelled: replies take milliseconds, timeouts
seconds.  When the timer fires the client gives up and closes the socket.  A
SYN that gets no answer is retransmitted at the kernel profile's SYN RTO,
doubling (3, 9, 21 s after the first on Linux 2.4), while the deadline
allows.

A busy client acts on its timer late (``client.timer_lag_ms``: httperf runs its
timers between select calls, its kernel retransmits on its own).  With a
timeout at a SYN retransmission (3 s on Linux 2.4, 1 s on Linux 6) the
retransmission then goes out before the client closes; if it gets in, the
handshake completes in the client's kernel after the deadline, and the client
closes the connection without a request when it acts.  The server accepts a
connection with nothing to read: the thesis's table 4.8 (14-17 % of the
μserver's accepts), and what realsys measured with stock httperf at a 1 s
timeout on a loaded client CPU (realsys/results/README.md, dead accepts).

The race at that deadline (docs/background/connect-race.md): the clients'
kernel arms a retransmission at jiffies + RTO, so it leaves up to one tick
early (``client.syn_tick_ms``, uniform over the first SYN's phase in its
tick; 10 ms on the thesis's Linux 2.4), and its connection can be
established just before the deadline.  httperf cancels the deadline when its
loop reaches the socket (``client.loop_ms``, uniform): answered if that is
before the deadline, closed without a request otherwise.  The race's draws
come from a stream of their own, spawned from the run's seed.

A request the server did not acknowledge (its handshake ACK hit a
full accept queue) is retransmitted at the client's data RTO, doubling.

The arrival stream is drawn in bulk with NumPy: no process or event per
client.  ``hosts`` streams (httperf processes) are merged; connection i goes
to NIC ``i % nics``.
"""
from __future__ import annotations

import numpy as np


def arrival_times(rng: np.random.Generator, conn_rate: float, t_end: float,
                  law: str = "deterministic", hosts: int = 2) -> np.ndarray:
    """First-SYN send times in [0, t_end), sorted."""
    if conn_rate <= 0:
        return np.empty(0)
    per_host = conn_rate / hosts
    streams = []
    for h in range(hosts):
        n_expect = int(per_host * t_end * 1.2 + 50)
        if law == "poisson":
            gaps = rng.exponential(1.0 / per_host, size=n_expect)
            while gaps.sum() < t_end:
                gaps = np.concatenate([gaps, rng.exponential(1.0 / per_host, size=n_expect)])
            t = np.cumsum(gaps)
        else:
            # httperf --rate: fixed period; hosts are staggered by a random phase.
            phase = rng.random() / per_host
            t = phase + np.arange(int(per_host * t_end) + 2) / per_host
        streams.append(t[t < t_end])
    out = np.concatenate(streams)
    out.sort(kind="stable")
    return out

"""Cache warmth: a connection's state goes cold while the server touches others.

On the thesis's 2.4 GHz Xeons (512 KB L2; both clusters, thesis 3.2) the state a
server re-reads when it comes back to a connection (child socket, request skb,
the server's own record) is pushed out of the cache by the state of the
connections it touched in between.  The model counts *connection-state
touches*: the kernel building a child socket (every connection that enters the
accept queue), an accept, and each step the server takes on a connection.  A
step on a connection last touched more than ``tux_cache_touches`` touches ago
pays ``tux_cold`` (~40 lines x ~150 ns = 6 us); an accept touches freshly
allocated (slab-hot) objects and never pays.  The constants were set on TUX's
rows (simaccept.servers.tux) and are used as they are by Knot
(simaccept.servers.knot).  The μserver does not use this model: its fitted
per-call costs carry its average cold touches.
"""
from __future__ import annotations


class CacheWarmth:
    """The touch clock of one server: ``sync`` before an accept, ``accepted`` after one,
    ``step`` on every later touch of a connection (returns the extra CPU, s)."""

    def __init__(self, host, costs):
        self.host = host
        self.cold_s = costs.tux_cold
        self.touches = costs.us["tux_cache_touches"]
        self.clock = 0
        self.last = [0] * host.n
        self.n_seen = 0               # establishments observed (accepted + queued)
        self.n_acc = 0

    def sync(self) -> None:
        """Advance the clock by the child sockets the kernel built since the last look."""
        seen = self.n_acc + len(self.host.lsock.acceptq)
        if seen > self.n_seen:
            self.clock += seen - self.n_seen   # building a child socket is a touch
            self.n_seen = seen

    def accepted(self, conn) -> None:
        """``conn`` was just accepted: a touch that is never cold."""
        self.n_acc += 1
        self.last[conn] = self.clock
        self.clock += 1

    def step(self, conn) -> float:
        """The server touches ``conn`` again: the extra CPU (s) if its state has gone cold."""
        self.sync()
        clock = self.clock
        since = self.last[conn]
        self.last[conn] = clock
        self.clock = clock + 1
        return self.cold_s if clock - since > self.touches else 0.0

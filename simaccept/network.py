"""The server's NICs: links with bandwidth and one-way delay.

Domain model (thesis 3.2: two gigabit NICs, clients split into two subnets):
each NIC is one full-duplex link.  Only the server's transmit direction is
modelled as a queue, because reply bytes are what can saturate a link
(SPECweb99-like replies average ~15 KB); requests and handshakes are small.
A segment sent at ``t`` leaves the NIC when the link has sent everything
queued before it plus its own bytes, and reaches the client one delay later.
"""
from __future__ import annotations


class NIC:
    __slots__ = ("bytes_per_s", "delay", "free_at")

    def __init__(self, bandwidth_mbps: float, delay_s: float):
        self.bytes_per_s = bandwidth_mbps * 1e6 / 8.0
        self.delay = delay_s
        self.free_at = 0.0

    def transmit(self, t: float, nbytes: int, overhead_per_segment: int = 66, mss: int = 1448) -> float:
        """Queue ``nbytes`` of payload at ``t``; return when the last byte has left."""
        segs = -(-nbytes // mss) if nbytes > 0 else 1
        wire = nbytes + segs * overhead_per_segment
        start = self.free_at if self.free_at > t else t
        self.free_at = start + wire / self.bytes_per_s
        return self.free_at


def make_nics(n: int, bandwidth_mbps: float, delay_ms: float) -> list[NIC]:
    return [NIC(bandwidth_mbps, delay_ms / 1000.0) for _ in range(n)]

"""One CPU shared by kernel packet work and the server.

Domain model (DESIGN.md; thesis 3.2: uniprocessor kernel): kernel packet
processing runs at interrupt priority.  It preempts the server, so a server
operation of CPU cost ``c`` that starts at ``t0`` ends at the first ``t1``
where ``t1 - t0 - (kernel work done in [t0, t1)) == c``.  Under overload the
kernel can take the whole CPU (receive livelock).

The CPU never schedules an event per packet.  The host processes the packets
that arrive during a server operation and *stretches* the operation by their
cost (:meth:`simaccept.host.Host.run`).  When the server is blocked, kernel
work runs on the idle CPU and only what is still unfinished when the server
wakes delays it (``kbusy``).

This class keeps the accounting: busy time per category, for the CPU shares
of the record.
"""
from __future__ import annotations


class CPU:
    __slots__ = ("kbusy", "server_time", "kernel_time")

    def __init__(self):
        self.kbusy = 0.0                       # kernel work queued until this time
        self.server_time: dict[str, float] = {}
        self.kernel_time: dict[str, float] = {}

    def charge_kernel(self, t: float, cost: float, category: str = "kernel_net") -> None:
        """Kernel work arriving at ``t`` while the server is blocked (idle CPU)."""
        kb = self.kbusy
        self.kbusy = (kb if kb > t else t) + cost
        kt = self.kernel_time
        kt[category] = kt.get(category, 0.0) + cost

    def snapshot(self) -> dict[str, float]:
        out = {f"server:{k}": v for k, v in self.server_time.items()}
        out.update({f"kernel:{k}": v for k, v in self.kernel_time.items()})
        return out

"""Workloads: what each connection asks for.

* **one-packet** (thesis 3.3.2): every connection is a new HTTP/1.1
  connection carrying one request for the same file; header plus body fit in
  one packet.  The client closes after the reply, so the server sees three
  events per completed connection: the request, writability for the reply,
  and the client's FIN (which matches the thesis's fd-rate: table 4.7).
* **specweb99** (thesis 3.3.1; SPECweb99 static part): 4 classes x 9 files;
  class k file j has size (j+1) x 0.1 KB x 10^k; classes are picked with
  probabilities 35/50/14/1 %, files within a class by a Zipf law.  30 % of
  connections carry one request (HTTP/1.0 style), 70 % are keep-alive
  connections with 5..15 requests (uniform), giving 7.3 requests per
  connection on average (the thesis measured 7.24).  Mean reply is about
  15 KB and the file set is about 5 MB.

A workload draws, in bulk with NumPy, the number of requests per connection
and the reply size of each request.
"""
from __future__ import annotations

import numpy as np

HEADER_BYTES = 250          # typical HTTP/1.1 reply header

CLASS_PROBS = np.array([0.35, 0.50, 0.14, 0.01])
CLASS_UNIT = np.array([102.4, 1024.0, 10240.0, 102400.0])   # bytes


class Workload:
    name = "?"
    requests_per_conn_mean = 1.0

    def draw(self, rng: np.random.Generator, n_conns: int):
        """Return (requests per connection [n_conns], reply sizes [sum(requests)])."""
        raise NotImplementedError


class OnePacket(Workload):
    name = "one-packet"

    def __init__(self, reply_bytes: int = 1024):
        if isinstance(reply_bytes, bool) or not isinstance(reply_bytes, (int, np.integer)) or reply_bytes < 1:
            raise ValueError(f"reply_bytes: an integer >= 1, got {reply_bytes!r}")
        self.reply_bytes = int(reply_bytes)
        self.requests_per_conn_mean = 1.0

    def draw(self, rng, n_conns):
        return np.ones(n_conns, dtype=np.int64), np.full(n_conns, self.reply_bytes, dtype=np.int64)


class SpecWeb99(Workload):
    name = "specweb99"

    def __init__(self, zipf_alpha: float = 1.0, p_single: float = 0.30, keepalive_range=(5, 15)):
        # checked here too: a NaN or negative alpha was silently uniform popularity, p_single = 2
        # a mean of -8 requests per connection, and (15, 5) a bare "low >= high" at the first draw
        if not (isinstance(zipf_alpha, (int, float, np.integer, np.floating)) and 0 <= zipf_alpha < float("inf")):
            raise ValueError(f"zipf_alpha: a finite number >= 0, got {zipf_alpha!r}")
        if not (isinstance(p_single, (int, float, np.integer, np.floating)) and 0 <= p_single <= 1):
            raise ValueError(f"p_single: a probability in [0, 1], got {p_single!r}")
        try:
            lo, hi = keepalive_range
            ok = int(lo) == lo and int(hi) == hi and 1 <= lo <= hi
        except (TypeError, ValueError, OverflowError):
            ok = False
        if not ok:
            raise ValueError(f"keepalive_range: (lo, hi), whole numbers with 1 <= lo <= hi, got {keepalive_range!r}")
        self.p_single = p_single
        self.lo, self.hi = lo, hi
        ranks = np.arange(1, 10, dtype=float)
        w = ranks ** (-zipf_alpha) if zipf_alpha > 0 else np.ones(9)
        # SPECweb99 gives the most popular rank to a mid-sized file; any fixed
        # permutation keeps the class mean near its centre.
        order = np.array([4, 3, 5, 2, 6, 1, 7, 0, 8])
        self.file_probs = np.empty(9)
        self.file_probs[order] = w / w.sum()
        self.requests_per_conn_mean = p_single * 1 + (1 - p_single) * (self.lo + self.hi) / 2

    def file_sizes(self) -> np.ndarray:
        """Body bytes of the 36 files, [class, file]."""
        return CLASS_UNIT[:, None] * np.arange(1, 10)[None, :]

    def mean_reply_bytes(self) -> float:
        sizes = self.file_sizes()
        return float(HEADER_BYTES + (CLASS_PROBS[:, None] * self.file_probs[None, :] * sizes).sum())

    def draw(self, rng, n_conns):
        single = rng.random(n_conns) < self.p_single
        nreq = np.where(single, 1, rng.integers(self.lo, self.hi + 1, size=n_conns)).astype(np.int64)
        total = int(nreq.sum())
        cls = rng.choice(4, size=total, p=CLASS_PROBS)
        f = rng.choice(9, size=total, p=self.file_probs)
        sizes = (HEADER_BYTES + self.file_sizes()[cls, f]).astype(np.int64)
        return nreq, sizes


def make_workload(section: dict) -> Workload:
    if section["kind"] == "one-packet":
        return OnePacket(section["reply_bytes"])
    if section["kind"] == "specweb99":
        return SpecWeb99(section["zipf_alpha"])
    raise ValueError(f"workload kind {section['kind']!r}: not one-packet or specweb99")

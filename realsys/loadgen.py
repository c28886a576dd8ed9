"""Load generators: our C loadgen (argv and merging of its JSON) and httperf 0.9.0.

Stock httperf uses select(), so one process handles fewer than FD_SETSIZE (1024)
concurrent connections; keep rate * (response time or timeout) per process below
about 1000 when using it.  It also busy-polls: one process at 200 conn/s used 2.0 s of
CPU in a 2 s run.  All generators share the clients' CPU, so a few httperf processes
saturate it; with 4 the runner marked the window 0.26-0.33 s late, with 12 6.7 s late
(no load reached the server in its window), and such points fail
(``runner.window_error``).  Past the server's peak httperf therefore cannot cover a
2 s timeout here; our generator (epoll, no spinning) has no such limit.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from simaccept.sweep import atomic_write

from . import bin_dir
from .docroot import SPECWEB_CLASS_MIX

NB = 128
# loadgen.c's SPECweb99-like sessions: 30 % carry one request, the rest a uniform 5..15
SPECWEB_ONE_REQUEST_SHARE = 0.3
SPECWEB_SESSION_REQS = (5, 15)
SPECWEB_MEAN_REQS = (SPECWEB_ONE_REQUEST_SHARE * 1
                     + (1 - SPECWEB_ONE_REQUEST_SHARE) * sum(SPECWEB_SESSION_REQS) / 2)     # 7.3


def requests_per_conn(workload: str) -> float:
    return SPECWEB_MEAN_REQS if workload == "specweb99" else 1.0


def _num(x: float) -> str:
    """``x`` with every digit, in a form strtod reads (loadgen and httperf parse with it):
    "%.6f" made a duration of 1e-7 s "0.000000", which loadgen refused once the test bed was
    up, "%g" cut a Zipf alpha to 6 digits, and "%.3f" gave httperf a timeout of 2e-4 s as
    "0.000", which it reads as no timeout."""
    return repr(float(x))


def loadgen_argv(*, server_ip: str, port: int, binds: list[str], conn_rate: float, duration: float,
                 warmup: float, timeout: float, arrivals: str, seed: int, workload: str, out: Path,
                 uri: str = "/index.html", timeout_from: str = "connect", think_ms: float = 0.0,
                 request_delay_ms: float = 0.0, zipf_alpha: float = 1.0) -> list[str]:
    bind = ["--bind", ",".join(binds)] if binds else []     # none: the kernel picks (loadgen refuses "")
    slow = (["--think-ms", _num(think_ms)] if think_ms else []) + \
        (["--request-delay-ms", _num(request_delay_ms)] if request_delay_ms else [])
    return [str(bin_dir() / "loadgen"), "--server", server_ip, "--port", str(port), *bind,
            "--rate", _num(conn_rate), "--duration", _num(duration), "--warmup", _num(warmup),
            "--timeout", _num(timeout), "--timeout-from", timeout_from, "--arrivals", arrivals, "--seed", str(seed),
            "--workload", "specweb" if workload == "specweb99" else "one-packet", "--uri", uri,
            "--zipf", _num(zipf_alpha), *slow, "--out", str(out)]


def _bucket_mid(b: int) -> float:
    if b == 0:
        return 0.5
    return math.sqrt(2 ** ((b - 1) / 4) * 2 ** (b / 4))


def _merge_hist(hs: list[dict]) -> dict:
    buckets = [0] * NB
    n, total, mx = 0, 0.0, 0.0
    for h in hs:
        c = h.get("count", 0)
        if not c:
            continue
        n += c
        total += h["mean"] * c
        mx = max(mx, h.get("max") or 0.0)
        for b, _hi, cnt in h.get("buckets_us", []):
            buckets[int(b)] += int(cnt)

    def q(p):
        if not n:
            return math.nan
        want, acc = math.ceil(p * n), 0
        for b, cnt in enumerate(buckets):
            acc += cnt
            if cnt and acc >= want:
                return _bucket_mid(b)
        return math.nan
    scale = 1000.0 if hs and hs[0].get("unit") == "ms" else 1.0

    def at_most_max(v):
        # a bucket's middle (buckets are 2^(1/4) wide) can lie past the largest sample:
        # a launch lag's p99 of 480.8 ms beside its max of 452.0
        return min(v, mx) if mx > 0 and not math.isnan(v) else v
    return {"count": n, "mean": total / n if n else math.nan, "p50": at_most_max(q(0.5) / scale),
            "p99": at_most_max(q(0.99) / scale), "max": mx}


SUM_KEYS = ("attempts", "established", "requests", "replies", "replies_ok", "replies_in_window", "replies_recv_in_window", "timeouts",
            "timeouts_connect", "timeouts_reply", "resets", "refused", "local_errors", "unlaunched", "other_errors",
            "conns_done", "open_at_end", "bytes", "reconnects", "achieved_rate", "achieved_rate_mid", "target_rate")


def merge(results: list[dict]) -> dict:
    """Sum counts of several loadgen processes and merge their histograms."""
    out: dict = {k: sum(r.get(k, 0) or 0 for r in results) for k in SUM_KEYS}
    # a rate no process could give (an interrupted run's middle window that never ran: null)
    # summed as 0, "100 % below the rate asked for", and a part of the processes' as theirs alone
    mids = [r.get("achieved_rate_mid") for r in results]
    if not results or not all(isinstance(m, (int, float)) and math.isfinite(m) for m in mids):
        out["achieved_rate_mid"] = None
    out["window_s"] = max((r.get("window_s", 0) for r in results), default=math.nan)
    # one generator stopped by a signal makes the whole point a partial one
    out["interrupted"] = any(r.get("interrupted", False) for r in results)
    out["open_at_stop"] = sum(r.get("open_at_stop", 0) for r in results)
    # only when every generator counted it (older ones did not: 0 would read as no reply)
    if results and all("replies_ok_recv_in_window" in r for r in results):
        out["replies_ok_recv_in_window"] = sum(r["replies_ok_recv_in_window"] for r in results)
    out["status"] = {k: sum((r.get("status") or {}).get(k, 0) for r in results) for k in ("2xx", "3xx", "4xx", "5xx")}
    for h in ("connect_ms", "resp_ms", "total_ms", "launch_lag_us"):
        out[h] = _merge_hist([r[h] for r in results if h in r])
    # the warmup's connections: discarded, but their replies that arrive in the window are in
    # replies_recv_in_window, and a stall among them shows only here (older generators: absent)
    if results and all("warmup" in r for r in results):
        ws = [r["warmup"] for r in results]
        out["warmup"] = {k: sum(w.get(k, 0) for w in ws) for k in ("attempts", "replies", "timeouts", "resets")}
        for h in ("connect_ms", "resp_ms", "total_ms", "launch_lag_us"):
            out["warmup"][h] = _merge_hist([w[h] for w in ws if h in w])
    out["procs"] = len(results)
    return out


# --------------------------------------------------------------------------- httperf
def httperf_argv(*, server_ip: str, port: int, rate: float, num_conns: int, timeout: float,
                 uri: str = "/index.html") -> list[str]:
    return ["httperf", "--hog", "--server", server_ip, "--port", str(port), "--uri", uri,
            "--rate", _num(rate), "--num-conns", str(num_conns), "--num-calls", "1",
            "--timeout", _num(timeout)]


#: Sessions httperf 0.9.0 reads from one --wsesslog file at most (MAX_SESSION_TEMPLATES).
HTTPERF_MAX_SESSIONS = 1000


def write_wsesslog(path: Path, sessions: int, seed: int, zipf_alpha: float = 1.0) -> Path:
    """Write ``sessions`` SPECweb99-like sessions as an httperf ``--wsesslog`` file; returns path.

    The sessions are loadgen's (realsys/c/loadgen.c): 30 % carry one request, 70 % a uniform
    5..15 (mean 7.3); each request picks class 0-3 with 35 / 50 / 14 / 1 % and file 0-8 of
    the class by Zipf(``zipf_alpha``).  Every request is a burst of its own (an unindented
    line), so httperf sends it only once the previous reply is in, on the session's one
    connection (``--max-connections 1``), with the think time of ``--wsesslog``'s X between
    them.  httperf walks the file's sessions in turn and refuses a file of more than
    :data:`HTTPERF_MAX_SESSIONS` ("too many sessions"), so a process launching more reuses
    them, each about equally often.  Seeded: the same file for the same seed."""
    rng = np.random.default_rng(seed)
    cls_cdf = np.cumsum(SPECWEB_CLASS_MIX)
    w = 1.0 / np.arange(1, 10) ** zipf_alpha
    file_cdf = np.cumsum(w / w.sum())
    lo, hi = SPECWEB_SESSION_REQS
    lines = []
    for _ in range(min(sessions, HTTPERF_MAX_SESSIONS)):
        n = 1 if rng.random() < SPECWEB_ONE_REQUEST_SHARE else int(rng.integers(lo, hi + 1))
        for _ in range(n):
            c = min(3, int(np.searchsorted(cls_cdf, rng.random())))
            f = min(8, int(np.searchsorted(file_cdf, rng.random())))
            lines.append(f"/specweb/class{c}_{f}")
        lines.append("")
    atomic_write(path, "\n".join(lines) + "\n")
    return Path(path)


def httperf_wsesslog_argv(*, server_ip: str, port: int, rate: float, sessions: int, timeout: float,
                          log: Path) -> list[str]:
    """httperf running ``sessions`` sessions of ``log`` (:func:`write_wsesslog`) at ``rate``
    sessions/s, each on one keep-alive connection with no pipelining and no think time (the
    X of ``--wsesslog``: httperf closes a session's connection at once after its last reply,
    where loadgen and the simulator think first, so a think time is refused for httperf)."""
    return ["httperf", "--hog", "--server", server_ip, "--port", str(port),
            "--wsesslog", f"{sessions},0,{log}", "--rate", _num(rate),
            "--max-connections", "1", "--max-piped-calls", "1", "--timeout", _num(timeout)]


def parse_httperf(text: str) -> dict:
    def grab(pat, cast=float, default=math.nan):
        m = re.search(pat, text)
        return cast(m.group(1)) if m else default
    d = {
        "connections": grab(r"Total: connections (\d+)", int, 0),
        "requests": grab(r"Total: connections \d+ requests (\d+)", int, 0),
        "replies": grab(r"replies (\d+) test-duration", int, 0),
        "test_duration_s": grab(r"test-duration ([\d.]+) s"),
        "conn_rate": grab(r"Connection rate: ([\d.]+) conn/s"),
        "connect_ms": grab(r"Connection time \[ms\]: connect ([\d.]+)"),
        "response_ms": grab(r"Reply time \[ms\]: response ([\d.]+)"),
        "reply_rate_avg": grab(r"Reply rate \[replies/s\]: min [\d.]+ avg ([\d.]+)"),
        "status_2xx": grab(r"Reply status: 1xx=\d+ 2xx=(\d+)", int, 0),
        "status_3xx": grab(r"Reply status: 1xx=\d+ 2xx=\d+ 3xx=(\d+)", int, 0),
        "status_4xx": grab(r"Reply status: 1xx=\d+ 2xx=\d+ 3xx=\d+ 4xx=(\d+)", int, 0),
        "status_5xx": grab(r"Reply status: 1xx=\d+ 2xx=\d+ 3xx=\d+ 4xx=\d+ 5xx=(\d+)", int, 0),
        "errors": grab(r"Errors: total (\d+)", int, 0),
        "client_timo": grab(r"client-timo (\d+)", int, 0),
        "connrefused": grab(r"connrefused (\d+)", int, 0),
        "connreset": grab(r"connreset (\d+)", int, 0),
        "fd_unavail": grab(r"fd-unavail (\d+)", int, 0),
        "addrunavail": grab(r"addrunavail (\d+)", int, 0),
        "ftab_full": grab(r"ftab-full (\d+)", int, 0),
    }
    return d

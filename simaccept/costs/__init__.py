"""The cost model: a flat, named set of per-operation CPU costs (microseconds).

Every cost is a number a fitter may change (``validation.CostFitter``).  A
*profile* is a TOML file beside this module, ``<name>.toml``, with one table
``[costs]`` naming some or all of :data:`COST_NAMES`; names it omits take
:data:`DEFAULTS`.  A scenario's ``[costs]`` section picks the profile and may
override single costs.  A profile may also be named by the path of a TOML file
anywhere (anything ending in ``.toml``): what ``simaccept fit --out`` wrote for a
researcher's own machine, used without copying it into the package.

Where the terms come from:

* getevents: select/poll cost a base plus a term per descriptor in the
  interest set plus a term per ready descriptor (seed 003, thesis 2.1);
  epoll costs a base plus a term per ready event, and epoll_ctl per interest
  change (thesis 2.1, Gammo et al.).
* per-syscall costs of the μserver (thesis tables 4.3, 4.9): accept (and the
  EAGAIN that ends an Accept-Inf phase), read, write/writev, sendfile plus a
  per-KB term (seed 002), setsockopt (TCP_NODELAY, CORK/UNCORK), close.
* kernel packet work, charged at interrupt priority (simaccept.cpu): a SYN
  queued (request + SYN-ACK), a SYN dropped, the final ACK creating the
  child socket, an ACK dropped by ListenOverflow, a SYN-ACK retransmission,
  request and FIN/ACK segments, reply data segments and the client's ACKs of
  them (seed 002: 9 packets per small HTTP/1.0 exchange); and a fixed cost per
  softirq run, shared by the packets that arrive while one runs.  No TIME_WAIT
  term (seed 004): TIME_WAIT is held by the side that closes first, and in every
  modelled workload the clients close first, as httperf's do.
* threaded servers: a thread switch and a scheduler scan per blocked thread.
"""
from __future__ import annotations

import functools
import math
import tomllib
from pathlib import Path
from typing import Any, Mapping

HERE = Path(__file__).resolve().parent

#: Default costs (µs).  Profiles override these.
DEFAULTS: dict[str, float] = {
    # getevents ---------------------------------------------------------------
    "select_base": 6.0,
    "select_per_fd": 0.05,
    "select_per_ready": 1.0,
    "poll_base": 6.0,
    "poll_per_fd": 0.06,
    "poll_per_ready": 1.0,
    "epoll_base": 3.0,
    "epoll_per_ready": 0.5,
    "epoll_ctl": 1.0,
    # syscalls ------------------------------------------------------------------
    "accept": 4.0,
    "accept_eagain": 1.5,
    "setsockopt": 1.5,
    "read": 4.0,
    "read_eof": 2.5,
    "write": 4.0,
    "writev": 4.0,
    "sendfile": 5.0,
    "sendfile_per_kb": 0.4,
    "close": 8.0,
    "user_per_request": 4.0,
    # user_per_event: the server's own work per event getevents returns (finding the
    # descriptor in the result, dispatching on its state), charged by the μserver and
    # Knot-C's scheduler.  0 in every shipped profile: none was fitted with it (before
    # 2 Dec 2026 it was listed, 0.5, and never charged).
    "user_per_event": 0.0,
    # fd_alloc_per_open: descriptor allocation scans the open descriptors (seed 003,
    # Banga and Mogul), so each accept costs this per descriptor already open.  Charged
    # by the μserver and Knot-C; TUX holds its connections in the kernel, without one.
    "fd_alloc_per_open": 0.0,
    # kernel packet work (interrupt priority) ------------------------------------
    "k_syn": 5.0,
    "k_syn_drop": 2.0,
    "k_ack_establish": 6.0,
    "k_ack_overflow": 3.0,
    "k_synack_retx": 3.0,
    "k_data_rx": 3.0,
    "k_fin_rx": 4.0,
    "k_rst_rx": 2.0,
    "k_tx_per_segment": 1.0,
    # k_ack_rx: one pure ACK of reply data received from the client (tcp_ack freeing
    # the acknowledged skbs).  A client ACKs every second segment of a reply
    # (Host.reply_kernel_cost); a one-segment reply's ACK rides on the client's FIN or next
    # request (k_fin_rx, k_data_rx), so one-packet runs never pay it.
    "k_ack_rx": 3.0,
    # k_softirq_run: the fixed cost of one softirq run (a busy period of kernel
    # packet work: interrupt or IPI entry and exit, net_rx_action's setup); packets
    # that arrive while one runs share it.  0 for the thesis's profiles (NAPI
    # interrupt coalescing there is not modelled); realsys-linux6 fits it, because on
    # a VM each run starts with an IPI and accept-1 batches packets less.
    "k_softirq_run": 0.0,
    # threaded servers -------------------------------------------------------------
    "thread_switch": 1.0,
    "sched_base": 3.0,
    "sched_per_blocked": 0.05,
    "sched_per_ready": 0.5,
    # TUX: in-kernel, no system-call crossings, zero-copy -------------------------
    "tux_accept": 2.0,
    "tux_request": 4.0,
    "tux_per_kb": 1.0,
    "tux_close": 2.0,
    "tux_phase": 0.5,
    # --- TUX cache warmth (simaccept.servers.tux; issue #4) ----------------------
    # tux_cold: extra CPU (µs) when TUX touches a connection whose state (socket,
    # TUX request, request skb) has left the L2 cache: ~40 cache lines x ~150 ns.
    # tux_cache_touches: how many connection-state touches (the kernel building a
    # child socket, a TUX accept, a TUX work item) fit in the L2 share left for
    # per-connection data; a *count*, not µs (read from CostModel.us).
    "tux_cold": 0.0,
    "tux_cache_touches": 1e9,
    # --- end TUX cache warmth ------------------------------------------------------
}

COST_NAMES: tuple[str, ...] = tuple(DEFAULTS)


class CostModel:
    """Resolved costs (profile + overrides).  ``costs.read`` etc. are *seconds*;
    ``costs.us`` keeps the microsecond values.  Attributes are plain, set once,
    because the simulator reads them millions of times."""

    __slots__ = ("profile", "us") + COST_NAMES

    def __init__(self, profile: str, us: Mapping[str, float]):
        self.profile = profile
        self.us = dict(us)
        for k in COST_NAMES:
            setattr(self, k, self.us[k] * 1e-6)

    def as_dict(self) -> dict[str, float]:
        return dict(self.us)


def available_profiles() -> list[str]:
    """The named profiles (files beside this module); a path to a ``.toml`` is accepted too."""
    return sorted(p.stem for p in HERE.glob("*.toml"))


def is_profile_path(profile: str) -> bool:
    """True when ``profile`` names a TOML file by its path rather than a packaged profile."""
    return str(profile).endswith(".toml")


def suggest_profile(profile: str) -> str:
    """A hint for a profile that is neither a file nor a packaged name, to append to the refusal:
    the packaged profile a missing ``thesis-2004.toml`` names with its suffix, else the packaged
    names close to it, else ""."""
    import difflib
    if is_profile_path(profile) and Path(str(profile)).parent != Path("."):
        return ""           # a file in a folder of the user's own: a packaged name would be other costs
    have = available_profiles()
    name = Path(str(profile)).name
    stem = name[:-len(".toml")] if is_profile_path(name) else name
    if is_profile_path(profile) and stem in have:
        return f"; did you mean the packaged profile {stem!r}? (a packaged profile is named without .toml)"
    close = difflib.get_close_matches(stem, have, n=3, cutoff=0.6)
    if close:
        return f"; did you mean the packaged profile {' or '.join(map(repr, close))}?"
    return ""


def _profile_file(profile: str) -> Path:
    if is_profile_path(profile):
        try:
            path = Path(profile).expanduser()
            found = path.is_file()
        except (RuntimeError, OSError, ValueError) as e:   # ~nosuchuser, a NUL byte, a name too long
            raise KeyError(f"cost profile path {profile!r} cannot be opened ({e})") from None
        if not found:
            if path.is_dir():
                raise KeyError(f"cost profile path {str(path)!r} is a directory, not a .toml file")
            raise KeyError(f"no cost profile file {str(path)!r}{suggest_profile(profile)}")
        return path
    path = HERE / f"{profile}.toml"
    if not path.is_file():
        raise KeyError(f"no cost profile named {profile!r}{suggest_profile(profile)} (have: "
                       f"{', '.join(available_profiles())}; or give the path of a .toml file)")
    return path


def read_profile(profile: str) -> dict[str, float]:
    """The ``[costs]`` table of ``profile`` (a packaged name or a ``.toml`` path), in µs.
    KeyError if there is no such profile; ValueError (naming the cost) if the file is not
    TOML, names an unknown cost, or gives a value that is not a finite number >= 0."""
    return dict(_read_profile(profile))


def _read_profile(name: str) -> tuple[tuple[str, float], ...]:
    path = _profile_file(name)
    # Keyed by the file's identity too: a profile edited by hand in a live session (a
    # notebook) is read again, not answered from the first reading.  Size and mtime miss an
    # edit within one clock tick that keeps the size; the inode catches an editor that
    # replaces the file, the ctime one that rewrites it in place.
    st = path.stat()
    return _parse_profile(str(path.resolve()), name, (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))


@functools.lru_cache(maxsize=64)
def _parse_profile(path: str, name: str, _stamp: tuple[int, ...]) -> tuple[tuple[str, float], ...]:
    try:
        doc = tomllib.loads(Path(path).read_text(encoding="utf-8-sig"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ValueError(f"cost profile {name!r}: not a TOML file ({e})") from None
    except ValueError as e:     # an integer past Python's 4,300-digit conversion limit
        raise ValueError(f"cost profile {name!r}: not a usable number ({e})") from None
    except RecursionError:      # tomllib recurses per level of [ or {
        raise ValueError(f"cost profile {name!r}: nested too deeply to read (hundreds of [ or {{ inside one "
                         "another)") from None
    if "costs" not in doc:
        # every cost would silently be the built-in default: a file saved from the wrong
        # place, or a table misspelt ([cost]), must not run as if it were a profile
        raise ValueError(f"cost profile {name!r}: no [costs] table (have: {', '.join(sorted(doc)) or 'nothing'})")
    table = doc["costs"]
    if not isinstance(table, dict):
        raise ValueError(f"cost profile {name!r}: [costs] must be a table")
    others = sorted(k for k in doc if k != "costs")
    if others:
        # a second table ([cost] after [costs]) or a cost written above [costs] would be
        # read by no one, and its values silently left at the defaults
        raise ValueError(f"cost profile {name!r}: {', '.join(map(repr, others))} outside the [costs] table "
                         "(a profile is one [costs] table; comments start with #)")
    unknown = set(table) - set(COST_NAMES)
    if unknown:
        raise ValueError(f"cost profile {name!r}: unknown cost(s) {sorted(unknown)}")
    out = []
    for k, v in table.items():
        huge = isinstance(v, int) and v.bit_length() > 1000     # math.isfinite() would overflow
        if isinstance(v, bool) or not isinstance(v, (int, float)) or huge or not math.isfinite(v) or v < 0:
            shown = f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits" if huge else repr(v)
            raise ValueError(f"cost profile {name!r}: cost {k!r} must be a finite number >= 0, got {shown}")
        out.append((k, float(v)))
    return tuple(out)


def load_costs(profile: str, overrides: Mapping[str, Any] | None = None) -> CostModel:
    us = dict(DEFAULTS)
    us.update(dict(_read_profile(profile)))
    if overrides is not None and not isinstance(overrides, Mapping):
        raise TypeError(f"overrides: a mapping of cost name to µs, got {type(overrides).__name__}")
    for k, v in (overrides or {}).items():
        if k == "profile":
            continue
        if k not in us:
            raise KeyError(f"unknown cost {k!r}")
        try:
            if isinstance(v, bool):     # float(True) is 1.0: a flag, not a cost
                raise TypeError
            v = float(v)
        except (TypeError, ValueError, OverflowError):
            raise ValueError(f"cost {k!r} must be a finite number of µs >= 0, got {v!r}") from None
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"cost {k!r} must be finite and >= 0, got {v}")
        us[k] = v
    return CostModel(profile, us)


def scenario_costs(sc) -> CostModel:
    """The costs a simulation of scenario ``sc`` runs with: its profile and per-cost
    overrides, plus ``realsys.spin_us`` charged as user work per request.

    The real servers burn ``spin_us`` of CPU on every request on top of their own work
    (realsys/c/common.c).  A scenario file means one experiment in both halves, so the
    simulator does the same work; a profile fitted to realsys runs therefore holds the
    server's own per-request work, without the spin."""
    c = sc["costs"]
    over = {k: v for k, v in c.items() if k != "profile"}
    costs = load_costs(c["profile"], over)
    spin = float(sc["realsys"]["spin_us"])
    if spin > 0:
        costs = load_costs(c["profile"], {**over, "user_per_request": costs.us["user_per_request"] + spin})
    return costs


def save_profile(path: str | Path, costs: Mapping[str, float], header: str = "") -> Path:
    """Write a profile TOML atomically (used by the fitter)."""
    from ..sweep import atomic_write     # here, not at the top: costs stays a leaf module
    path = Path(path)
    lines = [f"# {line}" for line in header.splitlines()] + ["[costs]"]
    lines += [f"{k} = {float(v)!r}" for k, v in costs.items()]
    atomic_write(path, "\n".join(lines) + "\n")
    return path

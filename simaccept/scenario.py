"""Scenario files: the declarative experiment both halves (simaccept, realsys) read.

A scenario is a TOML document with fixed sections and keys (``SCHEMA``).  Any
value given as a list is a *sweep axis*; the sweep grid is the product of all
axes in the order they appear in ``SCHEMA``.  Every key can be overridden with
``section.key=value`` strings (the CLI's ``--set``).

Everything is checked before anything runs: an unknown section or key, a wrong
type, or an out-of-range value raises :class:`ScenarioError` naming the key and
the reason.  The CLIs turn that into exit status 2.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np

from .fingerprint import NOT_MODEL, model_fingerprint  # noqa: F401  (re-exported: the API names them here)


class ScenarioError(ValueError):
    """A scenario value is unknown, of the wrong type or out of range."""

    def __init__(self, key: str, reason: str):
        self.key = key
        self.reason = reason
        if key.startswith("--"):                          # a command-line flag: --jobs, --out
            msg = f"{key}: {reason}"
        elif key in ("<file>", "<path>", "<document>"):   # the file itself could not be read or parsed
            msg = f"scenario file: {reason}"
        else:
            msg = f"scenario key '{key}': {reason}"
        super().__init__(msg)

    def __reduce__(self):
        return (type(self), (self.key, self.reason))


class UnknownKey(ScenarioError, KeyError):
    """``sc["section"]`` or ``sc.get("section.key")`` named what the schema does not have.  A
    KeyError too, for code that looks a key up and catches that."""

    __str__ = ValueError.__str__      # not KeyError's, which quotes the whole message


# --------------------------------------------------------------------------- types
@dataclasses.dataclass(frozen=True)
class Key:
    kind: str                    # int | float | bool | str | choice | limit | float_or_none
    default: Any
    doc: str
    lo: float | None = None      # inclusive lower bound
    hi: float | None = None      # inclusive upper bound
    lo_open: bool = False        # lower bound is exclusive
    choices: tuple[str, ...] = ()
    sweepable: bool = True
    sentinel: Any = None         # a value allowed outside [lo, hi] ("-1 = the profile's default")


def _fmt(v: Any) -> str:
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > 64:
        # repr() of an integer past 4,300 digits raises (sys.int_info.str_digits_check_threshold)
        return f"an integer of about {int(v.bit_length() * 0.30103) + 1} digits"
    return json.dumps(v) if isinstance(v, str) else repr(v)


def _bound(x: int | float) -> str:
    # a bound as written: :g gave backlog's 1 << 20 as "1.04858e+06" and the seed's 2**63 - 1 as
    # "9.22337e+18", so the refusal of 1,048,577 named a bound it seemed to meet
    if isinstance(x, int) or float(f"{x:g}") != x:
        return repr(x)
    return f"{x:g}"


def _list_hint(key: str, spec: Key, v: Any) -> str:
    """For a number key given "10000,20000" (``--set workload.rate=10000,20000``): how a sweep
    axis is written, a list, if the values read as one the key takes; else "".  Only words of
    a number's letters are read: a bracket or quote could nest past the recursion limit."""
    if not isinstance(v, str) or "," not in v or not re.fullmatch(r"[0-9A-Za-z_.+\-, ]+", v):
        return ""
    text = f"[{v.strip()}]"
    try:
        _check_maybe_list(key, spec, tomllib.loads(f"v = {text}")["v"])
    except (tomllib.TOMLDecodeError, ValueError, ScenarioError):
        return ""
    name = key.split(".", 1)[-1]
    return f"; a sweep axis is a list: --set '{key}={text}', or {name} = {text} in the file"


def _check(key: str, spec: Key, v: Any) -> Any:
    """Return the normalised value or raise ScenarioError."""
    k = spec.kind
    if isinstance(v, np.generic) and not isinstance(v, np.str_):
        # NumPy scalars (np.arange, a DataFrame cell): np.float32 and np.int64 are not float or
        # int subclasses, and the resolved config must stay JSON (the record embeds it)
        v = v.item()
    if k == "bool":
        if not isinstance(v, bool):
            raise ScenarioError(key, f"must be true or false, got {_fmt(v)}")
        return v
    if k == "str":
        if not isinstance(v, str) or not v:
            raise ScenarioError(key, f"must be a non-empty string, got {_fmt(v)}")
        try:
            v.encode("utf-8")
        except UnicodeEncodeError:
            # a shell argument with bytes that are not UTF-8 (Python keeps them as surrogates): the
            # record embeds the value, and results.csv failed to write once every point had run
            raise ScenarioError(key, f"must be UTF-8 text, got {_fmt(v)}") from None
        return v
    if k == "choice":
        if not isinstance(v, str) or v not in spec.choices:
            raise ScenarioError(key, f"must be one of {', '.join(map(_fmt, spec.choices))}; got {_fmt(v)}")
        return v
    if k == "limit":
        if isinstance(v, float) and v == math.inf:
            return "inf"
        if isinstance(v, str):
            if v.lower() in ("inf", "infinity"):
                return "inf"
            raise ScenarioError(key, f'must be an integer >= 1 or "inf", got {_fmt(v)}{_list_hint(key, spec, v)}')
        if isinstance(v, bool) or not isinstance(v, int):
            raise ScenarioError(key, f'must be an integer >= 1 or "inf", got {_fmt(v)}')
        if v < 1:
            raise ScenarioError(key, f"must be >= 1, got {v}")
        if v > MAX_ACCEPT_LIMIT:
            # a limit no queue reaches is "inf"; an unbounded one was written into the record
            # whole (a 4,001-digit accept_limit) or failed simulate() converting it to text
            raise ScenarioError(key, f'must be <= {MAX_ACCEPT_LIMIT:,} (server.max_conns\'s largest; '
                                     f'"inf" for no limit), got {_fmt(v)}')
        return v
    if k == "int":
        if isinstance(v, bool) or not isinstance(v, int):
            raise ScenarioError(key, f"must be an integer, got {_fmt(v)}{_list_hint(key, spec, v)}")
    elif k in ("float", "float_or_none"):
        if k == "float_or_none" and isinstance(v, str) and v == "none":
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ScenarioError(key, f"must be a number, got {_fmt(v)}{_list_hint(key, spec, v)}")
        try:
            v = float(v) + 0.0      # + 0.0: -0.0 is 0.0, so [0.0, -0.0] is one point named twice
        except OverflowError:
            raise ScenarioError(key, f"must be finite, got {_fmt(v)}") from None
        if not math.isfinite(v):
            raise ScenarioError(key, f"must be finite, got {v}")
    else:  # pragma: no cover - schema bug
        raise AssertionError(k)
    if spec.sentinel is not None and v == spec.sentinel:
        return v
    alt = "" if spec.sentinel is None else f" (or {_bound(spec.sentinel)} for the profile's default)"
    if spec.lo is not None:
        if spec.lo_open and not v > spec.lo:
            raise ScenarioError(key, f"must be > {_bound(spec.lo)}{alt}, got {_fmt(v)}")
        if not spec.lo_open and not v >= spec.lo:
            raise ScenarioError(key, f"must be >= {_bound(spec.lo)}{alt}, got {_fmt(v)}")
    if spec.hi is not None and not v <= spec.hi:
        raise ScenarioError(key, f"must be <= {_bound(spec.hi)}, got {_fmt(v)}")
    return v


def _pos(default, doc, **kw):
    return Key("float", default, doc, lo=0.0, lo_open=True, **kw)


def _nonneg(default, doc, **kw):
    return Key("float", default, doc, lo=0.0, **kw)


# --------------------------------------------------------------------------- schema
#: The largest accept-limit and open-connection cap: 4,194,304, more than a Linux process may have
#: open (fs.nr_open, 1,048,576 by default).
MAX_ACCEPT_LIMIT = 1 << 22

#: Section -> key -> spec: every scenario key, its type, default, range and meaning.  A key
#: whose value comes from the kernel profile takes -1 for "the profile's default" (``sentinel``).
SCHEMA: dict[str, dict[str, Key]] = {
    "scenario": {
        "name": Key("str", "unnamed", "Short identifier written into every record.", sweepable=False),
        "duration": _pos(10.0, "Measured simulated/real seconds (after warm-up)."),
        "warmup": _nonneg(2.0, "Seconds discarded before measuring."),
        "seed": Key("int", 1, "Base seed; each sweep point derives its own.", lo=0, hi=2**63 - 1),
        "batches": Key("int", 10, "Batch-means batches for confidence intervals.", lo=2, hi=1000),
    },
    "kernel": {
        "profile": Key("choice", "linux-2.4", "Listen-socket rules: see simaccept.kernel.", choices=("linux-2.4", "linux-6")),
        "backlog": Key("int", 128, "listen() backlog.", lo=1, hi=1 << 20),
        "syncookies": Key("bool", False, "net.ipv4.tcp_syncookies (true = 1).  Off unless set, whatever "
                          "kernel.profile: the thesis ran without them; a stock Linux 6 has them on "
                          "(set true to model it)."),
        "somaxconn": Key("int", -1, "net.core.somaxconn; -1 = the profile's default.", lo=-1, hi=1 << 20),
        "max_syn_backlog": Key("int", -1, "net.ipv4.tcp_max_syn_backlog; -1 = the profile's default.  "
                               "linux-2.4 sizes the SYN queue to the next power of two >= max(64, this); "
                               "its 3/4 rule reads this value itself.", lo=1, hi=1 << 20,
                               sentinel=-1),
        "synack_retries": Key("int", -1, "net.ipv4.tcp_synack_retries; -1 = profile default.", lo=-1, hi=64),
    },
    "network": {
        "nics": Key("int", 2, "Server NICs; clients are split evenly across them.", lo=1, hi=64),
        "bandwidth_mbps": _pos(1000.0, "Per-NIC link bandwidth."),
        "delay_ms": _nonneg(0.05, "One-way delay client<->server."),
        "mss": Key("int", 1448, "Bytes per full segment (packet counting).", lo=64, hi=65535),
    },
    "server": {
        "kind": Key("choice", "userver", "Architecture model.", choices=("userver", "tux", "knot", "nginx")),
        "mux": Key("choice", "select", "getevents mechanism (userver).  TUX and Knot-C have no getevents "
                   "phase: a tux or knot point with any value but \"select\" is refused "
                   "(simaccept.sim.check_modelled).", choices=("select", "poll", "epoll")),
        "accept_limit": Key("limit", "inf", "Max consecutive accepts per accept-phase."),
        "policy": Key("str", "accept-limit", "Accept policy: a name in simaccept.servers.policies.REGISTRY."),
        "max_conns": Key("int", 15000, "Open-connection cap (thesis: 15,000).", lo=1, hi=MAX_ACCEPT_LIMIT),
        "threads": Key("int", 1000, "Threads (knot).", lo=1, hi=1 << 20),
        "sndbuf": Key("int", 65536, "Socket send buffer bytes (big replies are written in chunks).", lo=1024, hi=1 << 30),
        "sndbuf_freed": Key("choice", "sent", "When a reply chunk's send-buffer space is free again: \"sent\", "
                            "once the NIC has sent the chunk (the validation report's model); \"acked\", as "
                            "Linux does it, by the client's ACKs, a round trip after each byte left, the socket "
                            "writable again once what is queued is at most 2/3 of server.sndbuf (tcp_poll), so "
                            "a reply sends at most a buffer per round trip.  No congestion window either way.",
                            choices=("sent", "acked")),
        "phase_budget_us": _pos(2000.0, ("time-budget policy: CPU budget (µs) of each accept-phase: the server's own CPU time "
                                      "in it, not the kernel packet work that preempts it.")),
        "service_dist": Key("choice", "deterministic", "Per-request user work (costs.user_per_request): "
                            "fixed, or exponential with that mean.  Read by the μserver (userver) model only: "
                            "a tux or knot point with any value but \"deterministic\" is refused "
                            "(simaccept.sim.check_modelled), and realsys refuses it too.",
                            choices=("deterministic", "exponential")),
    },
    "workload": {
        "kind": Key("choice", "one-packet", "one-packet | specweb99.", choices=("one-packet", "specweb99")),
        "rate": _pos(20000.0, "Target request rate (requests/s); connections/s = rate / requests per connection."),
        "arrivals": Key("choice", "deterministic", "Connection inter-arrival law (httperf --rate is deterministic).",
                        choices=("deterministic", "poisson")),
        "reply_bytes": Key("int", 1024, "one-packet: header+body bytes of the single reply packet.", lo=1, hi=1 << 30),
        "request_bytes": Key("int", 80, "Bytes per HTTP request.", lo=1, hi=65535),
        "idle_conns": Key("int", 0, "Idle WAN connections held open in the interest set (seed 003).  Held by "
                          "the μserver (userver) model only: a tux or knot point with any value but 0 is refused "
                          "(simaccept.sim.check_modelled), and realsys refuses any but 0.", lo=0, hi=1 << 20),
        "zipf_alpha": _nonneg(1.0, "specweb99: Zipf exponent within a file class."),
    },
    "client": {
        "timeout": _pos(10.0, "httperf --timeout (s): see timeout_from."),
        "timeout_from": Key("choice", "connect", "What the timeout counts from.  connect (httperf): the first "
                            "SYN until the connection is established, then again from the request's issue to "
                            "its reply.  first-syn: one deadline from the first SYN to the full reply.",
                            choices=("connect", "first-syn")),
        "syn_rto": Key("float", -1.0, "Initial SYN RTO seconds; -1 = kernel profile's default.", lo=0.0,
                       lo_open=True, sentinel=-1.0),
        "data_rto": _pos(0.2, "Client RTO for the request after the handshake (RTO_min)."),
        "orphans": Key("bool", False, "Model what a client's kernel does after the client closes a "
                       "connection whose request is unanswered, as both kernels do: its socket lives on as an "
                       "orphan that sends the request (and FIN) again, with backoff, up to "
                       "client.orphan_retries times in all (a FIN behind a request already sent again waits "
                       "for those: the RTO left a window of one segment), and a FIN or ACK that completes the handshake "
                       "before the request does is held out of order, so the server reads nothing until the "
                       "request comes.  Off (the default): nothing but the FIN after the deadline, read as "
                       "the end at once; the shipped profiles were fitted so (docs/known-defects.md)."),
        "orphan_retries": Key("int", -1, "With client.orphans: retransmissions in all of a request (and FIN) "
                              "that a client closed unanswered (net.ipv4.tcp_orphan_retries, whose default 0 "
                              "both kernels read as 8); -1 = 8.", lo=-1, hi=64),
        "hosts": Key("int", 2, "Client hosts (realsys) / arrival streams (sim).", lo=1, hi=1024),
        "think_ms": _nonneg(0.0, "Client delay after a reply before its next request or its close "
                            "(slow or loaded clients; thesis cluster 2 had 550 MHz clients)."),
        "request_delay_ms": _nonneg(0.0, "Client delay between its connection being established and "
                                    "its first request (slow or loaded clients)."),
        "timer_lag_ms": _nonneg(0.0, "How late the client process acts on a connect timeout (a busy "
                                "httperf runs its timers between select calls).  The kernel still "
                                "retransmits a SYN due in that lag, and a handshake completed after the "
                                "deadline gets no request: the client closes it when it acts, and the "
                                "server accepts a connection with nothing to read (thesis table 4.8)."),
        "syn_tick_ms": Key("float", 0.0, "The clients' kernel timer tick (ms).  A SYN retransmission is armed "
                           "at jiffies + RTO and runs on the tick that reaches it, so it leaves up to one "
                           "tick *before* its RTO, uniformly (Linux 2.4 at HZ = 100: 10, the thesis's "
                           "one-packet files).  0: exactly at its RTO.", lo=0.0, hi=1000.0),
        "loop_ms": Key("float", 0.0, "How long the client's event loop takes to reach a socket that "
                       "select reported, uniform over [0, loop_ms].  httperf cancels a connection's "
                       "connect deadline when it reaches the socket: a connection established just "
                       "before its deadline (on a SYN retransmission sent early, syn_tick_ms) is "
                       "answered if it is reached before the deadline and closed without a request "
                       "otherwise.  Only this race is modelled; the request itself leaves at once "
                       "(request_delay_ms delays it).", lo=0.0, hi=1000.0),
    },
    "costs": {
        "profile": Key("str", "thesis-2004", "Named cost profile (simaccept/costs/<name>.toml), or the path "
                       "of a profile TOML file (ends in .toml; relative to the working directory)."),
        # per-cost overrides are validated against the profile's names at load time
    },
    "realsys": {
        "spin_us": _nonneg(0.0, "Extra CPU work per request in the real servers; the simulated "
                           "server does it too (user work per request, simaccept.costs.scenario_costs)."),
        "procs": Key("int", 2, "Load-generator processes.", lo=1, hi=256),
        "cpu_server": Key("int", 0, "CPU the server and its NIC receive processing run on.", lo=0, hi=4095),
        "cpu_clients": Key("int", 1, "CPU the load generators run on.", lo=0, hi=4095),
        "settle_s": _nonneg(2.0, "Pause between points (fresh client addresses avoid TIME_WAIT waits)."),
        "httperf": Key("bool", False, "Use httperf instead of our load generator."),
        "docroot_files": Key("int", 36, "Files created in the document root.", lo=1, hi=100000),
        "cpu_quota": Key("float", 1.0, "Share of cpu_server the server process may use (CFS quota; "
                         "1 = no limit); kernel softirq work is not limited.", lo=0.0, hi=1.0, lo_open=True),
    },
}

#: Per-cost override keys accepted in [costs]; filled from simaccept.costs.
def _cost_names() -> tuple[str, ...]:
    from .costs import COST_NAMES
    return COST_NAMES


# --------------------------------------------------------------------------- scenario
@dataclasses.dataclass
class Scenario:
    """A resolved scenario: every key present, typed and in range.

    ``values[section][key]`` holds either a scalar or, for a sweep axis, a
    non-empty list of scalars.  ``source`` is the file it came from.
    """

    values: dict[str, dict[str, Any]]
    source: str = ""
    point_key: tuple[int, ...] = ()
    coords: tuple[tuple[str, Any], ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        # sc.duration = 0.3 made an attribute nothing reads, and the run used the file's value
        if name not in _SCENARIO_FIELDS:
            raise AttributeError(f"a Scenario has no attribute {name!r} to set: a key is set as "
                                 "sc[\"scenario\"][\"duration\"] = 0.3, or load_scenario(..., "
                                 "overrides=[\"scenario.duration=0.3\"])")
        object.__setattr__(self, name, value)

    # -- access
    def __getitem__(self, section: str) -> dict[str, Any]:
        try:
            return self.values[section]
        except KeyError:
            raise UnknownKey(str(section), f"unknown section (known: {', '.join(self.values)})") from None

    def get(self, dotted: str) -> Any:
        if not isinstance(dotted, str) or "." not in dotted:
            raise ScenarioError(str(dotted), "must be section.key (e.g. workload.rate)")
        s, k = dotted.split(".", 1)
        try:
            return self[s][k]
        except KeyError:
            if s not in self.values:
                raise UnknownKey(dotted, f"unknown section {s!r} (known: {', '.join(self.values)})") from None
            raise UnknownKey(dotted, f"unknown key (known in [{s}]: {', '.join(self.values[s])})") from None

    @property
    def name(self) -> str:
        return self.values["scenario"]["name"]

    @property
    def axes(self) -> list[tuple[str, list[Any]]]:
        out = []
        for s, keys in self.values.items():
            for k, v in keys.items():
                if isinstance(v, list):
                    out.append((f"{s}.{k}", v))
        return out

    def points(self) -> list["Scenario"]:
        """The sweep grid as scalar scenarios (one per point), each with its own seed key."""
        if not self.axes:
            return [self]
        # The grid of the values as loading normalises them: a rate set after loading as 20000,
        # np.float64(20000.0) (whose repr is not 20000.0's) or the file's 20000.0 is one point
        # with one random stream, as their records' config says.  A loaded scenario is
        # normalised already.  Raises ScenarioError.
        base = self.resolved()
        axes = base.axes
        names = [a for a, _ in axes]
        out = []
        for combo in itertools.product(*[vals for _, vals in axes]):
            vals = copy.deepcopy(base.values)
            for dotted, v in zip(names, combo):
                s, k = dotted.split(".", 1)
                vals[s][k] = v
            # The seed key depends on the point's coordinates, not its index,
            # so adding a rate to a sweep does not change the other points.
            key = tuple(_axis_seed(n, combo[i]) for i, n in enumerate(names))
            out.append(Scenario(vals, self.source, key, tuple(zip(names, combo))))
        return out

    def point_label(self) -> str:
        return ";".join(f"{a}={v}" for a, v in self.coords)

    def seed_sequence(self) -> np.random.SeedSequence:
        return np.random.SeedSequence(entropy=self.values["scenario"]["seed"], spawn_key=self.point_key)

    def to_json(self) -> str:
        return json.dumps(self.values, sort_keys=True)

    def content_hash(self, simulator: bool = True) -> str:
        """Hash of everything that determines the result (for sweep caching):
        the resolved values, the point's seed key, the *resolved cost values*
        (editing a profile file must not reuse stale points), the simulator's
        version and, unless ``simulator`` is False, :func:`model_fingerprint`
        (editing the model must not reuse them either).  realsys names its
        measured points with ``simulator=False``: they do not depend on the
        simulator's code."""
        from . import __version__
        from .costs import load_costs
        costs = self.values["costs"]
        prof = costs["profile"]
        resolved = ("" if isinstance(prof, list) else
                    json.dumps(load_costs(prof, {k: v for k, v in costs.items()
                                                 if k != "profile" and not isinstance(v, list)}).as_dict(),
                               sort_keys=True))
        key = self.to_json() + repr(self.point_key) + resolved + __version__
        if simulator:
            key += model_fingerprint()
        return hashlib.sha256(key.encode()).hexdigest()[:20]

    def check(self) -> None:
        """Validate the values again, as loading did (they are mutable: ``sc["workload"]["rate"]
        = -5`` after loading).  Raises :class:`ScenarioError`; changes nothing."""
        _resolve(self.values, self.source)

    def resolved(self) -> "Scenario":
        """A copy with its values checked and normalised as loading does them, the point's seed
        key and coordinates kept.  Values set after loading are the caller's Python objects: an
        ``np.float32`` rate is not JSON (the record embeds the config) and ``accept_limit =
        math.inf`` is ``"inf"`` to the servers.  Raises :class:`ScenarioError`."""
        return Scenario(_resolve(copy.deepcopy(self.values), self.source).values, self.source,
                        self.point_key, self.coords)

    def with_overrides(self, overrides: Iterable[str]) -> "Scenario":
        """A copy with ``overrides`` (``section.key=value`` strings) applied and checked as loading
        does.  A sweep point keeps its seed key and coordinates: the point tweaked by one cost is
        measured with the stream it had, so the difference is the tweak's and not seed noise.  A
        coordinate the overrides set to another value takes that value and its stream (as the grid's
        point at that value has); one they make a list is a sweep axis again, and leaves the point's
        key and coordinates.  Raises :class:`ScenarioError`."""
        vals = copy.deepcopy(self.values)
        _apply_overrides(vals, overrides)
        out = _resolve(vals, self.source)
        if not self.coords and not self.point_key:
            return out
        new = [(n, out.get(n)) for n, _ in self.coords]
        if any(isinstance(v, list) for _, v in new):
            return out
        if len(self.point_key) != len(self.coords):       # built by hand: kept as given
            return dataclasses.replace(out, point_key=self.point_key, coords=tuple(new))
        key = tuple(k if v == old else _axis_seed(n, v)
                    for k, (n, v), (_, old) in zip(self.point_key, new, self.coords))
        return dataclasses.replace(out, point_key=key, coords=tuple(new))


_SCENARIO_FIELDS = frozenset(f.name for f in dataclasses.fields(Scenario))


def _toml_value(v: Any) -> str:
    """``v`` written as TOML (as an override's value), for an example in a refusal."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(float(v)) if isinstance(v, float) else repr(int(v))   # inf, -inf, nan are TOML's
    if isinstance(v, str):
        return json.dumps(v)                            # a TOML basic string too
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(map(_toml_value, v)) + "]"
    return str(v)


def _axis_seed(dotted: str, v: Any) -> int:
    """One swept coordinate's part of a point's seed key."""
    if dotted == "costs.profile" and isinstance(v, str) and v.endswith(".toml"):
        # loading makes a profile's path absolute: by its file's name, the stream does not
        # depend on where the checkout is
        v = Path(v).name
    return int.from_bytes(hashlib.sha256(f"{dotted}={v!r}".encode()).digest()[:4], "little")


def _as_override(dotted: Any, v: Any) -> str:
    """``dotted=v`` as an override string takes it, for an example in a refusal."""
    return f"{dotted}={_toml_value(v)}"


def _overrides_example(pairs: Iterable[tuple[Any, Any]]) -> str:
    """A list of override strings for (key, value) pairs; a nested {section: {key: value}} is
    taken as section.key."""
    out = []
    for k, v in pairs:
        if isinstance(v, Mapping):
            out += [_as_override(f"{k}.{kk}", vv) for kk, vv in v.items()]
        else:
            out.append(_as_override(k, v))
    return "[" + ", ".join(map(repr, out[:4])) + (", ...]" if len(out) > 4 else "]")


def _apply_overrides(raw: dict[str, Any], overrides: Iterable[str]) -> None:
    if overrides is None:
        return
    if isinstance(overrides, (str, bytes)):     # iterated, it was one "override" per character
        raise TypeError(f"overrides must be a list of 'section.key=value' strings, got one string {overrides!r}")
    if isinstance(overrides, Mapping) and all(isinstance(k, str) and "=" in k and v is None
                                              for k, v in overrides.items()):
        overrides = list(overrides)             # dict.fromkeys(["a.b=1"]): its keys, as iterating it always took
    elif isinstance(overrides, Mapping):        # iterated, its keys had no value ("must look like section.key=value")
        raise TypeError(f"overrides must be a list of 'section.key=value' strings, not a {type(overrides).__name__}: "
                        f"give {_overrides_example(overrides.items())}")
    try:
        overrides = iter(overrides)
    except TypeError:
        raise TypeError(f"overrides must be a list of 'section.key=value' strings, got {overrides!r}") from None
    for item in overrides:
        if not isinstance(item, str):
            hint = ""
            if isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[0], str):
                hint = f": give {_overrides_example([item])[1:-1]}"
            raise TypeError(f"overrides must be a list of 'section.key=value' strings; one is the "
                            f"{type(item).__name__} {item!r}{hint}")
        if "=" not in item:
            raise ScenarioError(str(item), "override must look like section.key=value")
        dotted, text = item.split("=", 1)
        dotted = dotted.strip()
        if "." not in dotted:
            raise ScenarioError(dotted, "override key must be section.key")
        section, key = dotted.split(".", 1)
        value = _parse_value(text.strip(), dotted)
        sect = raw.setdefault(section, {})
        if not isinstance(sect, dict):
            raise ScenarioError(section, "must be a table")
        sect[key] = value


def _parse_value(text: str, dotted: str = "<override>") -> Any:
    """A --set value is TOML (numbers, booleans, lists, quoted strings); bare words are strings."""
    try:
        doc = tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return text
    except ValueError:          # an integer past Python's 4,300-digit conversion limit
        raise ScenarioError(dotted, _too_many_digits(text)) from None
    except RecursionError:      # tomllib recurses per level: hundreds of [ or { inside one another
        raise ScenarioError(dotted, NESTED_TOO_DEEP) from None
    if len(doc) != 1:
        # "rate=1000\nfoo.bar=1" is a document of two keys: the second was dropped unread, an
        # unknown key or a bad profile among them never refused
        more = ", ".join(sorted(set(doc) - {"v"}))
        raise ScenarioError(dotted, f"a value is one TOML value, but this one goes on to set {more}: "
                                    "give each key its own --set")
    return doc["v"]


#: The reason for a value tomllib cannot read for its nesting (Python's recursion limit).
NESTED_TOO_DEEP = "nested too deeply to read (hundreds of [ or { inside one another)"


def _too_many_digits(text: str) -> str:
    """The reason for an integer literal in ``text`` that Python will not convert (past
    ``sys.get_int_max_str_digits()``, 4,300 by default): its length, not Python's advice to
    raise the limit, which a scenario's author cannot act on."""
    m = max(re.findall(r"[0-9_]+", text), key=len, default="")
    return (f"an integer of {len(m.replace('_', '')):,} digits, more than the "
            f"{sys.get_int_max_str_digits():,} Python reads")


def _unknown_section(section: Any) -> str:
    """Why a section is refused: the schema's sections close to it, else all of them (the
    wording of :meth:`Scenario.get`)."""
    import difflib
    close = difflib.get_close_matches(str(section), list(SCHEMA), n=3, cutoff=0.6)
    if close:
        return f"unknown section; did you mean {' or '.join(f'[{c}]' for c in close)}?"
    return f"unknown section (known: {', '.join(SCHEMA)})"


def _unknown_key(section: str, key: Any, cost_names: Iterable[str] | None = None) -> str:
    """Why ``section.key`` is refused: the same key in another section, else the section's keys
    close to it, else the section's keys (the wording of :meth:`Scenario.get`).  ``[costs]``
    takes ``profile`` and the per-cost names (simaccept.costs.COST_NAMES), listed as ``simaccept
    fit --params`` lists them."""
    import difflib
    known = list(SCHEMA[section])
    if section == "costs":
        known += list(cost_names or _cost_names())
    elsewhere = [f"{s}.{k}" for s, keys in SCHEMA.items() if s != section for k in keys if k == key]
    if elsewhere:
        return f"unknown key in [{section}]; did you mean {' or '.join(map(repr, elsewhere))}?"
    close = difflib.get_close_matches(str(key), known, n=3, cutoff=0.6)
    if close:
        return f"unknown key; did you mean {' or '.join(repr(f'{section}.{c}') for c in close)}?"
    if section == "costs":
        return f"unknown key (known in [costs]: {', '.join(known)})"
    return f"unknown key (known in [{section}]: {', '.join(known)})"


def _resolve(raw: Mapping[str, Any], source: str) -> Scenario:
    if not isinstance(raw, Mapping):
        raise ScenarioError("<document>", "must be a TOML table")
    values: dict[str, dict[str, Any]] = {}
    for section in raw:
        if section not in SCHEMA:
            raise ScenarioError(str(section), _unknown_section(section))
        if not isinstance(raw[section], Mapping):
            raise ScenarioError(str(section), "must be a table of keys")
    cost_names = None
    for section, keys in SCHEMA.items():
        given = dict(raw.get(section, {}))
        out: dict[str, Any] = {}
        for key, spec in keys.items():
            dotted = f"{section}.{key}"
            v = given.pop(key, spec.default)
            out[key] = _check_maybe_list(dotted, spec, v)
        if section == "costs":
            cost_names = cost_names or _cost_names()
            # In COST_NAMES' order, not as written: a swept cost is a sweep axis, and the axes'
            # order builds a point's seed key and label; written the other way round, the same
            # scenario drew other streams.
            for key in cost_names:
                if key in given:
                    out[key] = _check_maybe_list(f"costs.{key}", Key("float", 0.0, "", lo=0.0), given.pop(key))
        if given:
            bad = sorted(given, key=str)[0]     # a dict from JSON or YAML may have a number for a key
            raise ScenarioError(f"{section}.{bad}", _unknown_key(section, bad, cost_names))
        values[section] = out
    from .servers.policies import REGISTRY, PolicyError, policy_class
    pol = values["server"]["policy"]
    for p in (pol if isinstance(pol, list) else [pol]):
        if p not in REGISTRY:
            raise ScenarioError("server.policy", f"unknown policy {_fmt(p)} (have: {', '.join(REGISTRY)})")
        try:
            policy_class(p)
        except PolicyError as e:
            raise ScenarioError("server.policy", str(e)) from None
    # A profile is a file; read it now rather than mid-sweep.  A path is made absolute so
    # that workers (and the record's config) name the same file whatever their directory.
    from .costs import available_profiles, is_profile_path, read_profile, suggest_profile
    profiles = values["costs"]["profile"]
    resolved = []
    for p in (profiles if isinstance(profiles, list) else [profiles]):
        given = p
        if is_profile_path(p):
            try:
                p = str(Path(p).expanduser().resolve())
            except (RuntimeError, OSError, ValueError) as e:   # ~nosuchuser, a NUL byte
                raise ScenarioError("costs.profile", f"{_fmt(p)} cannot be a file's path: {e}") from None
        elif p not in available_profiles():
            if Path(p).is_dir():
                raise ScenarioError("costs.profile", f"{_fmt(p)} is a directory: name a packaged profile "
                                    f"({', '.join(available_profiles())}) or a .toml file")
            raise ScenarioError("costs.profile", f"no cost profile named {_fmt(p)}{suggest_profile(p)} (have: "
                                f"{', '.join(available_profiles())}; or give the path of a .toml file)")
        try:
            read_profile(p)
        except KeyError as e:
            why = e.args[0]
            if why.startswith("no cost profile file"):     # the hint is for the name as given, not made absolute
                why += suggest_profile(given)
            raise ScenarioError("costs.profile", why) from None
        except ValueError as e:
            raise ScenarioError("costs.profile", str(e)) from None
        except OSError as e:         # e.g. a name longer than the file system allows
            raise ScenarioError("costs.profile", f"{_fmt(p)} cannot be opened: {e.strerror or e}") from None
        if p in resolved:
            raise ScenarioError("costs.profile", f"sweep axis has duplicate values ({_fmt(p)} is named twice)")
        resolved.append(p)
    values["costs"]["profile"] = resolved if isinstance(profiles, list) else resolved[0]
    _check_run_size(values)
    return Scenario(values, source)


#: Requests one run may offer (rate x (warm-up + duration), largest sweep point).  The simulator
#: keeps a record per connection in memory, about 0.6 KB each (measured: 171 MB at 200,000), so
#: this is ~12 GB; an unbounded rate (1e8 req/s) used to run until the machine ran out of memory.
#: The thesis's longest runs offer about 4.8 million.
MAX_OFFERED_REQUESTS = 20_000_000


def _check_run_size(values: Mapping[str, Mapping[str, Any]]) -> None:
    def top(v):
        return max(v) if isinstance(v, list) else v
    rate = top(values["workload"]["rate"])
    span = top(values["scenario"]["warmup"]) + top(values["scenario"]["duration"])
    if rate * span > MAX_OFFERED_REQUESTS:
        n = f"{rate * span:,.0f}" if rate * span < 1e12 else f"{rate * span:.3g}"     # not 300 digits
        raise ScenarioError("workload.rate", f"{rate:g} req/s over warm-up + duration ({span:g} s) offers "
                            f"{n} requests, more than the {MAX_OFFERED_REQUESTS:,} a run may "
                            "(one in-memory record per connection): lower the rate or shorten the run")


def _check_maybe_list(dotted: str, spec: Key, v: Any) -> Any:
    if isinstance(v, list):
        if not spec.sweepable:
            raise ScenarioError(dotted, "cannot be a sweep axis (list)")
        if not v:
            raise ScenarioError(dotted, "an empty list is not a sweep axis")
        if len(v) > 10000:
            raise ScenarioError(dotted, f"sweep axis too long ({len(v)} values > 10000)")
        out = [_check(dotted, spec, x) for x in v]
        if len(set(map(repr, out))) != len(out):
            raise ScenarioError(dotted, "sweep axis has duplicate values")
        return out
    if isinstance(v, dict):
        raise ScenarioError(dotted, "must be a value, not a table")
    return _check(dotted, spec, v)


#: Most bytes a scenario file may have.  The largest shipped one is under 3 KB; `simaccept run
#: /dev/zero` read until the kernel's OOM killer stopped it at 24 GB.
MAX_SCENARIO_BYTES = 1 << 20


def _read_capped(p: Path) -> bytes:
    """The file's bytes; ScenarioError past :data:`MAX_SCENARIO_BYTES` (read no further),
    OSError as ``read_bytes``."""
    with open(p, "rb") as f:
        data = f.read(MAX_SCENARIO_BYTES + 1)
    if len(data) > MAX_SCENARIO_BYTES:
        raise ScenarioError("<file>", f"{str(p)!r} is larger than {MAX_SCENARIO_BYTES:,} bytes: not a "
                                      "scenario file")
    return data


def load_scenario(path: str | Path | None = None, overrides: Iterable[str] = (), *,
                  text: str | None = None) -> Scenario:
    """Read a scenario TOML file (or ``text``), apply ``section.key=value`` overrides, validate.

    ``path`` is a file, or, when no file is there, the name of a scenario that comes with
    simaccept (``thesis/userver-onepacket``; :mod:`simaccept.bundled`).

    Raises :class:`ScenarioError` (a ValueError) naming the offending key.
    """
    if text is None:
        if path is None:
            raise ScenarioError("<path>", "no scenario file given")
        if not isinstance(path, (str, os.PathLike)):
            raise ScenarioError("<path>", f"must be a file's path (str or os.PathLike), got {path!r}")
        if not str(path):
            raise ScenarioError("<path>", "the path is empty")      # Path("") is ".", a directory
        p = Path(path)
        try:
            data = _read_capped(p)
        except FileNotFoundError as e:
            # Not a file here: a scenario that comes with simaccept, named (simaccept.bundled).
            from . import bundled
            found = bundled.find(p)
            if found is None:
                raise ScenarioError("<file>", f"cannot read {str(p)!r}: {e.strerror or e}; "
                                    f"{bundled.suggest(p)}") from None
            p = found
            data = _read_capped(p)
        except OSError as e:
            raise ScenarioError("<file>", f"cannot read {str(p)!r}: {e.strerror or e}") from None
        source = str(p)
    else:
        if not isinstance(text, (str, bytes)):
            raise ScenarioError("<document>", f"text must be TOML as a str or bytes, got {type(text).__name__}")
        data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
        source = "<text>"
    try:
        doc = tomllib.loads(data.decode("utf-8-sig"))   # -sig: an editor's byte-order mark is not a key
    except UnicodeDecodeError as e:
        raise ScenarioError("<file>", f"{source!r} is not UTF-8 (byte offset {e.start})") from None
    except tomllib.TOMLDecodeError as e:
        raise _toml_error(e, data, source) from None
    except ValueError:          # an integer past Python's 4,300-digit conversion limit
        raise _long_integer_error(data, source) from None
    except RecursionError:
        raise ScenarioError("<file>", f"{source!r}: {NESTED_TOO_DEEP}") from None
    _apply_overrides(doc, overrides)
    return _resolve(doc, source)


def _long_integer_error(data: bytes, source: str = "<text>") -> ScenarioError:
    """A ScenarioError naming the key whose integer is too long to read, by its line (tomllib
    says only that some number was)."""
    lines = data.decode("utf-8-sig", "replace").split("\n")     # as tomllib numbers lines (not splitlines)
    longest = max(range(len(lines)), key=lambda i: max(map(len, re.findall(r"[0-9_]+", lines[i])), default=0),
                  default=None)
    if longest is None:        # pragma: no cover - tomllib read a number from no line
        return ScenarioError("<file>", "an integer too long to read")
    key = lines[longest].split("=", 1)[0].strip() if "=" in lines[longest] else f"line {longest + 1}"
    section = next((s.strip()[1:-1].strip() for s in reversed(lines[:longest])
                    if s.strip().startswith("[") and s.strip().endswith("]")), None)
    key = f"{section}.{key}" if section and "=" in lines[longest] else key
    where = f"line {longest + 1}" if source == "<text>" else f"{source!r}, line {longest + 1}"
    return ScenarioError(key, f"{where}: {_too_many_digits(lines[longest])}")


def _toml_error(e: Exception, data: bytes, source: str = "<text>") -> ScenarioError:
    """A ScenarioError for a file tomllib refused: the key, when the error is a key set twice
    (tomllib's message gives only its line and column), else the offending line quoted."""
    m = re.search(r"at line (\d+)", str(e))
    # as tomllib numbers lines: splitlines also breaks at U+2028, \f, \x1c..., which a comment
    # may hold, and the error named the key or quoted the line above the one tomllib meant
    lines = data.decode("utf-8-sig", "replace").split("\n")
    if m:
        n = int(m.group(1))
    else:   # "at end of document": the last line with something on it
        n = next((i + 1 for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), 0)
    # a file is named: the error of a file the user did not know was read named nothing
    what = "not valid TOML" if source == "<text>" else f"{source!r} is not valid TOML"
    if not 1 <= n <= len(lines):
        return ScenarioError("<file>", f"{what}: {e}")
    text = lines[n - 1].strip()
    if "overwrite" in str(e) or "declare" in str(e):
        def header(ln: str) -> str | None:
            # "[workload]   # the load" is table workload: strip("[]") kept the comment, and
            # the key set twice under it was named "workload]   # the load.rate"
            h = re.match(r"\s*\[\[?\s*([^\[\]#]*?)\s*\]", ln)
            return h.group(1) if h else None
        own = header(text)
        key = (own if own is not None else text.split("=", 1)[0]).strip().strip('"')
        table = next((h for ln in reversed(lines[:n - 1]) if (h := header(ln)) is not None), "")
        dotted = f"{table}.{key}" if table and own is None and "=" in text else key
        where = "the file" if source == "<text>" else repr(source)
        return ScenarioError(dotted, f"set twice in {where} (again at line {n}); each key may appear once")
    shown = text if len(text) <= 80 else text[:77] + "..."
    return ScenarioError("<file>", f"{what}: {e}: {shown!r}")


def scenario_from_dict(doc: Mapping[str, Any], overrides: Iterable[str] = ()) -> Scenario:
    """Like :func:`load_scenario` for an already-parsed document (a mapping of sections)."""
    if not isinstance(doc, Mapping):
        raise ScenarioError("<document>", f"must be a mapping of sections to tables (a parsed TOML "
                                          f"document), got {type(doc).__name__}")
    raw = copy.deepcopy(dict(doc))
    _apply_overrides(raw, overrides)
    return _resolve(raw, "<dict>")

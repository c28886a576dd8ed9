"""The host's send buffer with ``server.sndbuf_freed = "acked"``: freed by the client's ACKs,
writable again by tcp_poll's rule."""
import numpy as np
import pytest

from simaccept import load_scenario, simulate
from simaccept.costs import scenario_costs
from simaccept.host import E_WRITABLE, Host


def host_for(**overrides):
    overrides = {"server.sndbuf_freed": '"acked"', **overrides}
    sc = load_scenario(text="", overrides=[f"{k}={v}" for k, v in overrides.items()]).resolved()
    return Host(sc, np.random.default_rng(sc.seed_sequence()), scenario_costs(sc), 10.0)


def writable_events(h, c):
    return sorted(t for t, _, kind, conn in h.heap if kind == E_WRITABLE and conn == c)


@pytest.mark.parametrize("sndbuf, delay_ms", [(65536, 0.1), (65536, 5.0), (16384, 0.1), (5000, 0.0)])
def test_a_full_buffer_is_writable_again_when_a_third_of_it_is_acknowledged(sndbuf, delay_ms):
    """Linux's tcp_poll reports a socket writable once its free space is at least half of
    what is queued: with the buffer full, when the client has ACKed a third of it.  A
    byte is ACKed one round trip after it left the NIC, so that is a third of the
    chunk's wire time plus the round trip; until then the free space grows from zero."""
    h = host_for(**{"server.sndbuf": sndbuf, "network.delay_ms": delay_ms,
                    "workload.kind": '"one-packet"', "workload.reply_bytes": 1_000_000})
    c = 0
    h.rem[c] = 1_000_000
    t = 0.001
    assert h.send_space(t, c) == sndbuf                    # nothing queued
    left = h.write(t, c, sndbuf)
    assert left == 1_000_000 - sndbuf
    nic = h.nics[h.nic_of[c]]
    wire = (sndbuf + -(-sndbuf // h.mss) * 66) / nic.bytes_per_s
    rtt = 2 * delay_ms / 1000.0
    (wake,) = writable_events(h, c)
    assert wake == pytest.approx(t + rtt + wire / 3, rel=1e-9)
    assert h._unacked_bytes(wake, c) == pytest.approx(2 * sndbuf / 3, rel=1e-9)
    assert h.send_space(t + rtt, c) <= 1 + sndbuf * 1e-9   # nothing ACKed a round trip after the start
    assert h.send_space(wake, c) == int(sndbuf - 2 * sndbuf / 3)
    assert h.send_space(t + wire + rtt, c) == sndbuf       # all of it ACKed


def test_the_next_call_writes_what_was_freed_and_the_last_call_clears_the_buffer():
    h = host_for(**{"server.sndbuf": 65536, "network.delay_ms": 0.1})
    c = 0
    h.rem[c] = 200_000
    h.write(0.0, c, 65536)
    (wake,) = writable_events(h, c)
    late = wake + 0.0001
    free = h.send_space(late, c)
    assert 65536 / 3 < free < 65536
    h.write(late, c, free)
    assert h._unacked_bytes(late, c) == pytest.approx(65536, abs=1)
    (wake2,) = [w for w in writable_events(h, c) if w > wake]
    assert h._unacked_bytes(wake2, c) == pytest.approx(2 * 65536 / 3, rel=1e-9)
    assert h.write(wake2, c, h.rem[c]) == 0                # the rest fits: the reply is done
    assert c not in h.unacked                              # the next request ACKs it all


@pytest.mark.parametrize("server", ["userver", "tux", "knot"])
def test_a_reply_longer_than_the_buffer_waits_a_round_trip_per_buffer(server):
    """A connection sends no faster than its send buffer per round trip: a reply of s
    bytes through an S-byte buffer over a 10 ms round trip takes at least (s / S - 1)
    round trips more than through a buffer that holds it whole, where the NIC alone
    would send either in about the same wire time.  SPECweb99-like replies at a light
    load (nothing queues): the mean response time grows by at least the mean of that
    floor over the run's requests.  When the NIC's send freed the buffer, every server
    answered as fast through 64 KB as through 1 GB (10.22 against 10.24 ms, userver), as
    ``sndbuf_freed = "sent"`` still does."""
    def run(sndbuf, freed="acked"):
        sc = load_scenario(text="", overrides=[f'server.sndbuf_freed="{freed}"',
            f'server.kind="{server}"', 'workload.kind="specweb99"', "workload.rate=300.0",
            "scenario.duration=5.0", "scenario.warmup=0.5", f"server.sndbuf={sndbuf}",
            "network.delay_ms=5.0", "client.timeout=10.0"])
        return simulate(sc, raise_errors=True, return_host=True)
    small, host = run(65536)
    whole, _ = run(1 << 30)
    assert small.replies_per_s > 250 and whole.replies_per_s > 250
    sizes = np.asarray(host.sizes, dtype=float)
    rtt_ms = 10.0
    floor_ms = float(np.mean(np.maximum(0.0, sizes / 65536 - 1.0))) * rtt_ms
    rounds_ms = float(np.mean(np.ceil(sizes / 65536) - 1.0)) * rtt_ms
    extra = small.resp_ms_mean - whole.resp_ms_mean
    assert floor_ms > 0.5
    assert floor_ms < extra < 3 * rounds_ms
    sent, _ = run(65536, "sent")
    whole_sent, _ = run(1 << 30, "sent")
    assert abs(sent.resp_ms_mean - whole_sent.resp_ms_mean) < 0.1 * floor_ms


def test_sent_is_the_buffer_freed_when_the_nic_has_sent_the_chunk():
    h = host_for(**{"server.sndbuf_freed": '"sent"', "server.sndbuf": 65536, "network.delay_ms": 5.0})
    c = 0
    h.rem[c] = 200_000
    h.write(0.0, c, 65536)
    (wake,) = writable_events(h, c)
    assert wake == h.nics[h.nic_of[c]].free_at
    assert h.send_space(0.0, c) == 65536 and not h.unacked


def test_a_connection_closed_mid_reply_leaves_no_send_buffer_behind():
    """Only the client's ACKs free a buffer; a connection the server closes before its
    reply is done never writes again, so its record goes at close (it stayed to the end
    of the run)."""
    h = host_for(**{"server.sndbuf": 65536, "network.delay_ms": 0.1})
    c = 0
    h.rem[c] = 200_000
    h.n_open = 1
    h.write(0.0, c, 65536)
    assert c in h.unacked
    h.close(0.0001, c)
    assert c not in h.unacked and h.n_open == 0

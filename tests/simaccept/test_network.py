"""The server's transmit link (simaccept.network.NIC): one FIFO queue of bytes at the
link's rate, each segment carrying its header overhead."""
import pytest
from hypothesis import given, settings, strategies as st

from simaccept.network import NIC, make_nics


def wire_time(nic, nbytes, overhead=66, mss=1448):
    segs = max(1, -(-nbytes // mss))
    return (nbytes + segs * overhead) / nic.bytes_per_s


@pytest.mark.parametrize("nbytes, segments", [(0, 1), (1, 1), (1448, 1), (1449, 2), (14_480, 10), (65_536, 46)])
def test_a_send_on_an_idle_link_leaves_after_its_bytes_and_one_header_per_segment(nbytes, segments):
    nic = NIC(1000.0, 0.0001)
    done = nic.transmit(2.0, nbytes)
    assert done == pytest.approx(2.0 + (nbytes + 66 * segments) * 8 / 1e9, rel=1e-12)
    assert nic.free_at == done


@settings(max_examples=200, deadline=None)
@given(sends=st.lists(st.tuples(st.floats(min_value=0.0, max_value=0.01), st.integers(min_value=0, max_value=200_000)),
                      min_size=1, max_size=40))
def test_the_link_is_fifo_and_work_conserving(sends):
    """Each send leaves after everything queued before it and its own bytes, never before
    it was made: departures in order, and busy time is exactly the bytes' wire time."""
    nic = NIC(1000.0, 0.0)
    sends = sorted(sends)
    done_prev, busy = 0.0, 0.0
    for t, n in sends:
        done = nic.transmit(t, n)
        w = wire_time(nic, n)
        assert done == pytest.approx(max(t, done_prev) + w, rel=1e-12, abs=1e-15)
        assert done >= done_prev and done > t
        busy += w
        done_prev = done
    # the link idles only while nothing is queued
    assert done_prev <= sends[-1][0] + busy + 1e-12
    assert done_prev >= busy - 1e-12


def test_make_nics_gives_independent_links():
    a, b = make_nics(2, 1000.0, 0.1)
    assert a.delay == b.delay == 0.0001
    a.transmit(0.0, 100_000)
    assert b.free_at == 0.0

"""The CPU's kernel work while the server is blocked (simaccept.cpu.CPU.charge_kernel):
it runs at once on an idle CPU, after the work already queued otherwise."""
import pytest
from hypothesis import given, settings, strategies as st

from simaccept.cpu import CPU


def test_kernel_work_on_an_idle_cpu_ends_its_cost_after_it_arrives():
    cpu = CPU()
    cpu.charge_kernel(1.0, 0.002)
    assert cpu.kbusy == pytest.approx(1.002)
    cpu.charge_kernel(1.001, 0.003)               # arrives while the first still runs
    assert cpu.kbusy == pytest.approx(1.005)
    cpu.charge_kernel(2.0, 0.001, "kernel_timer")
    assert cpu.kbusy == pytest.approx(2.001)
    assert cpu.snapshot() == pytest.approx({"kernel:kernel_net": 0.005, "kernel:kernel_timer": 0.001})


@settings(max_examples=200, deadline=None)
@given(work=st.lists(st.tuples(st.floats(min_value=0.0, max_value=1.0), st.floats(min_value=0.0, max_value=0.01)),
                     max_size=50))
def test_kernel_work_is_a_fifo_single_server_queue(work):
    """kbusy is when the last work queued ends: never before the last arrival plus its
    cost, and never later than all the work run after the last arrival."""
    cpu = CPU()
    work = sorted(work)
    total = 0.0
    for t, c in work:
        before = cpu.kbusy
        cpu.charge_kernel(t, c)
        assert cpu.kbusy == pytest.approx(max(before, t) + c, rel=1e-12, abs=1e-15)
        total += c
    if work:
        assert work[-1][0] + work[-1][1] - 1e-12 <= cpu.kbusy <= work[-1][0] + total + 1e-9
        assert cpu.snapshot()["kernel:kernel_net"] == pytest.approx(total, abs=1e-12)

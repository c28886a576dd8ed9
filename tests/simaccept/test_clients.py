"""The open-loop arrival stream (simaccept.clients.arrival_times): httperf's --rate clients
start connections on their own clock, whatever the server does."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from simaccept.clients import arrival_times

rates = st.floats(min_value=0.5, max_value=50_000.0)
ends = st.floats(min_value=0.01, max_value=5.0)
hosts = st.integers(min_value=1, max_value=8)
seeds = st.integers(min_value=0, max_value=2**32 - 1)


@settings(max_examples=200, deadline=None)
@given(rate=rates, t_end=ends, n_hosts=hosts, seed=seeds, law=st.sampled_from(["deterministic", "poisson"]))
def test_the_stream_is_sorted_inside_the_run_and_the_same_from_the_same_seed(rate, t_end, n_hosts, seed, law):
    t = arrival_times(np.random.default_rng(seed), rate, t_end, law, n_hosts)
    assert t.ndim == 1 and np.all(np.diff(t) >= 0.0)
    assert t.size == 0 or (t[0] >= 0.0 and t[-1] < t_end)
    again = arrival_times(np.random.default_rng(seed), rate, t_end, law, n_hosts)
    assert np.array_equal(t, again)


@settings(max_examples=200, deadline=None)
@given(rate=rates, t_end=ends, n_hosts=hosts, seed=seeds)
def test_httperf_rate_sends_each_hosts_share_on_a_fixed_period(rate, t_end, n_hosts, seed):
    """httperf --rate: one connection every hosts / rate seconds per process, each process
    from a phase of its own in its first period; so the run holds rate * t_end of them,
    give or take one a process at the ends."""
    t = arrival_times(np.random.default_rng(seed), rate, t_end, "deterministic", n_hosts)
    assert abs(t.size - rate * t_end) <= n_hosts
    if n_hosts == 1 and t.size > 1:
        assert np.allclose(np.diff(t), 1.0 / rate, rtol=1e-9, atol=1e-12)
        assert t[0] < 1.0 / rate


def test_the_hosts_are_staggered_not_in_step():
    t = arrival_times(np.random.default_rng(7), 1000.0, 1.0, "deterministic", 2)
    assert t.size == 1000
    gaps = np.diff(t)
    # two streams of period 2 ms, each from its own random phase: the gaps alternate
    # between the phase difference and its complement, not 1 ms each
    assert not np.allclose(gaps, 0.001)
    assert np.allclose(gaps[0:-1:2] + gaps[1::2], 0.002)


@pytest.mark.parametrize("rate, t_end, n_hosts", [(20_000.0, 2.0, 2), (300.0, 20.0, 1), (5000.0, 4.0, 8)])
def test_poisson_arrivals_have_the_rate_and_exponential_gaps(rate, t_end, n_hosts):
    t = arrival_times(np.random.default_rng(2004), rate, t_end, "poisson", n_hosts)
    expected = rate * t_end
    assert abs(t.size - expected) < 5 * np.sqrt(expected)
    # the merge of independent Poisson streams is Poisson: gaps with mean and sd 1 / rate
    gaps = np.diff(t)
    assert gaps.mean() == pytest.approx(1.0 / rate, rel=5 / np.sqrt(gaps.size))
    assert gaps.std() == pytest.approx(1.0 / rate, rel=10 / np.sqrt(gaps.size))


@pytest.mark.parametrize("rate", [0.0, -5.0])
def test_no_rate_no_connections(rate):
    assert arrival_times(np.random.default_rng(1), rate, 10.0).size == 0

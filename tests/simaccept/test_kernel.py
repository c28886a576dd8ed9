"""Trace tests: each drop rule fires exactly under its condition, for both profiles."""
import pytest

from simaccept.kernel import PROFILES, Drop, ListenSocket, SynVerdict


def sock(profile, backlog=128, cookies=False, **kw):
    return ListenSocket(PROFILES[profile], backlog, cookies, **kw)


def fill_acceptq(ls, n):
    ls.acceptq.extend(range(10_000, 10_000 + n))


# ---------------------------------------------------------------- linux-2.4
def test_24_backlog_clamped_to_somaxconn_and_acceptq_holds_backlog_plus_one():
    ls = sock("linux-2.4", backlog=1000)
    assert ls.backlog == 128
    fill_acceptq(ls, 128)
    assert not ls.acceptq_full()
    fill_acceptq(ls, 1)
    assert ls.acceptq_full()


def test_24_drop_request_at_three_quarters_exactly():
    ls = sock("linux-2.4")
    ls.synq_len, ls.young = 768, 0
    assert ls.on_syn() == SynVerdict.QUEUED          # 1024 - 768 = 256, not < 256
    assert ls.synq_len == 769
    assert ls.on_syn() == SynVerdict.DROPPED          # 1024 - 769 = 255 < 256
    assert ls.last_drop == Drop.DROP_REQUEST
    assert ls.drops == [0, 0, 1, 0]


def test_24_no_drop_request_with_syncookies():
    ls = sock("linux-2.4", cookies=True)
    ls.synq_len = 1000
    assert ls.on_syn() == SynVerdict.QUEUED


def test_24_acceptq_full_drops_only_with_more_than_one_young():
    ls = sock("linux-2.4")
    fill_acceptq(ls, 129)
    ls.synq_len, ls.young = 5, 1
    assert ls.on_syn() == SynVerdict.QUEUED          # young == 1: admitted
    assert ls.young == 2
    assert ls.on_syn() == SynVerdict.DROPPED          # young == 2 > 1
    assert ls.last_drop == Drop.ACCEPTQ_FULL
    ls2 = sock("linux-2.4")
    fill_acceptq(ls2, 128)
    ls2.young = 50
    assert ls2.on_syn() == SynVerdict.QUEUED          # not full: no drop whatever young is


@pytest.mark.parametrize("sysctl, synq_max", [(1024, 1024), (1000, 1024), (1025, 2048), (100, 128),
                                              (64, 64), (16, 64), (1, 64)])
def test_24_synq_sized_to_a_power_of_two_of_at_least_64(sysctl, synq_max):
    # tcp_listen_start: for (max_qlen_log = 6; ; max_qlen_log++) if ((1 << max_qlen_log) >= sysctl) break;
    ls = sock("linux-2.4", cookies=True, max_syn_backlog=sysctl)
    assert ls.max_syn_backlog == sysctl and ls.synq_max == synq_max
    ls.synq_len = synq_max - 1
    assert ls.on_syn() == SynVerdict.QUEUED           # a cookie only once the rounded size is reached
    assert ls.on_syn() == SynVerdict.COOKIE


def test_24_drop_request_reads_the_sysctl_not_the_rounded_size():
    ls = sock("linux-2.4", max_syn_backlog=1000)      # SYN queue 1024; 3/4 line from 1000
    ls.synq_len = 750
    assert ls.on_syn() == SynVerdict.QUEUED           # 1000 - 750 = 250, not < 250
    assert ls.on_syn() == SynVerdict.DROPPED and ls.last_drop == Drop.DROP_REQUEST


def test_6_synq_not_rounded():
    assert sock("linux-6", backlog=100).synq_max == 100


def test_24_synq_full_with_cookies_is_a_cookie_counted_synqfull():
    ls = sock("linux-2.4", cookies=True)
    ls.synq_len = 1023
    assert ls.on_syn() == SynVerdict.QUEUED
    assert ls.on_syn() == SynVerdict.COOKIE
    assert ls.drops[Drop.SYNQ_FULL] == 1 and ls.synq_len == 1024


def test_24_synq_full_without_cookies_drops():
    ls = sock("linux-2.4")
    ls.synq_len = 1024
    assert ls.on_syn() == SynVerdict.DROPPED and ls.last_drop == Drop.SYNQ_FULL


@pytest.mark.parametrize("profile", ["linux-2.4", "linux-6"])
def test_listen_overflow_keeps_the_request(profile):
    ls = sock(profile)
    assert ls.on_syn() == SynVerdict.QUEUED
    fill_acceptq(ls, ls.backlog + 1)
    assert not ls.on_ack(1, True, True)
    assert ls.drops[Drop.LISTEN_OVERFLOW] == 1 and ls.synq_len == 1
    ls.accept()
    assert ls.on_ack(1, True, True)
    assert ls.synq_len == 0 and ls.young == 0 and ls.acceptq[-1] == 1


def test_synack_retransmission_ages_a_request():
    ls = sock("linux-2.4")
    ls.on_syn()
    ls.on_syn()
    assert ls.young == 2
    ls.synack_retransmitted(True)
    assert ls.young == 1
    fill_acceptq(ls, 129)
    assert ls.on_syn() == SynVerdict.QUEUED           # only one young left


# ---------------------------------------------------------------- linux-6
def test_6_synq_limit_is_backlog_with_gt_test():
    ls = sock("linux-6", backlog=16, cookies=False)
    ls.synq_len = 16
    assert ls.on_syn() == SynVerdict.QUEUED           # 16 > 16 is false
    assert ls.on_syn() == SynVerdict.DROPPED and ls.last_drop == Drop.SYNQ_FULL


def test_6_synq_full_with_cookies_answers_with_cookie():
    ls = sock("linux-6", backlog=16, cookies=True)
    ls.synq_len = 17
    assert ls.on_syn() == SynVerdict.COOKIE
    assert ls.synq_len == 17


def test_6_acceptq_full_drops_unconditionally():
    ls = sock("linux-6", backlog=16)
    fill_acceptq(ls, 17)
    ls.young = 0
    assert ls.on_syn() == SynVerdict.DROPPED and ls.last_drop == Drop.ACCEPTQ_FULL
    ls2 = sock("linux-6", backlog=16)
    fill_acceptq(ls2, 16)
    assert ls2.on_syn() == SynVerdict.QUEUED


def test_6_drop_request_measured_against_max_syn_backlog():
    ls = sock("linux-6", backlog=4096, cookies=False)
    assert ls.max_syn_backlog == 2048
    ls.synq_len = 1536
    assert ls.on_syn() == SynVerdict.QUEUED
    assert ls.on_syn() == SynVerdict.DROPPED and ls.last_drop == Drop.DROP_REQUEST
    ls2 = sock("linux-6", backlog=4096, cookies=True)
    ls2.synq_len = 1600
    assert ls2.on_syn() == SynVerdict.QUEUED          # cookies on: no 3/4 rule


def test_6_syn_retransmissions_linear_then_doubling():
    p = PROFILES["linux-6"]
    assert [p.syn_send_offset(k, 1.0) for k in range(1, 7)] == [1, 2, 3, 4, 5, 7]
    p24 = PROFILES["linux-2.4"]
    assert [p24.syn_send_offset(k, 3.0) for k in range(1, 4)] == [3, 9, 21]


@pytest.mark.parametrize("synq_len, young, expected", [
    (64, 64, 5),        # at half the backlog (128): not over it, every retransmission
    (65, 0, 2),         # over half, none young: down to the floor of 2
    (65, 40, 5),        # young * 2 > qlen: the loop stops at once
    (65, 33, 5),        # 66 > 65 still
    (65, 32, 4),        # qlen >= 2 young, < 4 young
    (65, 16, 3),        # >= 4 young, < 8 young
    (65, 8, 2),         # >= 8 young: the floor
    (200, 60, 4),       # 200 >= 120, < 240
])
def test_6_synack_retries_fall_while_the_synq_is_over_half_the_backlog(synq_len, young, expected):
    # reqsk_timer_handler's rule, row by row: the limit falls from tcp_synack_retries by one for
    # each doubling of the young count the SYN queue's length reaches, never below 2
    ls = sock("linux-6", backlog=128)
    ls.synq_len, ls.young = synq_len, young
    assert ls.synack_retries_now(5) == expected
    assert ls.synack_retries_now(2) == 2                # already at the floor


def test_6_synack_retries_small_backlog_uses_eight():
    # max(8U, sk_max_ack_backlog): with a backlog of 4, five requests are not yet over the line
    ls = sock("linux-6", backlog=4)
    ls.synq_len, ls.young = 4, 0
    assert ls.synack_retries_now(5) == 5
    ls.synq_len = 5
    assert ls.synack_retries_now(5) == 2

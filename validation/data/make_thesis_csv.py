#!/usr/bin/env python3
"""Write validation/data/thesis.csv: every measurement the thesis states in numbers.

Pariag, "Using accept() Strategies to Improve Server Performance", MMath thesis,
University of Waterloo, 2004.

The numbers below are copied by hand from the thesis text and tables; none are
read off figures and none are computed.  Each row is one
(server, workload, accept_limit, target_rate) configuration; numbers from
several tables about the same configuration are merged into one row.  See
README.md for the column meanings and for the numbers left out on purpose.

Run:  python3 validation/data/make_thesis_csv.py   (stdlib only)
"""
import csv
import io
import os
import tempfile

COLUMNS = [
    "source", "scenario", "server", "mux", "accept_limit", "workload", "target_rate",
    "duration_s", "replies_per_s", "accept_rate", "n_accept_phases", "c_avg",
    "total_accepts", "select_calls_per_s", "fds_per_select", "fd_rate", "qdrops_per_s",
    "drops_synq_full", "drops_acceptq_full", "drops_drop_request",
    "drops_listen_overflow", "drops_total", "resp_ms_mean", "connect_ms_mean",
    "open_conns_mean", "work_items_per_phase", "conn_reqs_per_s", "cpu_share_select",
    "cpu_share_accept", "cpu_share_read", "cpu_share_write", "cpu_share_writev",
    "cpu_share_sendfile", "cpu_share_close", "cpu_share_setsockopt",
    "peak_replies_per_s", "pct_of_peak", "cite", "note",
]

# Thesis ch. 4 intro: "each data point is the result of a two minute experiment".
DURATION_S = 120

GPROF_NOTE = ("cpu_share_* from a separate gprof-instrumented re-run at the same "
              "target rate")
QDROP_NOTE = ("drop counts from a re-run under the kernel with added drop counters "
              "(sec 5.1.1); totals over the run as printed; no SynQFull column "
              "(syncookies were off)")
SPECWEB_3_1_TEXT = ("table 4.3 text says Accept-1 'nearly tripling' time in read: "
                    "15.02/5.92 is 2.5x")


def pct(x):
    """gprof percentage as printed -> fraction, kept to the printed precision."""
    return round(x / 100.0, 6)


ROWS = [
    # ------------------------------------------------------------------
    # muserver, SPECweb99-like workload (sec 4.1.1, tables 4.1-4.3, sec 5.2)
    # ------------------------------------------------------------------
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="1", workload="specweb99", target_rate=26000,
         replies_per_s=8888, select_calls_per_s=1248, fds_per_select=21.6,
         fd_rate=26957, n_accept_phases=184323, c_avg=0.97, total_accepts=178061,
         accept_rate=1208,
         cpu_share_select=pct(39.96), cpu_share_accept=pct(2.41),
         cpu_share_read=pct(5.92), cpu_share_setsockopt=pct(5.66),
         cpu_share_write=pct(3.77), cpu_share_sendfile=pct(21.72),
         cpu_share_close=pct(2.17),
         cite="table 4.1; table 4.2; table 4.3; sec 4.1.1 text",
         note=GPROF_NOTE + "; total_accepts/accept_rate = 147.4 s, not 120 s; text "
              "says Accept-1 'returns 38.2% fewer new connections' but 1,208 is 27.7% "
              "fewer than 1,670 (Accept-Inf is 38.2% faster)"),
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="10", workload="specweb99", target_rate=26000,
         replies_per_s=11470, select_calls_per_s=177, fds_per_select=171.3,
         fd_rate=30320, n_accept_phases=26275, c_avg=8.81, total_accepts=231395,
         accept_rate=1570,
         cite="table 4.1; table 4.2; sec 4.1.1 text",
         note="total_accepts/accept_rate = 147.4 s, not 120 s"),
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="inf", workload="specweb99", target_rate=26000,
         replies_per_s=12249, select_calls_per_s=35, fds_per_select=885.8,
         fd_rate=31003, n_accept_phases=5202, c_avg="47.30", total_accepts=246063,
         accept_rate=1670,
         cpu_share_select=pct(5.49), cpu_share_accept=pct(1.32),
         cpu_share_read=pct(15.02), cpu_share_setsockopt=pct(10.75),
         cpu_share_write=pct(6.66), cpu_share_sendfile=pct(43.88),
         cpu_share_close=pct(3.48),
         cite="table 4.1; table 4.2; table 4.3; sec 4.1.1 text",
         note=GPROF_NOTE + "; sec 4.1.1 text attributes the 35 select calls/s to "
              "'Accept-1' (typo; table 4.1 gives it to Accept-Inf); "
              "total_accepts/accept_rate = 147.3 s, not 120 s; " + SPECWEB_3_1_TEXT),
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="1", workload="specweb99", target_rate=30000,
         accept_rate=1127, resp_ms_mean=3100,
         cite="sec 4.1.1 text; sec 5.2 text",
         note="accept_rate 'averages only 1,127 new connections per second (39% "
              "fewer)' than Accept-Inf's 1,571: 1,127 is 28% fewer (1,571 is 39% more); "
              "resp_ms_mean = '3.1 seconds', client-side mean time per HTTP 1.1 request"),
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="10", workload="specweb99", target_rate=30000,
         pct_of_peak="0.90",
         cite="sec 4.2.1 text",
         note="'falls to 90% of peak'; the 30,000 req/s rate is implied by the "
              "sentence's context (comparison with the one-packet values at 30,000), "
              "not stated; absolute peak not stated"),
    dict(scenario="thesis/userver-specweb99", server="userver", mux="select",
         accept_limit="inf", workload="specweb99", target_rate=30000,
         accept_rate=1571, resp_ms_mean=4600, pct_of_peak=0.86,
         cite="sec 4.1.1 text; sec 4.2.1 text; sec 5.2 text",
         note="resp_ms_mean = '4.6 seconds'; pct_of_peak 'falls to 86% of peak' with "
              "the 30,000 req/s rate implied by context, not stated; absolute peak "
              "not stated"),
    # ------------------------------------------------------------------
    # TUX, SPECweb99-like workload (sec 4.1.2, tables 4.4, 4.5)
    # ------------------------------------------------------------------
    dict(scenario="thesis/tux-specweb99", server="tux", accept_limit="inf",
         workload="specweb99", target_rate=26000,
         n_accept_phases=430, c_avg=503.82, total_accepts=216641, accept_rate=1474,
         replies_per_s=11788, work_items_per_phase=11083,
         cite="table 4.4; table 4.5; sec 4.1.2 text",
         note="default TUX policy; from a separately instrumented TUX build; "
              "work_items_per_phase = avg work_pending items per work-phase; "
              "total_accepts/accept_rate = 147.0 s, not 120 s (text: '1,474 versus "
              "1,734 accepts/sec', i.e. 17.6% increase for Accept-1)"),
    dict(scenario="thesis/tux-specweb99", server="tux", accept_limit="1",
         workload="specweb99", target_rate=26000,
         n_accept_phases=233639, c_avg=0.99, total_accepts=233639, accept_rate=1734,
         replies_per_s=12710, work_items_per_phase=46,
         cite="table 4.4; table 4.5; sec 4.1.2 text",
         note="from a separately instrumented TUX build; c_avg printed 0.99 although "
              "n_accept_phases = total_accepts (would be 1.00); total_accepts/accept_rate "
              "= 134.7 s (147.0 s for Accept-Inf in the same table), not 120 s"),
    # ------------------------------------------------------------------
    # Table 4.6: client-side demand for new connections (httperf)
    # ------------------------------------------------------------------
    dict(scenario="thesis/demand-onepacket", server="", accept_limit="",
         workload="one-packet", target_rate=20000, conn_reqs_per_s=20000,
         cite="table 4.6",
         note="aggregated from httperf statistics on the clients; server and accept "
              "policy not stated (table sits in the muserver section 4.2.1)"),
    dict(scenario="thesis/demand-specweb99", server="", accept_limit="",
         workload="specweb99", target_rate=20000, conn_reqs_per_s=2542,
         cite="table 4.6",
         note="aggregated from httperf statistics on the clients; server and accept "
              "policy not stated; 20,000/2,542 = 7.87 requests per connection vs the "
              "7.2 (sec 3.3.1) / 7.24 (sec 4.2.1) stated for the workload"),
    # ------------------------------------------------------------------
    # muserver, one-packet workload (sec 4.2.1, tables 4.7-4.9, 5.1, sec 5.1.1)
    # ------------------------------------------------------------------
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="1", workload="one-packet", peak_replies_per_s=19500,
         cite="sec 4.2.1 text",
         note="'peak throughput from 19,500 replies/sec using the naive Accept-1 "
              "strategy'; text also says Accept-1's peak is 7.1% below Accept-Inf's "
              "(whose absolute peak is not stated)"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="10", workload="one-packet", peak_replies_per_s=22000,
         cite="sec 4.2.1 text",
         note="'to 22,000 replies/sec using the Accept-10 strategy' (+13% over Accept-1)"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="1", workload="one-packet", target_rate=27000,
         replies_per_s=9442, select_calls_per_s=11372, fds_per_select=3.6,
         fd_rate=40939, n_accept_phases=1398961, c_avg=0.99, total_accepts=1398152,
         accept_rate=11365,
         cpu_share_select=pct(32.43), cpu_share_accept=pct(6.81),
         cpu_share_read=pct(6.17), cpu_share_writev=pct(0.02),
         cpu_share_close=pct(7.36), cpu_share_setsockopt=pct(2.11),
         drops_acceptq_full=1207341, drops_drop_request=2872130,
         drops_listen_overflow=549146, drops_total=4628617,
         work_items_per_phase=3.6,
         cite="table 4.7; table 4.8; table 4.9; table 5.1; sec 5.1.1 text",
         note="sec 5.1.1 text gives 11,071 select calls/s for this point (table 4.7: "
              "11,372); work_items_per_phase = 'average work-phase ... processes just "
              "3.6 connections' (sec 5.1.1); n_accept_phases > total_accepts "
              "(c_avg would be 0.9994); total_accepts/accept_rate = 123.0 s; "
              + GPROF_NOTE + " (table 4.9 prints 'writew' = writev; sec 4.2.1 text "
              "quotes read as '13.17%' for Accept-1, which is the Difference column; "
              "the Accept-1 value is 6.17); " + QDROP_NOTE),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="10", workload="one-packet", target_rate=27000,
         replies_per_s=13845, select_calls_per_s=1724, fds_per_select=26.4,
         fd_rate=45513, n_accept_phases=212087, c_avg=9.53, total_accepts=2021944,
         accept_rate=16436,
         cite="table 4.7; table 4.8",
         note="total_accepts/accept_rate = 123.0 s, not 120 s; sec 4.2.1 text says "
              "Accept-10's fds per select 'plateaus at approximately 26'"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="inf", workload="one-packet", target_rate=27000,
         replies_per_s=15918, select_calls_per_s=262, fds_per_select=191.5,
         fd_rate=50173, n_accept_phases=32249, c_avg=70.43, total_accepts=2271144,
         accept_rate=18462,
         cpu_share_select=pct(15.84), cpu_share_accept=pct(9.78),
         cpu_share_read=pct(19.34), cpu_share_writev=pct(0.04),
         cpu_share_close=pct(16.14), cpu_share_setsockopt=pct(2.98),
         drops_acceptq_full=2015457, drops_drop_request=681558,
         drops_listen_overflow=356740, drops_total=3053755,
         work_items_per_phase=192.8,
         cite="table 4.7; table 4.8; table 4.9; table 5.1; sec 4.2.1 text; "
              "sec 5.1.1 text",
         note="sec 5.1.1 text gives 251 select calls/s for this point (table 4.7: 262); "
              "sec 4.2.1 text rounds fds per select to 192; work_items_per_phase = "
              "'average work-phase ... processes 192.8 connections' (sec 5.1.1) vs "
              "191.5 fds per select in table 4.7; total_accepts/accept_rate = 123.0 s; "
              + GPROF_NOTE + " (table 4.9 prints 'writew' = writev); " + QDROP_NOTE),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="inf", workload="one-packet", target_rate=24000,
         fds_per_select=107,
         cite="sec 4.2.1 text",
         note="'At 24,000 reqs/sec, each call returns 107 fds'"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="inf", workload="one-packet", target_rate=30000,
         fds_per_select=205, pct_of_peak=0.71,
         cite="sec 4.2.1 text",
         note="'205 fds/call at 30,000 reqs/sec'; 'degrading to ... 71% of ... peak'; "
              "Accept-Inf's absolute peak is not stated"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="1", workload="one-packet", target_rate=30000,
         replies_per_s=8741, pct_of_peak=0.45,
         cite="sec 4.2.1 text",
         note="'falls to 8,741 replies/sec which is a mere 45% of peak' "
              "(peak 19,500: 8,741/19,500 = 0.448)"),
    dict(scenario="thesis/userver-onepacket", server="userver", mux="select",
         accept_limit="10", workload="one-packet", target_rate=30000,
         pct_of_peak=0.58,
         cite="sec 4.2.1 text",
         note="'degrading to 58% ... of their respective peak throughputs at 30,000 "
              "reqs/sec'; absolute reply rate not stated"),
    # ------------------------------------------------------------------
    # TUX, one-packet workload (sec 4.2.2, table 4.10, table 5.2)
    # ------------------------------------------------------------------
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="1",
         workload="one-packet", peak_replies_per_s=25001,
         cite="sec 4.2.2 text",
         note="'peak reply rate of 25,001 replies/sec' (+22% over Accept-Inf)"),
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="inf",
         workload="one-packet", peak_replies_per_s=20457,
         cite="sec 4.2.2 text",
         note="default TUX policy; 'whose peak is at 20,457 replies/sec'"),
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="inf",
         workload="one-packet", target_rate=23000,
         n_accept_phases=237551, c_avg=9.54, total_accepts=2266760, accept_rate=18430,
         replies_per_s=18470,
         cite="table 4.10",
         note="default TUX policy; table column is 'Reply Rate'; reply rate (18,470) "
              "exceeds accept rate (18,430) although each connection carries one "
              "request; total_accepts/accept_rate = 123.0 s, not 120 s"),
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="1",
         workload="one-packet", target_rate=23000,
         n_accept_phases=2759968, c_avg=0.99, total_accepts=2759968, accept_rate=22980,
         replies_per_s=22997,
         cite="table 4.10; sec 4.2.2 text",
         note="table column is 'Reply Rate'; reply rate (22,997) exceeds accept rate "
              "(22,980) although each connection carries one request; c_avg printed "
              "0.99 although n_accept_phases = total_accepts; total_accepts/accept_rate "
              "= 120.1 s (123.0 s for Accept-Inf in the same table)"),
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="inf",
         workload="one-packet", target_rate=27000,
         drops_acceptq_full=1867979, drops_drop_request=524095,
         drops_listen_overflow=412237, drops_total=2804311,
         cite="table 5.2",
         note="default TUX policy; " + QDROP_NOTE),
    dict(scenario="thesis/tux-onepacket", server="tux", accept_limit="1",
         workload="one-packet", target_rate=27000,
         drops_acceptq_full=144472, drops_drop_request=704737,
         drops_listen_overflow=519474, drops_total=1368683,
         cite="table 5.2",
         note=QDROP_NOTE),
    # ------------------------------------------------------------------
    # Knot (Knot-C, 1,000 threads, Cluster 2), one-packet workload (sec 4.2.3)
    # ------------------------------------------------------------------
    dict(scenario="thesis/knot-onepacket", server="knot", accept_limit="1",
         workload="one-packet", peak_replies_per_s=12000,
         cite="sec 4.2.3 text",
         note="default Knot policy; 'peak throughput increases by 17% from 12,000 to "
              "14,000 replies/sec'; Knot ran on Cluster 2 (other hardware than "
              "muserver/TUX)"),
    dict(scenario="thesis/knot-onepacket", server="knot", accept_limit="50",
         workload="one-packet", peak_replies_per_s=14000,
         cite="sec 4.2.3 text",
         note="Knot ran on Cluster 2 (other hardware than muserver/TUX)"),
    dict(scenario="thesis/knot-onepacket", server="knot", accept_limit="50",
         workload="one-packet", target_rate=15000, open_conns_mean=25000,
         cite="sec 4.2.3 text",
         note="'approximately 25,000 active connections' from Knot's printed "
              "statistics (active connections, taken here as open_conns_mean)"),
    dict(scenario="thesis/knot-onepacket", server="knot", accept_limit="100",
         workload="one-packet", target_rate=15000,
         cite="sec 4.2.3 text",
         note="'between 44,000 to 48,000 active connections' from Knot's printed "
              "statistics; a range, so open_conns_mean is left empty rather than "
              "invent a midpoint"),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "thesis.csv")
    seen = set()
    # Every row is checked before the file is touched, and the file is replaced whole: written in
    # place, a bad row (or Ctrl-C) left a thesis.csv cut short that still parsed, and every fit and
    # report then ran on fewer rows without saying so.
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS, quoting=csv.QUOTE_MINIMAL,
                       lineterminator="\n")
    w.writeheader()
    for r in ROWS:
        row = {c: "" for c in COLUMNS}
        unknown = set(r) - set(COLUMNS)
        if unknown:
            raise SystemExit("unknown columns %s in %r" % (unknown, r))
        row.update({k: ("" if v is None else v) for k, v in r.items()})
        row["source"] = "paper"
        row["duration_s"] = DURATION_S
        key = (row["server"], row["workload"], row["accept_limit"],
               row["target_rate"], row["scenario"])
        if key in seen:
            raise SystemExit("duplicate configuration %r" % (key,))
        seen.add(key)
        w.writerow(row)
    fd, tmp = tempfile.mkstemp(dir=here, prefix=".thesis.csv.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            f.write(buf.getvalue())
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise
    print("wrote %d rows to %s" % (len(ROWS), out))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Self-check for validation/data/thesis.csv (stdlib only).

Structural checks (a failure here is a transcription/format bug -> exit 1):
  * the header is exactly the agreed column list, in order;
  * every row has source=paper, a scenario and a cite;
  * server/workload/accept_limit/mux take only the agreed values;
  * every numeric cell parses; fractions lie in [0, 1];
  * one row per (server, workload, accept_limit, target_rate);
  * peak rows have no target_rate and no replies_per_s.

Identity checks the thesis itself states (a mismatch may be a genuine
inconsistency in the thesis; it is printed, not "fixed", exit status stays 0
unless --strict):
  * fd_rate ~= select_calls_per_s * fds_per_select       (within 1 %)  tables 4.1/4.7
  * accept_rate * duration_s ~= total_accepts             (within 2 %)  eq. 4.1 text
  * n_accept_phases * c_avg ~= total_accepts              (within 2 %)  eq. 4.1
  * drops_total == sum of the drop categories             (exact)       tables 5.1/5.2
  * c_avg <= accept_limit                                  eq. 4.2
  * pct_of_peak ~= replies_per_s / peak of the same policy (within 0.01)
  * one-packet: replies_per_s <= accept_rate (one request per connection)

Usage: python3 validation/data/check_thesis_csv.py [path/to/thesis.csv] [--strict]
"""
import csv
import os
import sys

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
TEXT_COLS = {"source", "scenario", "server", "mux", "accept_limit", "workload",
             "cite", "note"}
NUMERIC_COLS = [c for c in COLUMNS if c not in TEXT_COLS]
INT_COLS = {"target_rate", "n_accept_phases", "total_accepts", "drops_synq_full",
            "drops_acceptq_full", "drops_drop_request", "drops_listen_overflow",
            "drops_total"}
FRACTION_COLS = {c for c in COLUMNS if c.startswith("cpu_share_")} | {"pct_of_peak"}
DROP_CATS = ["drops_synq_full", "drops_acceptq_full", "drops_drop_request",
             "drops_listen_overflow"]
SERVERS = {"userver", "tux", "knot"}
WORKLOADS = {"one-packet", "specweb99"}


def label(i, r):
    return "line %d [%s %s %s @%s]" % (i, r["server"] or "-", r["workload"],
                                      "Accept-" + (r["accept_limit"] or "?"),
                                      r["target_rate"] or "peak")


def main(argv):
    strict = "--strict" in argv
    args = [a for a in argv if not a.startswith("--")]
    path = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                             "thesis.csv")
    errors, mismatches = [], []

    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        header = reader.fieldnames
        rows = list(reader)

    if header != COLUMNS:
        missing = [c for c in COLUMNS if c not in (header or [])]
        extra = [c for c in (header or []) if c not in COLUMNS]
        errors.append("header mismatch: missing=%s extra=%s order_ok=%s"
                      % (missing, extra, not missing and not extra))

    num = []  # parsed numeric values per row
    keys = {}
    for i, r in enumerate(rows, start=2):  # line number in file (header = 1)
        lab = label(i, r)
        if r["source"] != "paper":
            errors.append("%s: source=%r, expected 'paper'" % (lab, r["source"]))
        if not r["scenario"].strip():
            errors.append("%s: empty scenario" % lab)
        if not r["cite"].strip():
            errors.append("%s: empty cite" % lab)
        if r["server"] and r["server"] not in SERVERS:
            errors.append("%s: bad server %r" % (lab, r["server"]))
        if r["workload"] not in WORKLOADS:
            errors.append("%s: bad workload %r" % (lab, r["workload"]))
        if r["server"] == "userver" and r["mux"] != "select":
            errors.append("%s: userver rows need mux=select" % lab)
        if r["server"] in ("tux", "knot") and r["mux"]:
            errors.append("%s: mux must be empty for %s" % (lab, r["server"]))
        al = r["accept_limit"]
        if al and al != "inf":
            try:
                if int(al) < 1:
                    raise ValueError
            except ValueError:
                errors.append("%s: bad accept_limit %r" % (lab, al))
        if bool(r["server"]) != bool(al):
            errors.append("%s: server and accept_limit must be both set or both empty"
                          % lab)

        v = {}
        for c in NUMERIC_COLS:
            s = r[c].strip()
            if s == "":
                continue
            try:
                x = float(s)
            except ValueError:
                errors.append("%s: %s=%r does not parse" % (lab, c, s))
                continue
            if c in INT_COLS and x != int(x):
                errors.append("%s: %s=%r should be an integer" % (lab, c, s))
            if c in FRACTION_COLS and not 0.0 <= x <= 1.0:
                errors.append("%s: %s=%r not a fraction in [0,1]" % (lab, c, s))
            if x < 0:
                errors.append("%s: %s=%r negative" % (lab, c, s))
            v[c] = x
        num.append(v)

        if "peak_replies_per_s" in v and ("target_rate" in v or "replies_per_s" in v):
            errors.append("%s: a peak row must leave target_rate and replies_per_s empty"
                          % lab)
        if not any(c in v for c in NUMERIC_COLS if c not in ("target_rate", "duration_s")):
            print("info: %s holds no numeric measurement (see its note: %s)"
                  % (lab, r["note"][:90]))

        key = (r["server"], r["workload"], al, r["target_rate"])
        if key in keys:
            errors.append("%s: same configuration as line %d" % (lab, keys[key]))
        keys[key] = i

    def rel(a, b):
        return abs(a - b) / abs(b) if b else float("inf")

    peaks = {}
    for r, v in zip(rows, num):
        if "peak_replies_per_s" in v:
            peaks[(r["server"], r["workload"], r["accept_limit"])] = v["peak_replies_per_s"]

    for i, (r, v) in enumerate(zip(rows, num), start=2):
        lab = label(i, r)
        if {"select_calls_per_s", "fds_per_select", "fd_rate"} <= v.keys():
            prod = v["select_calls_per_s"] * v["fds_per_select"]
            if rel(prod, v["fd_rate"]) > 0.01:
                mismatches.append("%s: select_calls_per_s*fds_per_select = %.0f vs fd_rate "
                                  "%.0f (%+.2f%%)" % (lab, prod, v["fd_rate"],
                                                     100 * (prod / v["fd_rate"] - 1)))
        if {"accept_rate", "duration_s", "total_accepts"} <= v.keys():
            prod = v["accept_rate"] * v["duration_s"]
            if rel(prod, v["total_accepts"]) > 0.02:
                mismatches.append("%s: accept_rate*duration_s = %.0f vs total_accepts %.0f "
                                  "(%+.2f%%; implied duration %.1f s)"
                                  % (lab, prod, v["total_accepts"],
                                     100 * (prod / v["total_accepts"] - 1),
                                     v["total_accepts"] / v["accept_rate"]))
        if {"n_accept_phases", "c_avg", "total_accepts"} <= v.keys():
            prod = v["n_accept_phases"] * v["c_avg"]
            if rel(prod, v["total_accepts"]) > 0.02:
                mismatches.append("%s: n_accept_phases*c_avg = %.0f vs total_accepts %.0f "
                                  "(%+.2f%%)" % (lab, prod, v["total_accepts"],
                                                 100 * (prod / v["total_accepts"] - 1)))
        cats = [c for c in DROP_CATS if c in v]
        if "drops_total" in v and cats:
            s = sum(v[c] for c in cats)
            if s != v["drops_total"]:
                mismatches.append("%s: sum of drop categories %s = %.0f vs drops_total %.0f"
                                  % (lab, cats, s, v["drops_total"]))
        if "c_avg" in v and r["accept_limit"] not in ("", "inf"):
            if v["c_avg"] > int(r["accept_limit"]):
                mismatches.append("%s: c_avg %.2f > accept_limit %s (violates eq. 4.2)"
                                  % (lab, v["c_avg"], r["accept_limit"]))
        pk = peaks.get((r["server"], r["workload"], r["accept_limit"]))
        if pk and "pct_of_peak" in v and "replies_per_s" in v:
            ratio = v["replies_per_s"] / pk
            if abs(ratio - v["pct_of_peak"]) > 0.01:
                mismatches.append("%s: replies_per_s/peak = %.3f vs pct_of_peak %.2f"
                                  % (lab, ratio, v["pct_of_peak"]))
        if r["workload"] == "one-packet" and {"replies_per_s", "accept_rate"} <= v.keys():
            if v["replies_per_s"] > v["accept_rate"]:
                mismatches.append("%s: replies_per_s %.0f > accept_rate %.0f with one "
                                  "request per connection"
                                  % (lab, v["replies_per_s"], v["accept_rate"]))

    print("%s: %d rows, %d columns" % (path, len(rows), len(header or [])))
    for e in errors:
        print("ERROR  " + e)
    for m in mismatches:
        print("MISMATCH  " + m)
    print("%d structural errors, %d identity mismatches (mismatches may be genuine "
          "thesis inconsistencies; see README.md)" % (len(errors), len(mismatches)))
    if errors or (strict and mismatches):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""validation.report: the sec-5 statements comparing the μserver with TUX (cross_server)."""
from __future__ import annotations

import math

from simaccept.record import RunRecord
from validation.report import CROSS_SERVER, cross_server, cross_server_markdown

RATES = [10000.0, 20000.0, 26000.0, 30000.0]


def _line(values):
    return [RunRecord(source="sim", target_rate=r, replies_per_s=v, status="ok") for r, v in zip(RATES, values)]


def _lines(over=None):
    """Lines that satisfy every statement; ``over`` replaces (group, policy) lines; None drops one."""
    base = {
        ("tux-specweb99", "inf"): [9900, 11500, 11800, 11600],
        ("tux-specweb99", "1"): [9950, 12500, 12700, 12600],
        ("userver-specweb99-select", "inf"): [9950, 12000, 12250, 12100],
        ("userver-specweb99-select", "1"): [9900, 9500, 8900, 9062],      # 11600 / 9062 = 1.28
        ("tux-one-packet", "inf"): [10000, 19000, 18000, 16083],
        ("userver-one-packet-select", "1"): [10000, 17000, 10000, 8741],  # 16083 / 8741 = 1.84
    }
    base.update(over or {})
    out: dict[str, dict[str, list[RunRecord]]] = {}
    for (g, p), v in base.items():
        if v is not None:
            out.setdefault(g, {})[p] = _line(v)
    return out


def _by_id(rows):
    return {r["id"]: r for r in rows}


def test_every_statement_holds_on_lines_built_to_satisfy_it():
    rows = cross_server(_lines())
    assert len(rows) == len(CROSS_SERVER)
    assert all(r["holds"] is True for r in rows), [(r["id"], r["per_rate"]) for r in rows]
    ratio = _by_id(rows)["onepacket-tux-inf-vs-userver-1"]["per_rate"][0]
    assert ratio["rate"] == 30000.0 and math.isclose(ratio["ratio"], 16083 / 8741)


def test_ratio_more_than_ten_percent_off_fails():
    # TUX Accept-Inf one-packet at 30k: 11,141 (the simulator's at the time of writing) is 1.27x, not 1.84x
    rows = _by_id(cross_server(_lines({("tux-one-packet", "inf"): [10000, 19000, 18000, 11141]})))
    r = rows["onepacket-tux-inf-vs-userver-1"]
    assert r["holds"] is False
    assert math.isclose(r["per_rate"][0]["error"], (11141 / 8741) / 1.84 - 1)


def test_greater_and_within_fail_at_one_rate():
    # TUX Accept-Inf above the μserver's at 30k only; TUX Accept-1 15 % above at 20k only
    rows = _by_id(cross_server(_lines({("tux-specweb99", "inf"): [9900, 11500, 11800, 12200],
                                         ("tux-specweb99", "1"): [9950, 13800, 12700, 12600]})))
    g = rows["specweb-userver-inf-beats-tux-inf"]
    assert g["holds"] is False and [p["ok"] for p in g["per_rate"]] == [True, False]
    w = rows["specweb-userver-inf-within-10-of-tux-1"]
    assert w["holds"] is False and [p["rate"] for p in w["per_rate"] if not p["ok"]] == [20000.0]


def test_missing_line_is_not_a_verdict_and_says_which():
    rows = _by_id(cross_server(_lines({("tux-one-packet", "inf"): None})))
    r = rows["onepacket-tux-inf-vs-userver-1"]
    assert r["holds"] is None and "tux-one-packet accept-inf" in r["why"]
    md = "\n".join(cross_server_markdown(list(rows.values())))
    assert "3 of 3 hold" in md and "not simulated: tux-one-packet accept-inf" in md


def test_failed_points_are_ignored():
    lines = _lines()
    bad = lines["tux-one-packet"]["inf"][-1]
    lines["tux-one-packet"]["inf"][-1] = RunRecord(source="sim", target_rate=bad.target_rate,
                                                   replies_per_s=math.nan, status="error")
    r = _by_id(cross_server(lines))["onepacket-tux-inf-vs-userver-1"]
    assert r["holds"] is None and r["why"] == "no common rate"

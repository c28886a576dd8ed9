"""A measured row's config as this version reads it.

A results.csv row keeps the resolved scenario it was measured at (its ``config`` column,
JSON).  A key added to the schema since is missing from an older row.  It takes its default,
which keeps what came before, except where the test bed did otherwise before the key existed;
those exceptions are :func:`as_measured`'s, shared by the runner (which recognises a folder's
rows to resume it) and validation (which simulates them).
"""
from __future__ import annotations

import json


def as_measured(doc: dict) -> dict:
    """``doc``, a row's parsed config, with each key it predates that the test bed did not run
    at its default set to what it ran at; changed in place and returned."""
    cl = doc.get("client")
    if isinstance(cl, dict) and "timeout_from" not in cl:
        # Recorded before client.timeout_from existed, when loadgen had one deadline from
        # the first SYN to the reply; httperf's timer has always restarted at connect.
        rs = doc.get("realsys") if isinstance(doc.get("realsys"), dict) else {}
        cl["timeout_from"] = "connect" if rs.get("httperf") else "first-syn"
    return doc


def resolved_doc(config: str, defaults: dict) -> dict | None:
    """A row's config as a point of this version resolves it: :func:`as_measured`, then each
    other key the row predates at its value in ``defaults`` (an empty scenario's resolved
    values).  A key the schema no longer has is kept, so the row matches no point.  None for
    text that is not a JSON table."""
    try:
        doc = json.loads(config)
    except (ValueError, RecursionError):
        return None
    if not isinstance(doc, dict):
        return None
    as_measured(doc)
    for section, keys in defaults.items():
        sect = doc.get(section)
        if isinstance(sect, dict):
            for k, d in keys.items():
                sect.setdefault(k, d)
    return doc


def resolved_now(config: str, defaults: dict) -> str:
    """:func:`resolved_doc` as a point of this version writes it (``Scenario.to_json()``); text
    that is not a JSON table is returned as it is."""
    doc = resolved_doc(config, defaults)
    return config if doc is None else json.dumps(doc, sort_keys=True)

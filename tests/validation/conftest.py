"""Fixtures shared by the validation tests."""
from __future__ import annotations

import pytest

import simaccept
from simaccept.sweep import records_to_csv


@pytest.fixture(scope="session")
def one_run_csv(tmp_path_factory):
    """One short simulated μserver run past saturation (Accept-1 at 24,000 req/s), as
    `simaccept sweep` writes its results.csv: the records file the CLI refusal tests hand in."""
    sc = simaccept.load_scenario("scenarios/thesis/userver-onepacket.toml",
                                 ["workload.rate=24000", "server.accept_limit=1", "scenario.warmup=0.5",
                                  "scenario.duration=1", "scenario.seed=3"])
    rec = simaccept.simulate(sc)
    assert rec.status == "ok"
    p = tmp_path_factory.mktemp("one-run") / "results.csv"
    p.write_text(records_to_csv([rec]))
    return p

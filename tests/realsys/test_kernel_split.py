"""tools/kernel_split.py: the measured runs' own least-squares split of kernel time per reply
into per-packet and per-NET_RX-run costs (known-defects.md quotes it for the committed runs)."""
import importlib.util
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("kernel_split", ROOT / "tools" / "kernel_split.py")
kernel_split = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(kernel_split)


def test_the_split_recovers_costs_that_made_the_rows():
    rng = np.random.default_rng(5)
    rows = [{"packets": p, "runs": r, "kernel_us": 2.0 * p + 12.0 * r + rng.normal(0, 0.5)}
            for p, r in zip(rng.uniform(6, 8, 40), rng.uniform(2.5, 5.5, 40))]
    s = kernel_split.split(rows)
    assert s["n"] == 40
    assert s["per_packet_us"] == pytest.approx(2.0, abs=3 * s["per_packet_se"])
    assert s["per_run_us"] == pytest.approx(12.0, abs=3 * s["per_run_se"])
    assert 0 < s["per_run_se"] < 0.5 and s["residual_sd"] == pytest.approx(0.5, rel=0.3)


def test_too_few_runs_are_refused():
    with pytest.raises(ValueError, match="at least three"):
        kernel_split.split([{"packets": 7, "runs": 4, "kernel_us": 60}] * 2)


def test_the_committed_fit_runs_give_the_figures_known_defects_quotes():
    from validation import machine
    rows = kernel_split.run_rows(machine.fit_records())
    s = kernel_split.split(rows)
    assert s["n"] == 32
    assert (round(s["per_packet_us"], 2), round(s["per_packet_se"], 2)) == (0.88, 1.28)
    assert (round(s["per_run_us"], 2), round(s["per_run_se"], 2)) == (13.59, 2.14)
    assert round(s["correlation"], 2) == -0.99
    text = (ROOT / "docs" / "known-defects.md").read_text()
    assert "13.6 ± 2.1 µs per NET_RX run" in text and "0.9 ± 1.3 µs per packet" in text

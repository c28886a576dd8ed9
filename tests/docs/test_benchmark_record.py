"""docs/performance.md includes benchmarks/README.md as the record of every full run, newest first:
each run's section is titled by its date (a section of 24 Nov was still "the last full run" below
the runs of 1 and 3 Dec)."""
import re
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmark_runs_are_titled_by_date_newest_first():
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    heads = re.findall(r"^## Figures of (.*)$", text, re.M)
    assert len(heads) >= 2, heads
    dates = []
    for h in heads:
        m = re.search(r"(\d{1,2} [A-Z][a-z]{2})(?: (\d{4}))?", h)
        assert m, f"a run's section is not titled by its date: {h!r}"
        dates.append(datetime.strptime(f"{m.group(1)} {m.group(2) or 2026}", "%d %b %Y"))
    assert dates == sorted(dates, reverse=True), heads

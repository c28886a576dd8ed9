"""validation/data/make_thesis_csv.py: the committed thesis.csv is its output, and a bad row
leaves the file as it was."""
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "validation" / "data" / "make_thesis_csv.py"


def _copy(tmp_path: Path, extra: str = "") -> Path:
    text = SCRIPT.read_text(encoding="utf-8")
    marker = "\n\ndef main():"
    assert marker in text
    (tmp_path / "make_thesis_csv.py").write_text(text.replace(marker, "\n" + extra + marker, 1), encoding="utf-8")
    return tmp_path / "make_thesis_csv.py"


def test_the_committed_thesis_csv_is_the_scripts_output(tmp_path):
    r = subprocess.run([sys.executable, str(_copy(tmp_path))], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "thesis.csv").read_bytes() == (ROOT / "validation" / "data" / "thesis.csv").read_bytes()


def test_a_bad_row_leaves_the_file_as_it_was(tmp_path):
    # written in place, a duplicate row stopped the script after half the file (15 of 30 lines)
    shutil.copy(ROOT / "validation" / "data" / "thesis.csv", tmp_path / "thesis.csv")
    before = (tmp_path / "thesis.csv").read_bytes()
    script = _copy(tmp_path, "ROWS.insert(1, dict(ROWS[0]))\n")
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "duplicate configuration" in r.stderr, r.stderr
    assert (tmp_path / "thesis.csv").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["make_thesis_csv.py", "thesis.csv"]

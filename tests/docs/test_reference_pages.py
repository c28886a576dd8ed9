"""The API reference pages (docs/reference.md, docs/api-validation.md) render what the code
documents: the scenario keys, the package's own API, and every module a documented docstring
sends the reader to."""
import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = ROOT / "docs" / "reference.md", ROOT / "docs" / "api-validation.md"


def _documented() -> set[str]:
    return set(re.findall(r"automodule:: ([\w.]+)", "".join(p.read_text() for p in PAGES)))


def _doc_comment_above(path: Path, name: str) -> list[str]:
    """The ``#:`` lines right above the module-level assignment of ``name`` (what autodoc renders)."""
    src = path.read_text().splitlines()
    for node in ast.parse("\n".join(src)).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            out, i = [], node.lineno - 2
            while i >= 0 and src[i].startswith("#:"):
                out.insert(0, src[i])
                i -= 1
            return out
    raise AssertionError(f"{name} not assigned in {path}")


def test_schema_is_documented_and_its_comment_is_its_own():
    from simaccept.scenario import SCHEMA
    path = ROOT / "simaccept" / "scenario.py"
    schema_doc = " ".join(_doc_comment_above(path, "SCHEMA"))
    assert "Section -> key -> spec" in schema_doc, "SCHEMA has no #: comment, so the reference omits every key"
    assert "Section" not in " ".join(_doc_comment_above(path, "MAX_ACCEPT_LIMIT"))
    if "None" in schema_doc and "default" in schema_doc:
        assert any(k.default is None for keys in SCHEMA.values() for k in keys.values())


def test_the_package_api_is_in_the_reference():
    """Every name of ``simaccept.__all__`` is rendered: the package's automodule lists its
    members with a docstring (conf.py: members, no undoc-members), so a class or function
    without one would be left out silently; a constant is rendered from its ``#:`` comment
    in the documented module that assigns it."""
    import inspect
    import simaccept
    documented = _documented()
    assert "simaccept" in documented
    for name in simaccept.__all__:
        obj = getattr(simaccept, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert (obj.__doc__ or "").strip(), f"simaccept.{name} has no docstring: the reference omits it"
            continue
        homes = []
        for path in sorted((ROOT / "simaccept").rglob("*.py")):
            mod = ".".join(path.relative_to(ROOT).with_suffix("").parts).replace(".__init__", "")
            try:
                comment = _doc_comment_above(path, name)
            except AssertionError:
                continue
            homes.append((mod, comment))
        assert homes, f"simaccept.{name} is assigned in no module"
        assert any(mod in documented and comment for mod, comment in homes), \
            f"simaccept.{name}: no documented module gives it a #: comment ({homes})"


def test_every_module_a_documented_docstring_points_to_is_documented():
    documented = _documented()
    missing = []
    for pkg in ("simaccept", "validation", "realsys"):
        for p in (ROOT / pkg).rglob("*.py"):
            mod = ".".join(p.relative_to(ROOT).with_suffix("").parts).replace(".__init__", "")
            if mod not in documented:
                continue
            for role, target in re.findall(r":(mod|func|class|data|meth|attr|exc):`~?([\w.]+)`", p.read_text()):
                parts = target.split(".")
                if parts[0] not in ("simaccept", "validation", "realsys"):
                    continue
                for i in range(len(parts), 0, -1):
                    try:
                        importlib.import_module(".".join(parts[:i]))
                    except ImportError:
                        continue
                    owner = ".".join(parts[:i])
                    if owner not in documented:
                        missing.append(f"{mod}: :{role}:`{target}` ({owner} is on no reference page)")
                    break
    assert not missing, "\n".join(missing)


def _as_built(lines: list[str], name: str) -> list[str]:
    """A module attribute's ``#:`` comment as the docs build renders it (docs/conf.py's extensions)."""
    import runpy
    extensions = runpy.run_path(str(ROOT / "docs" / "conf.py"))["extensions"]
    if "sphinx.ext.napoleon" in extensions:
        from sphinx.ext.napoleon import Config, GoogleDocstring
        return str(GoogleDocstring(lines, Config(), what="data", name=name)).splitlines()
    return lines


def test_an_attribute_comment_is_rendered_as_written():
    """Napoleon read the first ``word: rest`` of a ``#:`` comment as a type: report.METRICS was
    rendered "Type: metric -> (kind, tolerance, name in the tables).  kind"."""
    from sphinx.pycode import ModuleAnalyzer
    garbled = []
    for mod in sorted(_documented()):
        for (cls, name), lines in ModuleAnalyzer.for_module(mod).find_attr_docs().items():
            lines = [ln for ln in lines if ln.strip()]
            if not cls and any(":type:" in ln for ln in _as_built(lines, f"{mod}.{name}")):
                garbled.append(f"{mod}.{name}: {lines[0][:60]!r}")
    assert not garbled, "\n".join(garbled)


def test_every_record_column_has_a_row_with_its_unit():
    # the units were in source comments only: drops_* are counts over the window, beside rates
    import re

    from simaccept.record import COLUMNS, CPU_CATEGORIES
    text = (ROOT / "docs" / "reference.md").read_text()
    table = text[text.index("### The record's columns"):]
    rows = {}
    for line in table.splitlines():
        m = re.match(r"\| (`[^|]+`) \| ([^|]+) \| [^|]+ \|$", line)
        if m:
            for name in re.findall(r"`([a-z0-9_<>]+)`", m.group(1)):
                rows[name] = m.group(2).strip()
    named = {c for c in COLUMNS if not c.startswith("cpu_share_")} | {"cpu_share_<fn>"}
    assert named == set(rows), (sorted(named - set(rows)), sorted(set(rows) - named))
    for c in CPU_CATEGORIES:
        assert f"`{c}`" in table.split("cpu_share_<fn>")[1].splitlines()[0], c
    assert {c for c in COLUMNS if c.startswith("drops_")} <= {c for c, u in rows.items() if u == "count"}


def test_the_scenario_keys_page_is_simaccept_keys_markdown():
    # the keys were a dict's repr on the reference page; the page is generated, and must follow SCHEMA
    from simaccept.cli import key_rows, keys_markdown
    from simaccept.scenario import SCHEMA
    page = (ROOT / "docs" / "scenario-keys.md").read_text()
    table = page[page.index("| key |"):].strip()
    assert table == keys_markdown(key_rows()), "docs/scenario-keys.md: regenerate with `simaccept keys --markdown`"
    for section, keys in SCHEMA.items():
        for name in keys:
            assert f"| `{section}.{name}` |" in table


def test_the_tutorial_names_every_file_the_cache_key_leaves_out():
    # it said "the CLI, the sweep driver and plotting": an edit to bundled.py or fingerprint.py
    # reuses cached points too
    from simaccept.fingerprint import NOT_MODEL
    text = " ".join((ROOT / "docs/tutorial.md").read_text().split())
    m = re.search(r"but that of `simaccept\.fingerprint\.NOT_MODEL`: (.*?); comments", text)
    assert m, "the tutorial's sentence on what the cache key covers is gone"
    assert set(re.findall(r"`([\w.]+\.py)`", m.group(1))) == set(NOT_MODEL)

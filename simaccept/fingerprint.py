"""The simulator's model fingerprint: which code a simulated record comes from.

A simulated point is reused (sweep cache, validation cache) only by the same simulator,
and an analysis committed under ``docs/validation/`` is flagged stale once the simulator
it was computed with has changed.  Both compare :func:`model_fingerprint`.

This module is itself in :data:`NOT_MODEL`: how the code is hashed cannot change a
simulated result, so mending it must not make every cached point and committed
analysis stale.
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path


#: Modules of the package that only orchestrate or draw: their code cannot change a
#: simulated record, so editing them (a plot tweak) does not invalidate cached points.
NOT_MODEL = frozenset({"__main__.py", "bundled.py", "cli.py", "figures.py", "fingerprint.py", "plots.py",
                       "sweep.py"})


def model_fingerprint(root: str | None = None) -> str:
    """Hash of the simulator's code (every ``.py`` of the package under ``root``, default this
    package, but :data:`NOT_MODEL`), comments, docstrings and blank lines left out
    (:func:`model_source`).

    A researcher's first move is to edit the model; a sweep cache keyed only by the
    scenario and a version string that nobody bumps would then answer the new model
    with points the old one computed.  What cannot change a result is not hashed: a
    corrected comment or docstring must not cost a validation report that takes hours
    to simulate again.  Cost profiles are not hashed here: their resolved values are
    part of :meth:`Scenario.content_hash` already.

    The files are read again whenever a name, inode, size, mtime or ctime under ``root`` changes,
    not once per process: a notebook that edits ``host.py`` and reloads it
    (``%autoreload``) must not be served the old model's cached points."""
    base = Path(root) if root is not None else Path(__file__).resolve().parent
    stamp = []
    for p in sorted(base.rglob("*.py")):
        rel = p.relative_to(base).as_posix()
        if rel in NOT_MODEL or "__pycache__" in rel:
            continue
        st = p.stat()
        stamp.append((rel, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))   # as a profile's key (costs)
    return _hash_sources(str(base), tuple(stamp))


@functools.lru_cache(maxsize=64)
def _hash_sources(base: str, stamp: tuple[tuple, ...]) -> str:
    # stamp is the cache key only; the hash is of the code, so a copy of the package
    # (other mtimes) hashes the same.
    h = hashlib.sha256()
    for rel, *_ in stamp:
        text = (Path(base) / rel).read_bytes().decode("utf-8", "replace")   # PEP 3120; not the locale's
        h.update(rel.encode() + b"\0" + model_source(text).encode() + b"\0")
    return h.hexdigest()[:16]


def model_source(text: str) -> str:
    """``text`` (a module's source) less its comments, docstrings, trailing blanks and blank lines.

    Done on the text, at the positions the parser and tokenizer give, not on an ``ast.dump``:
    the dump's fields change between Python versions, and the same code must hash the same
    under every interpreter the package supports.  A module that does not parse is kept
    whole (its import fails anyway)."""
    import ast
    import io
    import tokenize
    try:
        tree = ast.parse(text)
        comments = [t.start for t in tokenize.generate_tokens(io.StringIO(text).readline)
                    if t.type == tokenize.COMMENT]
    except (SyntaxError, tokenize.TokenError, ValueError):
        return text
    rows = text.split("\n")                        # as the parser numbers lines (not splitlines)
    lines = [ln.encode() for ln in rows]
    # (row, col, end row, end col) to cut, rows 1-based, columns in UTF-8 bytes as ast gives
    # them (tokenize counts characters, so a comment's column is converted).
    cuts = [(r, len(rows[r - 1][:c].encode()), r, None) for r, c in comments]
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                cuts.append((first.lineno, first.col_offset, first.end_lineno, first.end_col_offset))
    # Last first, so that a cut never moves the positions of one still to be made.
    for r0, c0, r1, c1 in sorted(cuts, key=lambda x: (x[0], x[1]), reverse=True):
        tail = b"" if c1 is None else lines[r1 - 1][c1:]
        lines[r0 - 1:r1] = [lines[r0 - 1][:c0] + tail]
    return "\n".join(ln.decode().rstrip() for ln in lines if ln.strip()) + "\n"

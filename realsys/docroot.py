"""Document roots the servers and the load generator agree on.

* ``index.html``: the one-packet file, sized so that our servers' reply header plus the
  body is ``reply_bytes`` (thesis 3.3.2: reply fits one packet).
* ``specweb/class<c>_<i>`` for c in 0..3, i in 0..8: SPECweb99-like file set, 36 files,
  size (i+1)*1024*10^c/10 bytes (0.1-0.9 KB, 1-9 KB, 10-90 KB, 100-900 KB; 4.99 MB total,
  mean reply about 15 KB under the 35/50/14/1 % class mix).  Names match loadgen.c.
"""
from __future__ import annotations

from pathlib import Path

# The header our servers send for a 200 to an HTTP/1.1 keep-alive request (common.c).
HEADER_TEMPLATE = ("HTTP/1.1 200 OK\r\nServer: realsys\r\nContent-Type: text/html\r\n"
                   "Content-Length: {n}\r\nConnection: keep-alive\r\n\r\n")
SPECWEB_CLASS_MIX = (0.35, 0.50, 0.14, 0.01)
SPECWEB_FILES = 4 * 9   # classes x files per class


def specweb_size(cls: int, i: int) -> int:
    return (i + 1) * 1024 * 10 ** cls // 10


def onepacket_body(reply_bytes: int) -> int:
    n = max(1, reply_bytes - len(HEADER_TEMPLATE.format(n=reply_bytes)))
    return max(1, reply_bytes - len(HEADER_TEMPLATE.format(n=n)))


def make_docroot(root: Path, reply_bytes: int = 1024, n_files: int = SPECWEB_FILES) -> Path:
    """Create (idempotently) the document root; returns it.  n_files caps the SPECweb set."""
    root = Path(root)
    (root / "specweb").mkdir(parents=True, exist_ok=True)
    body = onepacket_body(reply_bytes)
    (root / "index.html").write_bytes((b"<html>one packet</html>\n" + b"x" * body)[:body])
    made = 0
    for c in range(4):
        for i in range(9):
            if made >= n_files:
                break
            p = root / "specweb" / f"class{c}_{i}"
            size = specweb_size(c, i)
            if not p.exists() or p.stat().st_size != size:
                p.write_bytes(bytes((65 + (k % 26)) for k in range(min(size, 4096))) * (size // 4096 + 1))
                with open(p, "r+b") as f:
                    f.truncate(size)
            made += 1
    root.chmod(0o755)
    (root / "specweb").chmod(0o755)
    return root

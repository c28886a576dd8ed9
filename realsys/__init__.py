"""realsys: real C servers, an open-loop load generator and kernel accounting on a
network-namespace test bed, recording the same RunRecord rows as the simulator.

    realsys run scenarios/realsys/smoke.toml --out /tmp/rs

Modules: testbed (namespaces, veth, RPS, sysctls), kernel (TcpExt counters, CPU split,
bpftrace drop split), docroot (the file sets), servers (how each server kind is
started), loadgen (our generator and httperf), runner (sweeps -> records), cli.
"""
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

#: The C sources (servers, load generator, drivers) and, in a source tree, their programs.
C_DIR = Path(__file__).resolve().parent / "c"
#: The folder that holds the realsys package: a source tree's top level, or site-packages.
REPO = Path(__file__).resolve().parent.parent
__all__ = ["C_DIR", "BuildDirError", "bin_dir", "build_base", "in_source_tree", "results_path"]


def in_source_tree(root: Path = REPO) -> bool:
    """Whether ``root`` is simaccept's source tree, told by its layout as validation's
    ``CHECKOUT`` is, not by git: a tarball, or a checkout git refuses to read as root, is one."""
    return (root / "setup.cfg").is_file() and (root / "docs").is_dir()


def _c_sources(src: Path) -> list[Path]:
    # what the wheel carries of realsys/c (setup.cfg's package_data): the build needs no more
    return sorted(f for f in src.iterdir() if f.is_file() and (f.suffix in (".c", ".h") or f.name == "Makefile"))


def build_base() -> Path:
    """The folder under which an installed realsys builds its C programs: ``$SIMACCEPT_BUILD_DIR``
    as it is; else ``$XDG_CACHE_HOME/simaccept``, or ``~/.cache/simaccept`` (a relative
    ``XDG_CACHE_HOME`` is ignored, as the XDG spec says).  Raises :class:`BuildDirError` when
    there is no home to put it in."""
    own = os.environ.get("SIMACCEPT_BUILD_DIR")
    if own:
        return Path(own)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "simaccept"
    try:
        return Path.home() / ".cache" / "simaccept"
    except RuntimeError as e:
        raise BuildDirError(f"no home folder to build the C programs under ({e}): set SIMACCEPT_BUILD_DIR") from None


class BuildDirError(RuntimeError):
    """The C programs' build folder cannot be made or is not safe to run programs from."""


def bin_dir(src: Path = C_DIR, root: Path = REPO) -> Path:
    """Where the C programs are built and run from: ``src`` itself in a source tree; installed, a
    copy of its sources under :func:`build_base`, one folder per digest of the sources, so that a
    build does not write into site-packages (read-only for a system install, and left behind by
    ``pip uninstall``) and an upgraded package builds its own sources afresh.  The copy is made
    whole in a temporary folder and renamed into place: two runs starting at once see one copy or
    the other, never half of one.  Raises :class:`BuildDirError` when the folder cannot be made,
    or is not the caller's own or is writable by others: realsys runs as root, and a root run
    that kept a user's ``HOME`` (``sudo -E``) would run programs the user could replace."""
    if in_source_tree(root):
        return src
    files = _c_sources(src)
    h = hashlib.sha256()
    for f in files:
        h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
    base = build_base()
    dst = base / f"realsys-c-{h.hexdigest()[:16]}"
    try:
        if not dst.is_dir():
            base.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=".realsys-c-", dir=base))
            try:
                for f in files:
                    shutil.copy2(f, tmp / f.name)      # with their times: make compares them
                os.rename(tmp, dst)
            except OSError:
                if not dst.is_dir():                   # not another run's rename that won the race
                    raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        st = dst.stat()
    except OSError as e:
        raise BuildDirError(f"cannot make the C programs' build folder {dst}: {e.strerror or e}; "
                            "set SIMACCEPT_BUILD_DIR to a folder you can write") from None
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise BuildDirError(f"{dst}: the C programs' build folder is not yours or others can write it, so "
                            "the programs in it could be replaced: remove it, or set SIMACCEPT_BUILD_DIR")
    return dst


def results_path(path: str | Path) -> Path:
    """``path``; or, when nothing is there, the committed results folder it names by its path in
    the repository (``realsys/results/epyc-2026-12-04``), which an installed package carries at
    the same place: the results README's ``compare`` commands, run from anywhere.  Not ``report``:
    the package carries the results.csv files, not their points/*.json, from which a report
    reads the generator's lag and the drop split (it printed without them, rc 0)."""
    p = Path(path)
    if p.exists():
        return p
    s = p.as_posix()
    s = s[2:] if s.startswith("./") else s
    if (s == "realsys/results" or s.startswith("realsys/results/")) and ".." not in s.split("/"):
        q = REPO / s
        if q.exists():
            return q
    return p

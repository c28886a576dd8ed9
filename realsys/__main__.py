# Ctrl-C while the modules load (numpy, the simulator: about 0.25 s) printed a traceback;
# later ones main() turns into its own message.  A Ctrl-C inside numpy's C import is printed
# by numpy itself (import_array's PyErr_Print) and turned into an ImportError (a CI run,
# 2 Dec 2026), so during the imports it is only noted, and acted on once they are done.
import signal
import sys

_sigint: list[int] = []
_before = signal.getsignal(signal.SIGINT)
if _before is not signal.SIG_IGN:       # started ignoring it (in the background): left so
    signal.signal(signal.SIGINT, lambda signum, frame: _sigint.append(signum))
try:
    import simaccept.cli  # noqa: F401  (numpy and the simulator: the slow part)
    from .cli import main
finally:
    signal.signal(signal.SIGINT, _before)
try:
    if _sigint:
        raise KeyboardInterrupt
    rc = main()
except KeyboardInterrupt:
    print("realsys: interrupted", file=sys.stderr)
    rc = 130
raise SystemExit(rc)

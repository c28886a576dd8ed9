# Ctrl-C while the modules load (numpy, the simulator: about 0.25 s) printed a traceback;
# later ones main() turns into its own message.
try:
    from .cli import main
    rc = main()
except KeyboardInterrupt:
    import sys
    print("realsys: interrupted", file=sys.stderr)
    rc = 130
raise SystemExit(rc)

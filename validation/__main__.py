"""``python -m validation report | fit`` (see validation.cli)."""
# Ctrl-C while the modules load (numpy, scipy, the simulator) printed a traceback; later
# ones main() turns into its own message.
try:
    from .cli import main
    rc = main()
except KeyboardInterrupt:
    import sys
    print("validation: interrupted", file=sys.stderr)
    rc = 130
raise SystemExit(rc)

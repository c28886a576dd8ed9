# Ctrl-C while the modules load (numpy, scipy, simpy) printed a traceback; later ones
# main() turns into its own message.
try:
    from .cli import main
    rc = main()
except KeyboardInterrupt:
    import sys
    print("simaccept: interrupted", file=sys.stderr)
    rc = 130
raise SystemExit(rc)

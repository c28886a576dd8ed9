"""``realsys`` command line.

    realsys run SCENARIO [--set section.key=value ...] [--json] [--out DIR] [--no-bpf]
    realsys clean          remove test beds left behind by killed runs (owner pid dead)
    realsys report DIR ... [--json] [--drops-rate R]   a results folder's summary (realsys.report)
    realsys compare BEFORE AFTER [--from-rate R] [--json]   the same runs measured twice (realsys.compare)
    realsys switch-cost [--out FILE] [--rounds R] [--iterations N]   one pthread block-and-wake (realsys.switchcost)

Exit status: 0 ok, 1 run failure (the test bed, or a point that measured off its window:
its row is kept with status failed), 2 bad scenario (the message names the key), 130 on Ctrl-C.
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    from simaccept.cli import stdout_gone
    try:
        return _cli(argv)
    except BrokenPipeError:             # python -m realsys report DIR | head
        return stdout_gone()


def _count(lo: int, hi: int):
    """An argparse type: a whole number in [lo, hi], refused by value otherwise."""
    def parse(text: str) -> int:
        try:
            v = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"expected {lo} to {hi:,}, got {v:,}")
        return v
    return parse


def _cli(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["report"]:      # its own options, passed through whole (it was "invalid choice")
        from .report import main as report_main
        return report_main(argv[1:], prog="python -m realsys report")
    if argv[:1] == ["compare"]:
        from .compare import main as compare_main
        return compare_main(argv[1:], prog="python -m realsys compare")
    ap = argparse.ArgumentParser(prog="realsys", description="measured runs on a network-namespace test bed",
                                 epilog="a results folder's summary: python -m realsys report DIR "
                                        "(the same as python -m realsys.report DIR)")
    from simaccept.cli import add_set_option, split_set
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("report", help="a results folder's summary (report DIR --help for its options)")
    sub.add_parser("compare", help="the same runs measured twice, after / before (compare --help for its options)")
    r = sub.add_parser("run", help="run a scenario's sweep and append RunRecords to DIR/results.csv")
    r.add_argument("scenario", help="scenario TOML file, or a bundled name (realsys/onepacket-select; "
                   "`simaccept scenarios realsys` lists them)")
    add_set_option(r, dest="overrides", help="override a scenario key, as one argument: --set server.accept_limit=1; "
                                             "a TOML list makes it an axis; repeatable")
    r.add_argument("--json", action="store_true", help="print each new record as a JSON line on stdout")
    r.add_argument("--out", default=None, help="results directory (default realsys/results/<scenario name> in the checkout; "
                                              "installed, under the working directory)")
    r.add_argument("--no-bpf", action="store_true", help="counter-only drop split (no bpftrace)")
    sub.add_parser("clean", help="remove stale sa-<pid>-* namespaces and realsys-* work folders whose owner is dead")
    w = sub.add_parser("switch-cost", help="time one pthread block-and-wake on this machine (the threaded "
                       "server's thread_switch); JSON on stdout, and into --out")
    w.add_argument("--out", default=None, help="also write the JSON here, atomically (a machine's runs keep it "
                   "as DIR/thread-switch.json, where machine-fit reads it)")
    w.add_argument("--rounds", type=_count(1, 1000), default=9, help="timed rounds; the median is kept (default 9)")
    w.add_argument("--iterations", type=_count(1000, 100_000_000), default=100_000,
                   help="round trips per round (default 100000)")
    why = split_set(ap, argv)
    if why:                             # argparse said only "unrecognized arguments: 1"
        print(f"realsys: {why}", file=sys.stderr)
        return 2
    a = ap.parse_args(argv)

    from simaccept.scenario import ScenarioError
    log = (lambda m: print(m, file=sys.stderr, flush=True))
    if a.cmd == "switch-cost":
        import json

        from .switchcost import measure
        if a.out is not None:
            # checked before the minute of timing: a bad --out failed after it, with a traceback
            from pathlib import Path

            from simaccept.cli import _out_problem
            why = _out_problem(Path(a.out))
            if why:
                print(f"realsys: switch-cost: --out {a.out!r}: {why}", file=sys.stderr)
                return 2
        try:
            out = measure(a.rounds, a.iterations, log)
        except (RuntimeError, ValueError, OSError) as e:
            print(f"realsys: switch-cost: {e}", file=sys.stderr)
            return 1
        text = json.dumps(out, indent=2) + "\n"
        sys.stdout.write(text)          # first: a write that fails keeps the measurement on stdout
        sys.stdout.flush()
        if a.out is not None:
            from simaccept.sweep import atomic_write
            try:
                atomic_write(a.out, text)
            except OSError as e:
                print(f"realsys: switch-cost: --out {a.out!r}: cannot write: {e.strerror or e}", file=sys.stderr)
                return 1
            log(f"realsys: wrote {a.out}")
        log(f"realsys: one block-and-wake {out['switch_us']:.2f} us (round trip {out['round_trip_us']:.2f} us, "
            f"write + read {out['calls_us']:.2f} us; medians of {out['rounds']} rounds on CPU {out['cpu']})")
        return 0
    if a.cmd == "clean":
        if os.geteuid() != 0:   # namespaces need root, and others' work folders would be claimed, not removed
            print("realsys: clean needs root (it deletes network namespaces)", file=sys.stderr)
            return 1
        from .runner import clean_work
        from .testbed import TestBedBusy, _lock_or_busy, clean_stale
        try:
            # under the test bed's lock: a clean that read a mark before a new run reused its
            # dead owner's pid judged the new run's namespaces stale and deleted them
            lock = _lock_or_busy()
        except TestBedBusy as e:
            print(f"realsys: clean: {e}; a run cleans what dead runs left when it starts", file=sys.stderr)
            return 1
        try:
            removed = clean_stale(log)
            folders = clean_work(log)
        finally:
            os.close(lock)
        cgroups = [x for x in removed if x.startswith("/")]      # clean_stale's cgroups are paths, namespaces names
        log(f"realsys: removed {len(removed) - len(cgroups)} stale namespace(s), {len(cgroups)} cgroup(s) "
            f"and {len(folders)} work folder(s)")
        return 0
    from .runner import run_scenario
    from .testbed import TestBedError, TestBedInterrupted
    try:
        recs = run_scenario(a.scenario, a.overrides, a.out, log=log, use_bpf=not a.no_bpf)
    except ScenarioError as e:          # a flag or the file is not named as a scenario key
        from simaccept.cli import shown
        print(f"realsys: {shown(e)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        log("realsys: interrupted; finished points are kept, rerun to resume")
        return 130
    except TestBedInterrupted as e:
        log("realsys: terminated; finished points are kept, rerun to resume")
        return int(e.code) if isinstance(e.code, int) else 143
    except (TestBedError, RuntimeError, OSError) as e:
        print(f"realsys: {e}", file=sys.stderr)
        return 1
    if a.json:
        for rec in recs:
            print(rec.to_json())
    else:
        for rec in recs:
            print(f"{rec.point or '-'}\t{rec.replies_per_s:.1f} replies/s" + ("" if rec.status == "ok" else "\tFAILED"))
    failed = [r for r in recs if r.status != "ok"]
    if failed:
        print(f"realsys: {len(failed)} of {len(recs)} points failed (kept with status failed; a rerun "
              f"measures them again): {failed[0].error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

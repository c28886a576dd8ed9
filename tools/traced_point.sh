# Sourced by the bpftrace diagnostics (tools/softirq_context.sh, tools/handshake_wait.sh, the
# traces' cpu-account.sh), from the repository's root, after `set -e`.
#
# traced_point PROGRAM OUT LABEL SCENARIO [realsys run options...]
#   runs one realsys point (SCENARIO with the options, into OUT/run-LABEL, its log beside it)
#   with bpftrace PROGRAM attached; bpftrace's maps go to OUT/bt-LABEL.txt, named so only once
#   the point has run and bpftrace has ended (until then OUT/.bt-LABEL.part: a point cut short
#   by Ctrl-C printed its maps into a bt-LABEL.txt that read as whole).  The load starts
#   only once BEGIN's line (simaccept-bpf-ready) is out, i.e. every probe is attached, and
#   bpftrace gets its SIGINT only then (bpftrace 0.17 loses one sent while attaching).  Exits 2
#   if bpftrace does not attach in 30 s or the point fails (its log's last lines on stderr).
mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing
# realsys needs numpy: $PYTHON, else the project's venv (make venv), else python3 (a system
# python3 without numpy failed the first point)
TP_PY=${PYTHON:-}
if [ -z "$TP_PY" ]; then
    if [ -x .venv/bin/python ]; then TP_PY=.venv/bin/python; else TP_PY=python3; fi
fi
B=
trap '[ -n "$B" ] && kill -INT $B 2>/dev/null; wait 2>/dev/null' EXIT INT TERM
traced_point() {
    prog=$1 out=$2 label=$3 scen=$4
    shift 4
    # a rerun into the same OUT: realsys run skips a point it already has (exit 0), so the trace
    # was of an idle bed and replaced the earlier maps
    if [ -e "$out/bt-$label.txt" ] || [ -e "$out/run-$label" ]; then
        echo "traced_point: $out already holds run $label (bt-$label.txt, run-$label): give another OUT" >&2
        exit 2
    fi
    # stdout, not -o: bpftrace flushes stdout per line but buffers an -o file until exit
    part="$out/.bt-$label.part"
    bpftrace "$prog" >"$part" 2>"$out/bt-$label.err" &
    B=$!
    n=0
    until grep -q simaccept-bpf-ready "$part" 2>/dev/null; do
        n=$((n + 1)); [ $n -le 300 ] || { echo "bpftrace did not attach in 30 s" >&2; exit 2; }
        kill -0 $B 2>/dev/null || { echo "bpftrace exited before attaching" >&2; exit 2; }
        sleep 0.1
    done
    if ! "$TP_PY" -m realsys run "$scen" --out "$out/run-$label" "$@" >"$out/run-$label.log" 2>&1; then
        tail -n 5 "$out/run-$label.log" >&2
        exit 2
    fi
    kill -INT $B; wait $B || true; B=
    mv "$part" "$out/bt-$label.txt"
}

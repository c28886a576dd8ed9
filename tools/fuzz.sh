#!/bin/sh
# tools/fuzz.sh NAME SECONDS - build and run one libFuzzer harness of realsys/c/fuzz for
# SECONDS, then merge what it found into the checked-in corpus realsys/c/fuzz/corpus/NAME/
# (a minimal set by coverage; inputs capped with -max_len so the corpus stays small).
#   NAME: http_parse (HTTP request parser) | target_path (request target -> file under the root)
# Prints "fuzz NAME: execs=E crashes=C corpus_files=F corpus_bytes=B"; a crash leaves its
# input in realsys/c/fuzz/artifacts/NAME/ and the script exits 1.
# Needs clang + libclang-rt-14-dev (sh realsys/install-deps.sh).
set -eu
NAME=${1:?usage: tools/fuzz.sh NAME SECONDS}
SECS=${2:-180}
# libFuzzer reads -max_total_time=abc (or 0) as no limit: the run never ended
case "$SECS" in
    ''|*[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number > 0, got '$SECS'" >&2; exit 2 ;;
esac
case "$SECS" in *[!0]*) ;; *) echo "fuzz.sh: SECONDS must be a whole number > 0, got '$SECS'" >&2; exit 2 ;; esac
ROOT=$(cd "$(dirname "$0")/.." && pwd)
C="$ROOT/realsys/c"
case "$NAME" in
    http_parse) MAXLEN=1024 ;;
    target_path) MAXLEN=256 ;;
    *) echo "fuzz.sh: unknown harness $NAME (http_parse | target_path)" >&2; exit 2 ;;
esac
make -s -C "$C" "fuzz/fuzz_$NAME"
BIN="$C/fuzz/fuzz_$NAME"
CORPUS="$C/fuzz/corpus/$NAME"
ART="$C/fuzz/artifacts/$NAME"
DICT="$C/fuzz/http.dict"
mkdir -p "$CORPUS" "$ART"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/fuzz-$NAME-XXXXXX")
# Ctrl-C/SIGTERM end the script (the trap alone returned to it: "sed: can't read fuzz.log", exit 1 as for a crash)
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
mkdir "$WORK/run" "$WORK/merged"
cp -r "$CORPUS/." "$WORK/run/" 2>/dev/null || true
# seeds, so an empty corpus starts from valid requests / targets
if [ "$NAME" = http_parse ]; then
    printf 'GET /index.html HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' > "$WORK/run/seed1"
    printf 'HEAD /a?b HTTP/1.0\r\nContent-Length: 0\r\n\r\nGET / HTTP/1.1\r\n\r\n' > "$WORK/run/seed2"
    printf '\r\nGET / HTTP/1.1\nTransfer-Encoding: chunked\n\n' > "$WORK/run/seed3"
else
    printf '/a/b.html' > "$WORK/run/seed1"
    printf '/%%2e%%2e/%%2e%%2e/etc/passwd' > "$WORK/run/seed2"
    printf '/a/./../c/d.html?x=1#f' > "$WORK/run/seed3"
    printf '//etc/passwd\\..%%00' > "$WORK/run/seed4"
fi
LOG="$WORK/fuzz.log"
set +e
"$BIN" -max_len=$MAXLEN -max_total_time="$SECS" -timeout=5 -rss_limit_mb=1024 \
    -dict="$DICT" -artifact_prefix="$ART/" -print_final_stats=1 "$WORK/run" >"$LOG" 2>&1
rc=$?
set -e
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$LOG" | tail -1)
crashes=$(find "$ART" -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' -o -name 'oom-*' \) | wc -l)
if [ "$rc" != 0 ]; then
    tail -40 "$LOG" >&2
    [ "$crashes" = 0 ] && crashes=1
fi
# minimal set by edge coverage (-use_counters=0 keeps it well under 200 files): merge
# the run's corpus into an empty directory
set +e
"$BIN" -merge=1 -use_counters=0 -max_len=$MAXLEN -dict="$DICT" "$WORK/merged" "$WORK/run" >"$WORK/merge.log" 2>&1
mrc=$?
set -e
# The committed corpus is replaced whole, and only by a merge that worked: emptied first and
# copied into (errors ignored), a Ctrl-C or a failed copy left it empty or partial.
if [ "$mrc" != 0 ] || [ -z "$(ls -A "$WORK/merged")" ]; then
    tail -20 "$WORK/merge.log" >&2
    echo "fuzz.sh: the corpus merge failed (status $mrc) or kept nothing: $CORPUS left as it was" >&2
    [ "$crashes" = 0 ] && crashes=1
else
    NEW="$CORPUS.new.$$" OLD="$CORPUS.old.$$"
    trap 'rm -rf "$WORK" "$NEW"; if [ ! -d "$CORPUS" ] && [ -d "$OLD" ]; then mv "$OLD" "$CORPUS"; fi; rm -rf "$OLD"' EXIT
    mkdir "$NEW"
    cp -r "$WORK/merged/." "$NEW/"
    mv "$CORPUS" "$OLD"
    mv "$NEW" "$CORPUS"
    rm -rf "$OLD"
fi
files=$(find "$CORPUS" -type f | wc -l)
bytes=$(cat "$CORPUS"/* 2>/dev/null | wc -c)
echo "fuzz $NAME: seconds=$SECS execs=${execs:-0} crashes=$crashes corpus_files=$files corpus_bytes=$bytes"
if [ "$files" -gt 200 ] || [ "$bytes" -gt 204800 ]; then
    echo "fuzz.sh: corpus over the cap (200 files, 200 KB): lower -max_len" >&2
fi
[ "$crashes" = 0 ]

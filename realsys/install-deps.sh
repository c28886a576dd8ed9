#!/bin/sh
# Install the Debian packages realsys needs, only when missing.  Idempotent, quiet.
# Needs root (CI and developer machines run as root).  Packages:
#   httperf (second load generator), nginx-light (peer server), bpftrace (drop tracing),
#   iproute2 (ip netns / veth), gcc + make + libc6-dev (the C sources), util-linux (taskset),
#   clang + libclang-rt-14-dev (libFuzzer for tools/fuzz.sh; the tests replay the corpus with gcc).
set -eu
PKGS="httperf nginx-light bpftrace iproute2 gcc make libc6-dev util-linux procps"
PKGS="$PKGS clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing="$missing $p"
    fi
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "install-deps: need root to install:$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# nginx-light's postinst tries to start nginx; policy-rc.d 101 keeps it from starting
# a system-wide nginx we did not ask for.
prc=/usr/sbin/policy-rc.d
made_prc=0
if [ ! -e "$prc" ]; then printf '#!/bin/sh\nexit 101\n' > "$prc"; chmod +x "$prc"; made_prc=1; fi
rc=0
apt-get install -y -qq --no-install-recommends $missing >/dev/null || rc=$?
[ "$made_prc" = 1 ] && rm -f "$prc"
if [ "$rc" != 0 ]; then
    echo "install-deps: apt-get install failed for:$missing" >&2
    exit "$rc"
fi
echo "install-deps: installed:$missing"

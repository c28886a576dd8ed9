"""Summarise cpu-account.bt outputs (DIR/bt-<limit>-<seed>.txt): microseconds of CPU 0 per reply
(per writev call), mean over the seeds and their range, by what ran.  Usage: cpu-account-summary.py DIR"""
import re, sys, glob, statistics as st
d = sys.argv[1]
names = {1: "user", 2: "syscalls", 3: "NET_RX", 4: "other sirq", 5: "other task", 6: "idle"}
sysn = {7: "poll", 288: "accept4", 20: "writev", 3: "close", 0: "read", 270: "pselect6", 232: "epoll_wait", 54: "setsockopt"}
rows = {}
for f in sorted(glob.glob(f"{d}/bt-*.txt")):
    al, rep = re.match(r".*/bt-(\w+)-(\d+)\.txt", f).groups()
    t = open(f).read()
    acc = {int(k): int(v) for k, v in re.findall(r"@acc\[(\d+)\]: (\d+)", t)}
    accsys = {int(k): int(v) for k, v in re.findall(r"@accsys\[(\d+)\]: (\d+)", t)}
    nsys = {int(k): int(v) for k, v in re.findall(r"@nsys\[(\d+)\]: (\d+)", t)}
    nw = nsys.get(20, 0)
    busy = sum(v for k, v in acc.items() if k != 6)
    r = {names[k]: acc.get(k, 0) / nw / 1000 for k in names}
    r["busy"] = busy / nw / 1000
    for k, n in sysn.items():
        if k in accsys: r[n] = accsys[k] / nw / 1000
    r["writevs"] = nw
    rows.setdefault(al, []).append(r)
keys = ["busy", "user", "syscalls", "NET_RX", "other sirq", "other task", "idle", "poll", "pselect6", "epoll_wait", "accept4", "read", "writev", "close", "setsockopt"]
print("us per reply (writev) on CPU 0, mean over reps (min-max)")
for k in keys:
    line = f"{k:12s}"
    for al in sorted(rows):
        v = [r.get(k, 0) for r in rows[al]]
        line += f"  accept-{al}: {st.mean(v):7.2f} ({min(v):.2f}-{max(v):.2f})"
    print(line)
print({al: [r["writevs"] for r in rows[al]] for al in rows})

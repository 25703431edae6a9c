#!/usr/bin/env python3
"""Hop-by-hop medians of a `convoy bench latency` ping-pong (docs/TRANSPORT.md, "Where a round
trip goes"), from syscall tracepoints recorded on both processes:

  perf record -e syscalls:sys_enter_sendto,syscalls:sys_exit_epoll_wait,\
syscalls:sys_exit_recvmsg,syscalls:sys_enter_futex -p PING,PONG -o t.data -- sleep 3
  perf script -i t.data -F tid,time,event,trace > t.txt
  python3 scripts/rtt_hops.py t.txt PING_MAIN_TID PONG_RX_TID PING_RX_TID

PING_MAIN_TID is the ping process's main thread (its pid); the RX tids are each side's
"RustDDS Partici" thread with the most events. Each ping's `sendto` is followed, in time
order, to the pong's wake-up, reads and answer, and on to the ping's listener waking the
main thread.
"""
import re, sys, statistics
ev = []
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\d+)\s+([\d.]+):\s+syscalls:(\w+):\s*(.*)', line)
    if not m: continue
    tid, t, name, rest = m[1], float(m[2]) * 1e6, m[3], m[4]
    ret = None
    if name.startswith('sys_exit'):
        v = int(rest.strip(), 16)
        ret = v - (1 << 64) if v >= (1 << 63) else v
    ev.append((t, tid, name, ret))
ev.sort()
ping_main, pong_rx, ping_rx = sys.argv[2:5]
keys = ['ping sendto -> pong epoll returns', 'pong: epoll -> recvmsg done', 'pong: -> EAGAIN recvmsg done',
        'pong: -> sendto (user space)', 'pong sendto -> ping epoll returns', 'ping: epoll -> recvmsg done',
        'ping: -> EAGAIN recvmsg done', 'ping: -> futex wake (listener stamped)', 'total']
hops = {k: [] for k in keys}
for i, (t, tid, name, ret) in enumerate(ev):
    if not (tid == ping_main and name == 'sys_enter_sendto'):
        continue
    window = ev[i + 1:i + 60]
    def nxt(tid_, name_, after, cond=lambda r: True):
        for e in window:
            if e[0] >= after and e[1] == tid_ and e[2] == name_ and cond(e[3]):
                return e[0]
        return None
    pts = [t]
    steps = [(pong_rx, 'sys_exit_epoll_wait', lambda r: r > 0), (pong_rx, 'sys_exit_recvmsg', lambda r: r > 0),
             (pong_rx, 'sys_exit_recvmsg', lambda r: r == -11), (pong_rx, 'sys_enter_sendto', lambda r: True),
             (ping_rx, 'sys_exit_epoll_wait', lambda r: r > 0), (ping_rx, 'sys_exit_recvmsg', lambda r: r > 0),
             (ping_rx, 'sys_exit_recvmsg', lambda r: r == -11), (ping_rx, 'sys_enter_futex', lambda r: True)]
    for tid_, name_, cond in steps:
        p = nxt(tid_, name_, pts[-1], cond)
        if p is None:
            break
        pts.append(p)
    if len(pts) != len(steps) + 1:
        continue
    for k, a, b in zip(keys, pts, pts[1:]):
        hops[k].append(b - a)
    hops['total'].append(pts[-1] - pts[0])
print(f"round trips matched: {len(hops['total'])}")
for k in keys:
    v = sorted(hops[k])
    print(f"{k:40s} p50 {statistics.median(v):6.1f} us  p90 {v[int(len(v) * 0.9)]:6.1f}")

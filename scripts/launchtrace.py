#!/usr/bin/env python3
"""Summarise a TRIALFORM_TRACE file of `apply -wait` (see internal/launchtrace).

usage: launchtrace.py TRACE CONCURRENCY

Prints the idle share of the concurrency slots (a slot is busy from the
Start call of a trial to the moment the CLI reaps its supervisor), the
median of each step of a trial's life, and where the run loop's passes
spend their time."""
import statistics
import sys

path, conc = sys.argv[1], int(sys.argv[2])
ev = []
for line in open(path):
    f = line.split()
    ev.append((int(f[0]), f[2], f[3] if len(f) > 3 else ""))
ev.sort()
t0, t1 = ev[0][0], ev[-1][0]
wall = (t1 - t0) / 1e6

trial = {}
for t, name, arg in ev:
    if name.startswith("start.") or name.startswith("sup."):
        trial.setdefault(arg, {})[name] = t

busy = sum(d["sup.reaped"] - d["start.begin"] for d in trial.values() if "sup.reaped" in d and "start.begin" in d) / 1e6
print(f"trials {len(trial)}  wall {wall:.3f} s  slots {conc}  busy {busy:.2f} slot-s  idle {100 * (1 - busy / (conc * wall)):.0f}% of the slots' time")
steps = [("start.begin", "sup.begin", "Start -> supervisor runs"),
         ("sup.begin", "sup.running", "supervisor -> trial started"),
         ("sup.running", "start.end", "trial started -> Start returns"),
         ("sup.running", "sup.trialexit", "trial runs"),
         ("sup.trialexit", "sup.end", "trial exit -> supervisor done"),
         ("sup.end", "sup.reaped", "supervisor exit -> CLI reaps it")]
for a, b, what in steps:
    ds = [(d[b] - d[a]) / 1e3 for d in trial.values() if a in d and b in d]
    if ds:
        print(f"  {what:34s} median {statistics.median(ds):7.1f} ms  p90 {sorted(ds)[int(.9 * len(ds))]:7.1f} ms  sum {sum(ds) / 1e3:6.2f} s")

# Reaped -> the next pass begins: the time an ended trial's slot waits for
# the loop to look.
passes = [t for t, n, _ in ev if n == "pass.begin"]
gap = []
for d in trial.values():
    r = d.get("sup.reaped")
    nxt = [p for p in passes if p >= r] if r else []
    if nxt:
        gap.append((nxt[0] - r) / 1e3)
if gap:
    print(f"  {'reaped -> next pass begins':34s} median {statistics.median(gap):7.1f} ms  p90 {sorted(gap)[int(.9 * len(gap))]:7.1f} ms  sum {sum(gap) / 1e3:6.2f} s")

# The passes: time between consecutive marks.
order = ["pass.begin", "refresh.begin", "refresh.read", "refresh.observed", "pass.planned", "apply.records", "apply.intent", "pass.applied", "wait.notify"]
marks = [(t, n) for t, n, _ in ev if n in order or n == "wait.timer"]
seg = {}
for (ta, na), (tb, nb) in zip(marks, marks[1:]):
    seg.setdefault(f"{na} -> {nb}", []).append((tb - ta) / 1e3)
print(f"passes {len(passes)}  (segments of the loop: count, total, median)")
for k, v in sorted(seg.items(), key=lambda kv: -sum(kv[1])):
    print(f"  {k:40s} n {len(v):4d}  total {sum(v) / 1e3:6.3f} s  median {statistics.median(v):7.1f} ms")

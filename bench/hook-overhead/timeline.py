#!/usr/bin/env python3
"""Where the wall time of each hook goes, from a `perf script -F pid,tid,time,event,trace` dump of
sched_process_fork, sched_process_exec, sched_process_exit and sched_switch events.

Each of the last N hook executions (files named h<digits>.sh; the operator also runs every hook
once with --config before its module run) is split into spawn (the fork or clone that made it, to
its exec), run (exec to exit) and gap (its exit to the fork of the next hook). The CPU time that
the runner's own threads (the process that forked the hooks) spent on a CPU over the same window
is summed per thread name. Usage: timeline.py LABEL N DUMP"""
import collections
import re
import statistics
import sys

LINE = re.compile(r"^\s*(\d+)/(\d+)\s+(\d+\.\d+):\s+sched:(\w+): (.*)")
HOOK = re.compile(r"filename=\S*/h\d+\.sh\b")


class Dump:
    def __init__(self, lines):
        self.forks, self.execs, self.exits = {}, {}, {}
        self.parent = {}  # hook pid -> the runner's pid (tgid) that forked it
        self.tgid, self.comm = {}, {}
        self.switches = []  # (time, prev tid, next tid)
        for line in lines:
            match = LINE.match(line)
            if match:
                self.add(int(match[1]), int(match[2]), float(match[3]), match[4], match[5])

    def add(self, tgid, tid, time, event, rest):
        self.tgid[tid] = tgid
        if event == "sched_process_fork":
            child = int(re.search(r"child_pid=(\d+)", rest)[1])
            self.forks[child] = time
            self.parent[child] = tgid
        elif event == "sched_process_exec" and HOOK.search(rest):
            self.execs[tid] = time
        elif event == "sched_process_exit" and tid in self.execs:
            self.exits[tid] = time
        elif event == "sched_switch":
            prev = re.search(r"prev_comm=(.*?) prev_pid=(\d+)", rest)
            nxt = re.search(r"next_pid=(\d+)", rest)
            self.comm[int(prev[2])] = prev[1]
            self.switches.append((time, int(prev[2]), int(nxt[1])))

    def hooks(self, count):
        done = (p for p in self.execs if p in self.forks and p in self.exits)
        return sorted(done, key=self.forks.get)[-count:]

    def cpu_by_thread(self, runner, start, end):
        """On-CPU seconds of each thread of process `runner` between start and end."""
        since, spent = {}, collections.Counter()
        for time, prev, nxt in self.switches:
            if prev in since and start <= time <= end:
                spent[prev] += time - max(since.pop(prev), start)
            since.pop(prev, None)
            since[nxt] = time
        return {tid: s for tid, s in spent.items() if self.tgid.get(tid) == runner}


def main():
    label, count, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    with open(path, encoding="utf-8", errors="replace") as lines:
        dump = Dump(lines)
    pids = dump.hooks(count)
    if len(pids) < count:
        sys.exit(f"{label}: found {len(pids)} hook runs in {path}, expected {count}")
    spawn = [dump.execs[p] - dump.forks[p] for p in pids]
    run = [dump.exits[p] - dump.execs[p] for p in pids]
    gap = [dump.forks[b] - dump.exits[a] for a, b in zip(pids, pids[1:])]
    start, end = dump.forks[pids[0]], dump.exits[pids[-1]]
    cell = lambda v: f"{statistics.median(v) * 1e3:6.3f} ({statistics.quantiles(v, n=10)[8] * 1e3:.3f})"
    print(f"{label:<26} {(end - start) / count * 1e3:7.3f}  {cell(spawn)}  {cell(run)}  {cell(gap)}")
    by_name = collections.Counter()
    for tid, seconds in dump.cpu_by_thread(dump.parent[pids[0]], start, end).items():
        by_name[dump.comm.get(tid, str(tid))] += seconds
    threads = ", ".join(f"{n} {s / count * 1e3:.3f}" for n, s in by_name.most_common())
    print(f"{'':<26} its own threads on a CPU, ms per hook: {threads}")


if __name__ == "__main__":
    main()

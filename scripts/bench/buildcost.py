#!/usr/bin/env python3
"""Runs a command and reports what it cost: wall time, CPU time, and the
peak memory of its whole process tree (the sum of the resident sets of
every process under it, sampled every 0.2 s, so concurrent compiles count
together), and of its largest single process.

    scripts/bench/buildcost.py [--json FILE] [--label NAME] -- COMMAND [ARGS...]

Linux only (it reads /proc). The sum of resident sets counts a page shared
by two processes twice, so it is an upper bound; the compiles of a Go build
share next to nothing. scripts/bench/build-cost.sh uses it for the figures of
docs/building.md.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import threading
import time

PAGE = os.sysconf("SC_PAGE_SIZE")


def children_map():
    """Maps each pid to the pids whose parent it is."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # The command name is in parentheses and may hold spaces.
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        kids.setdefault(ppid, []).append(int(name))
    return kids


def rss(pid):
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * PAGE
    except OSError:
        return 0


def tree(root):
    kids = children_map()
    pids, todo = [], [root]
    while todo:
        pid = todo.pop()
        pids.append(pid)
        todo.extend(kids.get(pid, ()))
    return pids


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the figures to this file")
    ap.add_argument("--label", default="", help="a name for the figures")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    args = ap.parse_args()
    cmd = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not cmd:
        ap.error("no command")
    start = time.monotonic()
    proc = subprocess.Popen(cmd)
    peak = {"tree": 0, "process": 0}
    done = threading.Event()

    def sample():
        while not done.is_set():
            sizes = [rss(p) for p in tree(proc.pid)]
            peak["tree"] = max(peak["tree"], sum(sizes))
            peak["process"] = max(peak["process"], max(sizes, default=0))
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    figures = {
        "label": args.label,
        "command": cmd,
        "exit": code,
        "wall_s": round(wall, 1),
        "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
        "peak_tree_bytes": peak["tree"],
        "peak_process_bytes": max(peak["process"], usage.ru_maxrss * 1024),
    }
    print(
        f"buildcost{(' ' + args.label) if args.label else ''}: exit {code}, {wall / 60:.1f} min wall, "
        f"{figures['cpu_s']:.0f} s CPU, peak {figures['peak_tree_bytes'] / 2**30:.2f} GiB in all, "
        f"{figures['peak_process_bytes'] / 2**30:.2f} GiB in one process",
        file=sys.stderr,
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)
            f.write("\n")
    sys.exit(code)


if __name__ == "__main__":
    main()

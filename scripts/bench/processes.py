#!/usr/bin/env python3
"""The kernels of testdata/bench as whole processes: this project's CLI on
the ahead-of-time engine (`make monty-aot`) against upstream's release
binary, each run as `BINARY FILE.py`, interleaved (each round runs every
binary on the kernel and on an empty file, the binaries' order alternating
between rounds); a kernel's time is the median of its runs less the median
of the empty file's, so each side's start-up falls out. Prints per kernel
both times and AOT/upstream, then the geometric mean and the worst row.

    scripts/bench/processes.py [--rounds N] [--only K,K] [--twice] MONTY_AOT UPSTREAM_MONTY

This is how issue 55 states its targets (every row <= 1.0x, geomean <=
0.80x); scripts/bench/table.sh's AOT column is the same kernels in a warm
interpreter. Most kernels run for 5-8 ms, so one process's noise is a
large share of a row: at 11 rounds two runs differed by up to 40% on a
row, hence 101 by default (about 3 minutes). Two builds of the CLI can be
compared the same way, the second in upstream's place.

With --twice each round also runs a file holding the kernel twice, and
the table gains each side's second copy (the twice file less the once
file): the kernel in a process that has already run it once. First run
against second shows what a fresh process costs each side. Run it from
the repository's root.
"""

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

# The kernels with an upstream column in scripts/bench/benchcmp: every
# program of testdata/bench but the tiny call and the dump of 1 MB.
SKIP = {"tiny", "data_1mb"}


def elapsed(binary, path):
    start = time.perf_counter()
    done = subprocess.run([binary, path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"processes: {binary} {path} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return took


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=101)
    ap.add_argument("--only", default="")
    ap.add_argument("--twice", action="store_true", help="also time a second copy of each kernel in the same process")
    ap.add_argument("aot")
    ap.add_argument("upstream")
    args = ap.parse_args()
    kernels = sorted(f[:-3] for f in os.listdir("testdata/bench") if f.endswith(".py") and f[:-3] not in SKIP)
    if args.only:
        kernels = [k for k in kernels if k in args.only.split(",")]
    binaries = {"aot": args.aot, "upstream": args.upstream}
    with tempfile.TemporaryDirectory() as tmp:
        empty = os.path.join(tmp, "empty.py")
        open(empty, "w").close()
        ratios, later_ratios = [], []
        head = f"{'kernel':<18} {'AOT ms':>9} {'upstream ms':>12} {'AOT/upstream':>13}"
        if args.twice:
            head += f" {'AOT 2nd ms':>11} {'upstream 2nd':>13} {'2nd AOT/up':>11}"
        print(head)
        for kernel in kernels:
            path = os.path.join("testdata/bench", kernel + ".py")
            twice = os.path.join(tmp, kernel + "_twice.py")
            if args.twice:
                with open(path) as f:
                    src = f.read()
                with open(twice, "w") as f:
                    f.write(src + "\n" + src)
            runs = {name: [] for name in binaries}
            empties = {name: [] for name in binaries}
            twices = {name: [] for name in binaries}
            for r in range(args.rounds):
                order = list(binaries) if r % 2 == 0 else list(reversed(binaries))
                for name in order:
                    runs[name].append(elapsed(binaries[name], path))
                    empties[name].append(elapsed(binaries[name], empty))
                    if args.twice:
                        twices[name].append(elapsed(binaries[name], twice))
            once = {name: statistics.median(runs[name]) for name in binaries}
            net = {name: once[name] - statistics.median(empties[name]) for name in binaries}
            ratio = net["aot"] / net["upstream"]
            ratios.append((ratio, kernel))
            line = f"{kernel:<18} {net['aot'] * 1e3:>9.2f} {net['upstream'] * 1e3:>12.2f} {ratio:>13.2f}"
            if args.twice:
                later = {name: statistics.median(twices[name]) - once[name] for name in binaries}
                later_ratios.append((later["aot"] / later["upstream"], kernel))
                line += f" {later['aot'] * 1e3:>11.2f} {later['upstream'] * 1e3:>13.2f} {later_ratios[-1][0]:>11.2f}"
            print(line, flush=True)
        report("AOT/upstream", ratios)
        if args.twice:
            report("second copies AOT/upstream", later_ratios)


def report(what, ratios):
    geomean = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
    worst = max(ratios)
    print(f"geomean {what} {geomean:.3f} over {len(ratios)} kernels; worst {worst[1]} {worst[0]:.2f}")


if __name__ == "__main__":
    main()

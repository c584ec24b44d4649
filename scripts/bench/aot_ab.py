#!/usr/bin/env python3
"""Two builds of scripts/bench/benchcmp on the ahead-of-time engine, A and B,
measured interleaved (A B A B ...), each round a fresh process of each
running every kernel of testdata/bench in its aot column (or, with
--column go, on wazero); prints per kernel the median of A, of B and B/A,
and the geometric mean of B/A.

    scripts/bench/aot_ab.py [--rounds N] [--benchtime D] [--only K,K] [--column aot|go] A_BENCHCMP B_BENCHCMP

Build each with `scripts/aotgo.sh build -o FILE ./scripts/bench/benchcmp` in the
checkout to compare (for --column go, `go build -o FILE ./scripts/bench/benchcmp`
is enough: the go column runs the module the checkout embeds) (docs/building.md#what-the-ahead-of-time-engine-costs
compares the translation split into packages with the one package before).
Run it from the repository's root (benchcmp reads testdata/bench).
"""

import argparse
import math
import statistics
import subprocess
import sys


def run(binary, column, benchtime, only):
    cmd = [binary, "-columns", column, "-benchtime", benchtime, "-rounds", "3"]
    if only:
        cmd += ["-only", only]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] == column:
            got[parts[1]] = float(parts[2])
    return got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--benchtime", default="1s")
    ap.add_argument("--only", default="")
    ap.add_argument("--column", choices=("aot", "go"), default="aot")
    ap.add_argument("a")
    ap.add_argument("b")
    args = ap.parse_args()
    samples = {"a": {}, "b": {}}
    for r in range(args.rounds):
        for name in ("a", "b"):
            for kernel, ns in run(getattr(args, name), args.column, args.benchtime, args.only).items():
                samples[name].setdefault(kernel, []).append(ns)
        print(f"aot_ab: {args.column} round {r + 1} of {args.rounds} done", file=sys.stderr)
    ratios = []
    print(f"{'kernel':<18} {'A ms':>10} {'B ms':>10} {'B/A':>6}")
    for kernel in sorted(samples["a"]):
        if kernel not in samples["b"]:
            continue
        a = statistics.median(samples["a"][kernel])
        b = statistics.median(samples["b"][kernel])
        if a <= 0:
            continue
        ratios.append(b / a)
        print(f"{kernel:<18} {a / 1e6:>10.3f} {b / 1e6:>10.3f} {b / a:>6.3f}")
    if ratios:
        print(f"{'geomean':<18} {'':>10} {'':>10} {math.exp(sum(map(math.log, ratios)) / len(ratios)):>6.3f}")


if __name__ == "__main__":
    main()

"""A new pydantic-monty worker to its first result, on each worker binary.

Each sample is what an integration that opens a pool per call pays
(FastMCP's CodeMode, pydantic-ai-harness's per run): a new
`pydantic_monty.Monty(binary_path=...)` pool, one checkout and
`feed_run('1 + 1')`, timed from making the pool to the result (closing the
pool is not counted); and the same with `checkout(type_check=True)`, whose
first feed is type-checked first. The workers are sampled interleaved,
round-robin (A B C, A B C, ...) so that load on the machine hits every
one alike; a figure is the median of its rounds.

    python bench_worker.py [--rounds N] NAME=BINARY ...

prints "worker <NAME>_first <ns>" and "worker <NAME>_typed <ns>" lines
(scripts/bench/table.sh's results format). Run it with the Python that has
pydantic-monty (scripts/pyclients.sh).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import pydantic_monty as pm


def sample(binary: str, typed: bool) -> float:
    t0 = time.perf_counter()
    with pm.Monty(binary_path=binary) as pool:
        with pool.checkout(type_check=typed) as session:
            got = session.feed_run('1 + 1')
            elapsed = time.perf_counter() - t0
    if got != 2:
        raise SystemExit(f'{binary}: feed_run("1 + 1") gave {got!r}')
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('--rounds', type=int, default=15)
    ap.add_argument('workers', nargs='+', metavar='NAME=BINARY')
    args = ap.parse_args()
    workers = [w.split('=', 1) for w in args.workers]
    samples: dict[tuple[str, bool], list[float]] = {}
    for name, binary in workers:  # one warm-up each: the page cache, not the figure
        sample(binary, False)
        sample(binary, True)
    for r in range(args.rounds):
        order = workers[r % len(workers):] + workers[: r % len(workers)]
        for typed in (False, True):
            for name, binary in order:
                samples.setdefault((name, typed), []).append(sample(binary, typed))
    for (name, typed), xs in samples.items():
        print(f'worker {name}_{"typed" if typed else "first"} {statistics.median(xs) * 1e9:.0f}')
        print(f'{name} {"typed" if typed else "first"}: median {statistics.median(xs) * 1e3:.1f} ms '
              f'(min {min(xs) * 1e3:.1f}, max {max(xs) * 1e3:.1f}, n={len(xs)})', file=sys.stderr)


if __name__ == '__main__':
    main()

"""Upstream's figures for bench.sh's continuing-session rows.

One round of upstream Monty's own session continued snippet after snippet
(the workload of session/internal/sessionbench: snippet i defines f{i} and
computes v{i} = f{i}(i)), through pydantic-monty's client and upstream's
`monty` worker process (the release binary of pydantic-monty-runtime), at
each size N of 10, 300 and 1,000 snippets, in that order:

- dump_N: `session.dump()` of the session holding N snippets (the mean of
  DUMPS dumps);
- load_N: `load_session()` of that dump into a fresh session of another
  worker (the mean of DUMPS loads, each in a session checked out untimed);
- feed_N: `feed_run()` of the next snippets, N+1 to N+20, in the loaded
  session (their mean).

Each figure includes the client's round trip to the worker. Prints bench.sh
result lines, "upstream <key> <ns>"; progress goes to stderr. bench.sh runs
it once per round, between the rounds of the Go benchmarks, and takes the
medians.

    python bench_session.py UPSTREAM_MONTY
"""

from __future__ import annotations

import sys
import time

import pydantic_monty as pm

SIZES = (10, 300, 1000)
BATCH = 20  # sessionbench.Batch
DUMPS = 5


def snippet(i: int) -> str:
    return f'def f{i}(x):\n    return x * {i} + len(str(x))\nv{i} = f{i}({i})\nv{i}'


def value(i: int) -> int:
    return i * i + len(str(i))


def feed(session, i: int) -> None:
    got = session.feed_run(snippet(i))
    if got != value(i):
        raise SystemExit(f'bench_session: snippet {i} returned {got!r}, want {value(i)}')


def main() -> None:
    upstream = sys.argv[1]
    with pm.Monty(binary_path=upstream, min_processes=2, max_processes=2) as pool:
        with pool.checkout() as built:
            done = 0
            for n in SIZES:
                while done < n:
                    done += 1
                    feed(built, done)
                t0 = time.perf_counter_ns()
                for _ in range(DUMPS):
                    dump = built.dump()
                print(f'upstream dump_{n} {(time.perf_counter_ns() - t0) / DUMPS:.1f}')
                # A session loads once, before its first feed: a fresh one
                # (checked out untimed) per load, the last one continued.
                took = 0
                for rep in range(DUMPS):
                    if rep > 0:
                        loaded.__exit__(None, None, None)
                    loaded = pool.checkout().__enter__()
                    t0 = time.perf_counter_ns()
                    loaded.load_session(dump)
                    took += time.perf_counter_ns() - t0
                print(f'upstream load_{n} {took / DUMPS:.1f}')
                if loaded.feed_run(f'v{n}') != value(n):
                    raise SystemExit(f'bench_session: v{n} is wrong in the loaded session')
                t0 = time.perf_counter_ns()
                for i in range(n + 1, n + BATCH + 1):
                    feed(loaded, i)
                print(f'upstream feed_{n} {(time.perf_counter_ns() - t0) / BATCH:.1f}')
                loaded.__exit__(None, None, None)
                print(f'bench_session: upstream at {n} snippets: a {len(dump)}-byte dump', file=sys.stderr)

if __name__ == '__main__':
    main()

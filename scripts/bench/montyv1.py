"""monty.v1 through pydantic-monty 1.4.0: monty-go against upstream's worker.

Everything goes through the same unmodified client, interleaved (A B C, A B
C, ...) so that load on the machine hits every side alike, and is reported
as ratios against upstream's worker measured in the same run:

- a feed round trip (`feed_run('1')`) and a feed making 10 external calls,
  on upstream's `monty subprocess`, ours (`monty subprocess`) and `monty
  serve` over WebSocket;
- memory per session: SESSIONS sessions held open on one `monty serve`
  (its RSS growth) against SESSIONS upstream worker processes (their RSS);
- sessions per second: check out, feed, give back, one after another: a
  WebSocket connection each on `monty serve`, a fresh worker process each on
  upstream's pool (max_checkouts_per_worker=1) and a reused one.

    python montyv1_bench.py UPSTREAM_MONTY OUR_MONTY WS_URL SERVE_PID [ROUNDS]
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time

import pydantic_monty as pm

from procs import children

SESSIONS = 20


def rss_kib(pid: int) -> int:
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1])
    return 0


def ext(i):
    return i * 2


async def timed(session, code: str, n: int, **kw) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        await session.feed_run(code, **kw)
    return (time.perf_counter() - t0) / n


async def latency(upstream: str, ours: str, url: str, rounds: int) -> None:
    sides = {
        'upstream worker': lambda: pm.AsyncMonty(binary_path=upstream, min_processes=1, max_processes=1),
        'monty subprocess': lambda: pm.AsyncMonty(binary_path=ours, min_processes=1, max_processes=1),
        'monty serve (ws)': lambda: pm.AsyncMontyWebsocket(url, max_processes=1, request_timeout=60),
    }
    pools, sessions = {}, {}
    for name, make in sides.items():
        pools[name] = await make().__aenter__()
        sessions[name] = await pools[name].checkout().__aenter__()
        await sessions[name].feed_run('1')  # warm up
    work = {
        'feed round trip': ('1', {}),
        'feed with 10 external calls': ('[f(i) for i in range(10)]', {'external_lookup': {'f': ext}}),
    }
    for label, (code, kw) in work.items():
        samples = {name: [] for name in sides}
        for _ in range(rounds):
            for name in sides:
                samples[name].append(await timed(sessions[name], code, 20, **kw))
        base = statistics.median(samples['upstream worker'])
        print(f'\n{label} (median of {rounds} rounds of 20, interleaved)')
        for name in sides:
            m = statistics.median(samples[name])
            print(f'  {name:18} {m * 1e6:9.0f} µs   {m / base:5.2f}x upstream')
    for name in sides:
        await sessions[name].__aexit__(None, None, None)
        await pools[name].__aexit__(None, None, None)


async def memory(upstream: str, url: str, serve_pid: int) -> None:
    hold = 'data = list(range(1000))\ndef f(x):\n    return x + len(data)\nf(1)'
    before = rss_kib(serve_pid)
    async with pm.AsyncMontyWebsocket(url, max_processes=SESSIONS, request_timeout=60) as pool:
        held = [await pool.checkout().__aenter__() for _ in range(SESSIONS)]
        for s in held:
            await s.feed_run(hold)
        ours = (rss_kib(serve_pid) - before) / SESSIONS
        for s in held:
            await s.__aexit__(None, None, None)
    me = os.getpid()
    async with pm.AsyncMonty(binary_path=upstream, min_processes=SESSIONS, max_processes=SESSIONS) as pool:
        held = [await pool.checkout().__aenter__() for _ in range(SESSIONS)]
        for s in held:
            await s.feed_run(hold)
        workers = children(me)
        theirs = sum(rss_kib(p) for p in workers) / max(len(workers), 1)
        for s in held:
            await s.__aexit__(None, None, None)
    print(f'\nmemory per session, {SESSIONS} sessions each holding a little state')
    print(f'  upstream worker    {theirs:9.0f} KiB  (RSS of one worker process; {len(workers)} processes)')
    print(f'  monty serve (ws)   {ours:9.0f} KiB  (RSS growth of the server per session)   {ours / theirs:5.2f}x upstream')


async def churn(upstream: str, url: str, seconds: float) -> None:
    async def rate(make) -> float:
        async with make() as pool:
            n, t0 = 0, time.perf_counter()
            while time.perf_counter() - t0 < seconds:
                async with pool.checkout() as s:
                    await s.feed_run('1')
                n += 1
            return n / (time.perf_counter() - t0)

    sides = {
        'upstream, fresh worker': lambda: pm.AsyncMonty(binary_path=upstream, min_processes=1, max_processes=1, max_checkouts_per_worker=1),
        'upstream, reused worker': lambda: pm.AsyncMonty(binary_path=upstream, min_processes=1, max_processes=1),
        'monty serve (ws)': lambda: pm.AsyncMontyWebsocket(url, max_processes=1, request_timeout=60),
    }
    results = {name: [] for name in sides}
    for _ in range(3):
        for name, make in sides.items():
            results[name].append(await rate(make))
    base = statistics.median(results['upstream, fresh worker'])
    print(f'\nsessions per second (check out, feed, give back; median of 3 interleaved runs of {seconds:.0f}s)')
    for name in sides:
        m = statistics.median(results[name])
        print(f'  {name:24} {m:8.1f}/s   {m / base:5.2f}x upstream fresh worker')


async def main() -> None:
    upstream, ours, url, pid = sys.argv[1:5]
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 9
    await latency(upstream, ours, url, rounds)
    await memory(upstream, url, int(pid))
    await churn(upstream, url, 3.0)
    await asyncio.sleep(0.1)  # the client's teardown race: see testdata/clients/monty_v1.py


if __name__ == '__main__':
    asyncio.run(main())

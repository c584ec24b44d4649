"""Memory over a session's life, for bench.sh's table.

Our side: `monty serve` (the binary given) over a directory store, holding
SESSIONS live monty.v1 sessions (WebSocket connections of pydantic-monty's
AsyncMontyWebsocket, each session an interpreter in the server's process),
each continued for SNIPPETS snippets (the workload of
session/internal/sessionbench). Measured: the server's resident memory
(VmRSS) then, its growth over the server warmed by one session, per
session, and, once the connections are closed and every session is parked
in the store, the bytes stored per session (their blobs' sizes, as `monty
session ls` lists them).

Upstream's side: its worker (the `monty` release binary, a process per
session, as pydantic-monty's AsyncMonty pool runs it) holding the same
session: the mean resident memory of UPSTREAM_SESSIONS such workers, and
the size of a session's dump().

Prints bench.sh result lines, "memory <key> <bytes>"; progress goes to
stderr. Needs pydantic-monty (scripts/pyclients.sh's venv).

    python bench_memory.py OUR_MONTY UPSTREAM_MONTY [--sessions 1000]
        [--snippets 100] [--upstream-sessions 50]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import pydantic_monty as pm

from procs import children


def snippet(i: int) -> str:
    return f'def f{i}(x):\n    return x * {i} + len(str(x))\nv{i} = f{i}({i})\nv{i}'


def value(i: int) -> int:
    return i * i + len(str(i))


def log(msg: str) -> None:
    print(f'bench_memory: {msg}', file=sys.stderr, flush=True)


def rss_bytes(pid: int) -> int:
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    raise SystemExit(f'bench_memory: no VmRSS for process {pid}')


async def fill(sessions: list, snippets: int, label: str, parallel: int = 4) -> None:
    """Feeds snippets to every session, parallel sessions at a time."""
    t0 = time.perf_counter()
    done = 0

    async def one(s) -> None:
        for i in range(1, snippets + 1):
            got = await s.feed_run(snippet(i))
            if got != value(i):
                raise SystemExit(f'bench_memory: {label}: snippet {i} returned {got!r}, want {value(i)}')

    for start in range(0, len(sessions), parallel):
        await asyncio.gather(*(one(s) for s in sessions[start : start + parallel]))
        before, done = done, min(start + parallel, len(sessions))
        if done // 100 != before // 100 or done == len(sessions):
            log(f'{label}: {done} of {len(sessions)} sessions of {snippets} snippets ({time.perf_counter() - t0:.0f} s)')


def stored_sizes(monty: str, store: str) -> list[int]:
    """The sizes of the blobs in the store, as `monty session ls` lists them."""
    out = subprocess.run([monty, 'session', '--store', store, 'ls'], capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    if not lines or lines[0].split()[:2] != ['ID', 'SIZE']:
        raise SystemExit(f'bench_memory: unexpected `monty session ls` output: {out[:200]!r}')
    return [int(line.split()[1]) for line in lines[1:] if line.strip()]


def start_server(monty: str, store: str, sessions: int, logfile) -> tuple[subprocess.Popen, str]:
    env = dict(os.environ, MONTY_SIGNING_KEY='bench-memory-signing-key-0123456789')
    conns = str(sessions + 16)
    proc = subprocess.Popen(
        [monty, 'serve', '--addr', '127.0.0.1:0', '--store', store, '--ws-max-conns', conns,
         '--ws-max-conns-per-key', conns, '--ws-idle-timeout', '1h', '--log-format', 'json',
         '--log-level', 'info'],
        env=env, stdout=subprocess.DEVNULL, stderr=logfile)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f'bench_memory: monty serve exited ({proc.returncode}); its log: {logfile.name}')
        with open(logfile.name) as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get('msg') == 'listening':
                    return proc, 'ws://' + rec['addr'] + '/'
        time.sleep(0.1)
    proc.kill()
    raise SystemExit('bench_memory: monty serve did not say where it listens within 60 s')


async def ours(monty: str, sessions: int, snippets: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, open(os.path.join(tmp, 'serve.log'), 'w') as logfile:
        store = os.path.join(tmp, 'store')
        proc, url = start_server(monty, store, sessions, logfile)
        try:
            async with pm.AsyncMontyWebsocket(url, max_processes=sessions, request_timeout=120) as pool:
                # The server's own memory, warmed by one session come and gone.
                async with pool.checkout(ephemeral=True) as s:
                    await s.feed_run(snippet(1))
                await asyncio.sleep(0.5)
                base = rss_bytes(proc.pid)
                log(f'monty serve: {base / 2**20:.1f} MiB warm; opening {sessions} sessions')
                held = [await pool.checkout().__aenter__() for _ in range(sessions)]
                await fill(held, snippets, 'monty serve')
                total = rss_bytes(proc.pid)
                print(f'memory serve_rss {total}')
                print(f'memory serve_session {(total - base) / sessions:.0f}')
                log(f'monty serve: {total / 2**20:.1f} MiB with {sessions} live sessions; closing them (they are parked)')
                for s in held:
                    await s.__aexit__(None, None, None)
            sizes = []
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                sizes = stored_sizes(monty, store)
                if len(sizes) >= sessions:
                    break
                await asyncio.sleep(0.5)
            if len(sizes) < sessions:
                raise SystemExit(f'bench_memory: {len(sizes)} sessions in the store, want {sessions} parked ones')
            print(f'memory serve_stored {sum(sizes) / len(sizes):.0f}')
        finally:
            proc.terminate()
            proc.wait(timeout=60)


async def upstream(binary: str, sessions: int, snippets: int) -> None:
    me = os.getpid()
    async with pm.AsyncMonty(binary_path=binary, min_processes=sessions, max_processes=sessions) as pool:
        held = [await pool.checkout().__aenter__() for _ in range(sessions)]
        await fill(held, snippets, 'upstream worker')
        workers = children(me)
        if len(workers) != sessions:
            raise SystemExit(f'bench_memory: {len(workers)} upstream workers, want {sessions}')
        rss = sum(rss_bytes(p) for p in workers) / len(workers)
        dumps = [len(await s.dump()) for s in held]
        print(f'memory upstream_session {rss:.0f}')
        print(f'memory upstream_stored {sum(dumps) / len(dumps):.0f}')
        log(f'upstream: {rss / 2**20:.1f} MiB per worker holding a session of {snippets} snippets')
        for s in held:
            await s.__aexit__(None, None, None)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument('monty')
    ap.add_argument('upstream')
    ap.add_argument('--sessions', type=int, default=1000)
    ap.add_argument('--snippets', type=int, default=100)
    ap.add_argument('--upstream-sessions', type=int, default=50,
                    help='upstream workers to average (a process each)')
    args = ap.parse_args()
    await ours(args.monty, args.sessions, args.snippets)
    await upstream(args.upstream, args.upstream_sessions, args.snippets)
    await asyncio.sleep(0.1)  # the client's teardown race: see testdata/clients/monty_v1.py


if __name__ == '__main__':
    asyncio.run(main())

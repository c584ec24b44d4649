"""What a turn costs, for two builds of `monty serve` side by side.

Each server is a pair of URLs of one `monty serve` (its monty.v1 WebSocket
and its HTTP API) on one store. For each server, in every round (the
servers' order alternating: A B, B A, ...), one session takes CALLS writes
(`n += 1`) then CALLS reads (`n`):

- over monty.v1, through pydantic-monty 1.4.0's AsyncMontyWebsocket
  (`feed_run`), the client's round trip included;
- over POST /exec, through one kept-alive HTTP connection.

Prints, per server and kind of turn, p50 and p99 in milliseconds over all
rounds, and the ratio of each to the first server's.

    python turns.py API_KEY ROUNDS CALLS NAME=WS_URL,HTTP_URL [NAME=...]
"""

from __future__ import annotations

import asyncio
import http.client
import json
import statistics
import sys
import time
import urllib.parse

import pydantic_monty as pm

KINDS = (('monty.v1', 'write'), ('monty.v1', 'read'), ('/exec', 'write'), ('/exec', 'read'))


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


async def feeds(url: str, key: str, calls: int) -> tuple[list[float], list[float]]:
    pool = pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': key}, request_timeout=60, max_processes=1)
    async with pool:
        async with pool.checkout() as s:
            await s.feed_run('n = 0')
            out: list[list[float]] = []
            for code in ('n += 1', 'n'):
                times = []
                for _ in range(calls):
                    t0 = time.perf_counter()
                    await s.feed_run(code)
                    times.append(time.perf_counter() - t0)
                out.append(times)
            if await s.feed_run('n') != calls:
                raise SystemExit(f'{url}: the session lost writes')
    return out[0], out[1]


def execs(url: str, key: str, calls: int) -> tuple[list[float], list[float]]:
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    headers = {'x-api-key': key, 'content-type': 'application/json'}

    def call(body: dict) -> dict:
        conn.request('POST', '/exec', json.dumps(body), headers)
        resp = conn.getresponse()
        data = json.loads(resp.read())
        if resp.status != 200:
            raise SystemExit(f'{url}: /exec answered {resp.status}: {data}')
        return data

    sid = call({'code': 'n = 0'})['session_id']
    out: list[list[float]] = []
    for code in ('n += 1', 'n'):
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            call({'code': code, 'session_id': sid})
            times.append(time.perf_counter() - t0)
        out.append(times)
    if call({'code': 'n', 'session_id': sid})['result'] != calls:
        raise SystemExit(f'{url}: the session lost writes')
    conn.close()
    return out[0], out[1]


def main() -> int:
    key, rounds, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    servers = []
    for arg in sys.argv[4:]:
        name, urls = arg.split('=', 1)
        ws, http_url = urls.split(',')
        servers.append((name, ws, http_url))
    got = {(name, kind): [] for name, _, _ in servers for kind in KINDS}
    for r in range(rounds):
        order = servers if r % 2 == 0 else servers[::-1]
        for name, ws, http_url in order:
            w, rd = asyncio.run(feeds(ws, key, calls))
            got[(name, KINDS[0])] += w
            got[(name, KINDS[1])] += rd
            w, rd = execs(http_url, key, calls)
            got[(name, KINDS[2])] += w
            got[(name, KINDS[3])] += rd
        print(f'round {r + 1}/{rounds} done', file=sys.stderr, flush=True)
    base = servers[0][0]
    print(f'| surface, turn | {" | ".join(f"{n} p50 / p99 ms" for n, _, _ in servers)} | p50 / p99 against {base} |')
    print('| --- |' + ' --- |' * (len(servers) + 1))
    for kind in KINDS:
        cells, ratios = [], []
        for name, _, _ in servers:
            xs = got[(name, kind)]
            cells.append(f'{pct(xs, 0.5) * 1e3:.2f} / {pct(xs, 0.99) * 1e3:.2f}')
            b = got[(base, kind)]
            ratios.append(f'{pct(xs, 0.5) / pct(b, 0.5):.2f}× / {pct(xs, 0.99) / pct(b, 0.99):.2f}×')
        print(f'| {kind[0]} {kind[1]} | {" | ".join(cells)} | {", ".join(ratios[1:])} |')
    print(f'({rounds} rounds × {calls} calls per kind and server; median of all: '
          f'{statistics.median(x for v in got.values() for x in v) * 1e3:.2f} ms)', file=sys.stderr)
    return 0


if __name__ == '__main__':
    sys.exit(main())

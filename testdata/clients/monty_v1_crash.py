"""monty.v1 sessions that outlive the crash (SIGKILL) of the server holding them.

Through pydantic-monty 1.4.0's AsyncMontyWebsocket (unmodified), against
URL_A, one of two `monty serve` instances sharing a store: starts three
sessions, prints a line of JSON naming them and waits for a line on stdin,
during which the test SIGKILLs that instance. Then, on URL_B, it loads each
by id and checks that it is as of the last turn A answered:

- `fresh`: never stored before the crash other than by its turns: N feeds;
- `reloaded`: parked once (its connection closed, loaded again), then 5 feeds;
- `waiting`: a feed suspended on the client's function `ask`; loading it asks
  for the function again, and the feed completes.

The connections to A break with MontyDisconnectError, as docs/protocol.md
says; the script checks that too. Prints the results as JSON; exits non-zero
on any surprise.

    python monty_v1_crash.py URL_A URL_B API_KEY N
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pydantic_monty as pm


def pool(url: str, key: str) -> pm.AsyncMontyWebsocket:
    return pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': key}, request_timeout=60, max_processes=4)


async def main() -> int:
    url_a, url_b, key, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    async with pool(url_a, key) as a:
        async with a.checkout() as s:
            await s.feed_run('k = 0')
            reloaded = s.session_id
        fresh_s = await a.checkout().__aenter__()
        await fresh_s.feed_run('n = 0')
        for _ in range(n):
            await fresh_s.feed_run('n += 1\nn')
        re_s = await a.checkout().__aenter__()
        await re_s.load_session(reloaded)
        for _ in range(5):
            await re_s.feed_run('k += 1\nk')
        wait_s = await a.checkout().__aenter__()
        snap = await wait_s.feed_start('a = 20\nb = ask(a)\na + b')
        assert isinstance(snap, pm.AsyncFunctionSnapshot), snap
        ids = {
            'fresh': fresh_s.session_id.decode(),
            'reloaded': re_s.session_id.decode(),
            'waiting': wait_s.session_id.decode(),
        }
        print(json.dumps(ids), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        # A is gone: its connections are broken.
        try:
            await fresh_s.feed_run('n')
            disconnected = False
        except pm.MontyDisconnectError:
            disconnected = True

    out: dict[str, object] = {'disconnected': disconnected}
    start = time.monotonic()
    async with pool(url_b, key) as b:
        async with b.checkout() as s:
            await s.load_session(ids['fresh'].encode())
            out['load_seconds'] = round(time.monotonic() - start, 2)
            out['fresh'] = await s.feed_run('n')
        async with b.checkout() as s:
            await s.load_session(ids['reloaded'].encode())
            out['reloaded'] = await s.feed_run('k')
        async with b.checkout() as s:
            snap = await s.load_snapshot(ids['waiting'].encode())
            out['asked_again'] = isinstance(snap, pm.AsyncFunctionSnapshot) and snap.function_name == 'ask' and list(snap.args) == [20]
            done = await snap.resume({'return_value': 22})
            out['waiting'] = done.output
    print(json.dumps(out), flush=True)
    await asyncio.sleep(0.1)  # see monty_v1.run_async: the client's teardown race
    ok = out['disconnected'] and out['fresh'] == n and out['reloaded'] == 5 and out['asked_again'] and out['waiting'] == 42
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))

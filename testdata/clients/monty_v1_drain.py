"""A monty.v1 session that outlives the server it started on.

Through pydantic-monty 1.4.0's AsyncMontyWebsocket (unmodified, auto_resume
on), against URL (a load balancer in front of two `monty serve` instances
sharing one store): starts a session, prints READY and waits for a line on
stdin, during which the test drains the instance serving it. Then it goes on
as if nothing happened: an idle session's next feed, and a feed suspended on
an external call, must both continue with their state on the other
instance. Prints the results as JSON; exits non-zero on any surprise.

    python monty_v1_drain.py URL API_KEY
"""

from __future__ import annotations

import asyncio
import json
import sys

import pydantic_monty as pm


async def main() -> int:
    url, key = sys.argv[1:3]
    async with pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': key}, request_timeout=60) as pool:
        async with pool.checkout() as idle, pool.checkout() as busy:
            await idle.feed_run('history = [1]')
            first_id = idle.session_id
            snap = await busy.feed_start('a = 20\nb = ask(a)\na + b')
            print('READY', flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
            # The instance that served both is draining now.
            after = await idle.feed_run('history.append(2)\nhistory')
            done = await snap.resume({'return_value': 22})
            out = {
                'idle': after,
                'busy': done.output,
                'same_session': idle.session_id == first_id,
                'session_id': (idle.session_id or b'').decode(),
            }
    print(json.dumps(out), flush=True)
    await asyncio.sleep(0.1)  # see monty_v1.run_async: the client's teardown race
    ok = out['idle'] == [1, 2] and out['busy'] == 42
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))

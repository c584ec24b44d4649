"""monty.v1 over WebSocket, through upstream's own client.

Part one runs async scenarios through pydantic-monty 1.4.0 (unmodified) twice:
on upstream's `monty subprocess` worker (AsyncMonty, the reference) and on
`monty serve` (AsyncMontyWebsocket), and fails unless both see the same,
apart from the differences listed in monty_v1_known.py. Part two checks what
only a server has: API keys, session ids, dump records that load on any
instance, refusal of unknown, forged and foreign ids, ephemeral sessions,
profiles and their ceilings, and the connection limits.

    python monty_v1_ws.py UPSTREAM_MONTY ws://HOST:PORT/ API_KEY OTHER_API_KEY
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
import time
import traceback
import urllib.error
import urllib.request

import pydantic_monty as pm

from monty_v1_known import compare

SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


@scenario
async def values_and_prints(checkout):
    out = []
    async with checkout() as s:
        r = await s.feed_run(
            "print('hi')\n[a, {1: (2, 3.5)}, None, 2**100, b'\\x00', 1j, ..., frozenset({1}), d]",
            inputs={'a': 'é', 'd': datetime.date(2020, 2, 29)},
            print_callback=lambda st, t: out.append((st, t)),
        )
    return f'{r!r} {out}'


@scenario
async def errors_and_tracebacks(checkout):
    res = []
    async with checkout() as s:
        await s.feed_run('def f(n):\n    return 10 // n')
        for code in ('f(0)', 'raise ValueError("x")', '1 +', 'nope'):
            try:
                await s.feed_run(code)
            except pm.MontyError as e:
                res.append(e.display('traceback') if not isinstance(e, pm.MontyTypingError) else 'typing')
        res.append(repr(await s.feed_run('f(5)')))
    return '\n'.join(res)


@scenario
async def external_functions(checkout):
    calls = []

    def sync_fetch(url, *, n=1):
        calls.append(url)
        return url * n

    async def async_fetch(url):
        await asyncio.sleep(0.05)
        return url.upper()

    async def bad():
        raise KeyError('k')

    lookup = {'sync_fetch': sync_fetch, 'async_fetch': async_fetch, 'bad': bad, 'K': 7}
    async with checkout() as s:
        r1 = await s.feed_run("sync_fetch('a', n=2) + await async_fetch('b')", external_lookup=lookup)
        t0 = time.monotonic()
        r2 = await s.feed_run(
            "import asyncio\nawait asyncio.gather(async_fetch('c'), async_fetch('d'), async_fetch('e'))", external_lookup=lookup
        )
        took = time.monotonic() - t0
        try:
            await s.feed_run('await bad()', external_lookup=lookup)
        except pm.MontyRuntimeError as e:
            r3 = e.display('type-msg')
        r4 = await s.feed_run('K * 6', external_lookup=lookup)
    assert took < 0.5, took
    return f'{r1} {r2} {r3} {r4} {calls}'


@scenario
async def modules_and_classes(checkout):
    class Counter:
        def __init__(self):
            self.n = 0

        def add(self, k):
            self.n += k
            return self.n

    c = Counter()
    mod = pm.ExternalModule({'VERSION': 3, 'double': lambda x: x * 2})
    async with checkout(external_modules={'tools': mod}) as s:
        r1 = await s.feed_run('import tools\ntools.double(tools.VERSION)')
        r2 = await s.feed_run('c.add(2) + c.add(3)', inputs={'c': pm.ClassInstance(c, allowed_methods=['add'])})
    assert c.n == 5
    return f'{r1} {r2}'


@scenario
async def os_calls(checkout):
    seen = []

    def handle(*, name, args, kwargs, is_async, **_):
        seen.append(name)
        if name == 'Path.read_text':
            return 'text of ' + str(args[0])
        return pm.NOT_HANDLED

    async with checkout() as s:
        r = await s.feed_run("from pathlib import Path\nPath('/a/b').read_text()", os=handle)
        try:
            await s.feed_run("import os\nos.getenv('HOME')", os=handle)
        except pm.MontyRuntimeError as e:
            r2 = e.display('type-msg')
    return f'{r} {r2} {seen}'


@scenario
async def limits(checkout):
    res = []
    lim = pm.ResourceLimits(max_memory=20_000_000, max_recursion_depth=50, max_feed_duration_secs=0.5)
    async with checkout(limits=lim) as s:
        for code in ('x = [0] * 10_000_000', 'def r(n):\n    return r(n + 1)\nr(0)', 'while True:\n    pass', 'import time\ntime.sleep(0.6)\n1'):
            try:
                res.append(repr(await s.feed_run(code)))
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg').split(':')[0])
    return repr(res)


@scenario
async def policy_and_type_checking(checkout):
    fixed = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    res = []
    async with checkout(os_policy=pm.OSPolicy(datetime=fixed, sleep='zero', timezone='Asia/Tokyo')) as s:
        res.append(await s.feed_run('import datetime, time\ntime.sleep(3)\nstr(datetime.datetime.now())'))
    async with checkout(type_check=True, type_check_stubs='def f(x: int) -> int: ...\n', type_check_format='concise') as s:
        try:
            await s.feed_run('y: str = f(1)')
        except pm.MontyTypingError as e:
            res.append('typing error' if 'y' in e.display() else e.display())
        res.append(await s.feed_run('z: int = f(1)\nz', external_lookup={'f': lambda x: x + 1}))
    return repr(res)


@scenario
async def snapshots(checkout):
    async with checkout() as s:
        snap = await s.feed_start('a = K\nb = f(a)\nb', external_lookup={'f': lambda v: v + 1, 'K': 5})
        kinds = []
        while not isinstance(snap, pm.MontyComplete):
            kinds.append(type(snap).__name__)
            snap = await snap.resume_auto()
        snap2 = await s.feed_start('y = g(1)\ny')
        head = (type(snap2).__name__, snap2.function_name, snap2.args)
        done = await snap2.resume({'return_value': 41})
    return f'{kinds} {snap.output} {head} {done.output}'


@scenario
async def assert_annotations(checkout):
    res = []
    for ann in (..., False):
        kw = {} if ann is ... else {'assert_message_annotations': ann}
        async with checkout(**kw) as s:
            try:
                await s.feed_run("assert 'abc' == 'xyz'")
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg'))
    return repr(res)


async def run_all(make_checkout) -> dict[str, str]:
    out = {}
    for name, fn in SCENARIOS.items():
        try:
            out[name] = await fn(make_checkout)
        except Exception:  # noqa: BLE001
            out[name] = 'FAILED ' + traceback.format_exc()
    return out


# ---- what only a server has -------------------------------------------------


async def server_features(url: str, key: str, other_key: str) -> list[str]:
    problems = []

    def pool(k=key, **kw):
        return pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': k}, request_timeout=30, **kw)

    def check(cond, what):
        if not cond:
            problems.append(what)

    # A wrong or missing key is refused at the upgrade.
    for headers in ({'x-api-key': 'wrong-key-xxxx'}, {}):
        try:
            async with pm.AsyncMontyWebsocket(url, connect_headers=lambda h=headers: h) as p, p.checkout() as s:
                await s.feed_run('1')
            problems.append(f'connected with headers {headers}')
        except Exception as e:  # noqa: BLE001  (the client raises RuntimeError for a refused upgrade)
            check('401' in str(e), f'refusal of headers {headers} is a 401: {e}')
    # Authorization: Bearer works as x-api-key does.
    async with pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'Authorization': 'Bearer ' + key}) as p, p.checkout() as s:
        check(await s.feed_run('2 + 2') == 4, 'bearer key')

    async with pool() as p:
        # Stored sessions: an id at once, a record from dump() that loads in a new session.
        async with p.checkout() as s:
            await s.feed_run('x = [1, 2]\ndef f():\n    return sum(x)')
            sid = s.session_id
            check(isinstance(sid, bytes) and sid.startswith(b's-'), f'session id {sid!r}')
            rec = await s.dump()
            check(rec.startswith(b'r-'), f'record id {rec!r}')
            await s.feed_run('x.append(3)')
            snap = await s.feed_start('y = g(f())\ny')
            paused = await s.dump()
            await snap.resume({'return_value': 0})
        async with p.checkout() as s:
            await s.load_session(rec)
            check(await s.feed_run('f()') == 3, 'record holds the state at dump()')
            check(s.session_id not in (None, sid), 'a record starts a new session')
        async with p.checkout() as s:
            await s.load_session(sid)
            check(await s.feed_run('f()') == 6, 'the parked session continues where it ended')
            check(s.session_id == sid, 'loading a session id continues that session')
        async with p.checkout() as s:
            snap = await s.load_snapshot(paused)
            check(isinstance(snap, pm.AsyncFunctionSnapshot) and snap.args == (6,), f'reannounced suspension {snap!r}')
            done = await snap.resume({'return_value': 'g'})
            check(done.output == 'g', 'a loaded suspension resumes')
        # One session on every surface: /exec continues a parked session by its id, and
        # load_session takes a session /exec made.
        out = await asyncio.to_thread(http_exec, url, key, sid.decode(), 'x.append(10)\nf()')
        check(out.get('result') == 16, f'/exec continues the monty.v1 session: {out}')
        async with p.checkout() as s:
            await s.load_session(sid)
            check(await s.feed_run('f()') == 16, "the session holds what /exec did")
        out = await asyncio.to_thread(http_exec, url, key, 'made-by-exec', "h = 'from /exec'")
        check('error' not in out, f'/exec: {out}')
        async with p.checkout() as s:
            await s.load_session(b'made-by-exec')
            check(s.session_id == b'made-by-exec', f'session id of /exec: {s.session_id!r}')
            check(await s.feed_run('h') == 'from /exec', "load_session takes /exec's session")
        # Unknown, forged and malformed ids are refused, never loaded.
        for bad in (b'r-' + b'0' * 32, b's-' + b'f' * 32, b'garbage', rec[:-1] + b'x'):
            async with p.checkout() as s:
                try:
                    await s.load_session(bad)
                    problems.append(f'loaded {bad!r}')
                except pm.MontyError as e:
                    check('failed to load session' in str(e), f'refusal of {bad!r} says why: {e}')
        # Ephemeral sessions get no id.
        async with p.checkout(ephemeral=True) as s:
            await s.feed_run('1')
            check(s.session_id is None, 'ephemeral session has no id')
        # Profiles: an unknown one is refused; a known one caps the limits.
        try:
            async with p.checkout(profile='no-such-profile') as s:
                await s.feed_run('1')
            problems.append('unknown profile accepted')
        except pm.MontyError as e:
            check('unknown profile' in str(e), f'unknown profile refusal: {e}')
        async with p.checkout(profile='small', limits=pm.ResourceLimits(max_memory=1 << 30)) as s:
            try:
                await s.feed_run('x = [0] * 10_000_000')
                problems.append('profile memory ceiling not applied')
            except pm.MontyRuntimeError as e:
                check('MemoryError' in e.display('type-msg'), f'profile ceiling: {e}')
            r = await s.feed_run("open('/data/hello.txt').read()")
            check(r == 'hello from the host\n', f'profile mount: {r!r}')
        # Code mode: the profile's MCP server is called by the server.
        async with p.checkout(profile='tools') as s:
            r = await s.feed_run(
                "import asyncio\nnow, later = await asyncio.gather(clock.get_current_time(timezone='UTC'), "
                "clock.get_current_time(timezone='Asia/Tokyo'))\n[now['timezone'], later['timezone']]"
            )
            check(r == ['UTC', 'Asia/Tokyo'], f'code mode through a profile: {r!r}')
        async with p.checkout() as s:
            try:
                await s.feed_run("open('/data/hello.txt').read()")
                problems.append('the default profile sees the small profile\'s mount')
            except pm.MontyRuntimeError as e:
                check('PermissionError' in e.display('type-msg'), f'no mount outside the profile: {e}')

    # Another key sees none of these sessions.
    async with pool(other_key) as p, p.checkout() as s:
        try:
            await s.load_session(rec)
            problems.append("another key loaded this key's record")
        except pm.MontyError as e:
            check('failed to load session' in str(e), f'foreign record refusal: {e}')
    return problems


def http_exec(url: str, key: str, session_id: str, code: str) -> dict:
    """POST /exec on the HTTP API beside the monty.v1 server."""
    base = 'http' + url.removeprefix('ws').rstrip('/')
    body = json.dumps({'code': code, 'session_id': session_id}).encode()
    req = urllib.request.Request(base + '/exec', data=body, headers={'x-api-key': key, 'content-type': 'application/json'})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return json.load(r)
    except urllib.error.HTTPError as e:
        return json.load(e)


async def main() -> int:
    upstream, url, key, other = sys.argv[1:5]

    async with pm.AsyncMonty(binary_path=upstream, min_processes=1) as up_pool, pm.AsyncMontyWebsocket(
        url, connect_headers=lambda: {'x-api-key': key}, request_timeout=30
    ) as our_pool:
        ref = await run_all(up_pool.checkout)
        got = await run_all(our_pool.checkout)
    problems = compare(SCENARIOS, ref, got, 'monty serve')
    for p in await server_features(url, key, other):
        problems.append('server: ' + p)
    for p in problems:
        print('PROBLEM', p)
    sys.stdout.flush()
    await asyncio.sleep(0.1)  # see monty_v1.run_async: the client's teardown race
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(asyncio.run(main()))

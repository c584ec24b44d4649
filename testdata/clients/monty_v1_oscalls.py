"""Every OS call Monty makes, over monty.v1, against upstream's worker.

A sweep through pydantic-monty 1.4.0 (the real client, unmodified): each
kind of OS call the interpreter makes (sleep in every mode, the clocks,
random, the environment, file operations under each mount mode, through a
handler, and with nothing to serve them) runs in synchronous code and in
async code (inside a coroutine the feed awaits), through the sync pool
(Monty) and the async pool (AsyncMonty) of upstream's `monty subprocess`
(the reference) and of ours, and, given a `monty serve` URL, through the
WebSocket transport (AsyncMontyWebsocket) against upstream's async pool.
Every case's outcome (its value or its error, what the host's handler was
asked, and what a mount's directory holds afterwards) must be the same,
apart from the differences listed in monty_v1_known.py. Each case also
asserts what it expects, so that two workers agreeing on a wrong answer
still fail.

    python monty_v1_oscalls.py UPSTREAM_MONTY OUR_MONTY [ws://HOST:PORT/ API_KEY]
    python monty_v1_oscalls.py UPSTREAM OURS --only NAME ...
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import datetime
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pydantic_monty as pm

from monty_v1_known import OSCALLS_KNOWN, compare

FIXED = datetime.datetime(2030, 1, 2, 3, 4, 5, 6, tzinfo=datetime.timezone.utc)
HOST_NOW = datetime.datetime(2031, 6, 7, 8, 9, 10)


@dataclasses.dataclass
class Case:
    """One OS-call situation: code whose last line is an expression (its
    value is the outcome), the session's OS policy, what serves the calls
    (a handler and/or a mount), and what the outcome must satisfy."""

    name: str
    code: str
    policy: dict[str, Any] = dataclasses.field(default_factory=dict)
    handler: str | None = None  # a key of HANDLERS
    mount: str | None = None  # a MountDir mode
    expect: Callable[[str], bool] = lambda _: True
    async_code: str | None = None  # when the async form differs (asyncio.sleep)
    contexts: tuple[str, ...] = ('sync', 'async')


def handle(seen: list, *, name, args, kwargs, is_async, **_):
    """The host's OS handler: answers what a host would, records each call."""
    seen.append((name, tuple(repr(a) for a in args), tuple(sorted(kwargs))))
    answers = {
        'time.sleep': None,
        'asyncio.sleep': None,
        'datetime.now': HOST_NOW,
        'date.today': HOST_NOW.date(),
        'time.time': 1_900_000_000.25,
        'os.getenv': {'HOME': '/home/m'}.get(args[0], args[1] if len(args) > 1 else None) if args else None,
        'os.environ': {'HOME': '/home/m', 'LANG': 'C'},
        'os.urandom': bytes(range(256)) * 10,
        'Path.exists': True,
        'Path.read_text': 'served text',
        'Path.read_bytes': b'served bytes',
        'Path.is_file': True,
        'Path.is_dir': False,
        'Path.write_text': 11,
    }
    if name == 'os.urandom' and args:
        return (bytes(range(256)) * (args[0] // 256 + 1))[: args[0]]
    if name in answers:
        return answers[name]
    return pm.NOT_HANDLED


def refuse(seen: list, *, name, args, kwargs, is_async, **_):
    """A handler that serves nothing, as a host that only watches would."""
    seen.append((name, tuple(repr(a) for a in args)))
    return pm.NOT_HANDLED


HANDLERS = {'serve': handle, 'refuse': refuse}


def sleeps(policy: dict, handler: str | None, tag: str, expect=lambda o: True) -> list[Case]:
    return [
        Case(
            f'sleep_{tag}',
            'import time\nt0 = time.monotonic()\nr = time.sleep(0.02)\n[r]',
            policy,
            handler,
            async_code='import asyncio\nr = await asyncio.sleep(0.02)\n[r]',
            expect=expect,
        ),
        Case(
            f'sleep_zero_delay_{tag}',
            'import time\n[time.sleep(0)]',
            policy,
            handler,
            async_code='import asyncio\n[await asyncio.sleep(0)]',
            expect=expect,
        ),
        Case(
            f'sleep_gather_{tag}',
            'import asyncio\nasync def f(i):\n    await asyncio.sleep(0.01 * i)\n    return i\nawait asyncio.gather(f(3), f(1), f(2))',
            policy,
            handler,
            contexts=('sync',),  # awaited at the top level already
            expect=expect,
        ),
        Case(
            f'sleep_bad_argument_{tag}',
            "import time\ntime.sleep('x')",
            policy,
            handler,
            async_code="import asyncio\nawait asyncio.sleep('x')",
            expect=lambda o: 'TypeError' in o,
        ),
        Case(
            f'sleep_negative_{tag}',
            'import time\ntime.sleep(-1)',
            policy,
            handler,
            async_code='import asyncio\n[await asyncio.sleep(-1)]',
        ),
    ]


def cases() -> list[Case]:
    out: list[Case] = []
    ok = lambda o: not o.startswith('error')  # noqa: E731
    out += sleeps({}, None, 'default', ok)
    out += sleeps({'sleep': 'system'}, None, 'system', ok)
    out += sleeps({'sleep': 'system', 'sleep_system_max': 0.005}, None, 'system_capped', ok)
    out += sleeps({'sleep': 'zero'}, None, 'zero', ok)
    out += sleeps({'sleep': 'call_host'}, 'serve', 'call_host')
    out += sleeps({'sleep': 'call_host'}, 'refuse', 'call_host_refused')
    out += sleeps({'sleep': 'call_host'}, None, 'call_host_no_handler')

    clocks = (
        'import datetime, time\n'
        'kinds = [type(time.time()).__name__, type(time.monotonic()).__name__, type(time.perf_counter()).__name__]\n'
        'years = [datetime.datetime.now(datetime.timezone.utc).year >= 2026, datetime.date.today().year >= 2026]\n'
        'agree = abs(time.time() - datetime.datetime.now(datetime.timezone.utc).timestamp()) < 5\n'
        'kinds + years + [agree]'
    )
    values = (
        'import datetime, time\n'
        'now = [str(datetime.datetime.now()), str(datetime.datetime.now(datetime.timezone.utc)), str(datetime.date.today())]\n'
        'clocks = [time.time(), time.monotonic() >= 0, time.gmtime(0).tm_year, time.process_time()]\n'
        'now + clocks'
    )
    out += [
        Case('clock_system', clocks, expect=lambda o: o == "['float', 'float', 'float', True, True, True]"),
        Case('clock_fixed', values, {'datetime': FIXED}, expect=lambda o: '2030-01-02 03:04:05.000006' in o),
        Case('clock_fixed_zone', values, {'datetime': FIXED, 'timezone': 'Asia/Tokyo'}, expect=lambda o: '12:04:05' in o),
        Case('clock_call_host', values, {'datetime': 'call_host'}, 'serve', expect=lambda o: '2031-06-07' in o),
        Case('clock_call_host_refused', values, {'datetime': 'call_host'}, 'refuse', expect=lambda o: o.startswith('error')),
        Case('clock_call_host_no_handler', values, {'datetime': 'call_host'}, expect=lambda o: o.startswith('error')),
        Case('process_time_elapsed', 'import time\nn = 0\nwhile n < 100000:\n    n += 1\n[time.process_time() > 0, time.thread_time() > 0]', {'process_time': 'elapsed'}),
    ]

    randoms = 'import random\nr = random.Random()\n[random.random(), random.randint(1, 10**9), r.random()]'
    out += [
        Case('random_system', 'import random\n[0 <= random.random() < 1, 1 <= random.randint(1, 6) <= 6]', expect=lambda o: o == '[True, True]'),
        Case('random_seeded', randoms, {'random_start': {'seed': 7}}),
        Case('random_call_host', randoms, {'random_start': 'call_host'}, 'serve'),
        Case('random_call_host_refused', randoms, {'random_start': 'call_host'}, 'refuse', expect=lambda o: o.startswith('error')),
        Case('urandom', 'import os\nos.urandom(8)', {}, 'serve'),
        Case('urandom_no_handler', 'import os\nos.urandom(8)', expect=lambda o: o.startswith('error')),
    ]

    env = "import os\n[os.getenv('HOME'), os.getenv('NOPE'), os.getenv('NOPE', 'd'), os.environ.get('LANG'), sorted(os.environ)]"
    out += [
        Case('environment', env, {}, 'serve', expect=lambda o: '/home/m' in o),
        Case('environment_refused', env, {}, 'refuse', expect=lambda o: o.startswith('error')),
        Case('environment_no_handler', "import os\nos.getenv('HOME')", expect=lambda o: o.startswith('error')),
    ]

    reads = (
        'from pathlib import Path\n'
        "p = Path('/data/in.txt')\n"
        'kinds = [p.exists(), p.is_file(), p.is_dir(), p.is_symlink(), p.read_text(), p.read_bytes(), p.stat().st_size]\n'
        "listing = sorted(str(c) for c in Path('/data').iterdir())\n"
        "paths = [str(Path('/data/sub/../in.txt').resolve()), str(Path('in.txt').absolute()), Path('/data/missing').exists()]\n"
        "globbed = sorted(str(g) for g in Path('/data').glob('*.txt'))\n"
        'kinds + [listing] + paths + [globbed]'
    )
    writes = (
        'from pathlib import Path\n'
        'res = []\n'
        'def step(label, f):\n'
        '    try:\n'
        '        res.append((label, f()))\n'
        '    except Exception as e:\n'
        '        res.append((label, type(e).__name__, str(e)))\n'
        "step('write_text', lambda: Path('/data/out.txt').write_text('abc'))\n"
        "step('append_text', lambda: open('/data/out.txt', 'a').write('def'))\n"
        "step('write_bytes', lambda: Path('/data/b.bin').write_bytes(b'\\x00\\x01'))\n"
        "step('mkdir', lambda: Path('/data/d/e').mkdir(parents=True, exist_ok=True))\n"
        "step('rename', lambda: str(Path('/data/b.bin').rename('/data/c.bin')))\n"
        "step('read_back', lambda: Path('/data/out.txt').read_text())\n"
        "step('open_read', lambda: open('/data/in.txt').read())\n"
        "step('unlink', lambda: Path('/data/c.bin').unlink())\n"
        "step('rmdir', lambda: Path('/data/d/e').rmdir())\n"
        "step('listing', lambda: sorted(str(c) for c in Path('/data').iterdir()))\n"
        'res'
    )
    for mode in ('read-only', 'read-write', 'overlay'):
        tag = mode.replace('-', '_')
        out += [
            Case(f'files_read_{tag}', reads, mount=mode, expect=lambda o: "'hello'" in o),
            Case(f'files_write_{tag}', writes, mount=mode),
        ]
    out += [
        Case('files_handler', "from pathlib import Path\n[Path('/x').exists(), Path('/x').read_text(), Path('/x').read_bytes(), Path('/x').write_text('hi')]", {}, 'serve'),
        Case('files_refused', "from pathlib import Path\nPath('/etc/passwd').read_text()", {}, 'refuse', expect=lambda o: 'PermissionError' in o),
        Case('files_nothing', "from pathlib import Path\n[Path('/etc/passwd').exists()]", expect=lambda o: 'PermissionError' in o),
        Case('files_outside_mount', "from pathlib import Path\nPath('/elsewhere/x').read_text()", mount='read-write', expect=lambda o: 'PermissionError' in o),
        Case('files_escape_mount', "from pathlib import Path\nPath('/data/../../etc/passwd').read_text()", mount='read-only', expect=lambda o: 'Error' in o),
    ]
    return out


def as_async(code: str) -> str:
    """The code run inside a coroutine that the feed awaits; its last line
    (an expression) is returned."""
    lines = code.split('\n')
    body = '\n'.join('    ' + ln for ln in lines[:-1])
    return f'async def main():\n{body}\n    return {lines[-1]}\nawait main()' if body else f'async def main():\n    return {lines[-1]}\nawait main()'


def outcome(result: Any = None, error: BaseException | None = None, seen: list | None = None, files: list | None = None) -> str:
    text = repr(result) if error is None else 'error ' + (error.display('type-msg') if isinstance(error, pm.MontyError) else repr(error))
    if seen:
        text += f' | host asked {seen}'
    if files is not None:
        text += f' | dir {files}'
    return text


def snapshot(d: Path) -> list:
    return sorted((str(p.relative_to(d)), p.read_bytes() if p.is_file() else 'dir') for p in d.rglob('*'))


def prepare(case: Case, context: str) -> tuple[str, dict]:
    """The case's code in the context's form, and the checkout's options."""
    code = case.async_code if context == 'async' and case.async_code else case.code
    if context == 'async' and case.async_code is None:
        code = as_async(code)
    return code, ({'os_policy': pm.OSPolicy(**case.policy)} if case.policy else {})


@contextlib.contextmanager
def staged(case: Case, context: str):
    """What one case needs around its feed: its code, the checkout's and the
    feed's options (the handler, a fresh host directory mounted as /data),
    and done(result=..., error=...), which reads its outcome."""
    code, checkout = prepare(case, context)
    seen: list = []
    feed: dict[str, Any] = {}
    if case.handler:
        h = HANDLERS[case.handler]
        feed['os'] = lambda **kw: h(seen, **kw)
    with contextlib.ExitStack() as stack:
        files = None
        if case.mount:
            d = Path(stack.enter_context(tempfile.TemporaryDirectory()))
            (d / 'in.txt').write_text('hello')
            (d / 'sub').mkdir()
            feed['mount'] = stack.enter_context(pm.MountDir(host_path=str(d), virtual_path='/data', mode=case.mount))
            files = d

        def done(result: Any = None, error: BaseException | None = None) -> str:
            return outcome(result, error, seen, snapshot(files) if files else None)

        yield code, checkout, feed, done


def run_sync(binary: str, todo: list[tuple[Case, str]]) -> dict[str, str]:
    res = {}
    with pm.Monty(binary_path=binary) as pool:
        for case, context in todo:
            key = f'{case.name}/{context}/sync-pool'
            try:
                res[key] = one_sync(pool, case, context)
            except Exception:
                res[key] = 'FAILED\n' + traceback.format_exc()
    return res


def one_sync(pool, case: Case, context: str) -> str:
    with staged(case, context) as (code, checkout, feed, done), pool.checkout(**checkout) as s:
        try:
            return done(s.feed_run(code, **feed))
        except pm.MontyError as e:
            return done(error=e)


async def run_async_pool(checkout_of, label: str, todo: list[tuple[Case, str]]) -> dict[str, str]:
    res = {}
    for case, context in todo:
        key = f'{case.name}/{context}/{label}'
        try:
            res[key] = await one_async(checkout_of, case, context)
        except Exception:
            res[key] = 'FAILED\n' + traceback.format_exc()
    return res


async def one_async(checkout_of, case: Case, context: str) -> str:
    with staged(case, context) as (code, checkout, feed, done):
        async with checkout_of(**checkout) as s:
            try:
                return done(await s.feed_run(code, **feed))
            except pm.MontyError as e:
                return done(error=e)


def sweep(binary: str, todo: list[tuple[Case, str]]) -> dict[str, str]:
    res = run_sync(binary, todo)

    async def pool():
        async with pm.AsyncMonty(binary_path=binary) as p:
            got = await run_async_pool(p.checkout, 'async-pool', todo)
        await asyncio.sleep(0.1)  # see monty_v1.run_async: the client's teardown race
        return got

    res.update(asyncio.run(pool()))
    return res


def websocket(url: str, key: str, todo: list[tuple[Case, str]]) -> dict[str, str]:
    async def go():
        async with pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': key}, request_timeout=30) as p:
            got = await run_async_pool(p.checkout, 'async-pool', todo)
        await asyncio.sleep(0.1)
        return got

    return asyncio.run(go())


def check_expectations(all_cases: list[Case], ref: dict[str, str]) -> list[str]:
    problems = []
    by_name = {c.name: c for c in all_cases}
    for key, got in ref.items():
        case = by_name[key.split('/')[0]]
        if not got.startswith('FAILED') and not case.expect(got):
            problems.append(f'{key}: upstream gave what the case does not expect: {got}')
    return problems


def main() -> int:
    args = sys.argv[1:]
    only = []
    if '--only' in args:
        i = args.index('--only')
        only, args = args[i + 1 :], args[:i]
    upstream, ours = args[0], args[1]
    ws = args[2:4] if len(args) >= 4 else None
    all_cases = [c for c in cases() if not only or c.name in only]
    todo = [(c, ctx) for c in all_cases for ctx in c.contexts]
    t0 = time.monotonic()
    ref = sweep(upstream, todo)
    got = sweep(ours, todo)
    names = sorted(ref)
    problems = compare(names, ref, got, 'our worker', OSCALLS_KNOWN)
    problems += check_expectations(all_cases, ref)
    if ws:
        got_ws = websocket(ws[0], ws[1], todo)
        ws_names = sorted(got_ws)
        problems += compare(ws_names, {k: ref[k] for k in ws_names}, got_ws, 'monty serve (WebSocket)', OSCALLS_KNOWN)
    print(f'{len(names)} outcomes per worker{", and over WebSocket" if ws else ""}, in {time.monotonic() - t0:.1f} s')
    for p in problems:
        print('PROBLEM', p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

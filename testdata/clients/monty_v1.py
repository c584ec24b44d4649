"""monty.v1 conformance through upstream's own client.

Drives two `monty subprocess` workers through pydantic-monty 1.4.0 (the real
client from PyPI, unmodified): upstream's worker (pydantic-monty-runtime's
`monty` binary, the reference) and ours. Every scenario below runs against
both, through the sync pool (Monty, MontySession) and the async pool
(AsyncMonty, AsyncMontySession), and its outcome, a text of what the client
saw, must be the same from both, apart from the differences listed in
monty_v1_known.py with their reasons (docs/conformance.md lists them too). A
listed difference that no longer differs is an error, so the list cannot go
stale. Each scenario also asserts what it expects of the worker itself, so
that two workers agreeing on a wrong answer still fail.

    python monty_v1.py UPSTREAM_MONTY OUR_MONTY      exit 0 when all agree
    python monty_v1.py UPSTREAM OURS --only NAME ...  run some scenarios
    MONTY_BIN=OURS python monty_v1.py --monty-bin     the client finds OURS by MONTY_BIN
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import sys
import tempfile
import time
import traceback
from pathlib import Path

import pydantic_monty as pm

from monty_v1_known import compare

SCENARIOS = {}


def run_async(coro):
    """asyncio.run(coro), staying in the loop a moment after it: the 1.4.0
    client's AsyncMonty may still hand a result to the loop just after its
    pool closed, and if the interpreter is finalizing by then the process
    aborts. It happens with upstream's worker too (docs/protocol.md)."""

    async def settle():
        try:
            return await coro
        finally:
            await asyncio.sleep(0.1)

    return asyncio.run(settle())


def scenario(fn):
    SCENARIOS[fn.__name__] = fn
    return fn


# ---- sync pool (Monty, MontySession) ---------------------------------------


@scenario
def basic(pool, _binary):
    out = []
    with pool.checkout() as s:
        r = s.feed_run("x = 40\nprint('hi', x)\nx + 2", print_callback=lambda st, t: out.append((st, t)))
        r2 = s.feed_run('x * 2')
    assert r == 42 and r2 == 80, (r, r2)
    return f'{r} {r2} {out}'


@scenario
def values_round_trip(pool, _binary):
    inputs = {
        'a': [1, 2**100, -(2**70), 3.5, float('inf'), 'é', b'\x00\xff', None, True],
        'b': {'k': (1, 2), 3: frozenset({4}), (5, 6): {7}},
        'c': datetime.datetime(2024, 5, 6, 7, 8, 9, 10, tzinfo=datetime.timezone.utc),
        'd': datetime.date(2020, 2, 29),
        'e': datetime.timedelta(days=-1, seconds=5),
        'f': datetime.time(1, 2, 3),
        'g': Path('/x/y'),
        'h': 1 + 2j,
        'i': ...,
    }
    with pool.checkout() as s:
        r = s.feed_run('[a, b, c, d, e, f, g, h, i]', inputs=inputs)
    assert r == list(inputs.values()), r
    return repr(r)


@scenario
def exceptions_and_tracebacks(pool, _binary):
    res = []
    with pool.checkout() as s:
        s.feed_run('def f(n):\n    return 10 // n\n')
        for code in ('f(0)', 'raise ValueError("bad")', 'undefined_name', 'raise KeyError', '1 +'):
            try:
                s.feed_run(code)
            except pm.MontyError as e:
                res.append(type(e).__name__ + ' ' + e.display('traceback'))
        res.append(repr(s.feed_run('f(5)')))  # the session survives
    assert 'ZeroDivisionError' in res[0] and res[-1] == '2', res
    return '\n'.join(res)


@scenario
def external_functions_sync(pool, _binary):
    calls = []

    def fetch(url, *, retries=1):
        calls.append((url, retries))
        return url.upper() * retries

    def boom():
        raise LookupError('nope')

    with pool.checkout() as s:
        r = s.feed_run("fetch('a') + fetch('b', retries=2)", external_lookup={'fetch': fetch})
        try:
            s.feed_run('boom()', external_lookup={'boom': boom})
        except pm.MontyRuntimeError as e:
            err = e.display('type-msg')
        r3 = s.feed_run(
            'try:\n    boom()\nexcept LookupError as e:\n    x = str(e)\nx', external_lookup={'boom': boom}
        )
    assert r == 'ABB' and calls == [('a', 1), ('b', 2)], (r, calls)
    return f'{r} {calls} {err} {r3}'


@scenario
def name_lookups(pool, _binary):
    with pool.checkout() as s:
        r = s.feed_run('CONST * 2', external_lookup={'CONST': 21})
        try:
            s.feed_run('missing + 1', external_lookup={'CONST': 21})
        except pm.MontyRuntimeError as e:
            err = e.display('type-msg')
    assert r == 42, r
    return f'{r} {err}'


@scenario
def external_module(pool, _binary):
    mod = pm.ExternalModule({'VERSION': 3, 'double': lambda x: x * 2})
    with pool.checkout(external_modules={'tools': mod}) as s:
        r = s.feed_run('import tools\ntools.double(tools.VERSION)')
        try:
            s.feed_run('import nothere')
        except pm.MontyRuntimeError as e:
            err = e.display('type-msg')
    assert r == 6, r
    return f'{r} {err}'


@dataclasses.dataclass
class Point:
    x: int
    y: int


class Counter:
    def __init__(self):
        self.n = 0

    def add(self, k):
        self.n += k
        return self.n


@scenario
def classes_and_dataclasses(pool, _binary):
    c = Counter()
    with pool.checkout() as s:
        p = s.feed_run('p', inputs={'p': pm.ClassInstance(Point(1, 2), eager_attrs='all')})
        r = s.feed_run('c.add(2) + c.add(3)', inputs={'c': pm.ClassInstance(c, allowed_methods=['add'])})
        back = s.feed_run('c', inputs={'c': pm.ClassInstance(c, allowed_methods=['add'])})
        own = s.feed_run('class A:\n    def __init__(self):\n        self.v = 1\nA()')
    assert r == 7 and c.n == 5 and back is c, (r, c.n, back)
    return f'{p!r} {r} {type(own).__name__} {getattr(own, "name", None)} {getattr(own, "attributes", None)}'


@scenario
def os_calls_handler(pool, _binary):
    seen = []

    def OS():
        def handle(*, name, args, kwargs, is_async, **_):
            seen.append((name, tuple(str(a) for a in args)))
            if name == 'Path.read_text':
                return 'contents of ' + str(args[0])
            if name == 'Path.exists':
                return str(args[0]) == '/yes'
            if name == 'os.getenv':
                return {'HOME': '/home/m'}.get(args[0], args[1] if len(args) > 1 else kwargs.get('default'))
            return pm.NOT_HANDLED

        return handle

    with pool.checkout() as s:
        r = s.feed_run(
            "from pathlib import Path\nimport os\n"
            "[Path('/a/b.txt').read_text(), Path('/yes').exists(), Path('/no').exists(), os.getenv('HOME'), os.getenv('X', 'd')]",
            os=OS(),
        )
        try:
            s.feed_run("from pathlib import Path\nPath('/a').write_text('x')", os=OS())
        except pm.MontyRuntimeError as e:
            err = e.display('type-msg')
    assert r[0] == 'contents of /a/b.txt' and r[1:] == [True, False, '/home/m', 'd'], r
    return f'{r} {seen} {err}'


@scenario
def mounts(pool, _binary):
    with tempfile.TemporaryDirectory() as d:
        Path(d, 'in.txt').write_text('hello')
        out = []
        for mode in ('read-only', 'read-write', 'overlay'):
            with pm.MountDir(host_path=d, virtual_path='/data', mode=mode) as m, pool.checkout() as s:
                code = (
                    "from pathlib import Path\n"
                    "t = Path('/data/in.txt').read_text()\n"
                    "try:\n    Path('/data/out.txt').write_text(t + '!')\n    w = 'wrote'\n"
                    "except PermissionError as e:\n    w = 'refused'\n"
                    "import os\n[t, w, sorted(os.listdir('/data')), os.getcwd()]"
                )
                r = s.feed_run(code, mount=m)
                out.append((mode, r, Path(d, 'out.txt').exists()))
                if Path(d, 'out.txt').exists():
                    Path(d, 'out.txt').unlink()
    assert out[0][1][1] == 'refused' and out[1][2] and not out[2][2], out
    return repr(out)


@scenario
def working_directory(pool, _binary):
    seen = []

    def handle(*, name, args, kwargs, is_async, **_):
        seen.append((name, str(args[0]) if args else None))
        return 'text' if name == 'Path.read_text' else pm.NOT_HANDLED

    with pool.checkout() as s:
        out = [s.feed_run('import os\nos.getcwd()')]
        out.append(s.feed_run("import os\nfrom pathlib import Path\n[os.getcwd(), Path('rel.txt').read_text()]", cwd='/data', os=handle))
        out.append(s.feed_run('import os\nos.getcwd()'))
        try:
            s.feed_run('1/0', cwd='/elsewhere')
        except pm.MontyRuntimeError as e:
            out.append(e.display('traceback'))
        out.append(s.feed_run('import os\nos.getcwd()'))
    return f'{out} {seen}'


@scenario
def limits_memory_recursion(pool, _binary):
    res = []
    with pool.checkout(limits=pm.ResourceLimits(max_memory=20_000_000, max_recursion_depth=50)) as s:
        for code in ('x = [0] * 10_000_000', 'def r(n):\n    return r(n + 1)\nr(0)', '1 + 1'):
            try:
                res.append(repr(s.feed_run(code)))
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg').split(':')[0])
    assert res == ['MemoryError', 'RecursionError', '2'], res
    return repr(res)


@scenario
def limits_durations(pool, _binary):
    res = []
    limits = pm.ResourceLimits(max_feed_duration_secs=0.5, max_turn_duration_secs=0.3)
    with pool.checkout(limits=limits) as s:
        # Sleeping and waiting on the host do not count; spinning does.
        t0 = time.monotonic()
        res.append(repr(s.feed_run('import time\ntime.sleep(0.6)\n1')))
        slept = time.monotonic() - t0
        res.append(repr(s.feed_run('wait() + wait()', external_lookup={'wait': lambda: time.sleep(0.4) or 1})))
        for code in ('while True:\n    pass', 'x = 0\nfor i in range(3):\n    x += tick()\n    n = 0\n    while n < 10**9:\n        n += 1'):
            t0 = time.monotonic()
            try:
                s.feed_run(code, external_lookup={'tick': lambda: 1})
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg').split(':')[0])
            took = time.monotonic() - t0
            assert took < 3, took
        res.append(repr(s.feed_run('"alive"')))
    assert slept >= 0.6 and res[2:] == ['TimeoutError', 'TimeoutError', "'alive'"], (slept, res)
    return repr(res)


@scenario
def limits_suspensions_and_sleep(pool, _binary):
    res = []
    with pool.checkout(limits=pm.ResourceLimits(max_suspensions=3, max_total_sleep_secs=0.2)) as s, pool.checkout(limits=pm.ResourceLimits(max_total_sleep_secs=0.2)) as s2:
        for sess, code in ((s, '[f() for _ in range(5)]'), (s2, 'import time\ntime.sleep(0.5)'), (s, '1')):
            try:
                res.append(repr(sess.feed_run(code, external_lookup={'f': lambda: 1})))
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg'))
    assert res[0].startswith('RuntimeError') and res[1].startswith('TimeoutError') and res[2] == '1', res
    return repr(res)


@scenario
def os_policy(pool, _binary):
    fixed = datetime.datetime(2030, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
    res = []
    with pool.checkout(os_policy=pm.OSPolicy(datetime=fixed, sleep='zero')) as s:
        t0 = time.monotonic()
        res.append(s.feed_run('import datetime, time\ntime.sleep(5)\n[datetime.datetime.now(datetime.timezone.utc), datetime.date.today(), time.time()]'))
        assert time.monotonic() - t0 < 3
    now = datetime.datetime(2031, 6, 7, 8, 9, 10)

    def OS():
        def handle(*, name, args, kwargs, is_async, **_):
            if name == 'datetime.now':
                return now
            if name == 'date.today':
                return now.date()
            return pm.NOT_HANDLED

        return handle

    with pool.checkout(os_policy=pm.OSPolicy(datetime='call_host')) as s:
        res.append(s.feed_run('import datetime\n[datetime.datetime.now(), datetime.date.today()]', os=OS()))
    with pool.checkout(os_policy=pm.OSPolicy(timezone='Asia/Tokyo', datetime=fixed)) as s:
        res.append(s.feed_run('import datetime\nstr(datetime.datetime.now())'))
    return repr(res)


@scenario
def random_clock_and_process_time(pool, _binary):
    res = []
    for seed in (42, -(2**70), 2.5, 'abc', b'\x00\x01'):
        with pool.checkout(os_policy=pm.OSPolicy(random_start={'seed': seed})) as s:
            res.append(s.feed_run('import random\n[random.random(), random.randint(1, 10**6)]'))

    def urandom(*, name, args, kwargs, is_async, **_):
        if name == 'os.urandom':
            return bytes(range(256)) * (args[0] // 256) + bytes(args[0] % 256)
        return pm.NOT_HANDLED

    with pool.checkout(os_policy=pm.OSPolicy(random_start='call_host')) as s:
        res.append(s.feed_run('import random\nrandom.randint(1, 10**6)', os=urandom))
    for pt in ('zero', 'elapsed'):
        with pool.checkout(os_policy=pm.OSPolicy(process_time=pt)) as s:
            res.append(s.feed_run('import time\nn = 0\nwhile n < 200000:\n    n += 1\ntime.process_time() > 0'))
    fixed = datetime.datetime(2030, 1, 2, 3, 4, 5, 6)
    zone = {'offset_seconds': -3 * 3600 - 1800, 'name': 'NST'}
    with pool.checkout(os_policy=pm.OSPolicy(datetime=fixed, timezone=zone)) as s:
        res.append(s.feed_run('import datetime, time\n[str(datetime.datetime.now()), str(datetime.datetime.now().astimezone()), time.time()]'))
    assert res[0] != res[1] and res[-3] is False and res[-2] is True, res
    return repr(res)


@scenario
def type_checking(pool, _binary):
    res = []
    stubs = 'def fetch(url: str) -> int: ...\n'
    for fmt in ('full', 'concise', 'azure', 'json', 'jsonlines', 'rdjson', 'pylint', 'gitlab', 'github'):
        with pool.checkout(type_check=True, type_check_stubs=stubs, type_check_format=fmt) as s:
            try:
                s.feed_run('x: int = "no"')
                res.append((fmt, 'ran'))
            except pm.MontyTypingError as e:
                text = e.display()
                res.append((fmt, 'x: int' in text or 'invalid-assignment' in text or 'assignment' in text))
            res.append((fmt, s.feed_run('y: int = fetch("u")\ny', external_lookup={'fetch': len})))
            res.append((fmt, s.feed_run('z = "s"\nz', skip_type_check=True)))
    assert all(r[1] is True for r in res[0::3]), res
    return repr(res)


@scenario
def type_error_about_an_earlier_snippet(pool, _binary):
    """A diagnostic about a function an earlier snippet defined points at
    that definition (the stubs file, which the snippets follow), with and
    without stubs of the host's."""
    res = []
    for stubs in (None, 'def fetch(url: str) -> int: ...\nY: int\n'):
        opts = {'type_check': True} if stubs is None else {'type_check': True, 'type_check_stubs': stubs}
        with pool.checkout(**opts) as s:
            s.feed_run('x = 1\ndef twice(v: int) -> int:\n    return v * 2')
            s.feed_run('def label(n: int, *, unit: str) -> str:\n    return f"{n} {unit}"')
            for code in ("twice('a')", 'label(1, unit=2)'):
                try:
                    s.feed_run(code)
                    res.append('ran')
                except pm.MontyTypingError as e:
                    res.append(e.display())
    assert all('repl_type_stubs.pyi:' in r for r in res), res
    return '\n'.join(res)


@scenario
def type_checking_module_stubs(pool, _binary):
    mod = pm.ExternalModule({'double': lambda x: x * 2}, stubs='def double(x: int) -> int: ...\n')
    res = []
    with pool.checkout(type_check=True, external_modules={'tools': mod}, type_check_format='concise') as s:
        res.append(s.feed_run('import tools\ntools.double(2)'))
        for code in ('import tools\ntools.double("x")', 'import nothere\n1'):
            try:
                s.feed_run(code)
                res.append('ran')
            except pm.MontyTypingError as e:
                res.append(e.display())
        snap = s.feed_start('import tools\nfrom tools import double\ndouble(5)')
        while not isinstance(snap, pm.MontyComplete):
            res.append(type(snap).__name__)
            snap = snap.resume_auto()
        res.append(snap.output)
    assert res[0] == 4 and 'invalid-argument-type' in res[1], res
    return repr(res)


@scenario
def print_streaming(pool, _binary):
    got = []
    with pool.checkout(print_flush_interval=0) as s:
        s.feed_run("print('a')\nprint('b', end='')\nimport sys\nprint('c', file=sys.stderr)", print_callback=lambda st, t: got.append((st, t)))
    joined = ''.join(t for _, t in got)
    assert joined == 'a\nbc\n', got
    return repr([st for st, _ in got])


@scenario
def assert_annotations(pool, _binary):
    res = []
    for ann in (..., False, 3):
        kw = {} if ann is ... else {'assert_message_annotations': ann}
        with pool.checkout(**kw) as s:
            try:
                s.feed_run("a = 'abcdefgh'\nassert a == 'xyz'")
            except pm.MontyRuntimeError as e:
                res.append(e.display('type-msg'))
    return repr(res)


@scenario
def snapshots_and_dumps(pool, _binary):
    with pool.checkout() as s:
        snap = s.feed_start('x = 1\ny = fetch(x)\nx + y')
        assert isinstance(snap, pm.FunctionSnapshot), snap
        head = (snap.function_name, snap.args)
        dumped = snap.dump()
        done = snap.resume({'return_value': 41})
        idle = s.dump()
    with pool.checkout() as s2:
        again = s2.load_snapshot(dumped)
        same = (again.function_name, again.args)
        done2 = again.resume({'return_value': 1})
    with pool.checkout() as s3:
        s3.load_session(idle)
        kept = s3.feed_run('x + y')
    with pool.checkout() as s4:
        try:
            s4.load_session(b'garbage')
            bad = 'loaded'
        except Exception as e:  # noqa: BLE001
            bad = type(e).__name__
    assert done.output == 42 and done2.output == 2 and kept == 42 and head == same, (done, done2, kept)
    return f'{head} {done.output} {done2.output} {kept} {bad}'


@scenario
def resume_auto_and_lookup_snapshots(pool, _binary):
    with pool.checkout() as s:
        snap = s.feed_start('a = K\nb = f(a)\nb', external_lookup={'f': lambda v: v + 1, 'K': 5})
        kinds = []
        while not isinstance(snap, pm.MontyComplete):
            kinds.append(type(snap).__name__)
            snap = snap.resume_auto()
    assert snap.output == 6, snap
    return f'{kinds} {snap.output}'


# ---- async pool (AsyncMonty, AsyncMontySession) ----------------------------


@scenario
def async_gather(_pool, binary):
    async def go():
        order = []

        async def fetch(name, delay):
            order.append(('start', name))
            await asyncio.sleep(delay)
            order.append(('end', name))
            return name * 2

        async with pm.AsyncMonty(binary_path=binary, min_processes=1) as apool, apool.checkout() as s:
            await s.feed_run('0')  # the worker's start is not what is timed
            t0 = time.monotonic()
            r = await s.feed_run(
                "import asyncio\nawait asyncio.gather(fetch('a', 0.3), fetch('b', 0.3), fetch('c', 0.3))",
                external_lookup={'fetch': fetch},
            )
            took = time.monotonic() - t0
            r2 = await s.feed_run("x = await fetch('z', 0)\nlen(x)", external_lookup={'fetch': fetch})
        assert r == ['aa', 'bb', 'cc'] and took < 0.8 and r2 == 2, (r, took)
        return f'{r} {r2} {sorted(order)}'

    return run_async(go())


@scenario
def async_snapshots(_pool, binary):
    async def go():
        async with pm.AsyncMonty(binary_path=binary, min_processes=1) as apool, apool.checkout() as s:
            async def f(x):
                await asyncio.sleep(0.01)
                return x * 10

            snap = await s.feed_start(
                "import asyncio\nasync def main():\n    return await asyncio.gather(f(1), f(2))\nawait main()",
                external_lookup={'f': f},
            )
            seen = []
            while not isinstance(snap, pm.MontyComplete):
                seen.append(type(snap).__name__)
                snap = await snap.resume_auto()
            # How many future snapshots there are depends on when the sleeps end.
            return f'{sorted(set(seen))} {snap.output}'

    return run_async(go())


@scenario
def async_errors(_pool, binary):
    async def go():
        async def bad():
            raise ValueError('from host')

        async with pm.AsyncMonty(binary_path=binary, min_processes=1) as apool, apool.checkout() as s:
            try:
                await s.feed_run('await bad()', external_lookup={'bad': bad})
            except pm.MontyRuntimeError as e:
                err = e.display('type-msg')
            ok = await s.feed_run("try:\n    await bad()\nexcept ValueError as e:\n    r = 'caught ' + str(e)\nr", external_lookup={'bad': bad})
        return f'{err} {ok}'

    return run_async(go())


def run(binary: str, names: list[str]) -> dict[str, str]:
    out = {}
    with pm.Monty(binary_path=binary, min_processes=1, max_processes=2) as pool:
        for name in names:
            try:
                out[name] = SCENARIOS[name](pool, binary)
            except Exception:  # noqa: BLE001
                out[name] = 'FAILED ' + traceback.format_exc()
    return out


def monty_bin() -> int:
    """The client finds our worker through MONTY_BIN alone, for both pools."""
    with pm.Monty() as pool, pool.checkout() as s:
        r = s.feed_run('1 + 1')
        ours = s.dump().startswith(b'MGW1')  # monty-go's dump container

    async def go():
        async with pm.AsyncMonty() as pool, pool.checkout() as s:
            return await s.feed_run('2 + 2'), (await s.dump()).startswith(b'MGW1')

    r2, ours2 = run_async(go())
    print(r, ours, r2, ours2)
    return 0 if (r, ours, r2, ours2) == (2, True, 4, True) else 1


def main() -> int:
    args = sys.argv[1:]
    if args == ['--monty-bin']:
        return monty_bin()
    names = list(SCENARIOS)
    if '--only' in args:
        i = args.index('--only')
        names = args[i + 1 :]
        args = args[:i]
    upstream, ours = args
    ref = run(upstream, names)
    got = run(ours, names)
    problems = compare(names, ref, got, 'our worker')
    for p in problems:
        print('PROBLEM', p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())

"""fluss-monty 1.0.0, as the fluss client and server use it: flows written
as Python source whose `async def main(...)` calls the actions of a
manifest, checked against stubs of exactly those actions
(`validate_python_flow`, and its sync form for the server) and run with
every action call going out through an injected caller
(`arun_python_flow`, which starts a pool of its own per run, as fluss does).

Covered: validation of good flows (ports derived from the signature, the
manifest, the stubs), type errors, unknown actions, syntax errors and
non-async entrypoints; runs with one action, several in order, gathered
concurrently, optional keyword arguments, an action that fails (caught by
the flow, and not), a flow that raises, a wrong return shape, prints, an
awaited asyncio.sleep, the limits a run passes (turn time, memory,
suspensions), a seeded random and a frozen clock (the same run made again
makes the same calls), and a run on a pool the caller keeps.
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime

import pydantic_monty
from fluss_monty import (
    ManifestAction,
    Port,
    PortKind,
    PythonFlowError,
    PythonFlowLimits,
    arun_python_flow,
    validate_python_flow,
    validate_python_flow_sync,
)

from common import snippet


@dataclasses.dataclass(frozen=True)
class Action:
    """A rekuest Action as fluss-monty reads one: hash, kind and ports."""

    hash: str
    args: tuple[Port, ...]
    returns: tuple[Port, ...]
    kind: str = 'FUNCTION'


def port(key: str, kind: PortKind, **kw) -> Port:
    return Port(key=key, kind=kind, **kw)


ADD = ManifestAction('add', Action('h-add', (port('a', PortKind.INT), port('b', PortKind.INT)), (port('sum', PortKind.INT),)))
SCALE = ManifestAction(
    'scale',
    Action('h-scale', (port('x', PortKind.FLOAT), port('factor', PortKind.FLOAT, nullable=True)), (port('y', PortKind.FLOAT),)),
)
SPLIT = ManifestAction(
    'split', Action('h-split', (port('text', PortKind.STRING),), (port('head', PortKind.STRING), port('rest', PortKind.STRING)))
)
FAIL = ManifestAction('explode', Action('h-explode', (port('why', PortKind.STRING),), ()))
ACTIONS = [ADD, SCALE, SPLIT, FAIL]


class Recorder:
    """The caller a flow's action calls go out through: answers each action
    as its implementation would, and records the calls (alias, kwargs, key)."""

    def __init__(self, delay: float = 0.0):
        self.calls: list[tuple[str, dict, str]] = []
        self.delay = delay

    async def __call__(self, action: ManifestAction, kwargs: dict, key: str):
        self.calls.append((action.alias, dict(sorted(kwargs.items())), key))
        if self.delay:
            await asyncio.sleep(self.delay)
        match action.alias:
            case 'add':
                return {'sum': kwargs['a'] + kwargs['b']}
            case 'scale':
                return {'y': kwargs['x'] * (kwargs.get('factor') or 2.0)}
            case 'split':
                head, _, rest = kwargs['text'].partition(' ')
                return {'head': head, 'rest': rest}
            case 'explode':
                raise RuntimeError('boom: ' + kwargs['why'])
        raise AssertionError(action.alias)


async def run(source: str, kwargs: dict, caller=None, **options) -> str:
    """One run; its returns, or the PythonFlowError it raised, with the calls made."""
    caller = caller or Recorder()
    try:
        out = repr(await arun_python_flow(source, kwargs, ACTIONS, caller, **options))
    except PythonFlowError as e:
        out = f'PythonFlowError: {e}' + (f'\ntraceback: {e.traceback}' if e.traceback else '')
    return f'{out}\ncalls: {[(a, k) for a, k, _ in caller.calls]}'


def report_text(report) -> str:
    return (
        f'ok={report.ok} args={[(p.key, p.kind.value, p.nullable) for p in report.args]} '
        f'returns={[(p.key, p.kind.value) for p in report.returns]} '
        f'manifest={[m.alias for m in report.manifest]} diagnostics={[(d.line, d.message) for d in report.diagnostics]}'
    )


GOOD = '''
async def main(n: int, label: str = "total") -> tuple[int, str]:
    s = await add(n, 10)
    return s, label
'''


@snippet
async def validate_good_flow():
    """Ports from the signature, the manifest it uses, stubs of every action."""
    report = await validate_python_flow(GOOD, ACTIONS)
    assert report.ok and [p.key for p in report.args] == ['n', 'label'], report
    assert 'async def add(a: int, b: int) -> int: ...' in report.stubs, report.stubs
    return report_text(report)


@snippet
async def validate_type_error():
    """An action called with the wrong type: the checker's diagnostic, on its line."""
    report = await validate_python_flow('async def main(n: int) -> int:\n    return await add("one", n)\n', ACTIONS)
    assert not report.ok and report.diagnostics and report.diagnostics[0].line == 2, report
    return report_text(report)


@snippet
async def validate_unknown_action():
    """A name outside the manifest is an unresolved reference: the permission boundary."""
    report = await validate_python_flow('async def main() -> int:\n    return await delete_everything()\n', ACTIONS)
    assert not report.ok and 'delete_everything' in report.diagnostics[0].message, report
    return report_text(report)


@snippet
async def validate_syntax_and_shape():
    """A syntax error, and an entrypoint that is not async."""
    out = []
    for source in ('async def main(:\n    pass\n', 'def main() -> int:\n    return 1\n'):
        out.append(report_text(await validate_python_flow(source, ACTIONS)))
    assert all(text.startswith('ok=False') for text in out), out
    return '\n'.join(out)


@snippet
def validate_sync():
    """The server's synchronous path, on a pool it keeps."""
    with pydantic_monty.Monty(min_processes=1, max_processes=1) as pool:
        good = validate_python_flow_sync(GOOD, ACTIONS, pool=pool)
        bad = validate_python_flow_sync('async def main() -> str:\n    return await add(1, 2)\n', ACTIONS, pool=pool)
    assert good.ok and not bad.ok, (good, bad)
    return report_text(good) + '\n' + report_text(bad)


@snippet
async def run_one_action():
    text = await run(GOOD, {'n': 5})
    assert text.startswith("{'return0': 15, 'return1': 'total'}"), text
    return text


@snippet
async def run_actions_in_order():
    source = '''
async def main(text: str, x: float) -> tuple[str, float, int]:
    head, rest = await split(text)
    y = await scale(x)
    z = await scale(y, factor=0.5)
    s = await add(len(head), len(rest))
    return head.upper(), z, s
'''
    text = await run(source, {'text': 'hello big world', 'x': 1.5})
    assert "'HELLO'" in text and '1.5' in text, text
    return text


@snippet
async def run_gathered():
    """Actions awaited together: each call goes out, all results come back."""
    source = '''
import asyncio

async def main(n: int) -> list[int]:
    return list(await asyncio.gather(*[add(i, i) for i in range(n)]))
'''
    caller = Recorder(delay=0.01)
    text = await run(source, {'n': 5}, caller)
    assert '[0, 2, 4, 6, 8]' in text and len(caller.calls) == 5, text
    return text


@snippet
async def run_action_fails_caught():
    source = '''
async def main() -> str:
    try:
        await explode("inside")
    except Exception as e:
        return type(e).__name__ + ": " + str(e)
    return "not raised"
'''
    text = await run(source, {})
    assert 'boom: inside' in text, text
    return text


@snippet
async def run_action_fails_uncaught():
    text = await run('async def main() -> int:\n    await explode("out")\n    return 1\n', {})
    assert text.startswith('PythonFlowError') and 'boom: out' in text, text
    return text


@snippet
async def run_flow_raises():
    source = 'async def main(n: int) -> int:\n    s = await add(n, 1)\n    return s // 0\n'
    text = await run(source, {'n': 1})
    assert 'ZeroDivisionError' in text and 'traceback' in text, text
    return text


@snippet
async def run_wrong_return_shape():
    source = 'async def main(n: int) -> tuple[int, int]:\n    return (n,)  # type: ignore\n'
    text = await run(source, {'n': 1})
    assert text.startswith('PythonFlowError'), text
    return text


@snippet
async def run_prints():
    printed = []
    source = 'async def main(n: int) -> int:\n    print("adding", n)\n    s = await add(n, 2)\n    print("got", s)\n    return s\n'
    text = await run(source, {'n': 40}, print_callback=lambda stream, t: printed.append((stream, t)))
    assert '42' in text and printed, (text, printed)
    return f'{text}\nprinted: {printed}'


@snippet
async def run_awaits_sleep():
    """A flow that waits between its actions (asyncio.sleep in the sandbox)."""
    source = '''
import asyncio

async def main(n: int) -> int:
    a = await add(n, 1)
    await asyncio.sleep(0.01)
    b = await add(a, 1)
    return b
'''
    text = await run(source, {'n': 1})
    assert text.startswith('{') and '3' in text.splitlines()[0], text
    return text


@snippet
async def run_time_limit():
    """A flow that spins past its turn's time limit (action time does not count)."""
    source = 'async def main() -> int:\n    n = 0\n    while True:\n        n += 1\n'
    text = await run(source, {}, limits=PythonFlowLimits(max_turn_duration_secs=0.5, max_feed_duration_secs=2.0))
    assert text.startswith('PythonFlowError') and 'TimeoutError' in text, text
    return text


@snippet
async def run_memory_and_suspension_limits():
    out = []
    big = 'async def main() -> int:\n    x = [0] * 50_000_000\n    return len(x)\n'
    out.append(await run(big, {}, limits=PythonFlowLimits(max_memory=20_000_000)))
    many = 'async def main(n: int) -> int:\n    s = 0\n    for i in range(n):\n        s = await add(s, i)\n    return s\n'
    out.append(await run(many, {'n': 10}, limits=PythonFlowLimits(max_suspensions=3)))
    assert all(o.startswith('PythonFlowError') for o in out), out
    return '\n'.join(out)


@snippet
async def run_seeded_and_frozen():
    """A fixed seed and a frozen clock: the run made again makes the same calls."""
    source = '''
import random
import datetime

async def main() -> tuple[int, str]:
    r = random.randint(1, 1000)
    s = await add(r, datetime.datetime.now().year)
    return s, datetime.datetime.now().isoformat()
'''
    policy = pydantic_monty.OSPolicy(random_start={'seed': 7}, datetime=datetime.datetime(2030, 5, 6, 7, 8, 9))
    first, second = Recorder(), Recorder()
    a = await run(source, {}, first, os_policy=policy)
    b = await run(source, {}, second, os_policy=policy)
    assert a == b and first.calls == second.calls and '2030-05-06T07:08:09' in a, (a, b)
    return a + f'\nkeys: {[k for _, _, k in first.calls]}'


@snippet
async def run_on_a_kept_pool():
    """Several runs on one pool the caller keeps (the fluss client's)."""
    async with pydantic_monty.AsyncMonty(min_processes=1, max_processes=1) as pool:
        texts = [await run(GOOD, {'n': n}, pool=pool) for n in (1, 2, 3)]
    assert all(str(10 + n) in t for n, t in zip((1, 2, 3), texts)), texts
    return '\n'.join(texts)

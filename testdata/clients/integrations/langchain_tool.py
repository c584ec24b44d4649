"""langchain-monty 3.0.0's `eval_python` tool, the one its
MontyCodeInterpreterMiddleware adds to an agent, invoked directly as the
agent's tool node would: `tool.invoke({'code': ..., 'runtime': ...})`, and
`ainvoke` for the async path.

Each call opens a pool of one worker and drives a session over the
feed/resume protocol itself: a deferred pass first (host calls answered
with futures), an eager rerun when the code never awaited them, name
lookups, OS calls handed to its handler, and host tools (`ptc=`) bridged
as LangChain tool calls. The answer is a dict: result (JSON, or a tagged
form for what JSON cannot hold), stdout and a structured error. Covered:
plain results, stdout, tagged values, runtime errors, syntax and
unsupported syntax, type checking against the tools' stubs, sync and async
host tools (plain calls, asyncio.gather, both styles mixed), the iteration
budget, the limits MontyLimits maps, and an OS call.

With pydantic-monty 1.4.0, MontyLimits' default max_duration_secs is
forwarded as a key the client rejects (default_limits_rejected), so every
other snippet sets it to None: langchain-monty cannot set a time limit on
this client at all.
"""

from __future__ import annotations

import asyncio
import json


from langchain.tools import ToolRuntime
from langchain_core.tools import tool
from langchain_monty import MontyCodeInterpreterMiddleware, MontyLimits

from common import snippet

# MontyLimits' defaults but max_duration_secs, which 1.4.0 rejects.
LIMITS = MontyLimits(max_duration_secs=None)


@tool
def lookup(city: str, unit: str = 'C') -> str:
    """The temperature of a city, as JSON: {"city": str, "temp": int, "unit": str}."""
    if city == 'Atlantis':
        raise ValueError(f'no such city: {city}')
    return json.dumps({'city': city, 'temp': len(city) * 3, 'unit': unit})


@tool
def ping(n: int) -> int:
    """Returns n."""
    return n


@tool
async def double(n: int) -> int:
    """Returns 2 * n, after a moment."""
    await asyncio.sleep(0.01)
    return 2 * n


def runtime() -> ToolRuntime:
    """The ToolRuntime LangGraph's tool node injects, outside a graph."""
    return ToolRuntime(state={}, context=None, config={}, stream_writer=lambda chunk: None,
                       tool_call_id='call-1', store=None)


def eval_python(limits: MontyLimits | None = LIMITS, **options):
    """The middleware's eval_python tool."""
    return MontyCodeInterpreterMiddleware(limits=limits, **options).tools[0]


def call(code: str, **options) -> dict:
    return eval_python(**options).invoke({'code': code, 'runtime': runtime()})


async def acall(code: str, **options) -> dict:
    return await eval_python(**options).ainvoke({'code': code, 'runtime': runtime()})


def show(*results: dict) -> str:
    return '\n'.join(json.dumps(r, ensure_ascii=False) for r in results)


def error_of(result: dict) -> tuple[str, str]:
    err = result['error'] or {}
    return err.get('type'), err.get('message')


@snippet
def default_limits_rejected():
    """MontyCodeInterpreterMiddleware() as its README shows it: the default
    MontyLimits forwards max_duration_secs, which pydantic-monty 1.4.0
    refuses, so every call fails before any code runs."""
    result = call('1 + 1', limits=None)
    kind, message = error_of(result)
    assert kind == 'ValueError' and "unknown limits key 'max_duration_secs'" in message, result
    return show(result)


@snippet
def result_and_stdout():
    """The final expression, JSON-able as it is (a tuple stays one until the
    message is serialized), and the captured stdout."""
    result = call("print('hi', 'ünï')\nprint(2 ** 10)\nitems = {'a': [1, 2.5, None, True]}\nitems, 'x' * 3")
    assert result == {'result': ({'a': [1, 2.5, None, True]}, 'xxx'), 'stdout': 'hi ünï\n1024\n', 'error': None,
                      'attempted_code': None}, result
    empty = call('x = 1')
    assert empty['result'] is None and empty['stdout'] == '' and empty['error'] is None, empty
    return show(result, empty)


@snippet
def tagged_result():
    """What JSON cannot hold comes back tagged: sets, bytes, int-keyed
    dicts, dataclass instances; big integers stay integers."""
    code = (
        'from dataclasses import dataclass\n'
        '@dataclass\n'
        'class Point:\n'
        '    x: int\n'
        '    y: tuple\n'
        "({1, 2}, b'ab\\x00', frozenset(), {1: 'one'}, 2**100, Point(3, (4, 5)), [float('inf')])"
    )
    result = call(code)
    assert result['error'] is None, result
    tup = result['result']['$tuple']
    assert tup[0] == {'$set': [1, 2]} and tup[1] == {'$bytes': 'YWIA'} and tup[3] == {'$dict': [[1, 'one']]}, tup
    assert tup[4] == 2**100, tup
    assert tup[5] == {'$object': {'name': 'Point', 'attributes': {'x': 3, 'y': {'$tuple': [4, 5]}}}}, tup
    return show(result)


@snippet
def runtime_error():
    """The sandbox's own exception class and message, its traceback through
    the function, and the attempted code; stdout printed before is dropped."""
    code = "def ratio(a, b):\n    return a / b\nprint('before')\nratio(1, 0)"
    result = call(code)
    assert error_of(result) == ('ZeroDivisionError', 'division by zero'), result
    tb = result['error']['traceback']
    assert 'line 4, in <module>' in tb and 'line 2, in ratio' in tb, tb
    assert result['attempted_code'] == code, result
    key = call("{'a': 1}['b']")
    assert error_of(key) == ('KeyError', "'b'"), key
    return show(result, key)


@snippet
def syntax_and_unsupported():
    """Without type checking: a parse error is SyntaxError (no traceback),
    class inheritance and yield are the parser's NotImplementedError. With
    it (the default) the checker reports the parse error first."""
    parse = call('x = (1,\nprint(x)', type_check=False)
    inherit = call('class A:\n    pass\nclass B(A):\n    pass', type_check=False)
    gen = call('def g():\n    yield 1', type_check=False)
    checked = call('x = (1,\nprint(x)')
    assert error_of(parse)[0] == 'SyntaxError' and parse['error']['traceback'] is None, parse
    assert error_of(inherit)[0] == 'NotImplementedError' and 'inheritance' in error_of(inherit)[1], inherit
    assert error_of(gen)[0] == 'NotImplementedError' and 'yield' in error_of(gen)[1], gen
    assert error_of(checked)[0] == 'TypeCheckError' and 'invalid-syntax' in checked['error']['traceback'], checked
    return show(parse, inherit, gen, checked)


@snippet
def type_check_against_tools():
    """Calls checked against stubs made from the tools' schemas, concise
    diagnostics, nothing run; type_check=False runs the same code and the
    undefined name is a NameError after a name lookup."""
    kwarg = call("print('never')\nlookup(town='Paris')", ptc=[lookup])
    wrong = call("lookup(city=3)", ptc=[lookup])
    unknown = call('undefined_name + 1', ptc=[lookup])
    unchecked = call('undefined_name + 1', ptc=[lookup], type_check=False)
    for r in (kwarg, wrong, unknown):
        assert error_of(r) == ('TypeCheckError', 'static type check failed before execution; no code was run'), r
        assert r['stdout'] == '', r
    assert 'main.py:2:8: error[unknown-argument]' in kwarg['error']['traceback'], kwarg
    assert 'error[invalid-argument-type]' in wrong['error']['traceback'], wrong
    assert 'error[unresolved-reference]' in unknown['error']['traceback'], unknown
    assert error_of(unchecked) == ('NameError', "name 'undefined_name' is not defined"), unchecked
    return show(kwarg, wrong, unknown, unchecked)


@snippet
def host_tools_plain_calls():
    """Plain calls of a sync tool, positional and keyword; its JSON string
    comes back decoded; its exception is raised in the sandbox, where code
    can catch it, or ends the run as the tool's own ValueError."""
    ok = call("r = lookup('Paris')\nprint(r['temp'])\nr, lookup(city='Rome', unit='F')['unit']", ptc=[lookup])
    caught = call("try:\n    lookup('Atlantis')\nexcept ValueError as e:\n    msg = 'caught: ' + str(e)\nmsg",
                  ptc=[lookup])
    raised = call("lookup('Atlantis')", ptc=[lookup])
    assert ok['result'] == ({'city': 'Paris', 'temp': 15, 'unit': 'C'}, 'F') and ok['stdout'] == '15\n', ok
    assert caught['result'] == 'caught: no such city: Atlantis', caught
    assert error_of(raised) == ('ValueError', 'no such city: Atlantis'), raised
    assert "lookup('Atlantis')" in raised['error']['traceback'], raised
    return show(ok, caught, raised)


@snippet
async def host_tools_async():
    """Under ainvoke: asyncio.gather over async and sync tools runs them
    as one batch of futures; plain calls of an async tool rerun eagerly;
    under invoke, an async-only tool cannot run."""
    gather = ('import asyncio\nasync def go():\n    return await asyncio.gather(double(1), double(n=2), ping(3))\n'
              'r = await go()\nprint(r)\nr')
    batched = await acall(gather, ptc=[double, ping])
    plain = await acall('double(5) + ping(1)', ptc=[double, ping])
    sync_only = call(gather, ptc=[double, ping])
    assert batched['result'] == [2, 4, 3] and batched['stdout'] == '[2, 4, 3]\n', batched
    assert plain['result'] == 11, plain
    assert error_of(sync_only) == ('NotImplementedError', 'StructuredTool does not support sync invocation.'), sync_only
    return show(batched, plain, sync_only)


@snippet
async def mixed_call_styles():
    """Awaiting one host call and dropping another: the middleware's
    UnawaitedHostCallError (both calls ran as futures first)."""
    code = 'async def go():\n    first = await double(1)\n    double(2)\n    return first\nawait go()'
    result = await acall(code, ptc=[double])
    assert error_of(result)[0] == 'UnawaitedHostCallError', result
    return show(result)


@snippet
def iteration_budget():
    """More host calls than iteration_budget stop the run."""
    over = call("[lookup(c)['temp'] for c in ['a', 'bb', 'ccc', 'dddd']]", ptc=[lookup], iteration_budget=3)
    within = call("[lookup(c)['temp'] for c in ['a', 'bb', 'ccc']]", ptc=[lookup], iteration_budget=3)
    assert error_of(over) == ('IterationBudgetExceeded',
                              'interpreter made more than 3 host-tool calls in a single eval_python call'), over
    assert within['result'] == [3, 6, 9], within
    return show(over, within)


@snippet
def resource_limits():
    """max_memory_bytes, max_stack_depth and max_suspensions, as MontyLimits
    maps them (type checking on, the default)."""
    memory = call('x = [0] * 10_000_000\nlen(x)', limits=MontyLimits(max_duration_secs=None, max_memory_bytes=16_000_000))
    stack = call('def down(n):\n    return down(n + 1)\ndown(0)',
                 limits=MontyLimits(max_duration_secs=None, max_stack_depth=40))
    suspensions = call('[ping(i) for i in range(6)]', ptc=[ping],
                       limits=MontyLimits(max_duration_secs=None, max_suspensions=3))
    assert error_of(memory)[0] == 'MemoryError' and error_of(memory)[1].endswith('> 16000000 bytes'), memory
    assert error_of(stack) == ('RecursionError', 'maximum recursion depth exceeded'), stack
    assert '[Previous line repeated' in stack['error']['traceback'], stack
    assert error_of(suspensions) == ('RuntimeError', 'suspension limit 3 exceeded'), suspensions
    return show(memory, stack, suspensions)


@snippet
def os_call():
    """A pathlib write surfaces as an OS call, which the driver hands to
    its OSAccess with the pre-1.0 signature: pydantic-monty 1.4.0's
    handler refuses it, and the TypeError is raised at the sandbox line."""
    result = call("from pathlib import Path\nPath('/tmp/a.txt').write_text('hello')")
    assert error_of(result) == ('TypeError', 'AbstractOS.__call__() takes 1 positional argument but 4 were given'), result
    assert 'line 2, in <module>' in result['error']['traceback'], result
    return show(result)

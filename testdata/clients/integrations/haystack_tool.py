"""monty-haystack 3.0.0's MontyPythonTool, driven as a Haystack Agent
drives it: `tool.invoke(code=...)` (and `invoke_async`, which the Agent's
async path uses), plus one run of a real Agent whose chat generator is a
script instead of an LLM.

The tool runs every call in a fresh session checked out of its own pool
and answers with one text for the LLM: the printed output, the repr of the
last expression and the error (a traceback, or the type checker's
diagnostics), each cut to max_output_chars. Covered: plain results, print
output, no output at all, runtime and syntax errors, the absence of state
between calls, the limits it merges over its defaults (time, memory,
recursion), odd and large values, truncation, type checking, concurrent
calls on one pool, and an Agent turn with two tool calls.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor


from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ToolCall
from haystack_integrations.tools.monty import MontyPythonTool

from common import snippet

PRIMES = 'primes = [n for n in range(2, 60) if all(n % d for d in range(2, n))]\nprint(len(primes))\nsum(primes)'


def run(code: str, **options) -> str:
    """One call on a tool of its own, closed afterwards (its pool with it)."""
    tool = MontyPythonTool(**options)
    try:
        return tool.invoke(code=code)
    finally:
        tool.close()


@snippet
def result_and_output():
    """Printed lines and the last expression's repr, in their two sections."""
    text = run(PRIMES + "\nprint('naïve ✓')" + '\n(sum(primes), "done")')
    assert text == "output:\n17\nnaïve ✓\n\nresult:\n(440, 'done')", text
    return text


@snippet
def no_output():
    """Neither output nor a value (an assignment, a None) gets the fixed text."""
    texts = [run('x = 1'), run('def f():\n    pass\nf()'), run('None')]
    assert texts == ['The code ran successfully and produced no output.'] * 3, texts
    return '\n'.join(texts)


@snippet
def runtime_error():
    """What was printed before the exception, then its traceback through
    the function that raised it."""
    code = "def ratio(a, b):\n    return a / b\nprint('computing')\nratio(1, 0)"
    text = run(code)
    assert text.startswith('output:\ncomputing\n\nerror:\nTraceback (most recent call last):'), text
    assert 'line 4, in <module>' in text and 'line 2, in ratio' in text, text
    assert text.endswith('ZeroDivisionError: division by zero'), text
    return text


@snippet
def syntax_error():
    """A parse error comes back as an error section, nothing run."""
    text = run("print('never')\ndef f(:\n    pass")
    assert text.startswith('error:\n') and 'never' not in text, text
    assert 'SyntaxError' in text and 'line 2' in text, text
    return text


@snippet
def fresh_interpreter_per_call():
    """Every call starts empty: a name defined by one call is unknown to
    the next, even on the same tool and pool."""
    tool = MontyPythonTool()
    try:
        first = tool.invoke(code='total = 5\ntotal')
        second = tool.invoke(code='total + 1')
    finally:
        tool.close()
    assert first == 'result:\n5', first
    assert second.endswith("NameError: name 'total' is not defined"), second
    return f'{first}\n---\n{second}'


@snippet
def time_limit():
    """max_feed_duration_secs stops a busy loop; the output printed before
    it is kept."""
    text = run("print('start')\nwhile True:\n    pass", resource_limits={'max_feed_duration_secs': 0.2})
    assert text.startswith('output:\nstart\n\nerror:\n'), text
    assert 'TimeoutError: feed time limit exceeded' in text and text.endswith('> 200ms'), text
    return text


@snippet
def memory_and_recursion_limits():
    """max_memory and max_recursion_depth, merged over the tool's defaults."""
    limits = {'max_memory': 16_000_000, 'max_recursion_depth': 40}
    memory = run("x = [0] * 10_000_000\nlen(x)", resource_limits=limits)
    recursion = run('def down(n):\n    return down(n + 1)\ndown(0)', resource_limits=limits)
    fits = run("len([0] * 100_000)", resource_limits=limits)
    assert 'MemoryError: memory limit exceeded' in memory and memory.endswith('> 16000000 bytes'), memory
    assert recursion.endswith('RecursionError: maximum recursion depth exceeded'), recursion
    assert '[Previous line repeated' in recursion, recursion
    assert fits == 'result:\n100000', fits
    return '\n---\n'.join([memory, recursion, fits])


@snippet
def type_check_under_small_memory_limit():
    """Type checking with a memory limit under the checker's own footprint:
    upstream counts what its checker keeps (about 5 MB) against the
    session's max_memory, so code that allocates anything fails there
    (known.py)."""
    text = run('sorted([3, 1, 2])', type_check=True, resource_limits={'max_memory': 4_000_000})
    assert text == 'result:\n[1, 2, 3]' or 'MemoryError: memory limit exceeded' in text, text
    return text


@snippet
def large_and_odd_values():
    """Big integers, bytes, floats' edge values, complex numbers, sets and
    nested containers, through the repr the LLM reads."""
    code = (
        'import math\n'
        'print(math.factorial(30))\n'
        "{'big': 2**128, 'neg': -(10**40), 'bytes': b'\\x00\\x01\\xff' + 'é'.encode(), 'floats': (1.5, -0.0, float('inf')),\n"
        " 'nan': float('nan'), 'complex': 1 + 2j, 'fs': frozenset({3}), 'set': {2}, 'nested': [[[]], {1: (None, True)}],\n"
        " 'text': 'tab\\tquote\\'' + chr(0x1F600)}"
    )
    text = run(code)
    assert text.startswith('output:\n265252859812191058636308480000000\n\nresult:\n'), text
    assert "'big': 340282366920938463463374607431768211456" in text, text
    assert "b'\\x00\\x01\\xff\\xc3\\xa9'" in text and "(1.5, -0.0, inf)" in text and "(1+2j)" in text, text
    assert "'nested': [[[]], {1: (None, True)}]" in text, text
    return text


@snippet
def output_truncation():
    """max_output_chars keeps the beginning of the output and the result
    and the end of the error, where the exception is."""
    tool = MontyPythonTool(max_output_chars=30)
    try:
        long = tool.invoke(code="for i in range(20):\n    print('line', i)\n'x' * 100")
        error = tool.invoke(code="def deep(n):\n    if n == 0:\n        raise ValueError('bottom reached at last')\n"
                                 "    return deep(n - 1)\ndeep(3)")
    finally:
        tool.close()
    assert long.startswith('output:\nline 0\nline 1\n') and '[... 119 characters truncated]' in long, long
    assert long.endswith("result:\n'xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n[... 72 characters truncated]"), long
    assert error.startswith('error:\n[... ') and error.endswith('eError: bottom reached at last'), error
    return f'{long}\n---\n{error}'


@snippet
def type_check():
    """type_check=True: a type error comes back as the checker's diagnostics
    and nothing runs; well-typed code runs; a syntax error is the checker's
    too."""
    tool = MontyPythonTool(type_check=True)
    add = 'def add(a: int, b: int) -> int:\n    return a + b\n'
    try:
        bad = tool.invoke(code=add + "print('ran')\nadd(1, 'two')")
        good = tool.invoke(code=add + 'add(1, 2)')
        syntax = tool.invoke(code='x = = 1')
    finally:
        tool.close()
    assert bad.startswith('error:\nerror[invalid-argument-type]') and 'output:' not in bad, bad
    assert '--> main.py:4:8' in bad, bad
    assert good == 'result:\n3', good
    assert syntax.startswith('error:\nerror[invalid-syntax]'), syntax
    return '\n---\n'.join([bad, good, syntax])


@snippet
async def concurrent_calls():
    """Calls at once on one tool, from threads and from the async path
    (Tool.invoke_async, a thread each), each on its own session."""
    tool = MontyPythonTool()
    try:
        with ThreadPoolExecutor(4) as pool:
            threaded = list(pool.map(lambda n: tool.invoke(code=f'sum(range({n}))'), [10, 100, 1000, 10000]))
        awaited = await asyncio.gather(*(tool.invoke_async(code=f"print('call {n}')\n{n} * {n}") for n in range(3)))
    finally:
        tool.close()
    assert threaded == ['result:\n45', 'result:\n4950', 'result:\n499500', 'result:\n49995000'], threaded
    assert awaited == [f'output:\ncall {n}\n\nresult:\n{n * n}' for n in range(3)], awaited
    return '\n'.join(threaded + awaited)


@component
class ScriptedGenerator:
    """A chat generator that asks for two run_python calls, then answers
    with what the tool returned: an Agent turn without an LLM."""

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools=None):
        results = messages[-1].tool_call_results
        if results:
            return {'replies': [ChatMessage.from_assistant('saw: ' + ' | '.join(r.result for r in results))]}
        calls = [
            ToolCall(tool_name='run_python', arguments={'code': PRIMES}, id='call-1'),
            ToolCall(tool_name='run_python', arguments={'code': 'int("x")'}, id='call-2'),
        ]
        return {'replies': [ChatMessage.from_assistant(tool_calls=calls)]}


@snippet
def agent_turn():
    """A Haystack Agent with the tool: the tool messages it records."""
    tool = MontyPythonTool()
    agent = Agent(chat_generator=ScriptedGenerator(), tools=[tool])
    try:
        agent.warm_up()
        result = agent.run(messages=[ChatMessage.from_user('sum the primes below 60')])
    finally:
        tool.close()
    tool_results = [r for m in result['messages'] for r in m.tool_call_results]
    assert [r.error for r in tool_results] == [False, False], tool_results
    assert tool_results[0].result == 'output:\n17\n\nresult:\n440', tool_results[0].result
    assert tool_results[1].result.endswith("ValueError: invalid literal for int() with base 10: 'x'"), tool_results[1]
    return '\n---\n'.join(r.result for r in tool_results) + '\n---\n' + result['last_message'].text

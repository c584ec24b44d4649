"""FastMCP's CodeMode transform, through its in-memory Client.

A small FastMCP server (SERVER_TOOLS: sync and async tools, one that
raises, one that sleeps) is wrapped in CodeMode as its docs show:
`FastMCP(..., transforms=[CodeMode(sandbox_provider=MontySandboxProvider(
limits=...))])`. Every snippet connects a `fastmcp.Client` to it in memory
and calls the `execute` meta-tool with a code string; CodeMode runs the
code with pydantic-monty (a fresh `AsyncMonty` pool and checkout per call,
its limits passed to the checkout) and exposes the server's tools to it as
`call_tool(name, params)`. The outcome is what the MCP client sees: the
result's text content, or its error text.

Covered: sync and async tools, asyncio.gather over tool calls, a result
of some structure, print output (CodeMode leaves it on the server's
stdout, never in the result), a big integer passed to and returned by a
tool, an error raised in a tool (uncaught and caught by the code), an
exception raised by the code, the turn, feed and memory limits and the
recursion limit firing, and CodeMode's own wall-clock limit cancelling a
run stalled on a slow tool.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
from typing import Any

from common import snippet
from fastmcp import Client, FastMCP
from fastmcp.experimental.transforms.code_mode import CodeMode, MontySandboxProvider

# FastMCP logs each failing tool call with a rich traceback on stderr; the
# error the client gets is what the snippets compare.
logging.getLogger('fastmcp').setLevel(logging.CRITICAL)

WORDS = ['alpha', 'beta', 'gamma', 'delta']


def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


FETCHED: list[str] = []


async def fetch_word(n: int) -> str:
    """Returns the n-th word, later for earlier words; notes in FETCHED the
    order the calls finished in."""
    await asyncio.sleep(0.1 * (len(WORDS) - n))
    FETCHED.append(WORDS[n])
    return WORDS[n]


def describe(x: Any) -> str:
    """Tells what the tool received: its type and repr."""
    return f'{type(x).__name__} {x!r}'


def stats(values: list[float]) -> dict[str, float]:
    """Count, total and mean of some numbers: a structured result."""
    return {'count': len(values), 'total': sum(values), 'mean': sum(values) / len(values)}


def fail(reason: str) -> str:
    """Always raises."""
    raise ValueError(reason)


SLOW_EVENTS: list[str] = []


async def slow(seconds: float) -> str:
    """Sleeps, then answers; notes in SLOW_EVENTS when it started and
    whether it was cancelled."""
    SLOW_EVENTS.append('started')
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        SLOW_EVENTS.append('cancelled')
        raise
    return 'woke up'


SERVER_TOOLS = [add, fetch_word, describe, stats, fail, slow]


def server(limits: dict[str, Any] | None = None, **codemode: Any) -> FastMCP:
    """The server, its tools behind CodeMode; limits for the sandbox (the
    provider's default ones when None), codemode for CodeMode itself."""
    provider = MontySandboxProvider() if limits is None else MontySandboxProvider(limits=limits)
    mcp = FastMCP('codemode-integration', transforms=[CodeMode(sandbox_provider=provider, **codemode)])
    for fn in SERVER_TOOLS:
        mcp.tool(fn)
    return mcp


def seen(result) -> str:
    """What the client sees of a CallToolResult: its text, marked if an error."""
    text = '\n'.join(getattr(c, 'text', repr(c)) for c in result.content)
    return f'ERROR {text}' if result.is_error else text


async def execute(code: str, limits: dict[str, Any] | None = None, **codemode: Any) -> str:
    """Calls the execute tool with code, as an MCP client, and returns what
    the client sees."""
    async with Client(server(limits, **codemode)) as client:
        names = {t.name for t in await client.list_tools()}
        assert names == {'search', 'get_schema', 'execute'}, names
        return seen(await client.call_tool('execute', {'code': code}, raise_on_error=False))


@snippet
async def sync_tool_chain():
    """Sync tool calls chained, each result feeding the next."""
    out = await execute(
        'a = await call_tool("add", {"a": 2, "b": 3})\n'
        'b = await call_tool("add", {"a": a["result"], "b": 10})\n'
        'return [a, b]\n'
    )
    assert out == '[{"result":5},{"result":15}]', out
    return out


@snippet
async def async_tools_gathered():
    """asyncio.gather over async tool calls: they run at once (finishing in
    reverse order), and gather keeps the order they were given in."""
    FETCHED.clear()
    out = await execute(
        'import asyncio\n'
        'words = await asyncio.gather(*[call_tool("fetch_word", {"n": i}) for i in range(4)])\n'
        'return " ".join(w["result"] for w in words)\n'
    )
    assert out == 'alpha beta gamma delta', out
    assert FETCHED == WORDS[::-1], FETCHED
    return f'{out} (finished: {" ".join(FETCHED)})'


@snippet
async def structured_result():
    """A result of nested dicts, lists, tuples and scalars, with a tool's
    structured output inside."""
    out = await execute(
        's = await call_tool("stats", {"values": [1.5, 2.5, 5]})\n'
        'return {"stats": s, "pairs": [(1, "one"), (2, "two")], "none": None,\n'
        '        "flags": [True, False], "text": "héllo ✓", "nested": {"a": {"b": [1, [2, [3]]]}}}\n'
    )
    want = (
        '{"stats":{"count":3.0,"total":9.0,"mean":3.0},"pairs":[[1,"one"],[2,"two"]],"none":null,'
        '"flags":[true,false],"text":"héllo ✓","nested":{"a":{"b":[1,[2,[3]]]}}}'
    )
    assert out == want, out
    return out


@snippet
async def print_output():
    """print() in the code: CodeMode passes no print callback, so the lines
    go to the server process's stdout, not to the client."""
    with tempfile.TemporaryFile() as f:
        saved = os.dup(1)
        os.dup2(f.fileno(), 1)
        try:
            out = await execute('for i in range(3):\n    print("line", i)\nreturn "done"\n')
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        f.seek(0)
        printed = f.read().decode()
    assert out == 'done', out
    assert printed == 'line 0\nline 1\nline 2\n', printed
    return f'client: {out!r}; server stdout: {printed!r}'


@snippet
async def big_int_argument():
    """Big integers passed to tools and returned by them."""
    out = await execute(
        'd = await call_tool("describe", {"x": 2**200})\n'
        'n = await call_tool("describe", {"x": -(2**70)})\n'
        's = await call_tool("add", {"a": 2**100, "b": 1})\n'
        'return [d["result"], n["result"], s["result"], s["result"] - 2**100]\n'
    )
    want = f'["int {2**200}","int {-(2**70)}",{2**100 + 1},1]'
    assert out == want, out
    return out


@snippet
async def tool_raises():
    """A tool's exception, not caught by the code."""
    out = await execute('r = await call_tool("fail", {"reason": "disk on fire"})\nreturn r\n')
    assert out.startswith('ERROR ') and 'disk on fire' in out, out
    return out


@snippet
async def tool_errors_caught():
    """Tool failures caught by the code: a raising tool, an unknown tool,
    bad arguments; what the code sees of each."""
    out = await execute(
        'seen = []\n'
        'for name, params in [("fail", {"reason": "nope"}), ("missing", {}), ("add", {"a": "x", "b": 1})]:\n'
        '    try:\n'
        '        await call_tool(name, params)\n'
        '    except Exception as e:\n'
        '        seen.append(type(e).__name__ + ": " + str(e))\n'
        'return seen\n'
    )
    assert 'nope' in out and 'Unknown tool' in out and 'Valid parameters for add' in out, out
    return out


@snippet
async def code_raises():
    """An exception raised by the code itself, from a nested function."""
    out = await execute(
        'def lookup(d, k):\n'
        '    return d[k]\n'
        'r = await call_tool("add", {"a": 1, "b": 1})\n'
        'return lookup(r, "missing")\n'
    )
    assert out.startswith('ERROR ') and 'KeyError' in out and 'missing' in out, out
    return out


@snippet
async def turn_limit():
    """The turn limit (0.5 s, feed limit 30 s) firing in a loop after a tool
    call: the clock restarted at the call's return."""
    out = await execute(
        'r = await call_tool("add", {"a": 1, "b": 2})\nwhile True:\n    r["n"] = r.get("n", 0) + 1\n',
        limits={'max_turn_duration_secs': 0.5, 'max_feed_duration_secs': 30.0},
    )
    assert out.startswith('ERROR ') and 'TimeoutError: turn time limit exceeded' in out, out
    return out


@snippet
async def feed_limit():
    """The feed limit (0.5 s, no turn limit) firing in a loop after a tool call."""
    out = await execute(
        'r = await call_tool("add", {"a": 1, "b": 2})\nwhile True:\n    r["n"] = r.get("n", 0) + 1\n',
        limits={'max_feed_duration_secs': 0.5},
    )
    assert out.startswith('ERROR ') and 'TimeoutError: feed time limit exceeded' in out, out
    return out


@snippet
async def memory_limit():
    """The memory limit (5 MB) firing on a growing list."""
    out = await execute(
        'r = await call_tool("add", {"a": 1, "b": 2})\nx = []\nwhile True:\n    x.append("a" * 1000)\n',
        limits={'max_memory': 5_000_000},
    )
    assert out.startswith('ERROR ') and 'MemoryError: memory limit exceeded' in out, out
    return out


@snippet
async def recursion_limit():
    """The recursion limit (50) firing in unbounded recursion."""
    out = await execute(
        'def down(n):\n    return down(n + 1)\nreturn down(0)\n',
        limits={'max_recursion_depth': 50},
    )
    assert out.startswith('ERROR ') and 'RecursionError' in out, out
    return out


@snippet
async def wall_clock_limit():
    """CodeMode's wall-clock limit (2 s) cancelling a run suspended on a
    slow tool (the tool was entered, then cancelled), then the same server
    running code again. The limit also covers the worker's start, so it
    leaves it room."""
    SLOW_EVENTS.clear()
    async with Client(server(wall_clock_timeout_secs=2.0)) as client:
        first = seen(
            await client.call_tool(
                'execute', {'code': 'return await call_tool("slow", {"seconds": 30})'}, raise_on_error=False
            )
        )
        second = seen(await client.call_tool('execute', {'code': 'return 6 * 7'}, raise_on_error=False))
    assert first == 'ERROR Execution exceeded the wall-clock limit of 2.0 seconds.', first
    assert SLOW_EVENTS == ['started', 'cancelled'], SLOW_EVENTS
    assert second == '42', second
    return f'{first} / slow tool: {SLOW_EVENTS} / then: {second}'

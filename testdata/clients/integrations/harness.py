"""pydantic-ai-harness's CodeMode (pydantic-ai-harness 0.62.0 on
pydantic-ai-slim 2.62.0), driven as its users drive it but without an LLM.

Each snippet builds an Agent with the CodeMode capability and a few plain
tools, and a FunctionModel that plays the model: it sends a fixed list of
`run_code` calls, one per step, and ends the run with a text that
transcribes what each call returned to it (the tool return, or the retry
prompt CodeMode raised), which is the snippet's outcome. So a difference in
a worker's result, exception, traceback or limit message shows as a
difference in what the model was told.

Covered: async tools (rendered `async def`) and a `sequential` tool
(rendered `def`) called from the code, loops, asyncio.gather over tools,
print output beside a result; an exception raised by the code and one
raised by a tool (its own, a failed argument validation, a ModelRetry),
caught in the code and not; the REPL state kept across
steps of one run, what survives a failing step, and `restart`; each limit
CodeMode hands to Monty firing (max_duration_secs as the feed's time limit,
max_memory, max_suspensions) and the ones it enforces itself around the
worker (max_tool_calls, the sleep allowance); and the type check of the
first snippet against the tools' stubs (type_check_stubs), whose
diagnostic is what the model reads, and not of the later ones.
"""

from __future__ import annotations

from typing import Any

from pydantic_ai import Agent, ModelRetry, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness import CodeMode
from typing_extensions import TypedDict

from common import snippet

# A restart step: (code, True) sends `restart: true` with the code.
Step = str | tuple[str, bool]


def scripted(steps: list[Step]) -> FunctionModel:
    """A model that sends steps as run_code calls, one per model request,
    then answers with the transcript of what the calls returned."""
    seen: list[str] = []

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert any(t.name == 'run_code' for t in info.function_tools), [t.name for t in info.function_tools]
        for part in messages[-1].parts:
            if isinstance(part, ToolReturnPart) and part.tool_name == 'run_code':
                seen.append(describe(len(seen) + 1, part))
        step = sum(isinstance(m, ModelResponse) for m in messages)
        if step < len(steps):
            code, restart = (steps[step], False) if isinstance(steps[step], str) else steps[step]
            args: dict[str, Any] = {'code': code}
            if restart:
                args['restart'] = True
            return ModelResponse(parts=[ToolCallPart('run_code', args, tool_call_id=f'call_{step + 1}')])
        return ModelResponse(parts=[TextPart('\n'.join(seen))])

    return FunctionModel(respond)


def describe(n: int, part: ToolReturnPart) -> str:
    """One run_code return as the model got it: its text, or the retry's."""
    if part.outcome == 'retried':
        return f'[{n}] retry:\n{part.content}'
    return f'[{n}] {part.outcome}: {part.model_response_str()}'


async def run_steps(steps: list[Step], tools: list[Any], **code_mode: Any) -> str:
    """Runs one agent run of steps with CodeMode(**code_mode) over tools and
    returns the transcript the model ended it with."""
    agent = Agent(scripted(steps), capabilities=[CodeMode(**code_mode)], tools=tools)
    result = await agent.run('Use run_code.')
    return result.output


# The tools the code calls.


class Weather(TypedDict):
    city: str
    temp_c: float


TEMPS = {'Paris': 21.5, 'Tokyo': 28.0, 'Oslo': 9.0, 'Lima': 18.25}


async def get_weather(city: str) -> Weather:
    """Current weather for a city."""
    if city not in TEMPS:
        raise ValueError(f'unknown city: {city!r}')
    return {'city': city, 'temp_c': TEMPS[city]}


def to_fahrenheit(celsius: float) -> float:
    """Converts a Celsius temperature to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 2)


async def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


async def picky(word: str) -> str:
    """Echoes a word, asking for another unless it is "yes"."""
    if word != 'yes':
        raise ModelRetry(f'say yes, not {word!r}')
    return word + '!'


WEATHER = [get_weather]
ALL_TOOLS = [get_weather, Tool(to_fahrenheit, sequential=True), add]


@snippet
async def type_error_first_snippet():
    """The first snippet is type-checked against the tools' stubs: a wrong
    argument type is refused before anything runs, with the diagnostic
    pointing into the stubs; the corrected snippet then runs."""
    out = await run_steps(
        [
            'w = await get_weather(city=42)\nw["temp_c"]',
            'w = await get_weather(city="Oslo")\nw["temp_c"]',
        ],
        WEATHER,
    )
    assert out.startswith('[1] retry:\nType error in code:\n'), out
    assert 'invalid-argument-type' in out and 'type_stubs.pyi' in out, out
    assert out.endswith('[2] success: 9.0'), out
    return out


@snippet
async def type_error_return_shape():
    """The checker knows the TypedDict a tool returns: a missing key is a
    diagnostic, and so is calling a sync tool with await."""
    out = await run_steps(
        [
            'w = await get_weather(city="Paris")\nw["humidity"]',
            'f = await to_fahrenheit(celsius=1.0)\nf',
            'to_fahrenheit(celsius=100.0)',
        ],
        ALL_TOOLS,
    )
    assert out.count('Type error in code') == 2, out
    assert out.endswith('[3] success: 212.0'), out
    return out


@snippet
async def async_and_sync_tools():
    """An async tool awaited and a sequential (sync) tool called directly,
    their results combined in the code."""
    out = await run_steps(
        [
            'w = await get_weather(city="Paris")\n'
            'f = to_fahrenheit(celsius=w["temp_c"])\n'
            '{"city": w["city"], "f": f, "n": await add(a=2, b=3)}',
        ],
        ALL_TOOLS,
    )
    assert out == '[1] success: {"city":"Paris","f":70.7,"n":5}', out
    return out


@snippet
async def loop_with_print():
    """A loop of dependent tool calls, printing as it goes: the model gets
    the printed text beside the final expression."""
    out = await run_steps(
        [
            'total = 0\n'
            'for i in range(1, 6):\n'
            '    total = await add(a=total, b=i * i)\n'
            '    print(f"step {i}: {total}")\n'
            'total',
        ],
        ALL_TOOLS,
    )
    assert out.endswith('"result":55}'), out
    assert 'step 5: 55' in out, out
    return out


@snippet
async def gather_tools():
    """asyncio.gather over several awaited tool calls, then a sync tool on
    each result; gather keeps the order the calls were given in."""
    out = await run_steps(
        [
            'import asyncio\n'
            'cities = ["Tokyo", "Oslo", "Lima", "Paris"]\n'
            'ws = await asyncio.gather(*[get_weather(city=c) for c in cities])\n'
            'sums = await asyncio.gather(add(a=1, b=2), add(a=3, b=4))\n'
            '[(w["city"], to_fahrenheit(celsius=w["temp_c"])) for w in ws] + [sums]',
        ],
        ALL_TOOLS,
    )
    assert out == '[1] success: [["Tokyo",82.4],["Oslo",48.2],["Lima",64.85],["Paris",70.7],[3,7]]', out
    return out


@snippet
async def code_exception():
    """An exception the code raises and does not catch is a retry with its
    traceback; what ran before the failing line stays in the REPL."""
    out = await run_steps(
        [
            'kept = await add(a=20, b=22)\n'
            'def check(x):\n'
            '    if x > 10:\n'
            '        raise ValueError(f"too big: {x}")\n'
            '    return x\n'
            'check(kept)',
            '[kept, check(7)]',
            'try:\n    check(11)\nexcept ValueError as e:\n    caught = repr(e)\ncaught',
        ],
        ALL_TOOLS,
    )
    assert '[1] retry:\nRuntime error:\n' in out and 'ValueError: too big: 42' in out, out
    assert '[2] success: [42,7]' in out, out
    assert out.endswith('[3] success: ValueError(\'too big: 11\')'), out
    return out


@snippet
async def tool_exception():
    """A tool's exception reaches the code at its await: caught there it is
    data; let out, it is a retry naming it."""
    out = await run_steps(
        [
            'try:\n'
            '    await get_weather(city="Atlantis")\n'
            'except ValueError as e:\n'
            '    msg = f"{type(e).__name__}: {e}"\n'
            'msg',
            'import asyncio\n'
            'print("before")\n'
            'await asyncio.gather(get_weather(city="Oslo"), get_weather(city="Nowhere"))',
        ],
        ALL_TOOLS,
    )
    assert '[1] success: ValueError: unknown city: \'Atlantis\'' in out, out
    assert '[stdout before error]\nbefore\n' in out and "unknown city: 'Nowhere'" in out, out
    return out


@snippet
async def repl_state_across_steps():
    """Variables, functions and imports set by one run_code call are there
    for the next ones in the same run, until a restart drops them."""
    out = await run_steps(
        [
            'import json\nseen = []\ndef remember(x):\n    seen.append(x)\n    return len(seen)\nremember("a")',
            'remember(await add(a=1, b=1))\njson.dumps(seen)',
            ('seen', True),
        ],
        ALL_TOOLS,
    )
    assert '[1] success: 1' in out and '[2] success: ["a", 2]' in out, out
    assert '[3] retry:' in out, out
    return out


@snippet
async def duration_limit():
    """max_duration_secs is the feed's time limit: a runaway loop is
    stopped, the session reset (the model is told so, with the calls that
    had started), and the next snippet starts from a fresh REPL."""
    out = await run_steps(
        [
            'base = await add(a=1, b=2)\nn = 0\nwhile True:\n    n += base',
            'await add(a=base, b=1)',
            'await add(a=40, b=2)',
        ],
        ALL_TOOLS,
        resource_limits={'max_duration_secs': 0.4},
    )
    assert 'time limit exceeded' in out and 'the session was reset' in out, out
    assert '1 nested tool calls started' in out, out
    assert out.endswith('[3] success: 42'), out
    return out


@snippet
async def memory_limit():
    """max_memory: an allocation past it fails the snippet with the
    worker's MemoryError; the session stays usable."""
    out = await run_steps(
        [
            'small = "ok"\nbig = "x" * 40_000_000\nlen(big)',
            'small',
        ],
        ALL_TOOLS,
        resource_limits={'max_memory': 8_000_000},
    )
    assert 'memory limit exceeded' in out, out
    return out


@snippet
async def suspension_limit():
    """max_suspensions bounds the session's host interactions: a loop of
    tool calls runs out of them, and the model is told which calls started
    and how to get a fresh session."""
    out = await run_steps(
        [
            'done = []\nfor i in range(10):\n    done.append(await add(a=i, b=i))\ndone',
            ('await add(a=1, b=1)', True),
        ],
        ALL_TOOLS,
        resource_limits={'max_suspensions': 6},
    )
    assert 'suspension limit 6 exceeded' in out and 'Pass `restart: true`' in out, out
    assert out.endswith('[2] success: 2'), out
    return out


@snippet
async def tool_call_budget():
    """max_tool_calls, which CodeMode keeps itself: a call past it fails at
    its call site, caught in the code the first time and let out the
    second, when the model is told which calls had started."""
    loop = 'got = []\nfor i in range(5):\n    got.append(await add(a=i, b=0))\n'
    out = await run_steps(
        [
            'try:\n' + ''.join('    ' + line + '\n' for line in loop.splitlines()) + 'except RuntimeError as e:\n'
            '    got.append(str(e)[:40])\n'
            'got',
            loop + 'got',
        ],
        ALL_TOOLS,
        max_tool_calls=3,
    )
    assert '[1] success: [0,1,2,"Code mode allows 3 nested tool calls per"]' in out, out
    assert '3 nested tool calls started' in out, out
    return out


@snippet
async def duration_limit_untyped():
    """The feed's time limit again, with no tools: then no snippet is
    type-checked, and the name the reset dropped is a NameError at run
    time."""
    out = await run_steps(
        ['base = 3\nn = 0\nwhile True:\n    n += base', 'base + 1', 'import math\nmath.isqrt(1700)'],
        [],
        resource_limits={'max_duration_secs': 0.3},
    )
    assert 'time limit exceeded' in out and 'the session was reset' in out, out
    assert "NameError: name 'base' is not defined" in out, out
    assert out.endswith('[3] success: 41'), out
    return out


@snippet
async def sleep_allowance():
    """Sleeping is not execution time; CodeMode gives it an allowance of
    max_duration_secs of its own: a short sleep waits, one past the
    allowance raises TimeoutError in the code without waiting."""
    out = await run_steps(
        [
            'import asyncio\n'
            'import time\n'
            'await asyncio.gather(asyncio.sleep(0.05), asyncio.sleep(0.05))\n'
            'time.sleep(0.1)\n'
            'try:\n'
            '    await asyncio.sleep(60)\n'
            'except TimeoutError as e:\n'
            '    r = f"{type(e).__name__}: {e}"\n'
            'r',
            'time.sleep(60)',
        ],
        [],
        resource_limits={'max_duration_secs': 0.5},
    )
    assert 'sleeping 60s would exceed the 0.5s this code may sleep' in out, out
    assert out.count('TimeoutError') == 2, out
    return out


@snippet
async def later_snippets_unchecked():
    """Only the first snippet is type-checked: a later wrong argument
    reaches the tool, whose argument validation fails at the call site,
    and a tool asking for a retry (ModelRetry) is an exception there too."""
    out = await run_steps(
        [
            'x = await add(a=1, b=2)\nx',
            'try:\n'
            '    await add(a="one", b=2)\n'
            'except Exception as e:\n'
            '    err = type(e).__name__\n'
            'err',
            'await picky(word="no")',
            'await picky(word="yes")',
        ],
        [*ALL_TOOLS, picky],
    )
    assert out.startswith('[1] success: 3\n'), out
    assert '[3] retry:' in out and 'say yes' in out, out
    assert out.endswith('[4] success: yes!'), out
    return out

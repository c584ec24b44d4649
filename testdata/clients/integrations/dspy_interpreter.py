"""dspy-monty-interpreter 0.6.1's MontyInterpreter, the CodeInterpreter
DSPy's code-running modules use, called as they call it:
`execute(code, variables)` on an interpreter that keeps one session (per
thread) across calls, and two whole modules, ProgramOfThought and RLM,
run on a scripted DummyLM instead of an LLM.

execute() returns the printed text (else the last expression's str, else
None), or FinalOutput when the code called SUBMIT(); errors in the code
are CodeExecutionError ("Type: message"), parse errors SyntaxError, a
killed worker CodeInterpreterError. Covered: print output and values,
state across calls (kept after an error), variables in, runtime and syntax
errors, sync and async tools, SUBMIT, the time limits (the session is
discarded after them), memory and recursion limits (it is kept), the
request timeout, host modules, an overlay mount, the OS policy (frozen
clock, seeded random, zero sleep), and ProgramOfThought and RLM runs.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import warnings
from datetime import datetime

import dspy
from dspy.primitives.code_interpreter import FinalOutput
from dspy.utils.dummies import DummyLM
from dspy_monty_interpreter import ClassInstance, ExternalModule, MontyInterpreter, MountDir

from common import snippet


def outcome(interp: MontyInterpreter, code: str, variables: dict | None = None) -> str:
    """What one execute() gave its caller: the value's repr, or the
    exception it raised."""
    try:
        return repr(interp.execute(code, variables))
    except Exception as e:  # the caller's view: RLM and ProgramOfThought show these to the LM
        return f'{type(e).__name__}: {e}'


def session(**options) -> MontyInterpreter:
    """An interpreter: `with` starts it (its pool and this thread's session)
    and shuts it down, as DSPy does around each forward()."""
    return MontyInterpreter(**options)


@snippet
def print_and_expression():
    """Printed text wins over the last expression; without prints the
    expression's str; None without either; a fenced block is unwrapped."""
    with session() as it:
        got = [
            outcome(it, "print('a')\nprint('b', 2, sep='-')\n40 + 2"),
            outcome(it, 'x = 21\nx * 2'),
            outcome(it, "'text'"),
            outcome(it, 'y = 3'),
            outcome(it, "```python\nprint('fenced')\n```"),
        ]
    assert got == ["'a\\nb-2'", "'42'", "'text'", 'None', "'fenced'"], got
    return '\n'.join(got)


@snippet
def state_across_calls():
    """Variables, functions and classes persist from call to call, and an
    error in between loses nothing."""
    with session() as it:
        got = [
            outcome(it, 'counter = 0\ndef bump(n=1):\n    global counter\n    counter += n\n    return counter'),
            outcome(it, 'class Box:\n    def __init__(self, v):\n        self.v = v\nbox = Box([1, 2])'),
            outcome(it, 'bump(5)\nbox.v.append(bump())\nbox.v'),
            outcome(it, 'box.missing'),
            outcome(it, 'print(counter, box.v)'),
        ]
    assert got[2] == "'[1, 2, 6]'" and got[4] == "'6 [1, 2, 6]'", got
    assert got[3].startswith('CodeExecutionError: AttributeError:'), got
    return '\n'.join(got)


@snippet
def variables_in():
    """variables= become names in the sandbox: nested containers, tuples,
    bytes, big integers, floats, None and non-ASCII text."""
    data = {'rows': [{'id': 1, 'tags': ('a', 'b')}, {'id': 2, 'tags': ()}], 'blob': b'\x00\xff',
            'big': 2**100, 'ratio': 0.1, 'missing': None, 'name': 'Zoë ✓'}
    with session() as it:
        got = [
            outcome(it, "print(sorted(data), data['rows'][0]['tags'], data['blob'], data['big'] + 1)", {'data': data}),
            outcome(it, "sum(r['id'] for r in data['rows']) * n, data['ratio'] * 3, data['name'].upper()",
                    {'data': data, 'n': 10}),
            outcome(it, 'n'),
        ]
    assert got[0] == "\"['big', 'blob', 'missing', 'name', 'ratio', 'rows'] ('a', 'b') b'\\\\x00\\\\xff' " \
                     "1267650600228229401496703205377\"", got
    assert got[1] == "\"(30, 0.30000000000000004, 'ZOË ✓')\"", got
    return '\n'.join(got)


@snippet
def runtime_errors():
    """CodeExecutionError carries "Type: message" of what the code raised,
    including the parser's NotImplementedError for what Monty lacks."""
    with session() as it:
        got = [
            outcome(it, "def get(d):\n    return d['missing']\nget({})"),
            outcome(it, "raise ValueError('custom ' + str(41 + 1))"),
            outcome(it, "assert 1 == 2, 'nope'"),
            outcome(it, 'undefined_name'),
            outcome(it, 'class A:\n    pass\nclass B(A):\n    pass'),
            outcome(it, 'def g():\n    yield 1'),
        ]
    assert got[0] == 'CodeExecutionError: KeyError: missing', got
    assert got[1] == 'CodeExecutionError: ValueError: custom 42', got
    assert got[3] == "CodeExecutionError: NameError: name 'undefined_name' is not defined", got
    assert all(g.startswith('CodeExecutionError: NotImplementedError:') for g in got[4:]), got
    return '\n'.join(got)


@snippet
def syntax_error():
    """A parse error is a SyntaxError; nothing of the code ran."""
    with session() as it:
        got = [outcome(it, "ran = True\nfor i in range(3) print(i)"), outcome(it, 'ran'),
               outcome(it, 'x = (1,')]
    assert got[0] == 'SyntaxError: Expected `:`, found name', got
    assert got[1] == "CodeExecutionError: NameError: name 'ran' is not defined", got
    assert got[2].startswith('SyntaxError: '), got
    return '\n'.join(got)


def lookup(city: str, unit: str = 'C') -> dict:
    """A sync tool returning a dict."""
    return {'city': city, 'temp': len(city) * 3, 'unit': unit}


def divide(a: float, b: float) -> float:
    """A sync tool that can raise."""
    return a / b


async def fetch(key: str) -> str:
    """An async tool."""
    await asyncio.sleep(0.01)
    if key == 'bad':
        raise KeyError(key)
    return f'value-of-{key}'


@snippet
def tools_sync_and_async():
    """Host tools called positionally and by keyword, sync and async; a
    tool's exception reaches the code, caught or not."""
    with session(tools={'lookup': lookup, 'divide': divide, 'fetch': fetch}) as it:
        got = [
            outcome(it, "r = lookup('Paris')\nprint(r, lookup(city='Rome', unit='F')['unit'])"),
            outcome(it, "[fetch('a'), fetch(key='b')]"),
            outcome(it, 'divide(9, b=3)'),
            outcome(it, "try:\n    divide(1, 0)\nexcept ZeroDivisionError as e:\n    print('caught', e)"),
            outcome(it, 'divide(1, 0)'),
            outcome(it, "fetch('bad')"),
            outcome(it, 'divide(1, 2, 3)'),
        ]
    assert got[0] == "\"{'city': 'Paris', 'temp': 15, 'unit': 'C'} F\"", got
    assert got[1] == "\"['value-of-a', 'value-of-b']\"" and got[2] == "'3.0'", got
    assert got[3] == "'caught division by zero'", got
    assert got[4] == 'CodeExecutionError: ZeroDivisionError: division by zero', got
    assert got[5] == 'CodeExecutionError: KeyError: bad', got
    return '\n'.join(got)


@snippet
def submit():
    """SUBMIT() stops the code where it is called: keywords, positionals
    mapped onto the output fields, one dict matching them, nothing."""
    fields = [{'name': 'answer'}, {'name': 'score'}]
    with session(output_fields=fields) as it:
        got = [
            outcome(it, "print('before')\nSUBMIT(answer=42, score=0.5)\nprint('not reached')"),
            outcome(it, "SUBMIT('yes', 3)"),
            outcome(it, "SUBMIT({'answer': [1, (2, 3)]})"),
            outcome(it, 'SUBMIT()'),
            outcome(it, "try:\n    SUBMIT(answer='in try')\nexcept Exception:\n    print('swallowed')"),
        ]
    assert got[0] == repr(FinalOutput({'answer': 42, 'score': 0.5})), got
    assert got[1] == repr(FinalOutput({'answer': 'yes', 'score': 3})), got
    assert got[2] == repr(FinalOutput({'answer': [1, (2, 3)]})) and got[3] == 'FinalOutput(None)', got
    return '\n'.join(got)


@snippet
def feed_time_limit():
    """max_feed_duration_secs stops a busy loop; the adapter then discards
    the session, so the next call has lost its variables."""
    with session(resource_limits={'max_feed_duration_secs': 0.2}) as it:
        got = [outcome(it, 'keep = 1'), outcome(it, 'while True:\n    pass'), outcome(it, 'keep')]
    assert got[1].startswith('CodeExecutionError: TimeoutError: feed time limit exceeded: '), got
    assert got[1].endswith('> 200ms; the sandbox was reset and all variables were lost'), got
    assert got[2] == "CodeExecutionError: NameError: name 'keep' is not defined", got
    return '\n'.join(got)


BUSY = 'import time\ndef busy(seconds):\n    start = time.time()\n    while time.time() - start < seconds:\n        pass\n'


@snippet
def turn_time_limit():
    """max_turn_duration_secs, the sandbox time between host calls: four
    0.2 s turns separated by tool calls fit a 0.5 s limit although they
    add up to more; one 0.7 s turn does not, and the session is discarded."""
    with session(resource_limits={'max_turn_duration_secs': 0.5}, tools={'lookup': lookup}) as it:
        got = [
            outcome(it, BUSY + "out = []\nfor city in ['a', 'bb', 'ccc', 'dddd']:\n    busy(0.2)\n"
                               "    out.append(lookup(city)['temp'])\nout"),
            outcome(it, 'busy(0.7)'),
            outcome(it, 'out'),
        ]
    assert got[0] == "'[3, 6, 9, 12]'", got
    assert got[1].startswith('CodeExecutionError: TimeoutError: turn time limit exceeded: '), got
    assert got[1].endswith('> 500ms; the sandbox was reset and all variables were lost'), got
    assert got[2] == "CodeExecutionError: NameError: name 'out' is not defined", got
    return '\n'.join(got)


@snippet
def memory_and_recursion_limits():
    """max_memory and max_recursion_depth raise in the sandbox; the session
    keeps its state."""
    with session(resource_limits={'max_memory': 16_000_000, 'max_recursion_depth': 50}) as it:
        got = [
            outcome(it, 'keep = [1, 2]'),
            outcome(it, 'x = [0] * 10_000_000'),
            outcome(it, 'def down(n):\n    return down(n + 1)\ndown(0)'),
            outcome(it, 'keep + [len([0] * 100_000)]'),
        ]
    assert got[1].startswith('CodeExecutionError: MemoryError: memory limit exceeded: '), got
    assert got[1].endswith('> 16000000 bytes'), got
    assert got[2] == 'CodeExecutionError: RecursionError: maximum recursion depth exceeded', got
    assert got[3] == "'[1, 2, 100000]'", got
    return '\n'.join(got)


@snippet
def request_timeout():
    """request_timeout kills the worker: CodeInterpreterError (terminal for
    RLM), and the next call runs on a fresh session."""
    with session(request_timeout=2.0) as it:
        got = [outcome(it, 'keep = 1'), outcome(it, 'while True:\n    pass'), outcome(it, 'keep'),
               outcome(it, "'alive'")]
    assert got[1] == 'CodeInterpreterError: monty worker killed after exceeding request timeout of 2s', got
    assert got[2] == "CodeExecutionError: NameError: name 'keep' is not defined" and got[3] == "'alive'", got
    return '\n'.join(got)


class Tally:
    """A host object the sandbox reaches through ClassInstance."""

    def __init__(self, start: int):
        self.value = start
        self.label = 'tally'

    def add(self, n: int) -> int:
        self.value += n
        return self.value

    def secret(self) -> str:
        return 'hidden'


def make_tally(start: int) -> ClassInstance:
    return ClassInstance(Tally(start), eager_attrs={'label'}, allowed_methods={'add'})


def shout(text: str) -> str:
    return text.upper() + '!'


@snippet
def external_modules():
    """A host module the code imports: a function, a constant, an object
    with an allowed method and one it may not call."""
    helpers = ExternalModule({'shout': shout, 'tally': make_tally, 'VERSION': 3, '_private': 1})
    with session(external_modules={'helpers': helpers}) as it:
        got = [
            outcome(it, "from helpers import shout\nimport helpers\nt = helpers.tally(10)\n"
                        "print(shout('hi'), helpers.VERSION, t.label, t.add(5), t.add(1))"),
            outcome(it, 't.secret()'),
            outcome(it, 'helpers._private'),
        ]
    assert got[0] == "'HI! 3 tally 15 16'", got
    assert got[1] == "CodeExecutionError: AttributeError: 'Tally' object has no attribute 'secret'", got
    assert got[2].startswith('CodeExecutionError: AttributeError'), got
    return '\n'.join(got)


@snippet
def mount_overlay():
    """An overlay mount: host files are read, writes are seen within one
    execute() and never reach the host; the working directory starts at
    the mount."""
    with tempfile.TemporaryDirectory() as host:
        with open(os.path.join(host, 'notes.txt'), 'w') as f:
            f.write('line one\nline two\n')
        with session(mounts=[MountDir(virtual_path='/data', host_path=host, mode='overlay')]) as it:
            got = [
                outcome(it, "from pathlib import Path\nprint(Path('/data/notes.txt').read_text().splitlines())\n"
                            "Path('/data/new.txt').write_text('draft')\n"
                            "print(sorted(p.name for p in Path('/data').iterdir()), open('new.txt').read())"),
                outcome(it, "import os\nprint(os.path.exists('/data/new.txt'), os.getcwd())"),
                outcome(it, "open('/data/absent.txt').read()"),
            ]
        on_host = sorted(os.listdir(host))
    assert got[0] == "\"['line one', 'line two']\\n['new.txt', 'notes.txt'] draft\"", got
    assert got[1] == "'False /data'" and on_host == ['notes.txt'], (got, on_host)
    assert got[2].startswith('CodeExecutionError: FileNotFoundError'), got
    return '\n'.join(got + [f'host: {on_host}'])


@snippet
def os_policy():
    """A frozen clock in a time zone, a seeded random, and the adapter's
    default zero-length sleep."""
    policy = {'datetime': datetime(2026, 1, 1, 12, 0), 'timezone': 'America/Los_Angeles', 'random_start': {'seed': 42}}
    with session(os_policy=policy) as it:
        got = [
            outcome(it, 'import random, datetime, time\n'
                        'print(random.randint(1, 1000), random.random(), random.choice("abcdef"))\n'
                        'print(datetime.datetime.now(), datetime.date.today())\n'
                        'time.sleep(30)\nprint(datetime.datetime.now().isoformat())'),
            outcome(it, 'print([random.randint(1, 100) for _ in range(5)])'),
        ]
    assert '2026-01-01 04:00:00 2026-01-01' in got[0], got
    return '\n'.join(got)


@snippet
def program_of_thought():
    """ProgramOfThought on the interpreter: generated code fails, the error
    text goes back to the LM, the regenerated code's output feeds the
    answer."""
    lm = DummyLM([
        {'reasoning': 'add them', 'generated_code': "```python\ntotal = sum(int(x) for x in nums.split(','))\n```"},
        {'reasoning': 'fix', 'generated_code': "```python\ntotal = sum(int(x) for x in '3,4,5'.split(','))\n"
                                               "print(total)\n```"},
        {'reasoning': 'done', 'answer': '12'},
    ])
    with warnings.catch_warnings(), dspy.context(lm=lm):
        warnings.simplefilter('ignore', DeprecationWarning)
        pot = dspy.ProgramOfThought('question -> answer', interpreter_factory=MontyInterpreter.factory())
        result = pot(question='sum 3,4,5')
    prompts = [h['messages'][-1]['content'] for h in lm.history]
    error = prompts[1].split('[[ ## error ## ]]\n', 1)[1].split('\n\n', 1)[0]
    output = prompts[2].split('[[ ## code_output ## ]]\n', 1)[1].split('\n\n', 1)[0]
    assert error == "NameError: name 'nums' is not defined", prompts[1]
    assert output == '"12"' and result.answer == '12', (output, result)
    return f'error: {error}\ncode_output: {output}\nanswer: {result.answer}'


def word_count(text: str) -> int:
    """Counts the words of text."""
    return len(text.split())


class Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@snippet
def rlm():
    """RLM on the interpreter: inputs as variables at each step, a user
    tool, an error fed back, SUBMIT; and what its sub-agent shim met."""
    lm = DummyLM([
        {'reasoning': 'look', 'code': 'words = context.split()\nprint(len(words), word_count(text=context))'},
        {'reasoning': 'oops', 'code': 'words[99]'},
        {'reasoning': 'done', 'code': "SUBMIT(answer=' '.join(reversed(words)))"},
    ])
    records = Records()
    logger = logging.getLogger('dspy.predict.rlm')
    logger.addHandler(records)
    try:
        with dspy.context(lm=lm):
            module = dspy.RLM('context -> answer', interpreter_factory=MontyInterpreter.factory(), tools=[word_count],
                              max_iters=5)
            result = module(context='the quick brown fox')
    finally:
        logger.removeHandler(records)
    outputs = [step['output'] for step in result.trajectory]
    assert result.answer == 'fox brown quick the', result
    assert outputs[:2] == ['4 4', '[Error] IndexError: list index out of range'], outputs
    return '\n'.join(outputs + [f'answer: {result.answer}'] + [f'log: {m}' for m in records.messages])

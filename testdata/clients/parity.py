"""Parity with upstream Monty's errors.

Runs each snippet of CASES through upstream Monty (pydantic-monty, in this
process, with no OS handler, no mounts and no external functions) and through
our `monty -c SNIPPET` (the binary named by the first argument), and fails
listing every case whose outcome differs, so that the same code takes the same
`except` branch under both.

An outcome is what the snippet printed plus how the run ended: normally, or
with an uncaught exception (its type and message), or with the interpreter
gone. The snippets print the branch they took themselves (see `caught`).

Our binary runs each snippet twice: with no limits (the command's default)
and with --max-memory; upstream runs with a memory limit of the same size,
because without one a request for a terabyte really asks the machine for it
(the worker aborts, or the machine starts swapping). A MemoryError is
compared by its type alone: its message states byte counts that depend on
the word size and the limit ("memory limit exceeded: N bytes > L bytes"),
not on the code.

Deliberate differences are listed in parity_known.py with their reasons (and
in docs/conformance.md); a listed case that no longer differs is an error, so
the list cannot go stale.

    python parity.py /path/to/monty        exit 0 when every outcome matches
"""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pydantic_monty

from parity_known import KNOWN

MEMORY_LIMIT = 256 << 20


def caught(body: str) -> str:
    """Wraps body in a try whose handlers print the branch taken, most
    specific first, with the exception's type and message."""
    lines = '\n'.join('    ' + line for line in body.splitlines())
    return f"""try:
{lines}
    print('no exception')
except MemoryError:
    print('except MemoryError')
except OverflowError as e:
    print('except OverflowError:', type(e).__name__, e)
except PermissionError as e:
    print('except PermissionError:', type(e).__name__, e)
except OSError as e:
    print('except OSError:', type(e).__name__, e)
except RuntimeError as e:
    print('except RuntimeError:', type(e).__name__, e)
except Exception as e:
    print('except Exception:', type(e).__name__, e)
"""


# (name, snippet): each snippet runs inside `caught`, unless its name ends
# in "bare", so that the uncaught exception itself is compared.
CASES: list[tuple[str, str]] = [
    # OS calls no handler serves: the environment, files, paths, imports.
    ('os.getenv', "import os\nos.getenv('HOME')"),
    ('os.getenv default', "import os\nos.getenv('HOME', 'x')"),
    ('os.getenv bare', "import os\nos.getenv('HOME')"),
    ('os.environ', 'import os\nos.environ'),
    ('os.environ[k]', "import os\nos.environ['HOME']"),
    ('os.environ.get', "import os\nos.environ.get('HOME')"),
    ('os.urandom', 'import os\nos.urandom(3)'),
    ('open read', "open('/etc/passwd')"),
    ('open read bare', "open('/etc/passwd').read()"),
    ('open write', "open('/tmp/x', 'w')"),
    ('open relative', "open('data.txt')"),
    ('open dotted', "open('/tmp/../etc/./passwd')"),
    ('Path.read_text', "from pathlib import Path\nPath('/etc/passwd').read_text()"),
    ('Path.read_bytes', "from pathlib import Path\nPath('/etc/passwd').read_bytes()"),
    ('Path.write_text', "from pathlib import Path\nPath('/tmp/x').write_text('a')"),
    ('Path.exists', "from pathlib import Path\nPath('/etc/passwd').exists()"),
    ('Path.is_file', "from pathlib import Path\nPath('/etc').is_file()"),
    ('Path.stat', "from pathlib import Path\nPath('/etc').stat()"),
    ('Path.iterdir', "from pathlib import Path\nlist(Path('/etc').iterdir())"),
    ('Path.glob', "from pathlib import Path\nlist(Path('/etc').glob('*'))"),
    ('Path.mkdir', "from pathlib import Path\nPath('/tmp/d').mkdir()"),
    ('Path.unlink', "from pathlib import Path\nPath('/tmp/x').unlink()"),
    ('Path.rename', "from pathlib import Path\nPath('/tmp/x').rename('/tmp/y')"),
    ('Path.resolve', "from pathlib import Path\nprint(Path('a/../b').resolve())"),
    ('os.listdir', "import os\nos.listdir('/etc')"),
    ('os.path.exists', "import os\nos.path.exists('/etc/passwd')"),
    ('os.getcwd', 'import os\nprint(os.getcwd())'),
    ('time.time', 'import time\nprint(type(time.time()).__name__)'),
    ('datetime.now', 'import datetime\nprint(type(datetime.datetime.now()).__name__)'),
    ('import missing', 'import numpy'),
    # Sizes that cannot fit in memory: MemoryError whatever the word size.
    ('[0] * 2**40', 'len([0] * 2**40)'),
    ('[0] * 2**40 bare', 'len([0] * 2**40)'),
    ('2**40 * [0]', 'len(2**40 * [0])'),
    ('[0] * 2**31', 'len([0] * 2**31)'),
    ('[0] * 2**28', 'len([0] * 2**28)'),
    ('[0] * 2**63', 'len([0] * 2**63)'),
    ('[0] * 2**64', 'len([0] * 2**64)'),
    ('[0] * 2**70', 'len([0] * 2**70)'),
    ('[0] * -2**70', 'print(len([0] * -(2**70)))'),
    ('x *= 2**40', 'x = [0]\nx *= 2**40'),
    ("'a' * 2**40", "len('a' * 2**40)"),
    ("' ' * 2**40", "len(' ' * 2**40)"),
    ("'a' * 2**70", "len('a' * 2**70)"),
    ("b'a' * 2**40", "len(b'a' * 2**40)"),
    ("b'a' * 2**70", "len(b'a' * 2**70)"),
    ('(0,) * 2**40', 'len((0,) * 2**40)'),
    ('(0,) * 2**70', 'len((0,) * 2**70)'),
    ('deque * 2**40', 'from collections import deque\nlen(deque([0]) * 2**40)'),
    ('bytes(2**40)', 'len(bytes(2**40))'),
    ('bytes(2**70)', 'len(bytes(2**70))'),
    ("'a'.ljust(2**40)", "len('a'.ljust(2**40))"),
    ("'a'.center(2**40)", "len('a'.center(2**40))"),
    ("'a'.zfill(2**40)", "len('a'.zfill(2**40))"),
    ("b'a'.ljust(2**40)", "len(b'a'.ljust(2**40))"),
    ("b'a'.zfill(2**40)", "len(b'a'.zfill(2**40))"),
    ("f'{1:2000000000000}'", "len(f'{1:2000000000000}')"),
    ("f'{s:2000000000000}'", "s = 'a'\nlen(f'{s:2000000000000}')"),
    ("'{:{}}'.format(1, 2**40)", "len('{:{}}'.format(1, 2**40))"),
    ("'%2000000000000d'", "len('%2000000000000d' % 1)"),
    ("'%*d' % (2**40, 1)", "len('%*d' % (2**40, 1))"),
    ('os.urandom(2**40)', 'import os\nlen(os.urandom(2**40))'),
    ('random.randbytes(2**40)', 'import random\nlen(random.randbytes(2**40))'),
    ('random.randbytes(2**63 - 1)', 'import random\nrandom.randbytes(2**63 - 1)'),
    ('tee(2**62)', 'import itertools\nitertools.tee([1], 2**62)'),
    ('tee(2**40)', 'import itertools\nitertools.tee([1], 2**40)'),
    ('combinations_with_replacement(2**62)', "import itertools\nitertools.combinations_with_replacement('a', 2**62)"),
    ('combinations_with_replacement(2**40)', "import itertools\nitertools.combinations_with_replacement('a', 2**40)"),
    ('product(repeat=2**62)', "import itertools\nitertools.product('ab', repeat=2**62)"),
    ('product(repeat=2**40)', "import itertools\nitertools.product('ab', repeat=2**40)"),
    # Sizes that need no memory: the same answer as on a 64-bit host.
    ('len(range(2**40))', 'print(len(range(2**40)))'),
    ('len(range(-2**62, 2**62 - 1))', 'print(len(range(-(2**62), 2**62 - 1)))'),
    ('len(range(-2**62, 2**62))', 'print(len(range(-(2**62), 2**62)))'),
    ('len(range(2**70))', 'len(range(2**70))'),
    ('batched(2**40)', "import itertools\nprint(list(itertools.batched('AB', 2**40)))"),
    ('permutations(2**40)', "import itertools\nprint(list(itertools.permutations('AB', 2**40)))"),
    ('deque(maxlen=2**40)', 'from collections import deque\nprint(deque(maxlen=2**40).maxlen)'),
    # Neighbours that fit: the same code must still work.
    ('[0] * 3', 'print(len([0] * 3))'),
    ("'ab' * 2", "print('ab' * 2)"),
    ("'%5d'", "print('%5d' % 1)"),
    ("f'{1:5}'", "print(f'{1:5}')"),
]


def program(name: str, snippet: str) -> str:
    """The code a case runs."""
    return snippet if name.endswith(' bare') else caught(snippet)


def upstream(pool: pydantic_monty.Monty, code: str) -> tuple[str, str]:
    """Runs code under upstream Monty, in a session of its own: (stdout, how it ended)."""
    out = pydantic_monty.CollectString()
    try:
        with pool.checkout(limits={'max_memory': MEMORY_LIMIT}) as session:
            session.feed_run(code, print_callback=out)
    except pydantic_monty.MontyRuntimeError as e:
        exc = e.exception()
        return out.output, ending(type(exc).__name__, e.display('msg'))
    except pydantic_monty.MontyCrashedError as e:
        return out.output, f'crashed ({e})'
    return out.output, 'ok'


def ours(binary: str, code: str, *flags: str) -> tuple[str, str]:
    """Runs code with our binary: (stdout, how it ended)."""
    p = subprocess.run([binary, *flags, '-c', code], capture_output=True, text=True, timeout=120)
    if p.returncode == 0:
        return p.stdout, 'ok'
    lines = p.stderr.splitlines()
    if not lines or lines[0].startswith('monty: '):
        # Not a Python exception: the interpreter itself failed.
        return p.stdout, f'crashed ({p.stderr.strip()})'
    # The traceback ends with the exception; notes of the command follow it.
    while lines and lines[-1].startswith('monty: '):
        lines.pop()
    exc_type, _, msg = lines[-1].partition(': ')
    return p.stdout, ending(exc_type, msg)


def ending(exc_type: str, msg: str) -> str:
    """An uncaught exception as compared: a MemoryError by its type alone."""
    if exc_type == 'MemoryError':
        return 'raised MemoryError'
    return f'raised {exc_type}: {msg}'


def main() -> int:
    binary = sys.argv[1]
    names = [name for name, _ in CASES]
    failures = [f'parity_known.py lists {name!r}, which is no case' for name in sorted(set(KNOWN) - set(names))]
    codes = [program(name, snippet) for name, snippet in CASES]
    with pydantic_monty.Monty(min_processes=2, max_processes=4) as pool:
        with ThreadPoolExecutor(max_workers=4) as ex:
            theirs = list(ex.map(lambda code: upstream(pool, code), codes))
            plain = list(ex.map(lambda code: ours(binary, code), codes))
            limited = list(ex.map(lambda code: ours(binary, code, '--max-memory', str(MEMORY_LIMIT)), codes))
    for (name, snippet), want, got, got_limited in zip(CASES, theirs, plain, limited):
        diffs = [
            f'  {label}: {show(outcome)}'
            for label, outcome in (('monty-go', got), (f'monty-go --max-memory {MEMORY_LIMIT}', got_limited))
            if outcome != want
        ]
        if name in KNOWN:
            if diffs:
                print(f'known  {name}: {KNOWN[name]}')
            else:
                failures.append(f'{name}: listed in parity_known.py ({KNOWN[name]}) but no longer differs')
        elif diffs:
            failures.append(f'{name}: {snippet!r}\n  upstream: {show(want)}\n' + '\n'.join(diffs))
        else:
            print(f'same   {name}: {show(want)}')
    if failures:
        version = pydantic_monty.__version__
        print(f'\nparity with upstream Monty {version}: {len(failures)} problem(s) in {len(CASES)} cases\n',
              file=sys.stderr)
        print('\n'.join(failures), file=sys.stderr)
        return 1
    known = len(KNOWN)
    print(f'\nall {len(CASES)} cases as under upstream Monty {pydantic_monty.__version__}'
          f' but the {known} known difference{"s" * (known != 1)} of parity_known.py')
    return 0


def show(outcome: tuple[str, str]) -> str:
    """An outcome as the report shows it."""
    stdout, end = outcome
    return f'stdout {stdout!r}, {end}'


if __name__ == '__main__':
    sys.exit(main())

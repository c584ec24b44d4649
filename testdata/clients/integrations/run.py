"""The Monty integrations, unmodified, against upstream's worker and ours.

Each integration module here (INTEGRATIONS) drives one package built on
pydantic-monty as its users do, without an LLM: pydantic-ai-harness's
CodeMode through a FunctionModel, FastMCP's CodeMode transform through its
in-memory Client, and the Haystack, LangChain and DSPy tools called
directly. Every module runs twice, each time in a fresh Python process
whose MONTY_BIN names the worker: upstream's (pydantic-monty-runtime's
`monty`) and ours. Their outcomes are compared after normalizing what
depends on the clock, addresses and the allocator (common.NORMALIZE);
a difference fails unless known.py lists it with its reason, and a listed
one that no longer differs fails too, so the list cannot go stale.

Each child process records the executables of the worker processes it
spawned: a run that used another binary than the one it was given (the
integration found its own, or none was spawned) fails.

    python run.py UPSTREAM_MONTY OUR_MONTY             exit 0 when all agree
    python run.py UPSTREAM OURS --only harness ...      some integrations
    python run.py --child MODULE BINARY                 one side (internal)
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
INTEGRATIONS = ['harness', 'fastmcp_codemode', 'haystack_tool', 'langchain_tool', 'dspy_interpreter', 'fluss_flow', 'monty_compat_probes']
MIN_SNIPPETS = 8
CHILD_TIMEOUT = 600


def child(module: str, binary: str) -> None:
    """Runs module's snippets against binary and prints the result as JSON."""
    os.environ['MONTY_BIN'] = binary
    sys.path.insert(0, str(HERE))
    import common

    importlib.import_module(module)  # registers its snippets
    outcomes = {}
    with common.Executables() as exes:
        for name, fn in common.SNIPPETS.items():
            t0 = time.monotonic()
            outcomes[name] = common.run_snippet(fn)
            print(f'{module}.{name}: {time.monotonic() - t0:.1f}s', file=sys.stderr, flush=True)
    print(json.dumps({'outcomes': outcomes, 'executables': sorted(exes.seen)}))


def side(module: str, binary: str) -> dict:
    """Runs child() for module and binary in a fresh process."""
    proc = subprocess.run(
        [sys.executable, __file__, '--child', module, binary],
        capture_output=True,
        text=True,
        timeout=CHILD_TIMEOUT,
        env={**os.environ, 'MONTY_BIN': binary},
    )
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise SystemExit(f'{module} on {binary}: exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}')
    sys.stderr.write(proc.stderr)
    return json.loads(lines[-1])


def compare_module(module: str, binaries: dict[str, str], results: dict[str, dict]) -> list[str]:
    """The problems of one integration: failures, unexpected executables,
    differences not in known.py and known ones that no longer differ."""
    sys.path.insert(0, str(HERE))
    sys.path.append(str(HERE.parent))  # monty_v1_known's comparison
    from common import normalize
    from known import KNOWN
    from monty_v1_known import compare

    problems = []
    for who, res in results.items():
        want = os.path.realpath(binaries[who])
        if res['executables'] != [want]:
            problems.append(f'{module}: the {who} run spawned {res["executables"]}, not only {want}')
    ref, got = results['upstream']['outcomes'], results['ours']['outcomes']
    if len(ref) < MIN_SNIPPETS:
        problems.append(f'{module}: {len(ref)} snippets, fewer than {MIN_SNIPPETS}')
    names = [f'{module}.{name}' for name in ref]
    ref = {f'{module}.{n}': normalize(o) for n, o in ref.items()}
    got = {f'{module}.{n}': normalize(o) for n, o in got.items()}
    problems += compare(names, ref, got, 'ours', KNOWN, 'integrations/known.py')
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ['--child']:
        child(argv[1], argv[2])
        return 0
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binaries = {'upstream': argv[0], 'ours': argv[1]}
    only = argv[3:] if argv[2:3] == ['--only'] else INTEGRATIONS
    problems = []
    for module in only:
        # One side after the other, never both at once: the limits snippets
        # measure time.
        results = {who: side(module, binary) for who, binary in binaries.items()}
        problems += compare_module(module, binaries, results)
    for p in problems:
        print('PROBLEM', p, flush=True)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))

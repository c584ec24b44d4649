"""A pydantic-monty session on the worker the monty-go wheel installed.

scripts/release.sh check runs it with the Python of a fresh venv that holds
pydantic-monty-client and the monty-go wheel only, under an empty
environment (env -i): no MONTY_BIN, no binary_path, no PATH. The client
must find the wheel's `monty` in the venv's scripts directory on its own,
and the session must run on it: the worker processes are that binary and
the session's dump is monty-go's container.

    env -i VENV/bin/python wheel_session.py     prints the worker, exits 0
"""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

import pydantic_monty as pm


def child_executables() -> list[str]:
    """The executables of this process's children (Linux /proc)."""
    me, found = os.getpid(), []
    for proc in Path('/proc').iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / 'stat').read_text()
            ppid = int(stat.rsplit(')', 1)[1].split()[1])
            if ppid == me:
                found.append(os.readlink(proc / 'exe'))
        except (OSError, ValueError, IndexError):
            continue  # exited meanwhile
    return found


def main() -> int:
    leaked = [k for k in ('MONTY_BIN', 'PATH') if k in os.environ]
    if leaked:
        print('the environment is not empty:', leaked)
        return 1
    wheel_monty = Path(sysconfig.get_path('scripts')) / 'monty'
    if not wheel_monty.is_file():
        print('no monty in the scripts directory', wheel_monty.parent)
        return 1
    with pm.Monty() as pool, pool.checkout() as s:
        first = s.feed_run('x = 20\nx + 22')
        second = s.feed_run('x * 2')
        ours = s.dump().startswith(b'MGW1')  # monty-go's dump container
        workers = child_executables()
    expected = str(wheel_monty.resolve())
    problems = []
    if (first, second) != (42, 40):
        problems.append(f'the session computed {first!r}, {second!r}; want 42, 40')
    if not ours:
        problems.append("the session's dump is not monty-go's: another worker ran it")
    if not workers or any(w != expected for w in workers):
        problems.append(f'worker processes {workers}; want only {expected}')
    for p in problems:
        print('PROBLEM', p)
    if problems:
        return 1
    print('worker', expected)
    return 0


if __name__ == '__main__':
    sys.exit(main())

"""What the integration modules share: the snippet registry, the
normalization of outcomes, and the record of the worker executables a run
spawned.

An integration module (harness.py, fastmcp_codemode.py, ...) registers its
snippets with `@snippet`: functions, sync or async, that drive the
integration as its users do and return a text of what they saw. Each
snippet also asserts what it expects of the worker, so that two workers
agreeing on a wrong answer still fail; an AssertionError is reported as a
failure, any other exception as the snippet's outcome.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable

SNIPPETS: dict[str, Callable[[], Any]] = {}


def snippet(fn: Callable[[], Any]) -> Callable[[], Any]:
    """Registers fn as a snippet of the module being imported, by name."""
    SNIPPETS[fn.__name__] = fn
    return fn


def run_snippet(fn: Callable[[], Any]) -> str:
    """Runs one snippet and returns its outcome: its text, 'RAISED Type:
    message' for an exception it let out, 'FAILED ...' for a failed
    assertion (with the traceback)."""
    try:
        out = fn()
        if asyncio.iscoroutine(out):
            out = run_async(out)
        return str(out)
    except AssertionError:
        return 'FAILED ' + traceback.format_exc()
    except Exception as e:  # the outcome compared between the two workers
        return f'RAISED {type(e).__name__}: {e}'


def run_async(coro):
    """asyncio.run(coro), staying in the loop a moment after it: the 1.4.0
    client's pools may still hand a result to the loop just after they
    closed, and if the interpreter is finalizing by then the process aborts
    (it happens with upstream's worker too; docs/protocol.md)."""

    async def settle():
        try:
            return await coro
        finally:
            await asyncio.sleep(0.1)

    return asyncio.run(settle())


# Normalizations applied to both workers' outcomes before they are
# compared: what depends on the clock, the address space or the allocator,
# not on the code. Limits' own values stay (they are what a user set).
NORMALIZE: list[tuple[re.Pattern[str], str]] = [
    # "turn time limit exceeded: 500.03ms > 500ms": the time measured.
    (re.compile(r'(time limit exceeded: )[0-9.]+(?:ns|µs|us|ms|s)'), r'\1<elapsed>'),
    # "memory limit exceeded: 20012345 bytes > 20000000 bytes": the bytes in use.
    (re.compile(r'(memory limit exceeded: )\d+( bytes)'), r'\1<used>\2'),
    # Object addresses in reprs.
    (re.compile(r'0x[0-9a-fA-F]+'), '0x<addr>'),
]


def normalize(text: str) -> str:
    for pattern, repl in NORMALIZE:
        text = pattern.sub(repl, text)
    return text


class Executables:
    """Samples the executables of this process's child processes (Linux
    /proc) until stopped: the workers the client spawned. pydantic-monty's
    pool spawns them from native code, so no Python hook sees them; its
    workers live as long as their pool, long enough to be sampled. This
    Python's own executable is left out: a child sampled between its fork
    and its exec of the worker still runs it."""

    def __init__(self, interval: float = 0.01):
        self.seen: set[str] = set()
        self._stop = threading.Event()
        self._interval = interval
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> Executables:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._sample()
            time.sleep(self._interval)

    def _sample(self) -> None:
        me, python = os.getpid(), os.path.realpath(sys.executable)
        for proc in Path('/proc').iterdir():
            if not proc.name.isdigit():
                continue
            try:
                # The command name is in parentheses and may hold spaces.
                ppid = int((proc / 'stat').read_text().rsplit(')', 1)[1].split()[1])
                exe = os.path.realpath(os.readlink(proc / 'exe'))
                if ppid == me and exe != python:
                    self.seen.add(exe)
            except (OSError, ValueError, IndexError):
                continue  # gone meanwhile, or not ours to read

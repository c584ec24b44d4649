"""What the benchmarks share about the processes they start and measure
(Linux: it reads /proc). The scripts of this folder import it; Python puts
a script's own folder first on its path."""

from __future__ import annotations

import glob
import subprocess


def children(pid: int) -> list[int]:
    """The child processes of pid, whichever of its threads started them."""
    out = []
    for path in glob.glob(f'/proc/{pid}/task/*/children'):
        try:
            with open(path) as f:
                out += [int(p) for p in f.read().split()]
        except OSError:
            pass
    return out


def stop(proc: subprocess.Popen) -> None:
    """Ends a process a benchmark started: SIGTERM, then SIGKILL after 10 s."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

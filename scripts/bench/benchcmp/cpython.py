"""CPython's column of scripts/bench/benchcmp: the workloads run in this interpreter.

    python3 scripts/bench/benchcmp/cpython.py [BENCH_DIR]

A worker of scripts/bench/benchcmp: each line of stdin is a request "NAME N",
run workload NAME (prepared at its first request, untimed) N times; the
answer, one line on stdout, is "NS REPR": the mean ns of one run and the
repr of the last run's value (nothing after NS for the workloads that are
not programs), or "error MESSAGE". It ends at the end of stdin.

The workloads:

  NAME           the program BENCH_DIR/NAME.py (default testdata/bench),
                 compiled once and executed in fresh globals per run; its
                 value is that of its last statement, an expression
  dump_load_1mb  pickle.dumps and pickle.loads of data_1mb.py's data (the
                 counterpart of a REPL's dump and load)
  first_result   `python3 -c '1+1'` in a fresh process, with this
                 interpreter's own binary (sys.executable: not a pyenv shim)

Only the standard library is used, so any python3 runs it.
"""

import ast
import os
import pickle
import subprocess
import sys
import time

RESULT = "__bench_result__"


def read(bench_dir, name):
    with open(os.path.join(bench_dir, name)) as f:
        return f.read()


def program(bench_dir, name):
    """One run of NAME.py: its value, kept by compiling the last expression
    as an assignment to RESULT."""
    file = f"{name}.py"
    tree = ast.parse(read(bench_dir, file), file)
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        raise ValueError(f"{file} does not end with an expression")
    tree.body[-1] = ast.copy_location(ast.Assign([ast.Name(RESULT, ast.Store())], last.value), last)
    code = compile(ast.fix_missing_locations(tree), file, "exec")

    def run():
        namespace = {}
        exec(code, namespace)
        return namespace[RESULT]

    return run, True


def prepare(bench_dir, name):
    """The run of workload name, and whether it has a value."""
    if name == "dump_load_1mb":
        namespace = {}
        exec(compile(read(bench_dir, "data_1mb.py"), "data_1mb.py", "exec"), namespace)
        data = namespace["data"]
        return lambda: pickle.loads(pickle.dumps(data)), False
    if name == "first_result":
        argv = [sys.executable, "-c", "1+1"]
        return lambda: subprocess.run(argv, check=True), False
    if not name.isidentifier():
        raise ValueError(f"no workload named {name!r}")
    return program(bench_dir, name)


def answer(bench_dir, prepared, line):
    name, n = line.split()
    n = int(n)
    if n < 1:
        raise ValueError("N must be at least 1")
    if name not in prepared:
        prepared[name] = prepare(bench_dir, name)
    run, has_value = prepared[name]
    clock = time.perf_counter_ns
    start = clock()
    for _ in range(n):
        value = run()
    ns = (clock() - start) / n
    return f"{ns:.1f} {value!r}" if has_value else f"{ns:.1f}"


def main():
    bench_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("testdata", "bench")
    prepared = {}
    for line in sys.stdin:
        try:
            reply = answer(bench_dir, prepared, line)
        except Exception as e:  # the driver logs it and goes on
            reply = f"error {type(e).__name__}: {e}".replace("\n", " ")
        print(reply, flush=True)


if __name__ == "__main__":
    main()

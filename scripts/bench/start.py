"""Start-time measurements of the monty command, for scripts/bench/table.sh.

    python3 scripts/bench/start.py MONTY_BINARY WARM_CACHE_DIR [--runs N] [--cold-runs N]
        [--baseline OTHER_MONTY] [--upstream UPSTREAM_MONTY] [--rss-helper BENCHCMP]
        [--idle-program BENCHCMP] [--idle-program-base BENCHCMP] [--aot AOT_MONTY]

Prints lines in bench.sh's results format, "start <key> <value>" (ns,
or bytes for the _rss keys):

  monty_c       `monty -c 'print(1)'` in a fresh process with the compiled
                module in WARM_CACHE_DIR (filled first by one untimed run);
                the median of --runs runs (default 15)
  python_c      `python3 -c 'print(1)'` likewise, with this interpreter's
                own binary (sys.executable: not a pyenv shim)
  check_c       `monty check -c 'print(1)'` likewise: the first type check
                in a fresh process, the checker module loaded from the cache
  monty_c_base  with --baseline OTHER_MONTY: `OTHER_MONTY -c 'print(1)'`
                likewise (an A/B of the run path's start, e.g. against the
                binary of an earlier commit, or the wazero build against
                the AOT one: scripts/bench/aot.sh); monty_rss_base and
                monty_idle_base are its _rss and _idle
  aot_c         with --aot AOT_MONTY (the CLI `make monty-aot` builds, which
                releases ship): its `-c 'print(1)'` likewise; aot_check_c,
                aot_rss and aot_idle are its check_c, _rss and _idle
  upstream_c    with --upstream UPSTREAM_MONTY (upstream Monty's release
                binary, from pydantic-monty-runtime): its `-c 'print(1)'`
                likewise, for reference
  monty_rss     with --rss-helper BENCHCMP (scripts/bench/benchcmp built): the
                peak resident memory of `monty -c 'pass'` in bytes (its
                ru_maxrss, which `BENCHCMP -peak-rss` reports: a process's
                ru_maxrss counts its parent's peak when that is larger, so
                the measured process is started by that small helper, not
                by this Python), the median of --runs runs
  python_rss    likewise of `python3 -c 'pass'`
  upstream_rss  likewise of `UPSTREAM_MONTY -c 'pass'`, with --upstream
  monty_idle    (Linux) the resident memory of a `monty -c` process that has
                started, printed its first line and now waits (sleeps):
                VmRSS from /proc, read once the line arrives; what an idle
                process holds, where the _rss keys are the high-water mark
                reached while starting; the median of --runs runs
  python_idle   likewise of python3
  program_idle  with --idle-program BENCHCMP (scripts/bench/benchcmp built):
                likewise of `BENCHCMP -first-result -c`, a program that
                holds only an engine and an interpreter (no CLI);
                program_idle_base likewise with --idle-program-base
  upstream_idle likewise of UPSTREAM_MONTY, with --upstream
  serve_cold    `monty serve` with a fresh, empty MONTY_CACHE_DIR: from
                starting the process to the first successful `POST /exec`
                of `1 + 1`; the median of --cold-runs runs (default 3)
  mcp_cold      `monty mcp` with a fresh, empty MONTY_CACHE_DIR: from
                starting the process to the answer of a tools/call of
                execute_python with `1+1` (after initialize and
                notifications/initialized, sent at once); median likewise
  cli_cold      `monty -c 'print(1)'` with a fresh, empty MONTY_CACHE_DIR:
                a process that has to compile the module (once; reference)

The warm-cache runs (the _c and _rss keys) are interleaved: rounds of one
run of each command, each round starting at the next command, so that all
see the same load. Each measured answer is checked (the printed 1, the
result 2). A part that fails prints a message to stderr and no line, and
the exit status is 1.
Only the standard library is used, so any python3 runs it.
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

from procs import stop

API_KEY = "bench-key"
# Straight to 127.0.0.1, whatever *_proxy variables say.
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Plenty for a cold start on a busy 2-core machine; a run past it fails.
TIMEOUT = 180.0


def log(msg):
    print(f"bench_start.py: {msg}", file=sys.stderr, flush=True)


def report(key, value):
    print(f"start {key} {value:.0f}", flush=True)


def base_env(cache_dir):
    env = dict(os.environ)
    env["MONTY_CACHE_DIR"] = cache_dir
    # Nothing of the caller's monty configuration may change what is timed.
    for name in ("MONTY_STORE", "MONTY_ADDR", "MONTY_API_KEYS", "MONTY_API_KEY_FILE"):
        env.pop(name, None)
    # serve refuses to start without a signing key.
    env["MONTY_SIGNING_KEY"] = "bench-signing-key-0123456789abcdef"
    return env


def timed_run(argv, env, want):
    """Runs argv to its end; returns the wall time in ns."""
    start = time.perf_counter_ns()
    proc = subprocess.run(argv, env=env, capture_output=True, timeout=TIMEOUT)
    elapsed = time.perf_counter_ns() - start
    if proc.returncode != 0 or proc.stdout != want:
        raise RuntimeError(
            f"{argv[0]} exited {proc.returncode} with stdout {proc.stdout!r} (want {want!r}); "
            f"stderr: {proc.stderr.decode(errors='replace')[-2000:]}"
        )
    return elapsed


# What the idle-memory runs execute: print a line, then wait to be killed.
IDLE_CODE = "print(1)\nimport time\ntime.sleep(60)"


def idle_rss(argv, env):
    """Starts argv (which prints a line, then sleeps), waits for the line and
    returns the process's resident memory then, in bytes (VmRSS)."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        line = proc.stdout.readline()
        if line != b"1\n":
            raise RuntimeError(f"{argv[0]} printed {line!r} (want b'1\\n'); stderr: {proc.stderr.read(2000)!r}")
        with open(f"/proc/{proc.pid}/status") as f:
            for field in f:
                if field.startswith("VmRSS:"):
                    return int(field.split()[1]) * 1024
        raise RuntimeError(f"no VmRSS in /proc/{proc.pid}/status")
    finally:
        proc.kill()
        proc.wait()


def idle_processes(cache_dir, runs, binaries):
    """idle_rss of each (key, argv) `runs` times, with `-c IDLE_CODE`
    added to argv, interleaved like fresh_processes; returns {key: median
    bytes}."""
    env = base_env(cache_dir)
    values = {key: [] for key, _ in binaries}
    for r in range(runs):
        first = r % len(binaries)
        for key, argv in binaries[first:] + binaries[:first]:
            values[key].append(idle_rss(argv + ["-c", IDLE_CODE], env))
    for key, argv in binaries:
        log(f"{' '.join(argv)} -c ... (sleeping): " + ", ".join(f"{x / (1 << 20):.1f}" for x in sorted(values[key])) + " MiB resident")
    return {key: statistics.median(v) for key, v in values.items()}


def fresh_processes(cache_dir, runs, commands):
    """Runs each (key, argv, want, rss_file) of commands `runs` times, a
    round of all at a time, each round starting at the next command, so
    that all see the same load; returns {key: median}: of the wall time in
    ns, or with an rss_file, of the peak resident memory in bytes that the
    run wrote there (benchcmp -peak-rss)."""
    env = base_env(cache_dir)
    # Fill the cache (and the page cache) before anything is timed.
    for _, argv, want, _ in commands:
        timed_run(argv, env, want)
    values = {key: [] for key, _, _, _ in commands}
    for r in range(runs):
        first = r % len(commands)
        for key, argv, want, rss_file in commands[first:] + commands[:first]:
            ns = timed_run(argv, env, want)
            if rss_file:
                with open(rss_file) as f:
                    values[key].append(int(f.read()))
            else:
                values[key].append(ns)
    for key, argv, _, rss_file in commands:
        if rss_file:
            shown = ", ".join(f"{x / (1 << 20):.1f}" for x in sorted(values[key])) + " MiB peak RSS"
            argv = argv[argv.index("--") + 1:]
        else:
            shown = fmt_list(values[key])
        log(f"{' '.join(argv)} ({key}): {shown}")
    return {key: statistics.median(v) for key, v in values.items()}


def fmt_list(ns):
    return ", ".join(f"{x / 1e6:.0f}" for x in sorted(ns)) + " ms"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_cold(monty, cache_dir):
    """Process start to the first successful POST /exec, no compiled cache."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/exec"
    body = json.dumps({"code": "1 + 1"}).encode()
    argv = [monty, "serve", "--addr", f"127.0.0.1:{port}", "--store", "mem:", "--api-key", API_KEY,
            "--log-level", "warn"]
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter_ns()
        proc = subprocess.Popen(argv, env=base_env(cache_dir), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            while True:
                if proc.poll() is not None:
                    stderr.seek(0)
                    raise RuntimeError(f"monty serve exited {proc.returncode}: "
                                       f"{stderr.read().decode(errors='replace')[-2000:]}")
                if time.perf_counter_ns() - start > TIMEOUT * 1e9:
                    raise RuntimeError(f"monty serve did not answer within {TIMEOUT:.0f} s")
                req = urllib.request.Request(url, data=body, method="POST", headers={
                    "content-type": "application/json", "x-api-key": API_KEY})
                try:
                    with OPENER.open(req, timeout=TIMEOUT) as resp:
                        answer = json.load(resp)
                    elapsed = time.perf_counter_ns() - start
                    break
                except urllib.error.HTTPError as e:
                    if e.code == 503:  # up, but not ready yet
                        time.sleep(0.005)
                        continue
                    # Any other refusal will not change: report it.
                    raise RuntimeError(f"POST /exec answered {e.code}: {e.read()[:2000]!r}")
                except (ConnectionError, urllib.error.URLError):
                    time.sleep(0.005)  # not listening yet
        finally:
            stop(proc)
    if answer.get("result") != 2:
        raise RuntimeError(f"POST /exec answered {answer!r}")
    return elapsed


def mcp_cold(monty, cache_dir):
    """Process start to the tools/call answer over stdio, no compiled cache."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench_start", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "execute_python", "arguments": {"code": "1+1"}}},
    ]
    argv = [monty, "mcp", "--store", "mem:", "--log-level", "warn"]
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter_ns()
        proc = subprocess.Popen(argv, env=base_env(cache_dir), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr)
        answers = {}
        done = threading.Event()

        def read():
            # Lines until the answer to id 2 (or the end of the output).
            for line in proc.stdout:
                msg = json.loads(line)
                if "id" in msg:
                    answers[msg["id"]] = (msg, time.perf_counter_ns())
                    if msg["id"] == 2:
                        break
            done.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            # All three at once, as a client that does not wait: the
            # server answers initialize first either way.
            proc.stdin.write(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
            proc.stdin.flush()
            if not done.wait(TIMEOUT):
                raise RuntimeError(f"monty mcp did not answer within {TIMEOUT:.0f} s")
            if 2 not in answers:
                stderr.seek(0)
                raise RuntimeError(f"monty mcp ended without answering tools/call (exit {proc.poll()}): "
                                   f"{stderr.read().decode(errors='replace')[-2000:]}")
        finally:
            proc.stdin.close()
            stop(proc)
            reader.join(5)
    msg, at = answers[2]
    result = msg.get("result") or {}
    text = " ".join(c.get("text", "") for c in result.get("content", []))
    if result.get("isError") or "2" not in text:
        raise RuntimeError(f"tools/call answered {msg!r}")
    return at - start


def cold(name, fn, runs):
    """The median of runs of fn(fresh empty cache dir), each dir removed after."""
    times = []
    for _ in range(runs):
        cache_dir = tempfile.mkdtemp(prefix="monty-bench-cold-")
        try:
            times.append(fn(cache_dir))
        finally:
            shutil.rmtree(cache_dir, ignore_errors=True)
    log(f"{name}, no cache: {fmt_list(times)}")
    return statistics.median(times)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("monty", help="the monty binary (go build ./cmd/monty)")
    p.add_argument("cache_dir", help="the warm compilation cache for the fresh-process runs")
    p.add_argument("--runs", type=int, default=15)
    p.add_argument("--cold-runs", type=int, default=3)
    p.add_argument("--baseline", help="another monty binary whose -c start is measured alongside (monty_c_base)")
    p.add_argument("--aot", help="the CLI built on the ahead-of-time engine (make monty-aot), measured alongside (aot_c, aot_check_c, aot_rss, aot_idle)")
    p.add_argument("--upstream", help="upstream Monty's monty binary, measured alongside (upstream_c, upstream_rss)")
    p.add_argument("--rss-helper", help="scripts/bench/benchcmp built, which measures the _rss keys (none without it)")
    p.add_argument("--idle-program", help="scripts/bench/benchcmp built, whose idle memory with `-first-result -c` is program_idle")
    p.add_argument("--idle-program-base", help="another such build (e.g. without the AOT module): program_idle_base")
    args = p.parse_args()
    monty = os.path.abspath(args.monty)
    failed = False

    def attempt(what, fn):
        nonlocal failed
        try:
            fn()
        except Exception as e:  # report and go on with the other parts
            log(f"{what} failed: {e}")
            failed = True

    def fresh():
        binaries = [("monty", monty), ("python", sys.executable)]
        if args.aot:
            binaries.append(("aot", os.path.abspath(args.aot)))
        if args.upstream:
            binaries.append(("upstream", os.path.abspath(args.upstream)))
        # (key, argv, want, rss_file): each binary's -c 'print(1)' is timed
        # as KEY_c; the peak resident memory of its -c 'pass' is KEY_rss.
        commands = [("check_c", [monty, "check", "-c", "print(1)"], b"", None)]
        if args.aot:
            commands.append(("aot_check_c", [os.path.abspath(args.aot), "check", "-c", "print(1)"], b"", None))
        commands += [(f"{key}_c", [binary, "-c", "print(1)"], b"1\n", None) for key, binary in binaries]
        if args.baseline:
            commands.append(("monty_c_base", [os.path.abspath(args.baseline), "-c", "print(1)"], b"1\n", None))
        with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
            if args.rss_helper:
                helper = os.path.abspath(args.rss_helper)
                rss_binaries = [(f"{key}_rss", binary) for key, binary in binaries]
                if args.baseline:
                    rss_binaries.append(("monty_rss_base", os.path.abspath(args.baseline)))
                for key, binary in rss_binaries:
                    rss_file = os.path.join(tmp, f"{key}.rss")
                    commands.append((key, [helper, "-peak-rss", rss_file, "--", binary, "-c", "pass"],
                                     b"", rss_file))
            else:
                log("no --rss-helper: the _rss keys are not measured")
            for key, value in fresh_processes(args.cache_dir, args.runs, commands).items():
                report(key, value)

    attempt("monty -c / python3 -c / monty check -c and their memory (warm cache)", fresh)

    def idle():
        binaries = [("monty_idle", [monty]), ("python_idle", [sys.executable])]
        if args.baseline:
            binaries.append(("monty_idle_base", [os.path.abspath(args.baseline)]))
        if args.aot:
            binaries.append(("aot_idle", [os.path.abspath(args.aot)]))
        if args.upstream:
            binaries.append(("upstream_idle", [os.path.abspath(args.upstream)]))
        if args.idle_program:
            binaries.append(("program_idle", [os.path.abspath(args.idle_program), "-first-result"]))
        if args.idle_program_base:
            binaries.append(("program_idle_base", [os.path.abspath(args.idle_program_base), "-first-result"]))
        for key, value in idle_processes(args.cache_dir, args.runs, binaries).items():
            report(key, value)

    if os.path.exists("/proc/self/status"):
        attempt("the resident memory of idle processes (warm cache)", idle)
    else:
        log("no /proc: the _idle keys are not measured")
    attempt("monty serve (no cache)",
            lambda: report("serve_cold", cold("monty serve", lambda d: serve_cold(monty, d), args.cold_runs)))
    attempt("monty mcp (no cache)",
            lambda: report("mcp_cold", cold("monty mcp", lambda d: mcp_cold(monty, d), args.cold_runs)))
    attempt("monty -c (no cache)",
            lambda: report("cli_cold", cold("monty -c", lambda d: timed_run(
                [monty, "-c", "print(1)"], base_env(d), b"1\n"), 1)))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

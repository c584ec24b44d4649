"""Cold start of the serverless example (examples/serverless) on both engines.

    python3 scripts/bench_serverless.py AOT_APP WAZERO_APP WAZERO_CACHE_DIR [--runs N]

AOT_APP is examples/serverless built with the interpreter translated to Go
(scripts/aotgo.sh build); WAZERO_APP the same example built plainly, run
with MONTY_CACHE_DIR=WAZERO_CACHE_DIR holding the module's machine code
(`monty precompile --cache-dir`), as docs/http.md's image bakes it in. Each
run starts a fresh process and times it to the answer of its first
`POST /exec` (`1 + 1`, a new session); the runs alternate between the two
binaries (A B A B ...), so that both see the same load. Redis and the S3
server are scripts/services.sh's (MONTY_TEST_* variables). Prints, for
each binary, the median and the range, and the peak RSS of the process
(VmHWM, read before it is stopped), and their ratio.
Only the standard library is used.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def env_for(port, cache_dir):
    need = ["MONTY_TEST_REDIS_URL", "MONTY_TEST_S3_ENDPOINT", "MONTY_TEST_S3_BUCKET",
            "MONTY_TEST_S3_ACCESS_KEY", "MONTY_TEST_S3_SECRET_KEY"]
    missing = [v for v in need if not os.environ.get(v)]
    if missing:
        sys.exit(f"bench_serverless: {', '.join(missing)} not set: run `eval \"$(scripts/services.sh env)\"` first")
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PORT": str(port),
        "REDIS_URL": os.environ["MONTY_TEST_REDIS_URL"],
        "S3_ENDPOINT": os.environ["MONTY_TEST_S3_ENDPOINT"],
        "S3_BUCKET": os.environ["MONTY_TEST_S3_BUCKET"],
        "S3_ACCESS_KEY": os.environ["MONTY_TEST_S3_ACCESS_KEY"],
        "S3_SECRET_KEY": os.environ["MONTY_TEST_S3_SECRET_KEY"],
        "MONTY_SIGNING_KEY": "bench-serverless-signing-key",
        "MONTY_API_KEYS": "bench-serverless-key",
    }
    if cache_dir:
        env["MONTY_CACHE_DIR"] = cache_dir
    return env


def first_exec(binary, cache_dir):
    """Starts binary, times it to its first /exec answer; returns (seconds, peak RSS bytes)."""
    port = free_port()
    body = json.dumps({"code": "1 + 1"}).encode()
    start = time.perf_counter()
    proc = subprocess.Popen([binary], env=env_for(port, cache_dir), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = start + 60
        while True:
            if proc.poll() is not None:
                sys.exit(f"bench_serverless: {binary} exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
            req = urllib.request.Request(f"http://127.0.0.1:{port}/exec", data=body,
                                         headers={"x-api-key": "bench-serverless-key", "content-type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    answer = json.load(r)
                break
            except (ConnectionError, urllib.error.URLError):
                if time.perf_counter() > deadline:
                    sys.exit(f"bench_serverless: {binary} did not answer within 60 s")
                time.sleep(0.002)
        took = time.perf_counter() - start
        if answer.get("result") != 2:
            sys.exit(f"bench_serverless: {binary} answered {answer}")
        rss = {}
        with open(f"/proc/{proc.pid}/status") as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    rss[line[:5]] = int(line.split()[1]) * 1024
        return took, rss["VmHWM"], rss["VmRSS"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aot")
    ap.add_argument("wazero")
    ap.add_argument("cache_dir")
    ap.add_argument("--runs", type=int, default=9)
    a = ap.parse_args()
    first_exec(a.aot, None)  # warm the page cache for both
    first_exec(a.wazero, a.cache_dir)
    times = {"aot": [], "wazero": []}
    rss = {"aot": [], "wazero": []}
    idle = {"aot": [], "wazero": []}
    for i in range(a.runs):
        order = [("aot", a.aot, None), ("wazero", a.wazero, a.cache_dir)]
        if i % 2:
            order.reverse()
        for name, binary, cache in order:
            t, r, i = first_exec(binary, cache)
            times[name].append(t)
            rss[name].append(r)
            idle[name].append(i)
    for name in ("aot", "wazero"):
        ts = times[name]
        print(f"{name:7s} first /exec from a fresh process: median {statistics.median(ts) * 1000:.1f} ms "
              f"(range {min(ts) * 1000:.1f}-{max(ts) * 1000:.1f}, {len(ts)} runs); peak RSS {statistics.median(rss[name]) / 2**20:.1f} MiB, "
              f"RSS once answered {statistics.median(idle[name]) / 2**20:.1f} MiB")
    print(f"ratio aot/wazero: {statistics.median(times['aot']) / statistics.median(times['wazero']):.2f}x time, "
          f"{statistics.median(rss['aot']) / statistics.median(rss['wazero']):.2f}x peak RSS, "
          f"{statistics.median(idle['aot']) / statistics.median(idle['wazero']):.2f}x RSS once answered")


if __name__ == "__main__":
    main()

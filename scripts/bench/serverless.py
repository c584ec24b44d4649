"""Cold start of the serverless example (examples/serverless) on both engines.

    python3 scripts/bench/serverless.py AOT_APP WAZERO_APP WAZERO_CACHE_DIR [--runs N]
    python3 scripts/bench/serverless.py --container AOT_IMAGE WAZERO_IMAGE [--runs N]

AOT_APP is examples/serverless built with the interpreter translated to Go
(scripts/aotgo.sh build); WAZERO_APP the same example built plainly, run
with MONTY_CACHE_DIR=WAZERO_CACHE_DIR holding the module's machine code
(`monty precompile --cache-dir`), as docs/http.md's image bakes it in. Each
run starts a fresh process and times it to the answer of its first
`POST /exec` (`1 + 1`, a new session); the runs alternate between the two
binaries (A B A B ...), so that both see the same load. Redis and the S3
server are scripts/services.sh's (MONTY_TEST_* variables). Prints, for
each binary, the median and the range, the peak RSS of the process
(VmHWM) and its RSS once it answered (VmRSS), read before it is stopped,
and their ratios.

With --container, AOT_IMAGE and WAZERO_IMAGE are images in podman's store
(scripts/bench/container.sh builds them, the cache baked into the wazero
one): each run is a fresh container, made from the image's files by runc
(its own PID, mount, IPC and UTS namespaces, the host's network so that it
reaches the services), timed from `runc run` to the first answer; the
image sizes are printed too. Run as root.
Only the standard library is used.
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from procs import stop


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


def first_exec(argv, env, pid_of=None):
    """Starts argv with env, times it to its first /exec answer (on the
    port env names); returns (seconds, peak RSS bytes, RSS bytes then).
    pid_of(proc) gives the process to read the memory of (default argv's)."""
    port = env["PORT"]
    body = json.dumps({"code": "1 + 1"}).encode()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = start + 60
        while True:
            if proc.poll() is not None:
                sys.exit(f"bench_serverless: {argv[0]} exited: {proc.stderr.read().decode(errors='replace')[-2000:]}")
            req = urllib.request.Request(f"http://127.0.0.1:{port}/exec", data=body,
                                         headers={"x-api-key": "bench-serverless-key", "content-type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    answer = json.load(r)
                break
            except (ConnectionError, urllib.error.URLError):
                if time.perf_counter() > deadline:
                    sys.exit(f"bench_serverless: {argv[0]} did not answer within 60 s")
                time.sleep(0.002)
        took = time.perf_counter() - start
        if answer.get("result") != 2:
            sys.exit(f"bench_serverless: {argv[0]} answered {answer}")
        pid = pid_of(proc) if pid_of else proc.pid
        rss = {}
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmHWM:", "VmRSS:")):
                    rss[line[:5]] = int(line.split()[1]) * 1024
        return took, rss["VmHWM"], rss["VmRSS"]
    finally:
        stop(proc)


class Process:
    """A binary started as a plain process."""

    def __init__(self, binary, cache_dir):
        self.binary, self.cache_dir = os.path.abspath(binary), cache_dir

    def run(self):
        return first_exec([self.binary], env_for(free_port(), self.cache_dir))

    def size(self):
        return None


class Container:
    """An image of podman's store, each run a fresh runc container of its
    files (exported once into a directory)."""

    def __init__(self, image, workdir):
        self.image, self.workdir = image, workdir
        out = subprocess.run(["podman", "image", "inspect", image], check=True, capture_output=True).stdout
        info = json.loads(out)[0]
        self.bytes = info["Size"]
        config = info.get("Config") or {}
        self.args = (config.get("Entrypoint") or []) + (config.get("Cmd") or [])
        self.env = config.get("Env") or []
        self.rootfs = os.path.join(workdir, "rootfs")
        os.makedirs(self.rootfs)
        name = f"bench-serverless-{os.getpid()}-{os.path.basename(workdir)}"
        subprocess.run(["podman", "create", "--name", name, image], check=True, capture_output=True)
        try:
            export = subprocess.Popen(["podman", "export", name], stdout=subprocess.PIPE)
            subprocess.run(["tar", "-x", "-C", self.rootfs], stdin=export.stdout, check=True)
            if export.wait() != 0:
                sys.exit(f"bench_serverless: podman export of {image} failed")
        finally:
            subprocess.run(["podman", "rm", name], capture_output=True)
        self.runs = 0

    def run(self):
        self.runs += 1
        cid = f"bench-serverless-{os.getpid()}-{os.path.basename(self.workdir)}-{self.runs}"
        port = free_port()
        env = env_for(port, None)
        bundle = os.path.join(self.workdir, f"bundle-{self.runs}")
        os.makedirs(bundle)
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(self.spec(env), f)
        try:
            return first_exec(["runc", "run", "--bundle", bundle, cid], {"PATH": os.environ.get("PATH", ""), "PORT": str(port)},
                              pid_of=lambda _: self.pid(cid))
        finally:
            subprocess.run(["runc", "delete", "--force", cid], capture_output=True)

    def pid(self, cid):
        out = subprocess.run(["runc", "state", cid], check=True, capture_output=True).stdout
        return json.loads(out)["pid"]

    def spec(self, env):
        """An OCI runtime spec: the image's command and environment with
        env's, its files read-only, namespaces of its own but the host's
        network, no capabilities, no resource limits (this machine refuses
        setrlimit and cgroups inside runc's init)."""
        return {
            "ociVersion": "1.0.2",
            "process": {
                "terminal": False,
                "user": {"uid": 0, "gid": 0},  # as Docker runs these images, but with no capabilities
                "args": self.args,
                "env": self.env + [f"{k}={v}" for k, v in env.items() if k != "PATH"],
                "cwd": "/",
                "noNewPrivileges": True,
            },
            "root": {"path": self.rootfs, "readonly": True},
            "hostname": "bench",
            "mounts": [
                {"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
                {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev", "mode=1777"]},
            ],
            "linux": {
                "namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],
                "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
                "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"],
            },
        }

    def size(self):
        return self.bytes


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("aot")
    ap.add_argument("wazero")
    ap.add_argument("cache_dir", nargs="?", help="the wazero build's cache (not with --container: the image holds it)")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--container", action="store_true", help="AOT and WAZERO are images; each run is a fresh runc container")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-serverless-") as tmp:
        if a.container:
            if a.cache_dir:
                ap.error("--container takes no cache directory: the wazero image holds it")
            subjects = {"aot": Container(a.aot, os.path.join(tmp, "aot")),
                        "wazero": Container(a.wazero, os.path.join(tmp, "wazero"))}
        else:
            if not a.cache_dir:
                ap.error("WAZERO_CACHE_DIR is required")
            subjects = {"aot": Process(a.aot, None), "wazero": Process(a.wazero, a.cache_dir)}
        for s in subjects.values():
            s.run()  # warm the page cache for both
        times = {name: [] for name in subjects}
        rss = {name: [] for name in subjects}
        idle = {name: [] for name in subjects}
        for i in range(a.runs):
            order = ["aot", "wazero"]
            if i % 2:
                order.reverse()
            for name in order:
                t, r, once = subjects[name].run()
                times[name].append(t)
                rss[name].append(r)
                idle[name].append(once)
    what = "container" if a.container else "process"
    for name in ("aot", "wazero"):
        ts = times[name]
        size = subjects[name].size()
        print(f"{name:7s} first /exec from a fresh {what}: median {statistics.median(ts) * 1000:.1f} ms "
              f"(range {min(ts) * 1000:.1f}-{max(ts) * 1000:.1f}, {len(ts)} runs); peak RSS {statistics.median(rss[name]) / 2**20:.1f} MiB, "
              f"RSS once answered {statistics.median(idle[name]) / 2**20:.1f} MiB"
              + (f"; image {size / 1e6:.1f} MB" if size else ""))
    sizes = [subjects[n].size() for n in ("aot", "wazero")]
    print(f"ratio aot/wazero: {statistics.median(times['aot']) / statistics.median(times['wazero']):.2f}x time, "
          f"{statistics.median(rss['aot']) / statistics.median(rss['wazero']):.2f}x peak RSS, "
          f"{statistics.median(idle['aot']) / statistics.median(idle['wazero']):.2f}x RSS once answered"
          + (f", {sizes[0] / sizes[1]:.2f}x image size" if all(sizes) else ""))


if __name__ == "__main__":
    main()

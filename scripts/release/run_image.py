#!/usr/bin/env python3
"""Starts the image scripts/release.sh image made under runc and checks it.

    run_image.py IMAGE.oci.tar PYTHON [ENGINE]   (as root; PYTHON has pydantic-monty)

The OCI archive's layers are unpacked into a root file system, read-only,
and run by runc with the image's own entrypoint, environment and user
(65532), the host's network, the signing key and an API key given through
the environment as a deployment would. Then it must answer GET / (liveness:
monty-go on the ahead-of-time engine), GET /health, refuse /exec without
the key, say it runs on ENGINE (aot by default, as releases build it), run a monty.v1 session over WebSocket through upstream's client
(pydantic_monty.AsyncMontyWebsocket, with PYTHON), and on SIGTERM drain:
/health 503 while GET / still answers and a running execution finishes,
then exit 0. It prints what it saw.
"""

import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

SESSION = """
import asyncio, sys
import pydantic_monty as pm

async def main(url, key):
    async with pm.AsyncMontyWebsocket(url, connect_headers=lambda: {'x-api-key': key}, request_timeout=30) as pool:
        async with pool.checkout() as s:
            await s.feed_run('x = 40')
            print(await s.feed_run('x + 2'))
    await asyncio.sleep(0.1)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def die(msg):
    sys.exit(f"run_image: {msg}")


def unpack(archive, root):
    """Unpacks the image's layers in order into root; returns its config."""
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as t:
        t.extractall(tmp, filter="data")
        blob = lambda digest: Path(tmp, "blobs", *digest.split(":"))  # noqa: E731
        index = json.loads(Path(tmp, "index.json").read_text())
        manifest = json.loads(blob(index["manifests"][0]["digest"]).read_text())
        config = json.loads(blob(manifest["config"]["digest"]).read_text())
        for layer in manifest["layers"]:
            with tarfile.open(blob(layer["digest"])) as lt:
                lt.extractall(root, filter="fully_trusted")
    return config["config"]


def spec(config, root, env):
    uid, _, gid = config.get("User", "0:0").partition(":")
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False,
            "user": {"uid": int(uid), "gid": int(gid or uid)},
            "args": (config.get("Entrypoint") or []) + (config.get("Cmd") or []),
            "env": config.get("Env", []) + env,
            "cwd": config.get("WorkingDir") or "/",
            "noNewPrivileges": True,
        },
        "root": {"path": str(root), "readonly": True},
        "hostname": "monty",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755", "size=65536k"]},
        ],
        # The host's network: the check reaches the port directly. No
        # cgroups or rlimits (this machine refuses them inside runc's init).
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")]},
    }


def get(url, key=None):
    req = urllib.request.Request(url, headers={"x-api-key": key} if key else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def main():
    if len(sys.argv) not in (3, 4):
        die(__doc__)
    archive, python = sys.argv[1], sys.argv[2]
    engine = sys.argv[3] if len(sys.argv) == 4 else "aot"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base, key = f"http://127.0.0.1:{port}", "image-check-key"
    with tempfile.TemporaryDirectory() as work:
        root, bundle = Path(work, "rootfs"), Path(work, "bundle")
        root.mkdir()
        bundle.mkdir()
        config = unpack(archive, root)
        if config.get("User") != "65532:65532":
            die(f"the image runs as {config.get('User')!r}, want 65532:65532")
        if (root / "bin" / "sh").exists():
            die("the image has a shell")
        if not (root / "etc/ssl/certs/ca-certificates.crt").is_file():
            die("the image has no CA roots")
        baked = [e.split("=")[0] for e in config.get("Env", []) if "KEY" in e.split("=")[0]]
        if baked:
            die(f"the image sets {baked}: keys must come from the container's environment")
        env = [f"MONTY_ADDR=127.0.0.1:{port}", "MONTY_SIGNING_KEY=image-check-signing-key", f"MONTY_API_KEYS={key}"]
        (bundle / "config.json").write_text(json.dumps(spec(config, root, env)))
        cid = f"monty-image-check-{os.getpid()}"
        log = open(Path(work, "log"), "w+")
        proc = subprocess.Popen(["runc", "run", "--bundle", str(bundle), cid], stdout=log, stderr=log)
        try:
            check(base, key, python, engine, cid, proc)
        except BaseException:
            log.seek(0)
            print(log.read()[-4000:], file=sys.stderr)
            raise
        finally:
            subprocess.run(["runc", "delete", "--force", cid], capture_output=True)
            proc.kill()


def check(base, key, python, engine, cid, proc):
    start = time.monotonic()
    while True:
        try:
            status, body = get(base + "/")
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() - start > 30:
                die(f"the container did not answer GET / (exit {proc.poll()})")
            time.sleep(0.05)
    print(f"GET / after {time.monotonic() - start:.2f} s: {status} {body.decode().strip()}")
    about = json.loads(body)
    if status != 200 or about.get("name") != "monty-go" or about.get("engine") != engine or about.get("status") != "ok":
        die(f"GET / is not monty-go on the {engine} engine, ready")
    status, body = get(base + "/health")
    print(f"GET /health: {status} {body.decode().strip()}")
    if status != 200:
        die("GET /health is not 200")
    status, _ = get(base + "/state/x/info")
    if status != 401:
        die(f"a request without the API key got {status}, want 401")
    out = subprocess.run([python, "-c", SESSION, f"ws://127.0.0.1:{base.rsplit(':', 1)[1]}/", key],
                         capture_output=True, text=True, timeout=120)
    print(f"monty.v1 session through AsyncMontyWebsocket: {out.stdout.strip()} {out.stderr.strip()[-500:]}")
    if out.returncode != 0 or out.stdout.strip() != "42":
        die("the monty.v1 session failed")
    # SIGTERM while an execution runs: it drains (readiness 503, liveness
    # still 200), lets the execution finish, then exits 0.
    running = {}

    def execute():
        req = urllib.request.Request(base + "/exec", method="POST", headers={"x-api-key": key, "Content-Type": "application/json"},
                                     data=json.dumps({"session_id": "drain", "code": "import time\ntime.sleep(1)\n'finished'"}).encode())
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                running["answer"] = (r.status, json.loads(r.read()).get("result"))
        except Exception as e:  # noqa: BLE001 (reported below)
            running["answer"] = repr(e)

    worker = threading.Thread(target=execute)
    worker.start()
    time.sleep(0.3)
    subprocess.run(["runc", "kill", cid, "TERM"], check=True)
    saw_drain = False
    while proc.poll() is None:
        try:
            health, _ = get(base + "/health")
            live, body = get(base + "/")
            if health == 503 and live == 200 and json.loads(body)["status"] == "draining":
                saw_drain = True
        except OSError:
            pass
        time.sleep(0.01)
    worker.join()
    print(f"after SIGTERM: exit {proc.returncode}, drain seen: {saw_drain}, the running execution: {running['answer']}")
    if proc.returncode != 0:
        die(f"monty serve exited {proc.returncode} after SIGTERM")
    if not saw_drain or running["answer"] != (200, "finished"):
        die("SIGTERM did not drain: readiness 503 and liveness 200 while the running execution finished")


if __name__ == "__main__":
    main()

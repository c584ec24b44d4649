#!/usr/bin/env python3
"""Packs release artifacts for scripts/release.sh (docs/building.md#releasing).

    pack.py notices  --binary B --out FILE
    pack.py sbom     --raw FILE --version V --out FILE
    pack.py wheel    --binary B --target GOOS/GOARCH --version V --sbom F --notices F --out DIR
    pack.py archive  --binary B --target GOOS/GOARCH --version V --sbom F --notices F --out DIR
    pack.py sums     DIR
    pack.py verify-wheel WHEEL

release.sh checks the version (MAJOR.MINOR.PATCH with an optional aN, bN,
rcN or .devN) before it builds. Everything written is a function of the
inputs and of the commit, whose time (SOURCE_DATE_EPOCH) stamps every
entry: entries sorted, owners and modes fixed, no build time, so that the
same commit packs the same bytes.
"""

import argparse
import base64
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
LICENSE = REPO / "docs" / "LICENSE"
WHEEL_README = REPO / "scripts" / "release" / "wheel-README.md"
PROJECT_URL = "https://github.com/monty-go/monty"
MODULE = "github.com/monty-go/monty"

# Wheel platform tags of each release target. A Go binary built with
# CGO_ENABLED=0 links no libc, so one Linux wheel is both manylinux (any
# glibc) and musllinux; Go 1.25 and later need macOS 12.
WHEEL_PLATFORMS = {
    "linux/amd64": ["manylinux_2_17_x86_64", "manylinux2014_x86_64", "musllinux_1_1_x86_64"],
    "linux/arm64": ["manylinux_2_17_aarch64", "manylinux2014_aarch64", "musllinux_1_1_aarch64"],
    "darwin/arm64": ["macosx_12_0_arm64"],
    "darwin/amd64": ["macosx_12_0_x86_64"],
    "windows/amd64": ["win_amd64"],
}

# monty-go's license (docs/LICENSE), as an SPDX identifier.
LICENSE_ID = "MIT"


def die(msg):
    sys.exit(f"pack.py: {msg}")


def epoch():
    """The time every entry carries: SOURCE_DATE_EPOCH (the commit's time,
    which release.sh sets); zip cannot say anything before 1980."""
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if not value:
        die("SOURCE_DATE_EPOCH is not set (release.sh sets it to the commit's time)")
    return max(int(value), 315532800)


def exe_name(target):
    return "monty.exe" if target.startswith("windows/") else "monty"


# --- third-party notices -------------------------------------------------


def linked_modules(binary):
    """The modules a Go binary links, from its build information, but
    monty-go's own; a replaced module is refused (a release is built from
    published modules)."""
    out = subprocess.run(["go", "version", "-m", str(binary)], check=True, capture_output=True, text=True).stdout
    mods = []
    for line in out.splitlines():
        fields = line.split("\t")
        if len(fields) >= 4 and fields[1] == "dep" and not fields[2].startswith(MODULE):
            mods.append((fields[2], fields[3]))
        if len(fields) >= 3 and fields[1] == "=>":
            die(f"{binary} links a replaced module ({line.strip()}): release a build of published modules")
    return sorted(mods)


LICENSE_FILE = re.compile(r"^(LICEN[CS]E|COPYING|NOTICE|PATENTS)(\..*)?$", re.I)


def notices(args):
    mods = linked_modules(args.binary)
    env = dict(os.environ, GOFLAGS="-mod=mod", GOWORK="off")
    out = subprocess.run(["go", "mod", "download", "-json"] + [f"{p}@{v}" for p, v in mods],
                         check=True, capture_output=True, text=True, env=env, cwd="/").stdout
    dirs = {}
    for doc in re.split(r"(?m)^(?=\{)", out):
        if doc.strip():
            m = json.loads(doc)
            if m.get("Error"):
                die(f"go mod download {m['Path']}@{m['Version']}: {m['Error']}")
            dirs[(m["Path"], m["Version"])] = Path(m["Dir"])
    parts = [
        "# Third-party notices of monty-go\n\n"
        "The `monty` binary links the Go modules below (with the Go standard library, BSD-3-Clause)\n"
        "and embeds Monty's interpreter and type checker, compiled from Rust crates listed after them.\n",
        "## Go modules\n",
    ]
    for path, version in mods:
        files = sorted(f for f in dirs[(path, version)].iterdir() if f.is_file() and LICENSE_FILE.match(f.name))
        if not files:
            die(f"{path}@{version} has no license file at its root: add its notice by hand before releasing")
        parts.append(f"### {path} {version}\n")
        for f in files:
            parts.append(f"{f.name}:\n\n```\n{f.read_text(errors='replace').rstrip()}\n```\n")
    for rel, title in (("wasm/THIRD_PARTY_LICENSES.md", "the interpreter (monty.wasm)"),
                       ("wasm/checker/THIRD_PARTY_LICENSES.md", "the type checker (checker.wasm)")):
        body = (REPO / rel).read_text().split("\n", 1)[1].lstrip()
        body = re.sub(r"(?m)^## ", "### ", body)
        parts.append(f"## Rust crates of {title}\n\n{body.rstrip()}\n")
    Path(args.out).write_text("\n".join(parts))


# --- SBOM ----------------------------------------------------------------


def sbom(args):
    """Completes cyclonedx-gomod's SBOM of the binary with what it cannot
    look up for monty-go's own modules, which come from this checkout and
    not from the module proxy: their license, and the version of
    wasm/aot (resolved from the workspace, so "(devel)")."""
    doc = json.loads(Path(args.raw).read_text())
    renamed = {}

    def fix(component):
        if component.get("name", "").startswith(MODULE):
            old_ref = component["bom-ref"]
            version = "v" + args.version
            component["version"] = version
            component["bom-ref"] = re.sub(r"@[^?#]*", "@" + version, old_ref, count=1)
            component["purl"] = re.sub(r"@[^?#]*", "@" + version, component["purl"], count=1)
            component["licenses"] = [{"license": {"id": LICENSE_ID}}]
            component.pop("evidence", None)
            renamed[old_ref] = component["bom-ref"]
        for sub in component.get("components", []):
            fix(sub)

    fix(doc["metadata"]["component"])
    for component in doc.get("components", []):
        fix(component)
    # Dependencies and compositions name components by bom-ref.
    text = json.dumps(doc, indent=2, sort_keys=True)
    for old, new in renamed.items():
        text = text.replace(json.dumps(old), json.dumps(new))
    Path(args.out).write_text(text + "\n")


# --- wheel ---------------------------------------------------------------


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def zip_entry(name, mode):
    info = zipfile.ZipInfo(name, time.gmtime(epoch())[:6])
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3  # Unix, so that the modes are read
    return info


def wheel(args):
    version, target = args.version, args.target
    if target not in WHEEL_PLATFORMS:
        die(f"no wheel platform for {target} (one of {', '.join(WHEEL_PLATFORMS)})")
    tags = WHEEL_PLATFORMS[target]
    name = f"monty_go-{version}"
    dist = f"{name}.dist-info"
    readme = WHEEL_README.read_text()
    metadata = "\n".join([
        "Metadata-Version: 2.4",
        "Name: monty-go",
        f"Version: {version}",
        "Summary: Monty, pydantic's sandboxed Python interpreter, run by a Go binary: the worker pydantic-monty starts",
        f"License-Expression: {LICENSE_ID}",
        "License-File: LICENSE",
        "License-File: THIRD_PARTY_NOTICES.md",
        f"Project-URL: Homepage, {PROJECT_URL}",
        f"Project-URL: Documentation, {PROJECT_URL}/tree/main/docs",
        f"Project-URL: Changelog, {PROJECT_URL}/blob/main/docs/CHANGES.md",
        f"Project-URL: Issues, {PROJECT_URL}/issues",
        "Keywords: python,sandbox,interpreter,monty,pydantic,llm,agents",
        "Classifier: Development Status :: 4 - Beta",
        "Classifier: Intended Audience :: Developers",
        "Classifier: Programming Language :: Go",
        "Classifier: Programming Language :: Python :: 3",
        "Classifier: Topic :: Software Development :: Interpreters",
        "Description-Content-Type: text/markdown",
        "",
        readme,
    ])
    wheel_meta = "Wheel-Version: 1.0\nGenerator: monty-go scripts/release/pack.py\nRoot-Is-Purelib: false\n" + \
        "".join(f"Tag: py3-none-{t}\n" for t in tags)
    files = [
        (f"{name}.data/scripts/{exe_name(target)}", Path(args.binary).read_bytes(), 0o755),
        (f"{dist}/METADATA", metadata.encode(), 0o644),
        (f"{dist}/WHEEL", wheel_meta.encode(), 0o644),
        (f"{dist}/licenses/LICENSE", LICENSE.read_bytes(), 0o644),
        (f"{dist}/licenses/THIRD_PARTY_NOTICES.md", Path(args.notices).read_bytes(), 0o644),
        # PEP 770: SBOMs of what a wheel contains live in dist-info/sboms.
        (f"{dist}/sboms/monty-go.cyclonedx.json", Path(args.sbom).read_bytes(), 0o644),
    ]
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in files) + f"{dist}/RECORD,,\n"
    files.append((f"{dist}/RECORD", record.encode(), 0o644))
    out = Path(args.out) / f"{name}-py3-none-{'.'.join(tags)}.whl"
    write_zip(out, files)
    print(out)


def write_zip(out, files):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data, mode in files:
            z.writestr(zip_entry(name, mode), data, compresslevel=6)
    out.write_bytes(buf.getvalue())


# --- archives ------------------------------------------------------------


def archive(args):
    version, target = args.version, args.target
    goos, goarch = target.split("/")
    top = f"monty-go_{version}_{goos}_{goarch}"
    files = sorted([
        (f"{top}/{exe_name(target)}", Path(args.binary).read_bytes(), 0o755),
        (f"{top}/LICENSE", LICENSE.read_bytes(), 0o644),
        (f"{top}/THIRD_PARTY_NOTICES.md", Path(args.notices).read_bytes(), 0o644),
        (f"{top}/monty-go.cyclonedx.json", Path(args.sbom).read_bytes(), 0o644),
    ])
    if goos == "windows":
        out = Path(args.out) / f"{top}.zip"
        write_zip(out, files)
    else:
        out = Path(args.out) / f"{top}.tar.gz"
        tar = io.BytesIO()
        with tarfile.open(fileobj=tar, mode="w", format=tarfile.USTAR_FORMAT) as t:
            for name, data, mode in files:
                info = tarfile.TarInfo(name)
                info.size, info.mode, info.mtime = len(data), mode, epoch()
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                t.addfile(info, io.BytesIO(data))
        gz = io.BytesIO()
        # No file name and a fixed time in the gzip header.
        with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=epoch(), compresslevel=6) as g:
            g.write(tar.getvalue())
        out.write_bytes(gz.getvalue())
    print(out)


def sums(args):
    d = Path(args.dir)
    lines = []
    for f in sorted(d.iterdir()):
        if f.is_file() and f.name != "SHA256SUMS":
            lines.append(f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}\n")
    (d / "SHA256SUMS").write_text("".join(lines))


def verify_wheel(args):
    """Checks a wheel as an installer and an SBOM reader would see it:
    every file in RECORD with its hash and size, the metadata, no
    dependency on upstream's runtime, the license and notices, and an SBOM
    that describes exactly the binary it ships."""
    problems = []
    with zipfile.ZipFile(args.wheel) as z:
        names = z.namelist()
        dist = next(n.split("/")[0] for n in names if n.endswith(".dist-info/RECORD"))
        record = z.read(f"{dist}/RECORD").decode().splitlines()
        listed = set()
        for line in record:
            name, digest, size = line.rsplit(",", 2)
            listed.add(name)
            if name == f"{dist}/RECORD":
                continue
            data = z.read(name)
            if digest != record_hash(data) or int(size) != len(data):
                problems.append(f"{name}: RECORD says {digest} {size}, the file is {record_hash(data)} {len(data)}")
        if listed != set(names):
            problems.append(f"files not in RECORD, or missing: {sorted(listed ^ set(names))}")
        meta = z.read(f"{dist}/METADATA").decode()
        headers = meta.split("\n\n", 1)[0].splitlines()
        for want in ("Name: monty-go", f"License-Expression: {LICENSE_ID}", "License-File: LICENSE"):
            if want not in headers:
                problems.append(f"METADATA has no {want!r}")
        if any(h.startswith("Requires-Dist:") for h in headers):
            problems.append("the wheel depends on something: " + ", ".join(h for h in headers if h.startswith("Requires-Dist:")))
        if "pydantic-monty-client" not in meta:
            problems.append("the readme does not say how to use it with pydantic-monty")
        binary = next((n for n in names if "/scripts/monty" in n), None)
        if binary is None or (z.getinfo(binary).external_attr >> 16) & 0o111 == 0:
            problems.append(f"no executable monty in the scripts directory ({binary})")
        sbom = json.loads(z.read(f"{dist}/sboms/monty-go.cyclonedx.json"))
        component = sbom["metadata"]["component"]
        deps = {c["name"] for c in sbom.get("components", [])}
        props = {p["name"]: p["value"] for p in sbom["metadata"].get("properties", [])}
        version = "v" + dist.removesuffix(".dist-info").split("-", 1)[1]
        if sbom.get("bomFormat") != "CycloneDX" or component.get("name") != MODULE or component.get("version") != version:
            problems.append(f"the SBOM does not describe {MODULE} {version}: {component.get('name')} {component.get('version')}")
        if "github.com/tetratelabs/wazero" not in deps:
            problems.append("the SBOM does not list wazero")
        if binary and props.get("cdx:gomod:binary:hash:SHA-256") != hashlib.sha256(z.read(binary)).hexdigest():
            problems.append("the SBOM's binary hash is not the shipped binary's")
        notices = z.read(f"{dist}/licenses/THIRD_PARTY_NOTICES.md").decode()
        for want in ("### github.com/tetratelabs/wazero", "## Rust crates of the interpreter", "## Rust crates of the type checker"):
            if want not in notices:
                problems.append(f"the notices have no {want!r}")
    for p in problems:
        print("verify-wheel:", p, file=sys.stderr)
    if problems:
        sys.exit(1)
    print(f"verify-wheel: {Path(args.wheel).name}: {len(names)} files as RECORD says, metadata, SBOM of its binary, notices")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("notices")
    p.add_argument("--binary", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=notices)
    p = sub.add_parser("sbom")
    p.add_argument("--raw", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(run=sbom)
    for name, run in (("wheel", wheel), ("archive", archive)):
        p = sub.add_parser(name)
        for flag in ("--binary", "--target", "--version", "--sbom", "--notices", "--out"):
            p.add_argument(flag, required=True)
        p.set_defaults(run=run)
    p = sub.add_parser("verify-wheel")
    p.add_argument("wheel")
    p.set_defaults(run=verify_wheel)
    p = sub.add_parser("sums")
    p.add_argument("dir")
    p.set_defaults(run=sums)
    args = ap.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()

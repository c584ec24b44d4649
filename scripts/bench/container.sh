#!/usr/bin/env bash
# Builds the two serverless images of docs/http.md (its Dockerfiles, taken
# from the page as written: wazero with its machine code baked in, and the
# ahead-of-time engine) and measures their cold start in fresh containers
# (docs/http.md#cold-start-on-the-ahead-of-time-engine):
#
#   scripts/bench/container.sh [RUNS]     # as root; RUNS per image (default 9)
#
# The images are built by buildah from the committed files (git archive
# HEAD, as a clean checkout has them), with chroot isolation: this
# machine's OCI runtimes cannot run a build step (crun refuses its hybrid
# cgroups, runc the rlimits buildah sets). The AOT image compiles the
# translated packages inside its build stage: about 1 GB and a few minutes.
#
# Base images: golang:1.26 and gcr.io/distroless/static are pulled when a
# registry answers. Where none does (this machine), stand-ins are made and
# tagged with those names, and the report says so: golang:1.26 as Debian
# bookworm (debootstrap, minbase with make, git, curl and CA certificates)
# with this machine's Go toolchain in /usr/local/go, like the official
# image, and this machine's CA certificates; distroless/static as CA
# certificates, time zones and a passwd file on scratch.
#
# Then scripts/bench/serverless.py --container times each image from a
# fresh runc container to the answer of its first `POST /exec`, the two
# alternating, with their sizes and memory. podman, buildah, runc and
# debootstrap come from Debian's packages (installed when missing); Redis
# and the S3 server from scripts/services.sh (started and stopped here when
# not running).
set -euo pipefail
tool=bench-container
. "$(dirname "$0")/../lib.sh"
cd "$repo"
runs=${1:-9}
[ "$(id -u)" = 0 ] || { say "run as root (buildah and runc make the images and containers)"; exit 1; }
missing=()
for tool in podman buildah runc debootstrap; do command -v "$tool" >/dev/null || missing+=("$tool"); done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} from Debian's packages"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >&2
fi
tmp=$(mktemp -d)
aot_image=localhost/monty-serverless-aot:bench
wazero_image=localhost/monty-serverless-wazero:bench
golang=docker.io/library/golang:1.26
distroless=gcr.io/distroless/static:latest
made_bases=()
stop_services=false
cleanup() {
  podman rmi -f "$aot_image" "$wazero_image" "${made_bases[@]}" >/dev/null 2>&1 || true
  rm -rf "$tmp"
  if $stop_services; then scripts/services.sh stop >&2; fi
}
trap cleanup EXIT

# The Dockerfiles, as docs/http.md writes them.
awk -v dir="$tmp" '/^```dockerfile$/ { n++; on = 1; next } /^```$/ { on = 0 } on { print > (dir "/Dockerfile." n) }' docs/http.md
aot_df=$(grep -l 'make aot' "$tmp"/Dockerfile.* || true)
wazero_df=$(grep -L 'make aot' "$tmp"/Dockerfile.* | head -1 || true)
[ -n "$aot_df" ] && [ -n "$wazero_df" ] || { say "docs/http.md no longer holds the two serverless Dockerfiles"; exit 1; }

stand_ins=""
if ! timeout 60 buildah pull -q "$golang" >/dev/null 2>&1; then
  say "no registry answers for $golang: making a stand-in (Debian bookworm and this machine's Go)"
  debootstrap --variant=minbase --include=make,ca-certificates,git,curl bookworm "$tmp/golang" \
    http://deb.debian.org/debian >"$tmp/debootstrap.log" 2>&1 || { tail -20 "$tmp/debootstrap.log" >&2; exit 1; }
  cp -a "$(go env GOROOT)" "$tmp/golang/usr/local/go"
  # This machine's trust store: its egress to the module proxy is
  # re-signed by a CA of its own (a builder behind such a proxy adds its CA
  # to any base image the same way).
  cp /etc/ssl/certs/ca-certificates.crt "$tmp/golang/etc/ssl/certs/ca-certificates.crt"
  tar -C "$tmp/golang" -c . | podman import -q \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' --change 'WORKDIR /go' - "$golang" >/dev/null
  made_bases+=("$golang")
  stand_ins="golang:1.26 ($(go version | cut -d' ' -f3) on Debian bookworm)"
fi
if ! timeout 60 buildah pull -q "$distroless" >/dev/null 2>&1; then
  say "no registry answers for $distroless: making a stand-in (CA certificates, time zones, passwd)"
  mkdir -p "$tmp/static/etc/ssl/certs" "$tmp/static/usr/share" "$tmp/static/tmp"
  cp /etc/ssl/certs/ca-certificates.crt "$tmp/static/etc/ssl/certs/"
  cp -r /usr/share/zoneinfo "$tmp/static/usr/share/"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$tmp/static/etc/passwd"
  chmod 1777 "$tmp/static/tmp"
  tar -C "$tmp/static" -c . | podman import -q - "$distroless" >/dev/null
  made_bases+=("$distroless")
  stand_ins="${stand_ins:+$stand_ins, }distroless/static"
fi

mkdir "$tmp/context"
git archive HEAD | tar -x -C "$tmp/context"
for image in wazero aot; do
  df=$wazero_df tag=$wazero_image
  [ "$image" = aot ] && df=$aot_df tag=$aot_image
  say "building the $image image from docs/http.md's Dockerfile"
  /usr/bin/time -f "build $image: %e s, peak %M KB" \
    buildah bud -q --isolation chroot --pull=never -f "$df" -t "$tag" "$tmp/context" >&2
done

if ! scripts/services.sh status >/dev/null 2>&1; then
  scripts/services.sh start >&2
  stop_services=true
fi
eval "$(scripts/services.sh env)"
python3 scripts/bench/serverless.py --container "$aot_image" "$wazero_image" --runs "$runs"
if [ -n "$stand_ins" ]; then
  echo "base images: stand-ins for $stand_ins (no registry answered)"
fi

#!/usr/bin/env bash
# Builds, on a machine with a Docker engine but no image registry, local equivalents of
# the base images the Dockerfile, docker-compose.yml and the testcontainers tests use,
# then the dlock image itself (docs/operations.md, "Containers without a registry"):
#   dlock-local/debian:bookworm   debootstrap --variant=minbase of Debian bookworm
#   dlock-local/node:20           that + this machine's node and npm   (for node:20-bookworm-slim)
#   dlock-local/postgres:15       that + Debian's postgresql-15         (for postgres:16-bookworm)
#   dlock-local/etcd:3.4          that + Debian's etcd-server           (for the official etcd)
#   dlock:local                   the Dockerfile, FROM dlock-local/node:20
# deploy/docker/local-images.env names them for compose and the tests. Each image is
# built once: an image that exists is kept (DLOCK_IMAGES_REBUILD=1 builds them again).
# Usage: npm run images:local   (root, on Debian; the engine: scripts/container-engine.sh start)
#        scripts/images-local.sh --testcontainers   only what the testcontainers tests use (CI)
set -euo pipefail
only_testcontainers=false
case "${1:-}" in
  '') ;;
  --testcontainers) only_testcontainers=true ;;
  *) echo "usage: $0 [--testcontainers]" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
# Debian's docker client: BuildKit without the buildx plugin (a newer client without it
# falls back to the legacy builder, which refuses the Dockerfile's COPY --chmod).
DOCKER=${DLOCK_DOCKER:-/usr/bin/docker}
MIRROR=${DLOCK_DEBIAN_MIRROR:-http://deb.debian.org/debian}
set -a
# shellcheck source=../deploy/docker/local-images.env
. deploy/docker/local-images.env
set +a
DEBIAN_IMAGE=dlock-local/debian:bookworm
export DOCKER_BUILDKIT=1

has_image() { [ "${DLOCK_IMAGES_REBUILD:-0}" != 1 ] && "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
step() { echo "[images:local] $*"; }

"$DOCKER" info >/dev/null 2>&1 || {
  echo '[images:local] no Docker engine answers; start one: sudo scripts/container-engine.sh start' >&2
  exit 1
}
work=$(mktemp -d /tmp/dlock-images.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! has_image "$DEBIAN_IMAGE"; then
  command -v debootstrap >/dev/null || {
    echo '[images:local] debootstrap is missing: sudo scripts/container-engine.sh install' >&2
    exit 1
  }
  step "debootstrap bookworm from $MIRROR ..."
  debootstrap --variant=minbase bookworm "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" ||
    { tail -20 "$work/debootstrap.log" >&2; exit 1; }
  tar -C "$work/rootfs" -c . | "$DOCKER" import - "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$work/rootfs"
fi

if ! $only_testcontainers && ! has_image "$DLOCK_NODE_IMAGE"; then
  step "$DLOCK_NODE_IMAGE from $(command -v node) $(node --version) ..."
  ctx="$work/node"
  cp -r deploy/docker/local/node "$ctx"
  cp "$(command -v node)" "$ctx/node"
  npm_root=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  cp -r "$npm_root" "$ctx/npm"
  # The bundle npm and node trust here (a TLS-intercepting proxy may need it).
  ca=${NODE_EXTRA_CA_CERTS:-$(npm config get cafile 2>/dev/null || true)}
  [ -r "$ca" ] && [ "$ca" != null ] || ca=/etc/ssl/certs/ca-certificates.crt
  cp "$ca" "$ctx/ca-certificates.crt"
  "$DOCKER" build -q --network host --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" -t "$DLOCK_NODE_IMAGE" "$ctx"
fi

for kind in postgres etcd; do
  var="DLOCK_$(echo "$kind" | tr a-z A-Z)_IMAGE"
  image=${!var}
  if ! has_image "$image"; then
    step "$image from Debian's packages ..."
    "$DOCKER" build -q --network host --build-arg DEBIAN_IMAGE="$DEBIAN_IMAGE" -t "$image" \
      "deploy/docker/local/$kind"
  fi
done

if ! $only_testcontainers; then
  step "dlock:local from the Dockerfile (FROM $DLOCK_NODE_IMAGE) ..."
  "$DOCKER" build -q --network host --build-arg NODE_IMAGE="$DLOCK_NODE_IMAGE" -t dlock:local .
fi
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}  {{.Size}}' | grep -E '^dlock' || true

#!/usr/bin/env bash
# Build harness-base without any image registry: debootstrap a minimal Debian bookworm,
# add the same packages, user and config as docker/Dockerfile.base, then `docker import`.
#
# Usage: bash docker/build-base.sh [--force] [--mirror URL] [--cache-dir DIR] [--print-mirror]
#
#   The Debian mirror is this machine's own: the first non-security Debian URI in its apt
#   configuration (/etc/apt/sources.list, sources.list.d/*.list and deb822 *.sources;
#   $APT_DIR overrides /etc/apt). $DEBIAN_MIRROR or --mirror override it. --print-mirror
#   prints the mirror that would be used and exits.
#
#   Idempotent: exits at once when harness-base:$BASE_VERSION already exists (it only
#   re-points harness-base:latest at it). --force rebuilds the rootfs from scratch.
#   The rootfs tarball (and the downloaded .debs) are cached under
#   ${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/harness}, so a re-import after
#   `docker image rm` or on a fresh daemon takes seconds.
#
# Needs: root (debootstrap, chroot), debootstrap, a reachable Debian mirror, a Docker daemon.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BASE_VERSION="bookworm-1"          # bump when the recipe changes (keep Dockerfile.base in sync)
SUITE="bookworm"
IMAGE="${HARNESS_BASE_IMAGE:-harness-base}"  # repository name (tests override it)
MIRROR="${DEBIAN_MIRROR:-}"
PRINT_MIRROR=0
CACHE_DIR="${HARNESS_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/harness}"
FORCE=0

while [ $# -gt 0 ]; do
  case "$1" in
    --force) FORCE=1 ;;
    --mirror) MIRROR="$2"; shift ;;
    --cache-dir) CACHE_DIR="$2"; shift ;;
    --print-mirror) PRINT_MIRROR=1 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "build-base: unknown option '$1'" >&2; exit 2 ;;
  esac
  shift
done

say() { echo "build-base: $*" >&2; }
die() { echo "build-base: ERROR: $*" >&2; exit 1; }

# URIs of apt entries for Debian's main $SUITE archive (suite exactly $SUITE, component
# main: not -updates, -security or a vendor's repository), one-line or deb822.
apt_mirror() {
  local dir="${APT_DIR:-/etc/apt}" f
  for f in "$dir/sources.list" "$dir"/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v suite="$SUITE" '$1 == "deb" {
      i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      main = 0; for (j = i + 2; j <= NF; j++) if ($j == "main") main = 1
      if ($(i + 1) == suite && main) print $i }' "$f"
  done
  for f in "$dir"/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$SUITE" '
      function flush() { if (s && m) for (u in uris) print uris[u]; delete uris; s = 0; m = 0 }
      /^[ \t]*$/ { flush(); next }
      tolower($1) == "uris:" { for (i = 2; i <= NF; i++) uris[i] = $i }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) s = 1 }
      tolower($1) == "components:" { for (i = 2; i <= NF; i++) if ($i == "main") m = 1 }
      END { flush() }' "$f"
  done
}
if [ -z "$MIRROR" ]; then
  MIRROR="$(apt_mirror | head -n 1)"
  MIRROR="${MIRROR%/}"
fi
[ -n "$MIRROR" ] || die "no Debian mirror in the apt configuration (${APT_DIR:-/etc/apt}); pass --mirror URL or set DEBIAN_MIRROR"
if [ "$PRINT_MIRROR" = 1 ]; then echo "$MIRROR"; exit 0; fi

docker info >/dev/null 2>&1 || die "no Docker daemon answers (start one, or run docker/ci-setup.sh)"

if [ "$FORCE" = 0 ] && docker image inspect "$IMAGE:$BASE_VERSION" >/dev/null 2>&1; then
  docker tag "$IMAGE:$BASE_VERSION" "$IMAGE:latest"
  say "$IMAGE:$BASE_VERSION already present ($(docker image inspect -f '{{.Id}}' "$IMAGE:$BASE_VERSION")); nothing to do (use --force to rebuild)"
  exit 0
fi

mkdir -p "$CACHE_DIR/debs"
TARBALL="$CACHE_DIR/rootfs-$BASE_VERSION.tar"
PACKAGES="$(grep -v '^\s*#' "$HERE/base-packages.txt" | xargs | tr ' ' ',')"

if [ "$FORCE" = 1 ] || [ ! -s "$TARBALL" ]; then
  [ "$(id -u)" = 0 ] || die "debootstrap needs root (or reuse a cached $TARBALL)"
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/harness-rootfs.XXXXXX")"
  trap 'rm -rf "$ROOTFS"' EXIT
  say "debootstrap $SUITE (minbase + $PACKAGES) from $MIRROR ..."
  debootstrap --variant=minbase --include="$PACKAGES" --cache-dir="$CACHE_DIR/debs" \
    "$SUITE" "$ROOTFS" "$MIRROR" >"$CACHE_DIR/debootstrap.log" 2>&1 \
    || { tail -n 30 "$CACHE_DIR/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE_DIR/debootstrap.log)"; }

  # The same user and workdir as Dockerfile.base (written directly: minbase has no useradd).
  grep -q '^agent:' "$ROOTFS/etc/group"  || echo 'agent:x:1000:' >>"$ROOTFS/etc/group"
  grep -q '^agent:' "$ROOTFS/etc/passwd" || echo 'agent:x:1000:1000::/home/agent:/bin/bash' >>"$ROOTFS/etc/passwd"
  if [ -f "$ROOTFS/etc/shadow" ] && ! grep -q '^agent:' "$ROOTFS/etc/shadow"; then
    echo 'agent:*:19000:0:99999:7:::' >>"$ROOTFS/etc/shadow"
  fi
  [ -f "$ROOTFS/etc/gshadow" ] && ! grep -q '^agent:' "$ROOTFS/etc/gshadow" && echo 'agent:!::' >>"$ROOTFS/etc/gshadow"
  mkdir -p "$ROOTFS/home/agent" "$ROOTFS/work"
  cp -a "$ROOTFS/etc/skel/." "$ROOTFS/home/agent/" 2>/dev/null || true
  chown -R 1000:1000 "$ROOTFS/home/agent" "$ROOTFS/work"

  # Slim it like bookworm-slim: no apt caches, docs, man pages; no host identity files.
  rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
         "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/log/* \
         "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* \
         "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/* "$ROOTFS"/debootstrap
  : >"$ROOTFS/etc/resolv.conf"; : >"$ROOTFS/etc/hostname"
  echo "deb $MIRROR $SUITE main" >"$ROOTFS/etc/apt/sources.list"

  say "packing rootfs -> $TARBALL"
  tar -C "$ROOTFS" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
    -cf "$TARBALL.tmp" .
  mv "$TARBALL.tmp" "$TARBALL"
  rm -rf "$ROOTFS"; trap - EXIT
else
  say "reusing cached rootfs $TARBALL"
fi

say "docker import -> $IMAGE:$BASE_VERSION"
ID="$(docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV PYTHONDONTWRITEBYTECODE=1' \
  --change "LABEL org.harness.base.version=$BASE_VERSION" \
  --change 'WORKDIR /work' \
  --change 'ENTRYPOINT ["/usr/bin/tini", "--"]' \
  --change 'CMD ["bash"]' \
  "$TARBALL" "$IMAGE:$BASE_VERSION")"
docker tag "$IMAGE:$BASE_VERSION" "$IMAGE:latest"

# Smoke test: the things the harness relies on are there.
docker run --rm --network none "$IMAGE:latest" \
  bash -c 'python3 -c "import json, hashlib" && id agent >/dev/null && test -d /work && timeout 1 true' \
  || die "smoke test of $IMAGE:latest failed"
say "built $IMAGE:$BASE_VERSION = $ID (also tagged $IMAGE:latest)"

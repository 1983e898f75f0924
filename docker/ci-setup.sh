#!/usr/bin/env bash
# Make a Docker daemon answer and harness-base exist (and Chromium be installed, for the
# browser tests), then return. Meant for CI and test machines (root, CI=true):
#
#     bash docker/ci-setup.sh            # before `python -m pytest`
#
# Steps: (1) if `docker info` already works, skip to (4); (2) install docker.io with apt-get
# when dockerd is missing; (3) start dockerd in the background (log: $DOCKERD_LOG) and wait
# up to $DOCKER_WAIT_S seconds for `docker info`; (4) build the base image offline
# (docker/build-base.sh; instant when it already exists). Extra arguments go to build-base.sh.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DOCKERD_LOG="${DOCKERD_LOG:-/tmp/dockerd.log}"
DOCKER_WAIT_S="${DOCKER_WAIT_S:-60}"

say() { echo "ci-setup: $*" >&2; }
die() { echo "ci-setup: ERROR: $*" >&2; exit 1; }

if docker info >/dev/null 2>&1; then
  say "a Docker daemon already answers"
else
  if ! command -v dockerd >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || die "dockerd is missing and installing it needs root"
    say "installing docker.io with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends docker.io debootstrap >/dev/null
  fi
  [ "$(id -u)" = 0 ] || die "no daemon answers and starting dockerd needs root"
  log_tail() { tail -n 20 "$DOCKERD_LOG" | tr -d '\000' >&2; }
  # A daemon still starting or shutting down owns the pid file: wait for it to settle.
  PIDFILE=/var/run/docker.pid
  for _ in $(seq 1 "$DOCKER_WAIT_S"); do
    [ -f "$PIDFILE" ] || break
    OLD="$(cat "$PIDFILE" 2>/dev/null || true)"
    if [ -z "$OLD" ] || ! kill -0 "$OLD" 2>/dev/null; then
      say "removing stale $PIDFILE"; rm -f "$PIDFILE"; break
    fi
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  if ! docker info >/dev/null 2>&1; then
    [ -f "$PIDFILE" ] && die "dockerd (pid $(cat "$PIDFILE")) runs but does not answer"
    say "starting dockerd (log: $DOCKERD_LOG)"
    nohup dockerd >>"$DOCKERD_LOG" 2>&1 &
    DOCKERD_PID=$!
    for _ in $(seq 1 "$DOCKER_WAIT_S"); do
      docker info >/dev/null 2>&1 && break
      kill -0 "$DOCKERD_PID" 2>/dev/null || { log_tail; die "dockerd exited at start (log: $DOCKERD_LOG)"; }
      sleep 1
    done
    docker info >/dev/null 2>&1 || { log_tail; die "dockerd did not answer within ${DOCKER_WAIT_S}s (log: $DOCKERD_LOG)"; }
    say "dockerd is up (pid $DOCKERD_PID)"
  fi
fi

# Bubblewrap for the `bwrap` sandbox (isolation without Docker; the integrity tests use it).
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing bubblewrap with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi

# npm for the ready-made agents (Claude Code, Codex CLI): `harness agents stage` (run by
# .ci/run once the venv exists) fetches their pinned builds into the host cache.
if ! command -v npm >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing npm with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends npm >/dev/null
fi

# Headless Chromium for the browser tests of the HTML report and the trial viewer.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  say "installing chromium with apt-get"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi

command -v debootstrap >/dev/null 2>&1 || docker image inspect harness-base:latest >/dev/null 2>&1 || {
  [ "$(id -u)" = 0 ] && { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
}
exec bash "$HERE/build-base.sh" "$@"

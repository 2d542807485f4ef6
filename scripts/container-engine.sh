#!/usr/bin/env bash
# The Docker engine for the container tests (README, "Test backends"; docs/operations.md).
#   install  Debian's docker.io, docker-compose and debootstrap, when missing (root + apt)
#   start    install, then start dockerd unless an engine already answers; a dockerd started
#            here is recorded in $DLOCK_ENGINE_DIR, so `stop` touches only what `start` began
#   stop     for an engine started here: remove every container, prune every image, volume
#            and network, stop dockerd by its pid; for any other engine: nothing
# The engine runs without the default bridge and without iptables rules: containers use host
# networking or a network the test itself creates, and reach nothing beyond this machine.
set -euo pipefail
STATE=${DLOCK_ENGINE_DIR:-/tmp/dlock-engine}
DOCKER=/usr/bin/docker
say() { echo "[engine] $*"; }

install() {
  local missing=()
  command -v dockerd >/dev/null || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  command -v debootstrap >/dev/null || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "[engine] missing ${missing[*]}: install them (Debian: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  say "installing ${missing[*]} (Debian) ..."
  apt-get update -qq
  # No service is started by the package: this script starts dockerd itself.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

answers() { "$DOCKER" info >/dev/null 2>&1; }

start() {
  install
  if answers; then
    say "an engine already answers; using it (not stopped by stop)"
    return 0
  fi
  mkdir -p "$STATE"
  PATH=/usr/sbin:/usr/bin:$PATH nohup dockerd --bridge=none --iptables=false --ip-masq=false \
    --pidfile "$STATE/dockerd.pid" >"$STATE/dockerd.log" 2>&1 &
  echo $! >"$STATE/started-pid"
  for _ in $(seq 120); do
    if answers; then
      say "dockerd $("$DOCKER" version --format '{{.Server.Version}}') started (pid $(cat "$STATE/started-pid"), log $STATE/dockerd.log)"
      return 0
    fi
    kill -0 "$(cat "$STATE/started-pid")" 2>/dev/null || break
    sleep 0.5
  done
  tail -20 "$STATE/dockerd.log" >&2
  stop
  echo '[engine] dockerd did not answer within 60 s' >&2
  exit 1
}

stop() {
  [ -f "$STATE/started-pid" ] || { say "no engine started here; nothing to stop"; return 0; }
  local pid
  pid=$(cat "$STATE/started-pid")
  if answers; then
    local ids
    ids=$("$DOCKER" ps -aq)
    # shellcheck disable=SC2086
    [ -z "$ids" ] || "$DOCKER" rm -f -v $ids >/dev/null
    "$DOCKER" system prune -af --volumes >/dev/null || true
  fi
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 60); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$STATE/started-pid"
  say "dockerd (pid $pid) stopped; its containers and images removed"
}

case "${1:-}" in
  install | start | stop) "$1" ;;
  *) echo "usage: $0 install|start|stop" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Starts Debian's dockerd in the background with its whole state in $POSTS_DOCKER_DIR, leaving the
# host's firewall and IP forwarding as they are: containers reach the host through published
# ports (docker-proxy) and, with --network host, what the host reaches. stop-dockerd.sh undoes it.
set -euo pipefail
source "$(dirname "$0")/env.sh"

if [ -S "$POSTS_DOCKER_DIR/docker.sock" ] && "$DOCKER" version >/dev/null 2>&1; then
  say "dockerd already answers on $DOCKER_HOST"
  exit 0
fi
mkdir -p "$POSTS_DOCKER_DIR/data" "$POSTS_DOCKER_DIR/exec"
setsid dockerd \
  --host "$DOCKER_HOST" \
  --data-root "$POSTS_DOCKER_DIR/data" \
  --exec-root "$POSTS_DOCKER_DIR/exec" \
  --pidfile "$POSTS_DOCKER_DIR/dockerd.pid" \
  --storage-driver overlay2 \
  --cgroup-parent "$CGROUP_PARENT" \
  --iptables=false --ip-forward=false --ip-masq=false \
  --ip 127.0.0.1 \
  >"$POSTS_DOCKER_DIR/dockerd.log" 2>&1 </dev/null &
for _ in $(seq 1 120); do
  if "$DOCKER" version >/dev/null 2>&1; then
    say "dockerd $(cat "$POSTS_DOCKER_DIR/dockerd.pid") answers on $DOCKER_HOST"
    exit 0
  fi
  sleep 0.5
done
say "dockerd did not answer within 60 s; its log:"
tail -n 30 "$POSTS_DOCKER_DIR/dockerd.log" >&2
exit 1

#!/usr/bin/env bash
# Undoes start-dockerd.sh: removes every container of that daemon, stops it (and the containerd it
# started) by pid, deletes the docker0 bridge it made, removes its containers' cgroups and
# unmounts whatever it left under $POSTS_DOCKER_DIR. Safe to run when nothing runs.
set -uo pipefail
source "$(dirname "$0")/env.sh"

if [ -S "$POSTS_DOCKER_DIR/docker.sock" ]; then
  containers="$("$DOCKER" ps -aq 2>/dev/null)"
  [ -z "$containers" ] || "$DOCKER" rm -f $containers >/dev/null 2>&1
fi
pid="$(cat "$POSTS_DOCKER_DIR/dockerd.pid" 2>/dev/null)"
if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid"
  for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  if kill -0 "$pid" 2>/dev/null; then
    say "dockerd $pid did not stop within 30 s of SIGTERM; killing it"
    kill -KILL "$pid"
  fi
fi
# The containerd that dockerd started for itself keeps its pid file under the exec root.
containerd_pid="$(cat "$POSTS_DOCKER_DIR/exec/containerd/containerd.pid" 2>/dev/null)"
if [ -n "$containerd_pid" ] && kill -0 "$containerd_pid" 2>/dev/null; then
  kill -TERM "$containerd_pid"
  for _ in $(seq 1 20); do kill -0 "$containerd_pid" 2>/dev/null || break; sleep 0.5; done
fi
if ip link show docker0 >/dev/null 2>&1; then ip link delete docker0; fi
# Empty cgroups stay until removed, deepest first (cgroup v1 has one tree per controller).
for tree in /sys/fs/cgroup /sys/fs/cgroup/*; do
  [ -d "$tree$CGROUP_PARENT" ] && find "$tree$CGROUP_PARENT" -depth -type d -exec rmdir {} \; 2>/dev/null
done
awk -v d="$POSTS_DOCKER_DIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null
rm -f "$POSTS_DOCKER_DIR/docker.sock" "$POSTS_DOCKER_DIR/dockerd.pid"
true

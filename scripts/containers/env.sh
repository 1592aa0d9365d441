# Sourced by the other scripts of this folder: where their state lives and which docker client
# they use. Every path can be moved with an environment variable.
#
# POSTS_CONTAINERS_CACHE  root file systems built once, kept between runs (keyed by the content of
#                         the scripts that build them)
# POSTS_DOCKER_DIR        one dockerd's whole state: socket, pid file, data root, exec root, log
CONTAINERS_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
POSTS_CONTAINERS_CACHE="${POSTS_CONTAINERS_CACHE:-/var/cache/posts-containers}"
POSTS_DOCKER_DIR="${POSTS_DOCKER_DIR:-/var/tmp/posts-docker}"
export DOCKER_HOST="unix://$POSTS_DOCKER_DIR/docker.sock"
# The containers' cgroups sit under this one, which stop-dockerd.sh removes.
CGROUP_PARENT=/posts-docker
# The images made here and the base the service's image is built on.
POSTGRES_IMAGE="${POSTGRES_IMAGE:-local/postgres:15}"
NODE_IMAGE="${NODE_IMAGE:-local/node:20-bookworm-slim}"
# Debian's client matches Debian's daemon and builds with the classic builder, which needs no
# BuildKit plugin; a newer client found first on PATH would ask for one.
if [ -x /usr/bin/docker ]; then DOCKER=/usr/bin/docker; else DOCKER=docker; fi
export DOCKER_BUILDKIT=0

say() { echo "containers: $*" >&2; }

# The cached root file systems (build-rootfs.sh makes them, import-images.sh imports them), named
# by a hash of what makes them: these scripts, and for the node image node's and npm's versions.
rootfs_key="$(cat "$CONTAINERS_SCRIPTS/build-rootfs.sh" "$CONTAINERS_SCRIPTS/postgres-entrypoint.sh" |
  sha256sum | cut -c1-16)"
postgres_tar="$POSTS_CONTAINERS_CACHE/postgres-$rootfs_key.tar"
node_tar="$POSTS_CONTAINERS_CACHE/node-$(printf '%s %s %s' "$rootfs_key" "$(node --version)" "$(npm --version)" |
  sha256sum | cut -c1-16).tar"

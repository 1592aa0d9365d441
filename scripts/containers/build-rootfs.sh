#!/usr/bin/env bash
# Builds, without any container registry, the root file systems of two images, as tarballs in
# $POSTS_CONTAINERS_CACHE that import-images.sh turns into images:
#   postgres-<key>.tar  Debian bookworm (debootstrap, minbase) with Debian's postgresql-15 and an
#                       initialised cluster: the official postgres image's interface, for tests
#   node-<key>.tar      the same Debian with this machine's node and npm: a stand-in for
#                       node:20-bookworm-slim, to build the service's image on
# <key> is a hash of what makes them (these scripts, and node's version for the second), so a
# change of either rebuilds it and an unchanged one is reused. Run as root (debootstrap, chroot).
set -euo pipefail
source "$(dirname "$0")/env.sh"

node_binary="$(readlink -f "$(command -v node)")"
npm_root="$(npm root -g)/npm"
if [ -s "$postgres_tar" ] && [ -s "$node_tar" ]; then
  say "root file systems cached ($postgres_tar, $node_tar)"
  exit 0
fi
mkdir -p "$POSTS_CONTAINERS_CACHE"
work="$(mktemp -d "$POSTS_CONTAINERS_CACHE/build.XXXXXX")"
cleanup() {
  # A build that failed or was stopped may have left the kernel's /proc mounted in a chroot.
  awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/mounts | sort -r | xargs -r -n1 umount 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

chrooted() {
  local root="$1"
  shift
  chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"
}

# Root file systems are tarred with numeric owners and without the kernel's file systems.
pack() {
  tar --numeric-owner -C "$1" --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf "$2.partial" .
  mv "$2.partial" "$2"
}

base="$work/base"
say "debootstrap: Debian bookworm, minbase (about a minute)"
debootstrap --variant=minbase bookworm "$base" http://deb.debian.org/debian >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }
cat >"$base/etc/apt/sources.list" <<'SOURCES'
deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
# No service starts inside a chroot.
printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d"
chmod 755 "$base/usr/sbin/policy-rc.d"

build_postgres() {
  local root="$work/postgres"
  cp -a "$base" "$root"
  mkdir -p "$root/etc/postgresql-common"
  echo 'create_main_cluster = false' >"$root/etc/postgresql-common/createcluster.conf"
  mount -t proc proc "$root/proc"
  chrooted "$root" sh -c 'apt-get update -q && apt-get install -y -q --no-install-recommends postgresql-15 &&
    apt-get clean' >"$work/postgres.log" 2>&1 || { tail -n 20 "$work/postgres.log" >&2; umount "$root/proc"; return 1; }
  umount "$root/proc"
  install -m 755 "$CONTAINERS_SCRIPTS/postgres-entrypoint.sh" "$root/usr/local/bin/docker-entrypoint.sh"
  mkdir -p "$root/usr/local/share/posts"
  # A throwaway server for tests: durability is traded for speed, and JIT (trimmed below) is off.
  printf "listen_addresses = '*'\njit = off\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n" \
    >"$root/usr/local/share/posts/postgresql.conf"
  mkdir -p "$root/var/lib/postgresql/data"
  chrooted "$root" chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql
  chroot --userspec=postgres:postgres "$root" /usr/bin/env -i PATH=/usr/lib/postgresql/15/bin:/usr/bin:/bin \
    LANG=C.UTF-8 initdb -D /var/lib/postgresql/data -U postgres -E UTF8 --locale=C.UTF-8 --auth=trust \
    --no-sync >/dev/null
  cat "$root/usr/local/share/posts/postgresql.conf" >>"$root/var/lib/postgresql/data/postgresql.conf"
  echo "host all all all trust" >>"$root/var/lib/postgresql/data/pg_hba.conf"
  rm -rf "$root"/usr/share/{doc,man,info,locale}/* "$root"/var/lib/apt/lists/* \
    "$root"/usr/lib/postgresql/15/lib/{llvmjit*,bitcode} "$root"/usr/lib/x86_64-linux-gnu/lib{LLVM-14,z3}.so*
  pack "$root" "$postgres_tar"
  rm -rf "$root"
}

build_node() {
  local root="$work/node"
  cp -a "$base" "$root"
  # Laid out as the official image: node and npm under /usr/local, a user "node" (1000:1000).
  install -m 755 "$node_binary" "$root/usr/local/bin/node"
  mkdir -p "$root/usr/local/lib/node_modules"
  cp -a "$npm_root" "$root/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/local/bin/npx"
  chrooted "$root" sh -c 'groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node'
  # This machine reaches the npm registry through a proxy that its own CA bundle trusts; a build on
  # this base trusts what the machine trusts.
  if [ -s /etc/ssl/certs/ca-certificates.crt ]; then
    mkdir -p "$root/etc/ssl/certs"
    cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  fi
  rm -rf "$root"/usr/share/{doc,man,info,locale}/* "$root"/var/lib/apt/lists/*
  pack "$root" "$node_tar"
  rm -rf "$root"
}

# Tarballs of older keys are of no further use.
find "$POSTS_CONTAINERS_CACHE" -maxdepth 1 -name '*.tar' ! -name "${postgres_tar##*/}" ! -name "${node_tar##*/}" -delete
say "postgresql-15 and node on it, side by side"
[ -s "$postgres_tar" ] || build_postgres &
postgres_pid=$!
[ -s "$node_tar" ] || build_node
wait "$postgres_pid"

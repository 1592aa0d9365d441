#!/usr/bin/env bash
# Installs Debian's docker.io and debootstrap when they are missing. The package must not start
# dockerd itself: that daemon would write its default firewall rules, and this machine's own is
# not ours to change. A policy-rc.d that answers 101 ("action forbidden") stops it, and is removed
# afterwards when it was not there before.
set -euo pipefail
source "$(dirname "$0")/env.sh"

if command -v dockerd >/dev/null && command -v debootstrap >/dev/null && [ -x /usr/bin/docker ]; then
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  made_policy=1
fi
trap '[ -z "$made_policy" ] || $sudo rm -f "$policy"' EXIT
say "installing docker.io and debootstrap (apt-get)"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q >/dev/null
$sudo apt-get install -y -q --no-install-recommends docker.io debootstrap >/dev/null

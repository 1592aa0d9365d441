#!/usr/bin/env bash
# Imports the root file systems build-rootfs.sh made into the running dockerd as
# $POSTGRES_IMAGE and $NODE_IMAGE, with the configuration the official images carry.
set -euo pipefail
source "$(dirname "$0")/env.sh"

"$DOCKER" import \
  --change 'ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV PGDATA=/var/lib/postgresql/data' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'EXPOSE 5432' \
  --change 'ENTRYPOINT ["docker-entrypoint.sh"]' \
  --change 'CMD ["postgres"]' \
  "$postgres_tar" "$POSTGRES_IMAGE" >/dev/null
extra_ca=()
if tar -tf "$node_tar" ./etc/ssl/certs/ca-certificates.crt >/dev/null 2>&1; then
  extra_ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
fi
"$DOCKER" import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  "${extra_ca[@]}" \
  --change 'CMD ["node"]' \
  "$node_tar" "$NODE_IMAGE" >/dev/null
say "images: $("$DOCKER" images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | tr '\n' ' ')"

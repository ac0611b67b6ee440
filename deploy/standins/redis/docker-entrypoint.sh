#!/usr/bin/env bash
# `redis-server ARGS` as the redis user, in /data; without a configuration file Redis would
# refuse clients from other containers (protected mode), so it is turned off as the official
# image does (the compose network is the boundary).
set -euo pipefail
if [ "${1:0:1}" = '-' ]; then set -- redis-server "$@"; fi
if [ "$1" = redis-server ]; then
  if [[ "${2:-}" != *.conf ]]; then set -- "$@" --protected-mode no; fi
  if [ "$(id -u)" = 0 ]; then
    chown -R redis:redis /data
    exec setpriv --reuid=redis --regid=redis --init-groups "$@"
  fi
fi
exec "$@"

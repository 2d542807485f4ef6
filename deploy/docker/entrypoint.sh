#!/bin/sh
# Container entrypoint for every dlock service.
#  1. For each variable NAME_FILE that is set, export NAME with that file's
#     content (the Secret Manager CSI volume mounts one file per secret; the
#     apps are configured by environment only).
#  2. With no arguments, start dist/apps/$APP/main.js; otherwise run the
#     arguments (migrations: `node node_modules/typeorm/cli.js migration:run ...`).
set -eu

for file_var in $(env | sed -n 's/^\([A-Z0-9_]*\)_FILE=.*/\1/p'); do
  path=$(printenv "${file_var}_FILE")
  if [ ! -r "$path" ]; then
    echo "dlock-entrypoint: ${file_var}_FILE=$path is not readable" >&2
    exit 1
  fi
  value=$(cat "$path")
  export "$file_var=$value"
  unset "${file_var}_FILE"
done

if [ "$#" -eq 0 ]; then
  : "${APP:?APP must name the service to start}"
  if [ ! -f "dist/apps/$APP/main.js" ]; then
    echo "dlock-entrypoint: unknown APP '$APP' (no dist/apps/$APP/main.js)" >&2
    exit 1
  fi
  exec node "dist/apps/$APP/main.js"
fi
exec "$@"

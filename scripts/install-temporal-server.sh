#!/usr/bin/env bash
# Builds the Temporal server and its SQL schema tool from the Go module proxy into .tools/bin
# (temporal-server, temporal-sql-tool), and copies the PostgreSQL schemas that ship inside the
# module to .tools/temporal-schema/postgresql, so that running needs no Go module cache. For the
# PostgreSQL-backed Temporal server (stack/temporal-server.ts). A second run skips all of it
# unless TEMPORAL_SERVER_VERSION changed.
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_SERVER_VERSION=v1.29.1
MODULE=go.temporal.io/server
STAMP=.tools/temporal-server.version
say() { printf 'install-temporal-server: %s\n' "$*"; }

if [ -x .tools/bin/temporal-server ] && [ -x .tools/bin/temporal-sql-tool ] && [ -d .tools/temporal-schema/postgresql ] \
  && [ "$(cat "$STAMP" 2>/dev/null)" = "$TEMPORAL_SERVER_VERSION" ]; then
  say "Temporal server $TEMPORAL_SERVER_VERSION already built in .tools/bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  say "Go is needed to build the Temporal server"
  exit 1
fi

say "building the Temporal server $TEMPORAL_SERVER_VERSION from the Go module proxy (several minutes, once)"
mkdir -p .tools/bin
# The commands build as `server` and `sql`: a private GOBIN keeps those generic names out of
# .tools/bin, and from /tmp no go.mod of any parent directory is in the way.
gobin=$(mktemp -d)
trap 'rm -rf "$gobin"' EXIT
(cd /tmp && CGO_ENABLED=0 GOBIN="$gobin" go install "$MODULE/cmd/server@$TEMPORAL_SERVER_VERSION" "$MODULE/cmd/tools/sql@$TEMPORAL_SERVER_VERSION")
mv "$gobin/server" .tools/bin/temporal-server
mv "$gobin/sql" .tools/bin/temporal-sql-tool

module_dir=$(cd /tmp && go mod download -json "$MODULE@$TEMPORAL_SERVER_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
rm -rf .tools/temporal-schema
mkdir -p .tools/temporal-schema
cp -R "$module_dir/schema/postgresql" .tools/temporal-schema/
# The module cache is read-only; the copy need not be.
chmod -R u+w .tools/temporal-schema
printf '%s' "$TEMPORAL_SERVER_VERSION" > "$STAMP"
say "built .tools/bin/temporal-server and .tools/bin/temporal-sql-tool; schemas in .tools/temporal-schema/postgresql"

#!/usr/bin/env bash
# Builds versitygw (Apache-2.0, an S3 gateway over a POSIX directory) from the Go module proxy
# into .tools/bin: the S3-compatible server that the artifact store's tests run against
# (stack/s3-server.ts). A second run skips the build; a `versitygw` on PATH is used as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSITYGW_VERSION=v1.8.0
say() { printf 'install-s3-server: %s\n' "$*"; }

if command -v versitygw >/dev/null 2>&1; then
  say "using versitygw on PATH: $(command -v versitygw)"
elif [ -x .tools/bin/versitygw ]; then
  say "versitygw already built in .tools/bin"
else
  if ! command -v go >/dev/null 2>&1; then
    say "Go is needed to build versitygw (or put a versitygw binary on PATH)"
    exit 1
  fi
  say "building versitygw $VERSITYGW_VERSION from the Go module proxy (a few minutes, once)"
  mkdir -p .tools/bin
  CGO_ENABLED=0 GOBIN="$PWD/.tools/bin" go install "github.com/versity/versitygw/cmd/versitygw@$VERSITYGW_VERSION"
fi

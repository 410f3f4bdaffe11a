#!/usr/bin/env bash
# Builds the OpenTelemetry Collector that the tracing test exports to
# (test/telemetry/tracing.test.ts): the OTLP receiver and the debug exporter only
# (scripts/otelcol-builder.yaml), by the Collector Builder from the Go module proxy, into
# .tools/bin/otelcol-rollout. A second run skips the build unless the builder version or the
# component list changed.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILDER_VERSION=v0.165.0
CONFIG=scripts/otelcol-builder.yaml
BIN=.tools/bin/otelcol-rollout
say() { printf 'install-otelcol: %s\n' "$*"; }

stamp="$BUILDER_VERSION $(sha256sum "$CONFIG" | cut -d' ' -f1)"
if [ -x "$BIN" ] && [ "$(cat "$BIN.version" 2>/dev/null)" = "$stamp" ]; then
  say "otelcol-rollout already built in .tools/bin"
  exit 0
fi
if ! command -v go >/dev/null 2>&1; then
  say "Go is needed to build the collector"
  exit 1
fi
say "building the collector with the Collector Builder $BUILDER_VERSION (several minutes, once)"
mkdir -p .tools/bin .tools/otelcol-build
GOFLAGS=-mod=mod GOBIN="$PWD/.tools/otelcol-build/bin" go install "go.opentelemetry.io/collector/cmd/builder@$BUILDER_VERSION"
GOFLAGS=-mod=mod .tools/otelcol-build/bin/builder --config "$CONFIG" >/dev/null
cp .tools/otelcol-build/otelcol-rollout "$BIN"
printf '%s' "$stamp" > "$BIN.version"
say "built $BIN"

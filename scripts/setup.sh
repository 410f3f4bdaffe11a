#!/usr/bin/env bash
# Installs everything agent-rollout needs on a fresh machine; a second run skips what is there.
#   - bubblewrap and gVisor (runsc) (apt) for the local sandboxes, git for task repositories,
#     PostgreSQL for the store and the PostgreSQL-backed Temporal server
#   - Chromium (apt), which the trajectory viewer's tests drive headless
#   - the OCI image tools (apt): mmdebstrap for the base image, skopeo and umoci to pull and
#     unpack task images, docker-registry and buildah for the image tests
#   - the base image (scripts/build-base-image.sh) in .tools/images/base
#   - npm packages (npm ci)
#   - the Temporal CLI, built from the Go module proxy into .tools/bin (no binary downloads),
#     unless a `temporal` is already on PATH
#   - versitygw (an S3-compatible server for the artifact store's tests), built the same way
#   - the Temporal server with its SQL schema tool, built into .tools/bin, for a Temporal
#     cluster on PostgreSQL
#   - the OpenTelemetry Collector (OTLP receiver, debug exporter) for the tracing test, built with
#     the Collector Builder into .tools/bin (scripts/install-otelcol.sh)
#   - the Python client (clients/python) with pytest, in .tools/venv
#   - vLLM for the CPU with torch and transformers (scripts/install-vllm.sh, with uv), in
#     .tools/vllm, for the real-engine tests
set -euo pipefail
cd "$(dirname "$0")/.."

TEMPORAL_CLI_VERSION=v1.5.1
say() { printf 'setup: %s\n' "$*"; }

missing_apt=()
command -v bwrap >/dev/null 2>&1 || missing_apt+=(bubblewrap)
command -v git >/dev/null 2>&1 || missing_apt+=(git)
command -v runsc >/dev/null 2>&1 || missing_apt+=(runsc)
# A C compiler: the gvisor provider builds its statx shim (sandbox/gvisor/statx-shim.c) on first use.
command -v cc >/dev/null 2>&1 || missing_apt+=(gcc)
command -v mmdebstrap >/dev/null 2>&1 || missing_apt+=(mmdebstrap)
command -v skopeo >/dev/null 2>&1 || missing_apt+=(skopeo)
command -v umoci >/dev/null 2>&1 || missing_apt+=(umoci)
command -v buildah >/dev/null 2>&1 || missing_apt+=(buildah)
command -v docker-registry >/dev/null 2>&1 || missing_apt+=(docker-registry)
command -v setfattr >/dev/null 2>&1 || missing_apt+=(attr)
# Headless Chromium: the trajectory viewer's tests drive it (puppeteer-core).
command -v chromium >/dev/null 2>&1 || missing_apt+=(chromium)
# PostgreSQL server binaries: the tests and bench:store run a private cluster (stack/postgres-cluster.ts).
[ -n "${PG_BIN:-}" ] || compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null || missing_apt+=(postgresql)
command -v python3 >/dev/null 2>&1 || missing_apt+=(python3)
python3 -c 'import ensurepip' >/dev/null 2>&1 || missing_apt+=(python3-venv)
# pytest for the system python3 that sandboxes run (rewards of pytest tasks).
/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing_apt+=(python3-pytest)
if [ ${#missing_apt[@]} -gt 0 ]; then
  say "installing ${missing_apt[*]} with apt"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing_apt[@]}" >/dev/null
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  say "Node 20 or newer is required (found $(node --version))"
  exit 1
fi

if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
else
  say "npm packages already installed"
fi

if command -v temporal >/dev/null 2>&1; then
  say "using temporal on PATH: $(command -v temporal)"
elif [ -x .tools/bin/temporal ]; then
  say "Temporal CLI already built in .tools/bin"
else
  if ! command -v go >/dev/null 2>&1; then
    say "Go is needed to build the Temporal CLI (or put a temporal binary on PATH)"
    exit 1
  fi
  say "building the Temporal CLI $TEMPORAL_CLI_VERSION from the Go module proxy (a few minutes, once)"
  mkdir -p .tools/bin
  CGO_ENABLED=0 GOBIN="$PWD/.tools/bin" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_CLI_VERSION"
fi
# The sandboxes' base root file system, in .tools/images/base.
bash scripts/build-base-image.sh
# The S3-compatible server (versitygw) that the artifact store's tests run against, in .tools/bin.
bash scripts/install-s3-server.sh
# The Temporal server and its SQL schema tool, for a Temporal cluster on PostgreSQL.
bash scripts/install-temporal-server.sh
# The OpenTelemetry Collector for the tracing test, in .tools/bin: a CPU-bound Go build, run while
# the downloads below go on.
bash scripts/install-otelcol.sh > .tools/otelcol-install.log 2>&1 &
otelcol_build=$!
# The black-box agents (OpenCode, Claude Code, mini-swe-agent), mounted read-only into sandboxes.
bash scripts/install-agents.sh
# The Python client and its tests (npm run test:python), in .tools/venv.
bash scripts/install-python-client.sh
# vLLM (CPU) for the real-engine tests (test/engines/), in .tools/vllm.
bash scripts/install-vllm.sh
if ! wait "$otelcol_build"; then
  cat .tools/otelcol-install.log
  exit 1
fi
cat .tools/otelcol-install.log
say "ready"

#!/usr/bin/env bash
# Installs the Python client (clients/python, editable, with its test extras) into .tools/venv,
# where `npm run test:python` finds pytest. A second run skips the install unless the venv was
# made for another checkout or clients/python/pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.tools/venv
say() { printf 'install-python-client: %s\n' "$*"; }

PYTHON=$(command -v python3)
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  say "Python 3.11 or newer is required (found $("$PYTHON" --version 2>&1))"
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"

stamp="$PWD $(sha256sum clients/python/pyproject.toml | cut -d' ' -f1)"
if [ -f "$VENV/.agent-rollout" ] && [ "$(cat "$VENV/.agent-rollout")" = "$stamp" ]; then
  say "agent_rollout already installed in $VENV"
else
  say "installing agent_rollout and its test extras into $VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check -e 'clients/python[test]'
  printf '%s' "$stamp" > "$VENV/.agent-rollout"
fi

#!/usr/bin/env bash
# Installs the LiteLLM proxy (pinned `litellm[proxy]` from PyPI) into its own venv .tools/litellm:
# the plain chat pass-through that `npm run bench:gateway` measures beside the gateway. Not part of
# setup.sh (a few hundred MB, needed only by the benchmark, which runs this when it is missing).
# A second run skips the install unless the pinned version changed.
set -euo pipefail
cd "$(dirname "$0")/.."

LITELLM_VERSION=1.108.7
VENV=.tools/litellm
say() { printf 'install-litellm: %s\n' "$*"; }

PYTHON=$(command -v python3)
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 9))'; then
  say "Python 3.9 or newer is required (found $("$PYTHON" --version 2>&1))"
  exit 1
fi
if [ -x "$VENV/bin/litellm" ] && [ "$(cat "$VENV/.agent-rollout" 2>/dev/null)" = "$LITELLM_VERSION" ]; then
  say "litellm $LITELLM_VERSION already installed in $VENV"
  exit 0
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
say "installing litellm[proxy]==$LITELLM_VERSION into $VENV (a few minutes, once)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$LITELLM_VERSION"
printf '%s' "$LITELLM_VERSION" > "$VENV/.agent-rollout"
say "installed litellm $("$VENV/bin/pip" show litellm | sed -n 's/^Version: //p') in $VENV"

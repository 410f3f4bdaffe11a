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
if [ "$(cat "$VENV/.agent-rollout" 2>/dev/null)" = "$LITELLM_VERSION" ] && "$VENV/bin/litellm" --version >/dev/null 2>&1; then
  say "litellm $LITELLM_VERSION already installed in $VENV"
  exit 0
fi
# A venv records its own path in its scripts: one that was moved or copied does not run, so it is made anew.
if ! "$VENV/bin/python" -c '' 2>/dev/null || ! "$VENV/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
say "installing litellm[proxy]==$LITELLM_VERSION into $VENV (a few minutes, once)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check "litellm[proxy]==$LITELLM_VERSION"
printf '%s' "$LITELLM_VERSION" > "$VENV/.agent-rollout"
say "installed litellm $("$VENV/bin/pip" show litellm | sed -n 's/^Version: //p') in $VENV"

#!/usr/bin/env bash
# Installs the black-box agent programs into project-local prefixes that sandboxes mount read-only
# at /opt/agents (see agents/presets/sidecar.ts); nothing goes into a task's files. A second run
# skips what is already at the pinned version.
#   .tools/agents/npm   OpenCode and Claude Code (npm, exact versions)
#   .tools/agents/venv  mini-swe-agent (PyPI), on the system Python so the venv works in a sandbox
set -euo pipefail
cd "$(dirname "$0")/.."

OPENCODE_VERSION=1.18.33
CLAUDE_CODE_VERSION=2.1.332
MINI_SWE_AGENT_VERSION=2.4.6

PREFIX=.tools/agents
say() { printf 'install-agents: %s\n' "$*"; }

# The venv must be built on a Python the sandbox can see (the host root, not a per-user shim).
PYTHON=/usr/bin/python3
[ -x "$PYTHON" ] || PYTHON=$(command -v python3)

npm_installed() { # package version
  local pkg_json="$PREFIX/npm/node_modules/$1/package.json"
  [ -f "$pkg_json" ] && [ "$(node -p "require('./$pkg_json').version")" = "$2" ]
}

mkdir -p "$PREFIX/npm"
for spec in "opencode-ai@$OPENCODE_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"; do
  pkg=${spec%@*}
  version=${spec##*@}
  if npm_installed "$pkg" "$version"; then
    say "$pkg $version already installed"
  else
    say "installing $pkg $version"
    # Their postinstall scripts only link the platform binary, an optional dependency that comes
    # from the registry like any package: nothing is downloaded from elsewhere.
    npm install --prefix "$PREFIX/npm" --no-audit --no-fund --loglevel=error -E "$spec"
  fi
done

if [ -x "$PREFIX/venv/bin/python" ] &&
  [ "$("$PREFIX/venv/bin/python" -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"))' 2>/dev/null)" = "$MINI_SWE_AGENT_VERSION" ]; then
  say "mini-swe-agent $MINI_SWE_AGENT_VERSION already installed"
else
  say "installing mini-swe-agent $MINI_SWE_AGENT_VERSION"
  rm -rf "$PREFIX/venv"
  "$PYTHON" -m venv "$PREFIX/venv"
  "$PREFIX/venv/bin/pip" install --quiet --disable-pip-version-check "mini-swe-agent==$MINI_SWE_AGENT_VERSION"
fi
say "ready"

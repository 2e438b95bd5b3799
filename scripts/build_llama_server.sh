#!/usr/bin/env bash
# Build llama.cpp's own C++ server (batched parallel slots, prefix reuse) for the embedded prior,
# from the llama.cpp vendored in the pinned, sha256-checked llama-cpp-python sdist, into the
# ignored build/llama.cpp/bin/llama-server. Idempotent and cached: a stamp file records the sdist
# hash and the cmake flags; when both match and the binary still runs, nothing is rebuilt.
# Cost: about 190 object files (ggml, llama, common, mtmd, server), measured in
# docs/benchmarks.md ("llama-server build").
# Only the server target, portable flags (GGML_NATIVE=OFF: the native build dies with SIGILL on
# AMX CPUs). Usage: bash scripts/build_llama_server.sh [--force]
set -euo pipefail
cd "$(dirname "$0")/.."
LLAMA_SDIST=llama_cpp_python-0.3.36.tar.gz
LLAMA_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_DIR=build/llama.cpp
BIN="$LLAMA_DIR/bin/llama-server"
STAMP="$LLAMA_DIR/bin/.stamp"
FLAGS="-DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF
 -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF
 -DLLAMA_USE_PREBUILT_UI=OFF -DBUILD_SHARED_LIBS=OFF"
WANT="$LLAMA_SHA256 $(echo $FLAGS)"
if [ "${1:-}" != "--force" ] && [ -x "$BIN" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] \
  && "$BIN" --version >/dev/null 2>&1; then
  echo "llama-server: up to date ($BIN)"
  exit 0
fi
start=$(date +%s)
mkdir -p "$LLAMA_DIR"
if ! echo "$LLAMA_SHA256  $LLAMA_DIR/$LLAMA_SDIST" | sha256sum -c --status 2>/dev/null; then
  rm -f "$LLAMA_DIR/$LLAMA_SDIST"
  .venv/bin/pip download -q --no-deps --no-binary :all: -d "$LLAMA_DIR" 'llama-cpp-python==0.3.36'
  echo "$LLAMA_SHA256  $LLAMA_DIR/$LLAMA_SDIST" | sha256sum -c --quiet
fi
# Resumable: the source is extracted once per verified sdist (a marker, written last, says the
# extraction completed) and cmake's build folder is kept until the binary is installed, so an
# interrupted build (a 2-core machine under load takes an hour) continues where it stopped.
if [ "$(cat "$LLAMA_DIR/src/.extracted" 2>/dev/null)" != "$LLAMA_SHA256" ]; then
  rm -rf "$LLAMA_DIR/src" "$LLAMA_DIR/cmake"
  mkdir -p "$LLAMA_DIR/src"
  tar xzf "$LLAMA_DIR/$LLAMA_SDIST" -C "$LLAMA_DIR/src" --strip-components=1
  echo "$LLAMA_SHA256" > "$LLAMA_DIR/src/.extracted"
fi
# shellcheck disable=SC2086  # FLAGS is a list of words
cmake -S "$LLAMA_DIR/src/vendor/llama.cpp" -B "$LLAMA_DIR/cmake" $FLAGS >/dev/null
cmake --build "$LLAMA_DIR/cmake" --target llama-server -j "${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
  >/dev/null
"$LLAMA_DIR/cmake/bin/llama-server" --version >/dev/null 2>&1  # runs on this CPU
mkdir -p "$LLAMA_DIR/bin"
cp "$LLAMA_DIR/cmake/bin/llama-server" "$BIN.tmp" && mv "$BIN.tmp" "$BIN"
echo "$WANT" > "$STAMP"
rm -rf "$LLAMA_DIR/cmake" "$LLAMA_DIR/src"  # 0.4 GB of objects; llama/ggml are linked in
# Wall time, and the CPU time of every compiler (children's user + system, from `times`): on a
# shared machine the CPU time says what a quiet one would take (CPU s / cores).
echo "llama-server: built in $(( $(date +%s) - start )) s wall; CPU (user sys): $(times | tail -1)"

#!/usr/bin/env bash
# A real OpenAI-compatible upstream for referee/tests/referee/llama_upstream.rs:
# llama.cpp's server from the `llama-cpp-python` package, and the `gguf`
# package that writes the tiny model the test serves. One environment,
# target/python-llama/venv (tests install nothing).
#
# llama-cpp-python ships no wheel on PyPI: pip builds llama.cpp from source,
# about an hour on 2 cores. The built wheel is kept in $DUEL_WHEELS (default
# /var/tmp/duel-wheels, outside the clone) and reused by every later run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/python-llama/venv"
wheels="${DUEL_WHEELS:-/var/tmp/duel-wheels}"
version="0.3.36"
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import llama_cpp, gguf, fastapi, uvicorn" 2>/dev/null; then
  exit 0
fi
python="${PYTHON:-python3}"
mkdir -p "$wheels" "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
if ! ls "$wheels"/llama_cpp_python-"$version"-*.whl >/dev/null 2>&1; then
  echo "python-llama: building llama-cpp-python $version from source (about an hour on 2 cores; once per machine)" >&2
  CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$venv/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
    --wheel-dir "$wheels" "llama-cpp-python==$version"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --find-links "$wheels" \
  "llama-cpp-python[server]==$version" gguf numpy
"$venv/bin/python" -c "import llama_cpp; print('python-llama: llama-cpp-python', llama_cpp.__version__)"

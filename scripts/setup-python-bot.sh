#!/usr/bin/env bash
# Installs grpcio and grpcio-tools into a virtual environment and generates the
# Python stubs of proto/duel/v1/*.proto for examples/python-endpoint-bot.
# Nothing generated is committed: the stubs land in the (git-ignored) folder
# examples/python-endpoint-bot/generated/.
#
# Usage: scripts/setup-python-bot.sh   (prints the venv's python path last)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bot="$root/examples/python-endpoint-bot"
venv="${DUEL_PYTHON_VENV:-$bot/.venv}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv" >&2
fi
if ! "$venv/bin/python" -c "import grpc, grpc_tools" 2>/dev/null; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$bot/requirements.txt" >&2
fi
out="$bot/generated"
mkdir -p "$out"
"$venv/bin/python" -m grpc_tools.protoc -I "$root/proto" \
  --python_out="$out" --grpc_python_out="$out" \
  "$root"/proto/duel/v1/*.proto >&2
# Make duel/ and duel/v1/ importable packages.
touch "$out/duel/__init__.py" "$out/duel/v1/__init__.py"
echo "$venv/bin/python"

#!/usr/bin/env bash
# The model-driven fighters' tests run real Python clients: the official
# `openai` package (as a bot's client) and the bot `referee new --lang python
# --llm` writes. They use one Python environment, made here (tests never
# install anything): target/python-llm/venv, named to the tests and the
# referee by DUEL_PYTHON_VENV. Idempotent and quiet when it is ready.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/python-llm/venv"
requirements="$root/referee/templates/python-llm/requirements.txt"
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
python="${PYTHON:-python3}"
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$requirements"
cp "$requirements" "$stamp"
"$venv/bin/python" -c "import openai, grpc, grpc_tools; print('python-llm: openai', openai.__version__, 'grpcio', grpc.__version__)"

#!/usr/bin/env bash
# The training environment's Python package (python/, `duel_env`) for its
# pytest suite, which scripts/test.sh runs: built from the rules crate with
# maturin and installed with its test extra into one environment,
# target/python-env/venv. Rebuilt when a source it is built from changes (a
# stamp of their digests); idempotent and quiet when it is up to date.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
venv="$root/target/python-env/venv"
stamp="$venv/.sources"
cd "$root"
# Everything the package is built from: the rules, the built-in fighters, the
# replay format (and the file helpers it writes keys with), the env's engine,
# the binding, the Python code and the lock file.
digest="$(find rules/Cargo.toml rules/src builtin/Cargo.toml builtin/src replays/Cargo.toml replays/src \
  files/Cargo.toml files/src env/Cargo.toml env/src python/Cargo.toml \
  python/pyproject.toml python/src python/duel_env Cargo.toml Cargo.lock \
  -type f -not -name '*.pyc' | LC_ALL=C sort | xargs sha256sum | sha256sum)"
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; then
  exit 0
fi
python="${PYTHON:-python3}"
mkdir -p "$(dirname "$venv")"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# maturin in the venv and no build isolation: pip does not fetch a fresh
# maturin for every rebuild, and cargo reuses $CARGO_TARGET_DIR's artifacts.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "maturin>=1.9,<2"
# pip rebuilds and reinstalls a local directory every time it is named. The
# build backend runs the venv's `maturin` command, so the venv's bin/ leads PATH.
PATH="$venv/bin:$PATH" "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-build-isolation \
  "./python[test]"
echo "$digest" > "$stamp"
"$venv/bin/python" -c "import duel_env, pettingzoo; print('python-env: duel_env built,', 'pettingzoo', pettingzoo.__version__)"

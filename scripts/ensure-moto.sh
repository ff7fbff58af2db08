#!/usr/bin/env bash
# Installs the moto S3-compatible server (PyPI) used by the S3 replay store test
# (replays/tests/stores.rs) when it is missing.
set -euo pipefail
if command -v moto_server >/dev/null 2>&1; then
    exit 0
fi
python3 -m pip install --quiet 'moto[server]'
command -v moto_server >/dev/null || python3 -c 'import moto.server' >/dev/null

#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium for the replay viewer test
# (replays viewer test in referee/tests/referee/viewer.rs) when it is missing.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
command -v chromium >/dev/null

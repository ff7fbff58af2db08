#!/usr/bin/env bash
# Builds app.py into a duel:bot@1.0.0 component with componentize-py.
# Usage: build.sh OUT.wasm
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="$here/../../../sandbox/wit"
out="${1:?usage: build.sh OUT.wasm}"
componentize-py -d "$wit" -w duel:bot/bot@1.0.0 componentize -p "$here" app -o "$out"

#!/usr/bin/env bash
# Builds app.py into a duel:bot@1.0.0 component with componentize-py: this
# example stays on the first world version, so the tests keep playing a
# component built against 1.0.0 (the Rust SDK builds against 1.1.0).
# Usage: build.sh OUT.wasm
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
wit="$here/../../../sandbox/wit/v1.0.0"
out="${1:?usage: build.sh OUT.wasm}"
componentize-py -d "$wit" -w duel:bot/bot@1.0.0 componentize -p "$here" app -o "$out"

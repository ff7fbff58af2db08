#!/usr/bin/env bash
# Fuzzes the replay parser for a bounded time (default 60 s) with cargo-fuzz.
# Kept for existing callers: the same as `scripts/fuzz.sh parse [SECONDS]`.
# Usage: scripts/fuzz-replays.sh [SECONDS]
set -euo pipefail
exec "$(dirname "$0")/fuzz.sh" parse "${1:-60}"

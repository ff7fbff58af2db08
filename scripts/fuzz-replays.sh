#!/usr/bin/env bash
# Fuzzes the replay parser for a bounded time (default 60 s) with cargo-fuzz.
# Needs the nightly toolchain; installs cargo-fuzz if missing.
# Usage: scripts/fuzz-replays.sh [SECONDS]
set -euo pipefail
seconds="${1:-60}"
cd "$(dirname "$0")/../replays/fuzz"
if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
mkdir -p corpus/parse
cp seeds/*.json corpus/parse/
cargo +nightly fuzz run parse corpus/parse -- -max_total_time="$seconds" -max_len=65536

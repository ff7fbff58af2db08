#!/usr/bin/env bash
# The whole test suite: the README's test command, and what .ci/run runs.
# Installs what the tests need first (each step is idempotent and quiet when
# there is nothing to do), then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."

for setup in scripts/setup/*.sh; do
  [ -e "$setup" ] || continue
  echo "== setup: $setup"
  bash "$setup"
done

if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast
else
  echo "cargo-nextest not found: running cargo test (slower)"
  cargo test --workspace --no-fail-fast
fi
# nextest does not run doctests.
cargo test --workspace --doc --quiet

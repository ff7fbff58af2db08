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

# Here every service a test names is installed above, so a missing one is a
# failure, not a skip (a plain `cargo test` elsewhere skips them and says so).
export DUEL_TEST_SERVICES=required

# Doctests first (nextest does not run them), so the last lines are nextest's
# summary of the whole suite.
# The suite runs with the feature set the Docker image ships (SHIPPED); the bot
# author's default set (no jemalloc, no S3) is built and its one difference,
# the S3 store's refusal, tested at the end.
SHIPPED=duel-referee/jemalloc,duel-referee/s3
cargo test --workspace --doc --quiet --features "$SHIPPED"
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --no-fail-fast --features "$SHIPPED"
else
  echo "cargo-nextest not found: running cargo test (slower)"
  cargo test --workspace --no-fail-fast --features "$SHIPPED"
fi
# The training env's Python package (python/), built and installed by
# scripts/setup/python-env.sh above: PettingZoo's own API and seed tests, its
# agreement with the rules crate and its errors, its replays and the policy bot
# played through the referee binary built above, about 20 s.
echo "== the training env: pytest python/tests"
target/python-env/venv/bin/python -m pytest -q -p no:cacheprovider python/tests
echo "== the default feature set: duel-replays without s3, the referee without jemalloc"
cargo test -p duel-replays --lib --no-default-features --features store --quiet
cargo check -p duel-referee --bins --quiet

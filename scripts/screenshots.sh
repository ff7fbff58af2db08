#!/usr/bin/env bash
# Retakes the documentation's pictures of the ladder site (docs/img/site-*.png):
# runs the site's two Chromium tests with DUEL_UPDATE_SCREENSHOTS=1, which
# copy each page's picture at 1366 and 390 px into docs/img once the page
# passes the spectator's checks (no overlapping or clipped text, no empty or
# unfilled page). Without the variable, as in CI, the tests write their
# pictures only under <target>/site-screenshots/. Review with `git diff --stat
# docs/img` and commit the ones you mean to keep.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/ensure-chromium.sh
export DUEL_TEST_SERVICES=required
export DUEL_UPDATE_SCREENSHOTS=1
# The transcript test starts the example endpoint bot (a binary of its own
# package); `ladder` is built by the test run.
FEATURES=duel-referee/jemalloc,duel-referee/s3
# Built with the test run's features, so the two builds share their artifacts.
cargo build -p duel-endpoint-bot -p duel-ladder-cli --features "$FEATURES" --bin endpoint-bot
FILTER='test(a_person_browses_a_running_season) | test(an_owner_reads_the_reasoning_and_everyone_after_the_season)'
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run -p duel-ladder-cli --features "$FEATURES" --no-fail-fast -E "$FILTER"
else
  cargo test -p duel-ladder-cli --features "$FEATURES" --test cli -- \
    a_person_browses_a_running_season an_owner_reads_the_reasoning_and_everyone_after_the_season
fi
ls -l docs/img/site-*.png

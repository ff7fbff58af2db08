#!/usr/bin/env bash
# Everything the public-replay tests need beyond Rust: Chromium for the viewer
# test and the moto S3 server for the S3 store test. Idempotent; CI calls it
# before `cargo nextest run --workspace`.
set -euo pipefail
here="$(dirname "$0")"
bash "$here/ensure-moto.sh"
bash "$here/ensure-chromium.sh"

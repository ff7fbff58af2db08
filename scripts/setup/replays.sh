#!/usr/bin/env bash
# The public-replay tests need Chromium (viewer) and moto (S3 store).
exec bash "$(dirname "$0")/../setup-replay-tests.sh"

#!/usr/bin/env bash
# The WASM tests play the example bots: build them (Rust and Python) into target/bots.
exec "$(dirname "$0")/../build-bots"

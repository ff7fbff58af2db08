#!/usr/bin/env bash
# Fuzzes one target, or all of them, for a bounded time each with cargo-fuzz, and
# prints each run's corpus size and executions (the figures docs/FUZZING.md records).
# Needs the nightly toolchain; installs cargo-fuzz if missing. Builds go to their
# own target dir (DUEL_FUZZ_TARGET_DIR, default /var/tmp/duel-fuzz-target), not the
# workspace's, because coverage instrumentation rebuilds every crate.
# Usage: scripts/fuzz.sh TARGET|all [SECONDS]
#   targets: parse, transcript (replays/fuzz); grpc_convert, bot_spec,
#   ladder_requests, models_file, openai_request, token_count, forwarded_for, proxy_header, cursors (fuzz/)
set -euo pipefail

usage() {
    echo "usage: $0 parse|transcript|grpc_convert|bot_spec|ladder_requests|models_file|openai_request|token_count|forwarded_for|proxy_header|cursors|all [SECONDS]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
target="$1"
seconds="${2:-60}"
case "$seconds" in
    '' | *[!0-9]*) usage ;;
esac
root="$(cd "$(dirname "$0")/.." && pwd)"
export CARGO_TARGET_DIR="${DUEL_FUZZ_TARGET_DIR:-/var/tmp/duel-fuzz-target}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    cargo install cargo-fuzz --locked
fi
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal

# The folder (holding the cargo-fuzz crate) of each target.
folder_of() {
    case "$1" in
        parse | transcript) echo "$root/replays/fuzz" ;;
        grpc_convert | bot_spec | ladder_requests | models_file | openai_request | token_count | forwarded_for | proxy_header | cursors) echo "$root/fuzz" ;;
        *) usage ;;
    esac
}

run_one() {
    local name="$1" folder corpus log
    folder="$(folder_of "$name")"
    corpus="$folder/corpus/$name"
    mkdir -p "$corpus"
    # Seeds: replays/fuzz/seeds/*.json for parse, <folder>/seeds/<target>/* for the others.
    if [ "$name" = parse ]; then
        cp "$folder"/seeds/*.json "$corpus/"
    elif [ -d "$folder/seeds/$name" ]; then
        cp "$folder/seeds/$name"/* "$corpus/" 2>/dev/null || true
    fi
    log="$(mktemp)"
    # No AddressSanitizer: the code under test forbids `unsafe`, and the C
    # libraries below it (SQLite, zstd, aws-lc) are not what is being fuzzed.
    local status
    set +e
    (cd "$folder" && cargo +nightly fuzz run --sanitizer none "$name" "$corpus" -- \
        -max_total_time="$seconds" -max_len=65536 -print_final_stats=1) 2>&1 | tee "$log"
    status="${PIPESTATUS[0]}"
    set -e
    local executions
    executions="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -n 1)"
    rm -f "$log"
    echo "fuzz $name: ${seconds} s, ${executions:-?} executions, corpus $(find "$corpus" -type f | wc -l) files"
    return "$status"
}

if [ "$target" = all ]; then
    # Every target runs even when one fails (a crash is saved under its
    # artifacts/ folder); the exit status says whether any failed.
    failed=0
    for name in parse transcript grpc_convert bot_spec ladder_requests models_file openai_request token_count forwarded_for proxy_header cursors; do
        run_one "$name" || failed=1
    done
    exit "$failed"
else
    folder_of "$target" >/dev/null
    run_one "$target"
fi

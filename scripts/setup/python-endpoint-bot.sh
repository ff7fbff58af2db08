#!/usr/bin/env bash
# The example Python endpoint bot's test (examples/endpoint-bot/tests/plays.rs)
# plays it from its venv: make the venv (grpcio and grpcio-tools from PyPI) and
# its stubs here, so the test itself never installs anything.
exec bash "$(dirname "$0")/../setup-python-bot.sh" >/dev/null

#!/usr/bin/env bash
# The ladder tests run against PostgreSQL on 127.0.0.1:5432: start it if stopped.
exec bash "$(dirname "$0")/../ensure-postgres.sh"

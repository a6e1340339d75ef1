#!/usr/bin/env bash
# Runs the eventsource client check (scripts/eventsource-client) against a
# real `platformctl serve` on the embedded SQLite database: the pinned npm
# package is installed from the lock file, the binary is built here.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(mktemp -d)/platformctl
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/platformctl
cd scripts/eventsource-client
npm ci --no-audit --no-fund --loglevel=error
node check.mjs "$bin"

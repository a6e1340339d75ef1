#!/usr/bin/env bash
# Static analysis at a pinned version: dead code, deprecated APIs, ineffective
# assignments and the rest of staticcheck's default checks. Errors that are
# deliberately ignored (writes of CLI output) are ignored in one place,
# internal/cli/output.go, so no check needs silencing.
set -euo pipefail
cd "$(dirname "$0")/.."
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

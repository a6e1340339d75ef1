#!/usr/bin/env bash
# release-check.sh — validates .goreleaser.yaml with the pinned GoReleaser,
# so a broken release configuration fails CI rather than the tag.
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=${GORELEASER_VERSION:-v2.18.2}
go run "github.com/goreleaser/goreleaser/v2@${GORELEASER_VERSION}" check

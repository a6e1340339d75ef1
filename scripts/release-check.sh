#!/usr/bin/env bash
# release-check.sh — validates .goreleaser.yaml with the pinned GoReleaser,
# so a broken release configuration fails CI rather than the tag.
#
# GoReleaser is built from source with `go install` through the Go module
# proxy, once per version: the binary is kept beside Go's build cache
# ($GOCACHE/platformctl-tools), so later runs start at once. A module that
# cannot be downloaded, a failed build or a configuration GoReleaser
# rejects all fail the check; nothing is skipped.
#
# The pin is v2.16.0, the newest release whose module graph our build
# machines can download: v2.17.0 and later need go.digitalxero.dev/go-msix,
# which the Go module proxy they use refuses (403). v2.16.0 supports
# everything .goreleaser.yaml uses.
set -euo pipefail
cd "$(dirname "$0")/.."
GORELEASER_VERSION=${GORELEASER_VERSION:-v2.16.0}
tools="$(go env GOCACHE)/platformctl-tools/goreleaser-${GORELEASER_VERSION}"
bin="$tools/goreleaser"
if [ ! -x "$bin" ]; then
	echo "release-check: building goreleaser ${GORELEASER_VERSION} (once; kept in $tools)" >&2
	mkdir -p "$tools"
	# Outside this module, so its go.mod and GOFLAGS do not apply.
	(cd "$tools" && GOFLAGS=-mod=mod GOBIN="$tools/bin.tmp" go install "github.com/goreleaser/goreleaser/v2@${GORELEASER_VERSION}")
	mv "$tools/bin.tmp/goreleaser" "$bin"
	rmdir "$tools/bin.tmp"
fi
"$bin" check .goreleaser.yaml

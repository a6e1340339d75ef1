#!/usr/bin/env bash
# api-client.sh — the shared contract, proven from the client side.
#
#   scripts/api-client.sh
#
# Installs the pinned npm packages of scripts/api-client (npm ci), builds
# platformctl and starts `serve` on a port the kernel picks with a fresh
# SQLite database, then, against that server:
#
#   1. lints the served /api/openapi.json with Redocly CLI (redocly.yaml:
#      the strict recommended rules; any finding fails),
#   2. generates TypeScript types from it (openapi-typescript) and compiles
#      the client test with tsc --noEmit under strict,
#   3. runs the test: the unmodified better-auth client signs up and in,
#      then bootstrap, decks, social actions and lobbies, with every
#      response validated by Ajv against the JSON Schemas of /api/schemas.
#
# Needs Node.js 20.19 or later and npm. PLATFORM_* variables of the calling
# environment are ignored.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

# The web client's origin: state-changing requests must name a trusted one.
origin=http://localhost:5173

echo "api-client: [$((SECONDS - start))s] npm ci" >&2
# npm ci starts from nothing every time; skip it when node_modules was
# installed from this very lockfile.
if ! cmp -s scripts/api-client/package-lock.json scripts/api-client/node_modules/.installed-lock.json; then
	(cd scripts/api-client && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
		cp package-lock.json node_modules/.installed-lock.json)
fi

echo "api-client: [$((SECONDS - start))s] building and starting platformctl serve" >&2
go build -o "$work/platformctl" ./cmd/platformctl
unset $(compgen -e | grep '^PLATFORM_' || true)
log="$work/serve.log"
: >"$log"
PLATFORM_TRUSTED_ORIGINS=$origin "$work/platformctl" serve --data-dir "$work/data" --addr 127.0.0.1:0 >"$log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 1 300); do
	addr=$(sed -n 's/.* msg=serving addr=\([^ ]*\).*/\1/p' "$log")
	[ -n "$addr" ] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		cat "$log" >&2
		echo "api-client: serve exited before it was ready" >&2
		exit 1
	fi
	sleep 0.1
done
if [ -z "$addr" ]; then
	cat "$log" >&2
	echo "api-client: serve did not start within 30s" >&2
	exit 1
fi
base="http://$addr"

cd scripts/api-client
mkdir -p generated
curl -fsS "$base/api/openapi.json" -o generated/openapi.json

echo "api-client: [$((SECONDS - start))s] redocly lint" >&2
lint=0
npx --no-install redocly lint generated/openapi.json --config redocly.yaml --format=stylish >"$work/lint.log" 2>&1 || lint=$?
grep -Ev '^ *[║╔╚]' "$work/lint.log" >&2 || true # minus Redocly's banner about Node.js versions
if [ "$lint" != 0 ]; then
	echo "api-client: the OpenAPI document has lint errors" >&2
	exit 1
fi

echo "api-client: [$((SECONDS - start))s] openapi-typescript and tsc --noEmit (strict)" >&2
npx --no-install openapi-typescript generated/openapi.json -o generated/api.d.ts --silent >&2
npx --no-install tsc --noEmit -p .

echo "api-client: [$((SECONDS - start))s] client test against $base" >&2
if ! npx --no-install tsx client.ts "$base" "$origin"; then
	echo "api-client: the server's log:" >&2
	tail -n 50 "$log" >&2
	exit 1
fi
echo "api-client: [$((SECONDS - start))s] done in $((SECONDS - start))s" >&2

#!/usr/bin/env bash
# two-factor-client.sh — the official better-auth twoFactorClient against a
# real `platformctl serve` (fresh SQLite database, port picked by the
# kernel): scripts/better-auth-client/two-factor.mjs. The per-account
# attempt budget is raised because the check makes more than ten
# second-factor attempts on one account by design.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/platformctl" ./cmd/platformctl
unset $(compgen -e | grep '^PLATFORM_' || true)
origin=http://localhost:5173 # the web client's origin, trusted below
PLATFORM_TRUSTED_ORIGINS=$origin PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT=100/15m "$work/platformctl" serve --data-dir "$work/data" --addr 127.0.0.1:0 >"$work/serve.log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 1 300); do
	addr=$(sed -n 's/.* msg=serving addr=\([^ ]*\).*/\1/p' "$work/serve.log")
	[ -n "$addr" ] && break
	kill -0 "$pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$addr" ]; then
	cat "$work/serve.log" >&2
	echo "two-factor-client: serve did not start" >&2
	exit 1
fi
cd scripts/better-auth-client
npm ci --no-audit --no-fund --loglevel=error >/dev/null
if ! node two-factor.mjs "http://$addr" "$origin"; then
	tail -n 30 "$work/serve.log" >&2
	exit 1
fi

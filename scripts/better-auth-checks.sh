#!/usr/bin/env bash
# better-auth-checks.sh — the official better-auth client against a real
# `platformctl serve` (fresh SQLite database, port picked by the kernel),
# the checks of scripts/better-auth-client one after the other:
#   check.mjs        sign-up, sign-in, sessions and both realms
#   delete-user.mjs  deleteUser with the password and with a fresh session
#   two-factor.mjs   twoFactorClient, codes computed from the otpauth URI
# The per-account attempt budget is raised because the two-factor check
# makes more than ten second-factor attempts on one account by design.
# (Provider sign-in has its own script, better-auth-social.sh, which
# starts an OpenID Provider.)
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
	echo "better-auth-checks: serve did not start" >&2
	exit 1
fi
cd scripts/better-auth-client
npm ci --no-audit --no-fund --loglevel=error >/dev/null
for check in check.mjs delete-user.mjs two-factor.mjs; do
	echo "better-auth-checks: $check" >&2
	if ! node "$check" "http://$addr" "$origin"; then
		tail -n 30 "$work/serve.log" >&2
		exit 1
	fi
done

#!/usr/bin/env bash
# better-auth-social.sh — provider and guest sign-in through the official
# better-auth client, against a real serve and a real OpenID Provider.
#
#   scripts/better-auth-social.sh
#
# Starts the zitadel/oidc example OpenID Provider (the module version in
# go.mod) and platformctl serve with it configured as provider "op", both
# on loopback ports, then runs scripts/better-auth-client/social.mjs:
# anonymousClient's guest, signIn.social's redirect step, the provider's
# login form and the callback that upgrades the guest. Needs Node.js 20 and
# npm. PLATFORM_* variables of the calling environment are ignored.
set -euo pipefail
cd "$(dirname "$0")/.."

start=$SECONDS
work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		if kill -0 "$pid" 2>/dev/null; then
			kill -TERM "$pid" 2>/dev/null || true
			wait "$pid" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
}
trap cleanup EXIT

freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

echo "better-auth-social: [$((SECONDS - start))s] npm ci" >&2
if ! cmp -s scripts/better-auth-client/package-lock.json scripts/better-auth-client/node_modules/.installed-lock.json; then
	(cd scripts/better-auth-client && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
		cp package-lock.json node_modules/.installed-lock.json)
fi

echo "better-auth-social: [$((SECONDS - start))s] building platformctl and the provider" >&2
go build -o "$work/platformctl" ./cmd/platformctl
go build -o "$work/op" github.com/zitadel/oidc/v3/example/server

op_port=$(freeport)
serve_port=$(freeport)
base="http://127.0.0.1:$serve_port"
cat >"$work/providers.yaml" <<YAML
providers:
  - id: op
    kind: oidc
    issuer: "http://localhost:$op_port/"
    clientId: web
    clientSecretEnv: OP_CLIENT_SECRET
YAML

unset $(compgen -e | grep '^PLATFORM_' || true)
PORT=$op_port REDIRECT_URI="$base/api/auth/player/callback/op" "$work/op" >"$work/op.log" 2>&1 &
pids+=($!)
OP_CLIENT_SECRET=secret PLATFORM_AUTH_PROVIDERS_FILE="$work/providers.yaml" \
	"$work/platformctl" serve --data-dir "$work/data" --addr "127.0.0.1:$serve_port" >"$work/serve.log" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 1 300); do
	if curl -fsS "$base/api/health" >/dev/null 2>&1 && curl -fsS "http://localhost:$op_port/.well-known/openid-configuration" >/dev/null 2>&1; then
		ready=1
		break
	fi
	sleep 0.1
done
if [ -z "$ready" ]; then
	cat "$work/serve.log" "$work/op.log" >&2
	echo "better-auth-social: serve or the provider did not start within 30s" >&2
	exit 1
fi

echo "better-auth-social: [$((SECONDS - start))s] running social.mjs" >&2
if ! node scripts/better-auth-client/social.mjs "$base"; then
	cat "$work/serve.log" >&2
	exit 1
fi
echo "better-auth-social: [$((SECONDS - start))s] done" >&2

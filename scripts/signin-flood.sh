#!/usr/bin/env bash
# Sign-in under attack (docs/replicas.md): builds platformctl and
# scripts/signinflood, starts serve on a fresh PostgreSQL database that
# trusts 127.0.0.1 as a proxy, and runs the wrong-password flood, then the
# 1,300-address key flood. PGHOST/PGPORT/PGUSER as for bench.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
work=$(mktemp -d)
db="signin_flood_$$"
port=$((20000 + RANDOM % 20000))
cleanup() {
	[ -n "${pid:-}" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" || true
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/platformctl" ./cmd/platformctl
go build -o "$work/signinflood" ./scripts/signinflood
psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "CREATE DATABASE $db"
export PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable" PLATFORM_MIGRATE=true \
	PLATFORM_TRUSTED_PROXIES=127.0.0.1/32 PLATFORM_ADDR=127.0.0.1:$port PLATFORM_BASE_URL=http://127.0.0.1:$port \
	PLATFORM_SECRET=signin-flood-secret-0123456789abcdef0123 PLATFORM_LOG_LEVEL=error PLATFORM_DATA_DIR=$work
"$work/platformctl" serve >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.1; done
"$work/signinflood" -base "http://127.0.0.1:$port" -pid "$pid" -mode flood
"$work/signinflood" -base "http://127.0.0.1:$port" -pid "$pid" -mode keys

#!/usr/bin/env bash
# What idle event streams cost (docs/events.md): builds platformctl and
# scripts/eventload, starts one serve, and in alternating rounds measures the
# hot routes (get-session, player bootstrap, social state; 32 connections)
# without and then with N idle streams open, holding them HOLD in the last
# round to check heartbeats and read serve's RSS. MODE: sqlite (default) or
# pg (a fresh PostgreSQL database). N (10000), HOLD (45s), ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-sqlite}
case $mode in sqlite | pg) ;; *) echo "usage: $0 [sqlite|pg]" >&2; exit 2 ;; esac
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
n=${N:-10000}
# Each stream is one connection in serve and one in eventload (each process
# has its own limit), plus the hot routes' connections and the database's.
ulimit -n $((n + 1024)) || { echo "events-idle: cannot raise the open-file limit for $n streams" >&2; exit 1; }
work=$(mktemp -d)
db="events_idle_$$"
port=$((20000 + RANDOM % 20000))
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	[ "$mode" = pg ] && psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/platformctl" ./cmd/platformctl
go build -o "$work/eventload" ./scripts/eventload
export PLATFORM_SECRET=eventload-secret-0123456789abcdef0123456789 PLATFORM_LOG_LEVEL=warn PLATFORM_MIGRATE=true \
	PLATFORM_DATA_DIR=$work/data PLATFORM_EVENTS_MAX_STREAMS=$((n + 1000))
if [ "$mode" = pg ]; then
	psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "CREATE DATABASE $db"
	export PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
fi
PLATFORM_ADDR=127.0.0.1:$port PLATFORM_BASE_URL=http://127.0.0.1:$port "$work/platformctl" serve >"$work/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$port/api/health" >/dev/null && break; sleep 0.1; done
curl -fs "http://127.0.0.1:$port/api/health" >/dev/null || { echo "events-idle: serve did not start" >&2; cat "$work/serve.log" >&2; exit 1; }
"$work/eventload" idle -base "http://127.0.0.1:$port" -pid "$pid" -n "$n" -hold "${HOLD:-45s}" -rounds "${ROUNDS:-3}"

#!/usr/bin/env bash
# Event delivery latency (docs/events.md): builds platformctl and
# scripts/eventload, then measures the time from a lobby action's response
# to the event at another player's stream, at 200 actions/s over 100
# lobbies. MODE: sqlite (one serve), pg1 (one serve on PostgreSQL) or pg2
# (streams on a second serve, so every event crosses LISTEN/NOTIFY).
# DUR sets the measured time (30s).
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-sqlite}
case $mode in sqlite | pg1 | pg2) ;; *) echo "usage: $0 sqlite|pg1|pg2" >&2; exit 2 ;; esac
PGHOST=${PGHOST:-127.0.0.1} PGPORT=${PGPORT:-5432} PGUSER=${PGUSER:-postgres}
work=$(mktemp -d)
db="events_latency_$$"
p1=$((20000 + RANDOM % 20000)); p2=$((p1 + 7))
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
	[ "$mode" != sqlite ] && psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"
	rm -rf "$work"
}
trap cleanup EXIT
go build -o "$work/platformctl" ./cmd/platformctl
go build -o "$work/eventload" ./scripts/eventload
export PLATFORM_SECRET=eventload-secret-0123456789abcdef0123456789 PLATFORM_LOG_LEVEL=warn PLATFORM_MIGRATE=true \
	PLATFORM_RATE_LIMIT_LOGIN_IP=off
if [ "$mode" != sqlite ]; then
	psql -q -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -c "CREATE DATABASE $db"
	export PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
fi
start() { # data dir, port
	PLATFORM_DATA_DIR=$1 PLATFORM_ADDR=127.0.0.1:$2 PLATFORM_BASE_URL=http://127.0.0.1:$2 \
		"$work/platformctl" serve >"$1.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$2/api/health" >/dev/null && return; sleep 0.1; done
	echo "serve on port $2 did not start" >&2; exit 1
}
start "$work/a" "$p1"
stream=http://127.0.0.1:$p1
if [ "$mode" = pg2 ]; then
	start "$work/b" "$p2"
	stream=http://127.0.0.1:$p2
fi
PLATFORM_DATA_DIR=$work/a "$work/eventload" latency -base "http://127.0.0.1:$p1" -stream-base "$stream" \
	-lobbies 100 -rate 200 -d "${DUR:-30s}"

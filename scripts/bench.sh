#!/usr/bin/env bash
# bench.sh — the repeatable performance measurement of platformctl.
#
#   scripts/bench.sh            Go benchmarks, then every load scenario of
#                               scripts/bench.json against `serve` on a fresh
#                               PostgreSQL database; checks the issues' targets
#   scripts/bench.sh soak [6m]  the plan's mixed load for a long run: after the
#                               warm-up ($BENCH_SOAK_WARMUP, 2m) neither RSS nor
#                               the Go heap nor the goroutines may grow, and no
#                               request may fail
#   scripts/bench.sh side [PATH…] the request pipeline's overhead: `serve` against
#                               a bare net/http handler serving the same bytes,
#                               in alternating rounds ($BENCH_ROUNDS, 3), by
#                               requests/s and by CPU time per request, for
#                               each PATH in turn (default the queues; `public`
#                               is every public GET route); fails if any is
#                               below $BENCH_MIN_RATIO (0.80); BENCH_SESSION=1
#                               sends a fresh player's session cookie (for
#                               /api/auth/player/get-session and player routes)
#
# It builds the binary, creates a fresh database on the local PostgreSQL
# server, starts `serve --migrate` on it with mail going to the load
# generator's SMTP sink, prepares users and sessions through the API, runs
# the load over loopback and writes a table (stdout) and JSON to
# $BENCH_OUT. On exit it stops the server and drops the database.
#
# Settings (environment):
#   BENCH_CONNECTIONS  connections per scenario             (32)
#   BENCH_DURATION     measured time per scenario           (10s)
#   BENCH_WARMUP       unmeasured warm-up per scenario      (3s)
#   BENCH_COUNT        runs of each Go benchmark (median)   (5)
#   BENCH_GOBENCH      set to 0 to skip the Go benchmarks
#   BENCH_ONLY         comma-separated scenario names to run (default all)
#   BENCH_OUT          directory for the results            (./bench-results)
#   BENCH_BINARY       a platformctl binary to measure instead of building
#                      this checkout's, e.g. an earlier version's, to compare
#                      the two in alternating runs on one machine
#   PGHOST PGPORT PGUSER  the PostgreSQL server             (127.0.0.1 5432 postgres)
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-bench}
case "$mode" in
bench) ;;
soak) soak_duration=${2:-6m} ;;
side)
	shift
	side_paths=("$@")
	[ ${#side_paths[@]} -gt 0 ] || side_paths=(/api/matchmaking/queues)
	if [ "${side_paths[*]}" = public ]; then
		# Every GET route that needs no session and changes nothing.
		side_paths=(/api /api/health /api/meta /api/openapi.json /api/schemas /api/schemas/Health
			/api/content/catalog /api/matchmaking/queues /api/auth/player/ok)
	fi
	;;
*) echo "usage: $0 [bench | soak [DURATION] | side [PATH… | public]]" >&2; exit 2 ;;
esac

PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
PGUSER=${PGUSER:-postgres}
export PGHOST PGPORT PGUSER
connections=${BENCH_CONNECTIONS:-32}
duration=${BENCH_DURATION:-10s}
warmup=${BENCH_WARMUP:-3s}
count=${BENCH_COUNT:-5}
out=${BENCH_OUT:-bench-results}
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "bench: $*" >&2; }

work=$(mktemp -d)
db="platformctl_bench_$$"
serve_pid=""
cleanup() {
	status=$?
	if [ -n "$serve_pid" ] && kill -0 "$serve_pid" 2>/dev/null; then
		kill -TERM "$serve_pid" 2>/dev/null || true
		for _ in $(seq 1 40); do kill -0 "$serve_pid" 2>/dev/null || break; sleep 0.5; done
		kill -KILL "$serve_pid" 2>/dev/null || true
	fi
	psql -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
	[ -f "$work/serve.log" ] && cp "$work/serve.log" "$out/serve-$mode.log"
	rm -rf "$work"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# free_port prints a loopback TCP port nothing listens on.
free_port() {
	local port
	while :; do
		port=$((20000 + RANDOM % 30000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
}

pg_isready -q || { log "PostgreSQL is not answering on $PGHOST:$PGPORT"; exit 1; }

if [ -n "${BENCH_BINARY:-}" ]; then
	log "measuring $BENCH_BINARY; building the load generator"
	cp "$BENCH_BINARY" "$work/platformctl"
else
	log "building"
	go build -trimpath -o "$work/platformctl" ./cmd/platformctl
fi
go build -trimpath -o "$work/loadgen" ./scripts/loadgen

gobench_args=()
if [ "$mode" = bench ] && [ "${BENCH_GOBENCH:-1}" != 0 ]; then
	# Before the server starts, so nothing else of ours competes for the CPUs.
	log "Go benchmarks (-count $count)"
	go test -run '^$' -bench . -benchmem -count "$count" -timeout 10m \
		$(go list ./internal/... | grep -E '/(gamemap|player|auth|account|profile)$') | tee "$work/gobench.txt" >&2
	cp "$work/gobench.txt" "$out/gobench.txt"
	gobench_args=(-gobench "$work/gobench.txt")
fi

psql -q -d postgres -c "CREATE DATABASE $db"
http_port=$(free_port)
smtp_port=$(free_port)
metrics_port=$(free_port)
base="http://127.0.0.1:$http_port"

# The production configuration, except that the per-IP and per-account
# rate limits are off: every virtual user comes from 127.0.0.1 and signs in
# over and over, which is exactly what the limits exist to stop.
export PLATFORM_ENV=production
export PLATFORM_ADDR="127.0.0.1:$http_port"
export PLATFORM_BASE_URL="$base"
export PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
export PLATFORM_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export PLATFORM_SMTP_URL="smtp://127.0.0.1:$smtp_port?tls=none"
export PLATFORM_METRICS_ADDR="127.0.0.1:$metrics_port"
export PLATFORM_LOG_FORMAT=json
export PLATFORM_DATA_DIR="$work/data"
export PLATFORM_RATE_LIMIT_LOGIN_IP=off PLATFORM_RATE_LIMIT_LOGIN_ACCOUNT=off
export PLATFORM_RATE_LIMIT_MAIL_IP=off PLATFORM_RATE_LIMIT_MAIL_ACCOUNT=off
export PLATFORM_PROFILE_RATE_LIMIT=0
# Every virtual user hashes from 127.0.0.1: allow the most hashes in flight
# per client address (the global bound on waiting hashes still applies).
export PLATFORM_HASH_PER_CLIENT=16

log "migrating and seeding the content (as an operator does before serving)"
"$work/platformctl" migrate up >/dev/null
"$work/platformctl" seed fixtures --skip-world >/dev/null

log "starting serve on $base (database $db)"
"$work/platformctl" serve --migrate >"$work/serve.log" 2>&1 &
serve_pid=$!

label="PostgreSQL $(psql -Atq -d postgres -c 'SHOW server_version') on $PGHOST:$PGPORT; server, load generator and database share the machine"
common=(-plan scripts/bench.json -base "$base" -c "$connections" -smtp "127.0.0.1:$smtp_port"
	-pid "$serve_pid" -pg-url "$PLATFORM_DATABASE_URL" -label "$label")

if [ "$mode" = side ]; then
	side_session=()
	[ "${BENCH_SESSION:-0}" = 1 ] && side_session=(-session)
	: >"$out/side.txt"
	failed=0
	for side_path in "${side_paths[@]}"; do
		timeout 15m "$work/loadgen" side -base "$base" -pid "$serve_pid" -path "$side_path" -c "$connections" -d "${BENCH_DURATION:-5s}" \
			"${side_session[@]}" \
			-warmup "${BENCH_WARMUP:-2s}" -rounds "${BENCH_ROUNDS:-3}" -min "${BENCH_MIN_RATIO:-0.80}" \
			-json "$out/side$(echo "$side_path" | tr -c 'A-Za-z0-9\n' -).json" | tee -a "$out/side.txt" || failed=1
	done
	log "results in $out/side.txt and $out/side-*.json"
	exit $failed
elif [ "$mode" = bench ]; then
	timeout 15m "$work/loadgen" run "${common[@]}" -d "$duration" -warmup "$warmup" -only "${BENCH_ONLY:-}" \
		"${gobench_args[@]}" -json "$out/bench.json" | tee "$out/bench.txt"
	log "results in $out/bench.txt and $out/bench.json"
else
	timeout 2h "$work/loadgen" soak "${common[@]}" -d "$soak_duration" -warmup "${BENCH_SOAK_WARMUP:-2m}" \
		-interval "${BENCH_SOAK_INTERVAL:-10s}" -metrics "http://127.0.0.1:$metrics_port/metrics" \
		-json "$out/soak.json" | tee "$out/soak.txt"
	log "results in $out/soak.txt and $out/soak.json"
fi

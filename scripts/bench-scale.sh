#!/usr/bin/env bash
# bench-scale.sh — the scale benchmark: the hot routes on a nearly empty
# database and on a production-sized one, in alternating rounds.
#
#   scripts/bench-scale.sh
#
# It builds two PostgreSQL databases with scripts/scaledata (set-based SQL:
# players with profiles and starter decks, three sessions each of which 60%
# expired, about two social edges per player and a heavy social player,
# open and closed lobbies, sent mail with its attempts, audit rows), runs
# VACUUM ANALYZE, starts `serve` on each and runs scripts/bench-scale.json
# against them in alternating rounds (small, large, large, small, ...).
# Requests carry the cookies of $BENCH_SCALE_SPREAD distinct players
# ("spread"), of 32 ("hot") or of the heavy player. It prints per scenario
# the medians of req/s, p50/p99, server and database CPU per request and
# the large/small ratio, then the metrics scrape and admin bootstrap times
# and the heavy player's social response size, and writes everything to
# $BENCH_OUT. The databases are dropped on exit unless BENCH_SCALE_KEEP=1.
#
# Settings (environment):
#   BENCH_SCALE_PLAYERS  players in the large database        (1000000)
#   BENCH_SCALE_SMALL    players in the small database        (25000)
#   BENCH_SCALE_SPREAD   distinct players in the cookie file  (20000)
#   BENCH_ROUNDS         rounds per database                  (3)
#   BENCH_CONNECTIONS    connections per scenario             (32)
#   BENCH_DURATION       measured time per scenario           (5s)
#   BENCH_WARMUP         unmeasured warm-up per scenario      (2s)
#   BENCH_ONLY           comma-separated scenario names       (all)
#   BENCH_OUT            directory for the results            (./bench-results/scale)
#   BENCH_SCALE_DB       prefix of the databases' names        (pc_scale: pc_scale_small, pc_scale_large)
#   BENCH_SCALE_KEEP     1 keeps the databases
#   BENCH_SCALE_REUSE    1 reuses them (and $BENCH_OUT/secret, cookies) instead of building
#   PGHOST PGPORT PGUSER the PostgreSQL server (a superuser)  (127.0.0.1 5432 postgres)
set -euo pipefail
cd "$(dirname "$0")/.."

PGHOST=${PGHOST:-127.0.0.1}
PGPORT=${PGPORT:-5432}
PGUSER=${PGUSER:-postgres}
export PGHOST PGPORT PGUSER
large_players=${BENCH_SCALE_PLAYERS:-1000000}
small_players=${BENCH_SCALE_SMALL:-25000}
spread=${BENCH_SCALE_SPREAD:-20000}
rounds=${BENCH_ROUNDS:-3}
prefix=${BENCH_SCALE_DB:-pc_scale}
connections=${BENCH_CONNECTIONS:-32}
duration=${BENCH_DURATION:-5s}
warmup=${BENCH_WARMUP:-2s}
out=${BENCH_OUT:-bench-results/scale}
mkdir -p "$out"
out=$(cd "$out" && pwd)

log() { echo "bench-scale: $*" >&2; }

work=$(mktemp -d)
declare -A pids=() ports=() metrics=()
cleanup() {
	status=$?
	for tag in "${!pids[@]}"; do
		kill -TERM "${pids[$tag]}" 2>/dev/null || true
		wait "${pids[$tag]}" 2>/dev/null || true
	done
	if [ "${BENCH_SCALE_KEEP:-0}" != 1 ]; then
		for tag in small large; do
			psql -q -d postgres -c "DROP DATABASE IF EXISTS ${prefix}_$tag WITH (FORCE)" >/dev/null 2>&1 || true
		done
	fi
	rm -rf "$work"
	exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

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
log "building"
go build -trimpath -o "$work/platformctl" ./cmd/platformctl
go build -trimpath -o "$work/loadgen" ./scripts/loadgen
go build -trimpath -o "$work/scaledata" ./scripts/scaledata

if [ "${BENCH_SCALE_REUSE:-0}" = 1 ]; then
	PLATFORM_SECRET=$(cat "$out/secret")
else
	PLATFORM_SECRET="$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')"
	echo "$PLATFORM_SECRET" >"$out/secret"
	chmod 600 "$out/secret"
fi
export PLATFORM_SECRET PLATFORM_ENV=production PLATFORM_LOG_FORMAT=json PLATFORM_LOG_LEVEL=warn
export PLATFORM_SMTP_URL="smtp://127.0.0.1:1?tls=none" PLATFORM_DATA_DIR="$work/data"

# build TAG PLAYERS creates ${prefix}_TAG with PLAYERS players and records
# the load time and the disk it takes.
build() {
	local tag=$1 players=$2 db="${prefix}_$1" t0 t1 t2
	psql -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
	export PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/$db?sslmode=disable"
	log "$tag: generating $players players"
	t0=$(date +%s)
	# The bulk inserts run for minutes on a large set: no statement timeout.
	PLATFORM_DB_STATEMENT_TIMEOUT=0 "$work/scaledata" -players "$players" -spread "$spread" -cookies "$out/$tag-cookies.txt" -admin-cookie "$out/$tag-admin.txt" 2>&1 |
		tee "$out/$tag-load.log" >&2
	t1=$(date +%s)
	psql -q -d "$db" -c "VACUUM ANALYZE"
	t2=$(date +%s)
	jq -n --arg tag "$tag" --argjson players "$players" --argjson load $((t1 - t0)) --argjson vacuum $((t2 - t1)) \
		--argjson bytes "$(psql -Atq -d postgres -c "SELECT pg_database_size('$db')")" \
		'{tag: $tag, players: $players, loadSeconds: $load, vacuumAnalyzeSeconds: $vacuum, databaseBytes: $bytes}' >"$out/$tag-size.json"
}

# start TAG starts serve on ${prefix}_TAG.
start() {
	local tag=$1
	ports[$tag]=$(free_port)
	metrics[$tag]=$(free_port)
	PLATFORM_DATABASE_URL="postgres://$PGUSER@$PGHOST:$PGPORT/${prefix}_$tag?sslmode=disable" \
		PLATFORM_ADDR="127.0.0.1:${ports[$tag]}" PLATFORM_BASE_URL="http://127.0.0.1:${ports[$tag]}" \
		PLATFORM_METRICS_ADDR="127.0.0.1:${metrics[$tag]}" \
		"$work/platformctl" serve --migrate >"$out/serve-$tag.log" 2>&1 &
	pids[$tag]=$!
}

if [ "${BENCH_SCALE_REUSE:-0}" != 1 ]; then
	build small "$small_players"
	build large "$large_players"
fi
start small
start large

# run TAG ROUND measures every scenario against TAG's server.
run() {
	local tag=$1 round=$2
	log "round $round: $tag"
	"$work/loadgen" run -plan scripts/bench-scale.json -base "http://127.0.0.1:${ports[$tag]}" -c "$connections" \
		-d "$duration" -warmup "$warmup" -only "${BENCH_ONLY:-}" -pid "${pids[$tag]}" \
		-pg-url "postgres://$PGUSER@$PGHOST:$PGPORT/${prefix}_$tag?sslmode=disable" \
		-cookies "$out/$tag-cookies.txt" -admin-cookie "$out/$tag-admin.txt" \
		-label "scale $tag, round $round" -json "$out/round$round-$tag.json" >"$out/round$round-$tag.txt"
}
for round in $(seq 1 "$rounds"); do
	if [ $((round % 2)) = 1 ]; then order="small large"; else order="large small"; fi
	for tag in $order; do run "$tag" "$round"; done
done

# median_ms CMD... runs CMD (a curl printing %{time_total}) 7 times.
median_ms() {
	for _ in 1 2 3 4 5 6 7; do "$@"; echo; done | sort -n | sed -n 4p | awk '{printf "%.1f", $1 * 1000}'
}
for tag in small large; do
	m=http://127.0.0.1:${metrics[$tag]}/metrics a=http://127.0.0.1:${ports[$tag]}
	jq -n --arg tag "$tag" \
		--argjson scrape "$(median_ms curl -s -o /dev/null -w '%{time_total}' "$m")" \
		--argjson admin "$(median_ms curl -s -o /dev/null -w '%{time_total}' -H "Cookie: $(cat "$out/$tag-admin.txt")" "$a/api/admin/bootstrap")" \
		--argjson social "$(curl -s -o /dev/null -w '%{size_download}' -H "Cookie: $(head -1 "$out/$tag-cookies.txt")" "$a/api/player/social")" \
		'{tag: $tag, metricsScrapeMs: $scrape, adminBootstrapMs: $admin, heavySocialBytes: $social}' >"$out/$tag-probes.json"
done

# The table: medians over the rounds of each scenario, small and large.
jq -s -r '
	def median: sort | .[(length / 2 | floor)];
	def r1: . * 10 | round / 10;
	[.[] | .machine.label as $l | .scenarios[] | {db: ($l | split(" ")[1] | rtrimstr(",")), name, rps: .requestsPerSecond,
		p50: .latency.p50Ms, p99: .latency.p99Ms, srv: (.cpu.serverMsPerRequest // 0), pg: (.cpu.databaseMsPerRequest // 0), err: .errors}]
	| group_by(.name) | map(. as $s | {name: $s[0].name} + (["small", "large"] | map(. as $db | {($db): ($s | map(select(.db == $db))
		| {rps: (map(.rps) | median | round), p50: (map(.p50) | median | r1), p99: (map(.p99) | median | r1),
		   srv: (map(.srv) | median * 1000 | round), pg: (map(.pg) | median * 1000 | round), err: (map(.err) | add)})}) | add))
	| (["scenario", "small req/s", "large req/s", "large/small", "p50 ms s/l", "p99 ms s/l", "server µs/req s/l", "db µs/req s/l", "errors"] | @tsv),
	  (.[] | [.name, .small.rps, .large.rps, ((.large.rps / .small.rps * 100 | round) / 100),
		"\(.small.p50)/\(.large.p50)", "\(.small.p99)/\(.large.p99)", "\(.small.srv)/\(.large.srv)", "\(.small.pg)/\(.large.pg)",
		.small.err + .large.err] | @tsv)
' "$out"/round*-*.json | column -t -s $'\t' | tee "$out/table.txt"
echo
for tag in small large; do
	jq -r '"\(.tag): metrics scrape \(.metricsScrapeMs) ms, admin bootstrap \(.adminBootstrapMs) ms, heavy player social \(.heavySocialBytes) bytes"' "$out/$tag-probes.json"
	if [ -f "$out/$tag-size.json" ]; then jq -r '"\(.tag): \(.players) players loaded in \(.loadSeconds) s, VACUUM ANALYZE \(.vacuumAnalyzeSeconds) s, database \(.databaseBytes / 1048576 | round) MiB"' "$out/$tag-size.json"; fi
done | tee -a "$out/table.txt"
log "results in $out"

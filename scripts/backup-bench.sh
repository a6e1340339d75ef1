#!/usr/bin/env bash
# What `platformctl backup` costs a serving embedded database: builds an
# SQLite database of PLAYERS players (default 1,000,000: users, profiles and
# three sessions each, set-based with sqlite3), starts serve on it, and runs
# scripts/backupbench, which loads serve with readers of the player bootstrap
# and takes three backups, reporting each backup's duration and serve's p99
# before and during it, then the medians.
#
#   scripts/backup-bench.sh [PLAYERS]
#   BENCH_DB=big.db scripts/backup-bench.sh    reuse a database generated before (copied, not changed)
set -euo pipefail
cd "$(dirname "$0")/.."

players=${1:-1000000}
case $players in '' | *[!0-9]*) echo "usage: scripts/backup-bench.sh [PLAYERS]" >&2; exit 2 ;; esac
if ! command -v sqlite3 >/dev/null 2>&1; then
	echo "backup-bench: installing sqlite3" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sqlite3 >/dev/null
fi

work=$(mktemp -d)
serve_pid=
cleanup() {
	[ -n "$serve_pid" ] && kill "$serve_pid" 2>/dev/null && wait "$serve_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

go build -trimpath -o "$work/platformctl" ./cmd/platformctl
go build -trimpath -o "$work/backupbench" ./scripts/backupbench
export PLATFORM_DATA_DIR=$work/data
export PLATFORM_DATABASE_URL=file:$work/data/platform.db
export PLATFORM_SECRET=backup-bench-secret-backup-bench-secret
export PLATFORM_LOG_LEVEL=warn
"$work/platformctl" migrate up >/dev/null 2>&1

if [ -n "${BENCH_DB:-}" ]; then
	cp "$BENCH_DB" "$work/data/platform.db"
	rm -f "$work/data/platform.db-wal" "$work/data/platform.db-shm"
	"$work/platformctl" migrate up >/dev/null 2>&1
else
echo "backup-bench: generating $players players" >&2
start=$(date +%s)
sqlite3 "$work/data/platform.db" >/dev/null <<SQL
PRAGMA journal_mode = WAL;
PRAGMA synchronous = OFF;
BEGIN;
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < $players - 1)
INSERT INTO users (id, realm, email, name, nickname, nickname_key, email_verified, password_hash, created_at, updated_at)
SELECT printf('00000000-0000-4000-8000-%012d', i), 'player', 'bp' || i || '@bench.example.com', 'Bench Player ' || i,
       'bp' || i, 'bp' || i, i % 5 <> 0, 'x',
       strftime('%Y-%m-%d %H:%M:%f+00:00', 'now', '-' || (i % 730) || ' days'),
       strftime('%Y-%m-%d %H:%M:%f+00:00', 'now', '-' || (i % 730) || ' days')
FROM n;
INSERT INTO player_profiles (user_id, starter_granted, created_at, updated_at)
SELECT id, TRUE, created_at, updated_at FROM users WHERE realm = 'player';
WITH RECURSIVE k(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM k WHERE j < 2)
INSERT INTO sessions (id, token_hash, user_id, realm, remember, expires_at, created_at, updated_at, ip_address, user_agent)
SELECT lower(hex(randomblob(16))), randomblob(32), u.id, 'player', TRUE,
       strftime('%Y-%m-%d %H:%M:%f+00:00', 'now', '+20 days'), u.created_at, u.created_at, '10.0.0.1', 'backup-bench'
FROM users u CROSS JOIN k WHERE u.realm = 'player';
COMMIT;
SQL
echo "backup-bench: generated in $(($(date +%s) - start))s; $(du -h "$work/data/platform.db" | cut -f1)" >&2
fi

addr=127.0.0.1:$((20000 + RANDOM % 20000))
PLATFORM_ADDR=$addr PLATFORM_BASE_URL=http://$addr "$work/platformctl" serve >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 600); do curl -sf "http://$addr/api/health" >/dev/null && break; sleep 0.1; done
curl -sf -c "$work/jar" -H "Origin: http://$addr" -H 'Content-Type: application/json' \
	-d "{\"name\":\"Bench\",\"nickname\":\"probe$$\",\"email\":\"probe$$@bench.example.com\",\"password\":\"bench-password-1\"}" \
	"http://$addr/api/auth/player/sign-up/email" >/dev/null
awk '!/^#/ || /^#HttpOnly_/ { sub(/^#HttpOnly_/, ""); if (NF >= 7) printf "%s%s=%s", (n++ ? "; " : ""), $6, $7 }' "$work/jar" >"$work/cookie"
mkdir -p "$work/backups"
"$work/backupbench" -base "http://$addr" -cookie-file "$work/cookie" -platformctl "$work/platformctl" -to "$work/backups" -runs 3

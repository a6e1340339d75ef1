#!/usr/bin/env bash
# Fails the PostgreSQL primary over under load and reports what players saw.
# Each run starts a pg_auto_failover formation (scripts/ha.sh) and two serve
# replicas under a mixed load (sign-ups, profile changes that queue mail,
# lobby joins and leaves, open event streams), then:
#
#   scripts/failover.sh [RUNS]            SIGKILL of the primary's postmaster (default 3 runs)
#   HA_KILL=node scripts/failover.sh      the primary's whole node lost (keeper too)
#   HA_EVENT=switchover scripts/failover.sh   pg_autoctl perform switchover instead
#
# Prints one JSON report per run and the medians of the recovery figures.
# Needs root (the nodes run as the postgres user) and ports 6000-6002
# (HA_PORT moves them). CI runs one failover and one switchover.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-3}
case $runs in '' | *[!0-9]*) echo "usage: scripts/failover.sh [RUNS]" >&2; exit 2 ;; esac
test_name=TestFailover
[ "${HA_EVENT:-}" = switchover ] && test_name=TestSwitchover

scripts/ha.sh install

report=$(mktemp)
trap 'rm -f "$report"' EXIT
for i in $(seq 1 "$runs"); do
	echo "failover: run $i of $runs ($test_name${HA_KILL:+, kill $HA_KILL})" >&2
	PLATFORM_TEST_HA=1 PLATFORM_HA_KILL=${HA_KILL:-} PLATFORM_HA_REPORT=$report \
		go test -count=1 -timeout 10m -run "^$test_name\$" ./internal/resilience/
done
cat "$report"
python3 - "$report" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def med(k): return statistics.median(r[k] for r in rows)
print(f"median of {len(rows)}: kill->first write {med('killToFirstWriteSeconds'):.1f}s "
      f"(detection {med('detectionSeconds'):.1f}s, promotion {med('promotionSeconds'):.1f}s, "
      f"reconnect {med('reconnectSeconds'):.1f}s); failed requests {med('requests') and statistics.median(sum(r['failedByStatus'].values()) for r in rows)} "
      f"of {med('requests')}; bad responses {sum(r['badResponses'] for r in rows)}; "
      f"lost acknowledged writes {sum(r['lostWrites'] for r in rows)}; duplicate mail deliveries {sum(r['duplicateDeliveries'] for r in rows)}")
PY

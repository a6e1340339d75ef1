#!/usr/bin/env bash
# A pg_auto_failover formation on this machine: a monitor, a primary and a
# synchronous standby, each a PostgreSQL 15 server of its own on its own
# port and data directory, run as the postgres user. Nothing touches the
# server on 5432.
#
#   scripts/ha.sh up DIR         create and start the formation; print the multi-host URL
#   scripts/ha.sh url DIR        print serve's multi-host URL (target_session_attrs=read-write)
#   scripts/ha.sh state DIR      pg_autoctl show state
#   scripts/ha.sh primary DIR    the data directory of the current primary
#   scripts/ha.sh kill-primary DIR   SIGKILL the primary's postmaster; the standby is promoted
#   scripts/ha.sh kill-node DIR      SIGKILL the primary's keeper, postmaster and backends (a lost machine)
#   scripts/ha.sh rejoin DIR NODE    restart the keeper of a node lost to kill-node; it rejoins as a standby
#   scripts/ha.sh wait-primary DIR   wait until the formation has a primary and a synchronous standby again
#   scripts/ha.sh switchover DIR pg_autoctl perform switchover
#   scripts/ha.sh down DIR       stop every node and delete DIR
#   scripts/ha.sh install        install pg_auto_failover when it is missing (apt)
#
# HA_PORT (default 6000) is the monitor's port; the nodes take the next two.
# HA_DBNAME (default platform) is the database the nodes create.
set -euo pipefail

PORT=${HA_PORT:-6000}
DBNAME=${HA_DBNAME:-platform}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}

ensure_installed() {
	if ! command -v pg_autoctl >/dev/null 2>&1; then
		echo "ha: installing pg_auto_failover" >&2
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15-auto-failover pg-auto-failover-cli >/dev/null
	fi
}

# as_postgres runs a command as the postgres user, from a directory it can read.
as_postgres() {
	if [ "$(id -un)" = postgres ]; then
		(cd / && "$@")
	else
		(cd / && runuser -u postgres -- "$@")
	fi
}

monitor_url() { echo "postgres://autoctl_node@127.0.0.1:$PORT/pg_auto_failover?sslmode=disable"; }

url() {
	echo "postgres://postgres@127.0.0.1:$((PORT + 1)),127.0.0.1:$((PORT + 2))/$DBNAME?sslmode=disable&target_session_attrs=read-write&connect_timeout=2"
}

# start_keeper runs `pg_autoctl run` for a data directory in the background.
start_keeper() {
	local dir=$1 name=$2
	as_postgres env PG_CONFIG="$PGBIN/pg_config" setsid pg_autoctl run --pgdata "$dir/$name" \
		>>"$dir/$name.log" 2>&1 </dev/null &
}

wait_for() {
	local what=$1 seconds=$2
	shift 2
	for _ in $(seq 1 $((seconds * 4))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.25
	done
	echo "ha: no $what within ${seconds}s" >&2
	return 1
}

# node_states prints "name state" for every data node, as the monitor sees it.
node_states() {
	psql -X -qAt -h 127.0.0.1 -p "$PORT" -U autoctl_node -d pg_auto_failover \
		-c "SELECT nodename, reportedstate, goalstate FROM pgautofailover.node ORDER BY nodeid" 2>/dev/null
}

healthy() {
	local s
	s=$(node_states)
	[ "$(grep -c '|primary|primary$' <<<"$s")" = 1 ] && [ "$(grep -c '|secondary|secondary$' <<<"$s")" = 1 ]
}

# fail names what went wrong and shows the end of its log.
fail() {
	echo "ha: $1 failed; the end of $2:" >&2
	tail -n 20 "$2" >&2
	exit 1
}

up() {
	local dir=$1
	ensure_installed
	mkdir -p "$dir"
	chown postgres: "$dir"
	chmod 0700 "$dir"
	if ! as_postgres test -w "$dir"; then
		echo "ha: the postgres user cannot reach $dir; choose a directory whose parents it may enter" >&2
		exit 1
	fi
	as_postgres pg_autoctl create monitor --pgctl "$PGBIN/pg_ctl" --pgdata "$dir/monitor" --pgport "$PORT" \
		--hostname 127.0.0.1 --auth trust --no-ssl >>"$dir/monitor.log" 2>&1 || fail "create monitor" "$dir/monitor.log"
	start_keeper "$dir" monitor
	wait_for "monitor" 60 pg_isready -q -h 127.0.0.1 -p "$PORT" -d pg_auto_failover
	for n in 1 2; do
		as_postgres pg_autoctl create postgres --pgctl "$PGBIN/pg_ctl" --pgdata "$dir/node$n" --pgport $((PORT + n)) \
			--hostname 127.0.0.1 --name "node$n" --dbname "$DBNAME" --auth trust --no-ssl \
			--monitor "$(monitor_url)" >>"$dir/node$n.log" 2>&1 || fail "create node$n" "$dir/node$n.log"
		start_keeper "$dir" "node$n"
		wait_for "node$n" 120 pg_isready -q -h 127.0.0.1 -p $((PORT + n))
	done
	wait_for "primary and synchronous standby" 120 healthy
	url
}

primary_dir() {
	local dir=$1 name
	name=$(node_states | awk -F'|' '$2 == "primary" { print $1 }' | head -1)
	[ -n "$name" ] || { echo "ha: no primary" >&2; return 1; }
	echo "$dir/$name"
}

# keeper_pid prints the pid of a node's pg_autoctl supervisor, which leads
# the process group of its keeper, its postmaster and the backends.
keeper_pid() {
	local pidfile
	pidfile=$(as_postgres pg_autoctl show file --pid --pgdata "$1" 2>/dev/null) || return 1
	head -1 "$pidfile" 2>/dev/null
}

# kill_node SIGKILLs the primary's whole process group: keeper, postmaster
# and backends, as when its machine is lost. With nobody left to confirm
# that the old primary stopped writing, the monitor waits out
# node_considered_unhealthy_timeout and primary_demote_timeout first.
kill_node() {
	local dir=$1 pdir keeper
	pdir=$(primary_dir "$dir")
	keeper=$(keeper_pid "$pdir")
	[ -n "$keeper" ] || { echo "ha: no keeper running for $pdir" >&2; return 1; }
	kill -KILL -- "-$keeper"
	basename "$pdir"
}

# kill_primary SIGKILLs the primary's postmaster. Its keeper sees Postgres
# gone, tells the monitor, and the monitor promotes the standby.
kill_primary() {
	local pdir
	pdir=$(primary_dir "$1")
	kill -KILL "$(head -1 "$pdir/postmaster.pid")"
	basename "$pdir"
}

# rejoin restarts the keeper of a node killed by kill-node; it comes
# back as a standby of the new primary.
rejoin() {
	local dir=$1 name=$2
	start_keeper "$dir" "$name"
}

down() {
	local dir=$1 pid
	[ -d "$dir" ] || return 0
	for name in node1 node2 monitor; do
		[ -d "$dir/$name" ] || continue
		pid=$(keeper_pid "$dir/$name" || true)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
			kill -KILL -- "-$pid" 2>/dev/null || true
		fi
		pid=$(head -1 "$dir/$name/postmaster.pid" 2>/dev/null || true)
		if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" || true; fi
	done
	rm -rf "$dir"
}

cmd=${1:-}
dir=${2:-}
if [ "$cmd" = install ]; then
	ensure_installed
	exit 0
fi
if [ -z "$cmd" ] || [ -z "$dir" ]; then
	sed -n '2,21p' "$0" >&2
	exit 2
fi
dir=$(realpath -m "$dir")
case $cmd in
up) up "$dir" ;;
url) url ;;
state) as_postgres pg_autoctl show state --pgdata "$dir/monitor" ;;
primary) primary_dir "$dir" ;;
kill-primary) kill_primary "$dir" ;;
kill-node) kill_node "$dir" ;;
rejoin) rejoin "$dir" "${3:?name the node to rejoin}" ;;
wait-primary) wait_for "primary and synchronous standby" "${HA_WAIT:-180}" healthy ;;
switchover) as_postgres pg_autoctl perform switchover --pgdata "$dir/monitor" ;;
down) down "$dir" ;;
*)
	echo "ha: unknown command $cmd" >&2
	exit 2
	;;
esac

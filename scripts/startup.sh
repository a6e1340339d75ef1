#!/usr/bin/env bash
# startup.sh — how soon `platformctl serve` is ready on the embedded default,
# and how much memory it holds once idle.
#
#   scripts/startup.sh [RUNS]       (RUNS defaults to 7)
#
# It builds the binary (the environment's CGO_ENABLED and GOFLAGS apply:
# `CGO_ENABLED=0 GOFLAGS=-trimpath scripts/startup.sh` builds like a release),
# then RUNS times starts `serve` on an empty data directory — a fresh SQLite
# database, so migrations and seeding included — polls GET /api/health until
# it answers 200 and records:
#
#   ready_ms  milliseconds from starting the process to that 200
#   cpu_ms    CPU time the process had used by then (user + system)
#   rss_mib   VmRSS after one more second of idleness
#   peak_mib  VmHWM, the most it was resident at any moment
#
# then stops it with SIGTERM and measures a restart on the same data
# directory the same way. It prints every run and the medians. Linux only.
# PLATFORM_* variables of the calling environment are ignored.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-7}
work=$(mktemp -d)
pid=""
cleanup() {
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/platformctl" ./cmd/platformctl
unset $(compgen -e | grep '^PLATFORM_' || true)
tick=$(getconf CLK_TCK)

# kib prints one field (VmRSS, VmHWM) of /proc/PID/status, in KiB.
kib() { awk -v f="$2:" '$1 == f { print $2 }' "/proc/$1/status"; }

# cpu_ms prints the user + system CPU time of PID in milliseconds.
cpu_ms() { awk -v t="$tick" '{ sub(/^.*\) /, ""); print int(($12 + $13) * 1000 / t) }' "/proc/$1/stat"; }

# measure DATA_DIR starts serve once and appends "ready_ms cpu_ms rss_kib
# hwm_kib" to the file named by its second argument. serve listens on a port
# the kernel picks and logs it, so no other process can answer in its place.
measure() {
	local dir=$1 out=$2 log="$work/serve.log" start now addr="" code ms cpu rss hwm
	: >"$log" # before serve starts writing it, so that it can be read at once
	start=$(date +%s%N)
	"$work/platformctl" serve --data-dir "$dir" --addr 127.0.0.1:0 >"$log" 2>&1 &
	pid=$!
	while :; do
		if [ -z "$addr" ]; then
			addr=$(sed -n 's/.* msg=serving addr=\([^ ]*\).*/\1/p' "$log")
		fi
		if [ -n "$addr" ]; then
			code=$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/api/health" || true)
			now=$(date +%s%N)
			[ "$code" = 200 ] && break
		else
			now=$(date +%s%N)
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "startup: serve exited; its log:" >&2
			cat "$log" >&2
			exit 1
		fi
		if [ $(((now - start) / 1000000)) -gt 30000 ]; then
			echo "startup: not ready after 30s" >&2
			exit 1
		fi
		sleep 0.005
	done
	ms=$(((now - start) / 1000000))
	cpu=$(cpu_ms "$pid")
	sleep 1
	rss=$(kib "$pid" VmRSS)
	hwm=$(kib "$pid" VmHWM)
	kill -TERM "$pid"
	wait "$pid" || true
	pid=""
	echo "$ms $cpu $rss $hwm" >>"$out"
}

median() { sort -n | awk '{ v[NR] = $1 } END { m = int((NR + 1) / 2); print (NR % 2) ? v[m] : (v[m] + v[m + 1]) / 2 }'; }
med() { cut -d' ' -f"$2" "$1" | median; }
mib() { awk '{ printf "%.1f", $1 / 1024 }'; }

format='%-7s | %8s %6s %7s %8s | %8s %6s %7s\n'
printf "$format" "" "fresh" "" "" "" "restart" "" ""
printf "$format" run ready_ms cpu_ms rss_mib peak_mib ready_ms cpu_ms rss_mib
: >"$work/fresh"
: >"$work/restart"
for i in $(seq 1 "$runs"); do
	dir=$(mktemp -d -p "$work")
	measure "$dir" "$work/fresh"
	measure "$dir" "$work/restart"
	read -r f_ms f_cpu f_rss f_hwm <<<"$(tail -n1 "$work/fresh")"
	read -r r_ms r_cpu r_rss _ <<<"$(tail -n1 "$work/restart")"
	printf "$format" "$i" "$f_ms" "$f_cpu" "$(mib <<<"$f_rss")" "$(mib <<<"$f_hwm")" "$r_ms" "$r_cpu" "$(mib <<<"$r_rss")"
done
printf "$format" median "$(med "$work/fresh" 1)" "$(med "$work/fresh" 2)" \
	"$(med "$work/fresh" 3 | mib)" "$(med "$work/fresh" 4 | mib)" \
	"$(med "$work/restart" 1)" "$(med "$work/restart" 2)" "$(med "$work/restart" 3 | mib)"

#!/usr/bin/env bash
# code-health.sh — the figures the code-health reviews track, measured the same
# way each time:
#
#   scripts/code-health.sh            function lengths, sleeps and poll loops in
#                                     tests, query roads (go run ./scripts/codehealth)
#   scripts/code-health.sh time [RUNS] [PACKAGES...]
#                                     also the wall time of `go test -short -count=1`
#                                     over PACKAGES (default ./...), RUNS times
#                                     (default 3) after one warm-up build, and
#                                     the median
set -euo pipefail
cd "$(dirname "$0")/.."

go run ./scripts/codehealth
[ "${1:-}" = time ] || exit 0
shift
runs=${1:-3}
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)

go test -short -count=1 -run '^$' "${pkgs[@]}" >/dev/null
times=()
for i in $(seq "$runs"); do
	start=$(date +%s.%N)
	go test -short -count=1 "${pkgs[@]}" >/dev/null
	end=$(date +%s.%N)
	t=$(echo "$end - $start" | bc)
	echo "run $i: ${t}s"
	times+=("$t")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
echo "go test -short -count=1 ${pkgs[*]}: median of $runs runs ${median}s"

#!/usr/bin/env bash
# fuzz.sh — run every fuzz target of the module for a bounded time.
#
#   scripts/fuzz.sh              each target for $FUZZTIME (5s): the CI step
#   scripts/fuzz.sh --save       also copy the inputs that widened coverage
#                                into the package's testdata/fuzz/<Target>/,
#                                so later runs (and plain `go test`) start from them
#   scripts/fuzz.sh FuzzName…    only these targets
#
# Targets are found, not listed: every `func FuzzXxx` in a _test.go file
# under internal/ is run, so a new target is fuzzed without editing this
# script. A failing input is written to testdata/fuzz by `go test` itself
# and fails the script.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-5s}
save=0
only=()
for arg in "$@"; do
	case "$arg" in
	--save) save=1 ;;
	Fuzz*) only+=("$arg") ;;
	*) echo "usage: $0 [--save] [FuzzName…]" >&2; exit 2 ;;
	esac
done

module=$(go list -m)
cache=$(go env GOCACHE)/fuzz
start=$SECONDS
count=0
while IFS=: read -r file name; do
	dir=$(dirname "$file")
	if [ ${#only[@]} -gt 0 ] && [[ ! " ${only[*]} " == *" $name "* ]]; then
		continue
	fi
	echo "fuzz: $name in ./$dir for $fuzztime" >&2
	go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "./$dir"
	count=$((count + 1))
	if [ "$save" = 1 ] && [ -d "$cache/$module/$dir/$name" ]; then
		mkdir -p "$dir/testdata/fuzz/$name"
		cp -n "$cache/$module/$dir/$name"/* "$dir/testdata/fuzz/$name/" 2>/dev/null || true
	fi
done < <(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' internal | sed 's/:func /:/' | sort -u)

if [ "$count" = 0 ]; then
	echo "fuzz: no fuzz targets matched" >&2
	exit 1
fi
echo "fuzz: $count targets in $((SECONDS - start))s" >&2

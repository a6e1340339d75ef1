#!/bin/sh
# Converts migrations written as a pair of files (NAME.tx.up.sql and
# NAME.tx.down.sql, with --bun:split between statements) into the one goose
# file per dialect the binary runs: NAME.sql with "-- +goose Up" and
# "-- +goose Down" sections. Run it from the repository root; it converts
# every pair it finds under migrations/postgres and migrations/sqlite and
# removes the pair. Statements keep their text; goose splits them at the
# semicolons that end lines, as --bun:split did.
set -eu
for up in migrations/postgres/*.tx.up.sql migrations/sqlite/*.tx.up.sql; do
	[ -e "$up" ] || continue
	base=${up%.tx.up.sql}
	down=$base.tx.down.sql
	out=$base.sql
	{
		echo '-- +goose Up'
		grep -v '^--bun:split' "$up"
		echo
		echo '-- +goose Down'
		if [ -e "$down" ]; then grep -v '^--bun:split' "$down" || true; fi
	} >"$out"
	rm -f "$up" "$down"
	echo "$out"
done

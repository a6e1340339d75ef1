#!/usr/bin/env bash
# passkey-browser.sh — passkeys in a real browser.
#
#   scripts/passkey-browser.sh
#
# Bundles the official better-auth client and its passkey plugin
# (scripts/passkey-browser, pinned npm packages, esbuild), then runs
# TestPasskeyInBrowser: Debian's chromium, headless, with a DevTools
# virtual authenticator, on http://localhost — sign up, add a passkey, sign
# out, sign in with the passkey, get-session, and a cloned authenticator
# refused. It runs on SQLite, and on PostgreSQL too when
# PLATFORM_TEST_DATABASE_URL is set. Installs chromium with apt when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
	echo "passkey-browser: installing chromium" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

(
	cd scripts/passkey-browser
	if ! cmp -s package-lock.json node_modules/.installed-lock.json; then
		npm ci --no-audit --no-fund --loglevel=error >/dev/null
		cp package-lock.json node_modules/.installed-lock.json
	fi
	npx --no-install esbuild entry.js --bundle --format=iife --outfile=dist/client.js --log-level=warning
)
export PLATFORM_PASSKEY_CLIENT_JS="$PWD/scripts/passkey-browser/dist/client.js"

echo "passkey-browser: on SQLite" >&2
env -u PLATFORM_TEST_DATABASE_URL go test -count=1 -run 'TestPasskeyInBrowser' ./internal/httpapi/
if [ -n "${PLATFORM_TEST_DATABASE_URL:-}" ]; then
	echo "passkey-browser: on PostgreSQL" >&2
	go test -count=1 -run 'TestPasskeyInBrowser' ./internal/httpapi/
fi

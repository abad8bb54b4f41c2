#!/bin/sh
# Runs the store tests against a real Secret Service: a private D-Bus
# session with gnome-keyring unlocked, temporary XDG_DATA_HOME and
# XDG_RUNTIME_DIR (HOME is kept so the Go caches are reused). Keyring tests
# fail instead of skipping here (MCPBRIDGE_REQUIRE_KEYRING=1).
#
# Needs: apt-get install -y gnome-keyring dbus-x11 libsecret-tools
# Extra arguments go to 'go test' (e.g. -run Keyring -v).
set -eu

cd "$(dirname "$0")/.."

for tool in dbus-run-session gnome-keyring-daemon; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "keyring-test: $tool not found; install gnome-keyring dbus-x11 libsecret-tools" >&2
		exit 2
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp/data" "$tmp/run"
chmod 700 "$tmp/run"

export XDG_DATA_HOME="$tmp/data"
export XDG_RUNTIME_DIR="$tmp/run"
export MCPBRIDGE_REQUIRE_KEYRING=1
export MCPBRIDGE_CONFIG_DIR="$tmp/config"
export MCPBRIDGE_STATE_DIR="$tmp/state"

tags=${GOTAGS:-nogui}

# The session's own keyring; go test's status is the script's status.
run_session() {
	dbus-run-session -- sh scripts/keyring-session.sh "$@"
}

run_session go test -race -tags "$tags" -count=1 "$@" ./internal/store/...

# Locking the keyring cannot be undone without a prompter, so that test
# gets a session (and a fresh keyring) of its own.
rm -rf "$XDG_DATA_HOME/keyrings"
MCPBRIDGE_KEYRING_LOCK_TEST=1 run_session \
	go test -race -tags "$tags" -count=1 -v -run '^TestKeyringLocked$' ./internal/store/

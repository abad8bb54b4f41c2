#!/usr/bin/env bash
# Smoke test of the real tray app (default cgo build) on a virtual display:
#
#   1. builds mcpbridge and starts the demo server on loopback;
#   2. starts the tray under Xvfb in a private D-Bus session with an unlocked
#      gnome-keyring (no tray host is running: the app must carry on);
#   3. adds an endpoint with the keyboard only (Ctrl+N, type, Tab, Enter) via
#      xdotool and checks it reached the config file;
#   4. runs a bridge for it so the window shows live status, and takes a
#      screenshot (artifacts/tray.png; docs/screenshot.png is a copy of it);
#   5. checks that a second start shows the running one and exits 0;
#   6. starts the tray again without any session bus: it must keep running.
#
# Needs: xvfb xdotool imagemagick gnome-keyring dbus-x11, and the Fyne build
# dependencies (scripts/setup-test-deps.sh installs them all).
# Environment: ARTIFACTS (default ./artifacts).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
artifacts="${ARTIFACTS:-$root/artifacts}"
mkdir -p "$artifacts"

for tool in Xvfb xdotool import dbus-run-session gnome-keyring-daemon; do
	command -v "$tool" >/dev/null 2>&1 || {
		echo "tray-smoke: $tool not found; run scripts/setup-test-deps.sh" >&2
		exit 2
	}
done

tmp="$(mktemp -d)"
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	[ -f "$tmp/session.pid" ] && kill "$(cat "$tmp/session.pid")" 2>/dev/null || true
	sleep 0.5
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

log() { printf 'tray-smoke: %s\n' "$*" >&2; }
fail() {
	log "FAIL: $*"
	[ -f "$tmp/tray.log" ] && sed 's/^/  tray: /' "$tmp/tray.log" >&2
	import -display "$DISPLAY" -window root "$artifacts/tray-failure.png" 2>/dev/null || true
	exit 1
}

# wait_for SECONDS DESCRIPTION CMD...: polls CMD every 0.2 s.
wait_for() {
	local secs="$1" what="$2"
	shift 2
	local end=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$end" ] || fail "timed out waiting for $what"
		sleep 0.2
	done
}

# stop_within SECS PID WHAT: wait for PID to exit; past SECS, kill it and fail.
stop_within() {
	local secs="$1" pid="$2" what="$3" end=$((SECONDS + $1))
	while kill -0 "$pid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ]; then
			kill -9 "$pid" 2>/dev/null || true
			fail "$what (within ${secs}s)"
		fi
		sleep 0.2
	done
	wait "$pid" 2>/dev/null || true
}

log "building mcpbridge (cgo, with the tray)"
go build -o "$tmp/mcpbridge" ./cmd/mcpbridge
bin="$tmp/mcpbridge"

mkdir -p "$tmp/run" "$tmp/data" "$tmp/home"
chmod 700 "$tmp/run"
export XDG_RUNTIME_DIR="$tmp/run"
export XDG_DATA_HOME="$tmp/data"
export MCPBRIDGE_CONFIG_DIR="$tmp/config"
export MCPBRIDGE_STATE_DIR="$tmp/run/mcpbridge/status"
export MCPBRIDGE_LOG_DIR="$tmp/run/mcpbridge/logs"
unset WAYLAND_DISPLAY

# A free display number, chosen by Xvfb itself.
exec 5<> <(:)
Xvfb -displayfd 5 -screen 0 1280x800x24 -nolisten tcp >"$tmp/xvfb.log" 2>&1 &
pids+=($!)
read -r -t 10 dpy <&5 || fail "Xvfb did not start"
export DISPLAY=":$dpy"
log "Xvfb on $DISPLAY"

port=$((20000 + RANDOM % 20000))
"$bin" serve --addr "127.0.0.1:$port" >"$tmp/serve.log" 2>&1 &
pids+=($!)
url="http://127.0.0.1:$port/mcp"

# --- the tray in a D-Bus session with an unlocked keyring -----------------
KEYRING_SESSION_PIDFILE="$tmp/session.pid" \
	dbus-run-session -- sh scripts/keyring-session.sh "$bin" tray --log-level debug >"$tmp/tray.log" 2>&1 &
tray_pid=$!
pids+=("$tray_pid")

wait_for 60 "the tray window" xdotool search --name '^mcpbridge$'
win="$(xdotool search --name '^mcpbridge$' | head -1)"
log "window $win"
sleep 1
xdotool windowactivate --sync "$win" 2>/dev/null || xdotool windowfocus --sync "$win"
sleep 0.5

# --- add an endpoint with the keyboard --------------------------------------
xdotool key --window "$win" --clearmodifiers ctrl+n
sleep 0.5
xdotool type --delay 30 smoke
xdotool key Tab
xdotool type --delay 20 "$url"
xdotool key Return
wait_for 10 "the endpoint in the config file" grep -q '"name": "smoke"' "$tmp/config/config.json"
grep -q "\"url\": \"$url\"" "$tmp/config/config.json" || fail "wrong URL in the config: $(cat "$tmp/config/config.json")"
log "endpoint added through the window"

# --- a bridge for it, so the window shows live status ------------------------
mkfifo "$tmp/bridge.in"
"$bin" run smoke --log-file "$MCPBRIDGE_LOG_DIR/smoke.log" <"$tmp/bridge.in" >"$tmp/bridge.out" 2>"$tmp/bridge.err" &
pids+=($!)
exec 6>"$tmp/bridge.in"
printf '%s\n' \
	'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"smoke","version":"1"}}}' \
	'{"jsonrpc":"2.0","method":"notifications/initialized"}' \
	'{"jsonrpc":"2.0","id":2,"method":"tools/list"}' >&6
wait_for 10 "the bridge's answers" grep -q '"id":2' "$tmp/bridge.out"
wait_for 10 "the bridge's status file" sh -c "ls '$MCPBRIDGE_STATE_DIR'/*-smoke.json"
sleep 2.5 # the status file is written at most once a second; the window debounces

import -display "$DISPLAY" -window "$win" "$artifacts/tray.png"
log "screenshot: $artifacts/tray.png"

# --- a second start shows the first and exits 0 -----------------------------
start=$SECONDS
timeout 20 "$bin" tray >"$tmp/second.log" 2>&1 || fail "second start exited $? ($(cat "$tmp/second.log"))"
[ $((SECONDS - start)) -lt 10 ] || fail "second start took $((SECONDS - start)) s"
[ "$(xdotool search --name '^mcpbridge$' | wc -l)" -eq 1 ] || fail "a second window appeared"
kill -0 "$tray_pid" 2>/dev/null || fail "the first tray died"
log "second start handed over to the running tray"

exec 6>&-
# Quit the tray with SIGTERM, as a session logout does. dbus-run-session
# does not pass signals on, so signal the session script, which does.
kill "$(cat "$tmp/session.pid")" 2>/dev/null || true
stop_within 15 "$tray_pid" "the tray did not quit on SIGTERM"

# --- no session bus at all ---------------------------------------------------
(
	unset DBUS_SESSION_BUS_ADDRESS
	export XDG_RUNTIME_DIR="$tmp/run2" MCPBRIDGE_STATE_DIR="$tmp/run2/mcpbridge/status"
	mkdir -p "$tmp/run2" && chmod 700 "$tmp/run2"
	exec "$bin" tray >"$tmp/tray-nobus.log" 2>&1
) &
nobus_pid=$!
pids+=("$nobus_pid")
wait_for 60 "the tray window without a session bus" xdotool search --name '^mcpbridge$'
sleep 2
kill -0 "$nobus_pid" 2>/dev/null || {
	cat "$tmp/tray-nobus.log" >&2
	fail "the tray exited without a session bus"
}
kill "$nobus_pid"
stop_within 15 "$nobus_pid" "the tray without a session bus did not quit on SIGTERM"
log "runs without a session bus"
log "ok"

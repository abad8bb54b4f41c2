#!/usr/bin/env bash
# Builds the Linux desktop package: dist/mcpbridge-<version>-linux-<arch>.tar.xz
# holding the binary (with the tray), a .desktop file and the icon, laid out
# for `make install` into /usr/local or ~/.local (fyne package's format).
#
# Needs Go, a C compiler and the Fyne build dependencies
# (scripts/setup-test-deps.sh installs them). CI runs it as is.
# Environment: VERSION (default from FyneApp.toml), GOARCH.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
fyne_tool="fyne.io/tools/cmd/fyne@v1.7.4"
version="${VERSION:-$(sed -n 's/^Version *= *"\(.*\)"/\1/p' FyneApp.toml)}"
arch="$(go env GOARCH)"
out="dist"
mkdir -p "$out"

echo "packaging/linux.sh: building mcpbridge $version ($arch)" >&2
CGO_ENABLED=1 go build -trimpath \
	-ldflags "-s -w -X github.com/mcpbridge/mcpbridge/internal/cli.Version=$version" \
	-o "$out/mcpbridge" ./cmd/mcpbridge

# fyne package reads FyneApp.toml (name, id, icon, .desktop fields) from
# the current directory and wraps the binary we built.
go run "$fyne_tool" package --os linux --release \
	--exe "$out/mcpbridge" --name mcpbridge --app-version "$version"

pkg="$out/mcpbridge-$version-linux-$arch.tar.xz"
mv mcpbridge.tar.xz "$pkg"
# The archive must carry the .desktop entry and the icon, or the menu
# entry is missing after install.
listing="$(tar -tJf "$pkg")"
for want in usr/local/bin/mcpbridge usr/local/share/applications/ usr/local/share/pixmaps/; do
	grep -q "$want" <<<"$listing" || { echo "packaging/linux.sh: $pkg lacks $want" >&2; exit 1; }
done
echo "$pkg"

// Package assets holds mcpbridge's app icon, embedded so the tray and the
// window have it without files next to the binary.
package assets

import _ "embed"

// Icon is the 512x512 PNG app icon (a bridge over a blue square). PNG,
// not SVG: Linux tray hosts only take bitmaps.
//
//go:embed icon.png
var Icon []byte
